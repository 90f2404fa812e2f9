"""The built site in a real headless Chromium (Debian's /usr/bin/chromium, driven by Playwright): every
page of the nav loads, every link on it answers, and no page raises a JavaScript error or logs one."""

import functools
import shutil
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.error import HTTPError
from urllib.parse import urldefrag, urlparse
from urllib.request import urlopen

import pytest

playwright = pytest.importorskip("playwright.sync_api", reason="pip install playwright (no browser download)")

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists() or shutil.which(str(CHROMIUM)) is None,
    reason="no /usr/bin/chromium: install Debian's chromium package (apt-get install chromium)",
)
WAIT_MS = 30_000


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


@pytest.fixture
def site_url(built_site):
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(built_site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def status(url: str) -> int:
    try:
        with urlopen(url, timeout=10) as answer:
            return answer.status
    except HTTPError as err:
        return err.code


def test_every_nav_page_loads_without_broken_links_or_script_errors(site_url):
    errors: list[str] = []
    external: list[str] = []
    with playwright.sync_playwright() as p:
        # --no-sandbox: Chromium's sandbox needs user namespaces, which containers often lack
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.on("pageerror", lambda exc: errors.append(f"{page.url}: {exc}"))
            page.on(
                "console", lambda m: errors.append(f"{page.url}: {m.text}") if m.type == "error" else None
            )
            local = (site_url.rstrip("/"), "data:", "blob:")
            page.on("request", lambda r: None if r.url.startswith(local) else external.append(r.url))
            page.goto(site_url, wait_until="load", timeout=WAIT_MS)
            nav = page.eval_on_selector_all(
                "nav.md-nav--primary a.md-nav__link[href]", "as => as.map(a => a.href)"
            )
            pages = list(dict.fromkeys(urldefrag(u).url for u in [site_url, *nav] if u.startswith(site_url)))
            assert len(pages) >= 15, f"the nav lists only {pages}"
            checked: dict[str, int] = {}
            for url in pages:
                answer = page.goto(url, wait_until="load", timeout=WAIT_MS)
                assert answer is not None and answer.status == 200, f"{url}: HTTP {answer and answer.status}"
                assert page.locator("article h1").count() >= 1, f"{url} has no heading"
                links = page.eval_on_selector_all("article a[href]", "as => as.map(a => a.href)")
                for link in links:
                    target = urldefrag(link).url
                    if urlparse(target).scheme in ("http", "https") and target.startswith(site_url):
                        if target not in checked:
                            checked[target] = status(target)
                        assert checked[target] < 400, f"{url} links to {target}: HTTP {checked[target]}"
            page.goto(site_url, wait_until="load", timeout=WAIT_MS)
            try:
                _search(page, "BatchSim")
            except playwright.TimeoutError as exc:
                raise AssertionError(f"no search results for BatchSim; script errors: {errors}") from exc
        finally:
            browser.close()
    assert not errors, "JavaScript errors:\n" + "\n".join(errors)
    assert not external, f"the site fetched from outside this machine: {external}"


def _search(page, query: str) -> None:
    """Results for `query` in the site's search, typed key by key as a reader would. The search reads the
    query on key-up (a programmatic fill can slip past it), and it answers once its web worker has built
    the index, which a busy machine may take seconds to do."""
    box = page.locator("input.md-search__input")
    box.click()
    box.press_sequentially(query)
    page.wait_for_selector(".md-search-result__item", timeout=WAIT_MS)
