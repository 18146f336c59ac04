"""The Pyodide boot in Chromium: the memory snapshot build_web.py makes in Node loads in the
browser (Python started, nnwasm imported), a snapshot that can't be used falls back to starting
Python from scratch, and both give the same EfficientNet-Lite0 outputs as booting without one."""
import json

import pytest

from test_browser_demo import demo_server  # noqa: F401 (the fixture: dist/web/ rebuilt and served)

pytestmark = pytest.mark.browser

# A page on the demo server's origin (routed, so demo/ stays untouched): boots on its own thread,
# runs EfficientNet-Lite0 on zeros, and reports the boot's steps and the first logits.
PAGE = """<!doctype html><meta charset="utf-8"><script type="module">
import { env, InferenceSession, Tensor } from "/web/nnwasm.mjs";
import { boot } from "/web/pyodide-boot.mjs";
env.pyodideSnapshot = !location.search.includes("nosnapshot");
try {
  const { steps } = await boot();
  const session = await InferenceSession.create("/demo/assets/efficientnet-lite0.onnx", { executionProviders: ["wasm"] });
  const out = await session.run({ input: new Tensor("float32", new Float32Array(3 * 224 * 224), [1, 3, 224, 224]) });
  window.__result = { steps: Object.keys(steps), logits: Array.from(out[session.outputNames[0]].data.slice(0, 8)) };
} catch (e) {
  window.__result = { error: `${e.name}: ${e.message}` };
}
</script>"""


def _boot(page, server, query="", snapshot_body=None):
    base = f"http://127.0.0.1:{server.port}/"
    page.route(base + "boot-test.html*", lambda route: route.fulfill(body=PAGE, content_type="text/html"))
    if snapshot_body is not None:
        page.route(base + "dist/web/pyodide-snapshot.bin.gz", lambda route: route.fulfill(body=snapshot_body))
    requests = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(base + "boot-test.html" + query)
    page.wait_for_function("window.__result !== undefined", timeout=120_000)
    result = page.evaluate("window.__result")
    assert "error" not in result, result
    return result, requests


def test_snapshot_from_node_boots_chromium_and_fallbacks_agree(browser, demo_server):  # noqa: F811
    runs = {}
    for name, query, body in (("snapshot", "", None), ("cold", "?nosnapshot", None), ("broken", "", b"not gzip")):
        page = browser.new_page()
        try:
            runs[name] = _boot(page, demo_server, query, body)
        finally:
            page.close()
    (snap, snap_requests), (cold, cold_requests), (broken, _) = runs["snapshot"], runs["cold"], runs["broken"]
    assert "loadPyodide resolved (from the snapshot)" in snap["steps"], snap["steps"]
    assert any(u.endswith("/dist/web/pyodide-snapshot.bin.gz") for u in snap_requests)
    assert "loadPyodide resolved" in cold["steps"] and "loadPyodide resolved (from the snapshot)" not in cold["steps"]
    assert not any(u.endswith("pyodide-snapshot.bin.gz") for u in cold_requests), "env.pyodideSnapshot = false still fetched it"
    assert any(s.startswith("snapshot not used") for s in broken["steps"]), broken["steps"]
    assert "loadPyodide resolved" in broken["steps"]
    print("Chromium boot steps:", json.dumps(snap["steps"]))
    assert snap["logits"] == cold["logits"] == broken["logits"]
