"""The built site as a reader gets it, in headless Chromium (Debian's chromium and chromium-driver).

Run after `make book`: `make browser-test`. It serves _build/html on localhost, checks a chapter page (typeset math,
verdict table, plot), the sidebar, the search page and every local link, and keeps screenshots in
_build/screenshots/ (the CI artifact).
"""

import functools
import http.server
import os
import re
import sys
import threading
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "_build" / "html"
SHOTS = ROOT / "_build" / "screenshots"
CHAPTERS = sorted(p.stem for p in (ROOT / "proofs").glob("*.ipynb"))
# Debian's packages by default; CI images with Google Chrome set CHROMIUM and CHROMEDRIVER
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server():
    assert (SITE / "index.html").exists(), "build the book first: make book"
    handler = functools.partial(_QuietHandler, directory=str(SITE))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--window-size=1300,2000", f"--user-data-dir={tmp_path_factory.mktemp('chromium')}"):
        opts.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    yield driver
    driver.quit()


def open_page(browser, url):
    browser.get(url)
    WebDriverWait(browser, 30).until(lambda d: d.execute_script("return document.readyState") == "complete")
    # MathJax 3 typesets asynchronously; its startup promise resolves when the page is done
    browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "if (window.MathJax && MathJax.startup && MathJax.startup.promise) {"
        "  MathJax.startup.promise.then(() => done(true), () => done(false)); } else { done(false); }")


def phone(browser):
    browser.set_window_size(390, 844)


def desktop(browser):
    browser.set_window_size(1400, 900)


def severe_console_messages(browser) -> list[str]:
    return [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE"]


def screenshot(browser, name):
    SHOTS.mkdir(parents=True, exist_ok=True)
    height = browser.execute_script("return document.body.scrollHeight")
    browser.set_window_size(1300, min(max(height, 1000), 8000))
    browser.save_screenshot(str(SHOTS / f"{name}.png"))
    browser.set_window_size(1300, 2000)


def test_on_a_phone_the_drawer_opens_and_its_links_work(server, browser):
    phone(browser)
    try:
        open_page(browser, f"{server}/proofs/Clip.html")
        button = browser.find_element(By.CSS_SELECTOR, ".bd-header-article button.primary-toggle")
        assert button.is_displayed()
        button.click()
        drawer = browser.find_element(By.ID, "pst-primary-sidebar-modal")
        WebDriverWait(browser, 5).until(lambda d: drawer.get_attribute("open") is not None)
        SHOTS.mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(SHOTS / "phone-drawer.png"))
        link = next(a for a in drawer.find_elements(By.CSS_SELECTOR, "a")
                    if (a.get_attribute("href") or "").endswith("/proofs/Abs.html"))
        browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", link)
        link.click()
        WebDriverWait(browser, 10).until(lambda d: d.current_url.endswith("/proofs/Abs.html"))
        # "On this page" opens the page's contents in the same way
        open_page(browser, f"{server}/proofs/Clip.html")
        browser.find_element(By.CSS_SELECTOR, ".bd-header-article button.secondary-toggle").click()
        toc = browser.find_element(By.ID, "pst-secondary-sidebar-modal")
        WebDriverWait(browser, 5).until(lambda d: toc.get_attribute("open") is not None)
        assert "Verdict" in toc.text
        # the kit's tables stack on a phone, each cell labelled with its column's name by the book's script
        cell = browser.find_element(By.CSS_SELECTOR, "table.proofkit-checks tbody td:nth-child(2)")
        head = cell.find_element(By.XPATH, "ancestor::table//thead//th[2]").get_attribute("textContent")
        label = browser.execute_script("return getComputedStyle(arguments[0], '::before').content", cell)
        assert label == f'"{head}: "', label
    finally:
        desktop(browser)


def test_on_a_desktop_the_sidebar_collapses_and_there_is_one_search_box(server, browser):
    desktop(browser)
    severe_console_messages(browser)  # drain what earlier pages logged
    open_page(browser, f"{server}/proofs/Clip.html")
    fields = [b for b in browser.find_elements(By.CSS_SELECTOR, ".search-button-field, .search-button")
              if b.is_displayed()]
    assert len(fields) == 1, f"{len(fields)} search boxes"
    sidebar = browser.find_element(By.ID, "pst-primary-sidebar")
    assert sidebar.is_displayed()
    # the icons are drawn by the theme's stylesheet from the WOFF2 font (the site ships no Font Awesome script)
    icon = browser.find_element(By.CSS_SELECTOR, ".bd-header-article button.primary-toggle .fa-bars")
    drawn = browser.execute_script(
        "const s = getComputedStyle(arguments[0], '::before');"
        "return [s.content, s.fontFamily, arguments[0].getBoundingClientRect().width,"
        "        document.fonts.check('900 16px \"Font Awesome 6 Free\"')];", icon)
    assert drawn[0] not in ("none", "normal", "") and "Font Awesome" in drawn[1] and drawn[2] > 0 and drawn[3], drawn
    browser.find_element(By.CSS_SELECTOR, ".bd-header-article button.primary-toggle").click()
    WebDriverWait(browser, 5).until(lambda d: "pst-sidebar-hidden" in sidebar.get_attribute("class"))
    assert severe_console_messages(browser) == []


@pytest.mark.parametrize("width", [390, 1400])
def test_no_chapter_page_is_wider_than_the_screen(server, browser, width):
    """Every chapter at a phone's and a desktop's width; on the desktop the verdict at a glance is also on the first
    900 px of every chapter."""
    browser.set_window_size(width, 900)
    wide, low = [], []
    try:
        for op in CHAPTERS:
            open_page(browser, f"{server}/proofs/{op}.html")
            over = browser.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
            if over > 0:
                wide.append(f"{op} (+{over} px)")
            if width >= 1400:
                top = browser.execute_script("return document.querySelector('table.proofkit-verdict')"
                                             ".getBoundingClientRect().top + window.scrollY")
                if top >= 900:
                    low.append(f"{op} ({top:.0f} px)")
    finally:
        desktop(browser)
    assert not wide, f"wider than {width} px: {', '.join(wide)}"
    assert not low, f"the verdict at a glance is below the first screen: {', '.join(low)}"


def test_the_site_stays_small_and_ships_only_the_mathjax_it_loads():
    """The site was 40 MB at 58 chapters, 24 MB of it MathJax. What is left: the theme, the MathJax the pages load,
    the search index and the book's own pages (a fixed part), and each chapter's page and plots."""
    files = [p for p in SITE.rglob("*") if p.is_file()]
    total = sum(p.stat().st_size for p in files)
    chapters = sum(p.stat().st_size for p in files if p.parent.name in ("proofs", "_images"))
    mathjax = sum(p.stat().st_size for p in (SITE / "_static" / "mathjax").rglob("*") if p.is_file())
    assert (SITE / "_static" / "mathjax" / "tex-chtml.js").exists()
    assert mathjax < 4e6, f"MathJax takes {mathjax / 1e6:.1f} MB"
    assert not list(SITE.rglob("*.map")), "source maps are not published"
    assert not (SITE / "_sources").exists(), "sources are not copied: the notebooks are in the repository"
    assert not list(SITE.rglob("*.ttf")), "the icon fonts ship as WOFF2 only"
    # 7.1 MB at 184 chapters: the search index (0.8 MB), verdicts.json (0.6 MB) and the proposed-changes page (0.4 MB)
    # grow with every chapter and finding; the budget leaves room for the remaining 17 chapters and no more
    assert total - chapters < 8e6, f"the fixed part takes {(total - chapters) / 1e6:.1f} MB"
    per_chapter = chapters / max(len(CHAPTERS), 1)
    # 108 KB at 153 chapters, once every cross-check table gained onnx-ad's rows and the convolution chapters landed
    # (the largest pages, 190 to 230 KB); the budget keeps that growth from compounding
    assert per_chapter < 120e3, f"a chapter takes {per_chapter / 1e3:.0f} KB on average"


def test_pages_lose_only_whitespace_no_op_spans_and_the_icon_script():
    sys.path.insert(0, str(ROOT / "_ext"))
    try:
        from book_site import compact_page
    finally:
        sys.path.remove(str(ROOT / "_ext"))
    page = ('<head>\n  <script defer src="../_static/scripts/fontawesome.js?digest=1"></script>\n</head>\n<div>\n'
            '    <pre>  a\n    <span class="n">b</span>\n\n  <span class="k">c</span></pre>\n\n   <p>x\n   y</p>\n'
            '<script>\n  var a;\n</script>')
    assert compact_page(page) == ('<head>\n</head>\n<div>\n<pre>  a\n    b\n\n  <span class="k">c</span></pre>\n'
                                  '<p>x\ny</p>\n<script>\n  var a;\n</script>')
    assert not (SITE / "_static" / "scripts" / "fontawesome.js").exists()
    assert "fontawesome.js" not in (SITE / "proofs" / "Clip.html").read_text()


def test_code_loses_only_markup_that_colours_nothing():
    """book_site.py drops the highlighter's spans for names, punctuation and whitespace: in both colour modes the
    theme gives them exactly the code block's own colour."""
    sys.path.insert(0, str(ROOT / "_ext"))
    try:
        from book_site import PLAIN_TOKENS
    finally:
        sys.path.remove(str(ROOT / "_ext"))
    css = (SITE / "_static" / "pygments.css").read_text()
    for mode in ("light", "dark"):
        rules = dict(re.findall(rf'html\[data-theme="{mode}"\] (\.highlight(?: \.\w+)?) \{{([^}}]*)\}}', css))
        block = re.search(r"color: (#\w+)", rules[".highlight"]).group(1)
        for token in PLAIN_TOKENS:
            colour = re.search(r"color: (#\w+)", rules[f".highlight .{token}"]).group(1)
            assert colour == block, f"{mode}: .{token} is {colour}, the code block {block}"
    page = (SITE / "proofs" / "Abs.html").read_text()
    assert '<span class="n">' not in page and '<span class="kn">import</span>' in page


def test_verdicts_are_published_as_data(server, browser):
    import json
    import urllib.request
    doc = json.loads(urllib.request.urlopen(f"{server}/verdicts.json").read())
    schema = json.loads(urllib.request.urlopen(f"{server}/verdicts.schema.json").read())
    assert schema["$id"] == "verdicts.schema.json"
    assert {r["op"] for r in doc["rows"]} == set(CHAPTERS)


def test_a_chapter_page_has_typeset_math_its_verdict_and_its_plot(server, browser):
    open_page(browser, f"{server}/proofs/Clip.html")
    article = browser.find_element(By.CSS_SELECTOR, "article")
    assert len(article.find_elements(By.CSS_SELECTOR, "mjx-container")) >= 10, "math was not typeset"
    text = article.text
    for raw in ("\\(", "\\[", "$$", "\\begin{"):
        assert raw not in text, f"raw TeX {raw!r} left on the page"
    rows = browser.find_elements(By.CSS_SELECTOR, "table.proofkit-verdict tr[id^='verdict-clip-']")
    assert {r.get_attribute("id") for r in rows} >= {"verdict-clip-input", "verdict-clip-min", "verdict-clip-max"}
    assert "disagrees" in browser.find_element(By.ID, "verdict-clip-min").text
    images = article.find_elements(By.CSS_SELECTOR, "img")
    assert images and all(browser.execute_script("return arguments[0].complete && arguments[0].naturalWidth > 0", i)
                          for i in images), "a plot image did not load"
    screenshot(browser, "chapter-Clip")


def _families() -> dict[str, list[str]]:
    import yaml
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    part = next(p for p in toc["parts"] if p["caption"] == "Operators by family")
    return {f["file"]: [c["file"].split("/")[-1] for c in f.get("sections", [])] for f in part["chapters"]}


def test_the_sidebar_lists_every_family_and_each_family_page_its_chapters(server, browser):
    families = _families()
    assert sorted(op for ops in families.values() for op in ops) == CHAPTERS
    for page, ops in families.items():
        open_page(browser, f"{server}/{page}.html")
        hrefs = [a.get_attribute("href") or "" for a in browser.find_elements(By.CSS_SELECTOR, "nav.bd-docs-nav a")]
        missing = [f for f in families if f != page and not any(h.endswith(f"/{f}.html") for h in hrefs)]
        assert not missing, f"{page}: families not in the sidebar: {missing}"
        missing = [op for op in ops if not any(h.endswith(f"/proofs/{op}.html") for h in hrefs)]
        assert not missing, f"{page}: chapters not in the sidebar: {missing}"
    open_page(browser, f"{server}/book/operators.html")
    screenshot(browser, "operator-index")


def test_the_audit_page_links_rows_to_chapters(server, browser):
    open_page(browser, f"{server}/book/audit.html")
    hrefs = [a.get_attribute("href") for a in browser.find_elements(By.CSS_SELECTOR, "article a")]
    assert any(h.endswith("/proofs/Clip.html#verdict-clip-min") for h in hrefs if h)
    screenshot(browser, "audit")


def test_the_engines_page_has_both_engines_and_links_findings_to_verdict_rows(server, browser):
    open_page(browser, f"{server}/book/engines.html")
    headings = [h.text for h in browser.find_elements(By.CSS_SELECTOR, "article h2")]
    for h in ("Coverage", "ONNX Runtime", "onnx-ad"):
        assert any(t.startswith(h) for t in headings), headings
    hrefs = [a.get_attribute("href") or "" for a in browser.find_elements(By.CSS_SELECTOR, "article a")]
    assert any("/proofs/Max.html#verdict-max-data_0" in h for h in hrefs), "a finding links to its verdict row"
    screenshot(browser, "engines")


def test_search_finds_an_operator_by_name(server, browser):
    open_page(browser, f"{server}/search.html?q=Softmax")
    WebDriverWait(browser, 30).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, "#search-results ul.search li a"))
    hits = [a.get_attribute("href") for a in browser.find_elements(By.CSS_SELECTOR, "#search-results ul.search a")]
    assert any("/proofs/Softmax.html" in h for h in hits if h), hits
    # the snippet under a hit is the chapter's prose, not the page's button labels or code
    WebDriverWait(browser, 30).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#search-results p.context"))
    snippets = " ".join(p.text for p in browser.find_elements(By.CSS_SELECTOR, "#search-results p.context"))
    for label in ("Download", "Show code cell", ".ipynb", "import numpy"):
        assert label not in snippets, f"search snippet shows {label!r}: {snippets[:300]}"


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.targets, self.id_list = [], []

    @property
    def ids(self) -> set:
        return set(self.id_list)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.id_list.append(attrs["id"])
        for key in ("href", "src"):
            if attrs.get(key):
                self.targets.append(attrs[key])


@functools.lru_cache(maxsize=None)
def _parse(path: Path) -> _Links:
    parser = _Links()
    parser.feed(path.read_text(errors="replace"))
    return parser


def test_no_broken_local_links():
    broken = []
    for page in sorted(SITE.rglob("*.html")):
        if "_static" in page.parts or "_sources" in page.parts:
            continue
        for target in _parse(page).targets:
            url = urlparse(target)
            if url.scheme or target.startswith(("mailto:", "javascript:", "//")) or not (url.path or url.fragment):
                continue
            dest = (page.parent / unquote(url.path)).resolve() if url.path else page
            if dest.is_dir():
                dest = dest / "index.html"
            if not dest.exists():
                broken.append(f"{page.relative_to(SITE)} -> {target}")
            elif url.fragment and dest.suffix == ".html" and re.fullmatch(r"verdict(-[\w-]+)?", url.fragment):
                if url.fragment not in _parse(dest).ids:
                    broken.append(f"{page.relative_to(SITE)} -> {target} (no such anchor)")
    assert not broken, "\n".join(broken[:20])


def test_every_chapter_has_unique_citable_verdict_anchors():
    for op in CHAPTERS:
        ids = _parse(SITE / "proofs" / f"{op}.html").id_list
        rows = [i for i in ids if i.startswith(f"verdict-{op.lower()}-")]
        assert "verdict" in ids and rows, f"{op}: no verdict section or rows"
        assert len(rows) == len(set(rows)), f"{op}: duplicate verdict anchors"
