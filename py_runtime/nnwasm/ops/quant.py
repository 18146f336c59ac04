"""Quantization ops: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, MatMulInteger,
ConvInteger, QLinearConv, QLinearMatMul, and onnxruntime's com.microsoft QLinearAdd and QGemm
and MatMulIntegerToFloat (what the QDQ fusion pass, nnwasm/qdq.py, produces).

The numpy kernels follow onnxruntime's arithmetic: quantize divides by the scale in float32,
rounds half to even and saturates; requantization multiplies the int32 sum by the float32
multiplier x_scale * w_scale / y_scale; integer products are exact (int64, wrapped to int32)."""
from .. import dtypes
from ..ir import ValueInfo
from . import casting
from . import shapes as S
from .conv import conv, infer_conv
from .linalg import matmul_shape
from .registry import op

UINT8, INT8, INT32, FLOAT32 = (dtypes.BY_NAME[n] for n in ("uint8", "int8", "int32", "float32"))
QTYPES = (UINT8, INT8)
# Q/DQ in numpy: opset 21's 16-bit and ml_dtypes' low-precision types (ops/casting.py)
LOWP = tuple(dtypes.BY_NAME[n] for n in ("int4", "uint4", "int2", "uint2", "float8_e4m3fn", "float8_e4m3fnuz",
                                         "float8_e5m2", "float8_e5m2fnuz", "float4_e2m1fn"))
QLINEAR_TYPES = QTYPES + (dtypes.BY_NAME["uint16"], dtypes.BY_NAME["int16"]) + LOWP
_LOWP_INT_RANGE = {"int4": (-8, 7), "uint4": (0, 15), "int2": (-2, 1), "uint2": (0, 3)}
MS = "com.microsoft"


def _qtype(node, vi, what):
    dt = S.dtype(vi)
    if dt is not None and dt not in QTYPES:
        S.unsupported(node, f"{what} of type {dt.name} (nnwasm quantizes to uint8 and int8)")
    return dt


def _limits(np, dt):
    info = np.iinfo(dt)
    return info.min, info.max


def _per_axis(np, node, v, rank, default_axis=1, dim=None):
    """A scale or zero point shaped to broadcast against a rank-`rank` tensor along `axis`; with
    block_size (opset 21), a same-rank tensor repeated block_size times along `axis` (dim long)."""
    if v is not None and node.attr("block_size", 0):
        ax = node.attr("axis", default_axis)
        return np.repeat(v, node.attr("block_size"), axis=ax)[(slice(None),) * (ax % rank) + (slice(0, dim),)]
    if v is None or v.ndim == 0 or v.size == 1 and node.attr("axis") is None:
        return v if v is None else v.reshape(())
    ax = node.attr("axis", default_axis)
    ax = ax + rank if ax < 0 else ax
    shape = [1] * rank
    shape[ax] = v.size
    return v.reshape(shape)


def _check_axis_params(node, inputs, x_index):
    x = S.shape(S.get(inputs, x_index))
    if node.attr("block_size", 0):
        return
    for i in (1, 2):
        s = S.shape(S.get(inputs, i))
        if s is None or x is None or len(s) == 0 or s == (1,) or (len(s) == 1 and not S.known(s[0])):
            continue   # per-tensor (or, with an unknown length, checked when it runs)
        if len(s) != 1:
            S.unsupported(node, f"scale/zero point of shape {list(s)}")
        ax = S.axis(node, node.attr("axis", 1), len(x))
        S.merge_dims(node, x[ax], s[0], "per-axis scale length vs the axis")


def infer_quantize(node, inputs, consts):
    S.need(node, inputs, 0), S.need(node, inputs, 1)
    _check_axis_params(node, inputs, 0)
    zp = S.get(inputs, 2)
    if zp is not None:
        dt = S.dtype(zp)     # None: unknown
    else:
        dt = S.dtype_attr(node, "output_dtype", 2) if node.attr("output_dtype") else UINT8
    if dt is not None and dt not in QLINEAR_TYPES:
        S.unsupported(node, f"quantizing to {dt.name}")
    return [(dt, S.shape(inputs[0]))]


def quantize_linear(node, x, scale, zp=None):
    import numpy as np
    dt = zp.dtype if zp is not None else dtypes.numpy_dtype(dtypes.from_onnx(node.attr("output_dtype", 2)))
    dim = x.shape[node.attr("axis", 1)] if node.attr("block_size", 0) else None
    s = _per_axis(np, node, scale.astype(np.float32), x.ndim, dim=dim)
    z = 0 if zp is None else _per_axis(np, node, zp, x.ndim, dim=dim).astype(np.float32)
    if dt.name not in _LOWP_INT_RANGE and dtypes.of_numpy(dt).ml_dtypes:   # float8, float4: no rounding
        v = x.astype(np.float32) / s
        if dt.name.startswith("float4"):
            v = v + z
        return casting.to_type(v, dtypes.of_numpy(dt), bool(node.attr("saturate", 1)))
    lo, hi = _LOWP_INT_RANGE.get(dt.name) or _limits(np, dt)
    v = np.rint(x.astype(np.float32) / s) + z
    return np.clip(np.nan_to_num(v, nan=lo), lo, hi).astype(dt)


def infer_dequantize(node, inputs, consts):
    x = S.need(node, inputs, 0)
    S.need(node, inputs, 1)
    _check_axis_params(node, inputs, 0)
    if S.dtype(x) not in QLINEAR_TYPES + (INT32, None):
        S.unsupported(node, f"dequantizing {S.dtype(x).name}")
    out = S.dtype_attr(node, "output_dtype") if node.attr("output_dtype") else S.dtype(inputs[1])
    return [(out, S.shape(x))]


def dequantize_linear(node, x, scale, zp=None):
    import numpy as np
    dim = x.shape[node.attr("axis", 1)] if node.attr("block_size", 0) else None
    s = _per_axis(np, node, scale, x.ndim, dim=dim)
    out = dtypes.numpy_dtype(dtypes.from_onnx(node.attr("output_dtype"))) if node.attr("output_dtype") else scale.dtype
    if dtypes.of_numpy(x.dtype).ml_dtypes:   # int4, float8...: exact in float32
        lowp_float = "float" in x.dtype.name
        z = 0 if zp is None or lowp_float else _per_axis(np, node, zp, x.ndim, dim=dim).astype(np.float32)
        if lowp_float and zp is not None and np.any(zp.astype(np.float32) != 0):
            S.fail(node, f"the zero point of a {x.dtype.name} input must be 0")
        return ((x.astype(np.float32) - z) * s).astype(out)
    z = 0 if zp is None else _per_axis(np, node, zp, x.ndim, dim=dim).astype(np.int64)
    return ((x.astype(np.int64) - z).astype(np.float32) * s).astype(out)


for _since in (10, 13, 19, 21):
    op("QuantizeLinear", _since, infer_quantize)(quantize_linear)
    op("DequantizeLinear", _since, infer_dequantize)(dequantize_linear)


def _out_dtype(inputs, zp_index):
    """The type of a quantized output: its zero point's (None when unknown), uint8 without one."""
    zp = S.get(inputs, zp_index)
    return UINT8 if zp is None else S.dtype(zp)


def infer_dynamic_quantize(node, inputs, consts):
    x = S.need(node, inputs, 0)
    return [(UINT8, S.shape(x)), (FLOAT32, ()), (UINT8, ())]


@op("DynamicQuantizeLinear", 11, infer_dynamic_quantize)
def dynamic_quantize_linear(node, x):
    import numpy as np
    lo = np.float32(min(float(x.min(initial=0.0)), 0.0))
    hi = np.float32(max(float(x.max(initial=0.0)), 0.0))
    scale = np.float32(1.0) if hi == lo else np.float32((hi - lo) / np.float32(255.0))
    zp = np.float32(0.0) - lo / scale
    zp = np.uint8(np.rint(np.clip(np.nan_to_num(zp, nan=0.0), 0, 255)))
    y = np.clip(np.nan_to_num(np.rint(x / scale) + np.float32(zp), nan=0), 0, 255).astype(np.uint8)
    return y, np.array(scale, np.float32), np.array(zp, np.uint8)


def _untyped(vi):
    return None if vi is None else ValueInfo(vi.name, None, vi.shape)


def infer_matmul_integer(node, inputs, consts):
    a, b = S.need(node, inputs, 0), S.need(node, inputs, 1)
    _qtype(node, a, "A"), _qtype(node, b, "B")
    return [(INT32, matmul_shape(node, S.shape(a), S.shape(b)))]


def _int_matmul(np, a, b, a_zp, b_zp):
    """sum_k (a - a_zp) (b - b_zp) in int64: a_zp scalar or per row (of a's last-but-one dim), b_zp
    scalar or per column."""
    a = a.astype(np.int64)
    b = b.astype(np.int64)
    if a_zp is not None:
        a = a - (a_zp.astype(np.int64).reshape(-1, 1) if a_zp.size > 1 else a_zp.astype(np.int64).reshape(()))
    if b_zp is not None:
        b = b - (b_zp.astype(np.int64).reshape(-1) if b_zp.size > 1 else b_zp.astype(np.int64).reshape(()))
    return np.matmul(a, b)


@op("MatMulInteger", 10, infer_matmul_integer)
def matmul_integer(node, a, b, a_zp=None, b_zp=None):
    import numpy as np
    return _int_matmul(np, a, b, a_zp, b_zp).astype(np.int32)


def _requantize(np, acc, mult, y_zp):
    """round(acc * mult) + y_zp, saturated to y_zp's type (uint8 0 when y_zp is absent)."""
    dt = np.dtype(np.uint8) if y_zp is None else y_zp.dtype
    lo, hi = _limits(np, dt)
    v = np.rint(acc.astype(np.float32) * mult) + np.float32(0 if y_zp is None else y_zp.reshape(()))
    return np.clip(v, lo, hi).astype(dt)


def _multiplier(np, *scales_over_out):
    """x_scale * w_scale / y_scale in float32, as onnxruntime computes the requantization scale."""
    a, b, y = (np.asarray(s, np.float32) for s in scales_over_out)
    return (a.reshape(()) * b) / y.reshape(())


def _need_scales(node, inputs, idxs):
    for i in idxs:
        S.need(node, inputs, i)


def infer_qlinear_matmul(node, inputs, consts):
    a, b = S.need(node, inputs, 0), S.need(node, inputs, 3)
    _need_scales(node, inputs, (1, 4, 6))
    _qtype(node, a, "A"), _qtype(node, b, "B")
    return [(_out_dtype(inputs, 7), matmul_shape(node, S.shape(a), S.shape(b)))]


@op("QLinearMatMul", 10, infer_qlinear_matmul)
def qlinear_matmul(node, a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp=None):
    import numpy as np
    acc = _int_matmul(np, a, b, a_zp, b_zp)
    mult = _multiplier(np, a_scale, b_scale, y_scale).reshape(-1)
    return _requantize(np, acc, mult if mult.size > 1 else mult.reshape(()), y_zp)


op("QLinearMatMul", 21, infer_qlinear_matmul)(qlinear_matmul)


def _infer_int_conv(node, x, w, b, out_dtype):
    return [(out_dtype, infer_conv(node, [_untyped(x), _untyped(w), _untyped(b)], [None] * 3)[0][1])]


def infer_conv_integer(node, inputs, consts):
    x, w = S.need(node, inputs, 0), S.need(node, inputs, 1)
    _qtype(node, x, "x"), _qtype(node, w, "w")
    return _infer_int_conv(node, x, w, None, INT32)


def _int_conv(np, node, x, w, x_zp, w_zp):
    """The exact integer convolution (float64 holds every partial sum exactly), as int64."""
    xf = x.astype(np.float64) - (0 if x_zp is None else float(x_zp.reshape(-1)[0]))
    wz = 0 if w_zp is None else w_zp.astype(np.float64).reshape(-1, *[1] * (w.ndim - 1))
    y = conv(node, xf, w.astype(np.float64) - wz)
    return np.rint(y).astype(np.int64)


@op("ConvInteger", 10, infer_conv_integer)
def conv_integer(node, x, w, x_zp=None, w_zp=None):
    import numpy as np
    return _int_conv(np, node, x, w, x_zp, w_zp).astype(np.int32)


def infer_qlinear_conv(node, inputs, consts):
    x, w = S.need(node, inputs, 0), S.need(node, inputs, 3)
    _need_scales(node, inputs, (1, 4, 6))
    _qtype(node, x, "x"), _qtype(node, w, "w")
    b = S.get(inputs, 8)
    if b is not None and S.dtype(b) not in (INT32, None):
        S.fail(node, "QLinearConv bias must be int32")
    return _infer_int_conv(node, x, w, b, _out_dtype(inputs, 7))


@op("QLinearConv", 10, infer_qlinear_conv)
def qlinear_conv(node, x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp=None, b=None):
    import numpy as np
    acc = _int_conv(np, node, x, w, x_zp, w_zp)
    if b is not None:
        acc = acc + b.astype(np.int64).reshape(-1, *[1] * (x.ndim - 2))
    acc = acc.astype(np.int32)   # wraps as onnxruntime's int32 sums do
    mult = _multiplier(np, x_scale, w_scale, y_scale).reshape(-1)
    mult = mult.reshape(-1, *[1] * (x.ndim - 2)) if mult.size > 1 else mult.reshape(())
    return _requantize(np, acc, mult, y_zp)


def infer_qlinear_add(node, inputs, consts):
    a, b = S.need(node, inputs, 0), S.need(node, inputs, 3)
    _need_scales(node, inputs, (1, 4, 6))
    dt = _qtype(node, a, "A")
    return [(dt, S.broadcast(node, S.shape(a), S.shape(b)))]


@op("QLinearAdd", 1, infer_qlinear_add, domain=MS)
def qlinear_add(node, a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp=None):
    import numpy as np
    f32 = np.float32
    am, bm = f32(a_scale.reshape(())) / f32(y_scale.reshape(())), f32(b_scale.reshape(())) / f32(y_scale.reshape(()))
    azp = 0 if a_zp is None else int(a_zp.reshape(()))
    bzp = 0 if b_zp is None else int(b_zp.reshape(()))
    v = am * (a.astype(np.int32) - azp).astype(f32) + bm * (b.astype(np.int32) - bzp).astype(f32)
    y0 = f32(0 if y_zp is None else y_zp.reshape(()))
    return np.clip(np.rint(v) + y0, *_limits(np, a.dtype)).astype(a.dtype)


def infer_qgemm(node, inputs, consts):
    a, b = S.need(node, inputs, 0), S.need(node, inputs, 3)
    _need_scales(node, inputs, (1, 4))
    _qtype(node, a, "A"), _qtype(node, b, "B")
    sa, sb = S.shape(a), S.shape(b)
    m = None if sa is None else sa[1 if node.attr("transA", 0) else 0]
    n = None if sb is None else sb[0 if node.attr("transB", 0) else 1]
    return [(_out_dtype(inputs, 8) if S.get(inputs, 7) is not None else FLOAT32, (m, n))]


@op("QGemm", 1, infer_qgemm, domain=MS)
def qgemm(node, a, a_scale, a_zp, b, b_scale, b_zp, c=None, y_scale=None, y_zp=None):
    """alpha * (A - a_zp)(B - b_zp) * a_scale * b_scale + C * a_scale * b_scale (C int32), then
    quantized with y_scale / y_zp if given, else returned as float32."""
    import numpy as np
    if node.attr("transA", 0):
        a = a.T
    if node.attr("transB", 0):
        b = b.T
        b_zp = b_zp if b_zp is None or b_zp.size == 1 else b_zp.reshape(-1)
    acc = _int_matmul(np, a, b, a_zp, b_zp)
    if c is not None:
        acc = acc + c.astype(np.int64)
    acc = acc.astype(np.int32)
    alpha = np.float32(node.attr("alpha", 1.0))
    ab = (np.float32(a_scale.reshape(())) * b_scale.astype(np.float32).reshape(-1)) * alpha
    ab = ab if ab.size > 1 else ab.reshape(())
    if y_scale is None:
        return acc.astype(np.float32) * ab
    return _requantize(np, acc, ab / np.float32(y_scale.reshape(())), y_zp)


def infer_matmul_integer_to_float(node, inputs, consts):
    a, b = S.need(node, inputs, 0), S.need(node, inputs, 1)
    _need_scales(node, inputs, (2, 3))
    _qtype(node, a, "A"), _qtype(node, b, "B")
    return [(S.dtype(S.get(inputs, 2)) or FLOAT32, matmul_shape(node, S.shape(a), S.shape(b)))]


@op("MatMulIntegerToFloat", 1, infer_matmul_integer_to_float, domain=MS)
def matmul_integer_to_float(node, a, b, a_scale, b_scale, a_zp=None, b_zp=None, bias=None):
    """float32(MatMulInteger(A, B, a_zp, b_zp)) * (a_scale * b_scale) [+ bias]: the Cast and Mul of
    quantize_dynamic's graphs, in their order (a float32 product of the scales, then one multiply)."""
    import numpy as np
    acc = _int_matmul(np, a, b, a_zp, b_zp).astype(np.int32)
    y = acc.astype(np.float32) * (a_scale.astype(np.float32) * b_scale.astype(np.float32))
    return y if bias is None else y + bias
