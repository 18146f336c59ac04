"""The thread pool in Chromium (web/threads.mjs: module Web Workers on a shared WebAssembly.Memory),
served with COOP/COEP by demo/serve.py: zoo plan files give on 2 threads the bits of 1 thread and
of CPython's `simd` flavour, on the page's thread (the caller spins: a page's main thread may not
block) and in the proxy worker; a page that is not cross-origin isolated runs 1 thread with one
warning. A representative set of the zoo by default, all of it with NNWASM_ZOO_ALL=1."""
import os

import pytest

import threads_fixtures
from conftest import ROOT
from page_server import demo_serve, running, serve

pytestmark = pytest.mark.browser

PAGE = """<!doctype html><meta charset="utf-8"><title>threads</title>
<script type="module">
import { env, InferenceSession, Tensor } from "/web/nnwasm.mjs";
const q = new URLSearchParams(location.search);
env.wasm.numThreads = Number(q.get("threads"));
env.wasm.proxy = q.has("proxy");
env.wasm.relaxedSimd = false;
env.wasm.wasmPaths = "/kernels/";
const ARRAYS = { float32: Float32Array, int32: Int32Array, int64: BigInt64Array, uint8: Uint8Array, int8: Int8Array,
                 float16: Uint16Array, bool: Uint8Array };
const hex = (b) => [...new Uint8Array(b)].map((x) => x.toString(16).padStart(2, "0")).join("");
window.__warnings = [];
const warn = console.warn;
console.warn = (...a) => { window.__warnings.push(a.join(" ")); warn(...a); };
window.__result = (async () => {
  const fixtures = await (await fetch("fixtures.json")).json();
  const out = { isolated: crossOriginIsolated, models: {} };
  for (const [key, entry] of Object.entries(fixtures)) {
    const session = await InferenceSession.create(entry.plan);
    const feeds = {};
    for (const [input, v] of Object.entries(entry.inputs)) {
      feeds[input] = new Tensor(v.dtype, new ARRAYS[v.dtype](await (await fetch(v.file)).arrayBuffer()), v.shape);
    }
    await session.run(feeds);
    for (let i = 0; i < 200 && session.numThreads < env.wasm.numThreads; i++) {
      await new Promise((r) => setTimeout(r, 25));
      await session.run(feeds);
    }
    const threads = session.numThreads;
    const results = await session.run(feeds);
    const sha256 = {};
    for (const [name, t] of Object.entries(results)) {
      sha256[name] = hex(await crypto.subtle.digest("SHA-256", new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength)));
    }
    out.models[key] = { threads, sha256 };
    await session.release();
  }
  out.warnings = window.__warnings;
  return out;
})();
</script>"""


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    if not (ROOT / "py_runtime" / "nnwasm" / "kernels-threads.wasm").exists():
        pytest.fail("kernels-threads.wasm is missing: run `python build_scripts/build_kernels.py`")
    root = tmp_path_factory.mktemp("threadsite")
    (root / "web").symlink_to(ROOT / "web")
    (root / "kernels").symlink_to(ROOT / "py_runtime" / "nnwasm")
    demo = root / "demo"
    demo.mkdir()
    names = threads_fixtures.ALL if os.environ.get("NNWASM_ZOO_ALL") == "1" else threads_fixtures.FAST
    fixtures = threads_fixtures.build(demo, names)
    (demo / "threads.html").write_text(PAGE)
    with running(demo_serve().DemoServer(port=0, root=root, extra_prefixes=("/kernels/",))) as server:
        yield server, root, fixtures


def run(page, url):
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" and "Failed to load resource" not in m.text else None)
    # /favicon.ico, and the warm-up plan (web/plan-session.mjs) that /kernels/ does not hold
    page.on("response", lambda r: errors.append(r.url) if r.status >= 400 and not r.url.endswith(
        ("/favicon.ico", "/kernels-warmup.nnwp")) else None)
    page.goto(url)
    result = page.evaluate("window.__result")
    assert not errors, errors
    return result


@pytest.mark.parametrize("mode", ["", "&proxy"], ids=["page-thread", "proxy-worker"])
def test_zoo_plans_same_bits_1_and_2_threads_in_chromium(site, page, mode):
    server, _, fixtures = site
    base = f"http://127.0.0.1:{server.port}/demo/threads.html?threads="
    one = run(page, base + "1" + mode)
    two = run(page, base + "2" + mode)
    assert one["isolated"] and two["isolated"]
    for key, entry in fixtures.items():
        assert one["models"][key]["threads"] == 1 and two["models"][key]["threads"] == 2, key
        assert one["models"][key]["sha256"] == entry["sha256"], f"{key}: Chromium 1 thread differs from CPython's simd"
        assert two["models"][key]["sha256"] == entry["sha256"], f"{key}: Chromium 2 threads differ from 1 thread"
    assert not two["warnings"], two["warnings"]


def test_not_isolated_runs_one_thread_with_one_warning(site, page):
    _, root, fixtures = site
    server = serve({"/web/": root / "web", "/kernels/": root / "kernels", "/demo/": root / "demo"}, {})   # no COOP/COEP
    try:
        out = run(page, f"{server.origin}/demo/threads.html?threads=2")
    finally:
        server.shutdown()
    assert not out["isolated"]
    assert all(m["threads"] == 1 and m["sha256"] == fixtures[k]["sha256"] for k, m in out["models"].items())
    assert out["warnings"] == ["nnwasm: env.wasm.numThreads is 2, but the page is not cross-origin isolated "
                               "(no SharedArrayBuffer): running on 1 thread (serve the page with "
                               "Cross-Origin-Opener-Policy: same-origin and Cross-Origin-Embedder-Policy: require-corp)"]
