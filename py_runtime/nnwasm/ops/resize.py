"""Resize (opset 10-19) and Upsample (7-9): nearest, linear and cubic, any rank, separable.

Each resized axis maps output index y to a source coordinate x (coordinate_transformation_mode),
then mixes the input at integer taps t near x with weights k((t - x) * s): a one-hot pick for
nearest, the triangle kernel for linear, Keys' cubic kernel for cubic. s is 1 unless antialias
widens the kernel for downsampling (s = scale). Taps outside the input clamp to its edge.
"""
import math

from . import shapes as S
from .registry import op

COORD_MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
               "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil", "simple")
ASPECT_POLICIES = ("stretch", "not_larger", "not_smaller")


class _Spec:
    """A Resize node's attributes, normalised across opsets."""

    def __init__(self, node):
        legacy = node.op_type == "Upsample" or node.opset < 11
        self.mode = node.attr("mode", "nearest")
        if self.mode == "bilinear" and node.op_type == "Upsample":
            self.mode = "linear"
        self.coord = "asymmetric" if legacy else node.attr("coordinate_transformation_mode", "half_pixel")
        # Opset 10 and Upsample round like floor when upsampling and ceil when downsampling.
        self.nearest = "simple" if legacy else node.attr("nearest_mode", "round_prefer_floor")
        self.cubic_a = node.attr("cubic_coeff_a", -0.75)
        self.exclude_outside = bool(node.attr("exclude_outside", 0))
        self.extrapolation = node.attr("extrapolation_value", 0.0)
        self.antialias = bool(node.attr("antialias", 0))
        self.policy = node.attr("keep_aspect_ratio_policy", "stretch")
        self.axes = S.ints_attr(node, "axes")
        for value, allowed in ((self.mode, ("nearest", "linear", "cubic")), (self.coord, COORD_MODES),
                               (self.nearest, NEAREST_MODES), (self.policy, ASPECT_POLICIES)):
            if value not in allowed:
                S.unsupported(node, f"{value!r} is not one of {allowed}")


def _inputs(node, consts_or_arrays):
    """(roi, scales, sizes) as lists of numbers or None, for any opset's input layout."""
    def vals(i, cast):
        v = S.get(consts_or_arrays, i)
        if v is None:
            return None
        values = v.tolist()
        values = values if isinstance(values, list) else [values]
        values = [cast(x) for x in _flat(values)]
        return values or None          # an empty tensor means "not given"
    if node.op_type == "Upsample" and node.opset < 9:
        return None, [float(s) for s in node.attr("scales", [])] or None, None
    if node.op_type == "Upsample" or node.opset < 11:
        return None, vals(1, float), None
    return vals(1, float), vals(2, float), vals(3, int)


def _flat(values):
    for v in values:
        if isinstance(v, list):
            yield from _flat(v)
        else:
            yield v


def plan(node, spec, in_shape, roi, scales, sizes):
    """Per-axis (output size, scale) for a known input shape; None entries where unknown."""
    r = len(in_shape)
    axes = S.axes(node, spec.axes, r) if spec.axes is not None else list(range(r))
    given = scales if scales is not None else sizes
    if given is None:
        S.fail(node, "needs scales or sizes")
    if scales is not None and sizes is not None:
        S.fail(node, "takes scales or sizes, not both")
    if len(given) != len(axes):
        S.fail(node, f"{'scales' if scales is not None else 'sizes'} {given} must have {len(axes)} entries")
    out = list(in_shape)
    scale = [1.0] * r
    if scales is not None:
        for a, s in zip(axes, scales):
            if s <= 0:
                S.fail(node, f"scales {scales} must be positive")
            scale[a] = s
            out[a] = int(math.floor(in_shape[a] * s)) if S.known(in_shape[a]) else None
        return out, scale, axes
    ratios = [sz / in_shape[a] if S.known(in_shape[a]) and in_shape[a] else None for a, sz in zip(axes, sizes)]
    if spec.policy != "stretch":    # one common scale keeps the aspect ratio
        common = None if None in ratios else min(ratios) if spec.policy == "not_larger" else max(ratios)
        for a in axes:
            scale[a] = common
            out[a] = None if common is None else int(common * in_shape[a] + 0.5)
        return out, scale, axes
    for a, sz, rt in zip(axes, sizes, ratios):
        out[a], scale[a] = sz, rt
    return out, scale, axes


def infer_resize(node, inputs, consts):
    x = S.need(node, inputs, 0)
    spec = _Spec(node)
    xs = S.shape(x)
    if xs is None:
        return [(x.dtype, None)]
    # inputs that decide the output size: none (Upsample-7), scales, or scales and sizes
    sized_by = () if node.op_type == "Upsample" and node.opset < 9 else \
        (1,) if node.op_type == "Upsample" or node.opset < 11 else (2, 3)
    if any(S.get(node.inputs, i) not in (None, "") and S.get(consts, i) is None for i in sized_by):
        return [(x.dtype, (None,) * len(xs))]
    return [(x.dtype, tuple(plan(node, spec, xs, *_inputs(node, consts))[0]))]


def _source_coords(np, spec, y, n_in, n_out, scale, roi):
    """Source coordinate of every output index y along one axis (and an out-of-range mask)."""
    length = scale * n_in       # the unrounded output length
    outside = None
    if spec.coord == "align_corners":
        x = np.zeros_like(y) if n_out == 1 else y * (n_in - 1) / (n_out - 1)
    elif spec.coord == "asymmetric":
        x = y / scale
    elif spec.coord == "pytorch_half_pixel":
        x = np.full_like(y, -0.5) if n_out == 1 else (y + 0.5) / scale - 0.5
    elif spec.coord == "half_pixel":
        x = (y + 0.5) / scale - 0.5
    elif spec.coord == "tf_half_pixel_for_nn":   # opset 11 only
        x = (y + 0.5) / scale
    elif spec.coord == "half_pixel_symmetric":
        offset = n_in / 2 * (1 - n_out / length)
        x = offset + (y + 0.5) / scale - 0.5
    else:   # tf_crop_and_resize
        lo, hi = roi
        x = (np.full_like(y, (hi - lo) * (n_in - 1) / 2) if n_out == 1
             else y * (hi - lo) * (n_in - 1) / (n_out - 1)) + lo * (n_in - 1)
        outside = (x < 0) | (x > n_in - 1)
    return x, outside


def _nearest_index(np, spec, x, downsampling):
    mode = spec.nearest
    if mode == "simple":
        mode = "ceil" if downsampling else "floor"
    f = np.floor(x)
    frac = x - f
    if mode == "round_prefer_floor":
        return np.where(frac <= 0.5, f, f + 1)
    if mode == "round_prefer_ceil":
        return np.where(frac < 0.5, f, f + 1)
    return f if mode == "floor" else np.ceil(x)


def _kernel(np, spec, d):
    d = np.abs(d)
    if spec.mode == "linear":
        return np.clip(1 - d, 0, None)
    a = spec.cubic_a
    return np.where(d <= 1, ((a + 2) * d - (a + 3)) * d * d + 1,
                    np.where(d < 2, ((a * d - 5 * a) * d + 8 * a) * d - 4 * a, 0.0))


def _resize_axis(np, spec, data, axis, n_out, scale, roi):
    n_in = data.shape[axis]
    y = np.arange(n_out, dtype=np.float64)
    x, outside = _source_coords(np, spec, y, n_in, n_out, scale, roi)
    if spec.mode == "nearest":
        idx = np.clip(_nearest_index(np, spec, x, scale < 1), 0, n_in - 1).astype(np.int64)
        out = np.take(data, idx, axis=axis)
    else:
        s = min(scale, 1.0) if spec.antialias else 1.0
        support = (1 if spec.mode == "linear" else 2) / s
        taps = np.floor(x)[:, None] + np.arange(-math.ceil(support), math.ceil(support) + 2)[None, :]
        w = _kernel(np, spec, (taps - x[:, None]) * s)
        if spec.exclude_outside:
            w = np.where((taps < 0) | (taps > n_in - 1), 0.0, w)
        w = w / np.where(w.sum(axis=1, keepdims=True) == 0, 1, w.sum(axis=1, keepdims=True))
        idx = np.clip(taps, 0, n_in - 1).astype(np.int64)
        shape = [1] * data.ndim
        shape[axis] = n_out
        out = 0
        for j in range(taps.shape[1]):
            out = out + np.take(data, idx[:, j], axis=axis) * w[:, j].reshape(shape)
    if outside is not None and outside.any():
        shape = [1] * data.ndim
        shape[axis] = n_out
        out = np.where(outside.reshape(shape), spec.extrapolation, out)
    return out


def _resize(node, x, roi, scales, sizes):
    import numpy as np
    spec = _Spec(node)
    out, scale, axes = plan(node, spec, x.shape, roi, scales, sizes)
    if spec.coord == "tf_crop_and_resize" and (roi is None or len(roi) != 2 * len(axes)):
        S.fail(node, f"tf_crop_and_resize needs roi with {2 * len(axes)} entries, got {roi}")
    y = x.astype(np.float64)
    for k, a in enumerate(axes):
        box = (roi[k], roi[len(axes) + k]) if spec.coord == "tf_crop_and_resize" else None
        if out[a] == x.shape[a] and scale[a] == 1 and box in (None, (0.0, 1.0)):
            continue
        y = _resize_axis(np, spec, y, a, out[a], scale[a], box)
    if x.dtype.kind in "iu":
        info = np.iinfo(x.dtype)
        y = np.clip(np.round(y), info.min, info.max)
    return y.astype(x.dtype)


@op("Resize", 10, infer_resize)
def resize_10(node, x, scales):
    return _resize(node, x, *_inputs(node, [x, scales]))


@op("Resize", 11, infer_resize)
def resize_11(node, x, roi=None, scales=None, sizes=None):
    return _resize(node, x, *_inputs(node, [x, roi, scales, sizes]))


@op("Upsample", 7, infer_resize)
def upsample_7(node, x):
    return _resize(node, x, *_inputs(node, [x]))


@op("Upsample", 9, infer_resize)
def upsample_9(node, x, scales):
    return _resize(node, x, *_inputs(node, [x, scales]))
