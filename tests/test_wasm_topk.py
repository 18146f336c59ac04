"""TopK on kernels.wasm (kernels_c/reduce/topk.c, lower/topk.py) against the numpy provider and
onnxruntime with the WASM provider alone: axes, largest/smallest, ties (the lower index first, as
onnxruntime), int32/int64 data, k from an initializer or from a graph input (the session
specialises on its value, shape_values.py), and bad k."""
import numpy as np
import pytest
from onnx import TensorProto, helper

import nnwasm
from model_builders import graph_model, rand
from test_wasm_ops import WASM_ONLY, check, wasm_only_options


def topk_model(x, k, opset=11, k_input=False, **attrs):
    node = helper.make_node("TopK", ["X", "K"], ["V", "I"], name="topk", **attrs)
    kk = np.array([k], np.int64)
    if k_input:
        return graph_model([node], {"X": x, "K": kk}, ["V", "I"], opset=opset), {"X": x, "K": kk}
    return graph_model([node], {"X": x}, ["V", "I"], {"K": kk}, opset=opset), {"X": x}


@pytest.mark.parametrize("shape,k,axis", [((2, 10), 3, -1), ((1, 8), 8, -1), ((4, 7, 5), 2, 1),
                                          ((3, 6, 2), 3, 0), ((1, 1000), 5, -1), ((2, 33, 3), 1, 1)])
@pytest.mark.parametrize("largest", [1, 0])
def test_topk_float(shape, k, axis, largest):
    model, feeds = topk_model(rand(*shape), k, axis=axis, largest=largest)
    check(model, feeds, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("largest", [1, 0])
def test_topk_integers_with_ties(dtype, largest):
    x = (np.arange(60).reshape(3, 20) * 7919 % 5).astype(dtype) * (3 if dtype == np.int32 else 3_000_000_000)
    model, feeds = topk_model(x, 7, largest=largest)
    check(model, feeds, rtol=0, atol=0)


def test_topk_float_ties_keep_the_lower_index():
    x = np.array([[1, 3, 3, 2, 3, 1, 0, 2]], np.float32)
    model, feeds = topk_model(x, 5)
    sess = check(model, feeds, rtol=0, atol=0)
    assert sess.run(None, feeds)[1].tolist() == [[1, 2, 4, 3, 7]]


@pytest.mark.parametrize("opset", [10, 11, 21])
def test_topk_k_from_a_graph_input(opset):
    """transformers.js's top_k helper graph: x without a declared shape, k a graph input."""
    x = rand(2, 12)
    node = helper.make_node("TopK", ["x", "k"], ["v", "i"])
    g = helper.make_graph([node], "top_k", [helper.make_tensor_value_info("x", TensorProto.FLOAT, None),
                                            helper.make_tensor_value_info("k", TensorProto.INT64, [1])],
                          [helper.make_tensor_value_info("v", TensorProto.FLOAT, None),
                           helper.make_tensor_value_info("i", TensorProto.INT64, None)])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]).SerializeToString()
    sess = nnwasm.InferenceSession(model, wasm_only_options(), providers=WASM_ONLY)
    for k in (3, 5, 3):
        feeds = {"x": x, "k": np.array([k], np.int64)}
        v, i = sess.run(None, feeds)
        order = np.argsort(-x, axis=1, kind="stable")[:, :k]
        np.testing.assert_array_equal(i, order)
        np.testing.assert_array_equal(v, np.take_along_axis(x, order, 1))
    assert {p for _, _, p in sess.get_provider_assignment()} == {"WasmExecutionProvider"}


def test_topk_k_too_large_is_a_clear_error_and_the_session_survives():
    x = rand(2, 6)
    model, feeds = topk_model(x, 3, k_input=True)
    sess = nnwasm.InferenceSession(model, wasm_only_options(), providers=WASM_ONLY)
    with pytest.raises(nnwasm.errors.InvalidArgument, match=r"k 7 must lie in \[0, 6\].*fed K = \[7\]"):
        sess.run(None, {"X": x, "K": np.array([7], np.int64)})
    v, _ = sess.run(None, feeds)
    np.testing.assert_array_equal(v, -np.sort(-x, axis=1)[:, :3])
