"""One read per file: a session opened by path opens its model (or plan) file once, for both the
plan-magic check and the load, and each external data file once however many tensors it holds;
by bytes it opens no model file. In JupyterLite every open() of a notebook file transfers the
whole file. A rebuild (set_providers) uses the model bytes kept from creation and opens the
external data files again (their bytes are not kept twice). The same script counts every open()
and the bytes read from it, in CPython and in Pyodide under Node."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from model_builders import ort_run
from test_node_shim import web_bundle  # noqa: F401 (the fixture: dist/web/ rebuilt)

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "demo" / "assets" / "efficientnet-lite0.onnx"

SCRIPT = r"""
import builtins, io, json, os, sys
import nnwasm
d = sys.argv[1]
opened = {}   # real path -> [opens, bytes read]
_open = builtins.open

class Counted:
    def __init__(self, f, rec):
        self._f, self._rec = f, rec
    def read(self, *a):
        b = self._f.read(*a)
        self._rec[1] += len(b)
        return b
    def __enter__(self):
        return self
    def __exit__(self, *exc):
        self._f.close()
    def __getattr__(self, name):
        return getattr(self._f, name)

def counting_open(file, mode="r", *a, **k):
    f = _open(file, mode, *a, **k)
    if isinstance(file, (str, bytes, os.PathLike)) and "r" in mode:
        rec = opened.setdefault(os.path.realpath(file), [0, 0])
        rec[0] += 1
        return Counted(f, rec)
    return f

def counts(*names):
    return {n: list(opened.get(os.path.realpath(os.path.join(d, n)), [0, 0])) for n in names}

builtins.open = io.open = counting_open
out = {}
s = nnwasm.InferenceSession(d + "/ext.onnx", providers=["WasmExecutionProvider"])
y, = s.run(None, {"x": [[1.0, 2.0, 3.0, 4.0]]})
out["ext_create_run"] = counts("ext.onnx", "w.bin")
out["ext_y"] = y.tolist()
s.set_providers(["WasmExecutionProvider"])   # a rebuild: the model's bytes are kept (external data is read again)
out["ext_after_set_providers"] = counts("ext.onnx", "w.bin")
opened.clear()
p = nnwasm.InferenceSession(d + "/dyn.nnwp")
p.run(None, {"x": [[0.5] * 4] * 2})
out["plan"] = counts("dyn.nnwp")
opened.clear()
e = nnwasm.InferenceSession(d + "/effnet.onnx", providers=["WasmExecutionProvider"])
out["effnet"] = counts("effnet.onnx")
opened.clear()
data = _open(d + "/effnet.onnx", "rb").read()
nnwasm.InferenceSession(data, providers=["WasmExecutionProvider"])
nnwasm.InferenceSession(_open(d + "/dyn.nnwp", "rb").read())
out["by_bytes"] = sorted(opened)
try:
    nnwasm.InferenceSession(d + "/missing.onnx")
except nnwasm.NoSuchFile as err:
    out["missing"] = str(err)
out["sizes"] = {n: os.path.getsize(os.path.join(d, n)) for n in ("ext.onnx", "w.bin", "dyn.nnwp", "effnet.onnx")}
builtins.open = io.open = _open
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    import nnwasm
    d = tmp_path_factory.mktemp("one_read")
    shutil.copy(MODEL, d / "effnet.onnx")
    rng = np.random.default_rng(0)
    w1, w2 = rng.standard_normal((4, 8)).astype(np.float32), rng.standard_normal((8, 3)).astype(np.float32)
    model = helper.make_model(helper.make_graph(
        [helper.make_node("MatMul", ["x", "w1"], ["h"], name="mm1"),
         helper.make_node("Relu", ["h"], ["r"], name="relu"),
         helper.make_node("MatMul", ["r", "w2"], ["y"], name="mm2")], "ext",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")]),
        opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    want = ort_run(model.SerializeToString(), {"x": np.array([[1, 2, 3, 4]], np.float32)})[0]
    onnx.save_model(model, str(d / "ext.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="w.bin", size_threshold=0)
    dyn = helper.make_model(helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")], "dyn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])]),
        opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    (d / "dyn.nnwp").write_bytes(nnwasm.compile_plan(dyn.SerializeToString()))
    (d / "script.py").write_text(SCRIPT)
    return d, want


def check(out, want):
    sizes = out["sizes"]
    # one open each, the model and plan read whole (once), the external file no more than whole
    assert out["ext_create_run"]["ext.onnx"] == [1, sizes["ext.onnx"]]
    assert out["ext_create_run"]["w.bin"][0] == 1 and 0 < out["ext_create_run"]["w.bin"][1] <= sizes["w.bin"]
    assert out["ext_after_set_providers"]["ext.onnx"] == [1, sizes["ext.onnx"]]
    assert out["ext_after_set_providers"]["w.bin"][0] == 2
    assert out["plan"]["dyn.nnwp"] == [1, sizes["dyn.nnwp"]]
    assert out["effnet"]["effnet.onnx"] == [1, sizes["effnet.onnx"]]
    assert out["by_bytes"] == []
    assert "missing.onnx" in out["missing"] and "does not exist" in out["missing"]
    np.testing.assert_allclose(np.array(out["ext_y"], np.float32), want, rtol=1e-5, atol=1e-5)


def test_cpython(files):
    d, want = files
    proc = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv.pop(1))\n" + SCRIPT,
                           str(ROOT / "py_runtime"), str(d)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    check(json.loads(proc.stdout.strip().splitlines()[-1]), want)


@pytest.mark.node
def test_pyodide(files, web_bundle):  # noqa: F811
    node = shutil.which("node")
    assert node, "Node.js is not installed"
    d, want = files
    proc = subprocess.run([node, str(ROOT / "tests" / "node" / "run-python.mjs"), web_bundle.as_uri() + "/",
                           str(d), str(d / "script.py"), str(d)], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-2000:]
    check(json.loads(proc.stdout.strip().splitlines()[-1]), want)
