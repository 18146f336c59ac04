"""Eight sessions in one page (issue 18, item 4), in Debian's chromium: eight plan sessions of two
plan files (tests/test_memory_bounds.py's outer-product model, N = 64 and N = 200) created at
once, each run three times concurrently with its own feeds, every answer checked against a float64
sum in the page; then all released while a last run of each is pending (release() waits for it),
and a run after release() rejects. Plus one .onnx session with symbolic dims through Pyodide in
the proxy worker, run concurrently at eight sizes."""
import json

import pytest

import nnwasm
from page_server import demo_serve, running
from test_memory_bounds import _outer_model

pytestmark = pytest.mark.browser

PAGE = """<!doctype html><meta charset="utf-8"><title>eight sessions</title>
<script type="module">
import { env, InferenceSession, Tensor } from "/web/nnwasm.mjs";
let seed = 7;
const random = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648) * 2 - 1;
function expected(x) {
  let sum = 0;
  for (const a of x) for (const b of x) { const m0 = a * b; sum += ((m0 + m0) * m0) + m0; }
  return sum;
}
async function check(session, n, label) {
  const x = Float32Array.from({ length: n }, random);
  const { z } = await session.run({ x: new Tensor("float32", x, [n]) });
  const want = expected(x);
  if (!(Math.abs(z.data[0] - want) <= 1e-3 * Math.max(Math.abs(want), n))) throw new Error(`${label}: ${z.data[0]} != ${want}`);
}
async function main() {
  const sizes = Array.from({ length: 8 }, (_, i) => (i % 2 ? 200 : 64));
  const sessions = await Promise.all(sizes.map((n) => InferenceSession.create(`/web/__bounds/outer-${n}.nnwp`)));
  await Promise.all(sessions.flatMap((s, i) => [0, 1, 2].map((k) => check(s, sizes[i], `session ${i} run ${k}`))));
  const last = sessions.map((s, i) => check(s, sizes[i], `session ${i}'s run before release()`));
  await Promise.all(sessions.map((s) => s.release()));
  await Promise.all(last);
  let refused = 0;
  for (const s of sessions) await s.run({ x: new Tensor("float32", new Float32Array(64), [64]) }).catch(() => refused++);
  if (refused !== sessions.length) throw new Error(`${sessions.length - refused} runs after release() did not reject`);
  env.wasm.proxy = true;
  const onnx = await InferenceSession.create("/web/__bounds/outer.onnx");
  await Promise.all([20, 33, 46, 59, 72, 85, 98, 111].map((n) => check(onnx, n, `onnx n = ${n}`)));
  await onnx.release();
  return "ok";
}
main().then((r) => (window.__result = r), (e) => (window.__result = `${e.name}: ${e.message}`));
</script>"""


@pytest.fixture(scope="module")
def server():
    with running(demo_serve().DemoServer(port=0)) as s:
        yield s


def test_eight_sessions_in_one_page(page, server):
    """dist/web must be built (build_scripts/build_web.py, as the demo's tests do)."""
    model = _outer_model()
    files = {"outer.onnx": model, **{f"outer-{n}.nnwp": nnwasm.compile_plan(model, {"x": (n,)}) for n in (64, 200)}}
    base = f"http://127.0.0.1:{server.port}/web/"
    page.route(base + "__eight.html", lambda route: route.fulfill(body=PAGE, content_type="text/html"))
    def serve(data):
        return lambda route: route.fulfill(body=data, content_type="application/octet-stream")
    for name, data in files.items():
        page.route(base + "__bounds/" + name, serve(data))
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(base + "__eight.html")
    page.wait_for_function("window.__result !== undefined", timeout=180_000)
    assert page.evaluate("window.__result") == "ok"
    assert errors == [], json.dumps(errors)


GROW_PAGE = """<!doctype html><meta charset="utf-8"><title>memory.grow fails</title>
<script type="module">
import { InferenceSession, Tensor } from "/web/nnwasm.mjs";
async function main() {
  const small = await InferenceSession.create("/web/__bounds/outer-64.nnwp");
  const run = (s) => s.run({ x: new Tensor("float32", new Float32Array(64).fill(1), [64]) }).then((o) => o.z.data[0]);
  const before = await run(small);
  let error = null;
  try {
    await InferenceSession.create("/web/__bounds/outer-2500.nnwp");
  } catch (e) {
    error = `${e.name}: ${e.message}`;
  }
  const after = await run(small);
  const again = await InferenceSession.create("/web/__bounds/outer-64.nnwp");
  return { before, after, again: await run(again), error };
}
main().then((r) => (window.__result = r), (e) => (window.__result = { failed: `${e.name}: ${e.message}` }));
</script>"""


def test_a_failed_memory_grow_in_a_page(browser_type, browser_type_launch_args, server):
    """Chromium with V8 limited to 64 MiB per wasm memory (--js-flags): a plan file needing ~100 MB
    is refused with WasmOutOfMemory saying memory could not grow; the page's other session and a
    new one run on, with the same answer (64 ones: 64^2 * ((1+1)*1+1) = 12288)."""
    args = {**browser_type_launch_args, "args": [*browser_type_launch_args["args"], "--js-flags=--wasm-max-mem-pages=1024"]}
    browser = browser_type.launch(**args)
    try:
        page = browser.new_page()
        model = _outer_model()
        base = f"http://127.0.0.1:{server.port}/web/"
        page.route(base + "__grow.html", lambda route: route.fulfill(body=GROW_PAGE, content_type="text/html"))
        for n in (64, 2500):
            data = nnwasm.compile_plan(model, {"x": (n,)})
            page.route(base + f"__bounds/outer-{n}.nnwp",
                       (lambda d: lambda route: route.fulfill(body=d, content_type="application/octet-stream"))(data))
        page.goto(base + "__grow.html")
        page.wait_for_function("window.__result !== undefined", timeout=120_000)
        r = page.evaluate("window.__result")
    finally:
        browser.close()
    assert "failed" not in r, r
    assert r["before"] == r["after"] == r["again"] == 64 * 64 * 3
    assert r["error"] and r["error"].startswith("WasmOutOfMemory: kernels.wasm is out of memory allocating"), r
    assert "could not grow" in r["error"]
