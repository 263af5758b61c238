"""The built site as a reader gets it, in headless Chromium (Debian's chromium and chromium-driver).

Run after `make book`: `make browser-test`. It serves _build/html on localhost, checks a chapter page (typeset math,
verdict table, plot), the sidebar, the search page and every local link, and keeps screenshots in
_build/screenshots/ (the CI artifact).
"""

import functools
import http.server
import os
import re
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


def screenshot(browser, name):
    SHOTS.mkdir(parents=True, exist_ok=True)
    height = browser.execute_script("return document.body.scrollHeight")
    browser.set_window_size(1300, min(max(height, 1000), 8000))
    browser.save_screenshot(str(SHOTS / f"{name}.png"))
    browser.set_window_size(1300, 2000)


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


def test_the_sidebar_lists_every_chapter(server, browser):
    open_page(browser, f"{server}/book/operators.html")
    links = {a.get_attribute("href") for a in browser.find_elements(By.CSS_SELECTOR, "nav.bd-docs-nav a")}
    missing = [op for op in CHAPTERS if not any(h and h.endswith(f"/proofs/{op}.html") for h in links)]
    assert not missing, f"not in the sidebar: {missing}"
    screenshot(browser, "operator-index")


def test_the_audit_page_links_rows_to_chapters(server, browser):
    open_page(browser, f"{server}/book/audit.html")
    hrefs = [a.get_attribute("href") for a in browser.find_elements(By.CSS_SELECTOR, "article a")]
    assert any(h.endswith("/proofs/Clip.html#verdict-clip-min") for h in hrefs if h)
    screenshot(browser, "audit")


def test_search_finds_an_operator_by_name(server, browser):
    open_page(browser, f"{server}/search.html?q=Softmax")
    WebDriverWait(browser, 30).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, "#search-results ul.search li a"))
    hits = [a.get_attribute("href") for a in browser.find_elements(By.CSS_SELECTOR, "#search-results ul.search a")]
    assert any("/proofs/Softmax.html" in h for h in hits if h), hits


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
