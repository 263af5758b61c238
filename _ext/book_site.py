"""Sphinx extension for the book's site.

- the status page (rendered from the last test run);
- buttons that follow `repository.url`;
- each inline script once per page (sphinx-thebe's configuration is otherwise emitted twice, a console error);
- after the build, only the MathJax files the pages load (tex-chtml with its fonts and lazily loaded extensions)
  and no source maps, so the site stays small.
"""

import shutil
from pathlib import Path

from proofkit.status import write_status

# what pages load from _static/mathjax: the tex-chtml component, the TeX extensions it autoloads, its CHTML fonts,
# and the menu and accessibility components it loads on demand
MATHJAX_KEEP = {"tex-chtml.js", "input", "output", "a11y", "ui", "adaptors"}
MATHJAX_KEEP_UNDER = {"input": {"tex"}, "output": {"chtml"}}


def _status_page(app, config):
    write_status(Path(app.srcdir))


def _buttons(app, config):
    # Repository, issue and launch buttons only make sense with a repository: `repository.url` in _config.yml
    # turns all of them on at once; while it is empty they are off (and no link points nowhere).
    opts = config.html_theme_options
    on = bool(opts.get("repository_url"))
    opts["use_repository_button"] = on
    opts["use_issues_button"] = on
    if not on:
        opts["launch_buttons"] = {}


def _dedupe_scripts(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, kept = set(), []
    for js in scripts:
        # sphinx-thebe's and sphinx-togglebutton's inline configuration is added twice, once with filename None and
        # once with "": an inline script with the same body is one script
        key = (str(getattr(js, "filename", js) or ""), repr(sorted(getattr(js, "attributes", {}).items())))
        if key in seen:
            continue
        seen.add(key)
        kept.append(js)
    scripts[:] = kept


def prune_static(outdir: Path) -> None:
    """Remove what no page loads: MathJax components other than tex-chtml's, and source maps."""
    mathjax = outdir / "_static" / "mathjax"
    if mathjax.is_dir():
        for entry in mathjax.iterdir():
            if entry.name not in MATHJAX_KEEP:
                shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
            elif entry.name in MATHJAX_KEEP_UNDER:
                for sub in entry.iterdir():
                    if sub.name not in MATHJAX_KEEP_UNDER[entry.name]:
                        shutil.rmtree(sub) if sub.is_dir() else sub.unlink()
    for source_map in (outdir / "_static").rglob("*.map"):
        source_map.unlink()


def _prune(app, exception):
    if exception is None and app.builder.format == "html":
        prune_static(Path(app.outdir))


def setup(app):
    app.connect("config-inited", _status_page)
    app.connect("config-inited", _buttons)
    app.connect("html-page-context", _dedupe_scripts, priority=900)  # after the extensions that add scripts
    app.connect("build-finished", _prune)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
