"""Lowerings to gather_axes (lower/tables.py): Slice, Expand, Tile, Split, Pad, DepthToSpace and
SpaceToDepth. Each builds, at plan build, the x coordinates every output axis reads; their
constant inputs (starts, pads, repeats...) must be known then. Any fixed-size dtype."""
from ...ops import indexing as ix
from ...tensor import numel
from ...ops import shapes as S
from . import views
from .common import consts
from .tables import PAD, axis_table, emit_gather_axes, fits, scalar_tensor, strides


def shape(g, name):
    return tuple(g.values[name].shape)


def _refusing(build):
    """A check from a table builder: the builder's refusal (a string), or whether the tables fit."""
    def check(node, g):
        try:
            tables = build(node, g)
        except Exception as e:   # a malformed node: the numpy provider reports it
            return f"cannot lower: {e}"
        return tables if isinstance(tables, str) else fits(tables)
    return check


# --- Slice ---------------------------------------------------------------------------------------

def slice_tables(node, g):
    xs = shape(g, node.inputs[0])
    starts, ends, axes, steps, known = ix.slice_args(node, consts(node, g))
    if not known or starts is None or ends is None:
        return "starts, ends, axes and steps must be constants"
    coords = [list(range(d)) for d in xs]
    for a, start, end, step in ix.slice_spec(node, len(xs), starts, ends, axes, steps):
        start, _, step, length = ix.slice_axis(xs[a], start, end, step)
        coords[a] = [start + i * step for i in range(length)]
    return [axis_table(c, s) for c, s in zip(coords, strides(xs))]


def lower_slice(node, b):
    if views.symbolic(node, b.graph):
        return views.lower_slice_view(node, b)
    emit_gather_axes(b, node.inputs[0], b.ref(node.outputs[0]), slice_tables(node, b.graph))


# --- Expand, Tile -----------------------------------------------------------------------------------

def expand_tables(node, g):
    out = shape(g, node.outputs[0])
    xs = (1,) * (len(out) - len(shape(g, node.inputs[0]))) + shape(g, node.inputs[0])
    return [[0] * d if xd == 1 else axis_table(range(d), s) for d, xd, s in zip(out, xs, strides(xs))]


def tile_tables(node, g):
    xs, out = shape(g, node.inputs[0]), shape(g, node.outputs[0])
    return [axis_table([i % xd for i in range(d)], s) for d, xd, s in zip(out, xs, strides(xs))]


def lower_expand(node, b):
    if views.symbolic(node, b.graph):
        return views.lower_expand_view(node, b)
    emit_gather_axes(b, node.inputs[0], b.ref(node.outputs[0]), expand_tables(node, b.graph))


def lower_tile(node, b):
    emit_gather_axes(b, node.inputs[0], b.ref(node.outputs[0]), tile_tables(node, b.graph))


# --- Split ---------------------------------------------------------------------------------------

def split_tables(node, g):
    """One table list per output (all outputs, in order)."""
    xs = shape(g, node.inputs[0])
    a = S.axis(node, node.attr("axis", 0), len(xs))
    split, known = ix._split_arg(node, consts(node, g))
    if not known:
        return "split sizes must be constants"
    sizes = ix.split_sizes(node, xs[a], len(node.outputs), split)
    out, at, st = [], 0, strides(xs)
    for n in sizes:
        coords = [list(range(d)) for d in xs]
        coords[a] = list(range(at, at + n))
        out.append([axis_table(c, s) for c, s in zip(coords, st)])
        at += n
    return tuple(out)


def check_split(node, g):
    if views.symbolic(node, g):
        return views.check_split_view(node, g)
    try:
        outputs = split_tables(node, g)
    except Exception as e:
        return f"cannot lower: {e}"
    if isinstance(outputs, str):
        return outputs
    # an empty piece (a split size of 0) is written by no op
    return next(filter(None, (fits(t) for t in outputs if all(t))), None)


def lower_split(node, b):
    if views.symbolic(node, b.graph):
        return views.lower_split_view(node, b)
    for y, tables in zip(node.outputs, split_tables(node, b.graph)):
        if y and all(tables):
            emit_gather_axes(b, node.inputs[0], b.ref(y), tables)


# --- Pad -----------------------------------------------------------------------------------------

def _pad_coord(c, n, mode):
    """The x coordinate output coordinate c - begin reads along an axis of size n (None = pad)."""
    if 0 <= c < n:
        return c
    if mode == "constant":
        return None
    if mode == "edge":
        return min(max(c, 0), n - 1)
    if mode == "wrap":
        return c % n
    if n == 1:   # reflect
        return 0
    period = 2 * (n - 1)
    c %= period
    return period - c if c >= n else c


def pad_tables(node, g):
    xs = shape(g, node.inputs[0])
    mode = node.attr("mode", "constant")
    if mode not in ix.PAD_MODES:
        return f"Pad mode {mode!r}"
    pads = ix._pad_args(node, consts(node, g), len(xs))
    if pads is None:
        return "pads and axes must be constants"
    if mode == "reflect" and any(max(p) >= d for p, d in zip(pads, xs)):
        return "reflect pads as large as the input"
    out = shape(g, node.outputs[0])
    return [axis_table([_pad_coord(i - p[0], d, mode) for i in range(o)], s)
            for o, d, p, s in zip(out, xs, pads, strides(xs))]


def check_pad(node, g):
    if node.opset >= 11 and len(node.inputs) > 2 and node.inputs[2]:
        vi = g.values.get(node.inputs[2])
        if vi is None or vi.dtype != g.values[node.inputs[0]].dtype:
            return "the constant value's type differs from the input's"
        if numel(vi.shape) != 1:
            return "the constant value is not one element"
    return _refusing(pad_tables)(node, g)


def lower_pad(node, b):
    tables = pad_tables(node, b.graph)
    value = None
    if any(PAD in t for t in tables):
        dt = b.dtype(node.inputs[0])
        if node.opset >= 11 and len(node.inputs) > 2 and node.inputs[2]:
            value = b.ref(node.inputs[2])
        else:
            value = b.constant(scalar_tensor(dt, node.attr("value", 0.0) if node.opset < 11 else 0))
    emit_gather_axes(b, node.inputs[0], b.ref(node.outputs[0]), tables, value)


# --- DepthToSpace, SpaceToDepth ------------------------------------------------------------------

def space_depth_tables(node, g):
    """Both are a reshape, a transpose and a reshape: the output, viewed 6-D, reads the 6-D view of
    x at permuted strides."""
    n, c, h, w = shape(g, node.inputs[0])
    bs = node.attr("blocksize")
    dcr = node.attr("mode", "DCR") == "DCR"
    if node.op_type == "DepthToSpace":
        view = (n, bs, bs, c // (bs * bs), h, w) if dcr else (n, c // (bs * bs), bs, bs, h, w)
        perm = (0, 3, 4, 1, 5, 2) if dcr else (0, 1, 4, 2, 5, 3)
    else:
        view = (n, c, h // bs, bs, w // bs, bs)
        perm = (0, 3, 5, 1, 2, 4) if dcr else (0, 1, 3, 5, 2, 4)
    st = strides(view)
    return [axis_table(range(view[p]), st[p]) for p in perm]


def lower_space_depth(node, b):
    emit_gather_axes(b, node.inputs[0], b.ref(node.outputs[0]), space_depth_tables(node, b.graph))


def _or_view(check_view, check_tables):
    return lambda node, g: check_view(node, g) if views.symbolic(node, g) else check_tables(node, g)


check_slice = _or_view(views.check_slice_view, _refusing(slice_tables))
check_expand = _or_view(views.check_expand_view, _refusing(expand_tables))
check_tile = _refusing(tile_tables)
check_space_depth = _refusing(space_depth_tables)
