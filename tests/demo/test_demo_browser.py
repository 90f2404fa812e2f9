"""The demo page in a real headless Chromium (Debian's /usr/bin/chromium, driven by Playwright): run an
episode, see the map, the camera view and the metrics, play it, and see a bad episode number reported."""

import shutil
from pathlib import Path

import pytest

from tests.support import free_port

pytest.importorskip("gradio", reason="the demo needs gradio: pip install 'navzoo[demo]'")
playwright = pytest.importorskip("playwright.sync_api", reason="pip install playwright (no browser download)")

from navzoo.demo.app import build_app, launch  # noqa: E402
from navzoo.demo.sources import Sources  # noqa: E402

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists() or shutil.which(str(CHROMIUM)) is None,
    reason="no /usr/bin/chromium: install Debian's chromium package (apt-get install chromium)",
)
SECONDS = 60_000  # Playwright waits in milliseconds


@pytest.fixture
def page_url(tmp_path, monkeypatch):
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "gradio"))
    app = build_app()
    port = free_port()
    launch(app, port=port, prevent_thread_lock=True, quiet=True)
    yield f"http://127.0.0.1:{port}/"
    app.close()


def test_run_and_play_an_episode_in_chromium(page_url, tmp_path):
    external = []
    with playwright.sync_playwright() as p:
        # --no-sandbox: Chromium's sandbox needs user namespaces, which containers often lack
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1300})
            local = (page_url.rstrip("/"), "data:", "blob:")
            page.on("request", lambda r: None if r.url.startswith(local) else external.append(r.url))
            page.goto(page_url, wait_until="load")
            page.wait_for_selector("#run-episode", timeout=SECONDS)
            assert page.input_value("#agent input").startswith(Sources().default_model())
            page.click("#agent input")
            page.get_by_role("option", name="oracle (baseline)").click()
            page.click("#run-episode")  # on val episode 0, 60-odd steps
            page.wait_for_selector("#map-a img", timeout=SECONDS)
            page.wait_for_selector("#view-a img", timeout=SECONDS)
            page.wait_for_function(
                "document.querySelector('#metrics')?.innerText.includes('SPL')", timeout=SECONDS
            )
            assert "A: oracle" in page.inner_text("#title-a")
            assert page.eval_on_selector("#map-a img", "img => img.naturalWidth") > 100
            assert page.eval_on_selector("#view-a img", "img => img.naturalWidth") == 256
            page.click("#play")
            page.wait_for_function(
                "Number(document.querySelector('#step input[type=number]').value) >= 3", timeout=SECONDS
            )
            page.click("#play")  # pause
            screenshot = tmp_path / "demo.png"
            page.screenshot(path=str(screenshot), full_page=True)

            page.fill("#episode input", "100000")
            page.click("#run-episode")
            page.wait_for_selector("#error:visible", timeout=SECONDS)
            assert "invalid episode=100000" in page.inner_text("#error")
        finally:
            browser.close()
    data = screenshot.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 10_000
    assert not external, f"the page fetched from outside this machine: {external}"
