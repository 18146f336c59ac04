"""Per-axis offset tables for the gather_axes op: y[i0, i1, ...] = x[t0[i0] + t1[i1] + ...], each
entry an x element offset or PAD (-1, the pad value). A lowering describes its op as one table per
output axis; this module merges neighbouring axes until the view fits the kernel's six, and emits."""
import struct

from ...dtypes import BY_NAME
from ...tensor import TensorData, numel

PAD = -1
MAX_RANK = 6
MAX_AFFINE_TABLE = 1 << 12    # entries an optional join of two contiguous axes may produce
MAX_PRODUCT_TABLE = 1 << 16   # entries a join needed to fit six axes may produce


def strides(shape):
    out, acc = [0] * len(shape), 1
    for i in range(len(shape) - 1, -1, -1):
        out[i], acc = acc, acc * shape[i]
    return out


def axis_table(coords, stride):
    """The table of one output axis reading x coordinates `coords` (None = pad) at `stride`."""
    return [PAD if c is None else c * stride for c in coords]


def _step(t):
    """The common difference of a table with no PAD entries, or None."""
    if PAD in t:
        return None
    if len(t) == 1:
        return 0
    s = t[1] - t[0]
    return s if all(t[i + 1] - t[i] == s for i in range(len(t) - 1)) else None


def _shift(t, c):
    return [PAD if v == PAD else v + c for v in t]


def merge(tables):
    """Fewer tables describing the same gather. Size-1 axes fold into a neighbour; neighbours that
    stay affine (t_k steps over all of t_k+1: a longer contiguous run) join while the joined table
    stays small; beyond six axes the pairs with the smallest product multiply out. A joined table
    has d_k * d_k+1 entries (they are data in the plan), hence the caps. None when it can't fit."""
    folded = []
    for t in [list(t) for t in tables] or [[0]]:
        if folded and len(t) == 1 and t[0] != PAD:
            folded[-1] = _shift(folded[-1], t[0])
            continue
        if folded and len(folded[-1]) == 1 and folded[-1][0] != PAD:
            t = _shift(t, folded.pop()[0])
        folded.append(t)
    out = []
    for t in folded:
        if out and len(out[-1]) * len(t) <= MAX_AFFINE_TABLE:
            s_prev, s = _step(out[-1]), _step(t)
            if s_prev is not None and s is not None and s_prev == s * len(t):
                out[-1] = _product(out[-1], t)
                continue
        out.append(t)
    while len(out) > MAX_RANK:
        k = min(range(len(out) - 1), key=lambda i: len(out[i]) * len(out[i + 1]))
        if len(out[k]) * len(out[k + 1]) > MAX_PRODUCT_TABLE:
            return None
        out[k:k + 2] = [_product(out[k], out[k + 1])]
    return out


def _product(a, c):
    return [PAD if u == PAD or v == PAD else u + v for u in a for v in c]


def fits(tables):
    if any(len(t) == 0 for t in tables):
        return "an empty output (a dim of 0)"
    return None if merge(tables) is not None else "more than 6 dims after merging"


def int32_tensor(values):
    return TensorData(BY_NAME["int32"], (len(values),), struct.pack(f"<{len(values)}i", *values))


def emit_gather_axes(b, x, y, tables, value=None):
    """y (a Ref) = x (a value name) gathered through per-axis tables; value: a Ref to the one pad
    element (needed when a table holds PAD)."""
    merged = merge(tables)
    dims = [len(t) for t in merged]
    flat = [v for t in merged for v in t]
    args = {"x": b.ref(x), "y": y, "table": b.constant(int32_tensor(flat)), "value": value,
            "esize": b.dtype(x).size, "x_count": numel(b.shape(x)), "rank": len(dims)}
    args.update({f"d{i}": dims[i] if i < len(dims) else 1 for i in range(MAX_RANK)})
    b.emit("gather_axes", **args)


def scalar_tensor(dtype, v):
    """A one-element tensor of dtype holding v (a pad value)."""
    if dtype.name == "bool":
        v = bool(v)
    elif dtype.struct not in "efd":
        v = int(v)
    return TensorData(dtype, (1,), struct.pack(f"<{dtype.struct}", v))
