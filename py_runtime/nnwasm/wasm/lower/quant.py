"""int8 lowerings (kernels_c/q8/): QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv, and com.microsoft's QLinearAdd, QGemm and
MatMulIntegerToFloat.

As in XNNPACK's qs8/qu8 operators, the quantization parameters are prepared here, once per
operator: the requantization multipliers x_scale * w_scale / y_scale (float32, as onnxruntime
computes them) become a small constant tensor, and the output zero point and clamp bounds plan
integers, so the kernels never see ONNX attributes. Zero points and int32 biases are read where
they live (a runtime scalar such as DynamicQuantizeLinear's output works too)."""
import math
import struct
from array import array

from ... import symbolic
from ...dtypes import BY_NAME
from ...host import get_host
from ...tensor import TensorData, numel
from .common import f32_tensor
from .conv import _check_window, _window
from .packed import float_epilogue
from ..plan import PlanArgumentError

U8, I8, I16, I32, F32 = (BY_NAME[n] for n in ("uint8", "int8", "int16", "int32", "float32"))
QRANGE = {"uint8": (0, 255), "int8": (-128, 127)}


def _f32(v):
    """v rounded to float32 (products and quotients of float32 values round correctly from double)."""
    return struct.unpack("<f", struct.pack("<f", v))[0]


def _input(node, i):
    return node.inputs[i] if len(node.inputs) > i and node.inputs[i] else None


def _const_values(g, name):
    t = g.initializers.get(name) if name else None
    return None if t is None else t.tolist()


def _is_scalar(g, name):
    return numel(g.values[name].shape) == 1


def _dt(g, name):
    return g.values[name].dtype.name


def _per_channel(g, name, count):
    """0 for a one-value tensor, 1 for one value per channel, None otherwise."""
    shape = g.values[name].shape
    if numel(shape) == 1:
        return 0
    return 1 if len(shape) == 1 and shape[0] == count else None


# ---- QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear ---------------------------------

def _axis_view(node, g, x):
    """(outer, axis, inner) of x for the node's scale: per-tensor is (1, 1, count), one SIMD row
    (as (count, 1, 1) it was count rows of one element, each scalar: 1.35 ms for MobileNetV2's input)."""
    shape = g.values[x].shape
    if _is_scalar(g, node.inputs[1]):
        return 1, 1, numel(shape)
    ax = node.attr("axis", 1)
    ax = ax + len(shape) if ax < 0 else ax
    return numel(shape[:ax]), shape[ax], numel(shape[ax + 1:])


def check_quantize(node, g):
    x, scale, y = node.inputs[0], node.inputs[1], node.outputs[0]
    data, q = (x, y) if node.op_type == "QuantizeLinear" else (y, x)
    if _dt(g, data) != "float32" or _dt(g, scale) != "float32":
        return "this WASM kernel (de)quantizes float32 with float32 scales"
    allowed = QRANGE if node.op_type == "QuantizeLinear" else ("uint8", "int8", "int32")
    if _dt(g, q) not in allowed:
        return f"'{q}' is {_dt(g, q)}"
    if node.attr("block_size", 0):
        return "blocked quantization (block_size)"
    if not _is_scalar(g, scale) and len(g.values[scale].shape) != 1:
        return "scale is neither a scalar nor 1-D"
    zp = _input(node, 2)
    if zp and numel(g.values[zp].shape) != numel(g.values[scale].shape):
        return "zero point and scale of different sizes"
    return None


def lower_quantize(node, b):
    x, scale, y = node.inputs[0], node.inputs[1], node.outputs[0]
    outer, axis, inner = _axis_view(node, b.graph, x)
    zp = _input(node, 2)
    quantize = node.op_type == "QuantizeLinear"
    dtype = b.dtype(y if quantize else x).onnx
    args = dict(x=b.ref(x), scale=b.ref(scale), zero_point=b.ref(zp) if zp else None, y=b.ref(y),
                outer=outer, axis=axis, inner=inner)
    if quantize:
        b.emit("q8_quantize", y_dtype=dtype, **args)
    else:
        b.emit("q8_dequantize", x_dtype=dtype, **args)


def check_dynamic_quantize(node, g):
    if _dt(g, node.inputs[0]) != "float32":
        return "DynamicQuantizeLinear of a non-float32 input"
    return None


def lower_dynamic_quantize(node, b):
    outs = list(node.outputs) + [""] * (3 - len(node.outputs))
    refs = [b.ref(o) if o else b.scratch(n) for o, n in zip(outs, (numel(b.shape(node.inputs[0])), 4, 1))]
    b.emit("q8_dyn_quantize", x=b.ref(node.inputs[0]), y=refs[0], scale=refs[1], zero_point=refs[2],
           count=numel(b.shape(node.inputs[0])))


# ---- the GEMM family ---------------------------------------------------------------------------

def _mm_dims(g, a, w):
    """MatMul's view: a and w as [batch..., rows, cols] (1-D operands get a dim), batch counts."""
    sa, sb = g.values[a].shape, g.values[w].shape
    a2 = ((1,) + tuple(sa)) if len(sa) == 1 else tuple(sa)
    b2 = (tuple(sb) + (1,)) if len(sb) == 1 else tuple(sb)
    return a2, b2, numel(a2[:-2]), numel(b2[:-2])


def _out_params(g, y_zp, dtype):
    """(zero point, lo, hi) of a quantized output."""
    lo, hi = QRANGE[dtype]
    zp = int(_const_values(g, y_zp)[0]) if y_zp else 0
    return zp, lo, hi


def _multipliers(scales_a, scales_b, y_scale, alpha=1.0):
    """float32 x_scale * w_scale[i] (* alpha) / y_scale, one per channel."""
    if y_scale is not None and not (y_scale > 0 and math.isfinite(y_scale)):
        raise PlanArgumentError(f"the output scale {y_scale} is not a positive finite number")
    out = []
    for sa in scales_a:
        for sb in scales_b:
            v = _f32(_f32(sa * sb) * alpha) if alpha != 1.0 else _f32(sa * sb)
            out.append(_f32(v / y_scale) if y_scale is not None else v)
    return out


def _check_matmul_like(node, g, a, b_, a_zp, b_zp, need_const):
    for name in (a, b_):
        if _dt(g, name) not in QRANGE:
            return f"'{name}' is {_dt(g, name)}; the q8 GEMM takes uint8 and int8"
    a2, b2, ba, bb = _mm_dims(g, a, b_)
    if ba != bb and ba != 1 and bb != 1:
        return "batch broadcasting other than one side of batch 1"
    if ba == bb and ba > 1 and a2[:-2] != b2[:-2]:
        return "batch dims differ in shape"
    if a_zp and not _is_scalar(g, a_zp):
        return "a per-row zero point of A"
    if b_zp and (_per_channel(g, b_zp, b2[-1]) is None or numel(g.values[b_zp].shape) > 1 and bb > 1):
        return "a zero point that is neither per-tensor nor per-column of a 2-D B"
    for name in need_const:
        if name and name not in g.initializers:
            return f"'{name}' is not a constant (the requantization is prepared at plan build)"
    if _scratch_bytes(get_host(), "nnw_q8_gemm_scratch_bytes", symbolic.value(a2[-2]), symbolic.value(a2[-1])) < 0:
        return "kernels.wasm refuses a GEMM this large"
    return None


def _scratch_bytes(host, fn, m, k):
    """kernels.wasm's scratch size fn(m, k) for the int8 GEMMs, with m (rows: batch x sequence)
    possibly a symbolic dim: both sizes are affine in m (q8/gemm.c, gemm_pk.c), so a size for
    every m is two calls at m = 1 and 2, checked at 3, not a plan specialised on m's value."""
    if not symbolic.is_sym(m):
        return host.call(fn, m, k)
    one, two = host.call(fn, 1, k), host.call(fn, 2, k)
    per_row = two - one
    if min(one, two) < 0 or host.call(fn, 3, k) != one + 2 * per_row:
        raise AssertionError(f"{fn} is not affine in m")
    return m * per_row + (one - per_row)


def _emit_gemm(b, a, w, a_zp, b_zp, y, y_dtype, bias=None, bias_s=0, scale=None, scale_s=0,
               y_zp=0, y_min=0, y_max=0, ep=None):
    a2, b2, ba, bb = _mm_dims(b.graph, a, w)
    m, k, n = a2[-2], a2[-1], b2[-1]
    g = b.graph
    b.emit("q8_gemm_ep" if ep else "q8_gemm", **(ep or {}), a=b.ref(a), b=b.ref(w), a_zp=b.ref(a_zp) if a_zp else None,
           b_zp=b.ref(b_zp) if b_zp else None, bias=bias, scale=scale, y=b.ref(y),
           scratch=b.scratch(_scratch_bytes(b.host, "nnw_q8_gemm_scratch_bytes", m, k)),
           a_dtype=b.dtype(a).onnx, b_dtype=b.dtype(w).onnx, y_dtype=y_dtype, batch=max(ba, bb), m=m, n=n, k=k,
           a_bs=m * k if ba > 1 else 0, b_bs=k * n if bb > 1 else 0,
           a_zp_rs=0, b_zp_cs=_per_channel(g, b_zp, n) if b_zp else 0,
           per_row=0, bias_s=bias_s, scale_s=scale_s, y_zp=y_zp, y_min=y_min, y_max=y_max)


def check_matmul_integer(node, g):
    return _check_matmul_like(node, g, node.inputs[0], node.inputs[1], _input(node, 2), _input(node, 3), ())


def lower_matmul_integer(node, b):
    _emit_gemm(b, node.inputs[0], node.inputs[1], _input(node, 2), _input(node, 3), node.outputs[0], I32.onnx)


def _qlinear_inputs(node, count=8):
    """The first `count` inputs, None for the omitted ones."""
    return [_input(node, i) for i in range(count)]


def check_qlinear_matmul(node, g):
    a, a_s, a_zp, w, w_s, w_zp, y_s, y_zp = _qlinear_inputs(node)
    why = _check_matmul_like(node, g, a, w, a_zp, w_zp, (a_s, w_s, y_s, y_zp))
    if why:
        return why
    n = _mm_dims(g, a, w)[1][-1]
    if not _is_scalar(g, a_s) or not _is_scalar(g, y_s) or _per_channel(g, w_s, n) is None:
        return "scales other than per-tensor (and per-column for B)"
    if _per_channel(g, w_s, n) and len(g.values[w].shape) > 2:
        return "per-column scales of a batched B"
    return None


def lower_qlinear_matmul(node, b):
    a, a_s, a_zp, w, w_s, w_zp, y_s, y_zp = _qlinear_inputs(node)
    g = b.graph
    mult = _multipliers(_const_values(g, a_s), _const_values(g, w_s), _const_values(g, y_s)[0])
    dtype = _dt(g, node.outputs[0])
    zp, lo, hi = _out_params(g, y_zp, dtype)
    _emit_gemm(b, a, w, a_zp, w_zp, node.outputs[0], b.dtype(node.outputs[0]).onnx,
               scale=b.constant(f32_tensor((len(mult),), mult)), scale_s=int(len(mult) > 1), y_zp=zp, y_min=lo,
               y_max=hi)


def check_qgemm(node, g):
    a, a_s, a_zp, w, w_s, w_zp = _qlinear_inputs(node, 6)
    c, y_s, y_zp = _input(node, 6), _input(node, 7), _input(node, 8)
    if node.attr("transA", 0) or node.attr("transB", 0):
        return "QGemm with transposed operands"
    why = _check_matmul_like(node, g, a, w, a_zp, w_zp, (a_s, w_s, y_s, y_zp))
    if why:
        return why
    n = g.values[w].shape[1]
    if not _is_scalar(g, a_s) or (y_s and not _is_scalar(g, y_s)) or _per_channel(g, w_s, n) is None:
        return "scales other than per-tensor (and per-column for B)"
    if c and (_dt(g, c) != "int32" or _per_channel(g, c, n) is None):
        return "C is not an int32 scalar or [N] vector"
    return None


def lower_qgemm(node, b):
    a, a_s, a_zp, w, w_s, w_zp = _qlinear_inputs(node, 6)
    c, y_s, y_zp = _input(node, 6), _input(node, 7), _input(node, 8)
    g = b.graph
    mult = _multipliers(_const_values(g, a_s), _const_values(g, w_s),
                        _const_values(g, y_s)[0] if y_s else None, float(node.attr("alpha", 1.0)))
    y = node.outputs[0]
    zp, lo, hi = _out_params(g, y_zp, _dt(g, y)) if y_s else (0, 0, 0)
    bias_s = _per_channel(g, c, numel(g.values[w].shape[1:])) if c else 0
    if y_s and _packable(g, w, w_zp) and len(b.shape(a)) == 2:
        # a classifier: B packed once at plan load by an init op (q8_gemm packs it every run;
        # packed here, the plan file would carry it as int16, twice its bytes)
        k, n = b.shape(w)
        bp, new = b.persistent_buffer(("q8_pack_b", w, w_zp), 2 * (-(-k // 8) * 8) * (-(-n // 4) * 4))
        if new:
            b.emit_init("q8_pack_b", b=b.ref(w), b_zp=b.ref(w_zp) if w_zp else None, bp=bp, b_dtype=b.dtype(w).onnx,
                        k=k, n=n, b_zp_cs=_per_channel(g, w_zp, n) if w_zp else 0)
        b.emit("q8_gemm_pkq", a=b.ref(a), bp=bp, a_zp=b.ref(a_zp) if a_zp else None,
               bias=b.ref(c) if c else None, scale=b.constant(f32_tensor((len(mult),), mult)), y=b.ref(y),
               scratch=b.scratch(_scratch_bytes(b.host, "nnw_q8_gemm_pk_scratch_bytes", b.shape(a)[0], k)),
               a_dtype=b.dtype(a).onnx, y_dtype=b.dtype(y).onnx, m=b.shape(a)[0], n=n, k=k, bias_s=bias_s,
               scale_s=int(len(mult) > 1), y_zp=zp, y_min=lo, y_max=hi)
        return
    _emit_gemm(b, a, w, a_zp, w_zp, y, b.dtype(y).onnx, bias=b.ref(c) if c else None,
               bias_s=_per_channel(g, c, numel(g.values[w].shape[1:])) if c else 0,
               scale=b.constant(f32_tensor((len(mult),), mult)), scale_s=int(len(mult) > 1), y_zp=zp, y_min=lo,
               y_max=hi)


def check_matmul_integer_to_float(node, g):
    a, w, a_s, w_s = _qlinear_inputs(node, 4)
    why = _check_matmul_like(node, g, a, w, _input(node, 4), _input(node, 5), ())
    if why:
        return why
    if _input(node, 6):
        return "a fused bias"
    n = _mm_dims(g, a, w)[1][-1]
    if _dt(g, a_s) != "float32" or _dt(g, w_s) != "float32" or not _is_scalar(g, a_s) \
            or _per_channel(g, w_s, n) is None or _per_channel(g, w_s, n) and len(g.values[w].shape) > 2:
        return "scales other than float32 per-tensor (and per-column for a 2-D B)"
    return None


def lower_matmul_integer_to_float(node, b):
    """The scales' product (a runtime scalar times b_scale) into scratch, then the GEMM's float
    output multiplies by it."""
    a, w, a_s, w_s = _qlinear_inputs(node, 4)
    count = numel(b.shape(w_s))
    scale = b.scratch(4 * count)
    dims = {f"d{i}": count if i == 0 else 1 for i in range(6)}
    dims.update({f"as{i}": 0 for i in range(6)})
    dims.update({f"bs{i}": int(i == 0 and count > 1) for i in range(6)})
    b.emit("binary", kind=2, a=b.ref(a_s), b=b.ref(w_s), y=scale, rank=1, **dims)
    ep = float_epilogue(node, b, b.shape(w)[-1]) if not _input(node, 6) and len(b.shape(w)) == 2 else None
    y, fbias, r, act = ep or (node.outputs[0], None, None, 0)
    if _packable(b.graph, w, _input(node, 5)):
        return _emit_gemm_pk(b, a, w, _input(node, 4), _input(node, 5), y, scale, int(count > 1), fbias, r, act)
    if ep is None:
        return _emit_gemm(b, a, w, _input(node, 4), _input(node, 5), y, F32.onnx, scale=scale,
                          scale_s=int(count > 1))
    _emit_gemm(b, a, w, _input(node, 4), _input(node, 5), y, F32.onnx, scale=scale, scale_s=int(count > 1),
               ep=dict(fbias=b.ref(fbias), r=b.ref(r) if r else None, act=act))


def _zp_tables(signed, zp):
    """byte -> low and high byte of the int16 (byte as int8 if signed, else uint8) - zp"""
    vals = [((v - 256 if signed and v > 127 else v) - zp) & 0xFFFF for v in range(256)]
    return bytes(v & 0xFF for v in vals), bytes(v >> 8 for v in vals)


def _panels(cols, nk):
    """Columns (each nk words of 8 bytes: 8 k values of one byte plane) -> the panel layout,
    [n/4][nk][4] words, by strided slice assignment (no Python loop per element)."""
    out = array("Q", bytes(8 * nk * len(cols)))
    for p in range(0, len(cols), 4):
        words = array("Q", b"".join(cols[p:p + 4]))
        for c in range(4):
            out[p * nk + c:(p + 4) * nk:4] = words[c * nk:(c + 1) * nk]
    return out.tobytes()


def pack_q8_b(t, zps, k, n):
    """[K, N] uint8/int8 bytes with per-column zero points subtracted -> int16 panels of 4 columns,
    k in blocks of 8 (q8_gemm_pk in ops.def): [ceil(N/4)][ceil(K/8)][4][8], zeros past K and N.
    (pack_q8_b_pieces' pieces, put together.)"""
    kp, n4 = -(-k // 8) * 8, -(-n // 4) * 4
    out = bytearray(2 * n4 * kp)
    view = memoryview(out)

    def write(off, piece):
        view[off:off + len(piece)] = piece

    pack_q8_b_pieces(t, zps, k, n, write)
    return TensorData(I16, (n4 * kp,), view)


PACK_PIECE = 1 << 20   # bytes of panels pack_q8_b_pieces makes at a time


def pack_q8_b_pieces(t, zps, k, n, write, piece=PACK_PIECE):
    """pack_q8_b's bytes through write(offset, bytes-like), a run of whole panels (about `piece`
    bytes) at a time, in order: what Python holds at once is the weight's bytes (a view of the
    model's, or one read of external data) and one piece, never the whole packed tensor
    (twice the weight) beside its columns (a 125M decoder's lm_head once made 150 MB of temporaries).
    Pure Python without numpy (Pyodide too), at C speed: columns are strided slices, the int16's
    two bytes come from translate tables, the panel order from strided slice assignments."""
    kp, n4 = -(-k // 8) * 8, -(-n // 4) * 4
    data = memoryview(t.data).cast("B")
    if data.nbytes != k * n:
        raise AssertionError(f"pack_q8_b: {data.nbytes} bytes for a [{k}, {n}] weight")
    signed, tables, pad = t.dtype.name == "int8", {}, bytes(kp - k)
    for j in range(n):
        zp = zps[j] if len(zps) > 1 else zps[0]
        if zp not in tables:
            tables[zp] = _zp_tables(signed, zp)
    cols_at_once = max(4, piece // (2 * kp) // 4 * 4)
    for j0 in range(0, n4, cols_at_once):
        j1 = min(n4, j0 + cols_at_once)
        out = bytearray(2 * (j1 - j0) * kp)
        # one byte plane at a time (the columns of the other would double what is held at once)
        for half in (0, 1):
            cols = [data[j::n].tobytes().translate(tables[zps[j] if len(zps) > 1 else zps[0]][half]) + pad
                    if j < n else bytes(kp) for j in range(j0, j1)]
            out[half::2] = _panels(cols, kp // 8)   # little-endian int16: low bytes, then high bytes
            del cols
        write(2 * j0 * kp, out)


def _packable(g, w, w_zp):
    """B a constant [K, N] with a constant zero point (per-tensor or per-column), or none."""
    return w in g.initializers and len(g.values[w].shape) == 2 and (not w_zp or w_zp in g.initializers)


def _packed_b(b, w, w_zp):
    """A Ref to pack_q8_b of the constant w, made once per (weight, zero point)."""
    k, n = b.shape(w)
    cache = b.__dict__.setdefault("q8_packed", {})
    if (w, w_zp) not in cache:
        zps = [int(v) for v in _const_values(b.graph, w_zp)] if w_zp else [0]
        t = b.graph.initializers[w]
        kp, n4 = -(-k // 8) * 8, -(-n // 4) * 4
        cache[(w, w_zp)] = b.constant(b.derived(("pack_q8_b", k, n, *zps), t, make=lambda: pack_q8_b(t, zps, k, n),
                                                like=(I16, (n4 * kp,)),
                                                stream=lambda write: pack_q8_b_pieces(t, zps, k, n, write)))
    return cache[(w, w_zp)]


def _emit_gemm_pk(b, a, w, a_zp, w_zp, y, scale, scale_s, fbias, r, act):
    """MatMulIntegerToFloat (+ epilogue) as q8_gemm_pk, B packed here once per weight."""
    k, n = b.shape(w)
    m = numel(b.shape(a)[:-1])
    b.emit("q8_gemm_pk", a=b.ref(a), bp=_packed_b(b, w, w_zp), a_zp=b.ref(a_zp) if a_zp else None, scale=scale,
           fbias=b.ref(fbias) if fbias else None, r=b.ref(r) if r else None, y=b.ref(y),
           scratch=b.scratch(_scratch_bytes(b.host, "nnw_q8_gemm_pk_scratch_bytes", m, k)), a_dtype=b.dtype(a).onnx,
           m=m, n=n, k=k, scale_s=scale_s, act=act)


# ---- convolution -------------------------------------------------------------------------------

def _conv_scratch(node, g, host, x, w):
    n, c, h, wd, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl = _window(_ConvView(node, x, w), g)
    m = g.values[w].shape[0]
    return host.call("nnw_q8_conv2d_scratch_bytes", c, m, node.attr("group", 1), kh, kw, oh, ow, sh, sw, dh, dw,
                     pt, pl, h, wd)


class _ConvView:
    """The node seen as a Conv (x, w inputs) by conv.py's geometry helpers."""
    op_type = "Conv"

    def __init__(self, node, x, w):
        self.node, self.inputs, self.outputs = node, [x, w], node.outputs

    def attr(self, name, default=None):
        return self.node.attr(name, default)


def _check_conv_like(node, g, x, w, x_zp, w_zp, need_const):
    for name in (x, w):
        if _dt(g, name) not in QRANGE:
            return f"'{name}' is {_dt(g, name)}; the q8 conv takes uint8 and int8"
    why = _check_window(_ConvView(node, x, w), g)
    if why:
        return why
    m = g.values[w].shape[0]
    if x_zp and not _is_scalar(g, x_zp):
        return "a per-channel input zero point"
    if w_zp and _per_channel(g, w_zp, m) is None:
        return "a weight zero point that is neither per-tensor nor per-output-channel"
    for name in need_const:
        if name and name not in g.initializers:
            return f"'{name}' is not a constant (the requantization is prepared at plan build)"
    if _conv_scratch(node, g, get_host(), x, w) < 0:
        return "kernels.wasm refuses these conv parameters (group, pads or sizes)"
    return None


def _emit_conv(node, b, x, w, x_zp, w_zp, bias, y_dtype, scale=None, scale_s=0, y_zp=0, y_min=0, y_max=0):
    g = b.graph
    n, c, h, wd, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl = _window(_ConvView(node, x, w), g)
    m = b.shape(w)[0]
    op, weight, group = "q8_conv2d", b.ref(w), node.attr("group", 1)
    if group == 1 and y_dtype in (U8.onnx, I8.onnx) and w in g.initializers and (not w_zp or w_zp in g.initializers):
        # the weights packed once at plan load, in the layout of the host's hints (ops.def)
        k = c * kh * kw
        weight, new = b.persistent_buffer(("q8_conv2d_pack_w", w, w_zp), 16 + 4 * m * ((k + 1) // 2))
        if new:
            b.emit_init("q8_conv2d_pack_w", weight=b.ref(w), w_zp=b.ref(w_zp) if w_zp else None, wp=weight,
                        w_dtype=b.dtype(w).onnx, m=m, k=k, w_zp_s=_per_channel(g, w_zp, m) if w_zp else 0)
        op = "q8_conv2d_pk"
    b.emit(op, x=b.ref(x), weight=weight, x_zp=b.ref(x_zp) if x_zp else None,
           w_zp=b.ref(w_zp) if w_zp else None, bias=b.ref(bias) if bias else None, scale=scale,
           y=b.ref(node.outputs[0]), scratch=b.scratch(_conv_scratch(node, g, b.host, x, w)),
           x_dtype=b.dtype(x).onnx, w_dtype=b.dtype(w).onnx, y_dtype=y_dtype, n=n, c=c, h=h, w=wd, m=m,
           oh=oh, ow=ow, kh=kh, kw=kw, sh=sh, sw=sw, dh=dh, dw=dw, pt=pt, pl=pl, group=node.attr("group", 1),
           w_zp_s=_per_channel(g, w_zp, m) if w_zp else 0, scale_s=scale_s, y_zp=y_zp, y_min=y_min, y_max=y_max)


def check_conv_integer(node, g):
    return _check_conv_like(node, g, node.inputs[0], node.inputs[1], _input(node, 2), _input(node, 3), ())


def lower_conv_integer(node, b):
    _emit_conv(node, b, node.inputs[0], node.inputs[1], _input(node, 2), _input(node, 3), None, I32.onnx)


def check_qlinear_conv(node, g):
    x, x_s, x_zp, w, w_s, w_zp, y_s, y_zp = _qlinear_inputs(node)
    why = _check_conv_like(node, g, x, w, x_zp, w_zp, (x_s, w_s, y_s, y_zp))
    if why:
        return why
    m = g.values[w].shape[0]
    if not _is_scalar(g, x_s) or not _is_scalar(g, y_s) or _per_channel(g, w_s, m) is None:
        return "scales other than per-tensor (and per-output-channel for the weights)"
    bias = _input(node, 8)
    if bias and g.values[bias].shape != (m,):
        return "bias is not of shape [M]"
    return None


def lower_qlinear_conv(node, b):
    x, x_s, x_zp, w, w_s, w_zp, y_s, y_zp = _qlinear_inputs(node)
    g = b.graph
    mult = _multipliers(_const_values(g, x_s), _const_values(g, w_s), _const_values(g, y_s)[0])
    zp, lo, hi = _out_params(g, y_zp, _dt(g, node.outputs[0]))
    _emit_conv(node, b, x, w, x_zp, w_zp, _input(node, 8), b.dtype(node.outputs[0]).onnx,
               scale=b.constant(f32_tensor((len(mult),), mult)), scale_s=int(len(mult) > 1), y_zp=zp, y_min=lo,
               y_max=hi)


# ---- QLinearAdd --------------------------------------------------------------------------------

def check_qlinear_add(node, g):
    a, a_s, a_zp, c, c_s, c_zp, y_s, y_zp = _qlinear_inputs(node)
    if _dt(g, a) not in QRANGE or _dt(g, c) != _dt(g, a):
        return "QLinearAdd of types other than uint8/int8 pairs"
    if len(g.values[node.outputs[0]].shape) > 6:
        return "more than 6 dimensions"
    for name in (a_s, a_zp, c_s, c_zp, y_s, y_zp):
        if name and (name not in g.initializers or not _is_scalar(g, name)):
            return "scales and zero points that are not constant scalars"
    return None


def lower_qlinear_add(node, b):
    from .common import broadcast_strides
    a, a_s, a_zp, c, c_s, c_zp, y_s, y_zp = _qlinear_inputs(node)
    g = b.graph
    ys = _const_values(g, y_s)[0]
    zps = [int(_const_values(g, z)[0]) if z else 0 for z in (a_zp, c_zp, y_zp)]
    y = node.outputs[0]
    out = tuple(b.shape(y)) or (1,)
    rank = len(out)
    lo, hi = QRANGE[_dt(g, y)]
    args = dict(a=b.ref(a), b=b.ref(c), y=b.ref(y), dtype=b.dtype(y).onnx,
                a_mult=_f32(_const_values(g, a_s)[0] / ys), b_mult=_f32(_const_values(g, c_s)[0] / ys),
                a_zp=zps[0], b_zp=zps[1], y_zp=zps[2], y_min=lo, y_max=hi, rank=rank)
    dims = list(out) + [1] * (6 - rank)
    sa = broadcast_strides(b.shape(a), rank, out) + [0] * (6 - rank)
    sb = broadcast_strides(b.shape(c), rank, out) + [0] * (6 - rank)
    args.update({f"d{i}": dims[i] for i in range(6)})
    args.update({f"as{i}": sa[i] for i in range(6)})
    args.update({f"bs{i}": sb[i] for i in range(6)})
    b.emit("q8_add", **args)
