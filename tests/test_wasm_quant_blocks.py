"""Block-quantized weights (kernels_c/q4/, wasm/lower/quant_blocks.py, ops/quant_blocks.py) with the
numpy fallback disabled, against the numpy provider and onnxruntime: com.microsoft MatMulNBits
(built with onnx.helper and by onnxruntime's MatMulNBitsQuantizer), GatherBlockQuantized and
DynamicQuantizeMatMul, and quantize_dynamic's int8 MatMul on the int8 kernels.

Tolerances. At accuracy_level 0-3 nnwasm and onnxruntime both compute in float32 on the same
dequantized weights: |y - ref| <= 3e-5 * mag, mag = |A| @ |W|^T (sums in another order; float32's
rounding over K terms). At accuracy_level 4, onnxruntime's CPU kernel quantizes each block of A to
int8 (scale max|a| / 127), and so does q4_matmul (ops/quant_blocks_int8.py says where): each
element of A moves by at most half a step, so both stay within QBOUND = sum over blocks of
max|a_block| / 254 * sum_k |w_k| (plus the float32 term) of the float32 product, which is what
the tests assert, against the numpy reference and against onnxruntime (twice the bound); the
numpy reference and the kernel quantize A as onnxruntime does (decode and prefill alike), so they
are in fact much closer: tests/test_quant_blocks_int8.py holds those tight comparisons."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import nnwasm
from model_builders import ort_run
from test_wasm_ops import WASM_ONLY, wasm_only_options

MS = "com.microsoft"


def model(nodes, inputs, outputs, inits, opset=17):
    g = helper.make_graph(
        nodes, "q", [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
                     for k, v in inputs.items()],
        [helper.make_tensor_value_info(k, t, None) for k, t in outputs.items()],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(MS, 1)])
    m.ir_version = 8
    return m.SerializeToString()


def sessions(m):
    wasm = nnwasm.InferenceSession(m, wasm_only_options(), providers=WASM_ONLY + ["NumpyExecutionProvider"])
    assert {p for _, _, p in wasm.get_provider_assignment()} == {"WasmExecutionProvider"}
    return wasm, nnwasm.InferenceSession(m, providers=["NumpyExecutionProvider"])


def plan_ops(m, shapes=None):
    """The kernels of m's plan file (its symbolic input dims bound by shapes)."""
    from nnwasm import planfile
    return [op.kernel for op in planfile.read(nnwasm.compile_plan(m, shapes)).ops]


def nbits_node(inputs, **attrs):
    return helper.make_node("MatMulNBits", inputs, ["Y"], domain=MS, name="mm_nbits", **attrs)


def random_nbits(rng, k, n, bits, bs, zp_kind):
    """B, scales and zero points (or None) as a quantizer writes them, random."""
    kb = -(-k // bs)
    b = rng.integers(0, 256, (n, kb, bs * bits // 8)).astype(np.uint8)
    scales = (rng.random(n * kb) * 0.05 + 0.005).astype(np.float32)
    zp = {"none": None, "u8": rng.integers(0, 256, (n, -(-kb * bits // 8))).astype(np.uint8),
          "f32": (rng.random(n * kb) * (1 << bits)).astype(np.float32)}[zp_kind]
    return b, scales, zp


def weight_of(node_attrs, b, scales, zp):
    from nnwasm.ops.quant_blocks import nbits_weight
    node = helper.make_node("MatMulNBits", [], [], **node_attrs)

    class N:
        def attr(self, name, default=None):
            for a in node.attribute:
                if a.name == name:
                    return helper.get_attribute_value(a)
            return default
    return nbits_weight(np, N(), b, scales, zp)


def bounds(a, w, bs):
    """(float32 term, int8-A term) per output: 3e-5 * |A| @ |W|^T + 1e-6, and QBOUND (module doc)."""
    a2 = a.reshape(-1, a.shape[-1]).astype(np.float64)
    wt = np.abs(w.astype(np.float64))
    mag = np.abs(a2) @ wt.T
    k = a2.shape[1]
    q = np.zeros_like(mag)
    for k0 in range(0, k, bs):
        amax = np.abs(a2[:, k0:k0 + bs]).max(axis=1, keepdims=True)
        q += amax / 254.0 * wt[:, k0:k0 + bs].sum(axis=1)[None, :]
    shape = a.shape[:-1] + (w.shape[0],)
    return (3e-5 * mag + 1e-6).reshape(shape), q.reshape(shape)


def check_nbits(m, a, w, bs, acc_level):
    wasm, ref = sessions(m)
    (got,), (want,), (oracle,) = wasm.run(None, {"A": a}), ref.run(None, {"A": a}), ort_run(m, {"A": a})
    assert got.shape == want.shape == oracle.shape and got.dtype == np.float32
    f, q = bounds(a, w, bs)
    assert (np.abs(want - oracle) <= f + (q if acc_level == 4 else 0)).all()
    assert (np.abs(got - want) <= f + (q if acc_level == 4 else 0)).all()
    assert (np.abs(got - oracle) <= f + (2 * q if acc_level == 4 else 0)).all()
    return got, oracle


# ---- MatMulNBits built with onnx.helper ---------------------------------------------------------

@pytest.mark.parametrize("bits,zp_kind,bs", [(4, "none", 32), (4, "u8", 16), (4, "u8", 64), (4, "f32", 128),
                                             (4, "u8", 256), (8, "u8", 32), (8, "none", 128), (2, "u8", 16),
                                             (2, "f32", 64)])
@pytest.mark.parametrize("shape", [(1, 1), (2, 3), (1, 7), (128,)])
def test_matmul_nbits_helper(bits, zp_kind, bs, shape):
    """Every width, block size and zero-point form; K and N not multiples of the block or of 4;
    A with batch dims; decode rows (GEMV) and prefill (gemm_packed on dequantized panels)."""
    rng = np.random.default_rng(bits * 1000 + bs + len(shape))
    k, n = 200, 75
    b, scales, zp = random_nbits(rng, k, n, bits, bs, zp_kind)
    attrs = dict(K=k, N=n, bits=bits, block_size=bs)
    inits = {"B": b, "s": scales, "bias": rng.standard_normal(n).astype(np.float32)}
    inputs = ["A", "B", "s", "", "", "bias"]
    if zp is not None:
        inits["z"] = zp
        inputs[3] = "z"
    a = rng.standard_normal((*shape, k)).astype(np.float32)
    m = model([nbits_node(inputs, **attrs)], {"A": a}, {"Y": TensorProto.FLOAT}, inits)
    check_nbits(m, a, weight_of(attrs, b, scales, zp), bs, 0)


def test_matmul_nbits_trivial_g_idx_and_bits_identical_rows():
    """A g_idx that is k // block_size is the plain layout (run on WASM); each row of A gives the
    same bits alone as inside a batch of 3 (the GEMV takes rows one at a time)."""
    rng = np.random.default_rng(5)
    k, n, bs = 96, 40, 32
    b, scales, zp = random_nbits(rng, k, n, 4, bs, "f32")
    inits = {"B": b, "s": scales, "z": zp, "g": (np.arange(k) // bs).astype(np.int32)}
    a = rng.standard_normal((3, k)).astype(np.float32)
    m = model([nbits_node(["A", "B", "s", "z", "g"], K=k, N=n, bits=4, block_size=bs)], {"A": a},
              {"Y": TensorProto.FLOAT}, inits)
    check_nbits(m, a, weight_of(dict(K=k, N=n, bits=4, block_size=bs), b, scales, zp), bs, 0)
    wasm, _ = sessions(m)
    whole = wasm.run(None, {"A": a})[0]
    m1 = model([nbits_node(["A", "B", "s", "z", "g"], K=k, N=n, bits=4, block_size=bs)], {"A": a[:1]},
               {"Y": TensorProto.FLOAT}, inits)
    one = sessions(m1)[0]
    for i in range(3):
        assert one.run(None, {"A": a[i:i + 1]})[0].tobytes() == whole[i:i + 1].tobytes()


@pytest.mark.parametrize("bs", [32, 128])
@pytest.mark.parametrize("rows", [1, 4, 7])
def test_matmul_nbits_accuracy_level_4(bs, rows):
    """accuracy_level 4: A quantized to int8 per block as onnxruntime does, decode and prefill;
    within QBOUND of float32, and much closer to onnxruntime than that bound."""
    rng = np.random.default_rng(bs + rows)
    k, n = 512, 96
    b, scales, zp = random_nbits(rng, k, n, 4, bs, "u8")
    attrs = dict(K=k, N=n, bits=4, block_size=bs, accuracy_level=4)
    a = rng.standard_normal((rows, k)).astype(np.float32)
    m = model([nbits_node(["A", "B", "s", "z"], **attrs)], {"A": a}, {"Y": TensorProto.FLOAT},
              {"B": b, "s": scales, "z": zp})
    got, oracle = check_nbits(m, a, weight_of(attrs, b, scales, zp), bs, 4)
    f, q = bounds(a, weight_of(attrs, b, scales, zp), bs)   # onnxruntime's arithmetic: far inside
    assert np.abs(got - oracle).max() < 1e-3 * q.max()
    assert "q4_matmul" in plan_ops(m)


# ---- MatMulNBits from onnxruntime's quantizer ---------------------------------------------------

def quantized_matmul_model(k, n, bs, symmetric, acc_level, rank=2, seed=0):
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer
    rng = np.random.default_rng(seed + k + n)
    w = (rng.standard_normal((k, n)) * 0.05).astype(np.float32)
    a_shape = [1] * (rank - 2) + ["M", k]
    g = helper.make_graph([helper.make_node("MatMul", ["A", "W"], ["Y"], name="mm")], "f",
                          [helper.make_tensor_value_info("A", TensorProto.FLOAT, a_shape)],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(w, "W")])
    f = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    f.ir_version = 8
    q = MatMulNBitsQuantizer(f, block_size=bs, is_symmetric=symmetric, accuracy_level=acc_level)
    q.process()
    out = q.model.model
    assert [nd.op_type for nd in out.graph.node] == ["MatMulNBits"]
    return out.SerializeToString()


def node_weight(m):
    import onnx
    from onnx import numpy_helper as nh
    mp = onnx.load_from_string(m)
    node = mp.graph.node[0]
    inits = {t.name: nh.to_array(t) for t in mp.graph.initializer}
    ins = [inits.get(i) if i else None for i in node.input]
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    return weight_of(attrs, ins[1], ins[2], ins[3] if len(ins) > 3 else None), attrs


@pytest.mark.parametrize("k,n,bs", [(64, 64, 16), (768, 256, 32), (768, 768, 64), (2048, 768, 128),
                                    (768, 2048, 256), (200, 130, 64), (1000, 96, 128)])
@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize("acc_level", [0, 4])
@pytest.mark.parametrize("rows", [1, 7])
def test_matmul_nbits_quantizer(k, n, bs, symmetric, acc_level, rows):
    """MatMulNBitsQuantizer's 4-bit models (symmetric: no zero points; asymmetric: packed uint8)
    on the shapes decoders use, decode (1 row) and a short prefill (7 rows)."""
    if (k, n) in ((2048, 768), (768, 2048)) and (symmetric or acc_level) and rows > 1:
        pytest.skip("the big shapes once per form: the machine is shared")
    m = quantized_matmul_model(k, n, bs, symmetric, acc_level, rank=3)
    w, attrs = node_weight(m)
    assert attrs["block_size"] == bs and attrs.get("accuracy_level", 0) == acc_level
    a = np.random.default_rng(k + rows).standard_normal((1, rows, k)).astype(np.float32)
    check_nbits(m, a, w, bs, acc_level)


def test_matmul_nbits_prefill_128_and_weights_stay_packed():
    """128 rows of prefill; the plan carries B as shipped (uint8 blocks): the plan file is a
    fraction of the float32 weight's bytes, and no op dequantizes B into a plan tensor."""
    k, n, bs = 768, 512, 32
    m = quantized_matmul_model(k, n, bs, False, 0, rank=2)
    w, _ = node_weight(m)
    a = np.random.default_rng(1).standard_normal((128, k)).astype(np.float32)
    check_nbits(m, a, w, bs, 0)
    plan = nnwasm.compile_plan(m, {"A": [128, k]})
    assert len(plan) < k * n * 4 // 5, (len(plan), k * n * 4)
    assert plan_ops(m, {"A": [128, k]}) == ["q4_matmul"]


# ---- malformed MatMulNBits: clear errors naming the node ------------------------------------------

@pytest.mark.parametrize("what,attrs,b_shape,scales_n,zp_shape,match", [
    ("block size 48", dict(block_size=48), (8, 2, 24), 16, None, "block_size 48 is not a power of two"),
    ("block size 8", dict(block_size=8), (8, 8, 4), 64, None, "block_size 8"),
    ("B too short", dict(), (8, 1, 16), 16, None, "B has shape"),
    ("scales too many", dict(), (8, 2, 16), 17, None, "scales has 17 elements"),
    ("zero points too few", dict(), (8, 2, 16), 16, (8, 0), "packed zero_points has 0 elements"),
    ("bits 3", dict(bits=3), (8, 2, 12), 16, None, "3-bit"),
])
def test_matmul_nbits_malformed(what, attrs, b_shape, scales_n, zp_shape, match):
    full = dict(K=64, N=8, bits=4, block_size=32)
    full.update(attrs)
    inits = {"B": np.zeros(b_shape, np.uint8), "s": np.ones(scales_n, np.float32)}
    ins = ["A", "B", "s"]
    if zp_shape:
        inits["z"] = np.zeros(zp_shape, np.uint8)
        ins.append("z")
    a = np.ones((1, 64), np.float32)
    m = model([nbits_node(ins, **full)], {"A": a}, {"Y": TensorProto.FLOAT}, inits)
    for providers in (WASM_ONLY, ["NumpyExecutionProvider"]):
        with pytest.raises(Exception, match=match) as err:
            nnwasm.InferenceSession(m, providers=providers)
        assert "mm_nbits" in str(err.value)


def test_matmul_nbits_refusal_reason():
    """A g_idx that reorders K runs on numpy; WASM alone refuses it, saying why. With packed
    uint8 zero points, a g_idx is refused by both providers (onnxruntime ignores the zero points)."""
    rng = np.random.default_rng(3)
    k, n, bs = 64, 16, 32
    b, scales, zp = random_nbits(rng, k, n, 4, bs, "u8")
    m = model([nbits_node(["A", "B", "s", "z", "g"], K=k, N=n, bits=4, block_size=bs)], {"A": np.ones((1, k), np.float32)},
              {"Y": TensorProto.FLOAT}, {"B": b, "s": scales, "z": zp, "g": (np.arange(k) // bs).astype(np.int32)})
    for providers in (WASM_ONLY, ["NumpyExecutionProvider"]):
        with pytest.raises(Exception, match="g_idx with packed uint8 zero points"):
            nnwasm.InferenceSession(m, providers=providers)
    b, scales, zp = random_nbits(rng, k, n, 4, bs, "f32")
    g = rng.permutation(np.arange(k) // bs).astype(np.int32)
    a = rng.standard_normal((1, k)).astype(np.float32)
    m = model([nbits_node(["A", "B", "s", "z", "g"], K=k, N=n, bits=4, block_size=bs)], {"A": a},
              {"Y": TensorProto.FLOAT}, {"B": b, "s": scales, "z": zp, "g": g})
    with pytest.raises(Exception, match="g_idx that reorders K"):
        nnwasm.InferenceSession(m, wasm_only_options(), providers=WASM_ONLY)
    np.testing.assert_allclose(nnwasm.InferenceSession(m, providers=["NumpyExecutionProvider"]).run(None, {"A": a})[0],
                               ort_run(m, {"A": a})[0], rtol=1e-5, atol=1e-5)


# ---- GatherBlockQuantized ----------------------------------------------------------------------

@pytest.mark.parametrize("bits,bs,with_zp,idx_dtype", [(4, 32, True, np.int64), (4, 16, False, np.int32),
                                                      (8, 64, True, np.int64), (8, 128, False, np.int64),
                                                      (4, 128, True, np.int32)])
def test_gather_block_quantized(bits, bs, with_zp, idx_dtype):
    """An embedding table of blocks (as quantize_gather writes it: uint8, gather_axis 0,
    quantize_axis last), negative indices; exactly onnxruntime's values."""
    rng = np.random.default_rng(bits + bs)
    rows, cols = 97, 256
    nb = -(-cols // bs)
    data = rng.integers(0, 256, (rows, cols * bits // 8)).astype(np.uint8)
    inits = {"d": data, "s": (rng.random((rows, nb)) * 0.1).astype(np.float32)}
    ins = ["d", "i", "s"]
    if with_zp:
        inits["z"] = rng.integers(0, 256, (rows, -(-nb * bits // 8))).astype(np.uint8)
        ins.append("z")
    idx = np.array([[3, -1, 0, 96], [50, 3, -97, 7]], idx_dtype)
    node = helper.make_node("GatherBlockQuantized", ins, ["Y"], domain=MS, name="gbq", gather_axis=0,
                            quantize_axis=1, block_size=bs, bits=bits)
    m = model([node], {"i": idx}, {"Y": TensorProto.FLOAT}, inits)
    wasm, ref = sessions(m)
    got, want, oracle = wasm.run(None, {"i": idx})[0], ref.run(None, {"i": idx})[0], ort_run(m, {"i": idx})[0]
    assert got.shape == (2, 4, cols)
    assert np.array_equal(got, oracle) and np.array_equal(want, oracle)
    assert plan_ops(m) == ["q4_gather"]
    bad = np.array([[3, 97, 0, 1], [0, 0, 0, 0]], idx_dtype)
    with pytest.raises(Exception):
        wasm.run(None, {"i": bad})
    assert np.array_equal(wasm.run(None, {"i": idx})[0], oracle)   # the session stays usable


# ---- DynamicQuantizeMatMul and quantize_dynamic ----------------------------------------------------

@pytest.mark.parametrize("bdt,per_col,with_zp,with_bias", [(np.int8, False, False, True), (np.int8, True, True, True),
                                                          (np.uint8, True, True, False), (np.int8, False, True, False)])
@pytest.mark.parametrize("a_shape", [(1, 768), (2, 7, 768)])
def test_dynamic_quantize_matmul(bdt, per_col, with_zp, with_bias, a_shape):
    """A quantized to uint8 per tensor at run time, B packed once for q8_gemm_pk8: onnxruntime's
    values exactly (7-bit int8 B, as its quantizer makes them: x86 onnxruntime's u8s8 kernels
    saturate pairs of full-range products)."""
    rng = np.random.default_rng(len(a_shape) + per_col)
    k, n = a_shape[-1], 96
    b = (rng.integers(-64, 64, (k, n)) if bdt == np.int8 else rng.integers(0, 256, (k, n))).astype(bdt)
    inits = {"B": b, "bs": (rng.random(n if per_col else 1) * 0.01 + 0.001).astype(np.float32)}
    ins = ["A", "B", "bs", "", ""]
    if with_zp:
        inits["bz"] = (rng.integers(-3, 3, n if per_col else 1) if bdt == np.int8
                       else rng.integers(100, 140, n if per_col else 1)).astype(bdt)
        ins[3] = "bz"
    if with_bias:
        inits["bias"] = rng.standard_normal(n).astype(np.float32)
        ins[4] = "bias"
    a = rng.standard_normal(a_shape).astype(np.float32)
    m = model([helper.make_node("DynamicQuantizeMatMul", ins, ["Y"], domain=MS)], {"A": a},
              {"Y": TensorProto.FLOAT}, inits)
    wasm, ref = sessions(m)
    got, want, oracle = wasm.run(None, {"A": a})[0], ref.run(None, {"A": a})[0], ort_run(m, {"A": a})[0]
    np.testing.assert_allclose(want, oracle, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got, oracle, rtol=1e-6, atol=1e-6)
    assert plan_ops(m) == ["q8_dyn_quantize", "binary", "q8_gemm_pk8"]


def test_quantize_dynamic_matmul_runs_on_int8_kernels():
    """quantize_dynamic's int8 MatMul by constant weights (DynamicQuantizeLinear + MatMulInteger,
    fused into MatMulIntegerToFloat by the optimizer) runs on kernels.wasm's int8 GEMM with B
    packed once as int8 panels: no float32 or int16 copy of the weights in the plan, no dequantize op."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic
    import tempfile
    import os
    rng = np.random.default_rng(7)
    k, n = 256, 384
    w = (rng.standard_normal((k, n)) * 0.05).astype(np.float32)
    g = helper.make_graph([helper.make_node("MatMul", ["A", "W"], ["Y"])], "f",
                          [helper.make_tensor_value_info("A", TensorProto.FLOAT, [1, 5, k])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(w, "W")])
    f = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    f.ir_version = 8
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = os.path.join(tmp, "f.onnx"), os.path.join(tmp, "q.onnx")
        onnx.save(f, src)
        quantize_dynamic(src, dst, weight_type=QuantType.QInt8, extra_options={"MatMulConstBOnly": True})
        m = open(dst, "rb").read()
    kinds = {nd.op_type for nd in onnx.load_from_string(m).graph.node}
    assert "DynamicQuantizeLinear" in kinds and ("MatMulInteger" in kinds or "DynamicQuantizeMatMul" in kinds)
    a = rng.standard_normal((1, 5, k)).astype(np.float32)
    wasm, ref = sessions(m)
    got, oracle = wasm.run(None, {"A": a})[0], ort_run(m, {"A": a})[0]
    np.testing.assert_allclose(got, oracle, rtol=1e-5, atol=2e-3 * np.abs(oracle).max())
    ops = plan_ops(m)
    assert "q8_gemm_pk8" in ops and not {"q8_dequantize", "gemm_packed", "matmul"} & set(ops)
    assert len(nnwasm.compile_plan(m)) < k * n * 1.5   # int8 panels: a byte a weight, never int16 or float32


# ---- float16 models -------------------------------------------------------------------------------

def test_float16_models_run_on_wasm():
    """float16 A, scales and bias (an fp16 export) and a float16 embedding table's scales: the
    optimizer turns the model float32, the blocks stay uint8; onnxruntime's values within float16
    rounding."""
    rng = np.random.default_rng(1)
    k, n, bs = 128, 48, 32
    b, scales, zp = random_nbits(rng, k, n, 4, bs, "u8")
    a = rng.standard_normal((1, 3, k)).astype(np.float16)
    m = model([nbits_node(["A", "B", "s", "z", "", "bias"], K=k, N=n, bits=4, block_size=bs)], {"A": a},
              {"Y": TensorProto.FLOAT16},
              {"B": b, "s": scales.astype(np.float16), "z": zp, "bias": rng.standard_normal(n).astype(np.float16)})
    wasm, _ = sessions(m)
    got, oracle = wasm.run(None, {"A": a})[0], ort_run(m, {"A": a})[0]
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float32), oracle.astype(np.float32), rtol=2e-3, atol=2e-3)
    data = rng.integers(0, 256, (40, 32)).astype(np.uint8)
    idx = np.array([1, -2, 39], np.int64)
    node = helper.make_node("GatherBlockQuantized", ["d", "i", "s"], ["Y"], domain=MS, gather_axis=0,
                            quantize_axis=1, block_size=16, bits=4)
    g = model([node], {"i": idx}, {"Y": TensorProto.FLOAT16},
              {"d": data, "s": (rng.random((40, 4)) * 0.1).astype(np.float16)})
    wasm, _ = sessions(g)
    got, oracle = wasm.run(None, {"i": idx})[0], ort_run(g, {"i": idx})[0]
    assert got.dtype == np.float16 and np.array_equal(got, oracle)
