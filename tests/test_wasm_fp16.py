"""float16 models on WASM alone (numpy fallback disabled) against onnxruntime, in the forms people
make them: onnxconverter-common's convert_float_to_float16 (keep_io_types False and True, and with
an op_block_list that leaves Softmax/LayerNormalization in float32 between Cast pairs) and
onnxruntime.transformers' OnnxModel.convert_float_to_float16, of a small BERT-style encoder with
symbolic dims, an embedding Gather, a Gemm head, the shape-derived Cast -> Sqrt -> Div scale that
Optimum's exports carry, and a key cache fed in and returned (float16 when keep_io_types is False).

nnwasm computes in float32 (optimizer/fp16.py) and keeps the weights as float16 in the plan
(wasm/lower/half.py: gemm_packed_f16, Gather of halves): the plan's bytes are about half the
float32 model's, and a MatMul by float16 weights gives the float32 model's bits on the widened
weights."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import nnwasm
from test_wasm_ops import WASM_ONLY, wasm_only_options

onnxconverter_common = pytest.importorskip("onnxconverter_common")
pytest.importorskip("onnxruntime")
H, V, F, C, HEADS = 64, 500, 256, 10, 1


def _w(rng, *shape, scale=0.1):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def encoder(seed=0, cast_scale=True):
    """An fp32 BERT-style layer: [batch, seq] ids and a [batch, past, H] key cache in; hidden
    states, Gemm logits of the first token and the present keys out. Symbolic batch/seq/past.
    cast_scale: the attention scale from the shape through a Cast to float, as Optimum exports
    it (onnxconverter-common turns that Cast's output type to float16 and not the Cast, a model
    onnxruntime refuses: its forms get a constant scale)."""
    rng = np.random.default_rng(seed)
    inits = {"emb": _w(rng, V, H, scale=1.0), "ln_g": 1 + _w(rng, H), "ln_b": _w(rng, H),
             "wq": _w(rng, H, H), "bq": _w(rng, H), "wk": _w(rng, H, H), "bk": _w(rng, H),
             "wv": _w(rng, H, H), "bv": _w(rng, H), "wo": _w(rng, H, H), "bo": _w(rng, H),
             "w1": _w(rng, H, F), "b1": _w(rng, F), "w2": _w(rng, F, H), "b2": _w(rng, H),
             "ln2_g": 1 + _w(rng, H), "ln2_b": _w(rng, H), "wc": _w(rng, C, H), "bc": _w(rng, C),
             "one": np.array(1.0, np.float32), "half": np.array(0.5, np.float32),
             "rsqrt2": np.array(1 / np.sqrt(2), np.float32), "idx_m1": np.array([-1], np.int64),
             "zero": np.array(0, np.int64)}
    if not cast_scale:
        inits["scale"] = np.array(1 / np.sqrt(H), np.float32)
    def n(op, ins, outs, **attrs):   # named, as exporters name them (converters name Casts after them)
        return helper.make_node(op, ins, outs, name=f"/{op}_{outs[0]}", **attrs)
    nodes = [
        n("Gather", ["emb", "ids"], ["e"]),
        n("LayerNormalization", ["e", "ln_g", "ln_b"], ["x"], axis=-1, epsilon=1e-5),
        *[m for p in "qkv" for m in (n("MatMul", ["x", f"w{p}"], [f"{p}0"]), n("Add", [f"{p}0", f"b{p}"], [p]))],
        n("Concat", ["past_key", "k"], ["kcat"], axis=1), n("Identity", ["kcat"], ["present_key"]),
        n("Transpose", ["kcat"], ["kt"], perm=[0, 2, 1]),
        n("MatMul", ["q", "kt"], ["s0"]),
        # Optimum's scale: the head size from the shape, as float, through Sqrt and a reciprocal
        *([n("Shape", ["q"], ["qs"]), n("Gather", ["qs", "idx_m1"], ["hd"]),
           n("Cast", ["hd"], ["hdf"], to=TensorProto.FLOAT), n("Sqrt", ["hdf"], ["sq"]),
           n("Div", ["one", "sq"], ["scale"])] if cast_scale else []),
        n("Mul", ["s0", "scale"], ["s"]),
        n("Softmax", ["s"], ["p"], axis=-1),
        n("Concat", ["past_key", "v"], ["vv"], axis=1),
        n("MatMul", ["p", "vv"], ["a"]),
        n("MatMul", ["a", "wo"], ["o0"]), n("Add", ["o0", "bo"], ["o1"]), n("Add", ["o1", "x"], ["r1"]),
        n("MatMul", ["r1", "w1"], ["f0"]), n("Add", ["f0", "b1"], ["f1"]),
        n("Mul", ["f1", "rsqrt2"], ["g0"]), n("Erf", ["g0"], ["g1"]), n("Add", ["g1", "one"], ["g2"]),
        n("Mul", ["f1", "g2"], ["g3"]), n("Mul", ["g3", "half"], ["g"]),
        n("MatMul", ["g", "w2"], ["f2"]), n("Add", ["f2", "b2"], ["f3"]), n("Add", ["f3", "r1"], ["r2"]),
        n("LayerNormalization", ["r2", "ln2_g", "ln2_b"], ["h2"], axis=-1, epsilon=1e-5),
        n("Identity", ["h2"], ["hidden"]),   # (onnxconverter-common's keep_io_types mistypes an
        n("Gather", ["h2", "zero"], ["cls"], axis=1),   # output that other nodes read)
        n("Gemm", ["cls", "wc", "bc"], ["logits"], transB=1),
    ]
    f = TensorProto.FLOAT
    g = helper.make_graph(
        nodes, "enc",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", "seq"]),
         helper.make_tensor_value_info("past_key", f, ["batch", "past", H])],
        [helper.make_tensor_value_info("hidden", f, ["batch", "seq", H]),
         helper.make_tensor_value_info("logits", f, ["batch", C]),
         helper.make_tensor_value_info("present_key", f, ["batch", "total", H])],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def occ(keep_io_types, block=False):
    from onnxconverter_common import float16
    kw = {"op_block_list": float16.DEFAULT_OP_BLOCK_LIST + ["Softmax", "LayerNormalization"]} if block else {}
    return lambda m: float16.convert_float_to_float16(m, keep_io_types=keep_io_types, **kw)


def _occ_model(form):
    return not form.startswith("ort")


def ort_fp16(keep_io_types):
    def convert(m):
        from onnxruntime.transformers.onnx_model import OnnxModel
        om = OnnxModel(m)
        om.convert_float_to_float16(keep_io_types=keep_io_types)
        om.topological_sort()   # as its save_model_to_file does (the Casts it adds come last)
        return om.model
    return convert


FORMS = {"occ": occ(False), "occ_keep_io": occ(True), "occ_block_list": occ(True, block=True),
         "ort_transformers": ort_fp16(False), "ort_transformers_keep_io": ort_fp16(True)}


def feeds(session, batch=2, seq=5, past=3, seed=1):
    rng = np.random.default_rng(seed)
    dt = {i.name: i.type for i in session.get_inputs()}
    return {"ids": rng.integers(0, V, (batch, seq)).astype(np.int64),
            "past_key": rng.standard_normal((batch, past, H)).astype(
                np.float16 if dt["past_key"] == "tensor(float16)" else np.float32)}


def _plan_bytes(sess):
    return sum(r.plan_bytes for p in sess._cache.values() for r in p.runners if hasattr(r, "plan_bytes"))


def _kernels(sess):
    return {op.kernel for p in sess._cache.values() for r in p.runners for op in getattr(r, "ops", None) or ()}


@pytest.mark.parametrize("form", FORMS)
def test_fp16_forms_against_onnxruntime(form):
    import onnxruntime
    m16 = FORMS[form](encoder(cast_scale=not _occ_model(form))).SerializeToString()
    ort = onnxruntime.InferenceSession(m16, providers=["CPUExecutionProvider"])
    sess = nnwasm.InferenceSession(m16, wasm_only_options(), providers=WASM_ONLY)
    assert [(i.name, i.type) for i in sess.get_inputs()] == [(i.name, i.type) for i in ort.get_inputs()]
    for shape in ((2, 5, 3), (1, 1, 7)):   # a prompt, then a decode step with a longer cache
        f = feeds(ort, *shape)
        want, got = ort.run(None, f), sess.run(None, f)
        for name, g, w in zip(("hidden", "logits", "present_key"), got, want):
            assert g.dtype == w.dtype and g.shape == w.shape, name
            # onnxruntime computes in float16, nnwasm in float32: float16 rounding apart
            np.testing.assert_allclose(g.astype(np.float32), w.astype(np.float32), atol=2e-2, rtol=2e-2,
                                       err_msg=f"{form}: {name}")
    assert {p for _, _, p in sess.get_provider_assignment()} == {"WasmExecutionProvider"}
    assert "gemm_packed_f16" in _kernels(sess)


@pytest.mark.parametrize("form", ["occ", "occ_keep_io", "ort_transformers"])
def test_fp16_plan_holds_half_the_weight_bytes(form):
    m32 = encoder(cast_scale=not _occ_model(form))
    m16 = FORMS[form](encoder(cast_scale=not _occ_model(form))).SerializeToString()
    f = feeds(nnwasm.InferenceSession(m16, wasm_only_options(), providers=WASM_ONLY))
    s32 = nnwasm.InferenceSession(m32.SerializeToString(), wasm_only_options(), providers=WASM_ONLY)
    s16 = nnwasm.InferenceSession(m16, wasm_only_options(), providers=WASM_ONLY)
    s32.run(None, {"ids": f["ids"], "past_key": f["past_key"].astype(np.float32)})
    s16.run(None, f)
    weights32 = sum(t.nbytes for t in (numpy_helper.to_array(i) for i in m32.graph.initializer))
    b32, b16 = _plan_bytes(s32), _plan_bytes(s16)
    assert b32 > weights32   # the float32 plan holds every weight
    # the big weights (embedding, projections, FFN, head) as halves; biases and norms stay float32
    assert b16 < 0.55 * b32, (b16, b32)


def _matmul_model(w, dtype, m_rows, gemm=False):
    f = TensorProto.FLOAT16 if dtype == np.float16 else TensorProto.FLOAT
    k, n = w.shape
    node = (helper.make_node("Gemm", ["x", "w"], ["y"], transB=1) if gemm
            else helper.make_node("MatMul", ["x", "w"], ["y"]))
    wt = w.T.copy() if gemm else w
    g = helper.make_graph([node], "mm", [helper.make_tensor_value_info("x", f, [m_rows, k])],
                          [helper.make_tensor_value_info("y", f, [m_rows, n])],
                          [numpy_helper.from_array(wt.astype(dtype), "w")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m.SerializeToString()


@pytest.mark.parametrize("m_rows", [1, 3, 4, 37])
def test_fp16_matmul_is_fp32_bits_on_the_widened_weights(m_rows):
    """gemm_packed_f16 sums as gemm_packed does: a float16 MatMul with keep-io float32 casts
    gives the float32 model's bits when fed the same float16-exact inputs."""
    rng = np.random.default_rng(m_rows)
    w = (rng.standard_normal((72, 45)) * 0.1).astype(np.float16)
    w[0, :4] = [6e-8, -6e-8, 0, 65504]   # a subnormal, its negative, zero, the largest half
    x = rng.standard_normal((m_rows, 72)).astype(np.float16)
    m32 = _matmul_model(w.astype(np.float32), np.float32, m_rows)
    g = helper.make_graph(   # keep_io_types' form: float32 in and out, Casts around a float16 MatMul
        [helper.make_node("Cast", ["x"], ["x16"], to=TensorProto.FLOAT16),
         helper.make_node("MatMul", ["x16", "w"], ["y16"]),
         helper.make_node("Cast", ["y16"], ["y"], to=TensorProto.FLOAT)], "mm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m_rows, 72])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m_rows, 45])], [numpy_helper.from_array(w, "w")])
    m16 = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8).SerializeToString()
    s16 = nnwasm.InferenceSession(m16, wasm_only_options(), providers=WASM_ONLY)
    s32 = nnwasm.InferenceSession(m32, wasm_only_options(), providers=WASM_ONLY)
    got = s16.run(None, {"x": x.astype(np.float32)})[0]
    want = s32.run(None, {"x": x.astype(np.float32)})[0]
    assert "gemm_packed_f16" in _kernels(s16) and "gemm_packed" in _kernels(s32)
    assert got.tobytes() == want.tobytes()


def test_fp16_gemm_and_io():
    """A float16 Gemm (transB) with float16 input and output: on gemm_packed_f16, against onnxruntime."""
    import onnxruntime
    rng = np.random.default_rng(5)
    w = (rng.standard_normal((96, 40)) * 0.1).astype(np.float16)
    m = _matmul_model(w, np.float16, 6, gemm=True)
    x = rng.standard_normal((6, 96)).astype(np.float16)
    sess = nnwasm.InferenceSession(m, wasm_only_options(), providers=WASM_ONLY)
    got = sess.run(None, {"x": x})[0]
    want = onnxruntime.InferenceSession(m, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert got.dtype == np.float16 and "gemm_packed_f16" in _kernels(sess)
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), atol=5e-3, rtol=5e-3)


def test_fp16_weights_with_inf_keep_float32_panels():
    """Halves holding inf/NaN are never stored as halves (gemm_packed_f16 widens finite ones
    only): such a B keeps its float32 panels, and the result is still onnxruntime's."""
    import onnxruntime
    rng = np.random.default_rng(2)
    w = (rng.standard_normal((16, 8)) * 0.1).astype(np.float16)
    w[3, 2] = np.inf
    m = _matmul_model(w, np.float16, 4)
    x = np.abs(rng.standard_normal((4, 16))).astype(np.float16)
    sess = nnwasm.InferenceSession(m, wasm_only_options(), providers=WASM_ONLY)
    got = sess.run(None, {"x": x})[0]
    want = onnxruntime.InferenceSession(m, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert "gemm_packed_f16" not in _kernels(sess) and np.isinf(got[:, 2]).all()
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), atol=5e-3, rtol=5e-3)


def test_widening_without_numpy_is_the_same(monkeypatch):
    """to_f32 widens with numpy where it is importable, with struct where not (Pyodide): the same
    bytes, and the halves kept."""
    import sys
    from nnwasm import dtypes
    from nnwasm.optimizer.fp16 import to_f32
    from nnwasm.tensor import TensorData
    h = np.array([0, -0.0, 6e-8, -6e-5, 1.5, -65504, np.inf, -np.inf], np.float16)
    t = TensorData(dtypes.BY_NAME["float16"], h.shape, h.tobytes())
    with_numpy = to_f32(t)
    monkeypatch.setitem(sys.modules, "numpy", None)
    without = to_f32(t)
    assert bytes(with_numpy.data) == bytes(without.data) == h.astype(np.float32).tobytes()
    assert without.half is t
