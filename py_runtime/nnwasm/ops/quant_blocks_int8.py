"""MatMulNBits at accuracy_level 4 as onnxruntime's CPU kernel computes it: A quantized to int8
per block, integer dot products with B's raw values, one float scale a block (MLAS's SQNBit
"CompInt8" path; the numpy reference of ops/quant_blocks.py and the arithmetic q4_matmul's a_int8
mode computes bit for bit, kernels_c/q4/).

What onnxruntime 1.31 does (read in MLAS's QuantizeARow_CompInt8 and its BlkSum kernels, checked
against its output in tests/test_quant_blocks_int8.py):
- each row of A is cut into blocks of block_size elements along K (the last one padded with
  zeros); a block's scale is sa = max|a| / 127 and its values q = round_half_even(a * (127 /
  max|a|)) (127 / max|a| computed once, not 1 / sa: the two differ in the last bit), 0 when max|a|
  is 0;
- a block of B contributes (sa * sb) * (sum q * qb - zp * sum q), zp the packed uint8 zero point
  or 2^(bits-1) when there is none.
onnxruntime sums those terms in float32 in its own order (FMA, a separate GEMM for the zero-point
term); nnwasm fixes one: d = the block's integer sum (exact), y = sum over blocks in order of
f32(d) * f32(sa * sb), bias added last, every step a float32 multiply or add. The two agree to a
few float32 roundings of the terms (1e-6 relative here), and the int8 rounding of A is the same
element for element, so the 1e-2-relative difference of computing A in float32 is gone.

onnxruntime takes this path only where its MLAS has a CompInt8 kernel for the width and block size
(INT8_A_BLOCKS, x64 AVX2's: its CPU dispatch decides), and only for packed (uint8) or absent
zero points and no g_idx; float zero points, g_idx, and B fed at run time (never so in exports,
which nnwasm does not tell apart) are computed in float32 on dequantized weights.
A block holding a NaN or an infinity gets a NaN scale: its row's outputs are NaN."""

# widths -> block sizes onnxruntime 1.31's CPU MatMulNBits quantizes A to int8 for at level 4
INT8_A_BLOCKS = {4: (16, 32, 64, 128, 256), 8: (16, 32, 64, 128, 256), 2: (32, 64, 128)}


def int8_a(accuracy_level, bits, bs, zp_float, g_idx):
    """Whether a MatMulNBits computes on A quantized to int8 (onnxruntime's CompInt8)."""
    return accuracy_level == 4 and not zp_float and not g_idx and bs in INT8_A_BLOCKS.get(bits, ())


def quantize_a(np, a2, bs):
    """A [M, K] float32 -> (qa [M, kb, bs] float64 of int8 values, sa [M, kb] float32 scales)."""
    m, k = a2.shape
    kb = -(-k // bs)
    ap = np.zeros((m, kb * bs), np.float32)
    ap[:, :k] = a2
    ap = ap.reshape(m, kb, bs)
    finite = np.isfinite(ap).all(-1)
    ap = np.where(finite[..., None], ap, np.float32(0))
    amax = np.abs(ap).max(-1)
    with np.errstate(divide="ignore"):
        inv = np.where(amax > 0, np.float32(127) / amax, np.float32(0)).astype(np.float32)
    qa = np.clip(np.rint(ap * inv[..., None]), -127, 127).astype(np.float64)
    sa = np.where(finite, amax / np.float32(127), np.float32(np.nan)).astype(np.float32)
    return qa, sa


def matmul_int8_a(np, a2, q, z, s):
    """y [M, N] float32 of A [M, K] float32 against B's raw values q [N, kb, bs] (integers), its
    integer zero points z [N, kb] and scales s [N, kb] float32, in the order the module doc fixes."""
    n, kb, bs = q.shape
    qa, sa = quantize_a(np, a2, bs)
    qsum = qa.sum(-1)                                           # [M, kb], exact
    zf = z.astype(np.float64)
    y = np.zeros((a2.shape[0], n), np.float32)
    for blk in range(kb):                                       # float64 products of integers: exact
        qf = q[:, blk, :].astype(np.float64)                    # one block at a time: [N, bs]
        d = qa[:, blk, :] @ qf.T - qsum[:, blk, None] * zf[None, :, blk]
        f = sa[:, blk, None] * s[None, :, blk]                  # float32 * float32
        y = y + d.astype(np.float32) * f
    return y
