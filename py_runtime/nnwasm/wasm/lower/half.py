"""float16 weights kept as float16 in the plan and the arena: half the bytes of their float32
widening. The optimizer's fp16 pass computes a float16 model in float32 and widens its weights,
remembering the halves (tensor.WidenedHalf); the lowerings here store the halves instead where a
kernel can widen them as it reads them, exactly:
  - a MatMul or Gemm by a constant B: gemm_packed_f16 (kernels_c/linalg/gemm_packed_f16.c), the
    packed GEMM on panels of halves, gemm_packed's bits on the widened B (finite halves only: a B
    holding inf or NaN keeps its float32 panels);
  - a Gather from a constant table (an embedding): the rows gathered as halves into scratch, then
    one cast to float32 (cast.c's exact widening).
Everything else reads the float32 widening, which then goes to the plan as before."""
import sys
from array import array

from ... import dtypes
from ...tensor import TensorData, numel

F16 = dtypes.BY_NAME["float16"]
NR = 8
BLOCK_BYTES = 256 * 1024   # widened panels per block (m >= 4): scratch that stays in L2
# high bytes of finite halves (exponent bits 0x7C not all set)
_FINITE_HI = bytes(v for v in range(256) if v & 0x7C != 0x7C)


def halves(b, name):
    """The float16 source of initializer `name` if the fp16 pass widened it, else None."""
    t = b.graph.initializers.get(name)
    return getattr(t, "half", None) if t is not None else None


def _finite(h):
    return not bytes(memoryview(h.data).cast("B")[1::2]).translate(None, _FINITE_HI)


def _u16(data):
    a = array("H")
    a.frombytes(bytes(data))
    if sys.byteorder == "big":
        a.byteswap()
    return a


def pack_half(h, k, n, trans):
    """B's halves ([K, N], or [N, K] when trans) -> gemm_packed_f16's panels [ceil(N/8)][K][8] of
    halves, each k step's columns paired c0 c4 c1 c5 c2 c6 c3 c7 (ops.def), columns past N zero."""
    src, panels = _u16(h.data), (n + NR - 1) // NR
    out = array("H", bytes(2 * panels * NR * k))
    for j in range(n):
        q, c = divmod(j, NR)
        col = src[j * k:(j + 1) * k] if trans else src[j::n]
        at = q * NR * k + 2 * (c % 4) + c // 4
        out[at:(q + 1) * NR * k:NR] = col
    if sys.byteorder == "big":
        out.byteswap()
    return TensorData(F16, (len(out),), out.tobytes())


def half_panels(b, name, k, n, trans=False):
    """A Ref to B's float16 panels (made once per weight), or None when B is no widened float16
    weight or holds inf/NaN."""
    h = halves(b, name)
    if h is None:
        return None
    cache = b.__dict__.setdefault("half_packed", {})
    key = (name, trans)
    if key not in cache:   # through the provider's derived cache: one copy for the session's plans (wasm/weights.py)
        t = b.graph.initializers[name]
        cache[key] = (b.constant(b.derived(("pack_half", k, n, trans), t, make=lambda: pack_half(h, k, n, trans)))
                      if _finite(h) else None)
    return cache[key]


def emit_gemm_half(b, bp, a, y, m, n, k, bias=None, r=None, act=0, lo=float("-inf"), hi=float("inf")):
    panels = (n + NR - 1) // NR
    block = 1 if m < 4 else max(1, min(panels, BLOCK_BYTES // (4 * NR * k)))
    b.emit("gemm_packed_f16", a=a, bp=bp, bias=bias, r=r, y=y, scratch=b.scratch(4 * NR * k * block), m=m, n=n,
           k=k, act=act, act_min=lo, act_max=hi, block=block)


def lower_gemm_half(node, b):
    """Gemm(A, B, C) with B a widened float16 weight, alpha 1, A not transposed and C absent or a
    bias of N values (beta 1): gemm_packed_f16. Returns False (nothing emitted) otherwise."""
    from .epilogue import fuse_activation
    a, w = node.inputs[:2]
    c = node.inputs[2] if len(node.inputs) > 2 and node.inputs[2] else None
    if node.attr("transA", 0) or float(node.attr("alpha", 1.0)) != 1.0 or len(b.shape(a)) != 2:
        return False
    trans = bool(node.attr("transB", 0))
    sw = b.shape(w)
    k, n = (sw[1], sw[0]) if trans else sw
    if c is not None and (float(node.attr("beta", 1.0)) != 1.0 or b.dtype(c).name != "float32"
                          or numel(b.shape(c)) != n or tuple(b.shape(c))[-1:] != (n,)):
        return False
    bp = half_panels(b, w, k, n, trans)
    if bp is None:
        return False
    y, lo, hi = fuse_activation(node, b)
    emit_gemm_half(b, bp, b.ref(a), b.ref(y), b.shape(a)[0], n, k, bias=b.ref(c) if c else None, lo=lo, hi=hi)
    return True


def lower_gather_half(node, b, outer, axis_dim, n_idx, inner):
    """Gather from a widened float16 table: the rows as halves into scratch, then a cast to float32.
    Returns False (nothing emitted) when the table is no widened float16 weight."""
    x, idx = node.inputs[:2]
    h = halves(b, x)
    if h is None:
        return False
    cache = b.__dict__.setdefault("half_tables", {})
    if x not in cache:
        cache[x] = b.constant(h)
    count = outer * n_idx * inner
    tmp = b.scratch(2 * count)
    b.emit("gather", x=cache[x], idx=b.ref(idx), y=tmp, esize=2, idx_dtype=b.dtype(idx).onnx, outer=outer,
           axis_dim=axis_dim, n_idx=n_idx, inner=inner)
    b.emit("cast", **{"from": F16.onnx, "to": b.dtype(node.outputs[0]).onnx}, x=tmp, y=b.ref(node.outputs[0]),
           count=count)
    return True
