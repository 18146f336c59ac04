"""Losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss. Scores are (N, C, d1, ...),
targets (N, d1, ...) class indices; a target equal to ignore_index adds nothing and weighs nothing.
reduction "mean" divides by the summed weights of the targets (their count without weights)."""
from . import shapes as S
from .registry import op

REDUCTIONS = ("none", "sum", "mean")


def infer_loss(node, inputs, consts):
    x, t = S.need(node, inputs, 0), S.need(node, inputs, 1)
    red = node.attr("reduction", "mean")
    if red not in REDUCTIONS:
        S.fail(node, f"reduction must be one of {REDUCTIONS}, got {red!r}")
    if t.dtype is not None and t.dtype.name not in ("int32", "int64"):
        S.fail(node, f"target must be int32 or int64, got {t.dtype.name}")
    xs, ts = S.shape(x), S.shape(t)
    if xs is not None and len(xs) < 2:
        S.fail(node, f"input needs rank >= 2 (N, C, ...), got shape {list(xs)}")
    if xs is not None and ts is not None:
        if len(ts) != len(xs) - 1:
            S.fail(node, f"target shape {list(ts)} must be the input shape {list(xs)} without C")
        ts = tuple(S.merge_dims(node, a, b, "input and target") for a, b in zip((xs[0], *xs[2:]), ts))
    elif xs is not None:
        ts = (xs[0], *xs[2:])
    w = S.get(inputs, 2)
    if w is not None and S.shape(w) is not None:
        ws = S.shape(w)
        if len(ws) != 1:
            S.fail(node, f"weight must be 1-D (C,), got shape {list(ws)}")
        if xs is not None:
            S.merge_dims(node, ws[0], xs[1], "weight size and C")
    dt = S.same_dtype(node, inputs, (0, 2))
    out = [(dt, ts if red == "none" else ())]
    if len(node.outputs) > 1:
        out.append((dt, xs))
    return out


def _nll(node, logp, target, weight):
    """The loss of log-probabilities logp (N, C, ...) at target, reduced as the node says."""
    import numpy as np
    c = logp.shape[1]
    ignore = node.attr("ignore_index")
    t = target.astype(np.int64)
    keep = np.ones(t.shape, bool) if ignore is None else t != ignore
    if np.any(keep & ((t < 0) | (t >= c))):
        S.fail(node, f"target values must lie in [0, {c}) (or equal ignore_index {ignore})")
    safe = np.where(keep, t, 0)
    picked = np.take_along_axis(logp, safe[:, None], axis=1)[:, 0]
    w = np.ones(t.shape, logp.dtype) if weight is None else weight[safe]
    w = np.where(keep, w, 0).astype(logp.dtype)
    loss = np.where(keep, -picked * w, 0).astype(logp.dtype)
    red = node.attr("reduction", "mean")
    if red == "none":
        return loss.astype(logp.dtype)
    if red == "sum":
        return np.asarray(loss.sum(), logp.dtype)
    if red != "mean":
        S.fail(node, f"unknown reduction {red!r}")
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(loss.sum() / w.sum(), logp.dtype)


def nll_loss(node, x, target, weight=None):
    if x.ndim < 2 or target.shape != (x.shape[0], *x.shape[2:]):
        S.fail(node, f"target shape {list(target.shape)} does not fit input shape {list(x.shape)}")
    return _nll(node, x, target, weight)


def sce_loss(node, x, target, weight=None):
    import numpy as np
    if x.ndim < 2 or target.shape != (x.shape[0], *x.shape[2:]):
        S.fail(node, f"target shape {list(target.shape)} does not fit input shape {list(x.shape)}")
    m = np.max(x, axis=1, keepdims=True) if x.size else 0
    z = x - m
    logp = (z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))).astype(x.dtype)
    loss = _nll(node, logp, target, weight)
    return (loss, logp) if len(node.outputs) > 1 else loss


for _since in (12, 13, 22):     # 13 and 22 add element types only
    op("NegativeLogLikelihoodLoss", _since, infer_loss)(nll_loss)
for _since in (12, 13):
    op("SoftmaxCrossEntropyLoss", _since, infer_loss)(sce_loss)
