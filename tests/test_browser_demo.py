"""The demo page in Debian's chromium, as a visitor would use it: offline (every request to
127.0.0.1, the proxy worker's included), it must classify the default photo as "espresso" with no
console error from its plan file without requesting a file of Pyodide's or the wheel; through
Pyodide (/demo/?onnx, or an .onnx picked on the page) give the same top-1 and keep painting while
Pyodide boots in its worker; classify a picked file and a dropped one, and show an error for a
file that is no image."""
import json
import re
import subprocess
import sys
from urllib.parse import urlparse

import numpy as np
import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
from playwright.sync_api import expect

import imagenet_fixture
from conftest import ROOT
from page_server import demo_serve, running

pytestmark = pytest.mark.browser

BOOT_TIMEOUT_MS = 120_000  # Pyodide boots in ~3.5 s here; a loaded 2-core machine is slower
ASSETS = ROOT / "demo" / "assets"
# The longest the page may go without painting while nnwasm boots in its worker. Booting on the
# page's own thread (/demo/?noproxy) freezes it for ~3 s here.
MAX_FRAME_GAP_MS = 1000

# Installed before the page's scripts: the time of every frame the page paints until the first
# after the boot (painting on after it would compete with the runs for the 2 cores), and when the
# demo shows its boot time (the end of the boot).
FRAME_PROBE = """
window.__frames = [];
requestAnimationFrame(function tick(t) {
  window.__frames.push(t);
  if (window.__bootedAt === undefined || t < window.__bootedAt) requestAnimationFrame(tick);
});
new MutationObserver((_, observer) => {
  const cell = document.getElementById("t-boot");
  if (cell && cell.textContent !== "\u2013") {
    window.__bootedAt = performance.now();
    observer.disconnect();
  }
}).observe(document, { subtree: true, childList: true, characterData: true });
"""


@pytest.fixture(scope="module")
def demo_server():
    """dist/web/ rebuilt from the current sources, served by demo/serve.py on a free port."""
    proc = subprocess.run([sys.executable, str(ROOT / "build_scripts" / "build_web.py")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"build_web.py failed:\n{proc.stdout}\n{proc.stderr}"
    with running(demo_serve().DemoServer(port=0)) as server:
        yield server


@pytest.fixture
def watched_page(page):
    """The page, with every request URL (the context's: workers' too) and every console error /
    uncaught exception recorded (a dedicated worker's console reaches the page's), and the frame
    probe installed."""
    page.requests, page.errors = [], []
    page.context.on("request", lambda r: page.requests.append(r.url))
    page.context.on("requestfailed", lambda r: page.errors.append(f"request failed: {r.url}: {r.failure}"))
    page.on("console", lambda m: page.errors.append(f"console: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: page.errors.append(f"uncaught: {e}"))
    page.add_init_script(FRAME_PROBE)
    return page


def _expect_first_result(page, label="espresso"):
    """Waits for the first top-1; on a timeout, fails with what the page shows and logged (its
    status line, error box, console errors and timeline marks), to tell a hang from a slow load."""
    try:   # the top-1, or an error shown (then fail at once, below)
        page.wait_for_function("document.getElementById('top1').textContent !== '…' || "
                               "!document.getElementById('error').hidden", polling=100, timeout=BOOT_TIMEOUT_MS)
        expect(page.locator("#top1")).to_have_text(label, timeout=1000)
    except (AssertionError, PlaywrightTimeoutError) as e:
        seen = page.evaluate("""() => ({status: document.getElementById("status").textContent,
            error: document.getElementById("error").textContent,
            marks: performance.getEntriesByType("mark").map((m) => [m.name, Math.round(m.startTime)]),
            pending: performance.getEntriesByType("resource").filter((r) => !r.responseEnd).map((r) => r.name)})""")
        raise AssertionError(f"no first result: {seen}, page errors {page.errors}") from e


def _longest_frame_gap_during_boot(page):
    """(longest time between two painted frames up to the end of the boot, boot end), in ms
    since the navigation started."""
    frames, booted = page.evaluate("[window.__frames, window.__bootedAt]")
    assert booted is not None and len(frames) >= 2, "the frame probe saw no boot or no frames"
    gaps = [b - a for a, b in zip(frames, frames[1:]) if a < booted]
    return max(gaps), booted


def _onnxruntime_top1(photo):
    import onnxruntime
    sess = onnxruntime.InferenceSession(str(ASSETS / "efficientnet-lite0.onnx"), providers=["CPUExecutionProvider"])
    logits = sess.run(None, {sess.get_inputs()[0].name: imagenet_fixture.preprocess(photo)})[0]
    return imagenet_fixture.labels()[int(np.argmax(logits))]


def _pyodide_requests(page):
    """Requests for Pyodide's files, the nnwasm wheel or the manifest naming it: the .onnx path's."""
    paths = [urlparse(u).path for u in page.requests]
    return [p for p in paths if p.startswith("/dist/web/pyodide/") or p.endswith((".whl", "/nnwasm-web.json"))]


def _assert_offline(page, port):
    for url in page.requests:
        parsed = urlparse(url)
        if parsed.scheme in ("data", "blob"):
            continue
        assert (parsed.hostname, parsed.port) == ("127.0.0.1", port), f"request left the demo server: {url}"


def test_demo_classifies_the_default_photo(watched_page, demo_server):
    """The default page: the committed plan file on kernels.wasm, no Python at all."""
    page = watched_page
    page.goto(demo_server.url)
    _expect_first_result(page)
    expect(page.locator("#error")).to_be_hidden()
    expect(page.locator("#predictions li")).to_have_count(5)
    expect(page.locator("#path")).to_contain_text("efficientnet-lite0.nnwp: a plan file")
    expect(page.locator("#providers li").first).to_contain_text("WasmExecutionProvider")
    for cell in ("#t-first", "#t-boot", "#t-create", "#t-pre", "#t-run"):
        expect(page.locator(cell)).to_have_text(re.compile(r"^\d+(\.\d+)? m?s"))

    # The page's canvas preprocessing must feed what Python's recipe gives (within 8-bit rounding).
    pixels = np.array(page.evaluate("Array.from(window.nnwasmDemo.input.data)"), np.float32)
    expected = imagenet_fixture.preprocess(ASSETS / "coffee.png").ravel()
    diff = np.abs(pixels - expected) * imagenet_fixture.load_config()["std"][0]
    assert diff.max() <= 1.01 and (diff > 0.01).mean() < 0.01, (diff.max(), (diff > 0.01).mean())

    page.click("#bench")
    expect(page.locator("#status")).to_have_text("Timed 10 runs.", timeout=60_000)
    timings = {k: page.inner_text(f"#t-{k}") for k in ("first", "boot", "create", "pre", "run")}
    print("Chromium, EfficientNet-Lite0 plan file, page thread:", timings)
    (ROOT / "build").mkdir(exist_ok=True)
    page.screenshot(path=str(ROOT / "build" / "demo.png"), full_page=True)

    assert page.errors == []
    paths = [urlparse(u).path for u in page.requests]
    # The demo server isolates the page (COOP/COEP): onnxruntime-web's default, min(4, ceil(cores / 2))
    # threads (web/threads.mjs); as Chromium has relaxed SIMD, above 1 the page preloads and runs
    # kernels-relaxed-threads.wasm, else kernels-relaxed.wasm (web/flavours.mjs)
    threads = min(4, -(-page.evaluate("navigator.hardwareConcurrency") // 2))
    assert "/demo/assets/efficientnet-lite0.nnwp" in paths, paths
    if threads > 1:
        assert "/dist/web/kernels-relaxed-threads.wasm" in paths, paths
        expect(page.locator("#kernels-flavour")).to_contain_text("kernels.wasm flavour: relaxed+threads")
        expect(page.locator("#threads")).to_contain_text(f"threads: {threads} (Web Workers on a shared memory")
    else:
        assert "/dist/web/kernels-relaxed.wasm" in paths, paths
        expect(page.locator("#kernels-flavour")).to_contain_text("kernels.wasm flavour: relaxed")
        expect(page.locator("#threads")).to_have_text("threads: 1")
    assert _pyodide_requests(page) == [], "the plan page asked for Python's files"
    assert "/demo/assets/efficientnet-lite0.onnx" not in paths and "/web/proxy-worker.mjs" not in paths, paths
    assert [p for p in paths if p.endswith(".mjs") and p != "/web/pool-worker.mjs"] == ["/demo/app.bundle.mjs"], \
        f"not one bundled module: {paths}"
    once = [p for p in paths if p != "/web/pool-worker.mjs"]   # one worker per helper
    assert len(once) == len(set(once)), f"a file was fetched twice (a preload missed): {paths}"
    _assert_offline(page, demo_server.port)


def test_demo_on_two_threads(watched_page, demo_server):
    """/demo/?threads=2: kernels-relaxed-threads.wasm (Chromium has relaxed SIMD), its helper in a Web
    Worker; the page says so once the helper runs (the first run may go on one thread)."""
    page = watched_page
    page.goto(demo_server.url + "?threads=2")
    _expect_first_result(page)
    expect(page.locator("#error")).to_be_hidden()
    expect(page.locator("#kernels-flavour")).to_contain_text("kernels.wasm flavour: relaxed+threads")
    page.click("#bench")
    expect(page.locator("#status")).to_have_text("Timed 10 runs.", timeout=60_000)
    expect(page.locator("#threads")).to_contain_text("threads: 2 (Web Workers on a shared memory; the page is cross-origin isolated)")
    paths = [urlparse(u).path for u in page.requests]
    assert "/dist/web/kernels-relaxed-threads.wasm" in paths and "/web/pool-worker.mjs" in paths, paths
    assert not {"/dist/web/kernels-relaxed.wasm", "/dist/web/kernels.wasm", "/dist/web/kernels-threads.wasm"} & set(paths), paths
    assert page.errors == []
    _assert_offline(page, demo_server.port)


def test_demo_plan_in_the_proxy_worker(watched_page, demo_server):
    """/demo/?proxy: the plan session lives in the proxy worker, which still boots no Python."""
    page = watched_page
    page.goto(demo_server.url + "?proxy")
    _expect_first_result(page)
    expect(page.locator("#error")).to_be_hidden()
    assert page.errors == []
    paths = [urlparse(u).path for u in page.requests]
    assert "/web/proxy-worker.mjs" in paths, paths
    assert _pyodide_requests(page) == [], "the worker booted Python for a plan file"
    _assert_offline(page, demo_server.port)


def test_demo_onnx_through_pyodide(watched_page, demo_server):
    """/demo/?onnx: the committed .onnx, through Python in Pyodide booted in the proxy worker; the
    page keeps painting meanwhile, and the top-1 is the plan's."""
    page = watched_page
    page.goto(demo_server.url + "?onnx")
    _expect_first_result(page)
    expect(page.locator("#error")).to_be_hidden()
    expect(page.locator("#path")).to_contain_text("efficientnet-lite0.onnx: an ONNX model")
    expect(page.locator("#providers li").first).to_contain_text("WasmExecutionProvider")
    timings = {k: page.inner_text(f"#t-{k}") for k in ("first", "boot", "create", "pre", "run")}
    print("Chromium, EfficientNet-Lite0 .onnx, proxy worker:", timings)

    # Pyodide booted in the worker: the page kept painting all along.
    gap, booted = _longest_frame_gap_during_boot(page)
    print(f"Chromium, proxy worker: longest frame gap during boot {gap:.0f} ms (boot done at {booted:.0f} ms)")
    assert gap < MAX_FRAME_GAP_MS and gap < booted / 3, (gap, booted)

    assert page.errors == []
    # The worker's own requests are seen (the checks below cover it), and only it fetched Pyodide.
    paths = [urlparse(u).path for u in page.requests]
    assert "/web/proxy-worker.mjs" in paths and "/dist/web/pyodide/pyodide.asm.wasm" in paths, paths
    assert "/demo/assets/efficientnet-lite0.nnwp" not in paths, "the .onnx page downloaded the plan too"
    _assert_offline(page, demo_server.port)


def _without_snapshot(route):
    """nnwasm-web.json without its Pyodide snapshot: the boot starts Python from scratch."""
    manifest = json.loads(route.fetch().text())
    manifest.pop("pyodideSnapshot", None)
    route.fulfill(body=json.dumps(manifest), content_type="application/json")


def test_demo_without_the_worker(watched_page, demo_server):
    """/demo/?onnx&noproxy boots Pyodide on the page's thread: same result, but the page freezes
    for seconds. Also the control for the frame probe: it must see that freeze (booting Python from
    scratch: from the snapshot the page thread is held for only ~0.3 s)."""
    page = watched_page
    page.context.route("**/dist/web/nnwasm-web.json", _without_snapshot)
    page.goto(demo_server.url + "?onnx&noproxy")
    _expect_first_result(page)
    expect(page.locator("#error")).to_be_hidden()
    page.click("#bench")
    expect(page.locator("#status")).to_have_text("Timed 10 runs.", timeout=60_000)
    timings = {k: page.inner_text(f"#t-{k}") for k in ("boot", "create", "pre", "run")}
    print("Chromium, EfficientNet-Lite0, page thread:", timings)

    gap, booted = _longest_frame_gap_during_boot(page)
    print(f"Chromium, page thread: longest frame gap during boot {gap:.0f} ms (boot done at {booted:.0f} ms)")
    assert gap > MAX_FRAME_GAP_MS, f"the probe saw no freeze ({gap:.0f} ms): the proxy check proves nothing here"

    assert page.errors == []
    paths = [urlparse(u).path for u in page.requests]
    assert "/web/proxy-worker.mjs" not in paths, "?noproxy started the worker"
    _assert_offline(page, demo_server.port)


def test_demo_classifies_picked_and_dropped_files(watched_page, demo_server):
    page = watched_page
    page.goto(demo_server.url)
    _expect_first_result(page)

    cat = _onnxruntime_top1(ASSETS / "chelsea.png")
    page.set_input_files("#file", str(ASSETS / "chelsea.png"))
    expect(page.locator("#top1")).to_have_text(cat, timeout=30_000)

    # Drop the coffee photo back onto the page, as a person dragging it from their desktop.
    page.evaluate("""async () => {
        const blob = await (await fetch("assets/coffee.png")).blob();
        const dt = new DataTransfer();
        dt.items.add(new File([blob], "coffee.png", { type: "image/png" }));
        document.getElementById("dropzone").dispatchEvent(new DragEvent("drop", { dataTransfer: dt, bubbles: true, cancelable: true }));
    }""")
    expect(page.locator("#top1")).to_have_text("espresso", timeout=30_000)

    # A file that is no image: a clear message on the page, and the page keeps working.
    page.set_input_files("#file", files=[{"name": "notes.txt", "mimeType": "text/plain", "buffer": b"not an image"}])
    expect(page.locator("#error")).to_be_visible(timeout=30_000)
    expect(page.locator("#error")).to_contain_text("cannot decode notes.txt")
    page.set_input_files("#file", str(ASSETS / "chelsea.png"))
    expect(page.locator("#top1")).to_have_text(cat, timeout=30_000)
    expect(page.locator("#error")).to_be_hidden()

    assert page.errors == []
    assert _pyodide_requests(page) == [], "images alone made the plan page ask for Python's files"
    _assert_offline(page, demo_server.port)


def test_demo_opens_an_onnx_model(watched_page, demo_server):
    """An .onnx picked on the plan page boots Pyodide (in the worker), only then, and classifies
    the photo on screen as the plan did."""
    page = watched_page
    page.goto(demo_server.url)
    _expect_first_result(page)
    assert _pyodide_requests(page) == []
    page.locator("#top1").evaluate("e => { e.textContent = '…'; }")  # so the check below sees a new result
    page.set_input_files("#model-file", str(ASSETS / "efficientnet-lite0.onnx"))
    _expect_first_result(page)
    expect(page.locator("#path")).to_contain_text("efficientnet-lite0.onnx: an ONNX model")
    expect(page.locator("#status")).to_contain_text("efficientnet-lite0.onnx is loaded")
    expect(page.locator("#error")).to_be_hidden()
    assert page.errors == []
    paths = [urlparse(u).path for u in page.requests]
    assert "/web/proxy-worker.mjs" in paths and "/dist/web/pyodide/pyodide.asm.wasm" in paths, paths
    _assert_offline(page, demo_server.port)
