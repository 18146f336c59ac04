"""Resize (opset 10-19) and Upsample (7-9). The coordinate modes become tables at plan build, with
the formulas of the numpy reference (ops/resize.py) in the same float64 order, so both pick the
same source pixels: nearest is a gather_axes (any dtype), linear a resize_linear over the one or two
resized axes (float32); cubic the sum of resize_linear passes over pairs of its four taps per axis.
Antialiased downsampling (and antialiased cubic) and tf_crop_and_resize stay on numpy."""
import math
import struct

from ...dtypes import FLOAT32
from ...ops import resize as R
from ...tensor import TensorData, numel
from .common import consts
from .reindex import shape
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
    moved = [a for a in axes if not (out[a] == xs[a] and scale[a] == 1)]
    if spec.mode == "cubic" and spec.antialias:
        return "antialiased cubic Resize"
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


def _taps(spec, n_in, n_out, scale, offsets, weight):
    """(indices, weights): for each output index, the taps floor(x) + offsets around its source x,
    each weighed by weight(|tap - x|), normalised as the reference does."""
    idx, wt = [], []
    for y in range(n_out):
        x = _source(spec, float(y), n_in, n_out, scale)
        taps = [math.floor(x) + k for k in offsets]
        w = [weight(abs(t - x)) for t in taps]
        if spec.exclude_outside:
            w = [0.0 if t < 0 or t > n_in - 1 else v for t, v in zip(taps, w)]
        total = sum(w) or 1
        idx += [min(max(t, 0), n_in - 1) for t in taps]
        wt += [v / total for v in w]
    return idx, wt


def linear_taps(spec, n_in, n_out, scale):
    """(indices, weights), two taps per output index, as the reference's triangle kernel gives them."""
    return _taps(spec, n_in, n_out, scale, (0, 1), lambda d: max(1 - d, 0.0))


def cubic_taps(spec, n_in, n_out, scale):
    """(indices, weights), four taps per output index (floor(x) - 1 .. floor(x) + 2: the only ones
    Keys' kernel weighs), normalised as the reference does."""
    a = spec.cubic_a
    return _taps(spec, n_in, n_out, scale, (-1, 0, 1, 2),
                 lambda d: ((a + 2) * d - (a + 3)) * d * d + 1 if d <= 1 else
                 ((a * d - 5 * a) * d + 8 * a) * d - 4 * a if d < 2 else 0.0)


def _pair(table, p):
    """Taps 2p and 2p+1 of each output index of a four-tap table."""
    return [v for i in range(0, len(table), 4) for v in table[i + 2 * p:i + 2 * p + 2]]


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
        return f"{spec.mode} Resize of {dt.name}"
    if len(moved) > 2:
        return f"{spec.mode} Resize of more than two axes"
    return None


def lower_resize(node, b):
    spec, xs, out, scale, moved = _resized(node, b.graph)
    x, y = node.inputs[0], b.ref(node.outputs[0])
    if spec.mode == "nearest" or not moved:
        return emit_gather_axes(b, x, y, nearest_tables(spec, xs, out, scale, moved))
    h, w = (moved if len(moved) == 2 else (None, moved[0]))
    taps = linear_taps if spec.mode == "linear" else cubic_taps
    h_tab = taps(spec, xs[h], out[h], scale[h]) if h is not None else None
    w_tab = taps(spec, xs[w], out[w], scale[w])
    outer = numel(xs[:h]) if h is not None else numel(xs[:w])
    mid = numel(xs[h + 1:w]) if h is not None else 1
    dims = dict(outer=outer, h_in=xs[h] if h is not None else 1, w_in=xs[w], mid=mid, inner=numel(xs[w + 1:]),
                h_out=out[h] if h is not None else 1, w_out=out[w])
    # linear: one pass of two taps per axis; cubic: a pass per pair of taps on each axis, summed
    pairs = [(None, None)] if spec.mode == "linear" else [(p, q) for p in ((0, 1) if h is not None else (None,))
                                                          for q in (0, 1)]
    count = numel(out)
    tmp = b.scratch(4 * count) if len(pairs) > 1 else None
    for k, (p, q) in enumerate(pairs):
        hi, hw = ([0, 0], [1.0, 0.0]) if h is None else h_tab if p is None else (_pair(h_tab[0], p), _pair(h_tab[1], p))
        wi, ww = w_tab if q is None else (_pair(w_tab[0], q), _pair(w_tab[1], q))
        b.emit("resize_linear", x=b.ref(x), y=y if k == 0 else tmp, h_idx=b.constant(int32_tensor(hi)),
               h_wt=b.constant(_f32(hw)), w_idx=b.constant(int32_tensor(wi)), w_wt=b.constant(_f32(ww)), **dims)
        if k:
            b.emit("binary", kind=0, a=y, b=tmp, y=y, rank=1, **{f"d{i}": count if i == 0 else 1 for i in range(6)},
                   **{f"as{i}": int(i == 0) for i in range(6)}, **{f"bs{i}": int(i == 0) for i in range(6)})


def _f32(values):
    return TensorData(FLOAT32, (len(values),), struct.pack(f"<{len(values)}f", *values))
