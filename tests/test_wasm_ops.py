"""Each op the WASM provider claims, run through kernels.wasm (wasmtime) with the numpy fallback
disabled, against the numpy provider and onnxruntime. Every case also asserts that its nodes ran
on WasmExecutionProvider, so a silent fallback fails the test."""
import numpy as np
import pytest

import nnwasm
from model_builders import graph_model, ort_run, rand, single_node
from onnx import helper

WASM_ONLY = ["WasmExecutionProvider"]


def wasm_only_options(level=None):
    so = nnwasm.SessionOptions()
    if level is not None:
        so.graph_optimization_level = level
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    return so


def check(model, feeds, rtol=1e-5, atol=1e-5, level=None):
    wasm = nnwasm.InferenceSession(model, wasm_only_options(level), providers=WASM_ONLY + ["NumpyExecutionProvider"])
    assert {p for _, _, p in wasm.get_provider_assignment()} == {"WasmExecutionProvider"}
    ref = nnwasm.InferenceSession(model, providers=["NumpyExecutionProvider"])
    got, want, oracle = wasm.run(None, feeds), ref.run(None, feeds), ort_run(model, feeds)
    for g, w, o in zip(got, want, oracle):
        assert g.shape == o.shape and g.dtype == o.dtype
        np.testing.assert_allclose(w, o, rtol=rtol, atol=atol)
        np.testing.assert_allclose(g, o, rtol=rtol, atol=atol)
    return wasm


CONV_CASES = {
    "3x3": dict(x=(1, 3, 9, 11), w=(4, 3, 3, 3), attrs=dict(pads=[1, 1, 1, 1])),
    "stride2": dict(x=(2, 3, 12, 10), w=(5, 3, 3, 3), attrs=dict(strides=[2, 2], pads=[1, 1, 1, 1])),
    "dilated": dict(x=(1, 2, 13, 13), w=(3, 2, 3, 3), attrs=dict(dilations=[2, 2], pads=[2, 2, 2, 2])),
    "asym_pads": dict(x=(1, 2, 7, 8), w=(3, 2, 3, 2), attrs=dict(pads=[0, 1, 2, 0], strides=[2, 1])),
    "grouped": dict(x=(1, 4, 8, 8), w=(6, 2, 3, 3), attrs=dict(group=2, pads=[1, 1, 1, 1])),
    "depthwise3x3": dict(x=(1, 8, 15, 15), w=(8, 1, 3, 3), attrs=dict(group=8, pads=[1, 1, 1, 1])),
    "depthwise5x5s2": dict(x=(1, 16, 28, 28), w=(16, 1, 5, 5), attrs=dict(group=16, pads=[2, 2, 2, 2], strides=[2, 2])),
    "depthwise_mult2": dict(x=(1, 3, 10, 10), w=(6, 1, 3, 3), attrs=dict(group=3)),
    "pointwise": dict(x=(1, 24, 14, 14), w=(40, 24, 1, 1), attrs={}),
    "pointwise_s2": dict(x=(1, 8, 14, 14), w=(12, 8, 1, 1), attrs=dict(strides=[2, 2])),
    "same_upper": dict(x=(1, 3, 10, 9), w=(4, 3, 3, 3), attrs=dict(auto_pad="SAME_UPPER", strides=[2, 2])),
    "valid": dict(x=(1, 3, 10, 9), w=(4, 3, 4, 2), attrs=dict(auto_pad="VALID")),
    "conv1d": dict(x=(1, 4, 20), w=(6, 4, 3), attrs=dict(pads=[1, 1], strides=[2])),
    "first_layer": dict(x=(1, 3, 32, 32), w=(32, 3, 3, 3), attrs=dict(strides=[2, 2], pads=[0, 0, 1, 1])),
    # 3x3 stride 2 on 25 tiles and more: conv2d_winograd_s2 (strided Winograd, U made at load)
    "winograd_s2": dict(x=(2, 8, 20, 18), w=(12, 8, 3, 3), attrs=dict(strides=[2, 2], pads=[1, 1, 1, 1])),
    "winograd_s2_asym": dict(x=(1, 4, 21, 23), w=(8, 4, 3, 3), attrs=dict(strides=[2, 2], pads=[0, 1, 1, 0])),
    "stem_bands": dict(x=(1, 3, 100, 96), w=(8, 3, 7, 7), attrs=dict(strides=[2, 2], pads=[3, 3, 3, 3])),
}


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("case", sorted(CONV_CASES))
def test_conv(case, bias):
    c = CONV_CASES[case]
    inits = {"W": rand(*c["w"], seed=1)}
    if bias:
        inits["B"] = rand(c["w"][0], seed=2)
    check(single_node("Conv", {"X": rand(*c["x"])}, ["Y"], c["attrs"], inits), {"X": rand(*c["x"])}, atol=1e-4)


@pytest.mark.parametrize("act", ["Relu", "Clip6", "Clip_attr"])
def test_conv_fused_activation(act):
    x, inits = rand(1, 4, 9, 9), {"W": rand(8, 4, 3, 3, seed=1), "B": rand(8, seed=2)}
    nodes = [helper.make_node("Conv", ["X", "W", "B"], ["T"], pads=[1, 1, 1, 1])]
    opset = 13
    if act == "Relu":
        nodes.append(helper.make_node("Relu", ["T"], ["Y"]))
    elif act == "Clip6":
        inits.update(lo=np.float32(0), hi=np.float32(6))
        nodes.append(helper.make_node("Clip", ["T", "lo", "hi"], ["Y"]))
    else:
        opset = 10
        nodes.append(helper.make_node("Clip", ["T"], ["Y"], min=-0.5, max=0.5))
    model = graph_model(nodes, {"X": x}, ["Y"], inits, opset=opset)
    # the plan compiler's own epilogue fusion, without the optimizer's FusedConv
    sess = check(model, {"X": x}, atol=1e-4, level=nnwasm.GraphOptimizationLevel.ORT_ENABLE_BASIC)
    assert len(sess.get_provider_assignment()) == 2
    sess = check(model, {"X": x}, atol=1e-4)
    assert [op for _, op, _ in sess.get_provider_assignment()] == ["FusedConv"]


@pytest.mark.parametrize("ta,tb", [(0, 0), (0, 1), (1, 0), (1, 1)])
@pytest.mark.parametrize("c_shape", [None, (), (7,), (5, 1), (5, 7), (1, 7)])
def test_gemm(ta, tb, c_shape):
    m, k, n = 5, 6, 7
    a = rand(*((k, m) if ta else (m, k)))
    inits = {"B": rand(*((n, k) if tb else (k, n)), seed=3)}
    if c_shape is not None:
        inits["C"] = rand(*c_shape, seed=4) if c_shape else np.float32(0.5)
    check(single_node("Gemm", {"A": a}, ["Y"], dict(transA=ta, transB=tb, alpha=0.7, beta=1.3), inits), {"A": a})


def test_gemm_classifier_shape():
    x = rand(1, 1280)
    inits = {"W": rand(1000, 1280, seed=5), "b": rand(1000, seed=6)}
    check(single_node("Gemm", {"X": x}, ["Y"], dict(transB=1), inits), {"X": x}, atol=1e-4)


@pytest.mark.parametrize("sa,sb", [((3, 4), (4, 5)), ((2, 3, 4), (2, 4, 5)), ((2, 3, 4), (4, 6)),
                                   ((4,), (4, 3)), ((3, 4), (4,)), ((1, 3, 4), (2, 4, 5)), ((17, 33), (33, 9))])
def test_matmul(sa, sb):
    a, b = rand(*sa), rand(*sb, seed=7)
    check(graph_model([helper.make_node("MatMul", ["A", "B"], ["Y"])], {"A": a, "B": b}, ["Y"]), {"A": a, "B": b})


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div"])
@pytest.mark.parametrize("sa,sb", [((2, 3, 4), (2, 3, 4)), ((2, 3, 4), ()), ((), (5,)), ((1, 8, 5, 5), (1, 8, 1, 1)),
                                   ((3, 1, 5), (4, 1)), ((2, 3, 4, 5), (5,)), ((1, 2, 1, 2, 1, 3), (2, 1, 3, 1))])
def test_binary(op, sa, sb):
    a, b = rand(*sa), np.asarray(rand(*sb, seed=8) + (3.0 if op == "Div" else 0.0), np.float32)
    check(graph_model([helper.make_node(op, ["A", "B"], ["Y"])], {"A": a, "B": b}, ["Y"]), {"A": a, "B": b})


def test_rank7_binary_falls_back_to_numpy():
    a, b = rand(1, 2, 1, 2, 1, 3, 2), rand(2, 1, 3, 1, seed=8)
    model = graph_model([helper.make_node("Add", ["A", "B"], ["Y"], name="add7")], {"A": a, "B": b}, ["Y"])
    sess = nnwasm.InferenceSession(model)
    assert sess.get_provider_assignment() == [("add7", "Add", "NumpyExecutionProvider")]
    np.testing.assert_allclose(sess.run(None, {"A": a, "B": b})[0], a + b, rtol=1e-6)


def test_binary_with_constant_operand():
    x = rand(1, 4, 3, 3)
    check(single_node("Mul", {"X": x}, ["Y"], {}, {"S": rand(1, 4, 1, 1, seed=9)}), {"X": x})


@pytest.mark.parametrize("op,opset,attrs,inits", [
    ("Relu", 13, {}, {}), ("Sigmoid", 13, {}, {}), ("Tanh", 13, {}, {}),
    ("Clip", 6, dict(min=-0.3, max=0.4), {}), ("Clip", 13, {}, {"lo": np.float32(-1.0)}),
    ("Clip", 13, {}, {"lo": np.float32(0.0), "hi": np.float32(6.0)}),
])
def test_unary(op, opset, attrs, inits):
    x = rand(2, 3, 17) * 4
    check(single_node(op, {"X": x}, ["Y"], attrs, inits, opset=opset), {"X": x}, atol=2e-6)


POOLS = {
    "max2x2": ("MaxPool", dict(kernel_shape=[2, 2], strides=[2, 2])),
    "max3x3_pads": ("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
    "max_dilated": ("MaxPool", dict(kernel_shape=[2, 2], dilations=[2, 2])),
    "max_ceil": ("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)),
    "max_same": ("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER")),
    "avg": ("AveragePool", dict(kernel_shape=[3, 3], strides=[1, 1])),
    "avg_pads_exclude": ("AveragePool", dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])),
    "avg_pads_include": ("AveragePool", dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1)),
    "avg_ceil": ("AveragePool", dict(kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1)),
    "avg_1d": ("AveragePool", dict(kernel_shape=[3], strides=[2], pads=[1, 1])),
}


@pytest.mark.parametrize("case", sorted(POOLS))
def test_pool(case):
    op, attrs = POOLS[case]
    x = rand(1, 3, 11) if case.endswith("1d") else rand(2, 3, 11, 10)
    check(single_node(op, {"X": x}, ["Y"], attrs), {"X": x})


def test_global_average_pool():
    x = rand(2, 5, 7, 6)
    check(single_node("GlobalAveragePool", {"X": x}, ["Y"]), {"X": x})


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("opset,axis", [(11, 1), (11, -1), (13, -1), (13, 1), (13, 0)])
def test_softmax(op, opset, axis):
    x = rand(3, 4, 5) * 3
    check(single_node(op, {"X": x}, ["Y"], dict(axis=axis), opset=opset), {"X": x})


def test_reshape_flatten_squeeze_unsqueeze_concat():
    x, y = rand(2, 3, 4), rand(2, 5, 4, seed=1)
    nodes = [
        helper.make_node("Concat", ["X", "Y"], ["C"], axis=1),
        helper.make_node("Reshape", ["C", "shape"], ["R"]),
        helper.make_node("Unsqueeze", ["R", "axes"], ["U"]),
        helper.make_node("Squeeze", ["U", "axes"], ["S"]),
        helper.make_node("Flatten", ["S"], ["F"], axis=1),
        helper.make_node("Concat", ["F", "F"], ["Z"], axis=-1),
    ]
    inits = {"shape": np.array([4, -1, 2], np.int64), "axes": np.array([0], np.int64)}
    check(graph_model(nodes, {"X": x, "Y": y}, ["Z"], inits), {"X": x, "Y": y})


def test_concat_int64_and_graph_output_of_every_step():
    a, b = np.arange(6, dtype=np.int64).reshape(2, 3), np.arange(4, dtype=np.int64).reshape(2, 2)
    nodes = [helper.make_node("Concat", ["A", "B"], ["C"], axis=1), helper.make_node("Flatten", ["C"], ["F"])]
    check(graph_model(nodes, {"A": a, "B": b}, ["C", "F"]), {"A": a, "B": b})


def test_small_cnn_is_one_plan():
    x = rand(1, 3, 16, 16)
    inits = {"W1": rand(8, 3, 3, 3, seed=1), "B1": rand(8, seed=2), "W2": rand(8, 1, 3, 3, seed=3),
             "W3": rand(10, 32, seed=4), "B3": rand(10, seed=5), "lo": np.float32(0), "hi": np.float32(6)}
    nodes = [
        helper.make_node("Conv", ["X", "W1", "B1"], ["a"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Clip", ["a", "lo", "hi"], ["b"]),
        helper.make_node("Conv", ["b", "W2"], ["c"], pads=[1, 1, 1, 1], group=8),
        helper.make_node("Add", ["b", "c"], ["d"]),
        helper.make_node("MaxPool", ["d"], ["e"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("GlobalAveragePool", ["e"], ["f"]),
        helper.make_node("Flatten", ["f"], ["g"]),
        helper.make_node("Concat", ["g", "g", "g", "g"], ["h"], axis=1),
        helper.make_node("Gemm", ["h", "W3", "B3"], ["i"], transB=1),
        helper.make_node("Softmax", ["i"], ["Y"]),
    ]
    sess = check(graph_model(nodes, {"X": x}, ["Y"], inits), {"X": x})
    assert len(sess._cache[((1, 3, 16, 16),)].runners) == 1


@pytest.mark.parametrize("attrs", [dict(kernel_shape=[2, 2], pads=[2, 0, 0, 0]),              # pad >= window
                                   dict(kernel_shape=[1, 1], strides=[3, 3], pads=[0, 0, 2, 2], ceil_mode=1)])
def test_pools_kernels_refuse_fall_back_to_numpy(attrs):
    x = rand(1, 2, 5, 5)
    sess = nnwasm.InferenceSession(single_node("MaxPool", {"X": x}, ["Y"], attrs))
    assert {p for _, _, p in sess.get_provider_assignment()} == {"NumpyExecutionProvider"}
    ref = nnwasm.InferenceSession(single_node("MaxPool", {"X": x}, ["Y"], attrs), providers=["NumpyExecutionProvider"])
    np.testing.assert_array_equal(sess.run(None, {"X": x})[0], ref.run(None, {"X": x})[0])


def test_clip_min_above_max_falls_back_to_numpy():
    x = rand(2, 3)
    model = single_node("Clip", {"X": x}, ["Y"], {}, {"lo": np.float32(1), "hi": np.float32(-1)})
    sess = nnwasm.InferenceSession(model)
    assert {p for _, _, p in sess.get_provider_assignment()} == {"NumpyExecutionProvider"}
    np.testing.assert_allclose(sess.run(None, {"X": x})[0], ort_run(model, {"X": x})[0])


@pytest.mark.parametrize("opset,shape", [(9, (2, 5, 6, 7)), (15, (3, 4)), (15, (1, 6, 9))])
def test_batch_normalization(opset, shape):
    x, c = rand(*shape), shape[1]
    rng = np.random.default_rng(3)
    inits = {"s": rand(c, seed=1), "b": rand(c, seed=2), "m": rand(c, seed=3),
             "v": np.asarray(rng.uniform(0.5, 2.0, c), np.float32)}
    check(single_node("BatchNormalization", {"X": x}, ["Y"], dict(epsilon=1e-3), inits, opset=opset), {"X": x})


@pytest.mark.parametrize("shapes", [[(2, 3)], [(2, 3), (2, 3)], [(3,), (2, 3), (2, 1)], [(4, 1, 5), (3, 1), (5,), (1,)]])
def test_sum(shapes):
    xs = {f"x{i}": rand(*s, seed=i) for i, s in enumerate(shapes)}
    check(graph_model([helper.make_node("Sum", list(xs), ["Y"])], xs, ["Y"]), xs)


def test_light_model_idioms_run_on_wasm():
    """Old exporters' habits: weights from ConstantOfShape, Dropout naming an unused mask (opset 9)."""
    x = rand(1, 3, 8, 8)
    nodes = [helper.make_node("ConstantOfShape", ["wshape"], ["W"], value=helper.make_tensor("v", 1, [1], [0.01])),
             helper.make_node("Conv", ["X", "W"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Dropout", ["c"], ["Y", "mask"], ratio=0.5)]
    model = graph_model(nodes, {"X": x}, ["Y"], {"wshape": np.array([4, 3, 3, 3], np.int64)}, opset=9)
    check(model, {"X": x})


def test_lrn_runs_on_numpy():
    x = rand(2, 7, 4, 5)
    model = single_node("LRN", {"X": x}, ["Y"], dict(size=3, alpha=2e-3, beta=0.6, bias=1.5))
    sess = nnwasm.InferenceSession(model)
    np.testing.assert_allclose(sess.run(None, {"X": x})[0], ort_run(model, {"X": x})[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape,perm,dtype", [
    ((2, 3), None, np.float32), ((2, 3, 4, 5), (0, 2, 3, 1), np.float32), ((2, 3, 4, 5), (3, 1, 0, 2), np.float32),
    ((1, 6, 1, 7), (3, 2, 1, 0), np.float32), ((2, 3, 4, 5, 6, 7, 2), (0, 1, 2, 3, 4, 6, 5), np.float32),
    ((4, 1, 3), (2, 0, 1), np.int64), ((3, 5), (1, 0), np.float16), ((2, 2, 3), (1, 2, 0), np.bool_),
    ((2, 3, 4), (0, 1, 2), np.int8),
])
def test_transpose(shape, perm, dtype):
    x = (np.random.default_rng(1).standard_normal(shape) * 10).astype(dtype)
    attrs = {} if perm is None else {"perm": list(perm)}
    check(graph_model([helper.make_node("Transpose", ["X"], ["Y"], **attrs)], {"X": x}, ["Y"]), {"X": x})


def test_transpose_of_more_than_six_unmergeable_axes_falls_back():
    x = rand(2, 3, 2, 3, 2, 3, 2)
    model = graph_model([helper.make_node("Transpose", ["X"], ["Y"], perm=[0, 2, 4, 6, 1, 3, 5])], {"X": x}, ["Y"])
    sess = nnwasm.InferenceSession(model)
    assert [p for *_, p in sess.get_provider_assignment()] == ["NumpyExecutionProvider"]
    np.testing.assert_array_equal(sess.run(None, {"X": x})[0], x.transpose(0, 2, 4, 6, 1, 3, 5))
