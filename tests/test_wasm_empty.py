"""Zero-size tensors (a dim of 0) on kernels.wasm (wasm/lower/empty.py): a decoder's first step
feeds an empty past. Every op that can meet one, with the WASM provider alone, against the numpy
provider and onnxruntime: empty results emit no kernel, Concat skips empty pieces, MatMul / Gemm
with K = 0 and reductions over an empty axis give ONNX's values (zeros, beta * C, the reduction's
identity). Also Trilu (lower/positional.py), which the Whisper decoder's first step needs."""
import numpy as np
import pytest

import nnwasm
from model_builders import graph_model, rand
from onnx import helper
from test_wasm_ops import WASM_ONLY, check, wasm_only_options


def model(op, inputs, inits=None, opset=18, **attrs):
    inits = inits or {}
    return graph_model([helper.make_node(op, [*inputs, *inits], ["Y"], **attrs)], inputs, ["Y"], inits, opset=opset)


def empty(*shape):
    return np.zeros(shape, np.float32)


def i64(*v):
    return np.array(v, np.int64)


# --- results that are empty: no kernel runs --------------------------------------------------------

@pytest.mark.parametrize("op,inputs,inits,attrs", [
    ("Relu", {"X": empty(2, 0, 3)}, {}, {}),
    ("Add", {"X": empty(1, 4, 0, 16), "B": rand(1, 4, 1, 16)}, {}, {}),
    ("Transpose", {"X": empty(1, 4, 0, 16)}, {}, {"perm": [0, 2, 1, 3]}),
    ("Reshape", {"X": empty(1, 4, 0, 16)}, {"S": i64(4, 0, 4, 4)}, {"allowzero": 1}),
    ("Reshape", {"X": empty(1, 4, 0, 16)}, {"S": i64(0, 0, -1)}, {}),
    ("Softmax", {"X": empty(1, 4, 3, 0)}, {}, {"axis": -1}),
    ("Softmax", {"X": empty(1, 4, 0, 5)}, {}, {"axis": -1}),
    ("Slice", {"X": empty(1, 4, 0, 16)}, {"s": i64(0), "e": i64(8), "a": i64(3)}, {}),
    ("Gather", {"X": rand(6, 3), "I": np.zeros((1, 0), np.int64)}, {}, {"axis": 0}),
    ("Expand", {"X": empty(1, 0, 1)}, {"S": i64(2, 0, 5)}, {}),
    ("Where", {"C": np.zeros((0, 3), bool), "X": rand(1, 3), "Z": rand(0, 3)}, {}, {}),
    ("Cast", {"X": empty(0, 7)}, {}, {"to": 7}),
    ("MatMul", {"A": empty(2, 0, 5), "B": rand(5, 3)}, {}, {}),        # M = 0
    ("MatMul", {"A": rand(2, 3, 16), "B": empty(2, 16, 0)}, {}, {}),   # N = 0 (scores over an empty past)
    ("ReduceMax", {"X": empty(0, 3)}, {"axes": i64(1)}, {"keepdims": 1}),
    ("Concat", {"X": empty(1, 4, 0, 16), "Z": empty(1, 4, 0, 16)}, {}, {"axis": 2}),
])
def test_empty_results(op, inputs, inits, attrs):
    check(model(op, inputs, inits, **attrs), inputs)


def test_split_with_an_empty_piece():
    feeds = {"X": rand(2, 5)}
    node = helper.make_node("Split", ["X", "s"], ["A", "B", "C"], axis=1)
    m = graph_model([node], feeds, ["A", "B", "C"], {"s": i64(2, 0, 3)}, opset=18)
    check(m, feeds)


# --- results that are not empty ------------------------------------------------------------------

def test_concat_onto_an_empty_past():
    past, new = empty(1, 4, 0, 16), rand(1, 4, 3, 16)
    feeds = {"P": past, "X": new}
    check(model("Concat", feeds, axis=2), feeds)
    feeds = {"X": new, "P": past}
    check(model("Concat", feeds, axis=-2), feeds)


@pytest.mark.parametrize("a,b", [((3, 0), (0, 4)), ((2, 3, 0), (2, 0, 5)), ((1, 4, 3, 0), (1, 4, 0, 16))])
def test_matmul_with_k_zero_gives_zeros(a, b):
    feeds = {"A": empty(*a), "B": empty(*b)}
    check(model("MatMul", feeds), feeds)


@pytest.mark.parametrize("with_c", [False, True])
def test_gemm_with_k_zero_gives_c(with_c):
    feeds = {"A": empty(0, 3), "B": empty(4, 0)}
    inits = {"C": rand(4)} if with_c else {}
    check(model("Gemm", feeds, inits, transA=1, transB=1, alpha=3.0), feeds)


def test_gemm_with_k_zero_scales_c_by_beta():
    """ONNX's Y = alpha A B + beta C with A B = 0, as the numpy reference computes (onnxruntime 1.31
    returns C unscaled when K = 0, so it is no oracle here)."""
    feeds = {"A": empty(0, 3), "B": empty(4, 0)}
    m = model("Gemm", feeds, {"C": rand(4)}, transA=1, transB=1, alpha=3.0, beta=-2.0)
    got = nnwasm.InferenceSession(m, wasm_only_options(), providers=WASM_ONLY).run(None, feeds)[0]
    want = nnwasm.InferenceSession(m, providers=["NumpyExecutionProvider"]).run(None, feeds)[0]
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, np.broadcast_to(-2.0 * rand(4), (3, 4)))


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
                                "ReduceL2", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduction_over_an_empty_axis_gives_its_identity(op, keepdims):
    feeds = {"X": empty(2, 0, 3)}
    with np.errstate(all="ignore"):
        check(model(op, feeds, {"axes": i64(1)}, keepdims=keepdims), feeds)


@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin"])
def test_integer_reduction_over_an_empty_axis(op):
    feeds = {"X": np.zeros((3, 0), np.int64)}
    check(model(op, feeds, {"axes": i64(1)}, keepdims=0), feeds)


def test_empty_past_through_attention():
    """The first step of a decoder without an If: concat onto the empty past, scores, softmax, values."""
    q, k, v = rand(1, 2, 3, 8), rand(1, 2, 3, 8, seed=1), rand(1, 2, 3, 8, seed=2)
    pk, pv = empty(1, 2, 0, 8), empty(1, 2, 0, 8)
    nodes = [helper.make_node("Concat", ["PK", "K"], ["k"], axis=2),
             helper.make_node("Concat", ["PV", "V"], ["v"], axis=2),
             helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
             helper.make_node("MatMul", ["Q", "kt"], ["s"]),
             helper.make_node("Softmax", ["s"], ["p"], axis=-1),
             helper.make_node("MatMul", ["p", "v"], ["Y"])]
    feeds = {"Q": q, "K": k, "V": v, "PK": pk, "PV": pv}
    check(graph_model(nodes, feeds, ["Y", "k", "v"], opset=18), feeds)


def test_what_has_no_result_stays_refused_naming_the_value():
    feeds = {"X": empty(4, 0)}
    m = model("ArgMax", feeds, axis=1, keepdims=0)
    with pytest.raises(nnwasm.NotImplementedOp, match="'X' is empty and ArgMax"):
        nnwasm.InferenceSession(m, wasm_only_options(), providers=WASM_ONLY)


# --- Trilu -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape,upper,k", [((4, 4), 1, 0), ((4, 4), 0, 0), ((2, 3, 5), 1, 1), ((2, 5, 3), 0, -1),
                                           ((1, 1, 6, 6), 1, 7), ((3, 4), 0, -5)])
def test_trilu(shape, upper, k):
    feeds = {"X": rand(*shape)}
    check(model("Trilu", feeds, {"k": i64(k)}, opset=14, upper=upper), feeds)


def test_trilu_integers_without_k():
    feeds = {"X": np.arange(30, dtype=np.int64).reshape(5, 6)}
    check(model("Trilu", feeds, opset=14, upper=0), feeds)


def test_trilu_with_runtime_k_is_refused():
    feeds = {"X": rand(3, 3), "K": i64(1).reshape(())}
    with pytest.raises(nnwasm.NotImplementedOp, match="k is not a constant"):
        nnwasm.InferenceSession(model("Trilu", feeds, opset=14), wasm_only_options(), providers=WASM_ONLY)


# --- ScatterND with constant indices (lower/scatter.py) --------------------------------------------

@pytest.mark.parametrize("data,idx,upd", [
    ((4, 5), [[1], [3]], (2, 5)),                    # rows
    ((4, 5), [[0, 1], [3, 4], [-1, 0]], (3,)),       # elements, a negative index
    ((2, 3, 4), [[[1, 2]], [[0, 0]]], (2, 1, 4)),    # batched index tuples
    ((3, 3), [[1], [1]], (2, 3)),                    # a duplicate: the last wins
])
def test_scatter_nd_constant_indices(data, idx, upd):
    feeds = {"D": rand(*data), "U": rand(*upd, seed=1)}
    node = helper.make_node("ScatterND", ["D", "I", "U"], ["Y"])
    check(graph_model([node], feeds, ["Y"], {"I": np.array(idx, np.int64)}, opset=13), feeds)


# --- ScatterND with indices fed at run time (the scatter_nd kernel) --------------------------------

@pytest.mark.parametrize("data,idx,upd", [
    ((4, 5), [[1], [3]], (2, 5)),
    ((4, 5), [[0, 1], [3, 4], [-1, 0]], (3,)),
    ((2, 3, 4), [[[1, 2]], [[0, 0]]], (2, 1, 4)),
    ((3, 3), [[1], [1]], (2, 3)),
])
def test_scatter_nd_runtime_indices(data, idx, upd):
    feeds = {"D": rand(*data), "I": np.array(idx, np.int64), "U": rand(*upd, seed=1)}
    check(model("ScatterND", feeds, opset=13), feeds)


def test_scatter_nd_runtime_index_out_of_range_is_a_clear_error():
    feeds = {"D": rand(4, 5), "I": np.array([[1], [4]], np.int64), "U": rand(2, 5)}
    sess = nnwasm.InferenceSession(model("ScatterND", feeds, opset=13), wasm_only_options(), providers=WASM_ONLY)
    with pytest.raises(nnwasm.InvalidArgument, match="ScatterND"):
        sess.run(None, feeds)
    feeds["I"] = np.array([[1], [-4]], np.int64)   # the session is still usable
    np.testing.assert_array_equal(sess.run(None, feeds)[0][0], feeds["U"][1])
