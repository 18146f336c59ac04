"""The random ops (RandomNormal/RandomUniform and their -Like forms, Bernoulli, Multinomial: ops/random.py)
and the last ai.onnx ops the numpy provider gained with them: GlobalLpPool, MaxRoiPool and Scan-8.

Random ops: shapes, dtypes, seeded nodes repeat their values, unseeded ones differ, values lie in range
with roughly the right statistics. onnx's reference evaluator implements neither GlobalLpPool, MaxRoiPool
nor Scan-8, so those are compared with onnxruntime (the oracle test_ort_api.py uses too)."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402

import nnwasm  # noqa: E402
from nnwasm.errors import InvalidArgument, InvalidModel  # noqa: E402

F = TensorProto.FLOAT
NUMPY = ["NumpyExecutionProvider"]


def model(nodes, ins, outs, opset=21, inits=()):
    g = helper.make_graph(nodes, "t", ins, outs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 10
    try:   # untyped outputs get onnx's inferred types; where onnx can't infer (bad attributes), float
        inferred = {v.name: v for v in onnx.shape_inference.infer_shapes(m).graph.value_info}
    except Exception:
        inferred = {}
    for o in m.graph.output:
        if not o.type.HasField("tensor_type"):
            o.CopyFrom(inferred.get(o.name) or helper.make_tensor_value_info(o.name, F, None))
    return m.SerializeToString()


def one(op_type, ins, out_type=None, out_shape=None, opset=21, **attrs):
    """One node over graph inputs ins ([(name, elem type, shape)]), output y left untyped unless given."""
    node = helper.make_node(op_type, [n for n, _, _ in ins], ["y"], **attrs)
    y = (helper.make_tensor_value_info("y", out_type, out_shape) if out_type is not None
         else helper.make_empty_tensor_value_info("y"))
    return model([node], [helper.make_tensor_value_info(*i) for i in ins], [y], opset)


def sess(m, providers=NUMPY):
    return nnwasm.InferenceSession(m, providers=list(providers))


# --- RandomNormal / RandomUniform -----------------------------------------------------------------

@pytest.mark.parametrize("opset", [15, 22])
def test_random_normal_and_uniform_shapes_dtypes_statistics(opset):
    for op_type, extra in (("RandomNormal", {"mean": 3.0, "scale": 2.0}),
                           ("RandomUniform", {"low": -1.0, "high": 5.0})):
        for dt, np_dt, name in ((TensorProto.FLOAT, np.float32, "float"), (TensorProto.DOUBLE, np.float64, "double"),
                                (TensorProto.FLOAT16, np.float16, "float16")):
            s = sess(one(op_type, [], opset=opset, shape=[200, 50], dtype=dt, **extra))
            assert s.get_outputs()[0].shape == [200, 50]
            assert s.get_outputs()[0].type == f"tensor({name})"
            (y,) = s.run(None, {})
            assert y.dtype == np_dt and y.shape == (200, 50)
            y = y.astype(np.float64)
            if op_type == "RandomNormal":
                assert abs(y.mean() - 3.0) < 0.1 and abs(y.std() - 2.0) < 0.1
            else:
                assert y.min() >= -1.0 and y.max() <= 5.0 and abs(y.mean() - 2.0) < 0.1
                assert abs(y.std() - 6 / np.sqrt(12)) < 0.1


def test_random_seeded_repeats_unseeded_differs():
    seeded = sess(one("RandomUniform", [], shape=[64], seed=7.0))
    a, b = seeded.run(None, {})[0], seeded.run(None, {})[0]
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, sess(one("RandomUniform", [], shape=[64], seed=7.0)).run(None, {})[0])
    assert not np.array_equal(a, sess(one("RandomUniform", [], shape=[64], seed=8.0)).run(None, {})[0])
    free = sess(one("RandomNormal", [], shape=[64]))
    assert not np.array_equal(free.run(None, {})[0], free.run(None, {})[0])
    assert free.run(None, {})[0].dtype == np.float32   # dtype defaults to float


def test_set_seed_makes_unseeded_ops_reproducible():
    from nnwasm.ortapi import _state
    saved = dict(_state)
    try:
        free = sess(one("RandomUniform", [], shape=[16]))
        nnwasm.set_seed(11)
        a = [free.run(None, {})[0] for _ in range(2)]
        nnwasm.set_seed(11)
        b = [free.run(None, {})[0] for _ in range(2)]
        assert not np.array_equal(a[0], a[1])   # the generator advances run after run
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[1], b[1])
    finally:
        _state.clear()
        _state.update(saved)


def test_random_like_takes_shape_and_type_from_input():
    x = np.zeros((3, 4, 5), np.float64)
    s = sess(one("RandomNormalLike", [("x", TensorProto.DOUBLE, [3, 4, 5])], seed=1.0))
    assert s.get_outputs()[0].shape == [3, 4, 5] and s.get_outputs()[0].type == "tensor(double)"
    (y,) = s.run(None, {"x": x})
    assert y.shape == x.shape and y.dtype == np.float64
    (y,) = sess(one("RandomUniformLike", [("x", TensorProto.DOUBLE, [3, 4, 5])], dtype=TensorProto.FLOAT16,
                    low=2.0, high=3.0)).run(None, {"x": x})
    assert y.dtype == np.float16 and y.shape == x.shape and 2 <= y.min() and y.max() <= 3


def test_random_bad_attributes():
    with pytest.raises(InvalidModel, match="lacks attribute 'shape'"):
        sess(one("RandomNormal", []))
    with pytest.raises(InvalidModel, match="negative dim"):
        sess(one("RandomNormal", [], shape=[2, -1]))
    with pytest.raises(InvalidModel, match=r"output 'y' is tensor\(int32\), which ai.onnx's RandomUniform does not accept"):
        sess(one("RandomUniform", [], shape=[2], dtype=TensorProto.INT32))
    with pytest.raises(InvalidModel, match="low 2.0 must be <= high 1.0"):
        sess(one("RandomUniform", [], shape=[2], low=2.0, high=1.0))
    with pytest.raises(InvalidModel, match="scale -1.0 must be >= 0"):
        sess(one("RandomNormal", [], shape=[2], scale=-1.0))
    with pytest.raises(InvalidModel, match=r"output 'y' is tensor\(int64\)"):
        sess(one("RandomNormalLike", [("x", TensorProto.INT64, [2])]))


# --- Bernoulli ------------------------------------------------------------------------------------

@pytest.mark.parametrize("opset", [15, 22])
def test_bernoulli(opset):
    p = np.array([0.0, 1.0, 0.25, 0.75] * 5000, np.float32)
    s = sess(one("Bernoulli", [("p", F, [p.size])], opset=opset))
    assert s.get_outputs()[0].type == "tensor(float)"
    (y,) = s.run(None, {"p": p})
    assert y.dtype == np.float32 and set(np.unique(y)) <= {0.0, 1.0}
    y = y.reshape(-1, 4)
    assert (y[:, 0] == 0).all() and (y[:, 1] == 1).all()
    assert abs(y[:, 2].mean() - 0.25) < 0.03 and abs(y[:, 3].mean() - 0.75) < 0.03
    (b,) = sess(one("Bernoulli", [("p", F, [p.size])], opset=opset, dtype=TensorProto.BOOL)).run(None, {"p": p})
    assert b.dtype == np.bool_ and b.shape == p.shape
    seeded = sess(one("Bernoulli", [("p", F, [p.size])], opset=opset, seed=3.0, dtype=TensorProto.INT32))
    a = seeded.run(None, {"p": p})[0]
    assert a.dtype == np.int32
    np.testing.assert_array_equal(a, seeded.run(None, {"p": p})[0])
    with pytest.raises(InvalidArgument, match=r"\[0, 1\]"):
        s.run(None, {"p": np.array([1.5], np.float32).repeat(p.size)})
    with pytest.raises(InvalidModel, match=r"input \'p\' is tensor\(int64\)"):
        sess(one("Bernoulli", [("p", TensorProto.INT64, [2])], opset=opset))


# --- Multinomial ----------------------------------------------------------------------------------

def test_multinomial():
    probs = np.array([[0.1, 0.2, 0.7], [1.0, 0.0, 0.0]], np.float32)
    logits = np.log(np.maximum(probs, 1e-30)).astype(np.float32)
    s = sess(one("Multinomial", [("x", F, [2, 3])], sample_size=20000, seed=5.0))
    assert s.get_outputs()[0].shape == [2, 20000] and s.get_outputs()[0].type == "tensor(int32)"
    (y,) = s.run(None, {"x": logits})
    assert y.dtype == np.int32 and y.shape == (2, 20000) and 0 <= y.min() and y.max() <= 2
    np.testing.assert_allclose(np.bincount(y[0], minlength=3) / y.shape[1], probs[0], atol=0.02)
    assert (y[1] == 0).all()
    np.testing.assert_array_equal(y, s.run(None, {"x": logits})[0])
    (y64,) = sess(one("Multinomial", [("x", F, [2, 3])], dtype=TensorProto.INT64)).run(None, {"x": logits})
    assert y64.dtype == np.int64 and y64.shape == (2, 1)
    with pytest.raises(InvalidModel, match="sample_size 0"):
        sess(one("Multinomial", [("x", F, [2, 3])], sample_size=0))
    with pytest.raises(InvalidModel, match=r"Multinomial does not accept"):
        sess(one("Multinomial", [("x", F, [2, 3])], dtype=TensorProto.FLOAT))
    with pytest.raises(InvalidModel, match=r"\[batch_size, class_size\]"):
        sess(one("Multinomial", [("x", F, [2, 3, 4])], TensorProto.INT32))


# --- GlobalLpPool, MaxRoiPool (against onnxruntime) -------------------------------------------------

def both(m, feeds):
    want = ort.InferenceSession(m, providers=["CPUExecutionProvider"]).run(None, feeds)
    got = sess(m).run(None, feeds)
    s = sess(m)
    for g, w, o in zip(got, want, s.get_outputs()):
        assert g.dtype == w.dtype and g.shape == w.shape and list(o.shape) == list(w.shape)
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("opset,p", [(1, 3.0), (2, 3), (2, None), (22, 1)])
def test_global_lp_pool(opset, p):
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 5)).astype(np.float32)
    attrs = {} if p is None else {"p": p}
    m = one("GlobalLpPool", [("x", F, list(x.shape))], opset=opset, **attrs)
    if opset == 2:   # onnxruntime implements GlobalLpPool-2 only
        both(m, {"x": x})
    q = 2 if p is None else p
    (y,) = sess(m).run(None, {"x": x})
    assert y.dtype == np.float32 and y.shape == (2, 3, 1, 1) and sess(m).get_outputs()[0].shape == [2, 3, 1, 1]
    np.testing.assert_allclose(y, (np.abs(x.astype(np.float64)) ** q).sum(axis=(2, 3), keepdims=True) ** (1 / q),
                               rtol=1e-5)
    with pytest.raises(InvalidModel, match="p -1"):
        sess(one("GlobalLpPool", [("x", F, list(x.shape))], opset=max(opset, 2), p=-1))
    with pytest.raises(InvalidModel, match="rank >= 3"):
        sess(one("GlobalLpPool", [("x", F, [2, 3])], opset=opset))


def test_max_roi_pool():
    x = np.random.default_rng(1).standard_normal((2, 3, 8, 10)).astype(np.float32)
    rois = np.array([[0, 0, 0, 9, 7], [1, 2.4, 1.5, 6.6, 5.2], [0, -3, -2, 4, 3], [1, 12, 9, 15, 11],
                     [1, 3, 3, 3, 3]], np.float32)
    for scale, shape in ((1.0, [2, 3]), (0.5, [3, 3]), (1.0, [1, 1])):
        m = one("MaxRoiPool", [("x", F, list(x.shape)), ("rois", F, list(rois.shape))],
                pooled_shape=shape, spatial_scale=scale)
        both(m, {"x": x, "rois": rois})
    ins = [("x", F, list(x.shape)), ("rois", F, list(rois.shape))]
    with pytest.raises(InvalidModel, match="pooled_shape"):
        sess(one("MaxRoiPool", ins))
    with pytest.raises(InvalidModel, match="pooled_shape"):
        sess(one("MaxRoiPool", ins, pooled_shape=[2, 0]))
    with pytest.raises(InvalidModel, match=r"rois needs shape \[num_rois, 5\]"):
        sess(one("MaxRoiPool", [("x", F, list(x.shape)), ("rois", F, [5, 4])], pooled_shape=[2, 2]))
    s = sess(one("MaxRoiPool", ins, pooled_shape=[2, 2]))
    with pytest.raises(InvalidArgument, match="batch index"):
        s.run(None, {"x": x, "rois": np.array([[2, 0, 0, 1, 1]] * 5, np.float32)})


# --- Scan-8 -----------------------------------------------------------------------------------------

def scan8(directions=None, seq_lens=True):
    """Scan-8: state s [B, 2], scan input x [B, T, 2]; body: s' = s + x, out = s' * 2."""
    body = helper.make_graph(
        [helper.make_node("Add", ["s", "x"], ["s2"]), helper.make_node("Mul", ["s2", "two"], ["o"])],
        "body", [helper.make_tensor_value_info("s", F, [2]), helper.make_tensor_value_info("x", F, [2])],
        [helper.make_tensor_value_info("s2", F, [2]), helper.make_tensor_value_info("o", F, [2])],
        [onnx.numpy_helper.from_array(np.array(2, np.float32), "two")])
    attrs = {"body": body, "num_scan_inputs": 1}
    if directions is not None:
        attrs["directions"] = directions
    node = helper.make_node("Scan", ["lens" if seq_lens else "", "s0", "xs"], ["s", "ys"], **attrs)
    ins = [helper.make_tensor_value_info("s0", F, [3, 2]), helper.make_tensor_value_info("xs", F, [3, 4, 2])]
    if seq_lens:
        ins.insert(0, helper.make_tensor_value_info("lens", TensorProto.INT64, [3]))
    return model([node], ins, [helper.make_empty_tensor_value_info("s"), helper.make_empty_tensor_value_info("ys")],
                 opset=8)


def test_scan8_batches_sequence_lens_and_directions():
    rng = np.random.default_rng(2)
    s0 = rng.standard_normal((3, 2)).astype(np.float32)
    xs = rng.standard_normal((3, 4, 2)).astype(np.float32)
    lens = np.array([4, 2, 0], np.int64)
    for directions in (None, [1]):
        m = scan8(directions)
        s = sess(m)
        assert [o.shape for o in s.get_outputs()] == [[3, 2], [3, 4, 2]]
        got = s.run(None, {"lens": lens, "s0": s0, "xs": xs})
        for b in range(3):
            st, want = s0[b].copy(), np.zeros((4, 2), np.float32)
            steps = range(lens[b])[::-1] if directions else range(lens[b])
            for i, t in enumerate(steps):
                st = st + xs[b, t]
                want[i] = st * 2
            np.testing.assert_allclose(got[0][b], st, rtol=1e-6)
            np.testing.assert_allclose(got[1][b], want, rtol=1e-6)
        both(m, {"lens": np.array([4, 2, 1], np.int64), "s0": s0, "xs": xs})   # onnxruntime refuses a 0
    both(scan8(seq_lens=False), {"s0": s0, "xs": xs})
    s = sess(scan8())
    with pytest.raises(InvalidArgument, match="sequence_lens"):
        s.run(None, {"lens": np.array([5, 1, 1], np.int64), "s0": s0, "xs": xs})
    with pytest.raises(InvalidModel, match="directions"):
        sess(scan8(directions=[2]))
    # the default provider list leaves Scan-8 to numpy, with the same answer
    d = nnwasm.InferenceSession(scan8(seq_lens=False))
    np.testing.assert_allclose(d.run(None, {"s0": s0, "xs": xs})[1], sess(scan8(seq_lens=False)).run(
        None, {"s0": s0, "xs": xs})[1])
