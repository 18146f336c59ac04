"""Weights a plan derives at build (B packed into panels for gemm_packed, int8 B with its zero
point left out for q8_gemm_pk8) are made when the runner fills the arena and not kept in Python
(wasm/derived.py): a 125M decoder's packed weights once sat in Python's heap beside kernels.wasm's
copy (in Pyodide, a heap that never shrinks: 800 MB for 500 MB of weights). Another plan of the
session that needs them (a variant, a control-flow body) copies them from a live plan's arena."""
import gc
import tracemalloc

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import nnwasm
from nnwasm.wasm.derived import DerivedBytes
from nnwasm.wasm.runner import WasmRunner

K, N = 512, 1024   # a 2 MiB weight


def _model(w):
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", K])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", N])],
                          [numpy_helper.from_array(w, "w")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m.SerializeToString()


def _wasm_only():
    so = nnwasm.SessionOptions()
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    return so


def test_packed_weights_not_held_in_python():
    w = np.random.default_rng(0).standard_normal((K, N)).astype(np.float32)
    x = np.random.default_rng(1).standard_normal((3, K)).astype(np.float32)
    warm = nnwasm.InferenceSession(_model(w[:, :8].copy()), _wasm_only())   # the host and imports, once
    warm.run(None, {"x": x})
    del warm
    sess = nnwasm.InferenceSession(_model(w), _wasm_only())
    gc.collect()
    tracemalloc.start()
    try:
        y = sess.run(None, {"x": x})[0]
        gc.collect()
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    np.testing.assert_allclose(y, x @ w, rtol=1e-5, atol=1e-4)
    assert held < w.nbytes // 2, f"the first run left {held} bytes in Python (the packed weight is {w.nbytes})"
    derived = [o for o in gc.get_objects() if isinstance(o, DerivedBytes)]
    assert derived and all(len(d) == w.nbytes for d in derived)


def test_a_second_plan_takes_them_from_the_first():
    """Two plans of one session need the same packed weight: the second fills it from the first's
    arena (same bits as packing it again), and with no plan left it is packed again."""
    w = np.random.default_rng(2).standard_normal((K, N)).astype(np.float32)
    sess = nnwasm.InferenceSession(_model(w), _wasm_only())
    xs = [np.random.default_rng(3).standard_normal((n, K)).astype(np.float32) for n in (1, 4)]
    ys = [sess.run(None, {"x": x})[0] for x in xs]
    for x, y in zip(xs, ys):
        np.testing.assert_allclose(y, x @ w, rtol=1e-5, atol=1e-4)
    d = next(o for o in gc.get_objects() if isinstance(o, DerivedBytes) and len(o) == w.nbytes)
    runners = [r for r in gc.get_objects() if isinstance(r, WasmRunner) and r._finalizer.alive]
    assert d._holder() is not None and runners
    again = d.make()   # packed anew
    assert bytes(memoryview(again).cast("B")) == d.tobytes()   # the arena's copy: the same bits
