"""A decoder's attention over a key/value cache as Optimum's exports write it out, lowered as one
attention: present = Concat(past, new, axis=2) for K and V, [repeat_kv: Unsqueeze -> Expand ->
Reshape], MatMul(Q, Transpose(K, 0 1 3 2)) [* or / scale] [+ mask] -> Softmax [-> Casts] ->
MatMul(., V). kv_append writes each present (the past, then the new rows) and attention_kv reads
it where it is: the kv heads grouped through strides and K read row by row, so neither the
repeat_kv copies nor the transpose of the whole cache are made (kernels_c/linalg/attention_kv.c).

Where the plan places the past and the present in the runner's device region (PlanBuilder.place_io,
wasm/region.py), the present's block has a row capacity: [B, H, cap, D], a head stride of cap * D
with cap a dim of its own bound per run (`@cap:NAME`), as the past's block has. kv_append then
writes into a block whose capacity the runner chose: the past's own block when it has room and no
live tensor owns its rows past the past's length (only the new rows are written, in place), else a
new one (the past copied once, the capacity grown geometrically). Semantics are ONNX's: the
present holds past ++ new; outputs read to the host are compacted.

A plan-level fusion (no graph rewrite): `fuse(b, nodes)` marks the pattern's nodes as fused and
lowers it at its last node, the second MatMul (all its inputs are computed by then). It applies
only where every intermediate value is read by the pattern alone, the past by its Concat alone,
and the present by nothing in the plan but the pattern (a graph output besides)."""
import math
import struct

from ... import dtypes
from ...symbolic import Sym
from ...tensor import TensorData
from .attention_kv import _bias_strides

I32 = dtypes.BY_NAME["int32"]
F32 = 4


def _f32(g, *names):
    return all(g.values.get(n) is not None and g.values[n].dtype is not None
               and g.values[n].dtype.name == "float32" for n in names)


def _shape(g, name):
    vi = g.values.get(name)
    return tuple(vi.shape) if vi is not None and vi.shape is not None else None


def _f32_round(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


# scalar float ops a scale may be computed by in the plan (GPT-2's 1 / sqrt(head size): Div by
# Add(ConstantOfShape, Pow(Cast(d), 0.5))), evaluated at plan build as float32
_SCALAR_OPS = {"Add": lambda a, b: a + b, "Sub": lambda a, b: a - b, "Mul": lambda a, b: a * b,
               "Div": lambda a, b: a / b, "Pow": math.pow, "Sqrt": math.sqrt}


def _scalar(m, name, depth=0):
    """A float32 scalar the plan computes from constants alone, as a Python float, else None."""
    g = m.g
    t = g.initializers.get(name)
    if t is not None:
        if t.numel != 1 or t.dtype.name not in ("float32", "int64", "int32") \
                or any(isinstance(v, Sym) for v in getattr(t, "values", ())):
            return None
        return _f32_round(float(t.tolist()[0]))
    n = m.producer.get(name)
    if n is None or depth > 6 or _shape(g, name) not in ((), (1,)):
        return None
    try:
        if n.op_type == "Cast" and n.attr("to") == 1:
            return _scalar(m, n.inputs[0], depth + 1)
        if n.op_type == "ConstantOfShape":
            v = n.attr("value")
            return _f32_round(float(v.tolist()[0])) if v is not None and v.dtype.name == "float32" else 0.0
        if n.op_type in _SCALAR_OPS:
            xs = [_scalar(m, i, depth + 1) for i in n.inputs]
            return None if None in xs else _f32_round(_SCALAR_OPS[n.op_type](*xs))
    except (ArithmeticError, ValueError, TypeError):
        return None
    return None


class _Match:
    def __init__(self, b, members):
        self.g, self.b = b.graph, b
        self.members = list(members)
        self.producer = {o: n for n in members for o in n.outputs if o}
        self.users = b.users
        self.outputs = set(b.outputs)
        self.nodes = []

    def op(self, name, *types):
        n = self.producer.get(name)
        return n if n is not None and n.op_type in types and n.domain in ("", "ai.onnx") else None

    def only(self, name, node):
        """Whether node is name's one reader, and name no output of the plan."""
        users = self.users.get(name, [])
        return len(users) == 1 and users[0] is node and name not in self.outputs


def _kv_side(m, name, reader, transposed):
    """(present, past, new, [nodes]) if `name` (read by `reader`) is a present = Concat(past, new, 2),
    possibly through a Transpose (perm 0 1 3 2; transposed) and a repeat_kv, else None."""
    g, nodes, factor = m.g, [], 1.0
    if transposed:
        sc = m.op(name, "Mul")
        if sc is not None and m.only(name, reader):   # K^T * c: torch's sdpa export scales Q and K^T by sqrt(scale)
            i = next((i for i in sc.inputs if m.op(i, "Transpose") is not None), None)
            factor = _scalar(m, sc.inputs[1] if sc.inputs[0] == i else sc.inputs[0]) if i else None
            if factor is None:
                return None
            nodes.append(sc)
            reader, name = sc, i
        t = m.op(name, "Transpose")
        if t is None or list(t.attr("perm", [])) != [0, 1, 3, 2] or not m.only(name, reader):
            return None
        nodes.append(t)
        reader, name = t, t.inputs[0]
    r = m.op(name, "Reshape")
    if r is not None:   # repeat_kv: [B, Hkv, T, D] -> [B, Hkv, 1, T, D] -> [B, Hkv, r, T, D] -> [B, Hkv*r, T, D]
        e = m.op(r.inputs[0], "Expand")
        u = m.op(e.inputs[0], "Unsqueeze") if e is not None else None
        if u is None or not (m.only(name, reader) and m.only(r.inputs[0], r) and m.only(e.inputs[0], e)):
            return None
        src, us, es, rs = _shape(g, u.inputs[0]), _shape(g, u.outputs[0]), _shape(g, e.outputs[0]), _shape(g, name)
        if not (src and us and es and rs and len(src) == 4 and len(us) == 5 and len(es) == 5 and len(rs) == 4):
            return None
        b_, h, t_, d = src
        if us != (b_, h, 1, t_, d) or es[:2] != (b_, h) or es[3:] != (t_, d) or rs != (b_, h * es[2], t_, d):
            return None
        nodes += [r, e, u]
        reader, name = u, u.inputs[0]
    c = m.op(name, "Concat")
    if c is None or len(c.inputs) != 2 or not all(c.inputs):
        return None
    shape = _shape(g, name)
    if shape is None or len(shape) != 4 or c.attr("axis", 0) not in (2, -2):
        return None
    users = m.users.get(name, [])
    if len(users) != 1 or users[0] is not reader:   # the present: read by the pattern alone (and the plan's output)
        return None
    past, new = c.inputs
    if past in m.producer or past in m.g.initializers or sum(past in n.inputs for n in m.members) != 1:
        return None
    if _shape(g, past) is None or len(_shape(g, past)) != 4 or not _f32(g, past, new, name):
        return None
    nodes.append(c)
    return name, past, new, nodes, factor


def _match(m, mm2):
    g = m.g
    if len(mm2.inputs) != 2:
        return None
    probs = mm2.inputs[0]
    chain, reader = [], mm2
    node = m.producer.get(probs)
    while node is not None and node.op_type == "Cast" and node.attr("to") == 1 and m.only(node.outputs[0], reader):
        chain.append(node)
        reader, node = node, m.producer.get(node.inputs[0])
    nan_zero = None   # Where(IsNaN(p), 0, p): torch's sdpa export zeroes the rows a mask leaves empty
    if node is not None and node.op_type == "Where" and m.only(node.outputs[0], reader):
        isnan = m.op(node.inputs[0], "IsNaN")
        if isnan is None or isnan.inputs[0] != node.inputs[2] or _scalar(m, node.inputs[1]) != 0.0 \
                or not m.only(node.inputs[0], node):
            return None
        users = m.users.get(node.inputs[2], [])
        if len(users) != 2 or {id(u) for u in users} != {id(node), id(isnan)} or node.inputs[2] in m.outputs:
            return None
        nan_zero = node.inputs[1]
        chain += [node, isnan]
        node = m.producer.get(node.inputs[2])
    elif not (node is not None and m.only(node.outputs[0], reader)):
        return None
    sm = node
    if sm is None or sm.op_type != "Softmax" or sm.opset < 13 or sm.attr("axis", -1) not in (-1, 3):
        return None
    x = sm.inputs[0]
    xs = _shape(g, x)
    if xs is None or len(xs) != 4 or not _f32(g, x):
        return None
    nodes, mask, reader, where = [sm] + chain, None, sm, None
    add = m.op(x, "Add")
    if add is not None and m.only(x, sm):
        for i, cand in enumerate(add.inputs):
            other = add.inputs[1 - i]
            if m.op(cand, "Mul", "Div", "MatMul", "Where") is not None and _f32(g, other) and _shape(g, other) \
                    and len(_shape(g, other)) == 4:
                mask, x, reader = other, cand, add
                nodes.append(add)
                break
        else:
            return None
    w = m.op(x, "Where")   # GPT-2's causal mask: Where(cond, scores, fill) before the additive mask
    if w is not None:
        cond, fill = w.inputs[0], w.inputs[2]
        cs, fv = _shape(g, cond), _scalar(m, fill)
        if not m.only(x, reader) or cs is None or len(cs) != 4 or g.values[cond].dtype.name != "bool" \
                or fv is None or fill not in g.initializers or _shape(g, fill) not in ((), (1,)):
            return None
        where = (cond, fill)
        nodes.append(w)
        x, reader = w.inputs[1], w
        cast = m.op(x, "Cast")
        while cast is not None and cast.attr("to") == 1 and _f32(g, cast.inputs[0]) and m.only(x, reader):
            nodes.append(cast)   # a float32 -> float32 Cast: the same values
            x, reader = cast.inputs[0], cast
            cast = m.op(x, "Cast")
    scale = 1.0
    sc = m.op(x, "Mul", "Div")
    if sc is not None:
        if not m.only(x, reader):
            return None
        qk = next((i for i in sc.inputs if m.op(i, "MatMul") is not None), None)
        c = _scalar(m, sc.inputs[1] if sc.inputs[0] == qk else sc.inputs[0]) if qk else None
        if c is None or c == 0 or (sc.op_type == "Div" and sc.inputs[0] != qk):
            return None
        scale = c if sc.op_type == "Mul" else 1.0 / c
        nodes.append(sc)
        x, reader = qk, sc
    mm1 = m.op(x, "MatMul")
    if mm1 is None or not m.only(x, reader):
        return None
    nodes.append(mm1)
    q = mm1.inputs[0]
    k = _kv_side(m, mm1.inputs[1], mm1, True)
    v = _kv_side(m, mm2.inputs[1], mm2, False)
    if k is None or v is None:
        return None
    qs, ys = _shape(g, q), _shape(g, mm2.outputs[0])
    ks, vs = _shape(g, k[0]), _shape(g, v[0])
    if not (qs and ys and len(qs) == 4 and _f32(g, q, mm2.outputs[0])):
        return None
    batch, hq, s, d = qs
    _, hkv, t, dk = ks
    if ks[0] != batch or dk != d or vs[:3] != (batch, hkv, t) or hq % hkv or ys != (batch, hq, s, vs[3]) \
            or xs != (batch, hq, s, t) or _shape(g, k[2])[2] != s or _shape(g, v[2])[2] != s:
        return None
    scale *= k[4]
    bias = _broadcast([_shape(g, n) for n in (mask, where and where[0]) if n])
    if bias is not None and _bias_strides(bias, hq, s, t) is None:
        return None
    return dict(nodes=nodes + k[3] + v[3], q=q, k=k, v=v, mask=mask, where=where, scale=scale, y=mm2.outputs[0],
                nan_zero=nan_zero,
                dims=(batch, hq, hkv, s, t, d, vs[3]))


def _broadcast(shapes):
    """The broadcast of rank-4 shapes (None for none)."""
    if not shapes:
        return None
    out = list(shapes[0])
    for sh in shapes[1:]:
        if len(sh) != 4:
            return None
        out = [a if b_ == 1 else b_ for a, b_ in zip(out, sh)]
    return tuple(out)


def _strides(shape, out):
    acc, st = 1, [0] * 4
    for i in range(3, -1, -1):
        st[i] = 0 if shape[i] == 1 and out[i] != 1 else acc
        acc *= shape[i]
    return st


def _six(prefix, values, fill):
    return {f"{prefix}{i}": (list(values) + [fill] * 6)[i] for i in range(6)}


def _where_bias(b, f):
    """The additive bias of Where(cond, scores, fill) + mask: Where(cond, mask, fill + mask) (or
    Where(cond, 0, fill) without a mask), computed per run ([B|1, 1|H, S, T]: no work of the cache's
    size). scores + fill rounds to fill for any score under 1e31 in magnitude, so the softmax is the
    same."""
    g = b.graph
    cond, fill = f["where"]
    mask = f["mask"]
    out = _broadcast([_shape(g, n) for n in (mask, cond) if n])
    bias = b.scratch(4 * out[0] * out[1] * out[2] * out[3])
    if mask is not None:
        ms = _shape(g, mask)
        tmp = b.scratch(4 * ms[0] * ms[1] * ms[2] * ms[3])
        b.emit("binary", kind=0, a=b.ref(mask), b=b.ref(fill), y=tmp, rank=4, **_six("d", ms, 1),
               **_six("as", _strides(ms, ms), 0), **_six("bs", [], 0))
        x, xs, y, ys = b.ref(mask), _strides(ms, out), tmp, _strides(ms, out)
    else:
        x, xs = b.constant(TensorData(dtypes.BY_NAME["float32"], (), bytes(4))), [0] * 4
        y, ys = b.ref(fill), [0] * 4
    b.emit("where", esize=4, cond=b.ref(cond), x=x, y=y, out=bias, rank=4, **_six("d", out, 1),
           **_six("cs", _strides(_shape(g, cond), out), 0), **_six("xs", xs, 0), **_six("ys", ys, 0))
    return bias, out


def fuse(b, members):
    """Marks every match among the plan's nodes as fused into its second MatMul, whose lowering
    (b.lower_as) emits the whole attention."""
    m = _Match(b, members)
    for mm2 in members:
        if mm2.op_type != "MatMul" or mm2.domain not in ("", "ai.onnx") or id(mm2) in b.fused:
            continue
        found = _match(m, mm2)
        if found is None or any(id(n) in b.fused for n in found["nodes"]):
            continue
        p = _shape(b.graph, found["k"][1])[2]
        if p == 0:   # a first step's empty past: the Concat's own lowering (empty.py) skips it
            continue
        for n in found["nodes"]:
            b.fused.add(id(n))
        b.lower_as[id(mm2)] = lambda b, f=found: _lower(b, f)


def _append(b, present, past, new, batch, heads, p, t, s, d):
    """kv_append of present = past ++ new ([B, H, S, D] contiguous), into the present's block at its
    run-time row capacity where the runner places both (a long-lived cache), else plainly."""
    x_strides = dict(x_bs=heads * s * d, x_rs=d, x_hs=s * d)
    if b.will_place(past) and b.will_place(present):
        cap_in, cap_out = b.capacity_dim(past), b.capacity_dim(present)
        b.capacity[present] = (past, cap_in, cap_out)
        # n_b = lens[b] + P rows of the past are kept (zeros: no per-batch lengths); its block is
        # [B, H, cap_in, D], the present's [B, H, cap_out, D]; the same block when cap_in == cap_out
        n = int(batch)
        lens = b.constant(TensorData(I32, (n,), bytes(4 * n)))
        args = dict(past=b.ref(past), x=b.ref(new), lens=lens, y=b.ref(present), batch=batch, heads=heads,
                    p=Sym.var(cap_in), t=Sym.var(cap_out), s=s, d=d, lens_add=p, **x_strides)
        b.emit_unchecked("kv_append", {**args, "p": p, "t": t}, args)
        cap = Sym.var(cap_out)
        return (heads * cap * d, d, cap * d)
    b.emit("kv_append", past=b.ref(past), x=b.ref(new), lens=None, y=b.ref(present), batch=batch, heads=heads,
           p=p, t=t, s=s, d=d, lens_add=0, **x_strides)
    return (heads * t * d, d, t * d)


def _lower(b, f):
    g = b.graph
    batch, hq, hkv, s, t, d, dv = f["dims"]
    (pk_name, past_k, new_k, _, _), (pv_name, past_v, new_v, _, _) = f["k"], f["v"]
    p = _shape(g, past_k)[2]
    ks = _append(b, pk_name, past_k, new_k, batch, hkv, p, t, s, d)
    vs = _append(b, pv_name, past_v, new_v, batch, hkv, p, t, s, dv)
    kw = {}
    if f["where"] is not None:
        bias, shape = _where_bias(b, f)
        m_bs, m_hs, m_rs = _bias_strides(shape, hq, s, t)
        kw.update(bias=bias, m_bs=m_bs, m_hs=m_hs, m_rs=m_rs)
    elif f["mask"] is not None:
        m_bs, m_hs, m_rs = _bias_strides(_shape(g, f["mask"]), hq, s, t)
        kw.update(bias=b.ref(f["mask"]), m_bs=m_bs, m_hs=m_hs, m_rs=m_rs)
    if f["nan_zero"] is None:
        return _attention(b, f, b.ref(f["y"]), ks, vs, batch, hq, hkv, s, t, d, dv, kw)
    # Where(IsNaN(probs), 0, probs) @ V: a row whose keys are all masked (NaN probabilities) gives 0;
    # attention_kv gives NaN there, made 0 after it (a NaN from Q, K or V makes that row NaN in both)
    n = batch * hq * s * dv
    z, nan = b.scratch(F32 * n), b.scratch(n)
    _attention(b, f, z, ks, vs, batch, hq, hkv, s, t, d, dv, kw)
    b.emit("unary_bool", kind=1, x=z, y=nan, count=n)
    b.emit("where", esize=4, cond=nan, x=b.ref(f["nan_zero"]), y=z, out=b.ref(f["y"]), rank=1, **_six("d", [n], 1),
           **_six("cs", [1], 0), **_six("xs", [0], 0), **_six("ys", [1], 0))


def _attention(b, f, y, ks, vs, batch, hq, hkv, s, t, d, dv, kw):
    """attention_kv (the arguments lower/attention_kv.py's _attend gives it) reading K and V at the
    present's strides, which may hold a capacity dim: checked with the plain strides, emitted with
    these."""
    args = dict(q=b.ref(f["q"]), k=b.ref(f["k"][0]), v=b.ref(f["v"][0]), y=y, batch=batch, heads=hq,
                kv_heads=hkv, s=s, t=t, d=d, dv=dv, q_bs=hq * s * d, q_rs=d, q_hs=s * d, k_bs=ks[0], k_rs=ks[1],
                k_hs=ks[2], v_bs=vs[0], v_rs=vs[1], v_hs=vs[2], y_bs=hq * s * dv, y_rs=dv, y_hs=s * dv,
                scale=float(f["scale"]), lens=None, sink=None, causal=0, c0=0, lens_add=0, window=-1, smooth=0,
                softcap=0.0, mask_value=-10000.0, bias=None, m_bs=0, m_hs=0, m_rs=0, kmask=None, kend=None,
                kstart=None, km_bs=0, km_rs=0)
    args.update(kw)
    args["scratch"] = b.scratch(F32 * (d * t + s * t if s > 1 else t))   # attention_kv.c's by_block or one row
    plain = dict(args, k_bs=hkv * t * d, k_hs=t * d, v_bs=hkv * t * dv, v_hs=t * dv)
    b.emit_unchecked("attention_kv", plain, args)
