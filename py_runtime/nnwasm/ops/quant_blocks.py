"""Block-quantized weights, as onnxruntime's com.microsoft contrib ops: MatMulNBits (int4/int8/int2
weights in blocks along K, one scale and zero point a block), GatherBlockQuantized (an embedding
table of such blocks) and DynamicQuantizeMatMul (A quantized to uint8 at run time, B int8).

The numpy kernels dequantize exactly as onnxruntime's documentation says, w = (q - zero_point) *
scale in float32, then compute in float32; at accuracy_level 4, where onnxruntime's CPU kernel
quantizes A to int8 per block and sums integer products, MatMulNBits does the same
(ops/quant_blocks_int8.py says exactly what and where). Packing follows the docs: element i of a block sits in byte i * bits // 8 at bit (i * bits) % 8."""
from .. import dtypes
from . import shapes as S
from .quant import _int_matmul, _qtype, dynamic_quantize_linear
from .quant_blocks_int8 import int8_a, matmul_int8_a
from .registry import op

MS = "com.microsoft"
UINT8, FLOAT32 = dtypes.BY_NAME["uint8"], dtypes.FLOAT32
FLOATS = tuple(dtypes.BY_NAME[n] for n in ("float32", "float16", "bfloat16"))
NBITS = (2, 4, 8)   # the widths whose blocks are whole bytes (onnxruntime's CPU kernel's too)


def _pow2_block(node, bs):
    if not isinstance(bs, int) or bs < 16 or bs & (bs - 1):
        S.fail(node, f"block_size {bs} is not a power of two >= 16")


def nbits_params(node):
    """(K, N, bits, block_size, k_blocks, blob_size) of a MatMulNBits node; InvalidModel when an
    attribute is malformed, NotImplementedOp for a width nnwasm does not unpack."""
    k, n, bits, bs = (node.attr(a, 0) for a in ("K", "N", "bits", "block_size"))
    if k <= 0 or n <= 0:
        S.fail(node, f"K = {k} and N = {n} must be positive")
    _pow2_block(node, bs)
    if bits not in range(2, 9):
        S.fail(node, f"bits = {bits} is outside 2..8")
    if bits not in NBITS:
        S.unsupported(node, f"{bits}-bit weights (nnwasm unpacks 2, 4 and 8 bits)")
    acc = node.attr("accuracy_level", 0)
    if acc not in range(0, 5):
        S.fail(node, f"accuracy_level {acc} is outside 0..4")
    kb = -(-k // bs)
    return k, n, bits, bs, kb, bs * bits // 8


def _count(vi):
    return S.numel(S.shape(vi))


def _check_size(node, vi, want, what):
    got = _count(vi)
    if got is not None and got != want:
        S.fail(node, f"{what} has {got} elements; K = {node.attr('K')}, N = {node.attr('N')}, bits = "
                     f"{node.attr('bits')} and block_size = {node.attr('block_size')} make it {want}")


def infer_matmul_nbits(node, inputs, consts):
    a, b, scales = (S.need(node, inputs, i) for i in range(3))
    zp, g_idx, bias = S.get(inputs, 3), S.get(inputs, 4), S.get(inputs, 5)
    k, n, bits, bs, kb, blob = nbits_params(node)
    if S.dtype(a) is not None and S.dtype(a) not in FLOATS:
        S.fail(node, f"A is {S.dtype(a).name}; MatMulNBits takes float32, float16 or bfloat16")
    if S.dtype(b) not in (None, UINT8):
        S.fail(node, f"B is {S.dtype(b).name}; MatMulNBits packs its weights in uint8")
    bshape = S.shape(b)
    if bshape is not None and S.static(bshape) and (len(bshape) not in (2, 3) or S.numel(bshape) != n * kb * blob):
        S.fail(node, f"B has shape {list(bshape)}; K = {k}, N = {n}, bits = {bits} and block_size = {bs} "
                     f"make it [{n}, {kb}, {blob}]")
    _check_size(node, scales, n * kb, "scales")
    if zp is not None:
        if S.dtype(zp) == UINT8:
            _check_size(node, zp, n * (-(-kb * bits // 8)), "the packed zero_points")
        else:
            _check_size(node, zp, n * kb, "zero_points")
    if g_idx is not None:
        _check_size(node, g_idx, k, "g_idx")
        if zp is not None and S.dtype(zp) == UINT8:
            S.unsupported(node, "g_idx with packed uint8 zero points (onnxruntime 1.31's CPU kernel then reads "
                                "the zero points as 2^(bits-1), ignoring them; nnwasm refuses rather than guess)")
    if bias is not None:
        _check_size(node, bias, n, "bias")
    ashape = S.shape(a)
    if ashape is None:
        return [(S.dtype(a), None)]
    if not ashape:
        S.fail(node, "A must have rank >= 1")
    S.merge_dims(node, ashape[-1], k, f"A's last dim and K = {k}")
    return [(S.dtype(a), (*ashape[:-1], n))]


def unpack_bits(np, packed, bits, count):
    """uint8 [..., bytes] -> the [..., count] unsigned values packed `bits` to a byte, low bits first."""
    per = 8 // bits
    shifts = (np.arange(per, dtype=np.uint8) * bits).astype(np.uint8)
    vals = (packed[..., None] >> shifts) & np.uint8((1 << bits) - 1)
    return vals.reshape(*packed.shape[:-1], packed.shape[-1] * per)[..., :count]


def nbits_weight(np, node, b, scales, zp=None, g_idx=None):
    """The dequantized weight [N, K] (float32) of a MatMulNBits node."""
    k, n, bits, bs, kb, blob = nbits_params(node)
    q = unpack_bits(np, b.reshape(n, kb, blob), bits, bs).reshape(n, kb * bs).astype(np.float32)
    s = scales.astype(np.float32).reshape(n, kb)
    if zp is None:
        z = np.full((n, kb), float(1 << (bits - 1)), np.float32)
    elif zp.dtype == np.uint8:
        z = unpack_bits(np, zp.reshape(n, -1), bits, kb).astype(np.float32)
    else:
        z = zp.astype(np.float32).reshape(n, kb)
    if g_idx is not None:   # deprecated (GPTQ's act-order): row k of B in block g_idx[k]
        g = g_idx.reshape(-1).astype(np.int64)
        if g.size != k or (g < 0).any() or (g >= kb).any():
            S.fail(node, f"g_idx must hold {k} block indices in [0, {kb})")
        return (q[:, :k] - z[:, g]) * s[:, g]
    return ((q.reshape(n, kb, bs) - z[:, :, None]) * s[:, :, None]).reshape(n, kb * bs)[:, :k]


def _int8_a_operands(np, node, b, scales, zp):
    """B's raw values [N, kb, bs], integer zero points [N, kb] and scales [N, kb] float32."""
    k, n, bits, bs, kb, blob = nbits_params(node)
    q = unpack_bits(np, b.reshape(n, kb, blob), bits, bs)
    z = (np.full((n, kb), 1 << (bits - 1), np.int32) if zp is None
         else unpack_bits(np, zp.reshape(n, -1), bits, kb).astype(np.int32))
    return q, z, scales.astype(np.float32).reshape(n, kb)


@op("MatMulNBits", 1, infer_matmul_nbits, domain=MS)
def matmul_nbits(node, a, b, scales, zp=None, g_idx=None, bias=None):
    import numpy as np
    k, n, bits, bs, kb, blob = nbits_params(node)
    if int8_a(node.attr("accuracy_level", 0), bits, bs, zp is not None and zp.dtype != np.uint8, g_idx is not None):
        a2 = a.astype(np.float32).reshape(-1, k)
        y = matmul_int8_a(np, a2, *_int8_a_operands(np, node, b, scales, zp)).reshape(*a.shape[:-1], n)
    else:
        w = nbits_weight(np, node, b, scales, zp, g_idx)
        y = np.matmul(a.astype(np.float32), w.T)
    if bias is not None:
        y = y + bias.astype(np.float32)
    return y.astype(a.dtype, copy=False)


# ---- GatherBlockQuantized ------------------------------------------------------------------------

INT4S = tuple(dtypes.BY_NAME[n] for n in ("int4", "uint4"))


def gbq_params(node, data_vi):
    """(gather_axis, quantize_axis, block_size, bits, components) of a GatherBlockQuantized node for
    data of rank r, axes made non-negative; InvalidModel for what onnxruntime refuses."""
    r = S.rank(data_vi)
    ga, qa = node.attr("gather_axis", 0), node.attr("quantize_axis", 1)
    bs, bits = node.attr("block_size", 128), node.attr("bits", 4)
    _pow2_block(node, bs)
    if bits not in (4, 8):
        S.fail(node, f"bits = {bits}: GatherBlockQuantized takes 4 or 8")
    if r is None:
        return ga, qa, bs, bits, 1
    if not (-r <= ga < r and -r <= qa < r):
        S.fail(node, f"gather_axis {ga} or quantize_axis {qa} is outside data's rank {r}")
    ga, qa = ga % r, qa % r
    packed = S.dtype(data_vi) == UINT8
    if packed and (ga != 0 or qa != r - 1):
        S.fail(node, "uint8 data needs gather_axis 0 and quantize_axis the last axis")
    if S.dtype(data_vi) in INT4S and bits != 4:
        S.fail(node, f"{S.dtype(data_vi).name} data with bits = {bits}")
    return ga, qa, bs, bits, (8 // bits if packed else 1)


def infer_gather_block_quantized(node, inputs, consts):
    data, idx, scales = S.need(node, inputs, 0), S.need_index(node, inputs, 1), S.need(node, inputs, 2)
    zp = S.get(inputs, 3)
    if S.dtype(data) not in (None, UINT8) + INT4S:
        S.fail(node, f"data is {S.dtype(data).name}; GatherBlockQuantized takes uint8, int4 or uint4")
    if S.dtype(scales) is not None and S.dtype(scales) not in FLOATS:
        S.fail(node, f"scales are {S.dtype(scales).name}")
    ga, qa, bs, bits, comp = gbq_params(node, data)
    ds, ss, ishape = S.shape(data), S.shape(scales), S.shape(idx)
    if ds is None or ishape is None:
        return [(S.dtype(scales), None)]
    if S.static(ds) and ss is not None and S.static(ss):
        want = tuple(-(-d * comp // bs) if i == qa else d for i, d in enumerate(ds))
        if ss != want:
            S.fail(node, f"scales have shape {list(ss)}; data {list(ds)} in blocks of {bs} make it {list(want)}")
        zs = S.shape(zp)
        if zs is not None and S.static(zs):
            zwant = tuple(-(-d // comp) if i == qa else d for i, d in enumerate(want))
            if zs != zwant:
                S.fail(node, f"zero_points have shape {list(zs)}; it must be {list(zwant)}")
    out = list(ds[:ga]) + list(ishape) + list(ds[ga + 1:])
    if comp > 1 and out:
        out[-1] = out[-1] * comp if S.known(out[-1]) else None
    return [(S.dtype(scales), tuple(out))]


def _gbq_zero_points(np, zp, scales_shape, packed, bits):
    """zero points as int32 of scales' shape; onnxruntime indexes packed uint8 ones by the flat
    block index (two 4-bit values a byte, across rows)."""
    count = int(np.prod(scales_shape))
    if packed:
        flat = unpack_bits(np, zp.reshape(-1), bits, count) if bits == 4 else zp.reshape(-1)[:count]
        return flat.astype(np.int32).reshape(scales_shape)
    return zp.astype(np.int32).reshape(scales_shape)


@op("GatherBlockQuantized", 1, infer_gather_block_quantized, domain=MS)
def gather_block_quantized(node, data, indices, scales, zp=None):
    import numpy as np
    packed = data.dtype == np.uint8
    ga, qa, bs, bits, comp = gbq_params(node, S_Value(data, packed))
    dim = data.shape[ga]
    idx = indices.astype(np.int64)
    if ((idx < -dim) | (idx >= dim)).any():
        S.fail(node, f"an index is outside [{-dim}, {dim - 1}]")
    idx = np.where(idx < 0, idx + dim, idx)
    if zp is None:
        z = np.full(scales.shape, (1 << (bits - 1)) if packed else 0, np.int32)
    else:
        z = _gbq_zero_points(np, zp, scales.shape, packed, bits)
    q = np.take(data, idx, axis=ga)
    if packed and bits == 4:
        q = unpack_bits(np, q, 4, q.shape[-1] * 2)
    q = q.astype(np.int32)
    s, z = np.take(scales, idx, axis=ga), np.take(z, idx, axis=ga)
    qa2 = qa if qa < ga else qa + idx.ndim - 1
    length = q.shape[qa2]
    s = np.repeat(s, bs, axis=qa2).take(np.arange(length), axis=qa2)
    z = np.repeat(z, bs, axis=qa2).take(np.arange(length), axis=qa2)
    return ((q - z).astype(np.float32) * s.astype(np.float32)).astype(scales.dtype)


class S_Value:
    """gbq_params' view of a numpy array (its rank and dtype), at run time."""
    def __init__(self, arr, packed):
        self.shape, self.dtype = arr.shape, (UINT8 if packed else None)
        self.name = "data"


# ---- DynamicQuantizeMatMul -----------------------------------------------------------------------

def infer_dynamic_quantize_matmul(node, inputs, consts):
    a, b = S.need(node, inputs, 0), S.need(node, inputs, 1)
    S.need(node, inputs, 2)
    if S.dtype(a) not in (None, FLOAT32):
        S.fail(node, f"A is {S.dtype(a).name}; DynamicQuantizeMatMul takes float32")
    _qtype(node, b, "B")
    from .linalg import matmul_shape
    return [(FLOAT32, matmul_shape(node, S.shape(a), S.shape(b)))]


@op("DynamicQuantizeMatMul", 1, infer_dynamic_quantize_matmul, domain=MS)
def dynamic_quantize_matmul(node, a, b, b_scale, b_zp=None, bias=None):
    """DynamicQuantizeLinear(A) (uint8, per tensor), then MatMulIntegerToFloat's arithmetic: the
    int32 sum times float32(a_scale * b_scale), plus bias."""
    import numpy as np
    aq, a_scale, a_zp = dynamic_quantize_linear(node, a)
    acc = _int_matmul(np, aq, b, a_zp, b_zp).astype(np.int32)
    y = acc.astype(np.float32) * (a_scale.astype(np.float32) * b_scale.astype(np.float32).reshape(-1)
                                  if b_scale.size > 1 else a_scale * b_scale.astype(np.float32).reshape(()))
    return y if bias is None else y + bias.astype(np.float32)
