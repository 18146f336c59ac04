"""MatMul by a constant [K, N] matrix as gemm_packed (kernels_c/linalg/gemm_packed.c): B packed
here into panels of 8 columns, and the transformer's epilogue folded in: a bias Add of a constant
[N], then a Gelu (erf) or Relu/Clip, or else a residual Add of an [M, N] value ready before the
MatMul. The fused nodes' intermediate values are never written."""
import math

from ...tensor import TensorData, numel
from .half import emit_gemm_half, half_panels

NR = 8


def pack_b(t, k, n):
    """[K, N] float32 bytes -> [ceil(N/8)][K][8], columns past N zero (pack_b_pieces' pieces, put
    together)."""
    panels = -(-n // NR)
    out = bytearray(4 * panels * k * NR)
    view = memoryview(out)

    def write(off, piece):
        view[off:off + len(piece)] = piece

    pack_b_pieces(t, k, n, write)
    return TensorData(t.dtype, (panels * k * NR,), view)


PACK_PIECE = 1 << 20   # bytes of panels pack_b_pieces makes at a time


def pack_b_pieces(t, k, n, write, piece=PACK_PIECE):
    """pack_b's bytes through write(offset, bytes-like), a run of whole panels (about `piece`
    bytes) at a time, in order, so Python never holds the packed weight (the runner writes each
    piece into kernels.wasm's memory: wasm/derived.py). Pure Python at C speed (no numpy in a
    page): the floats as 4-byte words, each column a strided slice of them assigned to its strided
    place in its panel (a loop per (panel, row) took 18 s for a 125M Llama's weights). A view of the
    source's bytes, not a copy (a 98 MB lm_head once took four copies of itself at once in Pyodide's
    heap, which never shrinks)."""
    words = memoryview(t.data).cast("B").cast("I")   # bits moved, never converted
    panels = -(-n // NR)
    at_once = max(1, piece // (4 * k * NR))
    for p0 in range(0, panels, at_once):
        p1 = min(panels, p0 + at_once)
        out = memoryview(bytearray(4 * (p1 - p0) * k * NR)).cast("I")
        for j in range(p0 * NR, min(n, p1 * NR)):
            p, c = divmod(j - p0 * NR, NR)
            at = p * k * NR + c
            out[at:at + k * NR:NR] = words[j::n]
        write(4 * p0 * k * NR, out.cast("B"))


def _only_user(b, name, *types):
    users = b.users.get(name, [])
    if len(users) != 1 or name in b.outputs:
        return None
    u = users[0]
    if id(u) not in b.members or id(u) in b.fused or u.domain not in ("", "ai.onnx", "com.microsoft"):
        return None
    return u if u.op_type in types else None


def _other(node, name):
    a, c = node.inputs[:2]
    return c if a == name else a if c == name else None


def _bias(b, add, y, n, shape):
    """add's constant operand if it is a bias of N values added to y without broadcasting y."""
    c = _other(add, y)
    t = b.graph.initializers.get(c) if c else None
    if t is None or t.dtype.name != "float32" or numel(t.shape) != n or (t.shape and t.shape[-1] != n):
        return None
    return c if tuple(b.shape(add.outputs[0])) == tuple(shape) else None


def _residual(b, add, y, shape, before):
    """add's other operand if it is a value of y's shape that exists before the MatMul runs."""
    r = _other(add, y)
    if not r or r == y or tuple(b.shape(r)) != tuple(shape) or b.dtype(r).name != "float32":
        return None
    return r if b.position.get(r, -1) < before else None


def _epilogue(node, b, n, relu):
    """(value to write, bias, residual or None, act, act_min) when node's [.., N] float output only
    feeds a bias Add of a constant [N], then maybe a Gelu (erf), a Relu (with relu), or a residual
    Add; None when it does not. The fused nodes are marked, so lowering skips them."""
    y = node.outputs[0]
    shape = b.shape(y)
    add = _only_user(b, y, "Add")
    if add is None or add.domain == "com.microsoft" or not _bias(b, add, y, n, shape):
        return None
    bias, y, act, lo, r, fused = _bias(b, add, y, n, shape), add.outputs[0], 0, -math.inf, None, [add]
    nxt = _only_user(b, y, "Gelu", "Relu", "Add") if relu else _only_user(b, y, "Gelu", "Add")
    if nxt is not None and nxt.op_type == "Gelu" and nxt.attr("approximate", "none") == "none":
        act, y = 1, nxt.outputs[0]
        fused.append(nxt)
    elif nxt is not None and nxt.op_type == "Relu" and nxt.domain != "com.microsoft":
        lo, y = 0.0, nxt.outputs[0]
        fused.append(nxt)
    elif nxt is not None and nxt.op_type == "Add" and nxt.domain != "com.microsoft":
        r = _residual(b, nxt, y, shape, b.position.get(node.outputs[0], 0))
        if r is not None:
            y = nxt.outputs[0]
            fused.append(nxt)
    b.fused.update(id(f) for f in fused)
    return y, bias, r, act, lo


def float_epilogue(node, b, n):
    """(value to write, bias, residual or None, act) when node's [.., N] float output only feeds a
    bias Add of a constant [N] (then a Gelu, or a residual Add); None when it does not. The fused
    nodes are marked, so lowering skips them. (lower/quant.py: MatMulIntegerToFloat as q8_gemm_ep)"""
    ep = _epilogue(node, b, n, relu=False)
    return ep[:4] if ep is not None else None


def lower_matmul_packed(node, b, m, n, k):
    """The MatMul (and what it fuses) as one gemm_packed op."""
    w = node.inputs[1]
    ep = _epilogue(node, b, n, relu=True)
    y, bias, r, act, lo = ep if ep is not None else (node.outputs[0], None, None, 0, -math.inf)
    hi = math.inf
    hp = half_panels(b, w, k, n)   # a float16 model's weight: its halves (lower/half.py)
    if hp is not None:
        return emit_gemm_half(b, hp, b.ref(node.inputs[0]), b.ref(y), m, n, k, b.ref(bias) if bias else None,
                              b.ref(r) if r else None, act, lo, hi)
    cache = b.__dict__.setdefault("packed", {})
    if w not in cache:
        t = b.graph.initializers[w]
        cache[w] = b.constant(b.derived(("pack_b", k, n), t, make=lambda: pack_b(t, k, n),
                                        like=(t.dtype, (-(-n // NR) * k * NR,)),
                                        stream=lambda write: pack_b_pieces(t, k, n, write)))
    b.emit("gemm_packed", a=b.ref(node.inputs[0]), bp=cache[w], bias=b.ref(bias) if bias else None,
           r=b.ref(r) if r else None, y=b.ref(y), m=m, n=n, k=k, act=act, act_min=lo, act_max=hi)
