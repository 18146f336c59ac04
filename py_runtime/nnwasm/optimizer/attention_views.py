"""Attention whose Q, K, V reach the scores through any chain of data-movement ops (the second
matcher of fuse_attention, tried where transformer.py's Reshape -> Transpose head split does not
match): torch.nn.MultiheadAttention and nn.TransformerEncoderLayer (packed in-projection, unflatten /
unsqueeze / transpose / squeeze / select, [S, B*H, D] views, batch_first either way), the bmm form
with 3-D [B*H, S, D] scores, and hand-written permute orders.

How: each of Q, K, V is followed back through Reshape / Squeeze / Unsqueeze / Flatten / Transpose /
Gather (a constant scalar index) / Mul or Div by a scalar constant to the tensor that made it (the
source), and the chain is replayed forward as a strided view of that source (sizes, strides,
offset: torch's view rules). The fusion holds when the view is what MultiHeadAttention reads:
head h of row s at columns offset + h*D of the source's row s (a row stride R >= H*D; batches one
after another, or interleaved with the heads, which then count as B*H heads of one batch: attention
never mixes heads, so [S, B, E] layouts work at any batch). Q, K, V become Reshape (and Slice, for
a packed projection) of their sources; the output's movement chain is followed forward to the
furthest tensor that is a contiguous view of MultiHeadAttention's [B, S, H*D], which a Reshape
then makes. Scalar factors on Q and K multiply the scale; masks as in transformer.py.
"""
import struct

from ..dtypes import FLOAT32, INT64
from ..ir import Node, ValueInfo
from ..ops.shapes import contiguous_strides, known
from ..tensor import TensorData
from .rewrite import const_scalar, const_values, is_f32, ms_node

MOVES = ("Reshape", "Squeeze", "Unsqueeze", "Flatten", "Transpose", "Gather")


def _reshape_strides(sizes, strides, new):
    """Strides of a view of (sizes, strides) with shape `new`, or None if it needs a copy (torch's
    computeStride)."""
    numel = 1
    for s in sizes:
        numel *= s
    n2 = 1
    for s in new:
        n2 *= s
    if numel != n2 or numel == 0:
        return None
    if not sizes:
        return [1] * len(new)
    out = [0] * len(new)
    view_d = len(new) - 1
    base = strides[-1]
    t_numel = v_numel = 1
    for d in range(len(sizes) - 1, -1, -1):
        t_numel *= sizes[d]
        if d == 0 or (sizes[d - 1] != 1 and strides[d - 1] != t_numel * base):
            while view_d >= 0 and (v_numel < t_numel or new[view_d] == 1):
                out[view_d] = v_numel * base
                v_numel *= new[view_d]
                view_d -= 1
            if v_numel != t_numel:
                return None
            if d > 0:
                base = strides[d - 1]
                t_numel = v_numel = 1
    return out if view_d == -1 else None


def _shape(g, name):
    """The static shape, or None: a symbolic dim (symbolic.Sym) is not converted, since int() of one
    records a guard and so specialises the plan to this length (a decoder then built a plan per
    step, and its cache kept on the device was copied into each: tests/test_kv_concat_inplace.py)."""
    v = g.values.get(name)
    if v is None or v.shape is None or not all(known(d) and type(d) is int for d in v.shape):
        return None
    return list(v.shape)


def _scalar_operand(g, node):
    """(the tensor input, the constant) of a Mul/Div by a scalar constant, else (None, None)."""
    if node.op_type == "Div":
        c = const_scalar(g, node.inputs[1])
        return (node.inputs[0], 1.0 / c) if c else (None, None)
    for i, name in enumerate(node.inputs[:2]):
        c = const_scalar(g, name)
        if c is not None:
            return node.inputs[1 - i], c
    return None, None


def _step(g, node, view):
    """view = (sizes, strides, offset, scale) of node's input -> that of its output, or None."""
    sizes, strides, offset, scale = view
    out = _shape(g, node.outputs[0])
    if out is None:
        return None
    t = node.op_type
    if t == "Transpose":
        perm = list(node.attr("perm", list(range(len(sizes)))[::-1]))
        if sorted(perm) != list(range(len(sizes))):
            return None
        return [sizes[p] for p in perm], [strides[p] for p in perm], offset, scale
    if t in ("Reshape", "Squeeze", "Unsqueeze", "Flatten"):
        new = _reshape_strides(sizes, strides, out)
        return None if new is None else (out, new, offset, scale)
    if t == "Gather":
        idx = g.initializers.get(node.inputs[1])
        vals = const_values(g, node.inputs[1])
        if idx is None or idx.shape != () or vals is None:
            return None
        a = node.attr("axis", 0) % len(sizes)
        i = int(vals[0]) % sizes[a]
        return sizes[:a] + sizes[a + 1:], strides[:a] + strides[a + 1:], offset + i * strides[a], scale
    if t in ("Mul", "Div"):
        x, c = _scalar_operand(g, node)
        return None if c is None or _shape(g, x) != out else (sizes, strides, offset, scale * c)
    return None


def _back(g, m, name, scales):
    """(source, its view as `name`, chain nodes from the source on) for Q, K or V."""
    chain, cur = [], name
    while True:
        p = m.producers.get(cur)
        if p is None or p.domain != "":
            break
        if p.op_type in MOVES and p.inputs and (p.op_type != "Gather" or g.initializers.get(p.inputs[1]) is not None):
            chain.append(p)
            cur = p.inputs[0]
        elif scales and p.op_type in ("Mul", "Div") and _scalar_operand(g, p)[0] is not None:
            chain.append(p)
            cur = _scalar_operand(g, p)[0]
        else:
            break
    chain.reverse()
    shape = _shape(g, cur)
    if shape is None or not is_f32(g, cur):
        return None
    view = (shape, contiguous_strides(shape), 0, 1.0)
    for node in chain:
        view = _step(g, node, view)
        if view is None:
            return None
    return cur, view, chain


def _rows(view, numel):
    """(batches, heads, rows S, D, row stride R, offset) if view [B, H, S, D] (or [B*H, S, D]) reads
    head h of row s at offset + h*D + s*R (+ b*S*R, or b*H*D with the batches counted as heads)."""
    sizes, strides, offset, _ = view
    if len(sizes) == 3:
        sizes, strides = [1] + list(sizes), [0] + list(strides)
    if len(sizes) != 4:
        return None
    b, h, s, d = sizes
    sb, sh, ss, sd = strides
    if (d > 1 and sd != 1) or (h > 1 and sh != d):
        return None
    merged = b > 1 and sb == h * d
    bp, hp = (1, b * h) if merged else (b, h)
    r = ss if s > 1 else (sb if bp > 1 else hp * d)
    if bp > 1 and sb != s * r:
        return None
    if offset < 0 or offset + hp * d > r or numel != bp * s * r:
        return None
    return bp, hp, s, d, r, offset


def _numel(g, name):
    n = 1
    for s in _shape(g, name):
        n *= s
    return n


class _Emit:
    def __init__(self, ctx):
        self.ctx, self.g, self.nodes, self.flat = ctx, ctx.graph, [], {}

    def value(self, hint, shape, dtype=FLOAT32):
        name = self.ctx.fresh(hint)
        self.g.values[name] = ValueInfo(name, dtype, tuple(shape))
        return name

    def ints(self, hint, vals):
        name = self.value(hint, (len(vals),), INT64)
        self.g.initializers[name] = TensorData(INT64, (len(vals),), struct.pack(f"<{len(vals)}q", *vals))
        return name

    def node(self, op, inputs, shape, hint, out=None, **attrs):
        out = out or self.value(hint, shape)
        self.nodes.append(Node(op, inputs, [out], name=out, attrs=attrs, opset=self.g.opsets.get("", 17)))
        return out

    def reshape(self, x, shape, out=None):
        return self.node("Reshape", [x, self.ints("attn_shape", list(shape))], shape, "attn_view", out)

    def rows(self, src, bp, s, hd, r, offset):
        """src as [bp, s, hd]: head columns offset..offset+hd of each row of length r."""
        target = [bp, s, hd]
        if offset == 0 and r == hd:
            return src if _shape(self.g, src) == target else self.reshape(src, target)
        if self.g.opsets.get("", 0) < 10:
            return None
        if (src, bp * s, r) not in self.flat:   # a packed projection: one view of it for Q, K and V
            self.flat[src, bp * s, r] = self.reshape(src, [bp * s, r])
        flat = self.flat[src, bp * s, r]
        part = self.node("Slice", [flat, self.ints("attn_start", [offset]), self.ints("attn_end", [offset + hd]),
                                   self.ints("attn_axes", [1])], [bp * s, hd], "attn_cols")
        return self.reshape(part, target)


def attention_by_views(ctx, sm, m):
    from .transformer import MASK_FILL_MAX, _scores
    g = ctx.graph
    x = sm.inputs[0]
    xs = _shape(g, x)
    if xs is None or len(xs) not in (3, 4) or sm.attr("axis", -1) not in (-1, len(xs) - 1):
        return None
    if sm.opset < 13 and sm.attr("axis", 1) != len(xs) - 1:
        return None
    pattern, mask, where = [sm], None, None
    pre = m.op(x, "Add", "Where")
    if pre is not None and m.r.only(x) is sm:
        if pre.op_type == "Add":
            cand = next((c for c in pre.inputs if _scores(m, c) and m.other(pre, c)), None)
            if cand is None:
                return None
            mask, x = m.other(pre, cand), cand
        else:
            cond, fill, val = pre.inputs
            f = const_scalar(g, fill)
            cv = g.values.get(cond)
            if f is None or not f <= MASK_FILL_MAX or cv is None or cv.dtype is None or cv.dtype.name != "bool" \
                    or not _scores(m, val):
                return None
            where, x, mask = f, val, cond
        ms_ = _shape(g, mask)
        if ms_ is None or len(ms_) > len(xs) or (where is None and not is_f32(g, mask)):
            return None
        ms_ = [1] * (len(xs) - len(ms_)) + ms_
        if any(a not in (1, b) for a, b in zip(ms_, xs)) or ms_[-1] != xs[-1]:
            return None
        pattern.append(pre)
    scale = 1.0
    sc = m.op(x, "Mul", "Div")
    if sc is not None and m.r.only(x) is pattern[-1] and _scalar_operand(g, sc)[0] is not None:
        x, c = _scalar_operand(g, sc)
        scale *= c
        pattern.append(sc)
    mm1 = m.op(x, "MatMul")
    if mm1 is None or m.r.only(x) is not pattern[-1]:
        return None
    pattern.append(mm1)
    mm2 = m.reader(sm.outputs[0], "MatMul")
    if mm2 is None or mm2.inputs[0] != sm.outputs[0]:
        return None
    pattern.append(mm2)
    views = {}
    for role, name in (("q", mm1.inputs[0]), ("k", mm1.inputs[1]), ("v", mm2.inputs[1])):
        found = _back(g, m, name, scales=role != "v")
        if found is None:
            return None
        src, view, chain = found
        if len(view[0]) != len(xs):
            return None
        if role == "k":   # K^T [B, H, D, L] -> [B, H, L, D]
            p = list(range(len(xs) - 2)) + [len(xs) - 1, len(xs) - 2]
            view = ([view[0][i] for i in p], [view[1][i] for i in p], view[2], view[3])
        rows = _rows(view, _numel(g, src))
        if rows is None:
            return None
        views[role] = (src, rows, chain, view[3])
    (qsrc, qr, qchain, qscale), (ksrc, kr, kchain, kscale), (vsrc, vr, vchain, _) = (views[r] for r in "qkv")
    bp, hp, s, d = qr[:4]
    if kr[:2] != (bp, hp) or vr[:2] != (bp, hp) or kr[2] != vr[2] or kr[3] != d or vr[3] != d:
        return None
    scale *= qscale * kscale
    l_ = kr[2]
    # the output: [B, H, S, D] (or [B*H, S, D]) as a view of MultiHeadAttention's [bp, s, hp*d]
    o = mm2.outputs[0]
    os_ = _shape(g, o)
    if os_ is None:
        return None
    if len(os_) == 4:
        b = os_[0]
        strides = [hp // max(b, 1) * d if bp == 1 and b > 1 else s * hp * d, d, hp * d, 1]
    else:
        strides = [d, hp * d, 1]
    view = (os_, strides, 0, 1.0)

    def contiguous(v):
        return v[2] == 0 and all(st == c for n, st, c in zip(v[0], v[1], contiguous_strides(v[0])) if n != 1)
    best = (o, []) if contiguous(view) else None
    cur, chain = o, []
    while True:
        r = m.r.only(cur)
        if r is None or r.domain != "" or r.op_type not in MOVES[:5] or r.inputs[0] != cur:
            break
        view = _step(g, r, view)
        if view is None:
            break
        chain.append(r)
        cur = r.outputs[0]
        if contiguous(view):
            best = (cur, list(chain))
    if best is None:
        return None
    out, ochain = best
    # the nodes that go: the core, the output chain, and the parts of Q/K/V chains only they read
    for name in [n.outputs[0] for n in pattern + ochain]:
        if name != out and name in m.r.outputs:
            return None
    gone = {id(n) for n in pattern + ochain}
    for chain_ in (qchain, kchain, vchain):
        for node in reversed(chain_):
            if all(id(r) in gone for o_ in node.outputs if o_ for r in m.r.of(o_)) \
                    and not any(o_ in m.r.outputs for o_ in node.outputs):
                if id(node) not in gone:
                    gone.add(id(node))
                    pattern.append(node)
            else:
                break
    pattern += ochain
    e = _Emit(ctx)
    qs_, ks_, vs_ = (e.rows(src, bp, n, hp * d, r[4], r[5]) for src, r, n in ((qsrc, qr, s), (ksrc, kr, l_), (vsrc, vr, l_)))
    if None in (qs_, ks_, vs_) or not is_f32(g, qsrc, ksrc, vsrc):
        return None
    bias = ""
    if mask is not None:
        ms_ = _shape(g, mask)
        if where is not None:
            zero, fill = (e.value("mask_const", ()) for _ in range(2))
            g.initializers[zero] = TensorData(FLOAT32, (), struct.pack("<f", 0.0))
            g.initializers[fill] = TensorData(FLOAT32, (), struct.pack("<f", where))
            mask = e.node("Where", [mask, fill, zero], ms_, "mask_bias")
        full = [1] * (len(xs) - len(ms_)) + ms_
        lead = full[:-2]   # over scores' [B, H] or [B*H]
        if all(n == 1 for n in lead):
            mask = e.reshape(mask, [1, 1, full[-2], l_]) if full[-2] == s else \
                e.node("Expand", [mask, e.ints("attn_shape", [1, 1, s, l_])], [1, 1, s, l_], "mask_rows")
        else:
            want = list(xs[:-2]) + [s, l_]
            mask = e.node("Expand", [mask, e.ints("attn_shape", want)], want, "mask_rows")
            if bp == 1 and hp > 1:
                mask = e.reshape(mask, [1, hp, s, l_])
            elif len(xs) == 3:
                return None
        bias = mask
    oshape = _shape(g, out)
    y3 = out if oshape == [bp, s, hp * d] else e.value("attn_out", [bp, s, hp * d])
    mha = ms_node(ctx, "MultiHeadAttention", [qs_, ks_, vs_, "", "", bias] if bias else [qs_, ks_, vs_], [y3], sm.name,
                  num_heads=int(hp), scale=float(scale))
    nodes = e.nodes + [mha]
    if y3 != out:
        nodes.append(Node("Reshape", [y3, e.ints("attn_shape", oshape)], [out], name=out, opset=g.opsets.get("", 17)))
    return pattern, nodes
