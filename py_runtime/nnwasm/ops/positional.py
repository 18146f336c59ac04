"""Ops whose values depend on element positions: Trilu (keep a triangle of the last two dims),
EyeLike (ones on a diagonal) and OneHot (on_value where the position equals the index)."""
from . import shapes as S
from .registry import op


def infer_trilu(node, inputs, consts):
    x = S.need(node, inputs, 0)
    if S.rank(x) is not None and S.rank(x) < 2:
        S.fail(node, f"input needs rank >= 2, got shape {list(S.shape(x))}")
    k = S.get(inputs, 1)
    if k is not None and S.numel(S.shape(k)) not in (None, 1):
        S.fail(node, f"k must be a scalar, got shape {list(S.shape(k))}")
    return [(x.dtype, S.shape(x))]


@op("Trilu", 14, infer_trilu)
def trilu(node, x, k=None):
    """upper=1 keeps j - i >= k of each matrix in the last two dims, upper=0 keeps j - i <= k."""
    import numpy as np
    if x.ndim < 2:
        S.fail(node, f"input needs rank >= 2, got shape {list(x.shape)}")
    k = 0 if k is None else int(k.reshape(-1)[0])
    rows, cols = x.shape[-2:]
    offset = np.arange(cols)[None, :] - np.arange(rows)[:, None]
    keep = offset >= k if node.attr("upper", 1) else offset <= k
    return np.where(keep, x, np.zeros((), x.dtype))


def infer_eye_like(node, inputs, consts):
    x = S.need(node, inputs, 0)
    if S.rank(x) is not None and S.rank(x) != 2:
        S.fail(node, f"input must be 2-D, got shape {list(S.shape(x))}")
    dt = S.dtype_attr(node, "dtype") if node.attr("dtype") is not None else x.dtype
    if dt is not None and dt.name == "object":
        S.fail(node, "the output cannot be a string tensor")
    return [(dt, S.shape(x))]


def eye_like(node, x):
    import numpy as np
    if x.ndim != 2:
        S.fail(node, f"input must be 2-D, got shape {list(x.shape)}")
    dt = S.dtype_attr(node, "dtype").name if node.attr("dtype") is not None else x.dtype
    return np.eye(*x.shape, k=node.attr("k", 0), dtype=dt)


for _since in (9, 22):     # 22 adds bfloat16
    op("EyeLike", _since, infer_eye_like)(eye_like)


def infer_one_hot(node, inputs, consts):
    idx, depth, vals = (S.need(node, inputs, i) for i in range(3))
    if S.numel(S.shape(depth)) not in (None, 1):
        S.fail(node, f"depth must be a scalar, got shape {list(S.shape(depth))}")
    if S.shape(vals) is not None and S.numel(S.shape(vals)) not in (None, 2):
        S.fail(node, f"values must be [off_value, on_value], got shape {list(S.shape(vals))}")
    xs = S.shape(idx)
    if xs is None:
        return [(vals.dtype, None)]
    a = S.axis(node, node.attr("axis", -1), len(xs) + 1)
    d = S.const_scalar(consts, 1)
    d = None if d is None else int(d)
    if d is not None and d < 1:
        S.fail(node, f"depth must be positive, got {d}")
    return [(vals.dtype, (*xs[:a], d, *xs[a:]))]


def one_hot(node, indices, depth, values):
    """Negative indices count from depth; indices outside [-depth, depth) give an all-off row."""
    import numpy as np
    if depth.size != 1 or values.size != 2:
        S.fail(node, f"depth must be one value and values two, got {depth.size} and {values.size}")
    d = int(depth.reshape(-1)[0])
    if d < 1:
        S.fail(node, f"depth must be positive, got {d}")
    a = S.axis(node, node.attr("axis", -1), indices.ndim + 1)
    i = indices.astype(np.int64)     # non-integer indices are cast, as the spec says
    i = np.where(i < 0, i + d, i)
    hot = np.expand_dims(i, a) == np.arange(d).reshape([d if j == a else 1 for j in range(indices.ndim + 1)])
    off, on = values.reshape(-1)
    return np.where(hot, on, off).astype(values.dtype)


for _since in (9, 11, 28):     # 11 allows negative indices and axis, 28 adds types
    op("OneHot", _since, infer_one_hot)(one_hot)
