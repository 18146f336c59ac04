"""The demo and the library under a strict Content-Security-Policy, `default-src 'self'; script-src
'self' 'wasm-unsafe-eval'` (demo/serve.py's STRICT_CSP): no inline script, no eval, no blob: or data:
URL, workers from the page's origin. demo/serve.py sends the header; the page must classify its
photo on the plan path (page thread and proxy worker), through Pyodide (?onnx, in the worker and
on the page's thread) and a picked file, with no violation reported: neither a
`securitypolicyviolation` event (the page's, or a worker's through its console) nor a console
message about the policy."""
import subprocess
import sys

import pytest
from playwright.sync_api import expect

from conftest import ROOT
from page_server import demo_serve, running
from test_browser_demo import BOOT_TIMEOUT_MS

pytestmark = pytest.mark.browser

# Installed before the page's scripts: every violation the page sees, as text.
VIOLATION_PROBE = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__violations.push(`${e.violatedDirective} blocked ${e.blockedURI || "(inline)"} at ${e.sourceFile}:${e.lineNumber}`);
});
"""


@pytest.fixture(scope="module")
def csp_server():
    """dist/web/ rebuilt from the current sources, served by demo/serve.py with its strict CSP."""
    proc = subprocess.run([sys.executable, str(ROOT / "build_scripts" / "build_web.py")],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"build_web.py failed:\n{proc.stdout}\n{proc.stderr}"
    serve = demo_serve()
    with running(serve.DemoServer(port=0, csp=serve.STRICT_CSP)) as server:
        yield server


@pytest.fixture
def csp_page(page):
    """The page, with console messages about the policy, console errors and uncaught exceptions
    recorded (a dedicated worker's console reaches the page's), and the violation probe installed."""
    page.errors = []

    def on_console(m):
        if m.type == "error" or "Content Security Policy" in m.text or "Content-Security-Policy" in m.text:
            page.errors.append(f"console {m.type}: {m.text}")
    page.on("console", on_console)
    page.on("pageerror", lambda e: page.errors.append(f"uncaught: {e}"))
    page.add_init_script(VIOLATION_PROBE)
    return page


def _expect_first_result(page):
    """test_browser_demo's wait, through locators: a string predicate (wait_for_function) is an
    eval, which the policy refuses."""
    expect(page.locator("#top1").or_(page.locator("#error:not([hidden])"))).not_to_have_text("…", timeout=BOOT_TIMEOUT_MS)
    expect(page.locator("#error")).to_be_hidden()
    expect(page.locator("#top1")).to_have_text("espresso", timeout=1000)


def _assert_clean(page):
    assert page.evaluate("window.__violations") == []
    assert page.errors == []


def test_the_server_sends_the_policy(csp_server):
    import urllib.request
    with urllib.request.urlopen(csp_server.url) as r:
        assert r.headers["Content-Security-Policy"] == demo_serve().STRICT_CSP
        html = r.read().decode()
    assert "<script>" not in html and "<script type=\"module\">" not in html, "an inline script in index.html"


@pytest.mark.parametrize("query", ["", "?proxy", "?onnx", "?onnx&noproxy"])
def test_demo_under_strict_csp(csp_page, csp_server, query):
    """The plan file on the page's thread and in the proxy worker; the .onnx through Pyodide, in
    the worker and on the page's thread."""
    page = csp_page
    page.goto(csp_server.url + query)
    _expect_first_result(page)
    expect(page.locator("#error")).to_be_hidden()
    expect(page.locator("#photo")).to_have_class("shown")
    _assert_clean(page)


def test_picked_file_under_strict_csp(csp_page, csp_server):
    """A picked photo is drawn on the page (no blob: URL, which img-src 'self' refuses) and classified."""
    page = csp_page
    page.goto(csp_server.url)
    _expect_first_result(page)
    page.set_input_files("#file", str(ROOT / "demo" / "assets" / "coffee.png"))
    expect(page.locator("#status")).to_have_text("Done. Drop another image, or choose a file.", timeout=60_000)
    expect(page.locator("#top1")).to_have_text("espresso")
    _assert_clean(page)
