"""Transformer fusions, as onnxruntime's: LayerNormalization from its decomposed form, and GELU
from its Erf form or its Tanh approximation.

LayerNorm:  m = ReduceMean(x); d = Sub(x, m); v = ReduceMean(Pow(d, 2) | Mul(d, d));
            y = Div(d, Sqrt(Add(v, eps))) | Mul(d, Reciprocal(Sqrt(...)) | Div(1, Sqrt(...)));
            [Mul(y, gamma)] [Add(., beta)], or Div(Mul(gamma, d), Sqrt(...)) [Add(., beta)]
            (hand-written: `w * (x - mean) / torch.sqrt(var + eps) + b`; its two `x - mean` are one
            after optimizer/cse.py)
            -> LayerNormalization(x, gamma, beta, axis, epsilon) (ai.onnx; before opset 17 it is
               onnxruntime's contrib registration of the same op in that domain)
GELU (erf): Erf(Div(x, sqrt 2) | Mul(x, 1/sqrt 2)) -> Add 1 -> times x and 0.5 in any order
            -> Gelu (ai.onnx from opset 20, else com.microsoft Gelu)
GELU (tanh): Tanh(Mul(Add(x, Mul(Pow(x, 3) | Mul(x, Mul(x, x)), 0.044715)), sqrt(2/pi))) -> Add 1
            -> times x and 0.5 -> Gelu(approximate="tanh") from opset 20, else com.microsoft FastGelu
"""
import math
import struct

from ..dtypes import FLOAT32, INT64
from ..ir import Node, ValueInfo
from ..ops.shapes import known
from ..tensor import TensorData
from .attention_views import attention_by_views   # the general matcher: any movement chain
from .rewrite import Readers, accept, close, const_scalar, const_values, is_f32, ms_node, splice


class _Match:
    """Walks a pattern: nodes seen so far, each intermediate value read only inside it."""

    def __init__(self, g, r):
        self.g, self.r, self.nodes = g, r, []
        self.producers = g.producers()

    def op(self, name, *types):
        """The node producing `name` if it is one of types (ai.onnx), else None."""
        n = self.producers.get(name)
        return n if n is not None and n.domain == "" and n.op_type in types else None

    def reader(self, name, *types):
        n = self.r.only(name)
        return n if n is not None and n.domain == "" and n.op_type in types else None

    @staticmethod
    def other(node, name):
        """node's input that is not `name` (binary ops), or None if both are."""
        a, b = node.inputs[:2]
        return b if a == name else a if b == name else None


def _reduce_axes(g, node, rank):
    if node.attr("keepdims", 1) != 1:
        return None
    if node.opset >= 18:
        vals = const_values(g, node.inputs[1]) if len(node.inputs) > 1 and node.inputs[1] else None
    else:
        vals = node.attr("axes")
    if not vals:
        return None
    axes = sorted(a % rank for a in vals)
    return axes if axes == list(range(axes[0], rank)) else None


def _tensor_f32(ctx, hint, shape, values):
    name = ctx.fresh(hint)
    ctx.graph.initializers[name] = TensorData(FLOAT32, shape, struct.pack(f"<{len(values)}f", *values))
    ctx.graph.values[name] = ValueInfo(name, FLOAT32, tuple(shape))
    return name


def _layer_norm_at(ctx, mean1, m):
    g = ctx.graph
    x = mean1.inputs[0]
    xs = g.values[x].shape if x in g.values else None
    if xs is None or not is_f32(g, x):
        return None
    axes = _reduce_axes(g, mean1, len(xs))
    if axes is None or any(not known(xs[a]) for a in axes):
        return None
    sub = m.reader(mean1.outputs[0], "Sub")
    if sub is None or sub.inputs[0] != x:
        return None
    d = sub.outputs[0]
    readers = m.r.of(d)
    if len(readers) != 2 or d in m.r.outputs:
        return None
    sq = next((n for n in readers if n.op_type == "Pow" or (n.op_type == "Mul" and n.inputs[0] == n.inputs[1] == d)), None)
    if sq is None or (sq.op_type == "Pow" and not close(const_scalar(g, sq.inputs[1]), 2.0, 1e-6)):
        return None
    mean2 = m.reader(sq.outputs[0], "ReduceMean")
    if mean2 is None or _reduce_axes(g, mean2, len(xs)) != axes:
        return None
    add = m.reader(mean2.outputs[0], "Add")
    eps = const_scalar(g, m.other(add, mean2.outputs[0])) if add is not None else None
    sqrt = m.reader(add.outputs[0], "Sqrt") if eps is not None else None
    if sqrt is None:
        return None
    div = next((n for n in readers if n is not sq), None)
    pattern = [mean1, sub, sq, mean2, add, sqrt, div]
    norm_shape = tuple(xs[axes[0]:])
    gamma = beta = None

    def weight(name):   # a float32 constant of the normalized shape, or None
        t = g.initializers.get(name) if name else None
        return name if t is not None and t.dtype == FLOAT32 and _squeeze(t.shape) == _squeeze(norm_shape) else None
    s = sqrt.outputs[0]
    if div.domain == "" and div.op_type == "Mul" and weight(m.other(div, d)) and m.reader(div.outputs[0], "Div") \
            and m.r.only(div.outputs[0]).inputs == [div.outputs[0], s] and m.r.only(s) is m.r.only(div.outputs[0]):
        # gamma * (x - mean) / sqrt(var + eps): the scale before the division (hand-written LayerNorms)
        gamma, last = m.other(div, d), m.r.only(div.outputs[0])
        pattern.append(last)
        y = last.outputs[0]
    elif div.op_type == "Div" and div.inputs == [d, s] and m.r.only(s) is div:
        y = div.outputs[0]
    elif div.op_type == "Mul" and m.r.only(s) is not None and m.r.only(s).domain == "" and (
            m.r.only(s).op_type == "Reciprocal" or (m.r.only(s).op_type == "Div" and m.r.only(s).inputs[1] == s
                                                    and close(const_scalar(g, m.r.only(s).inputs[0]), 1.0, 1e-7))):
        rec = m.r.only(s)   # (x - mean) * Reciprocal(sqrt) | (x - mean) * (1 / sqrt): torch.rsqrt
        if m.other(div, d) != rec.outputs[0] or m.r.only(rec.outputs[0]) is not div:
            return None
        pattern.append(rec)
        y = div.outputs[0]
    else:
        return None
    mul = m.reader(y, "Mul") if gamma is None else None
    if mul is not None and weight(m.other(mul, y)):
        gamma, y = m.other(mul, y), mul.outputs[0]
        pattern.append(mul)
    if gamma is not None:
        badd = m.reader(y, "Add")
        bname = weight(m.other(badd, y) if badd is not None else None)
        if bname:
            beta, y = bname, badd.outputs[0]
            pattern.append(badd)
    n = 1
    for s in norm_shape:
        n *= s
    gamma = _reshaped(ctx, gamma, norm_shape) if gamma else _tensor_f32(ctx, "ln_gamma", norm_shape, [1.0] * n)
    inputs = [x, gamma] + ([_reshaped(ctx, beta, norm_shape)] if beta else [])
    ln = Node("LayerNormalization", inputs, [y], name=mean1.name,
              attrs={"axis": axes[0], "epsilon": float(eps)}, opset=g.opsets.get("", 17))
    return pattern, ln


def _squeeze(shape):
    shape = tuple(shape)
    while shape and shape[0] == 1:
        shape = shape[1:]
    return shape


def _reshaped(ctx, name, shape):
    """The constant `name` with exactly `shape` (its leading 1s dropped or added)."""
    t = ctx.graph.initializers[name]
    if t.shape == shape:
        return name
    new = ctx.fresh(name + "_ln")
    ctx.graph.initializers[new] = TensorData(t.dtype, shape, t.data)
    ctx.graph.values[new] = ValueInfo(new, t.dtype, shape)
    return new


def _replace_matches(ctx, anchor, match_at):
    """Replaces each pattern match_at(ctx, node, m) finds at a default-domain node that anchor()
    accepts by the node (or the list of nodes, in order) it returns, where no node of it went to an earlier match and a
    provider accepts the replacement; returns how many were replaced."""
    g, r, count, used = ctx.graph, Readers(ctx.graph), 0, set()
    for node in list(g.nodes):
        if node.domain != "" or not anchor(node) or id(node) in used:
            continue
        found = match_at(ctx, node, _Match(g, r))
        if found is None:
            continue
        pattern, new = found
        new = new if isinstance(new, list) else [new]
        if any(id(n) in used for n in pattern) or not all(accept(ctx, n, pattern) for n in new):
            continue
        used.update(id(n) for n in pattern)
        if splice(g, pattern, new):
            count += 1
    return count


def fuse_layer_norm(ctx):
    return _replace_matches(ctx, lambda n: n.op_type == "ReduceMean", _layer_norm_at)


def _gelu_tail(g, m, x, one_plus):
    """The nodes after Add(., 1) that multiply by x and 0.5, and the output; or None."""
    m1 = m.reader(one_plus, "Mul")
    if m1 is None:
        return None
    other = m.other(m1, one_plus)
    if other == x:                                   # (x * (1 + e)) * 0.5
        m2 = m.reader(m1.outputs[0], "Mul")
        if m2 is not None and close(const_scalar(g, m.other(m2, m1.outputs[0])), 0.5):
            return [m1, m2], m2.outputs[0]
        return None
    if close(const_scalar(g, other), 0.5):            # ((1 + e) * 0.5) * x
        m2 = m.reader(m1.outputs[0], "Mul")
        if m2 is not None and m.other(m2, m1.outputs[0]) == x:
            return [m1, m2], m2.outputs[0]
        return None
    half = m.op(other, "Mul")                         # (x * 0.5) * (1 + e)
    if half is not None and m.r.only(other) is m1 and m.other(half, x) is not None \
            and close(const_scalar(g, m.other(half, x)), 0.5):
        return [half, m1], m1.outputs[0]
    return None


def _plus_one(g, m, name):
    add = m.reader(name, "Add")
    return add if add is not None and close(const_scalar(g, m.other(add, name)), 1.0) else None


def _gelu_erf(g, m, erf):
    scaled = m.op(erf.inputs[0], "Div", "Mul")
    if scaled is None or m.r.only(erf.inputs[0]) is not erf:
        return None
    x, k = scaled.inputs[0], const_scalar(g, scaled.inputs[1])
    if not (close(k, math.sqrt(2)) if scaled.op_type == "Div" else close(k, 1 / math.sqrt(2))):
        return None
    add = _plus_one(g, m, erf.outputs[0])
    tail = _gelu_tail(g, m, x, add.outputs[0]) if add is not None else None
    return None if tail is None else (x, [scaled, erf, add] + tail[0], tail[1])


def _gelu_tanh(g, m, tanh):
    s = m.op(tanh.inputs[0], "Mul")
    if s is None or m.r.only(tanh.inputs[0]) is not tanh:
        return None
    inner = next((i for i in s.inputs if close(const_scalar(g, m.other(s, i)), math.sqrt(2 / math.pi))), None)
    r = m.op(inner, "Add") if inner else None
    if r is None or m.r.only(inner) is not s:
        return None
    for x in r.inputs:
        q = m.op(m.other(r, x) or "", "Mul")
        if q is None or m.r.only(q.outputs[0]) is not r:
            continue
        cube_name = next((i for i in q.inputs if close(const_scalar(g, m.other(q, i)), 0.044715)), None)
        cube = m.op(cube_name, "Pow", "Mul") if cube_name else None
        if cube is None or m.r.only(cube_name) is not q:
            continue
        extra = []
        if cube.op_type == "Pow":
            if cube.inputs[0] != x or not close(const_scalar(g, cube.inputs[1]), 3.0, 1e-6):
                continue
        else:
            sq_name = m.other(cube, x)
            sq = m.op(sq_name or "", "Mul")
            if sq is None or sq.inputs != [x, x] or m.r.only(sq_name) is not cube:
                continue
            extra = [sq]
        add = _plus_one(g, m, tanh.outputs[0])
        tail = _gelu_tail(g, m, x, add.outputs[0]) if add is not None else None
        if tail is not None:
            return x, extra + [cube, q, r, s, tanh, add] + tail[0], tail[1]
    return None


def _gelu_at(ctx, node, m):
    g = ctx.graph
    found = (_gelu_erf if node.op_type == "Erf" else _gelu_tanh)(g, m, node)
    if found is None or not is_f32(g, found[0]):
        return None
    x, pattern, y = found
    opset = g.opsets.get("", 0)
    if opset >= 20:
        attrs = {"approximate": "tanh"} if node.op_type == "Tanh" else {}
        return pattern, Node("Gelu", [x], [y], name=node.name, attrs=attrs, opset=opset)
    return pattern, ms_node(ctx, "Gelu" if node.op_type == "Erf" else "FastGelu", [x], [y], node.name)


def fuse_gelu(ctx):
    return _replace_matches(ctx, lambda n: n.op_type in ("Erf", "Tanh"), _gelu_at)


def _compose(p1, p2):
    """The one Transpose perm that Transpose(p2) of Transpose(p1) is."""
    return [p1[i] for i in p2]


def _head_split(g, m, name, perm):
    """(x, heads, nodes, scale) if name = [Mul(., c)] Transpose(perm)(Reshape(x [B, S, H*D] -> [B, S, H, D])),
    each value read only there; the perm may come as a chain of Transposes (`k.transpose(1, 2)` then
    `.transpose(-2, -1)`, or torch's SDPA export) and a scalar constant may scale it (SDPA's
    sqrt(scale) on q and k): scale is that constant, else 1."""
    nodes, scale = [], 1.0
    mul = m.op(name, "Mul")
    if mul is not None:
        c = next((const_scalar(g, i) for i in mul.inputs if const_scalar(g, i) is not None), None)
        inner = next((i for i in mul.inputs if const_scalar(g, i) is None), None)
        if c is None or inner is None or len(m.r.of(mul.outputs[0])) != 1:
            return None
        nodes.append(mul)
        scale, name = c, inner
    chain = []
    t = m.op(name, "Transpose")
    while t is not None and len(m.r.of(t.outputs[0])) == 1 and t.outputs[0] not in m.r.outputs:
        chain.append(t)
        t = m.op(t.inputs[0], "Transpose")
    if not chain:
        return None
    composed = list(range(4))
    for t in reversed(chain):
        p = list(t.attr("perm", []))
        if len(p) != 4:
            return None
        composed = _compose(composed, p)
    if composed != perm:
        return None
    r = m.op(chain[-1].inputs[0], "Reshape")
    if r is None or len(m.r.of(r.outputs[0])) != 1 or r.outputs[0] in m.r.outputs:
        return None
    xs, rs = g.values.get(r.inputs[0]), g.values.get(r.outputs[0])
    if xs is None or rs is None or xs.shape is None or rs.shape is None or len(xs.shape) != 3 or len(rs.shape) != 4:
        return None
    if not all(known(d) for d in tuple(xs.shape) + tuple(rs.shape)):
        return None
    b, s, hd = xs.shape
    if tuple(rs.shape[:2]) != (b, s) or rs.shape[2] * rs.shape[3] != hd:
        return None
    return r.inputs[0], rs.shape[2], [r] + chain + nodes, scale


# A masked_fill value at or below this is "minus infinity" for softmax: exp(fill + s - max) is 0 in
# float32 for any score a finite model makes, so Where(cond, fill, s) and s + Where(cond, fill, 0)
# give the same probabilities (they differ only on a row with every key masked).
MASK_FILL_MAX = -1e4


def _mask_shape_ok(ms, xs):
    """A mask shape that broadcasts onto scores [B, H, S, L] along B, H and S only."""
    return ms is not None and len(ms) == 4 and all(known(d) for d in ms) and ms[0] in (1, xs[0]) \
        and ms[1] in (1, xs[1]) and ms[2] in (1, xs[2]) and ms[3] == xs[3]


def _scores(m, name):
    """Whether name is MatMul(q, k) or a scalar scaling of one (the scores, not a mask)."""
    if m.op(name, "MatMul") is not None:
        return True
    sc = m.op(name, "Mul", "Div")
    return sc is not None and any(m.op(i, "MatMul") is not None for i in sc.inputs)


def _attention_at(ctx, sm, m):
    g = ctx.graph
    x = sm.inputs[0]
    xs = g.values.get(x)
    if xs is None or xs.shape is None or len(xs.shape) != 4 or sm.attr("axis", -1) not in (-1, 3):
        return None
    if sm.opset < 13 and sm.attr("axis", 1) != 3:
        return None
    if not all(known(d) for d in xs.shape):
        return None
    pattern, mask, where = [sm], "", None
    pre = m.op(x, "Add", "Where")
    if pre is not None and m.r.only(x) is sm:
        if pre.op_type == "Add":
            for cand in pre.inputs:
                other = m.other(pre, cand)
                if _scores(m, cand) and other and g.values.get(other) is not None \
                        and _mask_shape_ok(g.values[other].shape, xs.shape) and is_f32(g, other):
                    mask, x = other, cand
                    pattern.append(pre)
                    break
            else:
                return None
        else:   # masked_fill(cond, fill): Where(cond, fill, scores)
            cond, fill, val = pre.inputs
            f = const_scalar(g, fill)
            cv = g.values.get(cond)
            if f is None or not f <= MASK_FILL_MAX or cv is None or cv.dtype is None or cv.dtype.name != "bool" \
                    or not _mask_shape_ok(cv.shape, xs.shape) or not _scores(m, val):
                return None
            where, x = (cond, f), val
            pattern.append(pre)
    scale, sc = 1.0, m.op(x, "Mul", "Div")
    if sc is not None:
        if m.r.only(x) is not pattern[-1]:
            return None
        qk = next((i for i in sc.inputs if const_scalar(g, m.other(sc, i)) is not None), None)
        c = const_scalar(g, m.other(sc, qk)) if qk else None
        if c is None or c == 0 or (sc.op_type == "Mul" and sc.inputs[0] != qk and sc.inputs[1] != qk):
            return None
        if sc.op_type == "Div" and sc.inputs[0] != qk:
            return None
        scale = c if sc.op_type == "Mul" else 1.0 / c
        pattern.append(sc)
    else:
        qk = x
    mm1 = m.op(qk, "MatMul")
    if mm1 is None or m.r.only(qk) is not pattern[-1]:
        return None
    pattern.append(mm1)
    q = _head_split(g, m, mm1.inputs[0], [0, 2, 1, 3])
    k = _head_split(g, m, mm1.inputs[1], [0, 2, 3, 1])
    mm2 = m.reader(sm.outputs[0], "MatMul")
    if q is None or k is None or mm2 is None or mm2.inputs[0] != sm.outputs[0]:
        return None
    v = _head_split(g, m, mm2.inputs[1], [0, 2, 1, 3])
    t = m.reader(mm2.outputs[0], "Transpose")
    if v is None or v[3] != 1.0 or t is None or list(t.attr("perm", [])) != [0, 2, 1, 3]:
        return None
    scale *= q[3] * k[3]
    r = m.reader(t.outputs[0], "Reshape")
    if r is None or g.values.get(r.outputs[0]) is None:
        return None
    heads = q[1]
    qs, ks, ys = g.values[q[0]].shape, g.values[k[0]].shape, g.values[r.outputs[0]].shape
    if k[1] != heads or v[1] != heads or tuple(ys or ()) != tuple(qs) or tuple(g.values[v[0]].shape) != tuple(ks) \
            or ks[0] != qs[0] or ks[2] != qs[2] or not is_f32(g, q[0], k[0], v[0]) or scale == 0:
        return None
    for name in (mm1.outputs[0], sc.outputs[0] if sc else "", x, sm.outputs[0], mm2.outputs[0], t.outputs[0]):
        if name and name in m.r.outputs:
            return None
    pattern += q[2] + k[2] + v[2] + [mm2, t, r]
    extra = []
    if where is not None:   # the condition as an additive bias: Where(cond, fill, 0)
        cond, fill = where
        ms_ = tuple(g.values[cond].shape)
        mask = ctx.fresh(sm.name + "_mask_bias")
        extra.append(Node("Where", [cond, _tensor_f32(ctx, "mask_fill", (), [fill]), _tensor_f32(ctx, "mask_zero", (), [0.0])],
                          [mask], name=mask, opset=g.opsets.get("", 17)))
        g.values[mask] = ValueInfo(mask, FLOAT32, ms_)
    if mask and g.values[mask].shape[2] != xs.shape[2]:   # [B|1, H|1, 1, L]: MultiHeadAttention wants S rows
        ms_ = g.values[mask].shape
        full = (ms_[0], ms_[1], xs.shape[2], xs.shape[3])
        shape = ctx.fresh(sm.name + "_mask_shape")
        g.initializers[shape] = TensorData(INT64, (4,), struct.pack("<4q", *full))
        g.values[shape] = ValueInfo(shape, INT64, (4,))
        expanded = ctx.fresh(sm.name + "_mask_rows")
        extra.append(Node("Expand", [mask, shape], [expanded], name=expanded, opset=g.opsets.get("", 17)))
        g.values[expanded] = ValueInfo(expanded, FLOAT32, full)
        mask = expanded
    node = ms_node(ctx, "MultiHeadAttention", [q[0], k[0], v[0], "", "", mask] if mask else [q[0], k[0], v[0]],
                   [r.outputs[0]], sm.name, num_heads=int(heads), scale=float(scale))
    return pattern, extra + [node]


def fuse_attention(ctx):
    return _replace_matches(ctx, lambda n: n.op_type == "Softmax",
                            lambda ctx, sm, m: _attention_at(ctx, sm, m) or attention_by_views(ctx, sm, m))
