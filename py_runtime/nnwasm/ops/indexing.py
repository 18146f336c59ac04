"""Ops that select or assemble parts of tensors: Concat, Split, Slice, Gather, GatherElements,
GatherND, Pad, Compress, ReverseSequence (CenterCropPad is in shape_ops.py)."""
from . import shapes as S
from .registry import op


# --- Concat -----------------------------------------------------------------------------------------

def infer_concat(node, inputs, consts):
    if not inputs or any(vi is None for vi in inputs):
        S.fail(node, "needs at least one input and no omitted inputs")
    dt = S.same_dtype(node, inputs)
    a = node.attr("axis")
    if a is None:
        S.fail(node, "attribute axis is required")
    shapes = [S.shape(vi) for vi in inputs]
    known = [s for s in shapes if s is not None]
    if not known:
        return [(dt, None)]
    r = len(known[0])
    if r == 0 or any(len(s) != r for s in known):
        S.fail(node, f"inputs must share one rank >= 1, got shapes {[list(s) for s in known]}")
    a = S.axis(node, a, r)
    out = list(known[0])
    for s in known[1:]:
        for i in range(r):
            if i != a:
                out[i] = S.merge_dims(node, out[i], s[i], f"dim {i} of {[list(s) for s in known]}")
    along = [s[a] if s is not None else None for s in shapes]
    out[a] = sum(along) if all(S.known(d) for d in along) else None
    return [(dt, tuple(out))]


@op("Concat", 4, infer_concat)
def concat(node, *xs):
    import numpy as np
    return np.concatenate(xs, axis=node.attr("axis"))


# --- Split ------------------------------------------------------------------------------------------

def split_sizes(node, dim, n_out, split):
    """Sizes of Split's outputs along the axis (entries None when unknown)."""
    if split is not None:
        if len(split) != n_out or min(split, default=0) < 0:
            S.fail(node, f"split {split} must be {n_out} non-negative sizes")
        if S.known(dim) and sum(split) != dim:
            S.fail(node, f"split {split} does not add up to the axis size {dim}")
        return list(split)
    num = node.attr("num_outputs") if node.opset >= 18 else None
    if num is not None and num != n_out:
        S.fail(node, f"num_outputs {num} differs from the node's {n_out} outputs")
    if not S.known(dim):
        return [None] * n_out
    if num is not None:   # opset 18: ceil-sized chunks, the last one smaller
        chunk = -(-dim // n_out)
        last = dim - chunk * (n_out - 1)
        if last < 0 or (last == 0 and dim):
            S.fail(node, f"cannot split axis size {dim} into {n_out} outputs")
        return [chunk] * (n_out - 1) + [last]
    if dim % n_out:
        S.fail(node, f"axis size {dim} does not split evenly into {n_out} outputs")
    return [dim // n_out] * n_out


def _split_arg(node, consts):
    if node.opset < 13:
        return S.ints_attr(node, "split"), True
    absent = S.get(node.inputs, 1) in (None, "")
    return S.const_ints(consts, 1), absent or S.get(consts, 1) is not None


def infer_split(node, inputs, consts):
    x = S.need(node, inputs, 0)
    n_out = len(node.outputs)
    xs = S.shape(x)
    if xs is None:
        return [(x.dtype, None)] * n_out
    a = S.axis(node, node.attr("axis", 0), len(xs))
    split, is_known = _split_arg(node, consts)
    sizes = split_sizes(node, xs[a], n_out, split) if is_known else [None] * n_out
    return [(x.dtype, (*xs[:a], s, *xs[a + 1:])) for s in sizes]


def _split(node, x, split):
    import numpy as np
    a = node.attr("axis", 0) % x.ndim
    sizes = split_sizes(node, x.shape[a], len(node.outputs), split)
    return tuple(np.split(x, np.cumsum(sizes)[:-1], axis=a))


@op("Split", 2, infer_split)
def split_2(node, x):
    return _split(node, x, S.ints_attr(node, "split"))


@op("Split", 13, infer_split)
def split_13(node, x, split=None):
    return _split(node, x, None if split is None else [int(v) for v in split.tolist()])


# --- Slice ------------------------------------------------------------------------------------------

def slice_axis(n, start, end, step):
    """ONNX's clamping of one axis of Slice: (start, stop or None, step, length) for size n."""
    if step == 0:
        raise ValueError("step 0")
    if start < 0:
        start += n
    if end < 0:
        end += n
    if step > 0:
        start, end = min(max(start, 0), n), min(max(end, 0), n)
        length = max(0, -(-(end - start) // step))
    else:
        start, end = min(max(start, 0), n - 1), min(max(end, -1), n - 1)
        length = max(0, -(-(start - end) // -step))
    return start, (None if end < 0 else end), step, length


def slice_spec(node, r, starts, ends, axes, steps):
    if len(starts) != len(ends):
        S.fail(node, f"starts {starts} and ends {ends} differ in length")
    axes = list(range(len(starts))) if axes is None else axes
    steps = [1] * len(starts) if steps is None else steps
    if len(axes) != len(starts) or len(steps) != len(starts):
        S.fail(node, f"axes {axes} and steps {steps} must match starts {starts}")
    if 0 in steps:
        S.fail(node, "slice steps must be non-zero")
    return list(zip(S.axes(node, axes, r), starts, ends, steps))


def slice_args(node, consts):
    """(starts, ends, axes, steps, all_known) from attributes (opset < 10) or constant inputs."""
    if node.opset < 10:
        return S.ints_attr(node, "starts"), S.ints_attr(node, "ends"), S.ints_attr(node, "axes"), None, True
    vals = [S.const_ints(consts, i) for i in range(1, 5)]
    known = all(vals[i] is not None or S.get(node.inputs, i + 1) in (None, "") for i in range(4))
    return (*vals, known)


def infer_slice(node, inputs, consts):
    x = S.need(node, inputs, 0)
    xs = S.shape(x)
    if xs is None:
        return [(x.dtype, None)]
    starts, ends, axes, steps, known = slice_args(node, consts)
    if not known:
        if axes is None and S.get(node.inputs, 3) not in (None, ""):
            return [(x.dtype, (None,) * len(xs))]
        n = len(starts) if starts is not None else len(ends) if ends is not None else None
        sliced = S.axes(node, axes, len(xs)) if axes is not None else list(range(n)) if n is not None else None
        if sliced is None:
            return [(x.dtype, (None,) * len(xs))]
        return [(x.dtype, tuple(None if i in sliced else d for i, d in enumerate(xs)))]
    out = list(xs)
    for a, start, end, step in slice_spec(node, len(xs), starts, ends, axes, steps):
        n = xs[a]
        if S.known(n):
            out[a] = slice_axis(n, start, end, step)[3]
        else:   # x[0:INT_MAX] keeps a symbolic dim
            out[a] = n if (start, step) == (0, 1) and end >= 2 ** 31 - 1 else None
    return [(x.dtype, tuple(out))]


def _slice(node, x, starts, ends, axes, steps):
    sl = [slice(None)] * x.ndim
    for a, start, end, step in slice_spec(node, x.ndim, starts, ends, axes, steps):
        start, stop, step, _ = slice_axis(x.shape[a], start, end, step)
        sl[a] = slice(start, stop, step)
    return x[tuple(sl)]


def _ints(t):
    return None if t is None else [int(v) for v in t.tolist()]


@op("Slice", 1, infer_slice)
def slice_1(node, x):
    return _slice(node, x, S.ints_attr(node, "starts"), S.ints_attr(node, "ends"), S.ints_attr(node, "axes"), None)


@op("Slice", 10, infer_slice)
def slice_10(node, x, starts, ends, axes=None, steps=None):
    return _slice(node, x, _ints(starts), _ints(ends), _ints(axes), _ints(steps))


# --- Gather, GatherElements, GatherND ------------------------------------------------------------------

def _check_indices(node, idx, n, what="indices"):
    if idx is not None and S.known(n) and any(not -n <= i < n for i in idx):
        S.fail(node, f"{what} {idx if len(idx) < 10 else '...'} out of range for axis size {n}")


def infer_gather(node, inputs, consts):
    data, idx = S.need(node, inputs, 0), S.need_index(node, inputs, 1)
    ds, is_ = S.shape(data), S.shape(idx)
    if ds is None or is_ is None:
        return [(data.dtype, None)]
    a = S.axis(node, node.attr("axis", 0), len(ds))
    _check_indices(node, S.const_ints(consts, 1), ds[a])
    return [(data.dtype, (*ds[:a], *is_, *ds[a + 1:]))]


@op("Gather", 1, infer_gather)
def gather(node, data, idx):
    import numpy as np
    a = node.attr("axis", 0) % data.ndim
    if idx.size and (idx.min() < -data.shape[a] or idx.max() >= data.shape[a]):
        S.fail(node, f"indices out of range [{-data.shape[a]}, {data.shape[a] - 1}]")
    return np.take(data, idx.astype(np.int64), axis=a)


def infer_gather_elements(node, inputs, consts):
    data, idx = S.need(node, inputs, 0), S.need_index(node, inputs, 1)
    ds, is_ = S.shape(data), S.shape(idx)
    if ds is not None and is_ is not None and len(ds) != len(is_):
        S.fail(node, f"data shape {list(ds)} and indices shape {list(is_)} differ in rank")
    if ds is not None:
        S.axis(node, node.attr("axis", 0), len(ds))
    return [(data.dtype, is_)]


@op("GatherElements", 11, infer_gather_elements)
def gather_elements(node, data, idx):
    import numpy as np
    a = node.attr("axis", 0) % data.ndim
    n = data.shape[a]
    if idx.size and (idx.min() < -n or idx.max() >= n):
        S.fail(node, f"indices out of range [{-n}, {n - 1}]")
    # indices may be shorter than data along the other axes: those read data's leading part
    data = data[tuple(slice(None) if i == a else slice(0, d) for i, d in enumerate(idx.shape))]
    return np.take_along_axis(data, np.where(idx < 0, idx + n, idx).astype(np.int64), axis=a)


def infer_gather_nd(node, inputs, consts):
    data, idx = S.need(node, inputs, 0), S.need_index(node, inputs, 1)
    ds, is_ = S.shape(data), S.shape(idx)
    b = node.attr("batch_dims", 0)
    if ds is None or is_ is None or not S.known(is_[-1]):
        return [(data.dtype, None)]
    if b + is_[-1] > len(ds):
        S.fail(node, f"indices shape {list(is_)} index too many dims of data shape {list(ds)}")
    return [(data.dtype, (*is_[:-1], *ds[b + is_[-1]:]))]


@op("GatherND", 11, infer_gather_nd)
def gather_nd(node, data, idx):
    import numpy as np
    b = node.attr("batch_dims", 0)
    k = idx.shape[-1]
    batch = data.shape[:b]
    nb = int(np.prod(batch, dtype=np.int64))
    d = data.reshape(nb, *data.shape[b:])
    i = idx.reshape(nb, -1, k).astype(np.int64)
    i = np.where(i < 0, i + np.array(data.shape[b:b + k]), i)
    rows = np.arange(nb).reshape(nb, 1)
    out = d[(rows, *(i[..., j] for j in range(k)))]
    return out.reshape(*idx.shape[:-1], *data.shape[b + k:])


# --- Pad --------------------------------------------------------------------------------------------

PAD_MODES = ("constant", "reflect", "edge", "wrap")


def _pad_args(node, consts, r):
    """(per-axis (begin, end) pads or None when unknown) from attributes or constant inputs."""
    if node.opset < 11:
        pads, axes = S.ints_attr(node, "pads"), None
        if pads is None:
            S.fail(node, "attribute pads is required")
    else:
        pads = S.const_ints(consts, 1)
        axes = S.const_ints(consts, 3) if node.opset >= 18 else None
        if pads is None or (axes is None and S.get(node.inputs, 3) not in (None, "") and node.opset >= 18):
            return None
    return _per_axis(node, pads, axes, r)


def _per_axis(node, pads, axes, r):
    axes = list(range(r)) if axes is None else S.axes(node, axes, r)
    if len(pads) != 2 * len(axes):
        S.fail(node, f"pads {pads} must have 2 entries per padded axis ({len(axes)})")
    out = [(0, 0)] * r
    for k, a in enumerate(axes):
        out[a] = (pads[k], pads[len(axes) + k])
    return out


def infer_pad(node, inputs, consts):
    x = S.need(node, inputs, 0)
    mode = node.attr("mode", "constant")
    if mode not in PAD_MODES:
        S.unsupported(node, f"mode {mode!r}")
    xs = S.shape(x)
    if xs is None:
        return [(x.dtype, None)]
    pads = _pad_args(node, consts, len(xs))
    if pads is None:
        return [(x.dtype, (None,) * len(xs))]
    out = []
    for d, (b, e) in zip(xs, pads):
        o = d + b + e if S.known(d) else (d if (b, e) == (0, 0) else None)
        if S.known(o) and o < 0:
            S.fail(node, f"pads {pads} crop more than the input shape {list(xs)}")
        out.append(o)
    return [(x.dtype, tuple(out))]


def _pad(node, x, pads, value):
    import numpy as np
    mode = node.attr("mode", "constant")
    if mode not in PAD_MODES:
        S.unsupported(node, f"mode {mode!r}")
    grow = [(max(b, 0), max(e, 0)) for b, e in pads]
    if mode == "constant":
        y = np.pad(x, grow, mode="constant", constant_values=value)
    else:
        y = np.pad(x, grow, mode=mode)
    crop = tuple(slice(-min(b, 0), y.shape[i] + min(e, 0)) for i, (b, e) in enumerate(pads))
    return y[crop]


@op("Pad", 2, infer_pad)
def pad_2(node, x):
    return _pad(node, x, _per_axis(node, S.ints_attr(node, "pads"), None, x.ndim), node.attr("value", 0.0))


@op("Pad", 11, infer_pad)
def pad_11(node, x, pads, value=None, axes=None):
    if axes is not None and node.opset < 18:
        S.fail(node, "the axes input needs opset 18")
    per_axis = _per_axis(node, _ints(pads), _ints(axes), x.ndim)
    return _pad(node, x, per_axis, 0 if value is None or value.size == 0 else value.reshape(-1)[0])


# --- Compress ---------------------------------------------------------------------------------------

def infer_compress(node, inputs, consts):
    x, cond = S.need(node, inputs, 0), S.need(node, inputs, 1)
    if cond.dtype is not None and cond.dtype != S.BOOL:
        S.fail(node, f"condition must be bool, got {cond.dtype.name}")
    if S.rank(cond) not in (None, 1):
        S.fail(node, f"condition must be 1-D, got shape {list(S.shape(cond))}")
    xs, a = S.shape(x), node.attr("axis")
    c = S.get(consts, 1)
    n = None if c is None else sum(bool(v) for v in c.tolist())
    if a is None:
        return [(x.dtype, (n,))]
    if xs is None:
        return [(x.dtype, None)]
    a = S.axis(node, a, len(xs))
    if c is not None and S.known(xs[a]) and c.numel > xs[a]:
        S.fail(node, f"condition has {c.numel} values for axis size {xs[a]}")
    return [(x.dtype, tuple(n if i == a else d for i, d in enumerate(xs)))]


def compress(node, x, cond):
    """The slices along axis (of the flattened input without axis) where condition is true; a
    condition shorter than the axis leaves the rest out."""
    import numpy as np
    if cond.ndim != 1:
        S.fail(node, f"condition must be 1-D, got shape {list(cond.shape)}")
    a = node.attr("axis")
    if a is None:
        x, a = x.reshape(-1), 0
    a = S.axis(node, a, x.ndim)
    if cond.size > x.shape[a]:
        S.fail(node, f"condition has {cond.size} values for axis size {x.shape[a]}")
    return np.compress(cond.astype(bool), x, axis=a)


for _since in (9, 11, 28):     # 11 allows a negative axis
    op("Compress", _since, infer_compress)(compress)


# --- ReverseSequence --------------------------------------------------------------------------------

def _rs_axes(node, r):
    b, t = node.attr("batch_axis", 1), node.attr("time_axis", 0)
    if {b, t} != {0, 1}:
        S.fail(node, f"batch_axis {b} and time_axis {t} must be 0 and 1 in some order")
    if r is not None and r < 2:
        S.fail(node, f"input needs rank >= 2, got {r}")
    return b, t


def infer_reverse_sequence(node, inputs, consts):
    x, lens = S.need(node, inputs, 0), S.need(node, inputs, 1)
    xs = S.shape(x)
    b, _ = _rs_axes(node, None if xs is None else len(xs))
    ls = S.shape(lens)
    if ls is not None and len(ls) != 1:
        S.fail(node, f"sequence_lens must be 1-D, got shape {list(ls)}")
    if ls is not None and xs is not None:
        S.merge_dims(node, ls[0], xs[b], "sequence_lens and the batch size")
    return [(x.dtype, xs)]


def reverse_sequence(node, x, lens):
    """Per batch entry, the first sequence_lens[i] steps along the time axis reversed."""
    b, t = _rs_axes(node, x.ndim)
    if lens.shape != (x.shape[b],) or lens.size and (lens.min() < 0 or lens.max() > x.shape[t]):
        S.fail(node, f"sequence_lens {lens.tolist()} must hold one length in [0, {x.shape[t]}] per batch entry")
    out = x.copy()
    for i, n in enumerate(lens.tolist()):
        at = [slice(None)] * x.ndim
        at[b], at[t] = i, slice(0, n)
        src = list(at)
        src[t] = slice(n - 1, None, -1) if n else slice(0, 0)
        out[tuple(at)] = x[tuple(src)]
    return out


for _since in (10, 28):
    op("ReverseSequence", _since, infer_reverse_sequence)(reverse_sequence)
