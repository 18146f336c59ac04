"""transformers.js's helper graphs (TensorOpRegistry in its src/ops/registry.js): the one-node ONNX
models it builds in memory and runs with no execution providers given, rebuilt here with the same
op, opset, attributes and inputs, with feeds of the shapes its callers use. Shared by
test_tfjs_helper_graphs.py (CPython, WASM alone) and test_node_shim.py (Pyodide, no numpy)."""
import numpy as np
from onnx import TensorProto, helper

F, I = TensorProto.FLOAT, TensorProto.INT64


def _model(node, opset, ir, inputs, outputs):
    g = helper.make_graph([node], "helper", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                          [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = ir
    return m.SerializeToString()


def _resize(mode, opset, ir):
    bchw = ["b", "c", "h", "w"]
    return _model(helper.make_node("Resize", ["x", "", "", "s"], ["y"], mode=mode), opset, ir,
                  [("x", F, bchw), ("s", I, [4])], [("y", F, bchw)])


def _r(*shape, seed=0):
    return np.random.default_rng(seed + sum(shape)).standard_normal(shape).astype(np.float32)


# name -> (model bytes, feeds)
HELPERS = {
    "nearest_interpolate_4d": (_resize("nearest", 21, 10), {"x": _r(1, 3, 10, 12), "s": np.array([1, 3, 20, 7], np.int64)}),
    "bilinear_interpolate_4d": (_resize("linear", 20, 9), {"x": _r(1, 3, 10, 12), "s": np.array([1, 3, 16, 30], np.int64)}),
    "bicubic_interpolate_4d": (_resize("cubic", 20, 9), {"x": _r(1, 3, 10, 12), "s": np.array([1, 3, 16, 30], np.int64)}),
    "matmul": (_model(helper.make_node("MatMul", ["a", "b"], ["c"]), 20, 9, [("a", F, None), ("b", F, None)],
                      [("c", F, None)]), {"a": _r(2, 3, 5), "b": _r(2, 5, 4)}),
    "stft": (_model(helper.make_node("STFT", ["s", "j", "w", "l"], ["o"], onesided=1), 17, 7,
                    [("s", F, ["b", "s", "c"]), ("j", I, []), ("w", F, ["w"]), ("l", I, [])],
                    [("o", F, ["b", "f", "d", "c"])]),
             {"s": _r(1, 1600, 1), "j": np.array(160, np.int64), "w": np.hanning(400).astype(np.float32),
              "l": np.array(400, np.int64)}),
    "rfft": (_model(helper.make_node("DFT", ["x", "", "a"], ["y"], onesided=1), 20, 9,
                    [("x", F, [None, None, 1]), ("a", I, [])], [("y", F, [None, None, 2])]),
             {"x": _r(3, 16, 1), "a": np.array(1, np.int64)}),
    "top_k": (_model(helper.make_node("TopK", ["x", "k"], ["v", "i"]), 21, 10, [("x", F, None), ("k", I, [1])],
                     [("v", F, None), ("i", I, None)]), {"x": _r(2, 10), "k": np.array([3], np.int64)}),
    "slice": (_model(helper.make_node("Slice", ["x", "s", "e", "a", "t"], ["y"]), 13, 7,
                     [("x", F, None), ("s", I, None), ("e", I, None), ("a", I, None), ("t", I, None)], [("y", F, None)]),
              {"x": _r(4, 6), "s": np.array([1, 0], np.int64), "e": np.array([3, 5], np.int64),
               "a": np.array([0, 1], np.int64), "t": np.array([1, 2], np.int64)}),
}

# Those kernels.wasm has no kernel for yet (they fail on WASM alone, and in Pyodide without numpy).
NO_WASM_KERNEL = {}

# Tolerances against onnxruntime (rtol, atol): its STFT sums 400 samples in float, the kernel in double.
TOLERANCE = {"stft": (1e-4, 2e-3)}


def write_fixtures(folder):
    """Each helper's model, feeds and onnxruntime's outputs, as JSON-able lists, for Node."""
    import onnxruntime
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for name, (model, feeds) in HELPERS.items():
        if name in NO_WASM_KERNEL:
            continue
        (folder / f"{name}.onnx").write_bytes(model)
        want = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)
        out[name] = {"model": str(folder / f"{name}.onnx"),
                     "feeds": {k: {"type": str(v.dtype), "dims": list(v.shape), "data": v.ravel().tolist()}
                               for k, v in feeds.items()},
                     "outputs": [{"dims": list(w.shape), "data": w.ravel().tolist()} for w in want]}
    return out
