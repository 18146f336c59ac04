"""run() without numpy (Pyodide has none; a page may never load it): one script, run in a CPython
subprocess with numpy blocked and in Pyodide under Node, feeds small models and EfficientNet-Lite0
(all on WASM) with buffers, nested lists, scalars and nnwasm.Tensor, through run(), OrtValues,
IOBinding (the "wasm" device too) and a plan file; the parent compares every result with
onnxruntime's. A model that needs the numpy fallback fails at creation with FallbackUnavailable."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper

from imagenet_fixture import preprocess
from model_builders import graph_model, ort_run, rand
from test_node_shim import web_bundle  # noqa: F401 (the fixture: dist/web/ rebuilt)

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "demo" / "assets" / "efficientnet-lite0.onnx"

# Runs in both Pythons: argv = [script, fixtures dir]; prints one JSON line of results.
SCRIPT = r"""
import array, json, sys
try:
    import numpy
    numpy_there = True
except ImportError:
    numpy_there = False
import nnwasm
d = sys.argv[1]
WASM = ["WasmExecutionProvider"]
out = {"numpy_importable": numpy_there}

def rec(t):
    assert isinstance(t, nnwasm.Tensor), type(t)
    flat = list(t.data.cast("B").cast(t.data.format)) if t.size and t.data.format in "fdqibB?" else []
    r = {"shape": list(t.shape), "dtype": t.dtype, "values": t.tolist(), "nbytes": len(bytes(t))}
    if t.size:
        r["flat_ok"] = flat == [v for v in _flat(t.tolist())] if flat else None
    if sys.version_info >= (3, 12):   # the buffer protocol on the object itself (PEP 688)
        r["buffer_ok"] = memoryview(t).tolist() == t.tolist() and memoryview(t).shape == t.shape
    return r

def _flat(v):
    return [x for e in v for x in _flat(e)] if isinstance(v, list) else [v]

# EfficientNet-Lite0: the photo as array.array (the input's declared static shape), bytes, a
# memoryview cast to the shape, and nnwasm.Tensor
sess = nnwasm.InferenceSession(d + "/effnet.onnx", providers=WASM)
raw = open(d + "/photo.bin", "rb").read()
arr = array.array("f")
arr.frombytes(raw)
feeds = {"array": arr, "bytes": raw, "memoryview": memoryview(arr).cast("B").cast("f", [1, 3, 224, 224]),
         "tensor": nnwasm.Tensor(arr, [1, 3, 224, 224])}
for how, x in feeds.items():
    y, = sess.run(None, {"input": x})
    out["effnet_" + how] = rec(y)
out["effnet_providers"] = sorted({p for _, _, p in sess.get_provider_assignment()})

# nested lists, a Python scalar, an int list with a symbolic dim
mix = nnwasm.InferenceSession(d + "/mix.onnx", providers=WASM)
y, r = mix.run(None, {"x": [[1.5, -2.0, 3.0], [0.25, 4.0, -1.0]], "s": 0.5, "idx": [2, 0, 2, 1]})
out["mix_y"], out["mix_r"] = rec(y), rec(r)
y, r = mix.run(["y", "r"], {"x": nnwasm.Tensor([[1, 2, 3], [4, 5, 6]], dtype="float32"),
                             "s": nnwasm.Tensor(2.0, dtype="float32"), "idx": array.array("q", [1])})
out["mix2_y"], out["mix2_r"] = rec(y), rec(r)
try:
    mix.run(None, {"x": [[1.0, 2.0], [3.0]], "s": 0.5, "idx": [0]})
    out["ragged"] = "ran"
except nnwasm.InvalidArgument as e:
    out["ragged"] = str(e)

# a flat buffer whose one symbolic dim is inferred from its length
dyn = nnwasm.InferenceSession(d + "/dyn.onnx", providers=WASM)
y, = dyn.run(None, {"x": array.array("f", [float(i) for i in range(12)])})
out["dyn"] = rec(y)

try:
    dyn.run(None, {"x": bytes(10)})
    out["bad_bytes"] = "ran"
except nnwasm.InvalidArgument as e:
    out["bad_bytes"] = str(e)

# OrtValues: made from shape and type, filled in place, run; and from an nnwasm.Tensor
v = nnwasm.OrtValue.ortvalue_from_shape_and_type([3, 4], "float32")
v.update_inplace([[float(i - j) for j in range(4)] for i in range(3)])
ys = dyn.run_with_ort_values(None, {"x": v})
out["ortvalue"] = rec(ys[0].numpy())
out["ortvalue_meta"] = [ys[0].shape(), ys[0].data_type(), ys[0].device_name()]
ys = dyn.run_with_ort_values(None, {"x": nnwasm.OrtValue.ortvalue_from_numpy(nnwasm.Tensor([[1, 2, 3, 4]], dtype="float32"))})
out["ortvalue_tensor"] = rec(ys[0].numpy())

# IOBinding: a CPU input from a buffer, the output kept on the "wasm" device and fed back
b = dyn.io_binding()
b.bind_cpu_input("x", array.array("f", [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]))
b.bind_output("y", "wasm")
dyn.run_with_iobinding(b)
first, = b.get_outputs()
out["device"] = first.device_name()
b.bind_ortvalue_input("x", first)
b.bind_output("y")
dyn.run_with_iobinding(b)
out["iobinding"] = rec(b.copy_outputs_to_cpu()[0])
dest = nnwasm.OrtValue.ortvalue_from_shape_and_type([2, 4], "float32")
b.bind_ortvalue_output("y", dest)
dyn.run_with_iobinding(b)
out["iobinding_dest"] = rec(dest.numpy())

# a plan file, by path
plan = nnwasm.InferenceSession(d + "/dyn.nnwp")
y, = plan.run(None, {"x": bytes(array.array("f", [0.5] * 8))})
out["plan"] = rec(y)

try:
    nnwasm.InferenceSession(d + "/fallback.onnx")
    out["fallback"] = "created"
except nnwasm.FallbackUnavailable as e:
    out["fallback"] = str(e)
out["numpy_loaded"] = sys.modules.get("numpy") is not None
print(json.dumps(out))
"""

BLOCK = 'import sys; sys.modules["numpy"] = None; sys.path.insert(0, sys.argv.pop(1)); sys.argv[0] = "script"\n'


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    """The fixtures folder and what each result must be (onnxruntime's, or numpy's for the
    IOBinding chain), computed here with numpy."""
    import nnwasm
    d = tmp_path_factory.mktemp("no_numpy")
    shutil.copy(MODEL, d / "effnet.onnx")
    photo = preprocess(ROOT / "demo" / "assets" / "coffee.png")
    (d / "photo.bin").write_bytes(photo.astype("<f4").tobytes())
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    s = helper.make_tensor_value_info("s", TensorProto.FLOAT, [])
    idx = helper.make_tensor_value_info("idx", TensorProto.INT64, ["n"])
    mix = helper.make_model(helper.make_graph(
        [helper.make_node("Add", ["x", "s"], ["a"], name="add"),
         helper.make_node("Gather", ["a", "idx"], ["y"], name="gather", axis=1),
         helper.make_node("Relu", ["a"], ["r"], name="relu")], "mix", [x, s, idx],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("r", TensorProto.FLOAT, None)]),
        opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    (d / "mix.onnx").write_bytes(mix.SerializeToString())
    xd = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])
    dyn = helper.make_model(helper.make_graph(
        [helper.make_node("Mul", ["x", "two"], ["m"], name="mul"), helper.make_node("Add", ["m", "one"], ["y"], name="add")],
        "dyn", [xd], [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor("two", TensorProto.FLOAT, [], [2.0]), helper.make_tensor("one", TensorProto.FLOAT, [], [1.0])]),
        opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    (d / "dyn.onnx").write_bytes(dyn.SerializeToString())
    (d / "dyn.nnwp").write_bytes(nnwasm.compile_plan(str(d / "dyn.onnx"), {"x": (2, 4)}))
    fallback = graph_model([helper.make_node("Relu", ["X"], ["a"], name="r"),
                            helper.make_node("Atan", ["a"], ["Y"], name="needs_numpy")], {"X": rand(2, 3)}, ["Y"])
    (d / "fallback.onnx").write_bytes(fallback)

    f32 = np.float32
    eff = ort_run(MODEL.read_bytes(), {"input": photo})[0]
    m1 = ort_run(mix.SerializeToString(), {"x": np.array([[1.5, -2.0, 3.0], [0.25, 4.0, -1.0]], f32),
                                           "s": np.array(0.5, f32), "idx": np.array([2, 0, 2, 1])})
    m2 = ort_run(mix.SerializeToString(), {"x": np.arange(1, 7, dtype=f32).reshape(2, 3), "s": np.array(2.0, f32),
                                           "idx": np.array([1])})
    dyn_b = dyn.SerializeToString()
    chain = np.arange(1, 9, dtype=f32).reshape(2, 4) * 2 + 1
    want = {"mix_y": m1[0], "mix_r": m1[1], "mix2_y": m2[0], "mix2_r": m2[1],
            "dyn": ort_run(dyn_b, {"x": np.arange(12, dtype=f32).reshape(3, 4)})[0],
            "ortvalue": ort_run(dyn_b, {"x": np.subtract.outer(np.arange(3), np.arange(4)).astype(f32)})[0],
            "ortvalue_tensor": ort_run(dyn_b, {"x": np.array([[1, 2, 3, 4]], f32)})[0],
            "iobinding": chain * 2 + 1, "iobinding_dest": chain * 2 + 1,
            "plan": ort_run(dyn_b, {"x": np.full((2, 4), 0.5, f32)})[0]}
    want.update({f"effnet_{how}": eff for how in ("array", "bytes", "memoryview", "tensor")})
    (d / "script.py").write_text(SCRIPT)
    return d, want


def check(out, want):
    assert out["numpy_importable"] is False and out["numpy_loaded"] is False
    assert out["effnet_providers"] == ["WasmExecutionProvider"]
    for key, ref in want.items():
        got = out[key]
        assert got["shape"] == list(ref.shape) and got["dtype"] == ref.dtype.name, key
        assert got["nbytes"] == ref.nbytes and got.get("flat_ok") is not False and got.get("buffer_ok") is not False, key
        tol = 1e-4 if key.startswith("effnet") else 0
        np.testing.assert_allclose(np.array(got["values"], ref.dtype), ref, atol=tol, rtol=0, err_msg=key)
    assert "ragged" in out["ragged"] and "'x'" in out["ragged"]
    assert "input 'x'" in out["bad_bytes"] and "10 bytes" in out["bad_bytes"]
    assert out["ortvalue_meta"] == [[3, 4], "tensor(float)", "cpu"]
    assert out["device"] == "wasm"
    assert "numpy" in out["fallback"] and "needs_numpy" in out["fallback"]


def test_cpython_with_numpy_blocked(cases):
    d, want = cases
    proc = subprocess.run([sys.executable, "-c", BLOCK + SCRIPT, str(ROOT / "py_runtime"), str(d)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    check(out, want)
    if sys.version_info < (3, 12):
        assert "buffer_ok" not in out["dyn"]


@pytest.mark.node
def test_pyodide_without_numpy(cases, web_bundle):  # noqa: F811
    node = shutil.which("node")
    assert node, "Node.js is not installed"
    d, want = cases
    dist = web_bundle
    proc = subprocess.run([node, str(ROOT / "tests" / "node" / "run-python.mjs"), dist.as_uri() + "/", str(d),
                           str(d / "script.py"), str(d)], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    check(out, want)
    assert all("buffer_ok" in out[k] for k in want), "Pyodide's Python has PEP 688: memoryview(tensor) works"


def test_the_same_feeds_with_numpy(cases):
    """With numpy, buffers and nnwasm.Tensor are feeds too, and results stay numpy arrays."""
    import array
    import nnwasm
    d, want = cases
    sess = nnwasm.InferenceSession(str(d / "effnet.onnx"), providers=["WasmExecutionProvider"])
    raw = (d / "photo.bin").read_bytes()
    arr = array.array("f")
    arr.frombytes(raw)
    for x in (arr, raw, memoryview(arr).cast("B").cast("f", [1, 3, 224, 224]), nnwasm.Tensor(arr, [1, 3, 224, 224])):
        y, = sess.run(None, {"input": x})
        assert isinstance(y, np.ndarray) and y.flags.writeable
        np.testing.assert_allclose(y, want["effnet_array"], atol=1e-4, rtol=0)
    y, r = nnwasm.InferenceSession(str(d / "mix.onnx")).run(None, {"x": [[1.5, -2.0, 3.0], [0.25, 4.0, -1.0]], "s": 0.5,
                                                                     "idx": [2, 0, 2, 1]})
    np.testing.assert_array_equal(y, want["mix_y"])
    t = nnwasm.Tensor([[1, 2], [3, 4]], dtype="int32")
    assert np.asarray(t).dtype == np.int32 and np.asarray(t).tolist() == t.tolist()
    v = nnwasm.OrtValue.ortvalue_from_numpy(np.ones((2, 2), np.float32))
    assert isinstance(v.numpy(), np.ndarray)


def test_tensor_type():
    """nnwasm.Tensor made from Python values and buffers: numpy's inference and shapes."""
    import array
    import ctypes
    import nnwasm
    cases = [(nnwasm.Tensor([[1, 2], [3, 4]]), (2, 2), "int64", [[1, 2], [3, 4]]),
             (nnwasm.Tensor(2.5), (), "float64", 2.5),
             (nnwasm.Tensor([True, False]), (2,), "bool", [True, False]),
             (nnwasm.Tensor([1.5, 2], dtype="float16"), (2,), "float16", [1.5, 2.0]),
             (nnwasm.Tensor([[]], dtype="float32"), (1, 0), "float32", [[]]),
             (nnwasm.Tensor(["a", "bé"]), (2,), "object", ["a", "bé"]),
             (nnwasm.Tensor(array.array("i", range(6)), [2, 3]), (2, 3), "int32", [[0, 1, 2], [3, 4, 5]]),
             (nnwasm.Tensor(bytes(8), [2], "float32"), (2,), "float32", [0.0, 0.0]),
             (nnwasm.Tensor((ctypes.c_double * 2)(1, 2)), (2,), "float64", [1.0, 2.0]),
             (nnwasm.Tensor([1.9, -1.9], dtype="int32"), (2,), "int32", [1, -1])]
    for t, shape, dtype, values in cases:
        assert (t.shape, t.dtype, t.tolist()) == (shape, dtype, values), repr(t)
        if dtype != "object":
            assert np.asarray(t).tolist() == values and np.asarray(t).dtype == dtype and len(bytes(t)) == t.nbytes
    t = nnwasm.Tensor([[1, 2, 3]], dtype="float32")
    assert t.data.format == "f" and t.data.shape == (1, 3) and t.data.readonly and len(t) == 1 and t.ndim == 2
    for bad, why in [(lambda: nnwasm.Tensor([[1], [2, 3]]), "ragged"),
                     (lambda: nnwasm.Tensor([300], dtype="uint8"), "uint8"),
                     (lambda: nnwasm.Tensor(bytes(8)), "dtype"),
                     (lambda: nnwasm.Tensor([1, 2, 3], [2, 2]), "don't fill"),
                     (lambda: nnwasm.Tensor([1], dtype="complex64"), "complex64")]:
        with pytest.raises(nnwasm.InvalidArgument, match=why):
            bad()
