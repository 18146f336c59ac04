"""A .nnwp plan file run in a page by Debian's chromium, on the page's thread and in the proxy
worker: web/nnwasm.mjs must fetch the file and kernels.wasm only (no Pyodide, no wheel), and give
outputs bit-identical to CPython's."""
import json
import subprocess
import sys

import pytest

from conftest import ROOT
from page_server import demo_serve, running
from plan_fixtures import build_plan_fixtures

pytestmark = pytest.mark.browser

PAGE = """<!doctype html><meta charset="utf-8"><title>plan file</title>
<script type="module">
import { env, InferenceSession, Tensor } from "/web/nnwasm.mjs";
env.wasm.proxy = location.search === "?proxy";
env.wasm.relaxedSimd = false;   // the reference flavour, whose bits are CPython's on every engine
const ARRAYS = { float32: Float32Array, int32: Int32Array, int64: BigInt64Array };
window.__result = (async () => {
  const fixtures = await (await fetch("fixtures.json")).json();
  const out = {};
  for (const [name, entry] of Object.entries(fixtures)) {
    const t0 = performance.now();
    const session = await InferenceSession.create(name + ".nnwp");
    const t1 = performance.now();
    const feeds = {};
    for (const [input, v] of Object.entries(entry.inputs)) {
      const buf = await (await fetch(v.file)).arrayBuffer();
      feeds[input] = new Tensor(v.dtype, new ARRAYS[v.dtype](buf), v.shape);
    }
    const t2 = performance.now();
    const results = await session.run(feeds);
    const t3 = performance.now();
    out[name] = Object.fromEntries(Object.entries(results).map(([k, t]) =>
      [k, { dims: [...t.dims], bytes: Array.from(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength)) }]));
    out[name].__ms = { create: t1 - t0, firstRun: t3 - t2, pageOpenToResult: t3 };
    await session.startProfiling();
    await session.run(feeds);
    out[name].__profile = (await session.endProfiling()).filter((e) => e.cat === "Node" && e.dur >= 0)
      .map((e) => [e.name, e.args.op_name, e.args.kernel, e.args.provider]);
    await session.release();
  }
  return out;
})();
</script>"""


@pytest.fixture(scope="module")
def plan_site(tmp_path_factory):
    """A served root whose /web/ and /dist/web/ are the checkout's and /demo/ holds the page,
    the plan files and their fixtures."""
    proc = subprocess.run([sys.executable, str(ROOT / "build_scripts" / "build_web.py")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"build_web.py failed:\n{proc.stdout}\n{proc.stderr}"
    root = tmp_path_factory.mktemp("site")
    (root / "web").symlink_to(ROOT / "web")
    (root / "dist").mkdir()
    (root / "dist" / "web").symlink_to(ROOT / "dist" / "web")
    demo = root / "demo"
    demo.mkdir()
    build_plan_fixtures(demo)
    fixtures = json.loads((demo / "fixtures.json").read_text())
    for entry in fixtures.values():   # file names the page can fetch
        for v in [*entry["inputs"].values(), *entry["outputs"].values()]:
            v["file"] = v["path"].rsplit("/", 1)[1]
    (demo / "fixtures.json").write_text(json.dumps(fixtures))
    (demo / "plan.html").write_text(PAGE)
    with running(demo_serve().DemoServer(port=0, root=root)) as server:
        yield server, fixtures


@pytest.mark.parametrize("mode", ["", "?proxy"], ids=["page", "proxy-worker"])
def test_plan_file_in_chromium(plan_site, page, mode, record_property):
    server, fixtures = plan_site
    requests, errors, failed = [], [], []
    page.context.on("request", lambda r: requests.append(r.url))
    page.on("response", lambda r: failed.append(r.url) if r.status >= 400 and not r.url.endswith("/favicon.ico") else None)
    # A failed load is checked below by URL (Chromium asks for /favicon.ico, which is not served).
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" and "Failed to load resource" not in m.text else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(server.url + "plan.html" + mode)
    result = page.evaluate("window.__result")
    assert not errors and not failed, (errors, failed)
    timings = {name: {k: round(v, 1) for k, v in result[name].pop("__ms").items()} for name in fixtures}
    record_property("plan-timings-ms", timings)
    print(f"Chromium, plan files ({mode or 'page thread'}), ms:", timings)
    for name, entry in fixtures.items():
        assert result[name].pop("__profile") == entry["profile"], f"{name}: the page's trace names other nodes"
        for out, want in entry["outputs"].items():
            got = result[name][out]
            assert got["dims"] == want["shape"]
            with open(want["path"], "rb") as f:
                assert bytes(got["bytes"]) == f.read(), f"{name} output '{out}' differs from CPython's"
    fetched = [u.split("/", 3)[3] for u in requests]
    assert "dist/web/kernels.wasm" in fetched, fetched
    assert ("web/proxy-worker.mjs" in fetched) == (mode == "?proxy"), fetched
    # Our own modules (web/pyodide-*.mjs are statically imported) load; Pyodide's files do not
    # (the warm-up plan may: plan-session.mjs runs it while nothing else runs).
    plan_files = {"dist/web/kernels.wasm", "dist/web/kernels-warmup.nnwp"}
    assert not [u for u in fetched if u.startswith("dist/web/") and u not in plan_files], fetched
