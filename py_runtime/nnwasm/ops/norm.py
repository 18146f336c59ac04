"""Normalisations: BatchNormalization, InstanceNormalization, LayerNormalization, GroupNormalization,
LpNormalization, RMSNormalization, MeanVarianceNormalization. Statistics are computed in float32 or
wider."""
from . import shapes as S
from .elementwise import infer_unary
from .registry import op


def _outputs(node):
    return sum(1 for o in node.outputs if o)


def _channel_params(node, inputs, first, last, xs):
    """Checks that inputs first..last are 1-D of the channel count of xs; returns that count."""
    c = xs[1] if xs is not None and len(xs) > 1 else None
    for i in range(first, last + 1):
        ps = S.shape(S.need(node, inputs, i))
        if ps is not None and len(ps) == 1:
            c = S.merge_dims(node, c, ps[0], f"input {i} size and the channel count of {list(xs or ())}")
    return c


def infer_batch_norm(node, inputs, consts):
    x = S.need(node, inputs, 0)
    xs = S.shape(x)
    if xs is not None and len(xs) < 2:
        S.fail(node, f"input needs rank >= 2, got shape {list(xs)}")
    c = _channel_params(node, inputs, 1, 4, xs)
    training = node.opset >= 14 and node.attr("training_mode", 0)
    if node.opset < 14 and _outputs(node) > 1:
        S.unsupported(node, "training-mode outputs (mean, var, saved_mean, saved_var) before opset 14")
    if node.opset >= 14 and not training and _outputs(node) > 1:
        S.fail(node, "running_mean/running_var outputs need training_mode=1")
    return [(x.dtype, xs)] + [(x.dtype, (c,))] * (len(node.outputs) - 1)


def _per_channel(p, x):
    # 1-D parameters are per channel; opset < 9 with spatial=0 gives them shape (C, D1, ...).
    return p.reshape(-1, *[1] * (x.ndim - 2)) if p.ndim == 1 else p


@op("BatchNormalization", 6, infer_batch_norm)
def batch_norm_6(node, x, scale, b, mean, var):
    import numpy as np
    eps = node.attr("epsilon", 1e-5)
    inv = 1 / np.sqrt(_per_channel(var, x) + np.asarray(eps, var.dtype))
    return ((x - _per_channel(mean, x)) * inv * _per_channel(scale, x) + _per_channel(b, x)).astype(x.dtype)


@op("BatchNormalization", 14, infer_batch_norm)
def batch_norm_14(node, x, scale, b, mean, var):
    if not node.attr("training_mode", 0):
        return batch_norm_6(node, x, scale, b, mean, var)
    axes = (0, *range(2, x.ndim))
    cur_mean, cur_var = x.mean(axis=axes), x.var(axis=axes)
    y = batch_norm_6(node, x, scale, b, cur_mean, cur_var)
    m = node.attr("momentum", 0.9)
    return (y, (mean * m + cur_mean * (1 - m)).astype(mean.dtype),
            (var * m + cur_var * (1 - m)).astype(var.dtype))


def infer_instance_norm(node, inputs, consts):
    x = S.need(node, inputs, 0)
    xs = S.shape(x)
    if xs is not None and len(xs) < 3:
        S.fail(node, f"input needs rank >= 3, got shape {list(xs)}")
    _channel_params(node, inputs, 1, 2, xs)
    return [(S.same_dtype(node, inputs), xs)]


@op("InstanceNormalization", 6, infer_instance_norm)
def instance_norm(node, x, scale, b):
    return _normalize(x, tuple(range(2, x.ndim)), node.attr("epsilon", 1e-5),
                      _per_channel(scale, x), _per_channel(b, x))[0]


def _normalize(x, axes, eps, scale, bias, stash="float32"):
    """(y, mean, 1/std) with statistics over axes, computed in the stash type."""
    import numpy as np
    xf = x.astype(np.result_type(x.dtype, stash))
    mean = xf.mean(axis=axes, keepdims=True)
    inv_std = 1 / np.sqrt(((xf - mean) ** 2).mean(axis=axes, keepdims=True) + eps)
    y = (xf - mean) * inv_std * scale
    if bias is not None:
        y = y + bias
    return y.astype(x.dtype), mean, inv_std


def infer_layer_norm(node, inputs, consts):
    x = S.need(node, inputs, 0)
    S.need(node, inputs, 1)
    xs = S.shape(x)
    stash = S.dtype_attr(node, "stash_type", 1)
    for i in (1, 2):
        if S.get(inputs, i) is not None and xs is not None and S.shape(inputs[i]) is not None:
            S.broadcast(node, xs, S.shape(inputs[i]))
    if xs is None:
        return [(x.dtype, None), (stash, None), (stash, None)][:len(node.outputs)]
    a = S.axis(node, node.attr("axis", -1), len(xs))
    stat = (*xs[:a], *[1] * (len(xs) - a))
    return [(x.dtype, xs), (stash, stat), (stash, stat)][:len(node.outputs)]


@op("LayerNormalization", 17, infer_layer_norm)
def layer_norm(node, x, scale, b=None):
    a = node.attr("axis", -1) % x.ndim
    stash = S.dtype_attr(node, "stash_type", 1).name
    return _normalize(x, tuple(range(a, x.ndim)), node.attr("epsilon", 1e-5), scale, b, stash)


def infer_group_norm(node, inputs, consts):
    """Scale and bias are per group before opset 21, per channel from 21."""
    x = S.need(node, inputs, 0)
    xs = S.shape(x)
    g = node.attr("num_groups")
    if g is None:
        S.fail(node, "attribute num_groups is required")
    if node.opset < 21:
        for i in (1, 2):
            ps = S.shape(S.need(node, inputs, i))
            if ps is not None and len(ps) == 1 and S.known(ps[0]) and ps[0] != g:
                S.fail(node, f"input {i} has {ps[0]} values, not num_groups {g}")
        c = xs[1] if xs is not None and len(xs) > 1 else None
    else:
        c = _channel_params(node, inputs, 1, 2, xs)
    if S.known(c) and c % g:
        S.fail(node, f"channels {c} are not a multiple of num_groups {g}")
    return [(S.same_dtype(node, inputs), xs)]


def _group_norm(node, x, scale, b, per_group):
    n, c = x.shape[:2]
    g = node.attr("num_groups")
    xg = x.reshape(n, g, -1)
    stash = S.dtype_attr(node, "stash_type", 1).name if not per_group else "float32"
    if per_group:
        scale, b = (p.reshape(1, g, 1) for p in (scale, b))
        return _normalize(xg, (2,), node.attr("epsilon", 1e-5), scale, b, stash)[0].reshape(x.shape)
    y = _normalize(xg, (2,), node.attr("epsilon", 1e-5), 1, None, stash)[0].reshape(x.shape)
    return (y * _per_channel(scale, x) + _per_channel(b, x)).astype(x.dtype)


@op("GroupNormalization", 18, infer_group_norm)
def group_norm_18(node, x, scale, b):
    return _group_norm(node, x, scale, b, True)


@op("GroupNormalization", 21, infer_group_norm)
def group_norm(node, x, scale, b):
    return _group_norm(node, x, scale, b, False)


@op("LpNormalization", 1, infer_unary)
def lp_norm(node, x):
    import numpy as np
    p = node.attr("p", 2)
    if p not in (1, 2):
        S.fail(node, f"p must be 1 or 2, got {p}")
    a = node.attr("axis", -1)
    norm = np.sum(np.abs(x), axis=a, keepdims=True) if p == 1 else np.sqrt(np.sum(x * x, axis=a, keepdims=True))
    return np.divide(x, norm, out=np.zeros_like(x), where=norm != 0)     # a zero vector stays zero


def infer_lrn(node, inputs, consts):
    x = S.need(node, inputs, 0)
    if S.shape(x) is not None and len(S.shape(x)) < 3:
        S.fail(node, f"input needs rank >= 3, got shape {list(S.shape(x))}")
    if node.attr("size") is None or node.attr("size") < 1:
        S.fail(node, "attribute size (a positive int) is required")
    return infer_unary(node, inputs, consts)


@op("LRN", 1, infer_lrn)
def lrn(node, x):
    """Across channels: x / (bias + alpha / size * sum of squares over the window)^beta, the window
    running floor((size-1)/2) channels back and ceil((size-1)/2) ahead, clipped to the tensor."""
    import numpy as np
    size = node.attr("size")
    alpha, beta, bias = node.attr("alpha", 1e-4), node.attr("beta", 0.75), node.attr("bias", 1.0)
    sq = np.square(x.astype(np.float64))
    before, after = (size - 1) // 2, size - 1 - (size - 1) // 2
    padded = np.pad(sq, [(0, 0), (before, after)] + [(0, 0)] * (x.ndim - 2))
    csum = np.concatenate([np.zeros_like(padded[:, :1]), np.cumsum(padded, axis=1)], axis=1)
    window = csum[:, size:] - csum[:, :-size]
    return (x / (bias + alpha / size * window) ** beta).astype(x.dtype)


def infer_rms_norm(node, inputs, consts):
    x = S.need(node, inputs, 0)
    xs, ss = S.shape(x), S.shape(S.need(node, inputs, 1))
    S.dtype_attr(node, "stash_type", 1)
    if xs is not None:
        S.axis(node, node.attr("axis", -1), len(xs))
        out = S.broadcast(node, xs, ss) if ss is not None and len(ss) <= len(xs) else None
        if ss is not None and (out is None or any(S.known(o) and S.known(d) and o != d for o, d in zip(out, xs))):
            S.fail(node, f"scale shape {list(ss)} does not broadcast to the input shape {list(xs)}")
    return [(x.dtype, xs)]


@op("RMSNormalization", 23, infer_rms_norm)
def rms_norm(node, x, scale):
    """x / sqrt(mean(x^2 over axis..last) + epsilon) * scale, in the stash type."""
    import numpy as np
    a = S.axis(node, node.attr("axis", -1), x.ndim)
    xf = x.astype(np.result_type(x.dtype, S.dtype_attr(node, "stash_type", 1).name))
    ms = np.mean(xf * xf, axis=tuple(range(a, x.ndim)), keepdims=True)
    return (xf / np.sqrt(ms + node.attr("epsilon", 1e-5)) * scale).astype(x.dtype)


def infer_mvn(node, inputs, consts):
    x = S.need(node, inputs, 0)
    if S.rank(x) is not None:
        S.axes(node, S.ints_attr(node, "axes", [0, 2, 3]), S.rank(x))
    return infer_unary(node, inputs, consts)


def mvn(node, x):
    """(x - mean) / (sqrt(mean(x^2) - mean^2) + 1e-9) over axes (default N, H, W)."""
    import numpy as np
    axes = tuple(S.axes(node, S.ints_attr(node, "axes", [0, 2, 3]), x.ndim))
    mean = np.mean(x, axis=axes, keepdims=True)
    std = np.sqrt(np.mean(x * x, axis=axes, keepdims=True) - mean * mean)
    return ((x - mean) / (std + np.asarray(1e-9, x.dtype))).astype(x.dtype)


for _since in (9, 13):      # 13 adds bfloat16 only
    op("MeanVarianceNormalization", _since, infer_mvn)(mvn)
