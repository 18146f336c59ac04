"""onnxruntime's attention ops with a key/value cache (com.microsoft GroupQueryAttention,
MultiHeadAttention, Attention) as kernels_c/linalg/attention_kv.c's ops: rope (rotary, or a
strided copy plus bias), kv_append (present = past ++ new, one copy) and attention_kv (each query
row against the cached keys). Q, K and V are read in place from packed QKV, [B, S, N*H] or BNSH
tensors through strides; int32 lengths and masks (seqlens_k, key_padding_mask, mask_index) stay
data the kernels read. MultiHeadAttention's plain form (no bias, mask or past: the optimizer's
fusion) keeps lower/attention.py's GEMM kernel. Semantics: ops/attention_contrib.py."""
import math

from ...ops.shapes import known
from ..plan import Ref
from .attention import check_attention, lower_attention
from .gqa_inplace import append_rows, usable

F32 = 4


def _inputs(node, n):
    return list(node.inputs) + [""] * (n - len(node.inputs))


def _dt(g, name):
    return g.values[name].dtype.name


def _shape(g, name):
    return tuple(g.values[name].shape)


def _static(g, names, may_be_empty=()):
    """A refusal unless every value has a static shape, empty only if named in may_be_empty (a
    zero-length past, the first step of a decoder)."""
    for n in names:
        s = g.values[n].shape
        if s is None or not all(known(d) for d in s):   # a symbolic dim (symbolic.py) is known
            return f"'{n}' has no static shape at plan build"
        if n not in may_be_empty and 0 in s:
            return f"'{n}' is empty"
    return None


def _types(g, floats, ints):
    for n in floats:
        if n and _dt(g, n) != "float32":
            return f"'{n}' is {_dt(g, n)}; this WASM kernel takes float32"
    for n in ints:
        if n and _dt(g, n) != "int32":
            return f"'{n}' is {_dt(g, n)}; the WASM kernel reads int32 lengths and masks"
    return None


def _bias_strides(shape, heads, s, t):
    """m_bs, m_hs, m_rs of an additive bias [B|1, N|1, S, T] (None if it is not of that form)."""
    if len(shape) != 4 or shape[2] != s or shape[3] != t or shape[1] not in (1, heads):
        return None
    return (shape[1] * s * t if shape[0] != 1 else 0, s * t if shape[1] != 1 else 0, t)


def _bias_args(b, g, ab, heads, s, t):
    """_attend's arguments for an additive bias ab (none: {}); check_* made sure of its form."""
    if not ab:
        return {}
    m_bs, m_hs, m_rs = _bias_strides(_shape(g, ab), heads, s, t)
    return dict(bias=b.ref(ab), m_bs=m_bs, m_hs=m_hs, m_rs=m_rs)


def _no_bias():
    return dict(bias=None, m_bs=0, m_hs=0, m_rs=0)


def _no_masks():
    return dict(kmask=None, kend=None, kstart=None, km_bs=0, km_rs=0)


def _attend(b, node, y, q, qs, k, ks, v, vs, batch, heads, kv_heads, s, t, d, dv, scale, ys=None, plain=None, **kw):
    """attention_kv; qs/ks/vs/ys: (bs, rs, hs) element strides (ys default [B, S, heads*dv]); plain:
    K's and V's strides without the run-time row capacity ks/vs hold (lower/gqa_inplace.py), checked
    in their place."""
    ys = ys or (s * heads * dv, heads * dv, dv)
    args = dict(y_bs=ys[0], y_rs=ys[1], y_hs=ys[2], lens=None, sink=None, causal=0, c0=0, lens_add=0, window=-1,
                smooth=0, softcap=0.0, mask_value=float(node.attr("mask_filter_value", -10000.0)))
    args.update(_no_bias())
    args.update(_no_masks())
    args.update(kw)
    block = s > 1 and not (args["causal"] == 1 and args["window"] > 0)   # attention_kv.c's by_block
    scratch = b.scratch(F32 * (d * t + s * t if block else t))   # K^T and [s, t] scores, or one row of scores
    args = dict(q=q, k=k, v=v, y=y, scratch=scratch, batch=batch, heads=heads, kv_heads=kv_heads, s=s, t=t, d=d,
                dv=dv, q_bs=qs[0], q_rs=qs[1], q_hs=qs[2], k_bs=ks[0], k_rs=ks[1], k_hs=ks[2], v_bs=vs[0],
                v_rs=vs[1], v_hs=vs[2], scale=float(scale), **args)
    if plain is None:
        return b.emit("attention_kv", **args)
    kp, vp = plain
    b.emit_unchecked("attention_kv", dict(args, k_bs=kp[0], k_rs=kp[1], k_hs=kp[2], v_bs=vp[0], v_rs=vp[1],
                                          v_hs=vp[2]), args)


def _copy_rows(b, x, xs, batch, s, heads, d, xb=None, out=None, rot=None):
    """rope: [batch, s, heads, d] rows (contiguous, into out or a new scratch) from x at strides xs
    (+ xb, a Ref to heads*d floats); rot: dict(cos, sin, half, max_pos, lens, lens_add, pos, pos_bs,
    interleaved) rotates them."""
    out = out or b.scratch(F32 * batch * s * heads * d)
    r = dict(cos=None, sin=None, half=0, max_pos=0, lens=None, lens_add=0, pos=None, pos_bs=0, interleaved=0)
    r.update(rot or {})
    b.emit("rope", x=x, xb=xb, y=out, batch=batch, s=s, heads=heads, d=d, x_bs=xs[0], x_rs=xs[1], x_hs=xs[2], **r)
    return out, (s * heads * d, heads * d, d)


def _append(b, past, p, x, xs, y, batch, heads, t, s, d, lens=None, lens_add=0):
    b.emit("kv_append", past=past if p else None, x=x, lens=lens, y=y, batch=batch, heads=heads, p=p, t=t, s=s,
           d=d, x_bs=xs[0], x_rs=xs[1], x_hs=xs[2], lens_add=lens_add)
    return y, (heads * t * d, d, t * d)


def _out_or_scratch(b, node, i, nbytes):
    outs = list(node.outputs) + [""] * 4
    return b.ref(outs[i]) if outs[i] else b.scratch(nbytes)


# --- GroupQueryAttention ------------------------------------------------------------------------

def _gqa_dims(node, g):
    q, k, v, pk, pv, sl, tot, cos, sin, pos, ab, sink = _inputs(node, 12)[:12]
    hq, hkv = node.attr("num_heads"), node.attr("kv_num_heads")
    batch, s, w = _shape(g, q)
    d = w // hq if k else w // (hq + 2 * hkv)
    p = _shape(g, pk)[2] if pk else 0
    t = _shape(g, node.outputs[1])[2] if len(node.outputs) > 1 and node.outputs[1] else None
    return hq, hkv, batch, s, d, p, t


def _gqa_total(node, g):
    """total_sequence_length as the plan knows it (a constant after shape folding), or None."""
    t = g.initializers.get(_inputs(node, 7)[6])
    if t is None or t.numel < 1:
        return None
    return t.tolist()[0]   # an expression of the input dims in a traced variant (symbolic.py)


def check_gqa(node, g):
    ins = _inputs(node, 16)
    q, k, v, pk, pv, sl, tot, cos, sin, pos, ab, sink = ins[:12]
    why = _types(g, [q, k, v, pk, pv, cos, sin, ab, sink] + [o for o in node.outputs if o], [sl])
    if why:
        return why
    if pos and _dt(g, pos) != "int64":
        return f"position_ids '{pos}' is {_dt(g, pos)}, not int64"
    why = _static(g, [n for n in ins[:12] if n] + [o for o in node.outputs if o], (pk, pv))
    if why:
        return why
    total = _gqa_total(node, g)
    if total is None:
        return "total_sequence_length is not a constant at plan build (as it is when it comes from Shape)"
    hq, hkv, batch, s, d, p, t = _gqa_dims(node, g)
    if not (len(node.outputs) >= 3 and node.outputs[1] and node.outputs[2]):
        return "GroupQueryAttention without present_key/present_value outputs"
    if t != (total if total >= p else p) or s > t:
        return f"present length {t} is not max(total_sequence_length {total}, past {p})"
    if ab and _bias_strides(_shape(g, ab), hq, s, t) is None:
        return f"attention_bias {list(_shape(g, ab))} is not [B|1, {hq}|1, {s}, {t}]"
    if pos and _shape(g, pos) not in ((batch, s), (1, s)):
        return f"position_ids {list(_shape(g, pos))} is not [{batch}|1, {s}]"
    if node.attr("do_rotary", 0) and (len(_shape(g, cos)) != 2 or 2 * _shape(g, cos)[1] > d):
        return "cos_cache is not [max positions, <= head size / 2]"
    if node.attr("do_rotary", 0) and _shape(g, cos) != _shape(g, sin):
        return "cos_cache and sin_cache differ in shape"
    return None


def lower_gqa(node, b):
    g = b.graph
    q, k, v, pk, pv, sl, tot, cos, sin, pos, ab, sink = _inputs(node, 12)[:12]
    hq, hkv, batch, s, d, p, t = _gqa_dims(node, g)
    total = _gqa_total(node, g)
    first = s > 1 and s == total
    lens, lens_add = (None, 0) if first else (b.ref(sl), 1 - s)
    if k:
        qx, qs = b.ref(q), (s * hq * d, hq * d, d)
        kx, ks = b.ref(k), (s * hkv * d, hkv * d, d)
        vx, vs = b.ref(v), ks
    else:
        wd = (hq + 2 * hkv) * d
        qs = ks = vs = (s * wd, wd, d)
        qx, kx, vx = b.ref(q), b.ref(q, F32 * hq * d), b.ref(q, F32 * (hq + hkv) * d)
    if node.attr("do_rotary", 0):
        rot = dict(cos=b.ref(cos), sin=b.ref(sin), half=_shape(g, cos)[1], max_pos=_shape(g, cos)[0],
                   lens=lens, lens_add=lens_add, interleaved=node.attr("rotary_interleaved", 0))
        if pos:
            rot.update(pos=b.ref(pos), pos_bs=s if _shape(g, pos)[0] != 1 else 0, lens=None, lens_add=0)
        qx, qs = _copy_rows(b, qx, qs, batch, s, hq, d, rot=rot)
        kx, ks = _copy_rows(b, kx, ks, batch, s, hkv, d, rot=rot)
    past_k = b.ref(pk) if p and not first else None
    past_v = b.ref(pv) if p and not first else None
    p_used = p if past_k is not None else 0
    if past_k is not None:   # a past fed back in the present's buffer grows in place (runner.py)
        b.in_place.update({node.outputs[1]: pk, node.outputs[2]: pv})
    recipe = None
    if past_k is not None and lens is not None:   # a cache kept on the device: appended in its block
        recipe = usable(b, [pk, pv, node.outputs[1], node.outputs[2]], sl)
    if recipe is not None:
        kc, kcs, kplain = append_rows(b, recipe, pk, node.outputs[1], p, kx, ks, batch, hkv, t, s, d, sl, lens_add)
        vc, vcs, vplain = append_rows(b, recipe, pv, node.outputs[2], p, vx, vs, batch, hkv, t, s, d, sl, lens_add)
    else:
        kc, kcs = _append(b, past_k, p_used, kx, ks, b.ref(node.outputs[1]), batch, hkv, t, s, d, lens, lens_add)
        vc, vcs = _append(b, past_v, p_used, vx, vs, b.ref(node.outputs[2]), batch, hkv, t, s, d, lens, lens_add)
        kplain = vplain = None
    kw = dict(causal=1, lens=lens, lens_add=lens_add, c0=0, window=node.attr("local_window_size", -1),
              softcap=float(node.attr("softcap", 0.0)), smooth=node.attr("smooth_softmax", 0),
              **_bias_args(b, g, ab, hq, s, t))
    if sink:
        kw.update(sink=b.ref(sink))
    scale = node.attr("scale", 0.0) or 1 / math.sqrt(d)
    _attend(b, node, b.ref(node.outputs[0]), qx, qs, kc, kcs, vc, vcs, batch, hq, hkv, s, t, d, d, scale,
            plain=None if kplain is None else (kplain, vplain), **kw)


# --- MultiHeadAttention -------------------------------------------------------------------------

def _mha_layout(node, g):
    """form and (batch, s, l, heads, h, hv)"""
    q, k, v = _inputs(node, 3)[:3]
    n = node.attr("num_heads")
    qs = _shape(g, q)
    if len(qs) == 5:
        return "qkv", (qs[0], qs[1], qs[1], n, qs[4], qs[4])
    ks = _shape(g, k)
    if len(ks) == 5:
        return "kv", (qs[0], qs[1], ks[1], n, ks[4], ks[4])
    vs = _shape(g, v)
    if len(ks) == 4:
        return "bnsh", (qs[0], qs[1], ks[2], n, ks[3], vs[3])
    return "bsd", (qs[0], qs[1], ks[1], n, qs[2] // n, vs[2] // n)


def _mask_args(g, name, batch, s, t, lengths_ok=True):
    """attention_kv's mask arguments of an int32 key_padding_mask / mask_index, or a refusal."""
    ms = _shape(g, name)
    if len(ms) == 1 and ms[0] == batch and lengths_ok:
        return dict(kend=name)
    if len(ms) == 1 and ms[0] == 2 * batch:
        return dict(kend=name, kstart=(name, F32 * batch))
    if ms == (batch, t):
        return dict(kmask=name, km_bs=t, km_rs=0)
    if ms == (batch, s, t):
        return dict(kmask=name, km_bs=s * t, km_rs=t)
    return f"mask {list(ms)} is none of [{batch}], [{batch}, {t}], [{batch}, {s}, {t}]"


def _refs(b, m):
    out = dict(m)
    for key in ("kmask", "kend", "kstart"):
        if key in out:
            x = out[key]
            out[key] = b.ref(*x) if isinstance(x, tuple) else b.ref(x)
    return out


def _plain_mha(node, g):
    """The optimizer's unpacked form, for lower/attention.py's GEMM kernel."""
    return check_attention(node, g) is None and all(_dt(g, n) == "float32" for n in node.inputs if n)


def check_mha(node, g):
    ins = _inputs(node, 10)
    q, k, v, bias, kpm, ab, pk, pv, psl, ci = ins
    if psl or ci or (len(node.outputs) > 3 and node.outputs[3]):
        return "MultiHeadAttention with past_sequence_length, cache_indirection or a qk output"
    why = _types(g, [q, k, v, bias, ab, pk, pv] + [o for o in node.outputs if o], [kpm])
    why = why or _static(g, [n for n in ins if n] + [o for o in node.outputs if o], (pk, pv))
    if why or _plain_mha(node, g):
        return why
    form, (batch, s, l, n, h, hv) = _mha_layout(node, g)
    if form == "bnsh" and (pk or (len(node.outputs) > 1 and any(node.outputs[1:3]))):
        return "MultiHeadAttention with a 4-D key/value and past/present"
    p = _shape(g, pk)[2] if pk else 0
    t = p + l
    if ab and _bias_strides(_shape(g, ab), n, s, t) is None:
        return f"attention_bias {list(_shape(g, ab))} is not [B|1, {n}|1, {s}, {t}]"
    if kpm:
        m = _mask_args(g, kpm, batch, s, t)
        if isinstance(m, str) or "kstart" in m:
            return m if isinstance(m, str) else "key_padding_mask of [2B]"
    if pk and (_shape(g, pk) != (batch, n, p, h) or _shape(g, pv) != (batch, n, p, hv)):
        return "past_key/past_value do not fit the node"
    return None


def lower_mha(node, b):
    g = b.graph
    if _plain_mha(node, g):
        return lower_attention(node, b)
    q, k, v, bias, kpm, ab, pk, pv = _inputs(node, 8)[:8]
    form, (batch, s, l, n, h, hv) = _mha_layout(node, g)
    bq = bk = bv = None
    if bias:
        bq, bk, bv = b.ref(bias), b.ref(bias, F32 * n * h), b.ref(bias, F32 * 2 * n * h)
    if form == "qkv":
        w = n * 3 * h
        qx, kx, vx = b.ref(q), b.ref(q, F32 * h), b.ref(q, F32 * 2 * h)
        qs = ks = vs = (s * w, w, 3 * h)
    elif form == "kv":
        qx, qs = b.ref(q), (s * n * h, n * h, h)
        w = n * 2 * h
        kx, vx = b.ref(k), b.ref(k, F32 * h)
        ks = vs = (l * w, w, 2 * h)
    elif form == "bnsh":
        qx, qs = b.ref(q), (s * n * h, n * h, h)
        kx, ks = b.ref(k), (n * l * h, h, l * h)
        vx, vs = b.ref(v), (n * l * hv, hv, l * hv)
        bk = bv = None
    else:
        qx, qs = b.ref(q), (s * n * h, n * h, h)
        kx, ks = b.ref(k), (l * n * h, n * h, h)
        vx, vs = b.ref(v), (l * n * hv, n * hv, hv)
    if bq is not None:
        qx, qs = _copy_rows(b, qx, qs, batch, s, n, h, xb=bq)
    if bk is not None:
        kx, ks = _copy_rows(b, kx, ks, batch, l, n, h, xb=bk)
        vx, vs = _copy_rows(b, vx, vs, batch, l, n, hv, xb=bv)
    p = _shape(g, pk)[2] if pk else 0
    t = p + l
    outs = list(node.outputs) + ["", "", ""]
    if p or outs[1] or outs[2]:
        kx, ks = _append(b, b.ref(pk) if p else None, p, kx, ks, _out_or_scratch(b, node, 1, F32 * batch * n * t * h),
                         batch, n, t, l, h)
        vx, vs = _append(b, b.ref(pv) if p else None, p, vx, vs, _out_or_scratch(b, node, 2, F32 * batch * n * t * hv),
                         batch, n, t, l, hv)
    kw = dict(causal=2, c0=p) if node.attr("unidirectional", 0) else {}
    kw.update(_bias_args(b, g, ab, n, s, t))
    if kpm:
        kw.update(_refs(b, _mask_args(g, kpm, batch, s, t)))
    scale = node.attr("scale", 0.0) or 1 / math.sqrt(h)
    _attend(b, node, b.ref(node.outputs[0]), qx, qs, kx, ks, vx, vs, batch, n, n, s, t, h, hv, scale, **kw)


# --- Attention (weights inside) -----------------------------------------------------------------

def _attention_sizes(node, g):
    x, w = node.inputs[:2]
    cols = _shape(g, w)[1]
    sizes = node.attr("qkv_hidden_sizes")
    return tuple(int(c) for c in sizes) if sizes else (cols // 3,) * 3


def check_attention_ms(node, g):
    ins = _inputs(node, 7)
    x, w, bias, mask, past, ab, psl = ins
    if psl or node.attr("past_present_share_buffer", 0) or node.attr("do_rotary", 0):
        return "Attention with past_sequence_length, a shared past/present buffer or do_rotary"
    why = _types(g, [x, w, bias, past, ab] + [o for o in node.outputs if o], [mask])
    why = why or _static(g, [i for i in ins if i] + [o for o in node.outputs if o], (past,))
    if why:
        return why
    batch, s, c = _shape(g, x)
    sizes = _attention_sizes(node, g)
    n = node.attr("num_heads")
    p = _shape(g, past)[3] if past else 0
    t = p + s
    if ab and _bias_strides(_shape(g, ab), n, s, t) is None:
        return f"attention_bias {list(_shape(g, ab))} is not [B|1, {n}|1, {s}, {t}]"
    if mask:
        ms = _shape(g, mask)
        if len(ms) == 4:
            if node.attr("unidirectional", 0) or ms[0] != batch or ms[1] != 1 or ms[2] < p + s or ms[3] < t:
                return f"4-D mask_index {list(ms)} does not fit"
        else:
            m = _mask_args(g, mask, batch, s, t)
            if isinstance(m, str):
                return m
    if (past or (len(node.outputs) > 1 and node.outputs[1])) and sizes[1] != sizes[2]:
        return "past/present with different K and V hidden sizes"
    return None


def lower_attention_ms(node, b):
    g = b.graph
    x, w, bias, mask, past, ab = _inputs(node, 6)[:6]
    batch, s, c = _shape(g, x)
    sizes = _attention_sizes(node, g)
    n = node.attr("num_heads")
    cols = sum(sizes)
    hq, hv = sizes[0] // n, sizes[2] // n
    qkv = b.scratch(F32 * batch * s * cols)
    b.emit("gemm", a=b.ref(x), b=b.ref(w), c=b.ref(bias) if bias else None, y=qkv, m=batch * s, n=cols, k=c,
           trans_a=0, trans_b=0, alpha=1.0, beta=1.0 if bias else 0.0, c_rs=0, c_cs=1,
           act_min=-math.inf, act_max=math.inf)
    st = (s * cols, cols, hq)
    qx = qkv
    kx, vx = Ref(qkv.name, F32 * sizes[0], qkv.nbytes), Ref(qkv.name, F32 * (sizes[0] + sizes[1]), qkv.nbytes)
    ks, vs = st, (s * cols, cols, hv)
    p = _shape(g, past)[3] if past else 0
    t = p + s
    outs = list(node.outputs) + [""]
    if p or outs[1]:
        half = F32 * batch * n * t * hq
        if outs[1]:
            pk, pv = b.ref(outs[1]), b.ref(outs[1], half)
        else:
            pk, pv = b.scratch(half), b.scratch(half)
        past_half = F32 * batch * n * p * hq
        kx, ks = _append(b, b.ref(past) if p else None, p, kx, ks, pk, batch, n, t, s, hq)
        vx, vs = _append(b, b.ref(past, past_half) if p else None, p, vx, vs, pv, batch, n, t, s, hv)
    kw = dict(causal=2, c0=p) if node.attr("unidirectional", 0) else {}
    kw.update(_bias_args(b, g, ab, n, s, t))
    if mask:
        ms = _shape(g, mask)
        if len(ms) == 4:
            kw.update(kmask=b.ref(mask, F32 * p * ms[3]), km_bs=ms[2] * ms[3], km_rs=ms[3])
        else:
            kw.update(_refs(b, _mask_args(g, mask, batch, s, t)))
    scale = node.attr("scale", 0.0) or 1 / math.sqrt(hq)
    _attend(b, node, b.ref(node.outputs[0]), qx, (s * cols, cols, hq), kx, ks, vx, vs, batch, n, n, s, t, hq, hv,
            scale, **kw)


for _check in (check_gqa, check_mha, check_attention_ms):
    _check.empty_ok = True   # a zero-length past (a decoder's first step) is read by no kernel


# --- ai.onnx Attention (opset 23-25) ------------------------------------------------------------

def _onnx_layout(node, g):
    """(rank, batch, hq, hkv, s, l, d, dv) of ai.onnx Attention's Q, K, V."""
    q, k, v = node.inputs[:3]
    qs, ks, vs = _shape(g, q), _shape(g, k), _shape(g, v)
    if len(qs) == 4:
        return 4, qs[0], qs[1], ks[1], qs[2], ks[2], qs[3], vs[3]
    hq, hkv = node.attr("q_num_heads"), node.attr("kv_num_heads")
    return 3, qs[0], hq, hkv, qs[1], ks[1], qs[2] // hq, vs[2] // hkv


def _mask_strides(shape, batch, heads, s, t):
    """m_bs, m_hs, m_rs of a float attn_mask broadcast to [B, H, S, T] (None if its last dim is not T)."""
    shape = (1,) * (4 - len(shape)) + tuple(shape)
    if len(shape) != 4 or shape[3] != t or shape[2] not in (1, s) or shape[1] not in (1, heads) \
            or shape[0] not in (1, batch):
        return None
    return (shape[1] * shape[2] * t if shape[0] != 1 else 0, shape[2] * t if shape[1] != 1 else 0,
            t if shape[2] != 1 else 0)


def check_onnx_attention(node, g):
    ins = _inputs(node, 7)
    q, k, v, mask, pk, pv, nonpad = ins
    outs = list(node.outputs) + [""] * 4
    if nonpad or outs[3]:
        return "Attention with nonpad_kv_seqlen or qk_matmul_output"
    if node.attr("left_window_size", -1) != -1 or node.attr("right_window_size", -1) != -1:
        return "Attention with a sliding window"
    if node.attr("softmax_precision") not in (None, 1):
        return "Attention with a softmax_precision other than float32"
    why = _types(g, [q, k, v, mask, pk, pv] + [o for o in outs if o], [])
    why = why or _static(g, [n for n in ins if n] + [o for o in outs if o], (pk, pv))
    if why:
        return why
    rank, batch, hq, hkv, s, l, d, dv = _onnx_layout(node, g)
    if rank not in (3, 4) or hq % hkv:
        return "Attention of Q, K, V that are not all 3-D or all 4-D with grouped heads"
    p = _shape(g, pk)[2] if pk else 0
    t = p + l
    if mask and _mask_strides(_shape(g, mask), batch, hq, s, t) is None:
        return f"attn_mask {list(_shape(g, mask))} does not broadcast to [{batch}, {hq}, {s}, {t}] with all {t} keys"
    if node.attr("is_causal", 0) and p + s > t:
        return "causal Attention with more queries than keys"
    return None


def lower_onnx_attention(node, b):
    g = b.graph
    q, k, v, mask, pk, pv = _inputs(node, 6)[:6]
    rank, batch, hq, hkv, s, l, d, dv = _onnx_layout(node, g)
    if rank == 4:
        qs, ks, vs = (hq * s * d, d, s * d), (hkv * l * d, d, l * d), (hkv * l * dv, dv, l * dv)
        ys = (hq * s * dv, dv, s * dv)
    else:
        qs, ks, vs = (s * hq * d, hq * d, d), (l * hkv * d, hkv * d, d), (l * hkv * dv, hkv * dv, dv)
        ys = None
    p = _shape(g, pk)[2] if pk else 0
    t = p + l
    outs = list(node.outputs) + ["", "", ""]
    kx, vx = b.ref(k), b.ref(v)
    if p or outs[1] or outs[2]:
        kx, ks = _append(b, b.ref(pk) if p else None, p, kx, ks, _out_or_scratch(b, node, 1, F32 * batch * hkv * t * d),
                         batch, hkv, t, l, d)
        vx, vs = _append(b, b.ref(pv) if p else None, p, vx, vs,
                         _out_or_scratch(b, node, 2, F32 * batch * hkv * t * dv), batch, hkv, t, l, dv)
    kw = dict(softcap=float(node.attr("softcap", 0.0)))
    if node.attr("is_causal", 0):
        kw.update(causal=1, c0=p)
    if mask:
        m_bs, m_hs, m_rs = _mask_strides(_shape(g, mask), batch, hq, s, t)
        kw.update(bias=b.ref(mask), m_bs=m_bs, m_hs=m_hs, m_rs=m_rs)
    scale = node.attr("scale")
    scale = 1 / math.sqrt(d) if scale is None else scale
    _attend(b, node, b.ref(node.outputs[0]), b.ref(q), qs, kx, ks, vx, vs, batch, hq, hkv, s, t, d, dv, scale,
            ys=ys, **kw)


check_onnx_attention.empty_ok = True
