"""Reductions, normalisations and batched MatMul on kernels.wasm (reduce, argreduce, norm, bmatmul,
softmax), each against the numpy provider and onnxruntime with the numpy fallback disabled."""
import numpy as np
import pytest

import nnwasm
from model_builders import TensorProto, graph_model, ort_run, rand, single_node
from onnx import helper
from test_wasm_ops import check, wasm_only_options

REDUCE_OPS = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
              "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"]


def _reduce_input(op, shape):
    x = rand(*shape) * 2
    if op == "ReduceLogSum":
        return np.abs(x) + 0.1
    if op == "ReduceProd":
        return np.asarray(1 + x * 0.1, np.float32)
    return x


def reduce_model(op, x, axes, keepdims, opset, noop=None):
    """axes as an attribute before the op takes them as an input (ReduceSum 13, the rest 18)."""
    attrs = {"keepdims": keepdims}
    inputs, inits = ["X"], {}
    if opset >= (13 if op == "ReduceSum" else 18):
        if axes is not None:
            inputs.append("axes")
            inits["axes"] = np.array(axes, np.int64)
        if noop is not None:
            attrs["noop_with_empty_axes"] = noop
    elif axes is not None:
        attrs["axes"] = axes
    return graph_model([helper.make_node(op, inputs, ["Y"], **attrs)], {"X": x}, ["Y"], inits, opset=opset)


@pytest.mark.parametrize("op", REDUCE_OPS)
@pytest.mark.parametrize("axes", [None, [1], [-1], [0], [1, 2], [0, 2], [0, 3], [1, 3], [0, 2, 3], [3, 0, 1, 2]])
def test_reduce_axes(op, axes):
    x = _reduce_input(op, (2, 3, 4, 5))
    for keepdims in (0, 1):
        check(reduce_model(op, x, axes, keepdims, 13), {"X": x}, atol=2e-5)


@pytest.mark.parametrize("op", REDUCE_OPS)
@pytest.mark.parametrize("opset", [11, 18])
def test_reduce_opsets(op, opset):
    x = _reduce_input(op, (3, 1, 6, 7))
    check(reduce_model(op, x, [-3, -1], 0, opset), {"X": x}, atol=2e-5)
    check(reduce_model(op, x, [1], 1, opset), {"X": x}, atol=2e-5)    # only a size-1 axis reduced


def test_reduce_alternating_axes_of_rank_six():
    x = rand(2, 3, 2, 3, 2, 3)
    check(reduce_model("ReduceSum", x, [1, 3, 5], 0, 13), {"X": x}, atol=2e-5)
    check(reduce_model("ReduceMax", x, [0, 2, 4], 1, 13), {"X": x})


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMean"])
def test_reduce_noop_with_empty_axes(op):
    x = rand(2, 3, 4)
    check(reduce_model(op, x, None, 1, 18, noop=1), {"X": x})
    check(reduce_model(op, x, None, 0, 18, noop=0), {"X": x}, atol=2e-5)


@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin", "ReduceSum"])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_reduce_integers(op, dtype):
    # ReduceSum of an int64 attention mask gives onnxruntime-genai's seqlens_k
    x = np.random.default_rng(2).integers(-1000, 1000, (3, 4, 5)).astype(dtype)
    if dtype == np.int64:
        x = x * (1 << 33)
    for axes in ([1], [0, 2], None):
        check(reduce_model(op, x, axes, 0, 13), {"X": x})


def test_reduce_sum_of_integers_wraps():
    x = np.array([[2 ** 31 - 1, 1, 5]], np.int32)
    sess = nnwasm.InferenceSession(reduce_model("ReduceSum", x, [1], 0, 13), wasm_only_options())
    np.testing.assert_array_equal(sess.run(None, {"X": x})[0], np.array([-2 ** 31 + 5], np.int32))


def test_reduce_with_computed_axes_falls_back_to_numpy():
    x = rand(2, 3, 4)
    model = graph_model([helper.make_node("ReduceSum", ["X", "A"], ["Y"], keepdims=0)],
                        {"X": x, "A": np.array([1], np.int64)}, ["Y"])
    sess = nnwasm.InferenceSession(model)
    assert [p for *_, p in sess.get_provider_assignment()] == ["NumpyExecutionProvider"]
    np.testing.assert_allclose(sess.run(None, {"X": x, "A": np.array([1], np.int64)})[0], x.sum(1), rtol=1e-5)


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64])
def test_argmax_argmin(op, axis, dtype):
    x = np.random.default_rng(3).integers(0, 3, (3, 4, 5)).astype(dtype)       # many ties
    for keepdims in (0, 1):
        for last in (0, 1):
            model = single_node(op, {"X": x}, ["Y"], dict(axis=axis, keepdims=keepdims, select_last_index=last))
            check(model, {"X": x})


def test_argmax_nan_as_onnxruntime():
    """A NaN never beats the best so far, and one that comes first stays (numpy's argmax differs)."""
    x = np.array([[1, np.nan, 3, 2], [np.nan, 1, 5, np.nan], [3, 3, 1, 1]], np.float32)
    for op in ("ArgMax", "ArgMin"):
        model = single_node(op, {"X": x}, ["Y"], dict(axis=1))
        sess = nnwasm.InferenceSession(model, wasm_only_options())
        np.testing.assert_array_equal(sess.run(None, {"X": x})[0], ort_run(model, {"X": x})[0])


@pytest.mark.parametrize("opset,axis", [(11, 1), (11, -1), (11, 0), (13, -1), (13, 1), (13, 0)])
def test_hardmax(opset, axis):
    x = np.random.default_rng(4).integers(0, 4, (3, 4, 5)).astype(np.float32)
    check(single_node("Hardmax", {"X": x}, ["Y"], dict(axis=axis), opset=opset), {"X": x})


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("opset,axis", [(11, 0), (11, 2), (11, -2), (11, 3), (13, 0), (13, 2), (13, -2), (13, 3)])
def test_softmax_every_axis(op, opset, axis):
    x = rand(2, 3, 4, 5) * 3
    check(single_node(op, {"X": x}, ["Y"], dict(axis=axis), opset=opset), {"X": x})


@pytest.mark.parametrize("shape", [(2, 3, 5, 6), (2, 3, 7), (1, 4, 1, 1)])
@pytest.mark.parametrize("op", ["GlobalMaxPool", "GlobalAveragePool"])
def test_global_pools(op, shape):
    x = rand(*shape)
    check(single_node(op, {"X": x}, ["Y"]), {"X": x})


# ---- normalisation ----------------------------------------------------------------------

@pytest.mark.parametrize("shape,axis,pshape,bias", [
    ((2, 5, 16), -1, (16,), True), ((2, 5, 16), -1, (16,), False), ((2, 5, 16), 1, (5, 16), True),
    ((3, 7), 0, (3, 7), True), ((2, 5, 16), -1, (1,), True), ((4, 1, 768), 2, (768,), True),
    ((2, 5, 16), 1, (1, 16), True), ((2, 5, 16), 1, (16,), False), ((2, 3, 4, 6), 1, (1, 6), True),
])
def test_layer_norm(shape, axis, pshape, bias):
    x = rand(*shape) * 3 + 2
    inits = {"S": rand(*pshape, seed=1)}
    if bias:
        inits["B"] = rand(*pshape, seed=2)
    check(single_node("LayerNormalization", {"X": x}, ["Y"], dict(axis=axis, epsilon=1e-3), inits, opset=17),
          {"X": x}, atol=1e-5, rtol=1e-4)


def test_layer_norm_mean_and_inv_std_outputs():
    x = rand(3, 4, 10)
    model = single_node("LayerNormalization", {"X": x}, ["Y", "M", "I"], dict(axis=-2),
                        {"S": rand(4, 10, seed=1), "B": rand(4, 10, seed=2)}, opset=17)
    check(model, {"X": x}, atol=1e-5, rtol=1e-4)


def test_layer_norm_over_channels_after_permute():
    """ConvNeXt: NCHW -> NHWC, LayerNormalization over C, back."""
    x = rand(1, 8, 5, 5)
    nodes = [helper.make_node("Transpose", ["X"], ["T"], perm=[0, 2, 3, 1]),
             helper.make_node("LayerNormalization", ["T", "S", "B"], ["L"], epsilon=1e-6),
             helper.make_node("Transpose", ["L"], ["Y"], perm=[0, 3, 1, 2])]
    check(graph_model(nodes, {"X": x}, ["Y"], {"S": rand(8, seed=1), "B": rand(8, seed=2)}, opset=17), {"X": x},
          atol=1e-5, rtol=1e-4)


def test_layer_norm_scale_broadcast_inside_falls_back():
    x = rand(2, 5, 16)
    model = single_node("LayerNormalization", {"X": x}, ["Y"], dict(axis=1), {"S": rand(5, 1, seed=1)}, opset=17)
    sess = nnwasm.InferenceSession(model)
    assert [p for *_, p in sess.get_provider_assignment()] == ["NumpyExecutionProvider"]


@pytest.mark.parametrize("shape", [(2, 3, 5, 6), (2, 4, 7), (1, 2, 3, 4, 2)])
def test_instance_norm(shape):
    x = rand(*shape) * 2 + 1
    c = shape[1]
    inits = {"S": rand(c, seed=1), "B": rand(c, seed=2)}
    check(single_node("InstanceNormalization", {"X": x}, ["Y"], dict(epsilon=1e-4), inits), {"X": x},
          atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("opset", [18, 21])       # scale and bias per group, then per channel
@pytest.mark.parametrize("groups", [1, 3, 6])
def test_group_norm(groups, opset):
    x = rand(2, 6, 4, 5) * 2 - 1
    p = groups if opset < 21 else 6
    inits = {"S": rand(p, seed=1), "B": rand(p, seed=2)}
    check(single_node("GroupNormalization", {"X": x}, ["Y"], dict(num_groups=groups, epsilon=1e-4), inits,
                      opset=opset, out_dtype=TensorProto.FLOAT), {"X": x}, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_lp_normalization(p, axis):
    x = rand(3, 4, 5)
    x[1, :, 2] = 0
    x[:, 2, :] = 0
    x[0, 1, :] = 0
    check(single_node("LpNormalization", {"X": x}, ["Y"], dict(p=p, axis=axis), opset=1), {"X": x})


# ---- MatMul with batch broadcasting -----------------------------------------------------

@pytest.mark.parametrize("sa,sb", [
    ((2, 3, 5, 4), (2, 3, 4, 6)),          # attention scores [B,H,S,D] @ [B,H,D,S]
    ((1, 3, 5, 4), (2, 3, 4, 5)),          # one side's batch broadcast
    ((2, 3, 5, 4), (1, 3, 4, 5)),
    ((2, 7, 16), (16, 9)),                 # [B,S,D] @ [D,N]: one GEMM
    ((2, 1, 7, 16), (1, 16, 9)),
    ((4,), (2, 4, 3)), ((2, 3, 4), (4,)), ((3, 4), (2, 4, 5)), ((4,), (4,)),
    ((2, 1, 5, 4), (1, 3, 4, 6)),          # each side broadcast along a different dim
    ((2, 1, 3, 5, 4), (1, 2, 1, 4, 6)),    # three batch levels
    ((2, 2, 2, 2, 3, 4), (2, 1, 2, 1, 4, 2)),
])
def test_matmul_broadcast(sa, sb):
    a, b = rand(*sa), rand(*sb, seed=7)
    check(graph_model([helper.make_node("MatMul", ["A", "B"], ["Y"])], {"A": a, "B": b}, ["Y"]), {"A": a, "B": b})


def test_attention_block_is_one_plan():
    bsz, heads, seq, dim = 2, 4, 6, 8
    q, k, v = rand(bsz, heads, seq, dim), rand(bsz, heads, seq, dim, seed=1), rand(bsz, heads, seq, dim, seed=2)
    nodes = [helper.make_node("Transpose", ["K"], ["Kt"], perm=[0, 1, 3, 2]),
             helper.make_node("MatMul", ["Q", "Kt"], ["S"]),
             helper.make_node("Div", ["S", "scale"], ["Ss"]),
             helper.make_node("Softmax", ["Ss"], ["P"], axis=-1),
             helper.make_node("MatMul", ["P", "V"], ["O"]),
             helper.make_node("Transpose", ["O"], ["Ot"], perm=[0, 2, 1, 3]),
             helper.make_node("Reshape", ["Ot", "shape"], ["Y"])]
    inits = {"scale": np.float32(np.sqrt(dim)), "shape": np.array([bsz, seq, heads * dim], np.int64)}
    feeds = {"Q": q, "K": k, "V": v}
    sess = check(graph_model(nodes, feeds, ["Y"], inits), feeds)
    assert len(sess._cache[((bsz, heads, seq, dim),) * 3].runners) == 1


@pytest.mark.parametrize("eq,sa,sb", [
    ("bhqd,bhkd->bhqk", (2, 3, 5, 4), (2, 3, 6, 4)),      # attention scores
    ("bhqk,bhkd->bhqd", (2, 3, 5, 6), (2, 3, 6, 4)),      # attention context
    ("bqhd,bkhd->bhqk", (2, 5, 3, 4), (2, 6, 3, 4)),
    ("bid,jd->bij", (2, 5, 4), (7, 4)), ("ij,jk->ik", (3, 4), (4, 5)), ("ij,jk", (3, 4), (4, 5)),
    ("bij,bjk->bik", (2, 3, 4), (2, 4, 5)), ("i,j->ij", (3,), (4,)), ("i,i->", (5,), (5,)),
    ("ij,kj->ki", (3, 4), (5, 4)), ("bn,anm,bm->ba", None, None),
])
def test_einsum(eq, sa, sb):
    if sa is None:   # three operands: refused, runs on numpy
        xs = {"A": rand(2, 3), "B": rand(4, 3, 5, seed=1), "C": rand(2, 5, seed=2)}
        model = graph_model([helper.make_node("Einsum", list(xs), ["Y"], equation=eq)], xs, ["Y"], opset=12)
        sess = nnwasm.InferenceSession(model)
        assert [p for *_, p in sess.get_provider_assignment()] == ["NumpyExecutionProvider"]
        np.testing.assert_allclose(sess.run(None, xs)[0], ort_run(model, xs)[0], rtol=1e-5, atol=1e-5)
        return
    a, b = rand(*sa), rand(*sb, seed=7)
    model = graph_model([helper.make_node("Einsum", ["A", "B"], ["Y"], equation=eq)], {"A": a, "B": b}, ["Y"],
                        opset=12)
    check(model, {"A": a, "B": b})


def test_matmul_needing_too_many_ops_falls_back():
    a, b = rand(70, 1, 70, 1, 3, 1, 2), rand(1, 2, 1, 2, 1, 2, 1, seed=1)     # 70*2*70 blocks of two levels
    model = graph_model([helper.make_node("MatMul", ["A", "B"], ["Y"])], {"A": a, "B": b}, ["Y"])
    sess = nnwasm.InferenceSession(model)
    assert [p for *_, p in sess.get_provider_assignment()] == ["NumpyExecutionProvider"]
    np.testing.assert_allclose(sess.run(None, {"A": a, "B": b})[0], a @ b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin", "GlobalMaxPool"])
def test_max_min_propagate_nan_as_numpy(op):
    """NaN wins (numpy and the ONNX reference; onnxruntime's answer depends on where the NaN is)."""
    x = rand(2, 3, 4, 9)
    x[0, 1, 2, 3], x[1, 0, 0, 8], x[1, 2, 3, 0] = np.nan, np.inf, -np.inf
    x[0, 2, 1, :] = np.nan
    models = [single_node(op, {"X": x}, ["Y"])] if op == "GlobalMaxPool" else \
        [reduce_model(op, x, axes, 0, 13) for axes in ([3], [1], [0, 2], None)]
    for model in models:
        got = nnwasm.InferenceSession(model, wasm_only_options()).run(None, {"X": x})[0]
        want = nnwasm.InferenceSession(model, providers=["NumpyExecutionProvider"]).run(None, {"X": x})[0]
        np.testing.assert_array_equal(got, want)
