"""Resize (opset 10-19) and Upsample (7-9). The coordinate modes become tables at plan build, with
the formulas of the numpy reference (ops/resize.py) in the same float64 order, so both pick the
same source pixels: nearest is a gather_axes (any dtype), linear a resize_linear over the one or two
resized axes (float32). cubic, antialiased downsampling and tf_crop_and_resize stay on numpy."""
import math
import struct

from ...dtypes import FLOAT32
from ...ops import resize as R
from ...tensor import TensorData, numel
from .reindex import consts, shape
from .tables import axis_table, emit_gather_axes, fits, int32_tensor, strides


def _source(spec, y, n_in, n_out, scale):
    """ops/resize.py's _source_coords for one output index."""
    if spec.coord == "align_corners":
        return 0.0 if n_out == 1 else y * (n_in - 1) / (n_out - 1)
    if spec.coord == "asymmetric":
        return y / scale
    if spec.coord == "pytorch_half_pixel":
        return -0.5 if n_out == 1 else (y + 0.5) / scale - 0.5
    if spec.coord == "half_pixel":
        return (y + 0.5) / scale - 0.5
    if spec.coord == "tf_half_pixel_for_nn":
        return (y + 0.5) / scale
    offset = n_in / 2 * (1 - n_out / (scale * n_in))   # half_pixel_symmetric
    return offset + (y + 0.5) / scale - 0.5


def _nearest(spec, x, downsampling):
    mode = spec.nearest
    if mode == "simple":
        mode = "ceil" if downsampling else "floor"
    f = math.floor(x)
    if mode == "round_prefer_floor":
        return f if x - f <= 0.5 else f + 1
    if mode == "round_prefer_ceil":
        return f if x - f < 0.5 else f + 1
    return f if mode == "floor" else math.ceil(x)


def _resized(node, g):
    """(spec, x shape, output shape, per-axis scale, resized axes) or a refusal."""
    spec = R._Spec(node)
    xs = shape(g, node.inputs[0])
    roi, scales, sizes = R._inputs(node, consts(node, g))
    if scales is None and sizes is None:
        return "scales or sizes must be constants"
    out, scale, axes = R.plan(node, spec, xs, roi, scales, sizes)
    if spec.coord == "tf_crop_and_resize":
        return "tf_crop_and_resize"
    if spec.mode == "cubic":
        return "cubic Resize"
    moved = [a for a in axes if not (out[a] == xs[a] and scale[a] == 1)]
    if spec.antialias and any(scale[a] < 1 for a in moved):
        return "antialiased downsampling"
    return spec, xs, tuple(out), scale, moved


def nearest_tables(spec, xs, out, scale, moved):
    tables = []
    for a, (n_in, n_out, st) in enumerate(zip(xs, out, strides(xs))):
        if a not in moved:
            tables.append(axis_table(range(n_out), st))
            continue
        idx = [min(max(_nearest(spec, _source(spec, float(y), n_in, n_out, scale[a]), scale[a] < 1), 0), n_in - 1)
               for y in range(n_out)]
        tables.append(axis_table(idx, st))
    return tables


def linear_taps(spec, n_in, n_out, scale):
    """(indices, weights), two taps per output index, as the reference's triangle kernel gives them."""
    idx, wt = [], []
    for y in range(n_out):
        x = _source(spec, float(y), n_in, n_out, scale)
        taps = [math.floor(x) + k for k in (0, 1)]
        w = [max(1 - abs(t - x), 0.0) for t in taps]
        if spec.exclude_outside:
            w = [0.0 if t < 0 or t > n_in - 1 else v for t, v in zip(taps, w)]
        total = sum(w) or 1
        idx += [min(max(t, 0), n_in - 1) for t in taps]
        wt += [v / total for v in w]
    return idx, wt


def check_resize(node, g):
    try:
        r = _resized(node, g)
    except Exception as e:   # a malformed node: the numpy provider reports it
        return f"cannot lower: {e}"
    if isinstance(r, str):
        return r
    spec, xs, out, scale, moved = r
    dt = g.values[node.inputs[0]].dtype
    if spec.mode == "nearest" or not moved:
        return fits(nearest_tables(spec, xs, out, scale, moved)) if dt.size else f"'{node.inputs[0]}' is of type {dt.name}"
    if dt.name != "float32":
        return f"linear Resize of {dt.name}"
    if len(moved) > 2:
        return "linear Resize of more than two axes"
    return None


def lower_resize(node, b):
    spec, xs, out, scale, moved = _resized(node, b.graph)
    x, y = node.inputs[0], b.ref(node.outputs[0])
    if spec.mode == "nearest" or not moved:
        return emit_gather_axes(b, x, y, nearest_tables(spec, xs, out, scale, moved))
    h, w = (moved if len(moved) == 2 else (None, moved[0]))
    h_idx, h_wt = linear_taps(spec, xs[h], out[h], scale[h]) if h is not None else ([0, 0], [1.0, 0.0])
    w_idx, w_wt = linear_taps(spec, xs[w], out[w], scale[w])
    outer = numel(xs[:h]) if h is not None else numel(xs[:w])
    mid = numel(xs[h + 1:w]) if h is not None else 1
    b.emit("resize_linear", x=b.ref(x), y=y, h_idx=b.constant(int32_tensor(h_idx)),
           h_wt=b.constant(_f32(h_wt)), w_idx=b.constant(int32_tensor(w_idx)), w_wt=b.constant(_f32(w_wt)),
           outer=outer, h_in=xs[h] if h is not None else 1, w_in=xs[w], mid=mid, inner=numel(xs[w + 1:]),
           h_out=out[h] if h is not None else 1, w_out=out[w])


def _f32(values):
    return TensorData(FLOAT32, (len(values),), struct.pack(f"<{len(values)}f", *values))
