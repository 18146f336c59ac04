"""Attention (opset 23, 24: nonpad_kv_seqlen, 25: sliding window), RotaryEmbedding (23),
LinearAttention (27) and ai.onnx.preview FlexAttention (1: score_mod / prob_mod subgraphs).

One Attention kernel serves every version: the registry entries differ only in which inputs and
attributes their infer accepts. Masks are composed as one additive bias, as onnx's reference
does: a boolean attn_mask, is_causal, the window and nonpad_kv_seqlen each add 0 (attend) or -inf;
a float attn_mask is added as is. A query row whose bias is -inf everywhere (no key may be
attended) gives zeros, not NaN, in Y and in the mode-3 qk_matmul_output. The causal frontier is
bottom-right aligned: query i attends key j iff j <= i + offset, offset = past length (internal
cache), nonpad_kv_seqlen - q_len per batch (external cache) or 0.
"""
import functools

from .. import dtypes
from . import shapes as S
from .registry import op

FLOATS = ("float16", "float32", "float64", "bfloat16")


def _float_input(node, inputs, i, name):
    dt = S.dtype(S.get(inputs, i))
    if dt is not None and dt.name not in FLOATS:
        S.fail(node, f"{name} must be a float tensor, got {dt.name}")
    return dt


def _heads(node, rank, since):
    """(q_num_heads, kv_num_heads) attributes, checked against the input rank."""
    hq, hkv = node.attr("q_num_heads"), node.attr("kv_num_heads")
    if rank == 3 and (hq is None or hkv is None):
        S.fail(node, "3-D Q, K, V need both q_num_heads and kv_num_heads")
    if rank == 4 and (hq is not None or hkv is not None) and since >= 25:
        S.fail(node, "q_num_heads and kv_num_heads must not be set for 4-D inputs")
    for name, h in (("q_num_heads", hq), ("kv_num_heads", hkv)):
        if h is not None and h < 1:
            S.fail(node, f"{name} must be positive, got {h}")
    return hq, hkv


def _div(node, d, n, what):
    if not S.known(d):
        return None
    if d % n:
        S.fail(node, f"{what} {d} is not a multiple of {n}")
    return d // n


def _check_attrs(node):
    mode = node.attr("qk_matmul_output_mode", 0)
    if mode not in (0, 1, 2, 3):
        S.fail(node, f"qk_matmul_output_mode must be 0, 1, 2 or 3, got {mode}")
    if node.attr("is_causal", 0) not in (0, 1):
        S.fail(node, f"is_causal must be 0 or 1, got {node.attr('is_causal')}")
    prec = node.attr("softmax_precision")
    if prec is not None:
        dt = S.dtype_attr(node, "softmax_precision")
        if dt.name not in FLOATS:
            S.fail(node, f"softmax_precision must be a float type, got {dt.name}")
    for name in ("left_window_size", "right_window_size"):
        w = node.attr(name, -1)
        if w < -1:
            S.fail(node, f"{name} must be -1 or nonnegative, got {w}")


def _infer_attention(since, node, inputs, consts):
    if since < 24 and S.get(inputs, 6) is not None:
        S.fail(node, "nonpad_kv_seqlen needs opset 24")
    if since < 25 and (node.attr("left_window_size") is not None or node.attr("right_window_size") is not None):
        S.fail(node, "left_window_size/right_window_size need opset 25")
    q, k, v = (S.need(node, inputs, i) for i in range(3))
    dt = _float_input(node, inputs, 0, "Q")
    for i, name in ((1, "K"), (2, "V"), (4, "past_key"), (5, "past_value")):
        _float_input(node, inputs, i, name)
    _check_attrs(node)
    past_k, past_v = S.get(inputs, 4), S.get(inputs, 5)
    if (past_k is None) != (past_v is None):
        S.fail(node, "past_key and past_value must be given together")
    nonpad = S.get(inputs, 6)
    if nonpad is not None:
        if past_k is not None:
            S.fail(node, "nonpad_kv_seqlen cannot be combined with past_key/past_value")
        if S.dtype(nonpad) is not None and S.dtype(nonpad).name != "int64":
            S.fail(node, f"nonpad_kv_seqlen must be int64, got {S.dtype(nonpad).name}")
    ranks = {S.rank(x) for x in (q, k, v)} - {None}
    if len(ranks) > 1 or not ranks <= {3, 4}:
        S.fail(node, f"Q, K, V must all be 3-D or all 4-D, got ranks {[S.rank(x) for x in (q, k, v)]}")
    rank = ranks.pop() if ranks else None
    hq, hkv = _heads(node, rank, since)
    qs, ks, vs = S.shape(q), S.shape(k), S.shape(v)
    b = sq = skv = dq = dk = dv = None
    if rank == 4:
        if qs is not None:
            b, hq, sq, dq = qs
        if ks is not None:
            b = S.merge_dims(node, b, ks[0], "batch of Q and K")
            hkv, skv, dk = ks[1], ks[2], ks[3]
        if vs is not None:
            b = S.merge_dims(node, b, vs[0], "batch of Q and V")
            hkv = S.merge_dims(node, hkv, vs[1], "heads of K and V")
            skv = S.merge_dims(node, skv, vs[2], "sequence of K and V")
            dv = vs[3]
    elif rank == 3:
        if qs is not None:
            b, sq, dq = qs[0], qs[1], _div(node, qs[2], hq, "Q's hidden size")
        if ks is not None:
            b = S.merge_dims(node, b, ks[0], "batch of Q and K")
            skv, dk = ks[1], _div(node, ks[2], hkv, "K's hidden size")
        if vs is not None:
            b = S.merge_dims(node, b, vs[0], "batch of Q and V")
            skv = S.merge_dims(node, skv, vs[1], "sequence of K and V")
            dv = _div(node, vs[2], hkv, "V's hidden size")
    dk = S.merge_dims(node, dq, dk, "head sizes of Q and K")
    if S.known(hq) and S.known(hkv) and hq % hkv:
        S.fail(node, f"q_num_heads {hq} is not a multiple of kv_num_heads {hkv}")
    total = skv
    for i, name, d in ((4, "past_key", dk), (5, "past_value", dv)):
        ps = S.shape(S.get(inputs, i))
        if ps is None:
            if S.get(inputs, i) is not None:
                total = None
            continue
        if len(ps) != 4:
            S.fail(node, f"{name} must be 4-D, got {list(ps)}")
        S.merge_dims(node, ps[0], b, f"{name}'s batch")
        S.merge_dims(node, ps[1], hkv, f"{name}'s heads")
        S.merge_dims(node, ps[3], d, f"{name}'s head size")
        if i == 4:
            total = skv + ps[2] if S.known(skv) and S.known(ps[2]) else None
    y = (b, hq, sq, dv) if rank == 4 else (b, sq, hq * dv if S.known(hq) and S.known(dv) else None)
    if rank is None:
        y = None
    outs = [(dt, y), (dt, (b, hkv, total, dk)), (dt, (b, hkv, total, dv)), (dt, (b, hq, sq, total))]
    return outs[:len(node.outputs)]


def _softmax(np, x):
    m = np.max(x, axis=-1, keepdims=True)
    m = np.where(np.isneginf(m), 0, m).astype(x.dtype)
    e = np.exp(x - m)
    s = np.sum(e, axis=-1, keepdims=True)
    return e / np.where(s == 0, 1, s).astype(x.dtype)


def _bias(np, node, dt, mask, sq, skv, past_len, nonpad):
    """The additive bias, broadcastable to (batch, heads, sq, skv)."""
    bias = np.zeros((sq, skv), dt)
    if mask is not None:
        if mask.shape[-1] > skv:
            S.fail(node, f"attn_mask's last dim {mask.shape[-1]} exceeds the {skv} keys")
        pad = skv - mask.shape[-1]
        if mask.dtype == np.bool_:
            mask = np.where(mask, dt.type(0), dt.type(-np.inf))
        mask = mask.astype(dt, copy=False)
        if pad:   # keys beyond the mask are not attended
            mask = np.pad(mask, [(0, 0)] * (mask.ndim - 1) + [(0, pad)], constant_values=-np.inf)
        bias = bias + mask
    if nonpad is not None:
        nonpad = nonpad.reshape(-1).astype(np.int64)
        offset = (nonpad - sq).reshape(-1, 1, 1, 1)
    else:
        offset = past_len
    diff = np.arange(sq).reshape(sq, 1) + offset - np.arange(skv).reshape(1, skv)
    allowed = None
    left, right = node.attr("left_window_size", -1), node.attr("right_window_size", -1)
    for cond, on in ((lambda: diff >= 0, node.attr("is_causal", 0)),
                     (lambda: diff <= left, left >= 0), (lambda: -diff <= right, right >= 0)):
        if on:
            allowed = cond() if allowed is None else allowed & cond()
    if nonpad is not None:
        pad_ok = (np.arange(skv) < nonpad.reshape(-1, 1)).reshape(-1, 1, 1, skv)
        allowed = pad_ok if allowed is None else allowed & pad_ok
    if allowed is not None:
        bias = bias + np.where(allowed, dt.type(0), dt.type(-np.inf))
    return bias


def attention(node, q, k, v, mask=None, past_k=None, past_v=None, nonpad=None):
    import numpy as np
    if (past_k is None) != (past_v is None):
        S.fail(node, "past_key and past_value must be given together")
    if q.ndim != k.ndim or q.ndim != v.ndim or q.ndim not in (3, 4):
        S.fail(node, f"Q, K, V must all be 3-D or all 4-D, got {q.shape}, {k.shape}, {v.shape}")
    dt = q.dtype
    rank3 = q.ndim == 3
    if rank3:
        hq, hkv = node.attr("q_num_heads"), node.attr("kv_num_heads")
        for x, h, what in ((q, hq, "Q"), (k, hkv, "K"), (v, hkv, "V")):
            if x.shape[2] % h:
                S.fail(node, f"{what}'s hidden size {x.shape[2]} is not a multiple of {h} heads")
        q, k, v = (x.reshape(x.shape[0], x.shape[1], h, x.shape[2] // h).transpose(0, 2, 1, 3)
                   for x, h in ((q, hq), (k, hkv), (v, hkv)))
    if q.shape[3] != k.shape[3] or k.shape[:3] != v.shape[:3] or q.shape[0] != k.shape[0]:
        S.fail(node, f"Q, K, V of per-head shapes {q.shape}, {k.shape}, {v.shape} do not fit")
    past_len = 0
    if past_k is not None:
        past_len = past_k.shape[2]
        k = np.concatenate((past_k.astype(dt, copy=False), k), axis=2)
        v = np.concatenate((past_v.astype(dt, copy=False), v), axis=2)
    present_k, present_v = k, v
    b, hq, sq, _ = q.shape
    hkv, skv = k.shape[1], k.shape[2]
    if hq % hkv:
        S.fail(node, f"{hq} query heads are not a multiple of {hkv} key/value heads")
    if nonpad is not None and nonpad.size != b:
        S.fail(node, f"nonpad_kv_seqlen has {nonpad.size} values for a batch of {b}")
    bias = _bias(np, node, dt, mask, sq, skv, past_len, nonpad)
    if hq != hkv:   # grouped-query: each key/value head serves hq/hkv consecutive query heads
        k, v = np.repeat(k, hq // hkv, axis=1), np.repeat(v, hq // hkv, axis=1)
    scale = node.attr("scale")
    if scale is None:
        scale = 1 / np.sqrt(q.shape[3])
    s = dt.type(np.sqrt(scale))   # Q and K each scaled by sqrt(scale), against overflow (spec)
    scores = np.matmul(q * s, k.transpose(0, 1, 3, 2) * s).astype(dt, copy=False)   # bfloat16: float32 out
    cap = node.attr("softcap", 0.0)
    if cap > 0:
        scores = (np.tanh(scores / dt.type(cap)) * dt.type(cap)).astype(dt, copy=False)
    with_bias = scores + bias
    mode = node.attr("qk_matmul_output_mode", 0)
    qk_out = with_bias if mode == 2 else scores
    prec = node.attr("softmax_precision")
    sm_in = with_bias.astype(S.dtype_attr(node, "softmax_precision").name) if prec is not None else with_bias
    probs = _softmax(np, sm_in)
    masked_rows = np.isneginf(np.max(bias, axis=-1, keepdims=True))
    probs = np.where(masked_rows, probs.dtype.type(0), probs)
    if mode == 3:
        qk_out = probs
    y = np.matmul(probs.astype(dt, copy=False), v).astype(dt, copy=False)
    if rank3:
        y = y.transpose(0, 2, 1, 3).reshape(b, sq, -1)
    outs = (y, present_k, present_v, np.broadcast_to(qk_out, (b, hq, sq, skv)).astype(dt))
    return tuple(np.ascontiguousarray(o) for o in outs[:len(node.outputs)])


for _since in (23, 24, 25):
    op("Attention", _since, functools.partial(_infer_attention, _since))(attention)


def infer_rotary(node, inputs, consts):
    x = S.need(node, inputs, 0)
    S.need(node, inputs, 1), S.need(node, inputs, 2)
    dt = S.same_dtype(node, inputs, [0, 1, 2])
    xs = S.shape(x)
    if xs is not None and len(xs) not in (3, 4):
        S.fail(node, f"X must be 3-D or 4-D, got shape {list(xs)}")
    heads = node.attr("num_heads")
    if xs is not None and len(xs) == 3:
        if heads is None or heads < 1:
            S.fail(node, "3-D X needs a positive num_heads")
        _div(node, xs[2], heads, "X's hidden size")
    if node.attr("interleaved", 0) not in (0, 1):
        S.fail(node, "interleaved must be 0 or 1")
    rd = node.attr("rotary_embedding_dim", 0)
    if rd < 0 or rd % 2:
        S.fail(node, f"rotary_embedding_dim must be even and >= 0, got {rd}")
    pos = S.get(inputs, 3)
    if pos is not None and S.dtype(pos) is not None and S.dtype(pos).name != "int64":
        S.fail(node, f"position_ids must be int64, got {S.dtype(pos).name}")
    return [(dt, xs)]


@op("RotaryEmbedding", 23, infer_rotary)
def rotary_embedding(node, x, cos, sin, pos=None):
    """Rotates pairs of each head's first rotary_embedding_dim features by the cached angles:
    halves (x1 = first half, x2 = second) or, interleaved, even/odd features."""
    import numpy as np
    shape = x.shape
    if x.ndim == 4:      # (batch, heads, seq, head) -> (batch, seq, heads, head)
        x = x.transpose(0, 2, 1, 3)
    elif x.ndim == 3:
        h = node.attr("num_heads")
        if x.shape[2] % h:
            S.fail(node, f"X's hidden size {x.shape[2]} is not a multiple of {h} heads")
        x = x.reshape(x.shape[0], x.shape[1], h, x.shape[2] // h)
    else:
        S.fail(node, f"X must be 3-D or 4-D, got shape {list(shape)}")
    b, s, _, d = x.shape
    rd = node.attr("rotary_embedding_dim", 0) or d
    if rd > d or rd % 2:
        S.fail(node, f"rotary_embedding_dim {rd} does not fit head size {d}")
    if pos is not None:
        if np.any(pos < 0) or np.any(pos >= cos.shape[0]) or np.any(pos >= sin.shape[0]):
            S.fail(node, f"position_ids outside the caches' {cos.shape[0]} positions")
        cos, sin = cos[pos], sin[pos]
    if cos.shape[-1] != rd // 2 or sin.shape[-1] != rd // 2:
        S.fail(node, f"the caches' last dim must be rotary_embedding_dim / 2 = {rd // 2}, "
                     f"got {cos.shape[-1]} and {sin.shape[-1]}")
    try:
        cos = np.broadcast_to(cos, (b, s, rd // 2))[:, :, None, :]
        sin = np.broadcast_to(sin, (b, s, rd // 2))[:, :, None, :]
    except ValueError:
        S.fail(node, f"caches of shape {list(cos.shape)} do not fit batch {b} x sequence {s}")
    rot = x[..., :rd]
    x1, x2 = (rot[..., 0::2], rot[..., 1::2]) if node.attr("interleaved", 0) else (rot[..., :rd // 2], rot[..., rd // 2:])
    real, imag = cos * x1 - sin * x2, sin * x1 + cos * x2
    if node.attr("interleaved", 0):
        rot = np.stack((real, imag), axis=-1).reshape(rot.shape)
    else:
        rot = np.concatenate((real, imag), axis=-1)
    y = np.concatenate((rot, x[..., rd:]), axis=-1).astype(x.dtype, copy=False)
    y = y.reshape(shape) if len(shape) == 3 else y.transpose(0, 2, 1, 3)
    return np.ascontiguousarray(y)


UPDATE_RULES = ("linear", "gated", "delta", "gated_delta")


def _linear_attention_attrs(node):
    rule = node.attr("update_rule", "gated_delta")
    if rule not in UPDATE_RULES:
        S.fail(node, f"update_rule must be one of {UPDATE_RULES}, got {rule!r}")
    hq, hkv = node.attr("q_num_heads"), node.attr("kv_num_heads")
    if hq is None or hkv is None:
        S.fail(node, "q_num_heads and kv_num_heads are required")
    if hq < 1 or hkv < 1 or hq % hkv:
        S.fail(node, f"q_num_heads {hq} must be a positive multiple of kv_num_heads {hkv}")
    return rule, rule in ("gated", "gated_delta"), rule in ("delta", "gated_delta"), hq, hkv


def infer_linear_attention(node, inputs, consts):
    q, k, v = (S.need(node, inputs, i) for i in range(3))
    rule, gated, delta, hq, hkv = _linear_attention_attrs(node)
    for i, name, needed in ((4, "decay", gated), (5, "beta", delta)):
        if needed != (S.get(inputs, i) is not None):
            S.fail(node, f"update_rule {rule!r} {'needs' if needed else 'takes no'} {name} input")
    dt = S.same_dtype(node, inputs, [0, 1, 2, 4, 5])
    if dt is not None and dt.name not in ("float16", "float32"):
        S.fail(node, f"inputs must be float16 or float32, got {dt.name}")
    qs, ks, vs = S.shape(q), S.shape(k), S.shape(v)
    for name, s in (("query", qs), ("key", ks), ("value", vs), ("decay", S.shape(S.get(inputs, 4))),
                    ("beta", S.shape(S.get(inputs, 5)))):
        if s is not None and len(s) != 3:
            S.fail(node, f"{name} must be 3-D (batch, seq, heads * size), got {list(s)}")
    b = t = dk = dv = None
    if qs is not None:
        b, t, dk = qs[0], qs[1], _div(node, qs[2], hq, "query's hidden size")
    if ks is not None:
        b = S.merge_dims(node, b, ks[0], "batch of query and key")
        dk = S.merge_dims(node, dk, _div(node, ks[2], hkv, "key's hidden size"), "key head size")
    if vs is not None:
        b = S.merge_dims(node, b, vs[0], "batch of query and value")
        dv = _div(node, vs[2], hkv, "value's hidden size")
    state = (b, hkv, dk, dv)
    past = S.get(inputs, 3)
    if past is not None and S.shape(past) is not None:
        ps = S.shape(past)
        if len(ps) != 4:
            S.fail(node, f"past_state must be {list(state)}, got {list(ps)}")
        state = tuple(S.merge_dims(node, a, w, "past_state's shape") for a, w in zip(ps, state))
    sdt = S.dtype(past) if past is not None else dt
    out = (b, t, hq * dv if S.known(dv) else None)
    return [(dt, out), (sdt, state)][:len(node.outputs)]


@op("LinearAttention", 27, infer_linear_attention)
def linear_attention(node, q, k, v, past=None, decay=None, beta=None):
    """The recurrence over time, in float32: state (batch, kv heads, d_k, d_v) decays by
    exp(decay) (gated), takes k v^T (linear) or k (beta (v - state^T k))^T (delta); each step
    reads scale * q^T state, a key/value head serving q_num_heads / kv_num_heads query heads."""
    import numpy as np
    rule, gated, delta, hq, hkv = _linear_attention_attrs(node)
    if gated != (decay is not None) or delta != (beta is not None):
        S.fail(node, f"update_rule {rule!r} takes decay: {gated}, beta: {delta}")
    for name, x in (("query", q), ("key", k), ("value", v)):
        if x.ndim != 3 or x.shape[0] != q.shape[0] or x.shape[1] != q.shape[1]:
            S.fail(node, f"{name} of shape {list(x.shape)} does not fit query's {list(q.shape)}")
    b, t = q.shape[:2]
    if q.shape[2] % hq or k.shape[2] % hkv or v.shape[2] % hkv or q.shape[2] // hq != k.shape[2] // hkv:
        S.fail(node, f"hidden sizes {q.shape[2]}, {k.shape[2]}, {v.shape[2]} do not fit the heads")
    dk, dv = q.shape[2] // hq, v.shape[2] // hkv

    def heads(x, h):    # (b, t, h * d) -> (b, h, t, d), float32
        return x.reshape(b, t, h, -1).transpose(0, 2, 1, 3).astype(np.float32)
    q4, k4, v4 = heads(q, hq), heads(k, hkv), heads(v, hkv)
    if decay is not None:
        if decay.ndim != 3 or decay.shape[:2] != (b, t) or decay.shape[2] not in (hkv, hkv * dk):
            S.fail(node, f"decay of shape {list(decay.shape)} must be ({b}, {t}, {hkv} or {hkv * dk})")
        g4 = heads(decay, hkv)   # (b, hkv, t, 1 or dk)
    if beta is not None:
        if beta.ndim != 3 or beta.shape[:2] != (b, t) or beta.shape[2] not in (hkv, 1):
            S.fail(node, f"beta of shape {list(beta.shape)} must be ({b}, {t}, {hkv} or 1)")
        beta4 = heads(beta, beta.shape[2])
    if past is not None:
        if past.shape != (b, hkv, dk, dv):
            S.fail(node, f"past_state of shape {list(past.shape)} must be {[b, hkv, dk, dv]}")
        state, sdt = past.astype(np.float32), past.dtype
    else:
        state, sdt = np.zeros((b, hkv, dk, dv), np.float32), q.dtype
    scale = node.attr("scale", 0.0) or 1 / np.sqrt(dk)
    group = hq // hkv
    out = np.zeros((b, hq, t, dv), np.float32)
    for i in range(t):
        kt, vt = k4[:, :, i], v4[:, :, i]
        if gated:
            state = state * np.exp(g4[:, :, i])[..., None]
        if delta:
            vt = beta4[:, :, i] * (vt - np.einsum("bhdm,bhd->bhm", state, kt))
        state = state + kt[..., :, None] * vt[..., None, :]
        read = np.repeat(state, group, axis=1) if group > 1 else state
        out[:, :, i] = np.float32(scale) * np.einsum("bhd,bhdm->bhm", q4[:, :, i], read)
    y = out.transpose(0, 2, 1, 3).reshape(b, t, hq * dv).astype(q.dtype)
    return (y, state.astype(sdt))[:len(node.outputs)]


def _flex_softmax_dtype(node, dt):
    if node.attr("softmax_precision") is not None:
        sdt = S.dtype_attr(node, "softmax_precision")
        if sdt.name not in FLOATS:
            S.fail(node, f"softmax_precision must be a float type, got {sdt.name}")
        return sdt
    return dt if dt is None or dt.name == "float64" else dtypes.FLOAT32


def infer_flex_attention(node, inputs, consts, scope=None):
    q, k, v = (S.need(node, inputs, i) for i in range(3))
    dt = S.same_dtype(node, inputs)
    if dt is not None and dt.name not in FLOATS:
        S.fail(node, f"Q, K, V must be float tensors, got {dt.name}")
    qs, ks, vs = S.shape(q), S.shape(k), S.shape(v)
    for name, s in (("Q", qs), ("K", ks), ("V", vs)):
        if s is not None and len(s) != 4:
            S.fail(node, f"{name} must be 4-D, got shape {list(s)}")
    b, hq, sq, e = qs if qs is not None else (None,) * 4
    skv = dv = hkv = None
    if ks is not None:
        b = S.merge_dims(node, b, ks[0], "batch of Q and K")
        e = S.merge_dims(node, e, ks[3], "head sizes of Q and K")
        hkv, skv = ks[1], ks[2]
    if vs is not None:
        b = S.merge_dims(node, b, vs[0], "batch of Q and V")
        hkv = S.merge_dims(node, hkv, vs[1], "heads of K and V")
        skv = S.merge_dims(node, skv, vs[2], "sequence of K and V")
        dv = vs[3]
    if S.known(hq) and S.known(hkv) and hq % hkv:
        S.fail(node, f"{hq} query heads are not a multiple of {hkv} key/value heads")
    sdt = _flex_softmax_dtype(node, dt)
    for attr in ("score_mod", "prob_mod"):
        if node.attr(attr) is None:
            continue
        g = scope.specialise(attr, [(sdt, (b, hq, sq, skv))])
        if len(g.outputs) != 1:
            S.fail(node, f"its {attr} must have one output, got {len(g.outputs)}")
        out = g.outputs[0]
        if out.dtype is not None and sdt is not None and out.dtype != sdt:
            S.fail(node, f"its {attr} must return {sdt.name}, got {out.dtype.name}")
    return [(dt, (b, hq, sq, dv))]


def flex_attention(node, q, k, v, scope=None):
    """Scaled dot-product attention whose scores (before softmax) and probabilities (after) pass
    through the score_mod / prob_mod subgraphs, computed in softmax_precision (float32 for
    float16, else the input type)."""
    import numpy as np
    from .control import run_graph
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4 or k.shape[:3] != v.shape[:3] \
            or q.shape[3] != k.shape[3] or q.shape[0] != k.shape[0] or q.shape[1] % k.shape[1]:
        S.fail(node, f"Q, K, V of shapes {q.shape}, {k.shape}, {v.shape} do not fit")
    rep = q.shape[1] // k.shape[1]
    if rep > 1:
        k, v = np.repeat(k, rep, axis=1), np.repeat(v, rep, axis=1)
    scale = node.attr("scale")
    if scale is None:
        scale = 1 / np.sqrt(q.shape[3])
    s = np.asarray(np.sqrt(np.float32(scale)), q.dtype)
    sdt = np.dtype(_flex_softmax_dtype(node, dtypes.from_name(q.dtype.name)).name)
    scores = np.matmul(q * s, np.swapaxes(k * s, -1, -2)).astype(sdt)

    def mod(attr, x):
        g = node.attr(attr)
        if g is None:
            return x
        out = run_graph(g, {g.inputs[0].name: x}, scope or {})[0]
        if out.shape != x.shape:
            S.fail(node, f"its {attr} returned shape {list(out.shape)}, not {list(x.shape)}")
        return np.asarray(out, sdt)
    scores = mod("score_mod", scores)
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    probs = mod("prob_mod", e / np.sum(e, axis=-1, keepdims=True))
    return np.matmul(probs, v.astype(sdt)).astype(v.dtype)


op("FlexAttention", 1, infer_flex_attention, domain="ai.onnx.preview")(flex_attention)
