"""MaxPool, AveragePool, LpPool and the global pools. Kernels loop over window taps, vectorised
over every output position."""
from . import shapes as S
from . import window as W
from .registry import op


def _window(node, xs):
    kernel = S.ints_attr(node, "kernel_shape")
    if kernel is None:
        S.fail(node, "attribute kernel_shape is required")
    if xs is not None and len(xs) != len(kernel) + 2:
        S.fail(node, f"kernel_shape {kernel} does not fit input shape {list(xs)}")
    strides, dilations, pads = W.params(node, len(kernel), kernel)
    return kernel, strides, dilations, pads


def infer_pool(node, inputs, consts):
    x = S.need(node, inputs, 0)
    kernel, strides, dilations, pads = _window(node, S.shape(x))
    if node.attr("storage_order", 0) not in (0, 1):
        S.fail(node, "storage_order must be 0 or 1")
    if S.shape(x) is None:
        shape = None
    else:
        out = W.geometry(node, x.shape[2:], kernel, strides, dilations, pads, node.attr("ceil_mode", 0))[0]
        shape = (*x.shape[:2], *out)
    return [(x.dtype, shape), (S.INT64, shape)][:max(1, len(node.outputs))]


def infer_global_pool(node, inputs, consts):
    x = S.need(node, inputs, 0)
    xs = S.shape(x)
    if xs is not None and len(xs) < 3:
        S.fail(node, f"input needs rank >= 3, got shape {list(xs)}")
    return [(x.dtype, None if xs is None else (*xs[:2], *[1] * (len(xs) - 2)))]


def _padded(node, x, fill):
    """x padded with `fill` for every window: explicit/auto pads, plus the end pads ceil_mode needs.
    Also returns the geometry and where the input starts inside the padded array."""
    import numpy as np
    kernel, strides, dilations, pads = _window(node, x.shape)
    out, pb, pe = W.geometry(node, x.shape[2:], kernel, strides, dilations, pads, node.attr("ceil_mode", 0))
    need = [(o - 1) * s + (k - 1) * d + 1 for o, s, k, d in zip(out, strides, kernel, dilations)]
    extra = [max(0, r - (n + b + e)) for r, n, b, e in zip(need, x.shape[2:], pb, pe)]
    xp = np.pad(x, [(0, 0), (0, 0)] + [(b, e + t) for b, e, t in zip(pb, pe, extra)], constant_values=fill)
    return xp, kernel, strides, dilations, out, pb, pe


def _max_pool(node, x):
    import numpy as np
    fill = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    xp, kernel, strides, dilations, out, pb, _ = _padded(node, x, fill)
    want_indices = len(node.outputs) > 1 and node.outputs[1]
    y = idx = None
    for tap in W.taps(kernel):
        v = xp[(..., *W.tap_slices(tap, out, strides, dilations))]
        if y is None:
            y = v.copy()
            if want_indices:
                idx = np.broadcast_to(_tap_index(np, x.shape, tap, out, strides, dilations, pb,
                                                 node.attr("storage_order", 0)), y.shape).copy()
        elif want_indices:
            better = v > y      # strict: the first maximum in row-major tap order wins
            y = np.where(better, v, y)
            idx = np.where(better, _tap_index(np, x.shape, tap, out, strides, dilations, pb,
                                              node.attr("storage_order", 0)), idx)
        else:
            y = np.maximum(y, v)
    return (y, idx) if want_indices else (y,)


def _tap_index(np, shape, tap, out, strides, dilations, pb, storage_order):
    """Flat index into x (N, C, *spatial) of the element tap `tap` reads, per output position."""
    spatial = shape[2:]
    nd = len(spatial)
    order = range(nd) if storage_order == 0 else range(nd - 1, -1, -1)
    flat, mult = 0, 1
    for i in reversed(list(order)):
        pos = np.arange(out[i]) * strides[i] + tap[i] * dilations[i] - pb[i]
        flat = flat + (pos * mult).reshape([-1 if j == i else 1 for j in range(nd)])
        mult *= spatial[i]
    per_image = mult
    nc = np.arange(shape[0] * shape[1]).reshape(shape[0], shape[1], *[1] * nd) * per_image
    return nc + flat


@op("MaxPool", 1, infer_pool)
def max_pool(node, x):
    return _max_pool(node, x)


def _avg_pool(node, x):
    import numpy as np
    xp, kernel, strides, dilations, out, pb, pe = _padded(node, x, 0)
    # Window sizes come from pooling a mask: 1 on the input (and on the pads when
    # count_include_pad), 0 on the extra end padding ceil_mode adds, which never counts.
    inside = [(b, b + n) for b, n in zip(pb, x.shape[2:])]
    if node.attr("count_include_pad", 0):
        inside = [(0, b + n + e) for b, n, e in zip(pb, x.shape[2:], pe)]
    mask = np.zeros(xp.shape[2:], dtype=x.dtype)
    mask[tuple(slice(a, b) for a, b in inside)] = 1
    total = np.zeros((*x.shape[:2], *out), dtype=x.dtype)
    count = np.zeros(out, dtype=x.dtype)
    for tap in W.taps(kernel):
        sl = W.tap_slices(tap, out, strides, dilations)
        total += xp[(..., *sl)]
        count += mask[sl]
    return total / count


@op("AveragePool", 1, infer_pool)
def average_pool(node, x):
    return _avg_pool(node, x)


@op("LpPool", 2, infer_pool)
def lp_pool(node, x):
    import numpy as np
    p = node.attr("p", 2)
    xp, kernel, strides, dilations, out, _, _ = _padded(node, x, 0)
    total = np.zeros((*x.shape[:2], *out), dtype=x.dtype)
    for tap in W.taps(kernel):
        total += np.abs(xp[(..., *W.tap_slices(tap, out, strides, dilations))]) ** p
    return (total ** (1.0 / p)).astype(x.dtype)


@op("GlobalAveragePool", 1, infer_global_pool)
def global_average_pool(node, x):
    return x.mean(axis=tuple(range(2, x.ndim)), keepdims=True)


@op("GlobalMaxPool", 1, infer_global_pool)
def global_max_pool(node, x):
    return x.max(axis=tuple(range(2, x.ndim)), keepdims=True)


def _unpool_geometry(node, xs):
    kernel = S.ints_attr(node, "kernel_shape")
    if kernel is None:
        S.fail(node, "attribute kernel_shape is required")
    nd = len(kernel)
    strides, _, pads = W.params(node, nd, kernel)
    if xs is not None and len(xs) != nd + 2:
        S.fail(node, f"X of shape {list(xs)} does not fit kernel_shape {kernel}")
    if xs is None:
        return None
    out = [(d - 1) * s - (pads[i] + pads[nd + i]) + k if S.known(d) else None
           for i, (d, s, k) in enumerate(zip(xs[2:], strides, kernel))]
    if any(o is not None and o < 1 for o in out):
        S.fail(node, f"unpooled spatial dims {out} are not positive")
    return (xs[0], xs[1], *out)


def infer_max_unpool(node, inputs, consts):
    x, i = S.need(node, inputs, 0), S.need(node, inputs, 1)
    if S.dtype(i) is not None and S.dtype(i).name != "int64":
        S.fail(node, f"I must be int64, got {S.dtype(i).name}")
    xs = S.shape(x)
    if S.shape(i) is not None and xs is not None:
        for a, b in zip(S.shape(i), xs):
            S.merge_dims(node, a, b, "shapes of X and I")
    inferred = _unpool_geometry(node, xs)
    if S.get(inputs, 2) is not None:
        shape = S.const_ints(consts, 2)
        if shape is not None:
            if xs is not None and len(shape) != len(xs):
                S.fail(node, f"output_shape {shape} must have X's rank {len(xs)}")
            if inferred is not None and any(S.known(a) and b < a for a, b in zip(inferred, shape)):
                S.fail(node, f"output_shape {shape} is smaller than the unpooled shape {list(inferred)}")
            return [(S.dtype(x), tuple(shape))]
        return [(S.dtype(x), None if xs is None else (None,) * len(xs))]
    return [(S.dtype(x), inferred)]


@op("MaxUnpool", 9, infer_max_unpool)
@op("MaxUnpool", 11, infer_max_unpool)
@op("MaxUnpool", 22, infer_max_unpool)
def max_unpool(node, x, indices, output_shape=None):
    """Scatters X to the flat positions I of the unpooled tensor (the MaxPool indices), zeros
    elsewhere; a larger output_shape pads that tensor at the end of each axis."""
    import numpy as np
    inferred = _unpool_geometry(node, x.shape)
    size = int(np.prod(inferred))
    if indices.shape != x.shape or np.any(indices < 0) or np.any(indices >= size):
        S.fail(node, f"I of shape {list(indices.shape)} must match X and index the {size} unpooled values")
    y = np.zeros(size, x.dtype)
    y[indices.reshape(-1)] = x.reshape(-1)
    y = y.reshape(inferred)
    if output_shape is None:
        return y
    shape = [int(v) for v in output_shape.reshape(-1)]
    if len(shape) != len(inferred) or any(b < a for a, b in zip(inferred, shape)):
        S.fail(node, f"output_shape {shape} does not hold the unpooled shape {list(inferred)}")
    out = np.zeros(shape, x.dtype)
    out[tuple(slice(0, d) for d in inferred)] = y
    return out
