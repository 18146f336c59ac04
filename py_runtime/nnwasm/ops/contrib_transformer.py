"""onnxruntime's transformer normalisation, activation, embedding and rotary ops: what
onnxruntime.transformers.optimizer (bert, gpt2, clip, vit) and onnxruntime-genai's model builder
write besides attention and quantized weights (docs/onnxruntime-api.md, "onnxruntime's transformer
ops", lists who emits which). Semantics are onnxruntime 1.31's CPU kernels:

  com.microsoft SkipLayerNormalization(input, skip, gamma, beta?, bias?) -> output, mean?,
      inv_std_var?, input_skip_bias_sum?        s = input + skip + bias; LayerNorm of s over the
      last dim (epsilon 1e-12); input [B, S, H] or [S, H]; skip like input, [S, H] or [1, S, H]
  com.microsoft SkipSimplifiedLayerNormalization(input, skip, gamma, bias?) -> the same four
      outputs, RMSNorm: s / sqrt(mean(s^2) + epsilon) * gamma, mean written as 0
  ai.onnx SimplifiedLayerNormalization(X, scale) -> Y, inv_std_var?   (onnxruntime-genai's RMSNorm,
      registered by onnxruntime in the ai.onnx domain at since-version 1; axis, epsilon 1e-5)
  com.microsoft EmbedLayerNormalization(input_ids, segment_ids?, word_embedding,
      position_embedding, segment_embedding?, gamma, beta, mask?, position_ids?) -> output,
      mask_index? (int32 [B]: the count of mask == 1 per row, 0 without a mask), embedding_sum?
  com.microsoft BiasGelu(A, B) = Gelu(A + B); QuickGelu(X) = X sigmoid(alpha X), alpha 1.702
  com.microsoft RotaryEmbedding(input, position_ids, cos_cache, sin_cache): input [B, S, N*H] or
      [B, N, S, H]; position_ids [B, S], or one start position p (rows p, p+1, ...); caches
      [max positions, rotary_embedding_dim / 2]; the features past rotary_embedding_dim copied.
"""
import math

from .. import dtypes
from . import shapes as S
from .registry import register

MS = "com.microsoft"
INT32 = dtypes.BY_NAME["int32"]


def _out_count(node):
    return len(node.outputs)


def _last(node, vi, what, want):
    """The last dim of a 1-D parameter, checked against the hidden size `want`."""
    s = S.shape(vi)
    if s is None:
        return
    if len(s) != 1:
        S.fail(node, f"{what} must be 1-D, got shape {list(s)}")
    if S.known(s[0]) and S.known(want) and s[0] != want:
        S.fail(node, f"{what} has {s[0]} values; the hidden size is {want}")


# ---- SkipLayerNormalization / SkipSimplifiedLayerNormalization ---------------------------------

def _skip_inputs(node, inputs):
    """(x, skip, gamma, beta, bias) ValueInfos (None where absent) of either skip norm."""
    if node.op_type == "SkipSimplifiedLayerNormalization":
        x, skip, gamma, bias = (S.get(inputs, i) for i in range(4))
        return x, skip, gamma, None, bias
    return tuple(S.get(inputs, i) for i in range(5))


def infer_skip_norm(node, inputs, consts):
    for i in range(3):
        S.need(node, inputs, i)
    x, skip, gamma, beta, bias = _skip_inputs(node, inputs)
    dt = S.same_dtype(node, inputs)
    xs, ks = S.shape(x), S.shape(skip)
    if xs is not None and len(xs) not in (2, 3):
        S.fail(node, f"input must be 2-D or 3-D, got shape {list(xs)}")
    if xs is not None and ks is not None:
        ok = len(ks) == len(xs) or (len(xs) == 3 and len(ks) == 2)
        if ok and len(ks) == len(xs) == 3 and S.known(ks[0]) and ks[0] != 1:
            ok = not S.known(xs[0]) or ks[0] == xs[0]
        if ok:
            ok = all(not (S.known(a) and S.known(b)) or a == b for a, b in zip(xs[-2:], ks[-2:]))
        if not ok:
            S.fail(node, f"skip of shape {list(ks)} does not fit input of shape {list(xs)} "
                         "(it must be the input's shape, [seq, hidden] or [1, seq, hidden])")
    hidden = xs[-1] if xs else None
    for vi, what in ((gamma, "gamma"), (beta, "beta"), (bias, "bias")):
        if vi is not None:
            _last(node, vi, what, hidden)
    if node.attr("epsilon", 1e-12) < 0:
        S.fail(node, "epsilon must be >= 0")
    stat = None if xs is None else (*xs[:-1], 1)
    return [(dt, xs), (dt, stat), (dt, stat), (dt, xs)][:_out_count(node)]


def _norm_rows(s, gamma, beta, eps, rms):
    """(y, mean, inv_std) of s over its last axis, statistics in float64."""
    import numpy as np
    s64 = s.astype(np.float64)
    mean = np.zeros(s.shape[:-1] + (1,)) if rms else s64.mean(axis=-1, keepdims=True)
    d = s64 - mean
    inv = 1 / np.sqrt((d * d).mean(axis=-1, keepdims=True) + eps)
    y = d * inv
    if gamma is not None:
        y = y * gamma
    if beta is not None:
        y = y + beta
    return y.astype(s.dtype), mean.astype(s.dtype), inv.astype(s.dtype)


def _check_skip_runtime(node, x, skip, params):
    if x.ndim not in (2, 3):
        S.fail(node, f"input must be 2-D or 3-D, got shape {list(x.shape)}")
    if not (skip.shape == x.shape or skip.shape == x.shape[-2:] or skip.shape == (1, *x.shape[-2:])):
        S.fail(node, f"skip of shape {list(skip.shape)} does not fit input of shape {list(x.shape)}")
    for p, what in params:
        if p is not None and p.shape != x.shape[-1:]:
            S.fail(node, f"{what} of shape {list(p.shape)}; the hidden size is {x.shape[-1]}")


def skip_layer_norm(node, x, skip, gamma, beta=None, bias=None):
    _check_skip_runtime(node, x, skip, ((gamma, "gamma"), (beta, "beta"), (bias, "bias")))
    s = x + skip
    if bias is not None:
        s = s + bias
    y, mean, inv = _norm_rows(s, gamma, beta, node.attr("epsilon", 1e-12), False)
    return (y, mean, inv, s)[:_out_count(node)]


def skip_simplified_layer_norm(node, x, skip, gamma, bias=None):
    _check_skip_runtime(node, x, skip, ((gamma, "gamma"), (bias, "bias")))
    s = x + skip
    if bias is not None:
        s = s + bias
    y, mean, inv = _norm_rows(s, gamma, None, node.attr("epsilon", 1e-12), True)
    return (y, mean, inv, s)[:_out_count(node)]


# ---- SimplifiedLayerNormalization (ai.onnx, onnxruntime's registration) ------------------------

def infer_simplified_layer_norm(node, inputs, consts):
    x = S.need(node, inputs, 0)
    S.need(node, inputs, 1)
    if _out_count(node) > 2:
        S.fail(node, f"it has {_out_count(node)} outputs; SimplifiedLayerNormalization has at most 2")
    xs, ss = S.shape(x), S.shape(inputs[1])
    stat = None
    if xs is not None:
        a = S.axis(node, node.attr("axis", -1), len(xs))
        if ss is not None and (len(ss) > len(xs) - a
                               or any(S.known(p) and S.known(d) and p not in (1, d) for p, d in zip(ss[::-1], xs[::-1]))):
            S.fail(node, f"scale of shape {list(ss)} does not broadcast over the normalised dims {list(xs[a:])}")
        stat = (*xs[:a], *[1] * (len(xs) - a))
    return [(x.dtype, xs), (S.dtype_attr(node, "stash_type", 1), stat)][:_out_count(node)]


def simplified_layer_norm(node, x, scale):
    import numpy as np
    a = S.axis(node, node.attr("axis", -1), x.ndim)
    axes = tuple(range(a, x.ndim))
    x64 = x.astype(np.float64)
    inv = 1 / np.sqrt((x64 * x64).mean(axis=axes, keepdims=True) + node.attr("epsilon", 1e-5))
    try:
        y = (x64 * inv * scale).astype(x.dtype)
    except ValueError:
        S.fail(node, f"scale of shape {list(scale.shape)} does not broadcast over {list(x.shape[a:])}")
    if y.shape != x.shape:
        S.fail(node, f"scale of shape {list(scale.shape)} does not broadcast over {list(x.shape[a:])}")
    return (y, inv.astype(np.float32))[:_out_count(node)]


# ---- EmbedLayerNormalization -------------------------------------------------------------------

def infer_embed_layer_norm(node, inputs, consts):
    ids = S.need_index(node, inputs, 0, "input_ids")
    for i in (2, 3, 5, 6):
        S.need(node, inputs, i)
    ids_s = S.shape(ids)
    if ids_s is not None and len(ids_s) != 2:
        S.fail(node, f"input_ids must be 2-D [batch, sequence], got shape {list(ids_s)}")
    word = S.shape(inputs[2])
    hidden = word[1] if word is not None and len(word) == 2 else None
    for i, what in ((2, "word_embedding"), (3, "position_embedding"), (4, "segment_embedding")):
        es = S.shape(S.get(inputs, i))
        if es is not None and (len(es) != 2 or (S.known(es[1]) and S.known(hidden) and es[1] != hidden)):
            S.fail(node, f"{what} must be [rows, hidden {hidden}], got shape {list(es)}")
    if (S.get(inputs, 1) is None) != (S.get(inputs, 4) is None):
        S.fail(node, "segment_ids and segment_embedding come together")
    for i, what in ((1, "segment_ids"), (7, "mask"), (8, "position_ids")):
        vi = S.get(inputs, i)
        if vi is None:
            continue
        if i != 7:
            S.need_index(node, inputs, i, what)
        elif vi.dtype is not None and vi.dtype.name != "int32":
            S.fail(node, f"mask must be int32, got {vi.dtype.name}")
        vs = S.shape(vi)
        if vs is not None and ids_s is not None and (len(vs) != 2 or any(
                S.known(a) and S.known(b) and a != b and not (i == 8 and k == 0 and a == 1)
                for k, (a, b) in enumerate(zip(vs, ids_s)))):
            S.fail(node, f"{what} of shape {list(vs)} does not match input_ids' {list(ids_s)}")
    for i, what in ((5, "gamma"), (6, "beta")):
        _last(node, inputs[i], what, hidden)
    dt = S.same_dtype(node, inputs, [2, 3, 5, 6] + ([4] if S.get(inputs, 4) is not None else []))
    out = None if ids_s is None else (*ids_s, hidden)
    mi = None if ids_s is None else (ids_s[0],)
    return [(dt, out), (INT32, mi), (dt, out)][:_out_count(node)]


def embed_layer_norm(node, ids, segs, word, pos, seg, gamma, beta, mask=None, pos_ids=None):
    import numpy as np
    b, s = ids.shape
    if pos_ids is None:
        pos_ids = np.broadcast_to(np.arange(s), (b, s))
    elif pos_ids.shape not in ((b, s), (1, s)):
        S.fail(node, f"position_ids of shape {list(pos_ids.shape)} do not match input_ids' {[b, s]}")
    for t, table, what in ((ids, word, "input_ids"), (pos_ids, pos, "position ids"), (segs, seg, "segment_ids")):
        if t is not None and (np.any(t < 0) or np.any(t >= table.shape[0])):
            S.fail(node, f"{what} outside [0, {table.shape[0]})")
    e = word[ids] + pos[np.broadcast_to(pos_ids, (b, s))]
    if segs is not None:
        e = e + seg[segs]
    y = _norm_rows(e, gamma, beta, node.attr("epsilon", 1e-12), False)[0]
    mi = np.zeros(b, np.int32) if mask is None else np.count_nonzero(mask == 1, axis=1).astype(np.int32)
    return (y, mi, e)[:_out_count(node)]


# ---- activations -------------------------------------------------------------------------------

def infer_bias_act(node, inputs, consts):
    x = S.need(node, inputs, 0)
    xs, bs = S.shape(x), S.shape(S.get(inputs, 1))
    if bs is not None and xs is not None:
        if len(bs) != 1 or (S.known(bs[0]) and xs and S.known(xs[-1]) and bs[0] != xs[-1]):
            S.fail(node, f"bias of shape {list(bs)} must be 1-D of the last dim of input {list(xs)}")
    S.same_dtype(node, inputs)
    return [(x.dtype, xs)]


def _gelu(x):
    import numpy as np
    x64 = x.astype(np.float64)
    erf = np.frompyfunc(math.erf, 1, 1)(x64 / math.sqrt(2)).astype(np.float64)
    return (0.5 * x64 * (1 + erf)).astype(x.dtype)


def bias_gelu(node, a, b):
    if b.ndim != 1 or b.shape[0] != a.shape[-1]:
        S.fail(node, f"bias of shape {list(b.shape)} must be 1-D of the last dim of input {list(a.shape)}")
    return _gelu(a + b)


def quick_gelu(node, x):
    import numpy as np
    x64 = x.astype(np.float64)
    return (x64 / (1 + np.exp(-node.attr("alpha", 1.702) * x64))).astype(x.dtype)


# ---- RotaryEmbedding (com.microsoft) -----------------------------------------------------------

def rotary_geometry(node, xs, cache_half):
    """(num_heads, head_size, rotary_embedding_dim) of a com.microsoft RotaryEmbedding input of
    static shape xs with caches of cache_half columns; InvalidModel when they don't fit."""
    heads = node.attr("num_heads", 0)
    rd = node.attr("rotary_embedding_dim", 0)
    if rd and heads <= 0:
        S.fail(node, "num_heads must be given with rotary_embedding_dim")
    if len(xs) == 4:
        heads, head = xs[1], xs[3]
    else:
        if heads <= 0:
            heads = xs[2] // (2 * cache_half) if cache_half and xs[2] % (2 * cache_half) == 0 else 0
        if heads <= 0 or xs[2] % heads:
            S.fail(node, f"hidden size {xs[2]} does not split into num_heads {heads} heads")
        head = xs[2] // heads
    rd = rd or head
    if rd % 2 or rd > head:
        S.fail(node, f"rotary_embedding_dim {rd} must be even and at most the head size {head}")
    if cache_half != rd // 2:
        S.fail(node, f"the caches have {cache_half} columns; rotary_embedding_dim / 2 is {rd // 2}")
    return heads, head, rd


def infer_ms_rotary(node, inputs, consts):
    x, pos, cos, sin = (S.need(node, inputs, i) for i in range(4))
    xs, ps, cs, ss = (S.shape(v) for v in (x, pos, cos, sin))
    if node.attr("is_packed_batching", 0):
        S.unsupported(node, "is_packed_batching=1")
    if node.attr("interleaved", 0) not in (0, 1):
        S.fail(node, "interleaved must be 0 or 1")
    if pos.dtype is not None and pos.dtype.name != "int64":
        S.fail(node, f"position_ids must be int64, got {pos.dtype.name}")
    if xs is not None and len(xs) not in (3, 4):
        S.fail(node, f"input must be 3-D [batch, seq, hidden] or 4-D [batch, heads, seq, head], got {list(xs)}")
    for c, what in ((cs, "cos_cache"), (ss, "sin_cache")):
        if c is not None and len(c) != 2:
            S.fail(node, f"{what} must be 2-D [positions, rotary_embedding_dim / 2], got {list(c)}")
    if cs is not None and ss is not None and cs != ss:
        S.fail(node, f"cos_cache {list(cs)} and sin_cache {list(ss)} differ")
    if xs is not None and S.static(xs) and cs is not None and S.known(cs[1]):
        rotary_geometry(node, xs, cs[1])
    if ps is not None and xs is not None and not (len(ps) == 1 and ps[0] in (1, None) or len(ps) == 0 or len(ps) == 2):
        S.fail(node, f"position_ids must be one start position or [batch, seq], got shape {list(ps)}")
    return [(S.same_dtype(node, inputs, [0, 2, 3]), xs)]


def ms_rotary_embedding(node, x, pos, cos, sin):
    import numpy as np
    heads, head, rd = rotary_geometry(node, x.shape, cos.shape[1])
    if x.ndim == 4:
        xv = x.transpose(0, 2, 1, 3)
    else:
        xv = x.reshape(x.shape[0], x.shape[1], heads, head)
    b, s = xv.shape[:2]
    if pos.size == 1:
        pos = int(pos.reshape(-1)[0]) + np.broadcast_to(np.arange(s), (b, s))
    elif pos.shape != (b, s):
        S.fail(node, f"position_ids of shape {list(pos.shape)}; they must be one start or [{b}, {s}]")
    if np.any(pos < 0) or np.any(pos >= cos.shape[0]) or sin.shape != cos.shape:
        S.fail(node, f"position ids outside the caches' {cos.shape[0]} positions")
    c, sn = cos[pos][:, :, None, :], sin[pos][:, :, None, :]
    rot = xv[..., :rd]
    if node.attr("interleaved", 0):
        x1, x2 = rot[..., 0::2], rot[..., 1::2]
    else:
        x1, x2 = rot[..., :rd // 2], rot[..., rd // 2:]
    r1, r2 = x1 * c - x2 * sn, x2 * c + x1 * sn
    rot = np.stack((r1, r2), axis=-1).reshape(rot.shape) if node.attr("interleaved", 0) else \
        np.concatenate((r1, r2), axis=-1)
    y = np.concatenate((rot, xv[..., rd:]), axis=-1).astype(x.dtype, copy=False)
    return np.ascontiguousarray(y.transpose(0, 2, 1, 3) if x.ndim == 4 else y.reshape(x.shape))


register("SkipLayerNormalization", 1, infer_skip_norm, skip_layer_norm, MS)
register("SkipSimplifiedLayerNormalization", 1, infer_skip_norm, skip_simplified_layer_norm, MS)
register("SimplifiedLayerNormalization", 1, infer_simplified_layer_norm, simplified_layer_norm)
register("EmbedLayerNormalization", 1, infer_embed_layer_norm, embed_layer_norm, MS)
register("BiasGelu", 1, infer_bias_act, bias_gelu, MS)
register("QuickGelu", 1, infer_bias_act, quick_gelu, MS)
register("RotaryEmbedding", 1, infer_ms_rotary, ms_rotary_embedding, MS)
