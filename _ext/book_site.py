"""Sphinx extension for the book's site: the status page, and buttons that follow `repository.url`."""

from pathlib import Path

from proofkit.status import write_status


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


def setup(app):
    app.connect("config-inited", _status_page)
    app.connect("config-inited", _buttons)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
