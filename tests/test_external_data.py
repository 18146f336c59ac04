"""External data (model.onnx + model.onnx.data) in JS, as onnxruntime-web's `externalData` option
and onnxruntime-node's sibling files (web/external-data.mjs, onnx_io/external.py): Node
(tests/node/external-data.test.mjs) and Chromium, against onnxruntime; bad input (outside the
folder, past the end, missing, wrong path, over 4 GB) fails create() cleanly. The ~1.5 GB model
(tests/extdata_models.py, cached outside git) runs only with NNWASM_ZOO_ALL=1 (`make test-all`),
as the slow zoo models do."""
import json
import os
import shutil
import subprocess
import urllib.parse

import pytest

from conftest import ROOT
from extdata_models import build_bad, build_big, build_over_4gb, cache_dir
from page_server import demo_serve, running
from test_browser_demo import demo_server  # noqa: F401 (the fixture: dist/web/ rebuilt and served)
from test_node_shim import web_bundle  # noqa: F401

pytest.importorskip("onnxruntime")
BIG = os.environ.get("NNWASM_ZOO_ALL") == "1"


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    d = tmp_path_factory.mktemp("extdata")
    bad, good = build_bad(d / "bad")
    spec = {"bad": bad, "good": good, "over4gb": str(d / "over4gb")}
    build_over_4gb(d / "over4gb")   # a sparse 4.5 GB file: no disk used
    (d / "cases.json").write_text(json.dumps(spec))
    return d


@pytest.mark.node
def test_external_data_in_node(web_bundle, cases):  # noqa: F811
    node = shutil.which("node")
    assert node, "Node.js is not installed"
    env = {**os.environ, "NNWASM_EXTDATA_CASES": str(cases / "cases.json"), "NNWASM_DIST_URL": web_bundle.as_uri() + "/"}
    if BIG:
        build_big()
        env["NNWASM_EXTDATA_BIG"] = str(cache_dir() / "big")
    proc = subprocess.run([node, "--test", "--test-reporter=spec", "tests/node/external-data.test.mjs",
                           "tests/node/external-data-proxy.test.mjs"], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=1800)
    print(proc.stdout[-4000:])
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    assert "ℹ skipped 0" in proc.stdout or not BIG, "the big model was skipped"


@pytest.fixture(scope="module")
def file_server(demo_server, cases):  # noqa: F811 (demo_server: dist/web/ rebuilt)
    """The demo server's files plus /extdata/ (the cases, or with NNWASM_ZOO_ALL=1 the whole file
    system, for the cached big model), on one origin: Chromium refuses a page's fetch of another
    loopback port ("loopback address space")."""
    serve = demo_serve()
    root = "/" if BIG else str(cases)

    class Handler(serve.DemoRequestHandler):
        def translate_path(self, path):
            if path.startswith("/extdata/"):
                return os.path.join(root, urllib.parse.unquote(path.split("?", 1)[0])[len("/extdata/"):])
            return super().translate_path(path)

    with running(serve.DemoServer(port=0, extra_prefixes=("/extdata/",), handler=Handler)) as server:
        yield server, root


# Creates sessions by URL (the data by URL, as bytes, as a Blob), runs them, and tries bad input.
PAGE = """<!doctype html><meta charset="utf-8"><script type="module">
import { InferenceSession, Tensor } from "/web/nnwasm.mjs";
import { boot } from "/web/pyodide-boot.mjs";
const spec = JSON.parse(decodeURIComponent(location.hash.slice(1)));
const out = {};
async function run(name, make) {
  try {
    const t0 = performance.now();
    const session = await make();
    const ms = performance.now() - t0;
    const ids = new Tensor("int64", BigInt64Array.from(spec.ids.map(BigInt)), [1, spec.ids.length]);
    const { y } = await session.run({ ids });
    const { pyodide } = await boot();
    const memory = { kernelsWasm: pyodide.runPython("from nnwasm.host import get_host; get_host()._memory.buffer.byteLength"),
                     pyodideHeap: pyodide._module.HEAPU8.length };
    out[name] = { y: Array.from(y.data), dims: y.dims, ms, memory };
    await session.release();
  } catch (e) {
    out[name] = { error: `${e.name}: ${e.message}` };
  }
}
const dataURL = spec.base + spec.data;
await run("url", () => InferenceSession.create(spec.base + spec.model, { externalData: [{ path: spec.location, data: dataURL }] }));
if (!spec.big) {
  await run("bytes", async () => InferenceSession.create(new Uint8Array(await (await fetch(spec.base + spec.model)).arrayBuffer()),
    { externalData: [{ path: "./" + spec.location, data: new Uint8Array(await (await fetch(dataURL)).arrayBuffer()) }] }));
  await run("blob", async () => InferenceSession.create(spec.base + spec.model,
    { externalData: [{ path: spec.location, data: await (await fetch(dataURL)).blob() }] }));
  await run("missing", () => InferenceSession.create(spec.base + spec.model));
  await run("wrong path", () => InferenceSession.create(spec.base + spec.model, { externalData: [{ path: "w.bin", data: dataURL }] }));
  await run("short", () => InferenceSession.create(spec.base + spec.model,
    { externalData: [{ path: spec.location, data: new Uint8Array(100) }] }));
  await run("404", () => InferenceSession.create(spec.base + spec.model, { externalData: [{ path: spec.location, data: dataURL + ".nope" }] }));
  await run("after", () => InferenceSession.create(spec.base + spec.model, { externalData: [{ path: spec.location, data: dataURL }] }));
}
window.__result = out;
</script>"""


def _page_run(browser, file_server, spec, timeout):
    server, root = file_server
    base = f"http://127.0.0.1:{server.port}/extdata/"
    page = browser.new_page()
    try:
        origin = f"http://127.0.0.1:{server.port}/"
        page.route(origin + "extdata-test.html*", lambda route: route.fulfill(body=PAGE, content_type="text/html"))
        page.goto(origin + "extdata-test.html#" + json.dumps({**spec, "base": base}))
        page.wait_for_function("window.__result !== undefined", timeout=timeout)
        return page.evaluate("window.__result")
    finally:
        page.close()


def _close(got, case, tol=1e-4):
    assert "error" not in got, got
    assert got["dims"] == case["dims"]
    worst = max(abs(a - b) / (1 + abs(b)) for a, b in zip(got["y"], case["y"]))
    assert worst <= tol, worst


@pytest.mark.browser
def test_external_data_in_chromium(browser, file_server, cases):
    spec = json.loads((cases / "cases.json").read_text())
    good = spec["good"]
    rel = os.path.relpath(spec["bad"]["good"], file_server[1])
    out = _page_run(browser, file_server,
                    {"model": rel + "/model.onnx", "data": rel + "/model.onnx.data", "location": "model.onnx.data",
                     "ids": good["ids"]}, 180_000)
    for name in ("url", "bytes", "blob", "after"):
        _close(out[name], good)
    assert "'model.onnx.data', which options.externalData does not give (none was given)" in out["missing"]["error"]
    assert "initializers 'table0', 'W'" in out["missing"]["error"]
    assert "(it gives 'w.bin')" in out["wrong path"]["error"]
    assert "tensor 'table0': external data at offset 0" in out["short"]["error"]
    assert "past the end of 'model.onnx.data' (100 bytes)" in out["short"]["error"]
    assert "HTTP 404" in out["404"]["error"], out["404"]


@pytest.mark.browser
@pytest.mark.skipif(not BIG, reason="the ~1.5 GB model: NNWASM_ZOO_ALL=1 (make test-all)")
def test_big_model_in_chromium(browser, file_server):
    case = build_big()
    folder = os.path.relpath(str(cache_dir() / "big"), file_server[1])
    out = _page_run(browser, file_server,
                    {"model": folder + "/model.onnx", "data": folder + "/model.onnx.data", "location": "model.onnx.data",
                     "ids": case["ids"], "big": True}, 900_000)
    _close(out["url"], case)
    got = out["url"]
    print(f"Chromium: created the {case['weights_bytes']} byte model in {got['ms']:.0f} ms; kernels.wasm "
          f"{got['memory']['kernelsWasm']} bytes, Pyodide's heap {got['memory']['pyodideHeap']} bytes")
    assert got["memory"]["kernelsWasm"] < case["weights_bytes"] + (64 << 20), "the weights are in kernels.wasm more than once"


class _BytesSource:
    """What _js_bridge._JsSource is in Pyodide, over Python bytes; counts what is read."""
    def __init__(self, data):
        self.data, self.size, self.reads, self.filled = data, len(data), [], 0

    def read(self, offset, length):
        self.reads.append((offset, length))
        return self.data[offset:offset + length]

    def fill(self, host, ptr, offset, length):
        self.filled += length
        host.write(ptr, memoryview(self.data)[offset:offset + length])


def test_external_sources_in_cpython(tmp_path):
    """onnx_io/external.py without JS: a Gather-only model's table goes from its source into the
    plan's arena, never through Python; a second session (another plan) copies it from there."""
    import numpy as np
    import onnx
    import onnxruntime
    import nnwasm
    from nnwasm.onnx_io.external import ExternalData, ExternalSources, ModelBytes
    from onnx import TensorProto, helper
    table = np.random.default_rng(1).standard_normal((300, 32), dtype=np.float32)
    t = TensorProto(name="table", data_type=TensorProto.FLOAT, dims=[300, 32])
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "w.bin"), ("offset", "64"), ("length", str(table.nbytes))):
        e = t.external_data.add()
        e.key, e.value = k, v
    g = helper.make_graph([helper.make_node("Gather", ["table", "ids"], ["y"], name="g0")], "g",
                          [helper.make_tensor_value_info("ids", TensorProto.INT64, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 32])], [t])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    data = bytes(64) + table.tobytes()
    source = _BytesSource(data)
    mb = ModelBytes(model.SerializeToString())
    mb.external = ExternalSources({"w.bin": source})
    so = nnwasm.SessionOptions()
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    sess = nnwasm.InferenceSession(mb, so, providers=["WasmExecutionProvider"])
    ids = np.array([299, 3], np.int64)
    np.testing.assert_array_equal(sess.run(None, {"ids": ids})[0], table[ids])
    assert source.filled == table.nbytes and source.reads == [], "the table went through Python"
    assert mb.external.pending() == []
    # reading it now (a packing would) copies it from the arena, not from the source; so does a
    # second session's plan
    tensor = next(iter(mb.external.homes))
    assert tensor == ("w.bin", 64, table.nbytes)
    assert ExternalData(mb.external, tensor).tobytes() == table.tobytes()
    again = nnwasm.InferenceSession(mb, so, providers=["WasmExecutionProvider"])
    np.testing.assert_array_equal(again.run(None, {"ids": ids[::-1].copy()})[0], table[ids[::-1]])
    assert source.filled == table.nbytes and source.reads == []
    # the session drops its plans (as it drops a variant for memory) after the host closed the
    # file: the table is copied out of the last arena holding it first, and the next plan gets it
    import gc
    source.data = None
    sess._cache.clear()
    again._cache.clear()
    gc.collect()
    assert isinstance(mb.external.homes[tensor], bytes)
    np.testing.assert_array_equal(sess.run(None, {"ids": ids})[0], table[ids])
    # bad input: past the end, a missing file, more than 4 GB
    for sources, message in (({"w.bin": _BytesSource(data[:-4])}, "past the end of 'w.bin'"),
                             ({}, "'w.bin', which was not given")):
        bad = ModelBytes(model.SerializeToString())
        bad.external = ExternalSources(sources)
        with pytest.raises(nnwasm.InvalidModel, match=message):
            nnwasm.InferenceSession(bad, so, providers=["WasmExecutionProvider"])
    # a model whose tensors claim more than wasm32's 4 GB, refused before a byte is read
    build_over_4gb(tmp_path / "big")
    big = ModelBytes((tmp_path / "big" / "model.onnx").read_bytes())
    huge = _BytesSource(b"")
    huge.size = (tmp_path / "big" / "model.onnx.data").stat().st_size   # sparse: 4.5 GB, no disk used
    big.external = ExternalSources({"model.onnx.data": huge})
    with pytest.raises(nnwasm.InvalidModel, match="more than the 4 GB"):
        nnwasm.InferenceSession(big, so, providers=["WasmExecutionProvider"])
    assert huge.reads == [] and huge.filled == 0
    onnx.save_model(model, str(tmp_path / "m.onnx"))
    (tmp_path / "w.bin").write_bytes(data)
    ref = onnxruntime.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(ref.run(None, {"ids": ids})[0], table[ids])
