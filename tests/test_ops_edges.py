"""Edge cases and bad input for the op families the backend suite covers thinly: losses, bitwise,
positional (Trilu/OneHot), sorting (TopK/Unique/NonMaxSuppression), scatter, cumulative, spectral
and TfIdfVectorizer. Values are checked against onnx's reference evaluator; bad attributes fail
session creation with InvalidModel, bad fed values fail the run with InvalidArgument."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

import nnwasm  # noqa: E402
from nnwasm.errors import InvalidArgument, InvalidModel  # noqa: E402


def model(op_type, feeds, attrs=None, n_out=1, opset=21, consts=None):
    """One node over graph inputs `feeds` ({name: sample}, None for an omitted input) and
    constant inputs `consts`; outputs typed by onnx's inference where it can."""
    consts = consts or {}
    names = [k if v is not None else "" for k, v in feeds.items()] + list(consts)
    outs = [f"y{i}" for i in range(n_out)]
    node = helper.make_node(op_type, names, outs, **(attrs or {}))
    ins = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
           for k, v in feeds.items() if v is not None]
    inits = [onnx.numpy_helper.from_array(np.asarray(v), k) for k, v in consts.items()]
    graph = helper.make_graph([node], "t", ins, [helper.make_empty_tensor_value_info(o) for o in outs], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 10
    inferred = {v.name: v for v in onnx.shape_inference.infer_shapes(m).graph.value_info}
    first = next(v for v in feeds.values() if v is not None)
    for i, o in enumerate(outs):   # where onnx can't infer (bad attributes), the input's type
        m.graph.output[i].CopyFrom(inferred[o] if o in inferred else helper.make_tensor_value_info(
            o, helper.np_dtype_to_tensor_dtype(first.dtype), None))
    return m


def run(m, feeds, providers=("NumpyExecutionProvider",)):
    sess = nnwasm.InferenceSession(m.SerializeToString(), providers=list(providers))
    return sess.run(None, {k: v for k, v in feeds.items() if v is not None})


def check(op_type, feeds, attrs=None, n_out=1, opset=21, consts=None):
    m = model(op_type, feeds, attrs, n_out, opset, consts)
    want = ReferenceEvaluator(m).run(None, {k: v for k, v in feeds.items() if v is not None})
    for providers in (("NumpyExecutionProvider",), ("WasmExecutionProvider", "NumpyExecutionProvider")):
        got = run(m, feeds, providers)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, g.shape, w.dtype, w.shape)
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_nll_loss_ignore_index_everywhere_and_bad_target():
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    t = np.array([[0, 2, 1, 2], [1, 0, 2, 0]], np.int64)
    w = np.array([0.5, 1.0, 2.0], np.float32)
    for red in ("none", "sum", "mean"):
        check("NegativeLogLikelihoodLoss", {"x": x, "t": t, "w": w}, {"reduction": red, "ignore_index": 2})
        check("SoftmaxCrossEntropyLoss", {"x": x, "t": t}, {"reduction": red, "ignore_index": 0}, n_out=2)
    m = model("NegativeLogLikelihoodLoss", {"x": x, "t": t})
    with pytest.raises(InvalidArgument, match=r"target values must lie in \[0, 3\)"):
        run(m, {"x": x, "t": t + 5})
    with pytest.raises(InvalidModel, match="reduction"):
        run(model("NegativeLogLikelihoodLoss", {"x": x, "t": t}, {"reduction": "avg"}), {"x": x, "t": t})


def test_bitshift_signed_and_bad_attributes():
    x = np.array([-128, -1, 1, 64, 127], np.int8)
    y = np.array([1, 7, 8, -1, 3], np.int8)
    for d in ("LEFT", "RIGHT"):
        check("BitShift", {"x": x, "y": y}, {"direction": d}, opset=28)
    with pytest.raises(InvalidModel, match="direction"):
        run(model("BitShift", {"x": x, "y": y}, {"direction": "UP"}, opset=28), {"x": x, "y": y})
    u = np.array([1, 2], np.uint8)
    with pytest.raises(InvalidModel, match="bit-casts between types of one width"):
        run(model("BitCast", {"x": u}, {"to": TensorProto.FLOAT}, opset=26), {"x": u})


def test_trilu_batched_and_onehot_float_indices():
    x = np.arange(2 * 3 * 5, dtype=np.float32).reshape(2, 3, 5)
    for upper in (0, 1):
        for k in (-4, -1, 0, 2, 9):
            check("Trilu", {"x": x}, {"upper": upper}, consts={"k": np.array(k, np.int64)}, opset=14)
    idx = np.array([[0.0, 2.0], [-1.0, 5.0]], np.float32)
    consts = {"d": np.array(3, np.int64), "v": np.array([-1, 4], np.int32)}
    check("OneHot", {"i": idx}, {"axis": 1}, consts=consts, opset=11)
    # non-integer indices are cast to int64 first, as the spec says (onnx's reference compares floats)
    (y,) = run(model("OneHot", {"i": idx}, consts=consts, opset=11), {"i": idx + 0.7})
    assert y[0, 1].tolist() == [-1, -1, 4]
    with pytest.raises(InvalidModel, match="rank >= 2"):
        v = np.zeros(3, np.float32)
        run(model("Trilu", {"x": v}, opset=14), {"x": v})


def test_topk_ties_nan_and_k_out_of_range():
    x = np.array([[3, 1, 3, np.nan, 1, 2]], np.float32)
    for largest in (0, 1):
        check("TopK", {"x": x}, {"largest": largest}, n_out=2, consts={"k": np.array([4], np.int64)}, opset=11)
    m = model("TopK", {"x": x, "k": np.array([1], np.int64)}, n_out=2, opset=11)
    with pytest.raises(InvalidArgument, match=r"k 7 must lie in \[0, 6\]"):
        run(m, {"x": x, "k": np.array([7], np.int64)})


def test_unique_unsorted_with_axis():
    # onnx's reference fails on sorted=0 (numpy 2's inverse shape): expected values written out
    x = np.array([[2, 1], [0, 3], [2, 1], [0, 3], [1, 1]], np.int64)
    got = run(model("Unique", {"x": x}, {"axis": 0, "sorted": 0}, n_out=4, opset=11), {"x": x})
    assert [g.tolist() for g in got] == [[[2, 1], [0, 3], [1, 1]], [0, 1, 4], [0, 1, 0, 1, 2], [2, 2, 1]]
    got = run(model("Unique", {"x": x}, {"sorted": 0}, n_out=4, opset=11), {"x": x})
    assert [g.tolist() for g in got] == [[2, 1, 0, 3], [0, 1, 2, 3], [0, 1, 2, 3, 0, 1, 2, 3, 1, 1], [2, 4, 2, 2]]


def test_nonmaxsuppression_score_threshold_and_bad_boxes():
    rng = np.random.default_rng(1)
    corners = rng.uniform(0, 10, (2, 12, 2)).astype(np.float32)
    boxes = np.concatenate([corners, corners + rng.uniform(1, 4, (2, 12, 2)).astype(np.float32)], -1)
    scores = rng.uniform(0, 1, (2, 3, 12)).astype(np.float32)
    consts = {"m": np.array([4], np.int64), "iou": np.array([0.3], np.float32), "s": np.array([0.2], np.float32)}
    check("NonMaxSuppression", {"b": boxes, "s_": scores}, consts=consts, opset=11)
    bad = boxes[..., :3].copy()
    with pytest.raises(InvalidModel, match="boxes must be"):
        run(model("NonMaxSuppression", {"b": bad, "s_": scores}, consts=consts, opset=11), {"b": bad, "s_": scores})


def test_scatter_reductions_duplicates_and_out_of_range():
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    idx = np.array([[1, 1, 0, -1], [2, 2, 2, 2]], np.int64)
    upd = np.ones((2, 4), np.float32) * 3
    for red in ("add", "mul", "max", "min"):
        check("ScatterElements", {"d": data, "i": idx, "u": upd}, {"axis": 0, "reduction": red}, opset=18)
    nd_idx = np.array([[0], [2], [0]], np.int64)
    nd_upd = np.full((3, 4), 2, np.float32)
    for red in ("add", "mul", "max", "min"):
        check("ScatterND", {"d": data, "i": nd_idx, "u": nd_upd}, {"reduction": red}, opset=18)
    m = model("ScatterElements", {"d": data, "i": idx, "u": upd}, opset=18)
    with pytest.raises(InvalidArgument, match="out of range"):
        run(m, {"d": data, "i": idx + 3, "u": upd})
    with pytest.raises(InvalidModel, match="reduction"):
        run(model("ScatterND", {"d": data, "i": nd_idx, "u": nd_upd}, {"reduction": "max"}, opset=16),
            {"d": data, "i": nd_idx, "u": nd_upd})


def test_tensor_scatter_linear_overflow_is_refused():
    cache = np.zeros((2, 5, 3), np.float32)
    upd = np.ones((2, 2, 3), np.float32)
    m = model("TensorScatter", {"c": cache, "u": upd, "w": np.array([0, 0], np.int64)}, {"axis": 1}, opset=24)
    with pytest.raises(InvalidArgument, match="runs past the cache length 5"):
        run(m, {"c": cache, "u": upd, "w": np.array([1, 4], np.int64)})


def test_cumsum_empty_axis_and_exclusive_reverse():
    for x in (np.zeros((2, 0), np.float32), np.arange(1, 7, dtype=np.int32).reshape(2, 3)):
        check("CumSum", {"x": x}, {"exclusive": 1, "reverse": 1}, consts={"a": np.array(1, np.int64)}, opset=14)


def test_dft_axis_and_bad_axis():
    x = np.random.default_rng(2).standard_normal((2, 6, 5, 2)).astype(np.float32)
    check("DFT", {"x": x}, {"onesided": 0}, consts={"n": np.array(8, np.int64), "a": np.array(2, np.int64)},
          opset=20)
    with pytest.raises(InvalidModel, match="last"):
        run(model("DFT", {"x": x}, consts={"n": np.array(8, np.int64), "a": np.array(-1, np.int64)}, opset=20),
            {"x": x})


def test_tfidf_bad_pool_counts():
    x = np.array([[1, 2, 3]], np.int64)
    attrs = {"mode": "TF", "min_gram_length": 1, "max_gram_length": 2, "max_skip_count": 0,
             "ngram_counts": [0, 9], "ngram_indexes": [0, 1], "pool_int64s": [1, 2]}
    with pytest.raises(InvalidModel, match="ngram_counts"):
        run(model("TfIdfVectorizer", {"x": x}, attrs, opset=9), {"x": x})


def test_label_encoder_numeric_map():
    x = np.array([[1, 2], [7, 5]], np.int64)
    node = helper.make_node("LabelEncoder", ["x"], ["y"], domain="ai.onnx.ml", keys_int64s=[1, 5, 7],
                            values_floats=[0.5, 1.5, 2.5], default_float=9.0)
    graph = helper.make_graph([node], "t", [helper.make_tensor_value_info("x", TensorProto.INT64, [2, 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("ai.onnx.ml", 4)])
    m.ir_version = 10
    (y,) = run(m, {"x": x})
    assert y.dtype == np.float32 and y.tolist() == [[0.5, 9.0], [2.5, 1.5]]
    attrs = m.graph.node[0].attribute      # keys without values
    del attrs[[a.name for a in attrs].index("values_floats")]
    with pytest.raises(InvalidModel, match="exactly one keys_\\* and one values_\\*"):
        run(m, {"x": x})
