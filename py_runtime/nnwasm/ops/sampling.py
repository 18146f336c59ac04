"""GridSample (16: 2-D, bilinear/bicubic; 20, 22: N-D, linear/cubic) and AffineGrid (20).

GridSample is separable: each spatial axis maps the normalised grid coordinate to a source
position, padding_mode moves positions outside the image (border: clamp, reflection: mirror),
then the taps near it (1 for nearest, 2 for linear, 4 for Keys' cubic with a = -0.75) are read
with the same padding rule per tap (zeros: a tap outside the image reads 0).
"""
import functools

from . import shapes as S
from .registry import op

PADDING = ("zeros", "border", "reflection")
MODES = {16: ("bilinear", "bicubic", "nearest"), 20: ("linear", "cubic", "nearest")}


def _grid_modes(since):
    return MODES[16] if since < 20 else MODES[20]


def _infer_grid_sample(since, node, inputs, consts):
    x, grid = S.need(node, inputs, 0), S.need(node, inputs, 1)
    if node.attr("mode", _grid_modes(since)[0]) not in _grid_modes(since):
        S.fail(node, f"mode must be one of {_grid_modes(since)}, got {node.attr('mode')!r}")
    if node.attr("padding_mode", "zeros") not in PADDING:
        S.fail(node, f"padding_mode must be one of {PADDING}, got {node.attr('padding_mode')!r}")
    if node.attr("align_corners", 0) not in (0, 1):
        S.fail(node, "align_corners must be 0 or 1")
    if S.dtype(grid) is not None and S.dtype(grid).name not in ("float16", "float32", "float64"):
        S.fail(node, f"grid must be a float tensor, got {S.dtype(grid).name}")
    xs, gs = S.shape(x), S.shape(grid)
    if xs is not None and (len(xs) < 3 or (since < 20 and len(xs) != 4)):
        S.fail(node, f"X of shape {list(xs)} has the wrong rank")
    if xs is not None and gs is not None:
        if len(gs) != len(xs):
            S.fail(node, f"grid of shape {list(gs)} must have X's rank {len(xs)}")
        S.merge_dims(node, gs[-1], len(xs) - 2, "grid's last dim and X's spatial rank")
        S.merge_dims(node, xs[0], gs[0], "batch of X and grid")
    y = None if xs is None or gs is None else (xs[0], xs[1], *gs[1:-1])
    return [(S.dtype(x), y)]


def _reflect(np, x, lo, hi):
    """Mirrors x at the borders until it lies in [lo, hi]."""
    rng = hi - lo
    if rng <= 0:
        return np.full_like(x, lo)
    below = x < lo
    dx = np.where(below, lo - x, x - hi)
    n = np.trunc(dx / rng)
    r = dx - n * rng
    even = n % 2 == 0
    inside = np.where(below, np.where(even, lo + r, hi - r), np.where(even, hi - r, lo + r))
    return np.where((x < lo) | (x > hi), inside, x)


def _cubic(np, t):
    a = -0.75
    t = np.abs(t)
    u = [t + 1, t, 1 - t, 2 - t]
    far = lambda s: ((a * s - 5 * a) * s + 8 * a) * s - 4 * a
    near = lambda s: ((a + 2) * s - (a + 3)) * s * s + 1
    return [far(u[0]), near(u[1]), near(u[2]), far(u[3])]


def grid_sample(node, x, grid):
    import numpy as np
    mode = node.attr("mode", "linear" if node.opset >= 20 else "bilinear")
    mode = {"bilinear": "linear", "bicubic": "cubic"}.get(mode, mode)
    pad = node.attr("padding_mode", "zeros")
    align = bool(node.attr("align_corners", 0))
    n, c, dims = x.shape[0], x.shape[1], x.shape[2:]
    if grid.ndim != x.ndim or grid.shape[-1] != len(dims) or grid.shape[0] != n:
        S.fail(node, f"grid of shape {list(grid.shape)} does not fit X of shape {list(x.shape)}")
    out_sp = grid.shape[1:-1]
    if n * c * int(np.prod(out_sp)) == 0:
        return np.zeros((n, c, *out_sp), x.dtype)
    coords = grid[..., ::-1].astype(np.float32)   # the grid lists x (width) first
    taps = []   # per axis: [(index, weight, valid)]
    for a, size in enumerate(dims):
        g = coords[..., a]
        pos = ((g + 1) / 2 * (size - 1) if align else ((g + 1) * size - 1) / 2).astype(np.float64)
        lo, hi = (0.0, size - 1.0) if align else (-0.5, size - 0.5)
        if mode == "nearest":
            pos = np.rint(pos)
        if pad == "border":
            pos = np.where((pos < lo) | (pos > hi), np.clip(pos, 0, size - 1), pos)
        elif pad == "reflection":
            pos = _reflect(np, pos, lo, hi)
        if mode == "nearest":
            base, weights = np.trunc(pos).astype(np.int64), [1.0]
            offsets = [0]
        else:
            base = np.floor(pos).astype(np.int64)
            t = pos - base
            if mode == "linear":
                offsets, weights = [0, 1], [1 - t, t]
            else:
                offsets, weights = [-1, 0, 1, 2], _cubic(np, t)
        axis_taps = []
        for off, w in zip(offsets, weights):
            i = base + off
            if pad == "zeros":
                valid = (i >= 0) & (i < size)
            else:
                valid = True
                if pad == "border":
                    i = np.clip(i, 0, size - 1)
                else:
                    i = np.trunc(_reflect(np, i.astype(np.float64), lo, hi)).astype(np.int64)
                    i = np.clip(i, 0, size - 1)
            axis_taps.append((np.clip(i, 0, size - 1), w * valid))
        taps.append(axis_taps)
    nidx = np.arange(n).reshape((n,) + (1,) * len(out_sp))
    xl = np.moveaxis(x, 1, -1)   # channels last: one gather per tap reads every channel
    acc = np.zeros((n, *out_sp, c), np.float64)
    for combo in _product(taps):
        w = functools.reduce(lambda p, q: p * q, [t[1] for t in combo], 1.0)
        acc += xl[(nidx, *[t[0] for t in combo])] * np.asarray(w, np.float64)[..., None]
    return np.moveaxis(acc, -1, 1).astype(x.dtype)


def _product(lists):
    out = [[]]
    for options in lists:
        out = [p + [o] for p in out for o in options]
    return out


for _since in (16, 20, 22):
    op("GridSample", _since, functools.partial(_infer_grid_sample, _since))(grid_sample)


def infer_affine_grid(node, inputs, consts):
    theta, size = S.need(node, inputs, 0), S.need(node, inputs, 1)
    if node.attr("align_corners", 0) not in (0, 1):
        S.fail(node, "align_corners must be 0 or 1")
    ts, ss = S.shape(theta), S.shape(size)
    if ts is not None and (len(ts) != 3 or (S.known(ts[1]) and S.known(ts[2]) and ts[2] != ts[1] + 1)
                           or (S.known(ts[1]) and ts[1] not in (2, 3))):
        S.fail(node, f"theta must have shape (N, 2, 3) or (N, 3, 4), got {list(ts)}")
    if ss is not None and (len(ss) != 1 or (S.known(ss[0]) and ss[0] not in (4, 5))):
        S.fail(node, f"size must be (N, C, H, W) or (N, C, D, H, W), got shape {list(ss)}")
    dims = S.const_ints(consts, 1)
    r = ts[1] if ts is not None else None
    if dims is not None:
        if len(dims) not in (4, 5) or any(d < 1 for d in dims):
            S.fail(node, f"size {dims} must be 4 or 5 positive dims")
        if S.known(r) and r != len(dims) - 2:
            S.fail(node, f"theta of shape {list(ts)} does not fit size {dims}")
        n = S.merge_dims(node, ts[0] if ts is not None else None, dims[0], "batch of theta and size")
        return [(S.dtype(theta), (n, *dims[2:], len(dims) - 2))]
    if S.known(r):
        return [(S.dtype(theta), (ts[0], *[None] * r, r))]
    return [(S.dtype(theta), None)]


@op("AffineGrid", 20, infer_affine_grid)
def affine_grid(node, theta, size):
    import numpy as np
    dims = [int(d) for d in size.reshape(-1)]
    r = len(dims) - 2
    if r not in (2, 3) or theta.shape != (dims[0], r, r + 1) or min(dims) < 1:
        S.fail(node, f"theta of shape {list(theta.shape)} does not fit size {dims}")
    align = node.attr("align_corners", 0)
    axes = []
    for L in dims[2:]:
        i = np.arange(L, dtype=np.float64)
        axes.append(-1 + 2 * i / (L - 1) if align and L > 1 else
                    np.full(L, -1.0) if align else -1 + (2 * i + 1) / L)
    mesh = np.meshgrid(*axes, indexing="ij")   # (D,) H, W
    homo = np.stack([*mesh[::-1], np.ones_like(mesh[0])], axis=-1)   # x, y, (z), 1
    grid = np.einsum("...k,njk->n...j", homo, theta.astype(np.float64))
    return grid.astype(theta.dtype)


def infer_roi_align(node, inputs, consts):
    x, rois, idx = (S.need(node, inputs, i) for i in range(3))
    if node.attr("mode", "avg") not in ("avg", "max"):
        S.fail(node, f"mode must be 'avg' or 'max', got {node.attr('mode')!r}")
    if node.attr("coordinate_transformation_mode", "half_pixel") not in ("half_pixel", "output_half_pixel"):
        S.fail(node, f"unknown coordinate_transformation_mode {node.attr('coordinate_transformation_mode')!r}")
    oh, ow = node.attr("output_height", 1), node.attr("output_width", 1)
    if oh < 1 or ow < 1 or node.attr("sampling_ratio", 0) < 0:
        S.fail(node, f"output_height {oh}, output_width {ow} must be positive, sampling_ratio >= 0")
    dt = S.same_dtype(node, inputs, [0, 1])
    xs, rs, bs = S.shape(x), S.shape(rois), S.shape(idx)
    if xs is not None and len(xs) != 4:
        S.fail(node, f"X must be 4-D, got {list(xs)}")
    if rs is not None and (len(rs) != 2 or (S.known(rs[1]) and rs[1] != 4)):
        S.fail(node, f"rois must have shape (num_rois, 4), got {list(rs)}")
    if bs is not None and len(bs) != 1:
        S.fail(node, f"batch_indices must be 1-D, got {list(bs)}")
    if S.dtype(idx) is not None and S.dtype(idx).name != "int64":
        S.fail(node, f"batch_indices must be int64, got {S.dtype(idx).name}")
    r = S.merge_dims(node, rs[0] if rs else None, bs[0] if bs else None, "rois and batch_indices")
    return [(dt, (r, xs[1] if xs else None, oh, ow))]


MAX_ROI_SAMPLES = 1 << 26


def _roi_axis(np, start, bin_size, pooled, grid, size):
    """Sample positions along one axis (pooled x grid): low/high taps, their weights, in-range."""
    p = np.arange(pooled).reshape(-1, 1)
    g = np.arange(grid).reshape(1, -1)
    v = start + p * bin_size + (g + 0.5) * bin_size / grid
    ok = (v >= -1.0) & (v <= size)
    v = np.maximum(v, 0)
    low = np.trunc(v).astype(np.int64)
    edge = low >= size - 1
    low = np.where(edge, size - 1, low)
    high = np.where(edge, size - 1, low + 1)
    v = np.where(edge, low, v)
    frac = v - low
    return low, high, (1 - frac) * ok, frac * ok


def roi_align(node, x, rois, batch_indices):
    """Each ROI's bins average (or take the max of) sampling_ratio^2 bilinear samples (adaptive:
    ceil(roi size / output size) per axis when sampling_ratio is 0); max mode takes the max of
    the weighted corner values, as onnxruntime and onnx's reference do."""
    import numpy as np
    n, c, h, w = x.shape
    if rois.ndim != 2 or rois.shape[1] != 4 or batch_indices.shape != (rois.shape[0],):
        S.fail(node, f"rois {list(rois.shape)} and batch_indices {list(batch_indices.shape)} do not fit")
    if np.any(batch_indices < 0) or np.any(batch_indices >= n):
        S.fail(node, f"batch_indices {batch_indices.tolist()} outside the batch of {n}")
    default = "half_pixel" if node.opset >= 16 else "output_half_pixel"
    half = node.attr("coordinate_transformation_mode", default) == "half_pixel"
    oh, ow = node.attr("output_height", 1), node.attr("output_width", 1)
    ratio, scale = node.attr("sampling_ratio", 0), node.attr("spatial_scale", 1.0)
    is_max = node.attr("mode", "avg") == "max"
    if not np.all(np.isfinite(rois)):
        S.fail(node, "rois must be finite")
    y = np.zeros((rois.shape[0], c, oh, ow), np.float64)
    for r, (roi, b) in enumerate(zip(rois.astype(np.float64), batch_indices)):
        x0, y0, x1, y1 = roi * scale - (0.5 if half else 0.0)
        rh, rw = y1 - y0, x1 - x0
        if not half:
            rh, rw = max(rh, 1.0), max(rw, 1.0)
        gh = ratio if ratio > 0 else int(np.ceil(rh / oh))
        gw = ratio if ratio > 0 else int(np.ceil(rw / ow))
        if gh <= 0 or gw <= 0:
            continue
        if c * oh * ow * gh * gw > MAX_ROI_SAMPLES:   # an adaptive grid over a huge ROI
            S.fail(node, f"ROI {roi.tolist()} needs {gh} x {gw} samples per bin, more than nnwasm takes")
        ylo, yhi, wyl, wyh = _roi_axis(np, y0, rh / oh, oh, gh, h)
        xlo, xhi, wxl, wxh = _roi_axis(np, x0, rw / ow, ow, gw, w)
        img = x[b].astype(np.float64)
        ey, ex = (slice(None), slice(None), None, None), (None, None, slice(None), slice(None))
        terms = [img[:, yi[ey], xi[ex]] * (wy[ey] * wx[ex])
                 for yi, wy in ((ylo, wyl), (yhi, wyh)) for xi, wx in ((xlo, wxl), (xhi, wxh))]
        if is_max:   # (c, oh, gh, ow, gw)
            y[r] = np.max(np.maximum.reduce(terms), axis=(2, 4))
        else:
            y[r] = np.sum(sum(terms), axis=(2, 4)) / max(gh * gw, 1)
    return y.astype(x.dtype)


for _since in (10, 16, 22):
    op("RoiAlign", _since, infer_roi_align)(roi_align)
