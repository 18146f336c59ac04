"""onnxruntime's transformer norms, activations, embeddings and rotary embedding
(ops/contrib_transformer.py, plus ai.onnx RMSNormalization and RotaryEmbedding-23) as the
skip_norm, bias_act, embed_sum and rotary kernels (kernels_c/reduce/skip_norm.c,
elementwise/bias_act.c, movement/embed_sum.c, elementwise/rotary.c)."""
from ...tensor import numel
from .common import axis_attr


def _opt(names, i):
    return names[i] if len(names) > i and names[i] else None


def _ref(b, name):
    return b.ref(name) if name else None


def _float32(g, names):
    for name in names:
        if name and g.values[name].dtype.name != "float32":
            return f"'{name}' is {g.values[name].dtype.name}; this WASM kernel takes float32"
        if name and numel(g.values[name].shape) == 0:
            return f"'{name}' is empty"
    return None


def _vector_of(g, name, n, what):
    if name and tuple(g.values[name].shape) != (n,):
        return f"{what} of shape {list(g.values[name].shape)}, not [{n}]"
    return None


# ---- skip norms: com.microsoft Skip(Simplified)LayerNormalization -----------------------------

def _skip_args(node):
    """(x, skip, gamma, beta, bias) names ("" where absent)."""
    ins = list(node.inputs) + [""] * 5
    if node.op_type == "SkipSimplifiedLayerNormalization":
        return ins[0], ins[1], ins[2], "", ins[3]
    return tuple(ins[:5])


def check_skip_norm(node, g):
    x, skip, gamma, beta, bias = _skip_args(node)
    reason = _float32(g, [x, skip, gamma, beta, bias] + list(node.outputs))
    if reason:
        return reason
    xs, ks = tuple(g.values[x].shape), tuple(g.values[skip].shape)
    if len(xs) not in (2, 3) or ks not in (xs, xs[-2:], (1, *xs[-2:])):
        return f"input {list(xs)} with skip {list(ks)}"
    for name, what in ((gamma, "gamma"), (beta, "beta"), (bias, "bias")):
        reason = _vector_of(g, name, xs[-1], what)
        if reason:
            return reason
    return None


def lower_skip_norm(node, b):
    x, skip, gamma, beta, bias = _skip_args(node)
    xs = b.shape(x)
    rows = numel(xs[:-1])
    outs = list(node.outputs) + [""] * 4
    b.emit("skip_norm", x=b.ref(x), skip=b.ref(skip), bias=_ref(b, bias), gamma=b.ref(gamma), beta=_ref(b, beta),
           y=b.ref(outs[0]), sum=_ref(b, outs[3]), mean=_ref(b, outs[1]), inv_std=_ref(b, outs[2]), rows=rows,
           hidden=xs[-1], skip_rows=numel(b.shape(skip)[:-1]),
           rms=int(node.op_type == "SkipSimplifiedLayerNormalization"),
           epsilon=float(node.attr("epsilon", 1e-12)))


# ---- RMS norms: ai.onnx SimplifiedLayerNormalization (onnxruntime's) and RMSNormalization -------

def _rms_view(node, g):
    """(rows, hidden) of an RMS norm, or the reason it can't run."""
    if node.attr("stash_type", 1) != 1:
        return "stash_type other than float32"
    xs = tuple(g.values[node.inputs[0]].shape)
    a = axis_attr(node, len(xs), -1)
    ss = list(g.values[node.inputs[1]].shape)
    while ss and ss[0] == 1 and len(ss) > len(xs) - a:
        ss.pop(0)
    if tuple(ss) != xs[a:] and not (len(ss) == 1 and ss[0] == numel(xs[a:]) and len(xs) - a == 1):
        return f"scale of shape {list(g.values[node.inputs[1]].shape)} against normalised dims {list(xs[a:])}"
    return numel(xs[:a]), numel(xs[a:])


def check_rms_norm(node, g):
    reason = _float32(g, list(node.inputs) + list(node.outputs))
    if reason:
        return reason
    view = _rms_view(node, g)
    return view if isinstance(view, str) else None


def lower_rms_norm(node, b):
    rows, hidden = _rms_view(node, b.graph)
    outs = list(node.outputs) + [""]
    b.emit("skip_norm", x=b.ref(node.inputs[0]), skip=None, bias=None, gamma=b.ref(node.inputs[1]), beta=None,
           y=b.ref(outs[0]), sum=None, mean=None, inv_std=_ref(b, outs[1]), rows=rows, hidden=hidden, skip_rows=1,
           rms=1, epsilon=float(node.attr("epsilon", 1e-5)))


# ---- activations: BiasGelu, FastGelu, QuickGelu --------------------------------------------------

ACT = {"BiasGelu": 0, "FastGelu": 1, "QuickGelu": 2}


def check_bias_act(node, g):
    reason = _float32(g, list(node.inputs) + list(node.outputs))
    if reason:
        return reason
    xs = g.values[node.inputs[0]].shape
    if not xs:
        return "a scalar input"
    return _vector_of(g, _opt(node.inputs, 1), xs[-1], "bias")


def lower_bias_act(node, b):
    x = node.inputs[0]
    xs = b.shape(x)
    b.emit("bias_act", x=b.ref(x), bias=_ref(b, _opt(node.inputs, 1)), y=b.ref(node.outputs[0]),
           rows=numel(xs[:-1]), n=xs[-1], act=ACT[node.op_type], alpha=float(node.attr("alpha", 1.702)))


# ---- rotary: com.microsoft RotaryEmbedding and ai.onnx RotaryEmbedding-23 ------------------------

def _rotary_view(node, g):
    """The rotary kernel's arguments but the tensors, with the tensor names, or a reason."""
    ms = node.domain == "com.microsoft"
    if ms:
        x, pos, cos, sin = node.inputs[:4]
    else:
        x, cos, sin = node.inputs[:3]
        pos = _opt(node.inputs, 3)
    reason = _float32(g, [x, cos, sin, node.outputs[0]])
    if reason:
        return reason
    if ms and node.attr("is_packed_batching", 0):
        return "is_packed_batching"
    xs, cs = tuple(g.values[x].shape), tuple(g.values[cos].shape)
    if cs != tuple(g.values[sin].shape):
        return "cos and sin caches of different shapes"
    if len(xs) == 4:
        batch, heads, seq, head = xs
        strides = (heads * seq * head, head, seq * head)
    elif len(xs) == 3:
        heads = node.attr("num_heads", 0)
        if ms and heads <= 0 and len(cs) == 2 and cs[1] and xs[2] % (2 * cs[1]) == 0:
            heads = xs[2] // (2 * cs[1])
        if heads <= 0 or xs[2] % heads:
            return f"hidden size {xs[2]} with num_heads {heads}"
        batch, seq, head = xs[0], xs[1], xs[2] // heads
        strides = (seq * xs[2], xs[2], head)
    else:
        return f"input of rank {len(xs)}"
    rd = node.attr("rotary_embedding_dim", 0) or head
    if rd % 2 or rd > head or cs[-1] != rd // 2:
        return f"rotary_embedding_dim {rd} with head size {head} and caches {list(cs)}"
    if pos:
        ps = tuple(g.values[pos].shape)
        if g.values[pos].dtype.name != "int64" or numel(ps) == 0:
            return "position_ids that are not int64"
        if len(cs) != 2:
            return f"caches of shape {list(cs)} with position_ids"
        if ms and numel(ps) == 1:
            mode, pos_bs = 1, 0
        elif ps in ((batch, seq), (1, seq)):
            mode, pos_bs = 0, (seq if ps[0] == batch and batch > 1 else 0)
        else:
            return f"position_ids of shape {list(ps)}"
        rows = cs[0]
    else:
        if ms:
            return "no position_ids"
        lead = cs[:-1]
        if lead in ((batch, seq),):
            pos_bs = seq
        elif lead in ((1, seq), (seq,)):
            pos_bs = 0
        else:
            return f"caches of shape {list(cs)} without position_ids"
        mode, rows = 2, numel(lead)
    return dict(batch=batch, seq=seq, heads=heads, head=head, rd=rd, interleaved=int(node.attr("interleaved", 0)),
                x_bs=strides[0], x_ss=strides[1], x_hs=strides[2], pos_mode=mode, pos_bs=pos_bs,
                cache_rows=rows), (x, pos, cos, sin)


def check_rotary(node, g):
    view = _rotary_view(node, g)
    return view if isinstance(view, str) else None


def lower_rotary(node, b):
    args, (x, pos, cos, sin) = _rotary_view(node, b.graph)
    b.emit("rotary", x=b.ref(x), cos=b.ref(cos), sin=b.ref(sin), pos=_ref(b, pos), y=b.ref(node.outputs[0]),
           **args)


# ---- com.microsoft EmbedLayerNormalization -------------------------------------------------------

def _embed_names(node):
    ins = list(node.inputs) + [""] * 9
    return ins[:9]


def check_embed_layer_norm(node, g):
    ids, segs, word, pos, seg, gamma, beta, mask, pos_ids = _embed_names(node)
    outs = list(node.outputs) + [""] * 3
    reason = _float32(g, [word, pos, seg, gamma, beta, outs[0], outs[2]])
    if reason:
        return reason
    dt = g.values[ids].dtype.name
    if dt not in ("int32", "int64") or any(n and g.values[n].dtype.name != dt for n in (segs, pos_ids)):
        return "input_ids, segment_ids and position_ids of different types"
    if mask and g.values[mask].dtype.name != "int32":
        return "a mask that is not int32"
    shape = tuple(g.values[ids].shape)
    if numel(shape) == 0:
        return "empty input_ids"
    hidden = g.values[word].shape[1]
    for name, what in ((gamma, "gamma"), (beta, "beta")):
        reason = _vector_of(g, name, hidden, what)
        if reason:
            return reason
    if pos_ids and tuple(g.values[pos_ids].shape) not in (shape, (1, shape[1])):
        return f"position_ids of shape {list(g.values[pos_ids].shape)}"
    return None


def lower_embed_layer_norm(node, b):
    ids, segs, word, pos, seg, gamma, beta, mask, pos_ids = _embed_names(node)
    outs = list(node.outputs) + [""] * 3
    batch, seq = b.shape(ids)
    hidden = b.shape(word)[1]
    emb = outs[2] or outs[0]
    pos_bs = seq if pos_ids and b.shape(pos_ids)[0] == batch and batch > 1 else 0
    b.emit("embed_sum", ids=b.ref(ids), segs=_ref(b, segs), pos_ids=_ref(b, pos_ids), word=b.ref(word),
           pos=b.ref(pos), seg=_ref(b, seg), mask=_ref(b, mask), y=b.ref(emb), mask_index=_ref(b, outs[1]),
           idx_dtype=b.dtype(ids).onnx, batch=batch, seq=seq, hidden=hidden, word_rows=b.shape(word)[0],
           pos_rows=b.shape(pos)[0], seg_rows=b.shape(seg)[0] if seg else 0, pos_bs=pos_bs)
    b.emit("skip_norm", x=b.ref(emb), skip=None, bias=None, gamma=b.ref(gamma), beta=b.ref(beta), y=b.ref(outs[0]),
           sum=None, mean=None, inv_std=None, rows=batch * seq, hidden=hidden, skip_rows=1, rms=0,
           epsilon=float(node.attr("epsilon", 1e-12)))
