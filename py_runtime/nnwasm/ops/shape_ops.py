"""Ops that move or reshape data without arithmetic: Reshape, Flatten, Transpose, Squeeze,
Unsqueeze, Shape, Size, Expand, Tile, DepthToSpace, SpaceToDepth. Slicing, gathering, splitting
and padding live in indexing.py."""
from . import shapes as S
from .registry import op


def dim_product(dims):
    """Product of dims: an int when all are known; a lone symbolic dim times 1s stays that symbol."""
    n, rest = 1, []
    for d in dims:
        if S.known(d):
            n *= d
        else:
            rest.append(d)
    if not rest:
        return n
    return rest[0] if len(rest) == 1 and n == 1 and rest[0] is not None else None


# --- Reshape -----------------------------------------------------------------------------------

def reshape_target(node, ds, target, allowzero):
    """Output shape of Reshape(data of shape ds, constant shape target)."""
    out, fill = [], None
    for i, t in enumerate(target):
        if t == -1:
            if fill is not None:
                S.fail(node, f"shape {target} has more than one -1")
            fill = i
            out.append(None)
        elif t == 0 and not allowzero:
            if ds is not None and i >= len(ds):
                S.fail(node, f"shape {target} copies dim {i} (0) from input shape {list(ds)} of lower rank")
            out.append(None if ds is None else ds[i])
        elif t < 0:
            S.fail(node, f"shape {target} has a negative entry other than -1")
        else:
            out.append(t)
    if ds is None:
        return tuple(out)
    in_n, out_n = S.numel(ds), S.numel([d for i, d in enumerate(out) if i != fill])
    if fill is None:
        if in_n is not None and out_n is not None and in_n != out_n:
            S.fail(node, f"cannot reshape {list(ds)} ({in_n} elements) to {target} ({out_n} elements)")
        return tuple(out)
    if allowzero and 0 in target:
        S.fail(node, f"shape {target} has both -1 and 0 with allowzero=1")
    out[fill] = _fill_dim(node, list(ds), [d for i, d in enumerate(out) if i != fill], target)
    return tuple(out)


def _fill_dim(node, ins, outs, target):
    # Cancel symbolic dims that appear on both sides, then divide what is left.
    for d in list(outs):
        if not S.known(d) and d is not None and d in ins:
            ins.remove(d)
            outs.remove(d)
    if any(not S.known(d) for d in outs) or None in ins:
        return None
    have, want = 1, 1
    for d in ins:
        have *= d if S.known(d) else 1
    for d in outs:
        want *= d
    symbols = [d for d in ins if not S.known(d)]
    if symbols:   # the -1 dim is a symbol only if the known parts cancel exactly
        return symbols[0] if len(symbols) == 1 and have == want else None
    if want == 0 or have % want:
        S.fail(node, f"cannot reshape {ins} to {target}: {have} elements do not divide by {want}")
    return have // want


def infer_reshape(node, inputs, consts):
    data, shp = S.need(node, inputs, 0), S.need(node, inputs, 1)
    target = S.const_ints(consts, 1)
    allowzero = node.opset >= 14 and node.attr("allowzero", 0)
    if target is None:
        ss = S.shape(shp)
        if ss is None or len(ss) != 1 or not S.known(ss[0]):
            return [(data.dtype, None)]
        return [(data.dtype, (None,) * ss[0])]
    return [(data.dtype, reshape_target(node, S.shape(data), target, allowzero))]


@op("Reshape", 5, infer_reshape)
def reshape(node, x, shape):
    out = reshape_target(node, x.shape, [int(v) for v in shape.tolist()],
                         node.opset >= 14 and node.attr("allowzero", 0))
    return x.reshape(out)


# --- Flatten, Transpose ----------------------------------------------------------------------------

def infer_flatten(node, inputs, consts):
    x = S.need(node, inputs, 0)
    xs = S.shape(x)
    if xs is None:
        return [(x.dtype, (None, None))]
    a = node.attr("axis", 1)
    if not -len(xs) <= a <= len(xs):
        S.fail(node, f"axis {a} is out of range for rank {len(xs)}")
    a = a + len(xs) if a < 0 else a
    return [(x.dtype, (dim_product(xs[:a]), dim_product(xs[a:])))]


@op("Flatten", 1, infer_flatten)
def flatten(node, x):
    a = node.attr("axis", 1)
    a = a + x.ndim if a < 0 else a
    lead = 1
    for d in x.shape[:a]:
        lead *= d
    rest = 1
    for d in x.shape[a:]:
        rest *= d
    return x.reshape(lead, rest)


def _perm(node, r):
    perm = S.ints_attr(node, "perm")
    if perm is None:
        return None if r is None else list(range(r))[::-1]
    if r is not None and sorted(perm) != list(range(r)):
        S.fail(node, f"perm {perm} is not a permutation of {r} axes")
    return perm


def infer_transpose(node, inputs, consts):
    x = S.need(node, inputs, 0)
    xs = S.shape(x)
    perm = _perm(node, S.rank(x))
    if perm is None:
        return [(x.dtype, None)]
    return [(x.dtype, None if xs is None else tuple(xs[p] for p in perm))]


@op("Transpose", 1, infer_transpose)
def transpose(node, x):
    return x.transpose(_perm(node, x.ndim))


# --- Squeeze, Unsqueeze -----------------------------------------------------------------------------

def _axes_from(node, consts, index):
    """Squeeze/Unsqueeze axes: an attribute before opset 13, the optional input `index` from 13."""
    if node.opset < 13:
        return S.ints_attr(node, "axes"), True
    return S.const_ints(consts, index), S.get(node.inputs, index) in (None, "") or S.get(consts, index) is not None


def squeeze_shape(node, xs, axes):
    if xs is None:
        return None
    if axes is None:
        if not S.static(xs):
            return None
        return tuple(d for d in xs if d != 1)
    axes = S.axes(node, axes, len(xs))
    for a in axes:
        if S.known(xs[a]) and xs[a] != 1:
            S.fail(node, f"cannot squeeze axis {a} of size {xs[a]} in shape {list(xs)}")
    return tuple(d for i, d in enumerate(xs) if i not in axes)


def infer_squeeze(node, inputs, consts):
    x = S.need(node, inputs, 0)
    axes, is_known = _axes_from(node, consts, 1)
    return [(x.dtype, squeeze_shape(node, S.shape(x), axes) if is_known else None)]


def _squeeze(node, x, axes):
    return x.reshape(squeeze_shape(node, x.shape, axes))


@op("Squeeze", 1, infer_squeeze)
def squeeze_1(node, x):
    return _squeeze(node, x, S.ints_attr(node, "axes"))


@op("Squeeze", 13, infer_squeeze)
def squeeze_13(node, x, axes=None):
    return _squeeze(node, x, None if axes is None else [int(a) for a in axes.reshape(-1).tolist()])


def unsqueeze_shape(node, xs, axes):
    if axes is None:
        S.fail(node, "axes are required")
    if xs is None:
        return None
    r = len(xs) + len(axes)
    axes = S.axes(node, axes, r)
    it = iter(xs)
    return tuple(1 if i in axes else next(it) for i in range(r))


def infer_unsqueeze(node, inputs, consts):
    x = S.need(node, inputs, 0)
    if node.opset >= 13:
        S.need(node, inputs, 1)
    axes, is_known = _axes_from(node, consts, 1)
    return [(x.dtype, unsqueeze_shape(node, S.shape(x), axes) if is_known else None)]


@op("Unsqueeze", 1, infer_unsqueeze)
def unsqueeze_1(node, x):
    return x.reshape(unsqueeze_shape(node, x.shape, S.ints_attr(node, "axes")))


@op("Unsqueeze", 13, infer_unsqueeze)
def unsqueeze_13(node, x, axes):
    return x.reshape(unsqueeze_shape(node, x.shape, [int(a) for a in axes.reshape(-1).tolist()]))


# --- Shape, Size ----------------------------------------------------------------------------------

def shape_range(node, r):
    """[start, end) of Shape's output (opset 15 start/end, clamped like Slice)."""
    start, end = node.attr("start", 0), node.attr("end", r)
    start = min(max(start + r if start < 0 else start, 0), r)
    end = min(max(end + r if end < 0 else end, 0), r)
    return start, max(start, end)


def infer_shape(node, inputs, consts):
    r = S.rank(S.need(node, inputs, 0))
    if r is None:
        return [(S.INT64, (None,))]
    start, end = shape_range(node, r) if node.opset >= 15 else (0, r)
    return [(S.INT64, (end - start,))]


@op("Shape", 1, infer_shape)
def shape(node, x):
    import numpy as np
    start, end = shape_range(node, x.ndim) if node.opset >= 15 else (0, x.ndim)
    return np.array(x.shape[start:end], dtype=np.int64)


@op("Size", 1, lambda node, inputs, consts: [(S.INT64, ())])
def size(node, x):
    import numpy as np
    return np.array(x.size, dtype=np.int64)


# --- Expand, Tile -----------------------------------------------------------------------------------

def infer_expand(node, inputs, consts):
    x, shp = S.need(node, inputs, 0), S.need(node, inputs, 1)
    target = S.const_ints(consts, 1)
    if target is None:
        ss = S.shape(shp)
        if ss is None or len(ss) != 1 or not S.known(ss[0]):
            return [(x.dtype, None)]
        target = [None] * ss[0]
    return [(x.dtype, S.broadcast(node, S.shape(x), tuple(target)))]


@op("Expand", 8, infer_expand)
def expand(node, x, shape):
    import numpy as np
    out = S.broadcast(node, x.shape, tuple(int(v) for v in shape.tolist()))
    return np.broadcast_to(x, out).copy()


def infer_tile(node, inputs, consts):
    x, reps = S.need(node, inputs, 0), S.need(node, inputs, 1)
    xs, r = S.shape(x), S.const_ints(consts, 1)
    if xs is None:
        return [(x.dtype, None)]
    rs = S.shape(reps)
    if rs is not None and (len(rs) != 1 or S.known(rs[0]) and rs[0] != len(xs)):
        S.fail(node, f"repeats of shape {list(rs)} must be 1-D with one entry per axis of {list(xs)}")
    if r is None:
        return [(x.dtype, tuple(0 if d == 0 else None for d in xs))]
    if len(r) != len(xs) or min(r, default=0) < 0:
        S.fail(node, f"repeats {r} must be {len(xs)} non-negative ints for input shape {list(xs)}")
    return [(x.dtype, tuple(d * k if S.known(d) else (d if k == 1 else None) for d, k in zip(xs, r)))]


@op("Tile", 6, infer_tile)
def tile(node, x, repeats):
    import numpy as np
    return np.tile(x, [int(v) for v in repeats.tolist()])


# --- DepthToSpace, SpaceToDepth ------------------------------------------------------------------

def _space_depth_shape(node, xs, to_space):
    b = node.attr("blocksize")
    if b is None or b < 1:
        S.fail(node, "attribute blocksize (>= 1) is required")
    if xs is None:
        return None
    if len(xs) != 4:
        S.fail(node, f"input must be 4-D, got shape {list(xs)}")
    n, c, h, w = xs
    if to_space:
        if S.known(c) and c % (b * b):
            S.fail(node, f"channels {c} are not a multiple of blocksize^2 = {b * b}")
        return (n, c // (b * b) if S.known(c) else None, h * b if S.known(h) else None, w * b if S.known(w) else None)
    for d in (h, w):
        if S.known(d) and d % b:
            S.fail(node, f"spatial dims {h}x{w} are not multiples of blocksize {b}")
    return (n, c * b * b if S.known(c) else None, h // b if S.known(h) else None, w // b if S.known(w) else None)


@op("DepthToSpace", 1, lambda node, inputs, consts: [
    (S.need(node, inputs, 0).dtype, _space_depth_shape(node, S.shape(inputs[0]), True))])
def depth_to_space(node, x):
    n, c, h, w = x.shape
    b = node.attr("blocksize")
    if node.attr("mode", "DCR") == "DCR":
        y = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        y = x.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    return y.reshape(n, c // (b * b), h * b, w * b)


@op("SpaceToDepth", 1, lambda node, inputs, consts: [
    (S.need(node, inputs, 0).dtype, _space_depth_shape(node, S.shape(inputs[0]), False))])
def space_to_depth(node, x):
    n, c, h, w = x.shape
    b = node.attr("blocksize")
    y = x.reshape(n, c, h // b, b, w // b, b)
    y = y.transpose(0, 3, 5, 1, 2, 4) if node.attr("mode", "DCR") == "DCR" else y.transpose(0, 1, 3, 5, 2, 4)
    return y.reshape(n, c * b * b, h // b, w // b)


def _crop_pad_axes(node, r, n):
    axes = S.ints_attr(node, "axes")
    if axes is None:
        if r is not None and n is not None and n != r:
            S.fail(node, f"shape has {n} values for an input of rank {r} (no axes)")
        return list(range(r if r is not None else n)) if (r is not None or n is not None) else None
    if n is not None and n != len(axes):
        S.fail(node, f"shape has {n} values for axes {axes}")
    return S.axes(node, axes, r)


def infer_center_crop_pad(node, inputs, consts):
    x, shp = S.need(node, inputs, 0), S.need(node, inputs, 1)
    xs, ss = S.shape(x), S.shape(shp)
    if ss is not None and len(ss) != 1:
        S.fail(node, f"shape must be 1-D, got shape {list(ss)}")
    if S.dtype(shp) is not None and S.dtype(shp).name not in ("int32", "int64"):
        S.fail(node, f"shape must be int32 or int64, got {S.dtype(shp).name}")
    target = S.const_ints(consts, 1)
    n = len(target) if target is not None else (ss[0] if ss is not None and S.known(ss[0]) else None)
    axes = _crop_pad_axes(node, S.rank(x), n)
    if xs is None:
        return [(S.dtype(x), None)]
    out = list(xs)
    for k, a in enumerate(axes or []):
        if target is not None and target[k] < 0:
            S.fail(node, f"shape {target} has a negative dim")
        out[a] = target[k] if target is not None else None
    return [(S.dtype(x), tuple(out))]


@op("CenterCropPad", 18, infer_center_crop_pad)
def center_crop_pad(node, x, shape):
    """Each listed axis is cropped or zero-padded to its target size, centred (an odd
    difference leaves the extra element at the end)."""
    import numpy as np
    target = [int(v) for v in shape.reshape(-1)]
    axes = _crop_pad_axes(node, x.ndim, len(target))
    if any(t < 0 for t in target):
        S.fail(node, f"shape {target} has a negative dim")
    out_shape, src, dst = list(x.shape), [slice(None)] * x.ndim, [slice(None)] * x.ndim
    for a, t in zip(axes, target):
        dim = x.shape[a]
        out_shape[a] = t
        if t < dim:
            src[a] = slice((dim - t) // 2, (dim - t) // 2 + t)
        elif t > dim:
            dst[a] = slice((t - dim) // 2, (t - dim) // 2 + dim)
    y = np.zeros(out_shape, x.dtype)
    y[tuple(dst)] = x[tuple(src)]
    return y
