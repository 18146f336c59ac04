"""MaxPool, AveragePool, LpPool, the global pools and MaxRoiPool. Kernels loop over window taps, vectorised
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


def _lp_p(node):
    p = node.attr("p", 2.0 if node.opset < 2 else 2)
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not p > 0:
        S.fail(node, f"p {p!r} must be a positive number")
    return p


def infer_global_lp_pool(node, inputs, consts):
    _lp_p(node)
    return infer_global_pool(node, inputs, consts)


@op("GlobalLpPool", 1, infer_global_lp_pool)
@op("GlobalLpPool", 2, infer_global_lp_pool)
@op("GlobalLpPool", 22, infer_global_lp_pool)
def global_lp_pool(node, x):
    import numpy as np
    p = _lp_p(node)
    total = (np.abs(x.astype(np.float64)) ** p).sum(axis=tuple(range(2, x.ndim)), keepdims=True)
    return (total ** (1.0 / p)).astype(x.dtype)


# --- MaxRoiPool (Caffe's ROI pooling, as onnxruntime computes it) ------------------------------

def _pooled_shape(node):
    ps = S.ints_attr(node, "pooled_shape")
    if ps is None or len(ps) != 2 or min(ps) < 1:
        S.fail(node, f"pooled_shape {ps} must be two positive ints")
    return ps


def infer_max_roi_pool(node, inputs, consts):
    x, rois = S.need(node, inputs, 0), S.need(node, inputs, 1)
    ph, pw = _pooled_shape(node)
    scale = node.attr("spatial_scale", 1.0)
    if not scale > 0:
        S.fail(node, f"spatial_scale {scale} must be positive")
    xs, rs = S.shape(x), S.shape(rois)
    if xs is not None and len(xs) != 4:
        S.fail(node, f"input needs shape [N, C, H, W], got {list(xs)}")
    if rs is not None and (len(rs) != 2 or (S.known(rs[1]) and rs[1] != 5)):
        S.fail(node, f"rois needs shape [num_rois, 5], got {list(rs)}")
    if rois.dtype is not None and x.dtype is not None and rois.dtype != x.dtype:
        S.fail(node, f"rois type {rois.dtype.ort_name} differs from the input's {x.dtype.ort_name}")
    n = None if rs is None else rs[0]
    c = None if xs is None else xs[1]
    return [(x.dtype, (n, c, ph, pw))]


def _round_half_away(v):
    import math
    return int(math.floor(v + 0.5)) if v >= 0 else -int(math.floor(-v + 0.5))


@op("MaxRoiPool", 1, infer_max_roi_pool)
@op("MaxRoiPool", 22, infer_max_roi_pool)
def max_roi_pool(node, x, rois):
    import math
    import numpy as np
    from ..errors import InvalidArgument
    ph_n, pw_n = _pooled_shape(node)
    scale = float(node.attr("spatial_scale", 1.0))
    if x.ndim != 4 or rois.ndim != 2 or rois.shape[1] != 5:
        raise InvalidArgument(f"{node}: needs X [N, C, H, W] and rois [num_rois, 5], got shapes "
                              f"{list(x.shape)} and {list(rois.shape)}")
    n, c, h, w = x.shape
    out = np.zeros((rois.shape[0], c, ph_n, pw_n), dtype=x.dtype)
    for r, roi in enumerate(rois.astype(np.float64)):
        b = int(roi[0])
        if not 0 <= b < n:
            raise InvalidArgument(f"{node}: roi {r} has batch index {roi[0]}, outside [0, {n})")
        x1, y1, x2, y2 = (_round_half_away(v * scale) for v in roi[1:])
        bin_h = max(y2 - y1 + 1, 1) / ph_n
        bin_w = max(x2 - x1 + 1, 1) / pw_n
        for i in range(ph_n):
            hs = min(max(int(math.floor(i * bin_h)) + y1, 0), h)
            he = min(max(int(math.ceil((i + 1) * bin_h)) + y1, 0), h)
            for j in range(pw_n):
                ws = min(max(int(math.floor(j * bin_w)) + x1, 0), w)
                we = min(max(int(math.ceil((j + 1) * bin_w)) + x1, 0), w)
                if he > hs and we > ws:
                    out[r, :, i, j] = x[b, :, hs:he, ws:we].max(axis=(1, 2))
    return out


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
