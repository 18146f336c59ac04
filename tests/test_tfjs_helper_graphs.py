"""transformers.js's helper graphs (tfjs_helper_graphs.py) on kernels.wasm alone against
onnxruntime, several calls per session with other shapes and values (the session specialises on the
small integer inputs that set shapes: shape_values.py)."""
import numpy as np
import onnxruntime
import pytest

import nnwasm
from test_wasm_ops import WASM_ONLY, wasm_only_options
from tfjs_helper_graphs import HELPERS, NO_WASM_KERNEL, TOLERANCE


def _other_feeds(name, feeds):
    """A second call: other data, and for shape-setting inputs other values."""
    out = {k: (v[..., ::-1].copy() if v.dtype == np.float32 and v.ndim else v) for k, v in feeds.items()}
    if name == "top_k":
        out["k"] = np.array([7], np.int64)
    elif name.endswith("interpolate_4d"):
        out["s"] = np.array([1, 3, 5, 24], np.int64)
    elif name == "stft":
        out.update(s=_long(out["s"]), j=np.array(100, np.int64))
    elif name == "slice":
        out.update(s=np.array([-1, 5], np.int64), e=np.array([0, 0], np.int64), t=np.array([-1, -2], np.int64))
    return out


def _long(s):
    return np.concatenate([s, s[:, :700]], axis=1)


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=f"no WASM kernel for {NO_WASM_KERNEL[n]} yet"))
    if n in NO_WASM_KERNEL else n for n in HELPERS])
def test_helper_graph_on_wasm_alone(name):
    model, feeds = HELPERS[name]
    sess = nnwasm.InferenceSession(model, wasm_only_options(), providers=WASM_ONLY)
    ort = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"])
    for f in (feeds, _other_feeds(name, feeds), feeds):
        got, want = sess.run(None, f), ort.run(None, f)
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype
            rtol, atol = TOLERANCE.get(name, (1e-5, 1e-5))
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    assert {p for _, _, p in sess.get_provider_assignment()} == {"WasmExecutionProvider"}


def test_a_decoder_input_is_never_specialised():
    """input_ids feeds a Gather (data), so a new value must not make a new variant."""
    from onnx import TensorProto, helper
    g = helper.make_graph([helper.make_node("Gather", ["E", "ids"], ["y"])], "g",
                          [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, 1])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [helper.make_tensor("E", TensorProto.FLOAT, [5, 2], list(range(10)))])
    sess = nnwasm.InferenceSession(helper.make_model(g).SerializeToString(), providers=WASM_ONLY)
    assert sess._shape_values == []
    for i in range(5):
        assert sess.run(None, {"ids": np.array([[i]], np.int64)})[0].tolist() == [[[2 * i, 2 * i + 1]]]
    assert len(sess._cache) == 1
