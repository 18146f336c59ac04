"""Slice, Split and Expand over symbolic dims (symbolic.py), as strided views read by the transpose kernel.

reindex.py's gather_axes tables hold one entry per output coordinate, so their length is a dim:
a plan traced for every past length can't hold them. A Slice with positive steps, a Split and an
Expand are affine in their coordinates, so they are a strided gather instead, whose dims, strides and
offset are words of the plan, evaluated per run: x's element strides times the step (0 where
Expand broadcasts), the slice's starts as an offset into x. Used where a shape involved is
symbolic; concrete shapes keep the tables (the same bytes either way)."""
from ...ops import indexing as ix
from ...ops import shapes as S
from ...symbolic import Sym
from ...tensor import SymTensor, numel
from .common import consts
from .tables import strides

MAX_RANK = 6   # the transpose kernel's


def symbolic(node, g):
    """Whether a shape or a constant argument (a Slice's starts) of the node is an expression of dims."""
    if any(isinstance(d, Sym) for n in (node.inputs[0], node.outputs[0]) for d in g.values[n].shape):
        return True
    return any(isinstance(t, SymTensor) and any(isinstance(v, Sym) for v in t.values) for t in consts(node, g))


def slice_view(node, g):
    """(dims, element strides, element offset) of the Slice as a view of x, or why it is not one."""
    xs = tuple(g.values[node.inputs[0]].shape)
    starts, ends, axes, steps, known = ix.slice_args(node, consts(node, g))
    if not known or starts is None or ends is None:
        return "starts, ends, axes and steps must be constants or expressions of the input dims"
    st = strides(xs)
    dims, view, offset = list(xs), list(st), 0
    for a, start, end, step in ix.slice_spec(node, len(xs), starts, ends, axes, steps):
        start, _, step, length = ix.slice_axis(xs[a], start, end, step)
        if step < 0:
            return "a negative step over a symbolic dim"
        dims[a], view[a], offset = length, st[a] * step, offset + start * st[a]
    return dims, view, offset


def expand_view(node, g):
    out = tuple(g.values[node.outputs[0]].shape)
    xs = (1,) * (len(out) - len(g.values[node.inputs[0]].shape)) + tuple(g.values[node.inputs[0]].shape)
    return list(out), [0 if xd == 1 else s for xd, s in zip(xs, strides(xs))], 0


def split_views(node, g):
    """[(dims, element strides, element offset)] of each output of a Split, or why not."""
    xs = tuple(g.values[node.inputs[0]].shape)
    a = S.axis(node, node.attr("axis", 0), len(xs))
    split, known = ix._split_arg(node, consts(node, g))
    if not known:
        return "split sizes must be constants"
    st, at, out = strides(xs), 0, []
    for n in ix.split_sizes(node, xs[a], len(node.outputs), split):
        dims = list(xs)
        dims[a] = n
        out.append((dims, st, at * st[a]))
        at = at + n
    return out


def check_split_view(node, g):
    v = split_views(node, g)
    return v if isinstance(v, str) else None if len(v[0][0]) <= MAX_RANK else f"more than {MAX_RANK} dims"


def lower_split_view(node, b):
    for y, (dims, st, offset) in zip(node.outputs, split_views(node, b.graph)):
        if y and numel(dims) != 0:   # an empty piece is written by no op
            _emit(b, node.inputs[0], y, dims, st, offset)


def _emit(b, x, y, dims, st, offset):
    pad = MAX_RANK - len(dims)
    dims, st = [1] * pad + list(dims), [0] * pad + list(st)
    size = b.dtype(x).size
    args = {"x": b.ref(x, offset * size), "y": b.ref(y), "esize": size, "rank": MAX_RANK}
    args.update({f"d{i}": dims[i] for i in range(MAX_RANK)})
    args.update({f"s{i}": st[i] for i in range(MAX_RANK)})
    b.emit("transpose", **args)


def _check(view):
    def check(node, g):
        v = view(node, g)
        if isinstance(v, str):
            return v
        return None if len(v[0]) <= MAX_RANK else f"more than {MAX_RANK} dims"
    return check


def _lower(view):
    def lower(node, b):
        _emit(b, node.inputs[0], node.outputs[0], *view(node, b.graph))
    return lower


check_slice_view, lower_slice_view = _check(slice_view), _lower(slice_view)
check_expand_view, lower_expand_view = _check(expand_view), _lower(expand_view)
