"""onnxruntime's attention contrib ops (domain com.microsoft), as exported models use them:

  GroupQueryAttention  onnxruntime-genai's decoder attention: Q [B, S, Hq*D] (or Q, K, V packed in
      one [B, S, (Hq + 2 Hkv) D]), K/V [B, S, Hkv*D], past_key/past_value [B, Hkv, P, D] (BNSH),
      seqlens_k (int32 [B]: each batch's total length - 1) and total_sequence_length (int32
      scalar). A first prompt (S > 1 and S == total) starts at position 0; any other step
      appends its S tokens after past_b = seqlens_k[b] + 1 - S cached ones. present = the first
      past_b rows of past, then the new K/V, zeros after (length max(total, P)). Query row i of
      batch b attends the keys j < past_b + i + 1 (causal), and with local_window_size w > 0 only
      the last w of them. Rotary (do_rotary) rotates Q and the new K at those positions
      (or position_ids) by cos_cache/sin_cache [max_pos, R/2] over the first R dims of each
      head, halves (rotary_interleaved=0) or pairs (1). scale (default 1/sqrt D), softcap
      (cap * tanh(x / cap)), attention_bias [B|1, Hq|1, S, T] added after the softcap,
      head_sink [Hq] (one more logit in each softmax's denominator; smooth_softmax=1 is a sink
      of 0).
  MultiHeadAttention  Q [B, S, N*H] with K/V [B, L, N*H] (self or cross attention), K/V in BNSH
      [B, N, L, H] (a cross-attention cache, as Whisper's decoder feeds it), packed KV
      [B, L, N, 2, H] or packed QKV [B, S, N, 3, H]; bias [N*H + N*H + N*Hv] on the 3-D
      inputs; key_padding_mask [B] (key lengths), [B, T] or [B, S, T] (0 = masked);
      attention_bias [B|1, N|1, S, T]; past_key/past_value [B, N, P, H] with present = past ++
      new; unidirectional (query i attends j <= P + i).
  Attention  the BERT/GPT-2 optimizer's op: input [B, S, C] times weights [C, Hq+Hk+Hv] plus
      bias (qkv_hidden_sizes, default thirds); mask_index [B] (key end), [2B] (end, start),
      [B, T], [B, S, T] or [B, 1, M, M] (rows P..P+S, columns 0..T); past [2, B, N, P, H] and
      present [2, B, N, P+S, H]; unidirectional; attention_bias.

The last two add mask_filter_value (default -10000) per masked key, as onnxruntime does (a row
with every key masked is then uniform, not NaN); GroupQueryAttention leaves masked keys out of
the softmax. Scores and softmax in float32."""
import math

from . import shapes as S
from .registry import register

MS = "com.microsoft"


def _softmax(np, x, sink=None):
    m = x.max(axis=-1, keepdims=True)
    if sink is not None:
        m = np.maximum(m, sink)
    e = np.exp(x - m)
    s = e.sum(axis=-1, keepdims=True)
    if sink is not None:
        s = s + np.exp(sink - m)
    return e / s


def _heads(x, b, n, h):
    """[B, L, N*H] -> [B, N, L, H]"""
    return x.reshape(b, x.shape[1], n, h).transpose(0, 2, 1, 3)


def _merge(y):
    """[B, N, S, H] -> [B, S, N*H]"""
    b, n, s, h = y.shape
    return y.transpose(0, 2, 1, 3).reshape(b, s, n * h)


def _dims_of(node, qs, ks, hq, hkv):
    """(batch, seq, head size) of GQA's query (packed when key is absent)."""
    if qs is None:
        return None, None, None
    if len(qs) != 3:
        S.fail(node, f"query must be 3-D [batch, sequence, hidden], got {list(qs)}")
    width = hq if ks is not None else hq + 2 * hkv
    d = None
    if S.known(qs[2]):
        if qs[2] % width:
            S.fail(node, f"query's hidden size {qs[2]} is not a multiple of {width} heads")
        d = qs[2] // width
    return qs[0], qs[1], d


# --- GroupQueryAttention ------------------------------------------------------------------------

GQA_UNSUPPORTED_INPUTS = {12: "k_scale", 13: "v_scale", 14: "q_norm_weight", 15: "k_norm_weight"}


def _gqa_attrs(node):
    hq, hkv = node.attr("num_heads", 0), node.attr("kv_num_heads", 0)
    if hq <= 0 or hkv <= 0 or hq % hkv:
        S.fail(node, f"num_heads {hq} must be a positive multiple of kv_num_heads {hkv}")
    if node.attr("qk_output", 0):
        S.unsupported(node, "GroupQueryAttention's output_qk (qk_output != 0)")
    if node.attr("k_quant_type", "NONE") not in ("NONE", b"NONE") or node.attr("kv_cache_bit_width", 0):
        S.unsupported(node, "GroupQueryAttention with a quantized KV cache")
    if node.attr("softcap", 0.0) < 0:
        S.fail(node, f"softcap must be >= 0, got {node.attr('softcap')}")
    return hq, hkv


def infer_gqa(node, inputs, consts):
    hq, hkv = _gqa_attrs(node)
    for i, name in GQA_UNSUPPORTED_INPUTS.items():
        if S.get(inputs, i) is not None:
            S.unsupported(node, f"GroupQueryAttention's {name} input")
    q = S.need(node, inputs, 0)
    S.need(node, inputs, 5)
    S.need(node, inputs, 6)
    for i, name in ((5, "seqlens_k"), (6, "total_sequence_length")):
        dt = S.dtype(inputs[i])
        if dt is not None and dt.name != "int32":
            S.fail(node, f"{name} must be int32, got {dt.name}")
    key, value = S.get(inputs, 1), S.get(inputs, 2)
    if (key is None) != (value is None):
        S.fail(node, "key and value must be given together (or both left out for packed QKV)")
    b, s, d = _dims_of(node, S.shape(q), S.shape(key), hq, hkv)
    for vi, what in ((key, "key"), (value, "value")):
        ks = S.shape(vi)
        if ks is not None:
            if len(ks) != 3:
                S.fail(node, f"{what} must be 3-D, got {list(ks)}")
            b = S.merge_dims(node, b, ks[0], f"batch of query and {what}")
            s = S.merge_dims(node, s, ks[1], f"sequence of query and {what}")
            if S.known(ks[2]) and S.known(d) and ks[2] != hkv * d:
                S.fail(node, f"{what}'s hidden size {ks[2]} is not kv_num_heads {hkv} x head size {d}")
    pk, pv = S.get(inputs, 3), S.get(inputs, 4)
    if (pk is None) != (pv is None):
        S.fail(node, "past_key and past_value must be given together")
    p = 0
    for vi, what in ((pk, "past_key"), (pv, "past_value")):
        ps = S.shape(vi)
        if ps is None:
            if vi is not None:
                p = None
            continue
        if len(ps) != 4:
            S.fail(node, f"{what} must be 4-D [batch, kv_num_heads, length, head size], got {list(ps)}")
        S.merge_dims(node, ps[0], b, f"{what}'s batch")
        S.merge_dims(node, ps[1], hkv, f"{what}'s heads (kv_num_heads)")
        S.merge_dims(node, ps[3], d, f"{what}'s head size")
        p = ps[2]
    if node.attr("do_rotary", 0):
        if S.get(inputs, 7) is None or S.get(inputs, 8) is None:
            S.fail(node, "do_rotary needs cos_cache and sin_cache")
        cs = S.shape(inputs[7])
        if cs is not None and (len(cs) != 2 or (S.known(cs[1]) and S.known(d) and 2 * cs[1] > d)):
            S.fail(node, f"cos_cache must be [max positions, rotary dim / 2 <= head size / 2], got {list(cs)}")
    total = S.const_scalar(consts, 6)   # present's length max(total, past) is known when total is a constant
    t = (total if total >= p else p) if total is not None and S.known(p) else None   # keeps a Sym a Sym
    dt = S.dtype(q)
    hd = hq * d if S.known(d) else None
    outs = [(dt, (b, s, hd)), (dt, (b, hkv, t, d)), (dt, (b, hkv, t, d))]
    return outs[:len(node.outputs)]


def gqa_positions(np, node, seqlens, total, b, s, p, present):
    """past_b per batch (int64 [B]) and whether this is a first prompt; bad lengths fail naming
    the node."""
    seqlens = np.asarray(seqlens).reshape(-1).astype(np.int64)
    if seqlens.size != b:
        S.fail(node, f"seqlens_k has {seqlens.size} values for a batch of {b}")
    first = s > 1 and s == total
    past = np.zeros(b, np.int64) if first else seqlens + 1 - s
    for i in range(b):
        if seqlens[i] + 1 > present or past[i] < 0 or past[i] > p or seqlens[i] + 1 < (s if not first else 1):
            S.fail(node, f"seqlens_k[{i}] = {seqlens[i]} does not fit a step of {s} tokens after a past of "
                         f"{p} (total_sequence_length {total}, present length {present})")
    return past, first


def rotate(np, x, pos, cos, sin, interleaved):
    """x [B, N, S, D] rotated over its first 2*cos.shape[1] dims at positions pos [B, S]."""
    half = cos.shape[1]
    c = cos[pos][:, None].astype(np.float32)      # [B, 1, S, half]
    sn = sin[pos][:, None].astype(np.float32)
    out = x.copy()
    if interleaved:
        x1, x2 = x[..., 0:2 * half:2], x[..., 1:2 * half:2]
        out[..., 0:2 * half:2] = x1 * c - x2 * sn
        out[..., 1:2 * half:2] = x1 * sn + x2 * c
    else:
        x1, x2 = x[..., :half], x[..., half:2 * half]
        out[..., :half] = x1 * c - x2 * sn
        out[..., half:2 * half] = x1 * sn + x2 * c
    return out


def group_query_attention(node, query, key=None, value=None, past_key=None, past_value=None, seqlens_k=None,
                          total_seq=None, cos=None, sin=None, position_ids=None, attention_bias=None,
                          head_sink=None, *rest):
    import numpy as np
    hq, hkv = _gqa_attrs(node)
    for i, r in enumerate(rest):
        if r is not None:
            S.unsupported(node, f"GroupQueryAttention's {GQA_UNSUPPORTED_INPUTS[12 + i]} input")
    b, s = query.shape[:2]
    if key is None:
        d = query.shape[2] // (hq + 2 * hkv)
        q, k, v = (query[..., lo * d:hi * d] for lo, hi in ((0, hq), (hq, hq + hkv), (hq + hkv, hq + 2 * hkv)))
    else:
        d = query.shape[2] // hq
        q, k, v = query, key, value
        if k.shape != (b, s, hkv * d) or v.shape != k.shape:
            S.fail(node, f"key {list(k.shape)} / value {list(v.shape)} do not fit query {list(query.shape)} "
                         f"with {hq} heads, {hkv} kv heads")
    q, k, v = (_heads(x.astype(np.float32), b, n, d) for x, n in ((q, hq), (k, hkv), (v, hkv)))
    p = 0
    if past_key is not None:
        for x, what in ((past_key, "past_key"), (past_value, "past_value")):
            if x.ndim != 4 or x.shape[0] != b or x.shape[1] != hkv or x.shape[3] != d:
                S.fail(node, f"{what} {list(x.shape)} does not fit [batch {b}, kv_num_heads {hkv}, length, "
                             f"head size {d}]")
        if past_value.shape != past_key.shape:
            S.fail(node, f"past_value {list(past_value.shape)} differs from past_key {list(past_key.shape)}")
        p = past_key.shape[2]
    total = int(np.asarray(total_seq).reshape(-1)[0])
    t = max(total, p)
    past, first = gqa_positions(np, node, seqlens_k, total, b, s, p, t)
    if node.attr("do_rotary", 0):
        if position_ids is not None:
            pos = np.broadcast_to(np.asarray(position_ids).astype(np.int64), (b, s))
        else:
            pos = past[:, None] + np.arange(s)[None, :]
        if pos.min() < 0 or pos.max() >= cos.shape[0]:
            S.fail(node, f"rotary positions {pos.min()}..{pos.max()} fall outside cos_cache's {cos.shape[0]} rows")
        il = node.attr("rotary_interleaved", 0)
        q = rotate(np, q, pos, cos, sin, il)
        k = rotate(np, k, pos, cos, sin, il)
    pres_k = np.zeros((b, hkv, t, d), np.float32)
    pres_v = np.zeros((b, hkv, t, d), np.float32)
    for i in range(b):
        n = past[i]
        if n:
            pres_k[i, :, :n] = past_key[i, :, :n]
            pres_v[i, :, :n] = past_value[i, :, :n]
        pres_k[i, :, n:n + s] = k[i, :, :t - n]
        pres_v[i, :, n:n + s] = v[i, :, :t - n]
    group = hq // hkv
    kk, vv = np.repeat(pres_k, group, axis=1), np.repeat(pres_v, group, axis=1)
    scale = node.attr("scale", 0.0) or 1 / math.sqrt(d)
    x = np.matmul(q, kk.transpose(0, 1, 3, 2)) * np.float32(scale)
    cap = node.attr("softcap", 0.0)
    if cap > 0:
        x = np.float32(cap) * np.tanh(x / np.float32(cap))
    if attention_bias is not None:
        x = x + _bias_shape(node, attention_bias, b, hq, s, t)
    causal = past[:, None] + np.arange(s)[None, :] + 1                  # [B, S] keys each row sees
    j = np.arange(t)
    allowed = j[None, None, :] < causal[:, :, None]
    w = node.attr("local_window_size", -1)
    if w > 0:
        allowed &= j[None, None, :] >= causal[:, :, None] - w
    x = np.where(allowed[:, None], x, -np.inf)
    sink = None
    if head_sink is not None:
        sink = head_sink.astype(np.float32).reshape(1, hq, 1, 1)
    elif node.attr("smooth_softmax", 0):
        sink = np.float32(0)
    probs = _softmax(np, x, sink)
    y = np.matmul(probs, vv)
    return _merge(y).astype(query.dtype), pres_k.astype(query.dtype), pres_v.astype(query.dtype)


# --- MultiHeadAttention -------------------------------------------------------------------------

def _mha_form(node, qs, ks, vs):
    """'qkv' (packed [B, S, N, 3, H]), 'kv' (packed [B, L, N, 2, H]), 'bnsh' (K/V [B, N, L, H])
    or 'bsd' (K/V [B, L, N*H])."""
    if qs is not None and len(qs) == 5:
        if ks is not None or vs is not None:
            S.fail(node, "packed QKV query [B, S, N, 3, H] takes no key or value")
        return "qkv"
    if ks is None:
        S.fail(node, "key is required unless query is packed QKV")
    if len(ks) == 5:
        if vs is not None:
            S.fail(node, "packed KV key [B, L, N, 2, H] takes no value")
        return "kv"
    if vs is None:
        S.fail(node, "value is required with a 3-D or 4-D key")
    if len(ks) != len(vs) or len(ks) not in (3, 4):
        S.fail(node, f"key and value must be both 3-D or both 4-D, got {list(ks)} and {list(vs)}")
    return "bnsh" if len(ks) == 4 else "bsd"


def infer_mha(node, inputs, consts):
    n = node.attr("num_heads", 0)
    if n <= 0:
        S.fail(node, f"num_heads must be positive, got {n}")
    if S.get(inputs, 8) is not None or S.get(inputs, 9) is not None:
        S.unsupported(node, "MultiHeadAttention's past_sequence_length / cache_indirection (beam search)")
    if len(node.outputs) > 3 and node.outputs[3]:
        S.unsupported(node, "MultiHeadAttention's qk output")
    q = S.need(node, inputs, 0)
    qs, ks, vs = S.shape(q), S.shape(S.get(inputs, 1)), S.shape(S.get(inputs, 2))
    if qs is None or (S.get(inputs, 1) is not None and ks is None) or (S.get(inputs, 2) is not None and vs is None):
        return [(S.dtype(q), None)] * len(node.outputs)
    form = _mha_form(node, qs, ks, vs)
    b, s = qs[0], qs[1]
    if form == "qkv":
        h = hv = qs[4]
        l = s
    elif form == "kv":
        h = hv = ks[4]
        l = ks[1]
    elif form == "bnsh":
        if S.known(ks[1]) and ks[1] != n:
            S.fail(node, f"4-D key has {ks[1]} heads, num_heads is {n}")
        h, hv, l = ks[3], vs[3], ks[2]
    else:
        h = S.known(qs[2]) and qs[2] // n
        hv = S.known(vs[2]) and vs[2] // n
        l = ks[1]
        if S.known(qs[2]) and (qs[2] % n or (S.known(ks[2]) and ks[2] != qs[2])):
            S.fail(node, f"query {list(qs)} and key {list(ks)} hidden sizes must be equal multiples of {n} heads")
    pk, pv = S.get(inputs, 6), S.get(inputs, 7)
    if (pk is None) != (pv is None):
        S.fail(node, "past_key and past_value must be given together")
    t = l
    if pk is not None:
        if form == "bnsh":
            S.fail(node, "past_key/past_value with a 4-D (already cached) key and value")
        ps = S.shape(pk)
        if ps is not None:
            if len(ps) != 4:
                S.fail(node, f"past_key must be 4-D [B, N, P, H], got {list(ps)}")
            S.merge_dims(node, ps[1], n, "past_key's heads")
            S.merge_dims(node, ps[3], h, "past_key's head size")
            t = ps[2] + l if S.known(ps[2]) and S.known(l) else None
    dt = S.dtype(q)
    outs = [(dt, (b, s, n * hv if S.known(hv) else None)), (dt, (b, n, t, h)), (dt, (b, n, t, hv))]
    return outs[:len(node.outputs)]


def mha_mask(np, node, kpm, b, s, t, p, unidirectional, mask_value):
    """The additive mask [B, 1, S, T] (or None) from key_padding_mask and causality."""
    add = None
    if kpm is not None:
        kpm = np.asarray(kpm)
        if kpm.ndim == 1 and kpm.shape[0] == b:
            keep = np.arange(t)[None, None, :] < kpm.astype(np.int64)[:, None, None]
        elif kpm.ndim == 2 and kpm.shape == (b, t):
            keep = (kpm != 0)[:, None, :]
        elif kpm.ndim == 3 and kpm.shape == (b, s, t):
            keep = kpm != 0
        else:
            S.fail(node, f"key_padding_mask {list(kpm.shape)} is none of [{b}], [{b}, {t}], [{b}, {s}, {t}]")
        add = np.where(keep, np.float32(0), np.float32(mask_value))
    if unidirectional:
        c = np.where(np.arange(t)[None, :] <= np.arange(s)[:, None] + p, np.float32(0), np.float32(mask_value))
        add = c[None] if add is None else add + c[None]
    return None if add is None else add[:, None]


def _attend(np, node, q, k, v, add, scale, extra=None):
    """softmax(scale q k^T + add + extra) v over [B, N, S, H] heads."""
    x = np.matmul(q, k.transpose(0, 1, 3, 2)) * np.float32(scale)
    if add is not None:
        x = x + add
    if extra is not None:
        x = x + extra
    return np.matmul(_softmax(np, x.astype(np.float32)), v)


def _bias_shape(node, ab, b, n, s, t, what="attention_bias"):
    if ab is None:
        return None
    if ab.ndim != 4 or ab.shape[0] not in (1, b) or ab.shape[1] not in (1, n) or ab.shape[2] != s or ab.shape[3] != t:
        S.fail(node, f"{what} {list(ab.shape)} is not [{b}|1, {n}|1, {s}, {t}]")
    return ab.astype("float32")


def multi_head_attention(node, query, key=None, value=None, bias=None, kpm=None, attention_bias=None,
                         past_key=None, past_value=None, *rest):
    import numpy as np
    n = node.attr("num_heads")
    form = _mha_form(node, query.shape, None if key is None else key.shape, None if value is None else value.shape)
    b, s = query.shape[:2]
    f32 = np.float32
    if form == "qkv":
        h = hv = query.shape[4]
        q, k, v = (query[:, :, :, i].transpose(0, 2, 1, 3).astype(f32) for i in range(3))
        if bias is not None:
            bb = bias.astype(f32).reshape(3, n, 1, h)
            q, k, v = q + bb[0], k + bb[1], v + bb[2]
    elif form == "kv":
        h = hv = key.shape[4]
        q = query.astype(f32)
        k, v = (key[:, :, :, i].transpose(0, 2, 1, 3).astype(f32) for i in range(2))
        if bias is not None:
            q = q + bias[:n * h].astype(f32)
            k = k + bias[n * h:2 * n * h].astype(f32).reshape(n, 1, h)
            v = v + bias[2 * n * h:].astype(f32).reshape(n, 1, h)
        q = _heads(q, b, n, h)
    elif form == "bnsh":
        h, hv = key.shape[3], value.shape[3]
        if key.shape[:3] != value.shape[:3] or key.shape[0] != b or key.shape[1] != n:
            S.fail(node, f"4-D key {list(key.shape)} / value {list(value.shape)} do not fit batch {b}, {n} heads")
        q = query.astype(f32)
        if bias is not None:
            q = q + bias[:n * h].astype(f32)
        q, k, v = _heads(q, b, n, h), key.astype(f32), value.astype(f32)
    else:
        h, hv = query.shape[2] // n, value.shape[2] // n
        if query.shape[2] % n or key.shape[2] != query.shape[2] or key.shape[:2] != value.shape[:2] \
                or key.shape[0] != b or value.shape[2] % n:
            S.fail(node, f"query {list(query.shape)}, key {list(key.shape)}, value {list(value.shape)} do not fit "
                         f"{n} heads")
        q, k, v = query.astype(f32), key.astype(f32), value.astype(f32)
        if bias is not None:
            q = q + bias[:n * h].astype(f32)
            k = k + bias[n * h:2 * n * h].astype(f32)
            v = v + bias[2 * n * h:].astype(f32)
        q, k, v = _heads(q, b, n, h), _heads(k, b, n, h), _heads(v, b, n, hv)
    p = 0
    if past_key is not None:
        for x, hh, what in ((past_key, h, "past_key"), (past_value, hv, "past_value")):
            if x.ndim != 4 or x.shape[0] != b or x.shape[1] != n or x.shape[3] != hh:
                S.fail(node, f"{what} {list(x.shape)} does not fit [batch {b}, {n} heads, length, head size {hh}]")
        if past_key.shape[2] != past_value.shape[2]:
            S.fail(node, f"past_key {list(past_key.shape)} and past_value {list(past_value.shape)} lengths differ")
        p = past_key.shape[2]
        k = np.concatenate((past_key.astype(f32), k), axis=2)
        v = np.concatenate((past_value.astype(f32), v), axis=2)
    t = k.shape[2]
    add = mha_mask(np, node, kpm, b, s, t, p, node.attr("unidirectional", 0), node.attr("mask_filter_value", -10000.0))
    scale = node.attr("scale", 0.0) or 1 / math.sqrt(h)
    y = _attend(np, node, q, k, v, add, scale, _bias_shape(node, attention_bias, b, n, s, t))
    dt = query.dtype
    return _merge(y).astype(dt), k.astype(dt), v.astype(dt)


# --- Attention (the optimizer's, weights inside) ------------------------------------------------

def _qkv_sizes(node, w_cols):
    sizes = node.attr("qkv_hidden_sizes")
    if sizes is None:
        if w_cols is not None and w_cols % 3:
            S.fail(node, f"weights' {w_cols} columns are not three equal parts (and no qkv_hidden_sizes)")
        return (w_cols // 3,) * 3 if w_cols is not None else None
    sizes = tuple(int(x) for x in sizes)
    if len(sizes) != 3 or sizes[0] != sizes[1] or min(sizes) <= 0:
        S.fail(node, f"qkv_hidden_sizes {list(sizes)} must be three positive sizes, Q's equal to K's")
    if w_cols is not None and sum(sizes) != w_cols:
        S.fail(node, f"qkv_hidden_sizes {list(sizes)} do not add up to the weights' {w_cols} columns")
    return sizes


def _attention_attrs(node, sizes):
    n = node.attr("num_heads", 0)
    if n <= 0:
        S.fail(node, f"num_heads must be positive, got {n}")
    if sizes is not None and (sizes[0] % n or sizes[2] % n):
        S.fail(node, f"hidden sizes {list(sizes)} are not multiples of {n} heads")
    if node.attr("do_rotary", 0) or node.attr("past_present_share_buffer", 0):
        S.unsupported(node, "Attention with do_rotary or past_present_share_buffer")
    return n


def infer_attention_ms(node, inputs, consts):
    x, w = S.need(node, inputs, 0), S.need(node, inputs, 1)
    if S.get(inputs, 6) is not None:
        S.unsupported(node, "Attention's past_sequence_length (shared past/present buffer)")
    xs, ws = S.shape(x), S.shape(w)
    if xs is not None and len(xs) != 3:
        S.fail(node, f"input must be 3-D [batch, sequence, hidden], got {list(xs)}")
    if ws is not None and (len(ws) != 2 or (xs is not None and S.known(xs[2]) and S.known(ws[0]) and ws[0] != xs[2])):
        S.fail(node, f"weights {list(ws)} do not fit input {list(xs)}")
    sizes = _qkv_sizes(node, ws[1] if ws is not None and S.known(ws[1]) else None)
    n = _attention_attrs(node, sizes)
    b, s = (xs[0], xs[1]) if xs is not None else (None, None)
    t = s
    ps = S.shape(S.get(inputs, 4))
    if ps is not None:
        if len(ps) != 5 or ps[0] != 2:
            S.fail(node, f"past must be [2, batch, heads, past length, head size], got {list(ps)}")
        S.merge_dims(node, ps[2], n, "past's heads")
        if sizes is not None:
            S.merge_dims(node, ps[4], sizes[1] // n, "past's head size")
        t = ps[3] + s if S.known(ps[3]) and S.known(s) else None
    dt = S.dtype(x)
    outs = [(dt, (b, s, sizes[2] if sizes else None)), (dt, (2, b, n, t, sizes[1] // n if sizes else None))]
    return outs[:len(node.outputs)]


def attention_mask_index(np, node, m, b, s, t, p, mask_value):
    """The additive mask [B, 1|S, T] from mask_index in any of its forms."""
    m = np.asarray(m)
    j = np.arange(t)
    if m.ndim == 1 and m.shape[0] in (b, 2 * b):
        end = m[:b].astype(np.int64)
        keep = j[None, :] < end[:, None]
        if m.shape[0] == 2 * b:
            keep &= j[None, :] >= m[b:].astype(np.int64)[:, None]
        keep = keep[:, None, :]
    elif m.ndim == 2 and m.shape == (b, t):
        keep = (m != 0)[:, None, :]
    elif m.ndim == 3 and m.shape == (b, s, t):
        keep = m != 0
    elif m.ndim == 4 and node.attr("unidirectional", 0):
        S.fail(node, "a 4-D mask_index holds the causal mask itself: unidirectional must be 0")
    elif m.ndim == 4 and m.shape[0] == b and m.shape[1] == 1 and m.shape[2] >= p + s and m.shape[3] >= t:
        keep = m[:, 0, p:p + s, :t] != 0
    else:
        S.fail(node, f"mask_index {list(m.shape)} is none of [{b}], [{2 * b}], [{b}, {t}], [{b}, {s}, {t}], "
                     f"[{b}, 1, >={p + s}, >={t}]")
    return np.where(keep, np.float32(0), np.float32(mask_value))


def attention_ms(node, x, w, bias=None, mask_index=None, past=None, attention_bias=None, *rest):
    import numpy as np
    f32 = np.float32
    sizes = _qkv_sizes(node, w.shape[1])
    n = _attention_attrs(node, sizes)
    b, s, c = x.shape
    if w.shape[0] != c:
        S.fail(node, f"weights {list(w.shape)} do not fit input {list(x.shape)}")
    qkv = np.matmul(x.astype(f32), w.astype(f32))
    if bias is not None:
        if bias.shape != (w.shape[1],):
            S.fail(node, f"bias {list(bias.shape)} is not [{w.shape[1]}]")
        qkv = qkv + bias.astype(f32)
    hq, hv = sizes[0] // n, sizes[2] // n
    q = _heads(qkv[..., :sizes[0]], b, n, hq)
    k = _heads(qkv[..., sizes[0]:sizes[0] + sizes[1]], b, n, hq)
    v = _heads(qkv[..., sizes[0] + sizes[1]:], b, n, hv)
    p = 0
    if past is not None:
        if past.ndim != 5 or past.shape[0] != 2 or past.shape[1] != b or past.shape[2] != n or past.shape[4] != hq:
            S.fail(node, f"past {list(past.shape)} does not fit [2, batch {b}, {n} heads, length, head size {hq}]")
        if hv != hq:
            S.fail(node, "past with different Q/K and V head sizes")
        p = past.shape[3]
        k = np.concatenate((past[0].astype(f32), k), axis=2)
        v = np.concatenate((past[1].astype(f32), v), axis=2)
    t = p + s
    mv = node.attr("mask_filter_value", -10000.0)
    add = None
    if mask_index is not None:
        add = attention_mask_index(np, node, mask_index, b, s, t, p, mv)[:, None]
    if node.attr("unidirectional", 0):
        cz = np.where(np.arange(t)[None, :] <= np.arange(s)[:, None] + p, f32(0), f32(mv))[None, None]
        add = cz if add is None else add + cz
    scale = node.attr("scale", 0.0) or 1 / math.sqrt(hq)
    y = _attend(np, node, q, k, v, add, scale, _bias_shape(node, attention_bias, b, n, s, t))
    dt = x.dtype
    present = np.stack((k, v)).astype(dt) if hq == hv else None
    return _merge(y).astype(dt), present


register("GroupQueryAttention", 1, infer_gqa, group_query_attention, MS)
register("MultiHeadAttention", 1, infer_mha, multi_head_attention, MS)
register("Attention", 1, infer_attention_ms, attention_ms, MS)
