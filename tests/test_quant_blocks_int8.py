"""MatMulNBits at accuracy_level 4 (ops/quant_blocks_int8.py, q4_matmul's a_int8 mode): A quantized
to int8 per block and integer dot products, as onnxruntime's CPU kernel computes them.

Tolerances. The int8 values of A are onnxruntime's element for element, and the integer sums are
exact on both sides; what differs is the float32 order in which the blocks' terms are summed
(onnxruntime: FMAs and a separate GEMM for the zero-point term). So |y - onnxruntime| <= TIGHT *
mag + 1e-6, mag = sum over blocks of |sa sb| (|d| + |zp sum q|) (the float32 terms' size), TIGHT =
1e-5 (float32's unit roundoff times a few). Computing A in float32 instead misses that by far
(a case below checks the bound would catch it). On WASM the numpy reference's order is the
kernel's: the two agree bit for bit."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, numpy_helper

import nnwasm
from model_builders import ort_run
from test_wasm_quant_blocks import model, nbits_node, random_nbits, sessions, plan_ops, weight_of
from nnwasm.ops.quant_blocks_int8 import INT8_A_BLOCKS, int8_a, quantize_a

TIGHT = 1e-5


def int8_terms_mag(a, b, scales, zp, k, n, bits, bs):
    """sum over blocks of |sa sb| (|sum q qb| + |zp sum q|): the size of the float32 terms."""
    from nnwasm.ops.quant_blocks import unpack_bits
    kb = -(-k // bs)
    a2 = a.reshape(-1, k).astype(np.float32)
    qa, sa = quantize_a(np, a2, bs)
    q = unpack_bits(np, b.reshape(n, kb, -1), bits, bs).astype(np.float64)
    z = (np.full((n, kb), 1 << (bits - 1)) if zp is None else unpack_bits(np, zp.reshape(n, -1), bits, kb)).astype(np.float64)
    s = np.abs(scales.reshape(n, kb).astype(np.float64))
    mag = np.zeros((a2.shape[0], n))
    for blk in range(kb):
        d = np.abs(qa[:, blk] @ q[:, blk].T) + np.abs(qa[:, blk].sum(-1))[:, None] * z[None, :, blk]
        mag += np.abs(sa[:, blk, None].astype(np.float64)) * s[None, :, blk] * d
    return mag.reshape(*a.shape[:-1], n)


def build(k, n, bits, bs, zp_kind, a_shape, seed, bias=True, acc=4):
    rng = np.random.default_rng(seed)
    b, scales, zp = random_nbits(rng, k, n, bits, bs, zp_kind)
    inits = {"B": b, "s": scales}
    inputs = ["A", "B", "s"]
    if zp is not None:
        inits["z"] = zp
        inputs.append("z")
    if bias:
        inits["bias"] = rng.standard_normal(n).astype(np.float32)
        inputs += [""] * (5 - len(inputs)) + ["bias"]
    a = rng.standard_normal((*a_shape, k)).astype(np.float32)
    m = model([nbits_node(inputs, K=k, N=n, bits=bits, block_size=bs, accuracy_level=acc)], {"A": a},
              {"Y": TensorProto.FLOAT}, inits)
    return m, a, b, scales, zp


CASES = [(bits, bs, zk) for bits in (4, 8, 2) for bs in (16, 32, 64, 128, 256) for zk in ("none", "u8")]


@pytest.mark.parametrize("bits,bs,zp_kind", CASES)
@pytest.mark.parametrize("k", [256, 203])
def test_numpy_matches_onnxruntime(bits, bs, zp_kind, k):
    """The numpy reference against onnxruntime, decode rows and a prefill, K a multiple of the
    block or not (odd K: the last block padded); where onnxruntime has no int8 kernel (2 bits with
    blocks of 16 or 256) both compute in float32 (bounded as in test_wasm_quant_blocks.py)."""
    n = 37
    for a_shape in ((1,), (3,), (2, 9)):
        m, rows, b, scales, zp = build(k, n, bits, bs, zp_kind, a_shape, seed=bits * 7919 + bs + k)
        ref = nnwasm.InferenceSession(m, providers=["NumpyExecutionProvider"])
        (want,), (oracle,) = ref.run(None, {"A": rows}), ort_run(m, {"A": rows})
        if int8_a(4, bits, bs, False, False):
            mag = int8_terms_mag(rows, b, scales, zp, k, n, bits, bs)
            assert (np.abs(want - oracle) <= TIGHT * mag + 1e-6).all()
        else:
            w = weight_of(dict(K=k, N=n, bits=bits, block_size=bs), b, scales, zp)
            mag = np.abs(rows.astype(np.float64)) @ np.abs(w.astype(np.float64)).T
            assert (np.abs(want - oracle) <= 3e-5 * mag + 1e-6).all()


def test_float_a_would_fail_the_tight_bound():
    """The bound above tells the two arithmetics apart: A in float32 misses it."""
    k, n, bs = 256, 37, 32
    m, a, b, scales, zp = build(k, n, 4, bs, "none", (5,), seed=3, bias=False)
    w = weight_of(dict(K=k, N=n, bits=4, block_size=bs), b, scales, zp)
    (oracle,) = ort_run(m, {"A": a})
    mag = int8_terms_mag(a, b, scales, zp, k, n, 4, bs)
    assert (np.abs(a @ w.T - oracle) > TIGHT * mag + 1e-6).mean() > 0.5


@pytest.mark.parametrize("zp_kind", ["f32"])
@pytest.mark.parametrize("bits,bs", [(4, 32), (2, 64)])
def test_float_zero_points_stay_float(bits, bs, zp_kind):
    """float zero points: onnxruntime computes on dequantized weights (float32), and so does nnwasm,
    in numpy and on WASM (decode and prefill rows)."""
    k, n = 128, 20
    for rows in (1, 6):
        m, a, b, scales, zp = build(k, n, bits, bs, zp_kind, (rows,), seed=11)
        wasm, ref = sessions(m)
        (got,), (want,), (oracle,) = wasm.run(None, {"A": a}), ref.run(None, {"A": a}), ort_run(m, {"A": a})
        w = weight_of(dict(K=k, N=n, bits=bits, block_size=bs), b, scales, zp)
        mag = np.abs(a.astype(np.float64)) @ np.abs(w.astype(np.float64)).T
        assert (np.abs(want - oracle) <= 3e-5 * mag + 1e-6).all()
        assert (np.abs(got - oracle) <= 3e-5 * mag + 1e-6).all()


def test_quantize_a_rounding():
    """onnxruntime's rounding of A: x * (127 / max) to nearest even, a zero block stays zero, a
    non-finite block gets a NaN scale."""
    a = np.array([[1.0, -0.5, 127 / 254, 0.25] + [0.0] * 12 + [0.0] * 16,
                  [np.nan] + [1.0] * 31], np.float32)
    qa, sa = quantize_a(np, a, 16)
    assert qa[0, 0, :4].tolist() == [127, -64, 64, 32] and sa[0, 0] == np.float32(1) / np.float32(127)
    assert (qa[0, 1] == 0).all() and sa[0, 1] == 0
    assert np.isnan(sa[1, 0]) and sa[1, 1] == np.float32(1) / np.float32(127)
    assert set(INT8_A_BLOCKS) == {2, 4, 8}


# ---- on WASM (q4_matmul's a_int8 mode, kernels_c/q4/nbits_int8.c) -------------------------------

@pytest.mark.parametrize("bits,bs,zp_kind", [c for c in CASES if int8_a(4, c[0], c[1], False, False)])
def test_wasm_is_the_reference_bit_for_bit(bits, bs, zp_kind):
    """The kernel's arithmetic is the numpy reference's, step for step: the same bits for decode
    (1 row), a few rows and a prefill (odd row counts: the kernel takes rows two at a time), with
    K not a multiple of the block (the last block padded) and N not a multiple of 4; and it is
    onnxruntime's within TIGHT."""
    k, n = 203, 37
    for a_shape in ((1,), (3,), (2, 9)):
        m, a, b, scales, zp = build(k, n, bits, bs, zp_kind, a_shape, seed=bits * 31 + bs)
        wasm, ref = sessions(m)
        assert "q4_matmul" in plan_ops(m)
        (got,), (want,), (oracle,) = wasm.run(None, {"A": a}), ref.run(None, {"A": a}), ort_run(m, {"A": a})
        assert got.tobytes() == want.tobytes()
        assert (np.abs(got - oracle) <= TIGHT * int8_terms_mag(a, b, scales, zp, k, n, bits, bs) + 1e-6).all()


def test_wasm_non_finite_rows_and_zero_blocks():
    """A row holding a NaN or an infinity gives NaN outputs (its block's scale is NaN), the other
    rows are untouched; an all-zero row gives the bias."""
    k, n, bs = 96, 10, 32
    m, a, b, scales, zp = build(k, n, 4, bs, "u8", (5,), seed=2)
    a[1, 40] = np.nan
    a[3, 0] = np.inf
    a[4] = 0
    wasm, ref = sessions(m)
    (got,), (want,) = wasm.run(None, {"A": a}), ref.run(None, {"A": a})
    assert np.isnan(got[[1, 3]]).all() and np.isnan(want[[1, 3]]).all()
    assert got[[0, 2, 4]].tobytes() == want[[0, 2, 4]].tobytes()
    bias = [numpy_helper.to_array(t) for t in onnx.load_from_string(m).graph.initializer if t.name == "bias"][0]
    assert got[4].tobytes() == bias.tobytes()


def test_wasm_levels_0_and_4_differ_only_where_onnxruntime_does():
    """The same weights at accuracy_level 0 (A in float32) and 4: each level matches onnxruntime at
    that level, and the two levels differ by the int8 rounding of A."""
    k, n, bs = 256, 24, 32
    outs = {}
    for acc in (0, 4):
        m, a, b, scales, zp = build(k, n, 4, bs, "none", (4,), seed=9, acc=acc)
        wasm, _ = sessions(m)
        (got,), (oracle,) = wasm.run(None, {"A": a}), ort_run(m, {"A": a})
        w = weight_of(dict(K=k, N=n, bits=4, block_size=bs), b, scales, zp)
        mag = np.abs(a.astype(np.float64)) @ np.abs(w.astype(np.float64)).T
        tol = TIGHT * int8_terms_mag(a, b, scales, zp, k, n, 4, bs) + 1e-6 if acc else 3e-5 * mag + 1e-6
        assert (np.abs(got - oracle) <= tol).all()
        outs[acc] = got
    assert np.abs(outs[0] - outs[4]).max() > 1e-3
