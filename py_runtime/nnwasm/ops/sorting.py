"""Ops that order or select by value, with outputs sized by the data: TopK, Unique, NonZero,
NonMaxSuppression. Ties keep the lower index first, as onnxruntime does."""
from . import shapes as S
from .registry import op


# --- TopK -------------------------------------------------------------------------------------------

def _topk_k(node, consts):
    if node.opset < 10:
        k = node.attr("k")
        if k is None:
            S.fail(node, "attribute k is required")
        return int(k)
    k = S.const_scalar(consts, 1)
    return None if k is None else int(k)


def infer_topk(node, inputs, consts):
    x = S.need(node, inputs, 0)
    if node.opset >= 10:
        ks = S.shape(S.need(node, inputs, 1))
        if ks is not None and (len(ks) != 1 or S.known(ks[0]) and ks[0] != 1):
            S.fail(node, f"K must be a 1-D tensor of one value, got shape {list(ks)}")
    xs = S.shape(x)
    k = _topk_k(node, consts)
    if k is not None and k < 0:
        S.fail(node, f"k must be >= 0, got {k}")
    if xs is None:
        return [(x.dtype, None), (S.INT64, None)]
    a = S.axis(node, node.attr("axis", -1), len(xs))
    if k is not None and S.known(xs[a]) and k > xs[a]:
        S.fail(node, f"k {k} must lie in [0, {xs[a]}] (the axis size)")
    out = (*xs[:a], k, *xs[a + 1:])
    return [(x.dtype, out), (S.INT64, out)]


def _topk(node, x, k):
    import numpy as np
    a = S.axis(node, node.attr("axis", -1), x.ndim)
    n = x.shape[a]
    if not 0 <= k <= n:
        S.fail(node, f"k {k} must lie in [0, {n}] (the axis size)")
    if node.attr("largest", 1):
        # a stable ascending sort of the reversed axis, read backwards: descending, ties by index
        order = n - 1 - np.flip(np.argsort(np.flip(x, a), axis=a, kind="stable"), a)
    else:
        order = np.argsort(x, axis=a, kind="stable")
    idx = np.take(order, np.arange(k), axis=a)
    return np.take_along_axis(x, idx, axis=a), idx.astype(np.int64)


@op("TopK", 1, infer_topk)
def topk_1(node, x):
    return _topk(node, x, int(node.attr("k")))


def topk(node, x, k):
    if k.size != 1:
        S.fail(node, f"K must hold one value, got {k.size}")
    return _topk(node, x, int(k.reshape(-1)[0]))


for _since in (10, 11, 24):     # 11 adds largest/sorted, 24 types
    op("TopK", _since, infer_topk)(topk)


# --- Unique -----------------------------------------------------------------------------------------

def infer_unique(node, inputs, consts):
    x = S.need(node, inputs, 0)
    xs = S.shape(x)
    a = node.attr("axis")
    if a is None or xs is None:
        y = (None,) if a is None else None
        n = S.numel(xs) if a is None else None
    else:
        a = S.axis(node, a, len(xs))
        y = (*xs[:a], None, *xs[a + 1:])
        n = xs[a]
    return [(x.dtype, y), (S.INT64, (None,)), (S.INT64, (n,)), (S.INT64, (None,))][:len(node.outputs)]


def unique(node, x):
    """Y, the first index of each, each input's index into Y, and the counts; sorted=0 keeps the
    order of first occurrence."""
    import numpy as np
    a = node.attr("axis")
    if a is not None:
        a = S.axis(node, a, x.ndim)
    y, first, inverse, counts = np.unique(x if a is not None else x.reshape(-1), return_index=True,
                                          return_inverse=True, return_counts=True, axis=a)
    inverse = inverse.reshape(-1)
    if not node.attr("sorted", 1):
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        y = np.take(y, order, axis=0 if a is None else a)
        first, counts, inverse = first[order], counts[order], rank[inverse]
    outs = (y, first.astype(np.int64), inverse.astype(np.int64), counts.astype(np.int64))
    return outs[:len(node.outputs)]


for _since in (11, 28):
    op("Unique", _since, infer_unique)(unique)


# --- NonZero ----------------------------------------------------------------------------------------

def infer_nonzero(node, inputs, consts):
    return [(S.INT64, (S.rank(S.need(node, inputs, 0)), None))]


def nonzero(node, x):
    import numpy as np
    if x.ndim == 0:     # a scalar is one element at no coordinates
        return np.zeros((0, int(bool(x))), np.int64)
    return np.array(np.nonzero(x), dtype=np.int64).reshape(x.ndim, -1)


for _since in (9, 13):
    op("NonZero", _since, infer_nonzero)(nonzero)


# --- NonMaxSuppression ------------------------------------------------------------------------------

def infer_nms(node, inputs, consts):
    bs, ss = S.shape(S.need(node, inputs, 0)), S.shape(S.need(node, inputs, 1))
    if node.attr("center_point_box", 0) not in (0, 1):
        S.fail(node, f"center_point_box must be 0 or 1, got {node.attr('center_point_box')}")
    if bs is not None and (len(bs) != 3 or S.known(bs[2]) and bs[2] != 4):
        S.fail(node, f"boxes must be [batches, boxes, 4], got shape {list(bs)}")
    if ss is not None and len(ss) != 3:
        S.fail(node, f"scores must be [batches, classes, boxes], got shape {list(ss)}")
    if bs is not None and ss is not None:
        S.merge_dims(node, bs[0], ss[0], "batches of boxes and scores")
        S.merge_dims(node, bs[1], ss[2], "boxes of boxes and scores")
    return [(S.INT64, (None, 3))]


def _corners(node, boxes):
    """[y1, x1, y2, x2] per box, each pair ordered (corner boxes may list either corner first)."""
    import numpy as np
    if node.attr("center_point_box", 0):
        xc, yc, w, h = (boxes[..., i] for i in range(4))
        return np.stack([yc - h / 2, xc - w / 2, yc + h / 2, xc + w / 2], -1)
    y1, x1, y2, x2 = (boxes[..., i] for i in range(4))
    return np.stack([np.minimum(y1, y2), np.minimum(x1, x2), np.maximum(y1, y2), np.maximum(x1, x2)], -1)


def _iou(b, i, rest):
    import numpy as np
    lo, hi = np.maximum(b[i, :2], b[rest, :2]), np.minimum(b[i, 2:], b[rest, 2:])
    inter = np.prod(np.clip(hi - lo, 0, None), axis=-1)
    area = np.prod(b[:, 2:] - b[:, :2], axis=-1)
    union = area[i] + area[rest] - inter
    with np.errstate(all="ignore"):
        return np.where((inter > 0) & (area[i] > 0) & (area[rest] > 0) & (union > 0), inter / union, 0)


def _scalar(t, default):
    return default if t is None or t.size == 0 else t.reshape(-1)[0]


def nms(node, boxes, scores, max_per_class=None, iou_threshold=None, score_threshold=None):
    """Per batch and class: boxes by descending score (ties: lower index), above score_threshold
    if given, each kept unless its IoU with a kept one exceeds iou_threshold, up to max_per_class."""
    import numpy as np
    if boxes.ndim != 3 or boxes.shape[2] != 4 or scores.ndim != 3 or \
            scores.shape[0] != boxes.shape[0] or scores.shape[2] != boxes.shape[1]:
        S.fail(node, f"boxes {list(boxes.shape)} and scores {list(scores.shape)} do not fit "
                     "[batches, boxes, 4] and [batches, classes, boxes]")
    limit = max(int(_scalar(max_per_class, 0)), 0)
    iou_t = float(_scalar(iou_threshold, 0.0))
    picked = []
    for n in range(boxes.shape[0]):
        b = _corners(node, boxes[n].astype(np.float64))
        for c in range(scores.shape[1]):
            s = scores[n, c]
            cand = np.argsort(-s.astype(np.float64), kind="stable")
            if score_threshold is not None and score_threshold.size:
                cand = cand[s[cand] > _scalar(score_threshold, 0)]
            kept = []
            for i in cand:
                if len(kept) >= limit:
                    break
                if not kept or not np.any(_iou(b, i, np.array(kept)) > iou_t):
                    kept.append(int(i))
            picked += [(n, c, i) for i in kept]
    return np.array(picked, dtype=np.int64).reshape(-1, 3)


for _since in (10, 11):
    op("NonMaxSuppression", _since, infer_nms)(nms)
