"""Constant folding in pure Python, for the small integer tensors of shape computations
(Shape -> Gather -> Unsqueeze -> Concat -> Reshape, ...): where numpy is missing (Pyodide) the
numpy kernels can't fold them, and without their values the shapes after them stay unknown.

Each folder: fold(node, inputs, consts) -> [TensorData, ...] (one per output), or None when the
node can't be folded (an input not constant, too big, a type not worth it). Shape and Size fold
from static shapes alone. Registered on every version of the op (OpDef.fold); opset differences
are left to the op's infer, which folders reuse for output shapes.
"""
import itertools
import math
import operator
import struct

from ..symbolic import Sym
from ..tensor import SymTensor, TensorData
from . import indexing, misc, reduce, registry, shape_ops
from . import shapes as S

MAX_ELEMENTS = 1 << 14     # beyond this, folding in Python loops costs more than it saves
MAX_FILL_BYTES = 1 << 30   # ConstantOfShape folds without a loop, up to this size
FOLDERS = {}


def folder(*op_types):
    def deco(fn):
        for t in op_types:
            FOLDERS[t] = fn
        return fn
    return deco


def install():
    for op_type, fn in FOLDERS.items():
        registry.set_fold("", op_type, _all_or_none(fn))


def _all_or_none(fn):
    """A folder that gives None unless it computed every output (tensor() gives None for a value
    of a type it can't pack, such as bfloat16)."""
    def fold(node, inputs, consts):
        outs = fn(node, inputs, consts)
        return None if outs is None or any(t is None for o, t in zip(node.outputs, outs) if o) else outs
    fold.__name__ = fn.__name__
    return fold


def tensor(dtype, shape, values):
    """TensorData from Python values; None if they don't fit the type (then don't fold)."""
    if dtype is None or not dtype.struct or len(values) != math.prod(shape):
        return None
    if dtype.struct in "bBhHiIlLqQ" and any(isinstance(v, Sym) for v in values):
        return SymTensor(dtype, shape, values)   # a shape computation on symbolic dims
    try:
        if dtype.struct == "?":
            data = bytes(1 if v else 0 for v in values)
        else:
            data = struct.pack(f"<{len(values)}{dtype.struct}", *values)
    except (struct.error, OverflowError, TypeError, ValueError):
        return None
    return TensorData(dtype, shape, data)


def _small(*ts):
    return all(t is not None and t.dtype.struct and t.numel <= MAX_ELEMENTS for t in ts)


def broadcast_values(t, out_shape):
    """t's values broadcast to out_shape, flat."""
    vals = t.tolist()
    shape = (1,) * (len(out_shape) - len(t.shape)) + tuple(t.shape)
    strides = [0 if d == 1 else s for d, s in zip(shape, S.contiguous_strides(shape))]
    return [vals[sum(i * s for i, s in zip(idx, strides))]
            for idx in itertools.product(*[range(d) for d in out_shape])]


def _outputs_static(node, inputs, consts):
    """The op's inferred (dtype, shape) for output 0 when fully known, else None."""
    op = registry.lookup(node.domain, node.op_type, node.opset)
    dt, shape = op.infer(node, inputs, consts)[0][:2]
    if dt is None or not S.static(shape) or any(isinstance(d, Sym) for d in shape):
        return None   # a length that is a symbolic dim: computed per run by the provider, not folded
    if math.prod(shape) > MAX_ELEMENTS:
        return None
    return dt, tuple(shape)


def _small_input(node, inputs, consts):
    """(the constant input 0, _outputs_static()) when that input is small enough to fold and the
    output's type and shape are known; else None."""
    x = S.get(consts, 0)
    if not _small(x):
        return None
    out = _outputs_static(node, inputs, consts)
    return None if out is None else (x, out)


@folder("Shape")
def fold_shape(node, inputs, consts):
    s = S.shape(S.get(inputs, 0))
    if not S.static(s):
        return None
    start, end = shape_ops.shape_range(node, len(s)) if node.opset >= 15 else (0, len(s))
    return [tensor(S.INT64, (end - start,), list(s[start:end]))]


@folder("Size")
def fold_size(node, inputs, consts):
    n = S.numel(S.shape(S.get(inputs, 0)))
    return None if n is None else [tensor(S.INT64, (), [n])]


@folder("Constant")
def fold_constant(node, inputs, consts):
    name, v = misc.constant_attr(node)
    if isinstance(v, TensorData):
        return [v]
    dt, is_list = misc.CONSTANT_ATTRS[name]
    values = list(v) if is_list else [v]
    return [tensor(dt, (len(values),) if is_list else (), values)]


@folder("Identity", "Reshape", "Squeeze", "Unsqueeze", "Flatten", "Dropout")
def fold_same_values(node, inputs, consts):
    """Ops that keep the element order: the input's bytes under the inferred output shape."""
    x = S.get(consts, 0)
    if not _small(x) or len(node.outputs) > 1 and node.outputs[1]:
        return None
    out = _outputs_static(node, inputs, consts)
    return None if out is None else [x.reshaped(out[1])]


@folder("ConstantOfShape")
def fold_constant_of_shape(node, inputs, consts):
    """Any size (light models build their weights this way): one element's bytes repeated is a
    C-speed copy, no Python loop; bounded like the largest tensor kernels.wasm takes."""
    op = registry.lookup(node.domain, node.op_type, node.opset)
    dt, shape = op.infer(node, inputs, consts)[0][:2]
    if dt is None or not S.static(shape) or not dt.struct or math.prod(shape) * dt.size > MAX_FILL_BYTES:
        return None
    one = tensor(dt, (), [misc.fill_value(node)[1]])
    return None if one is None else [TensorData(dt, tuple(shape), bytes(one.data) * math.prod(shape))]


@folder("Cast")
def fold_cast(node, inputs, consts):
    x = S.get(consts, 0)
    if not _small(x):
        return None
    dt = S.dtype_attr(node, "to")
    vals = x.tolist()
    if dt.name == "bool":
        vals = [bool(v) for v in vals]
    elif dt.struct in "efd":
        vals = [float(v) for v in vals]
    elif any(isinstance(v, float) and not math.isfinite(v) for v in vals):
        return None
    else:
        vals = [v if isinstance(v, Sym) else int(v) for v in vals]   # truncates toward zero, like the numpy kernel
    return [tensor(dt, x.shape, vals)]


def _int_div(a, b):
    if b == 0:
        raise ZeroDivisionError
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


_BINARY = {
    "Add": operator.add, "Sub": operator.sub, "Mul": operator.mul,
    "Equal": operator.eq, "Less": operator.lt, "Greater": operator.gt,
    "LessOrEqual": operator.le, "GreaterOrEqual": operator.ge,
    "And": lambda a, b: bool(a) and bool(b), "Or": lambda a, b: bool(a) or bool(b),
    "Max": max, "Min": min,
}


@folder(*_BINARY, "Div", "Where", "Not")
def fold_elementwise(node, inputs, consts):
    xs = [S.get(consts, i) for i in range(len(node.inputs))]
    if not xs or not _small(*xs):
        return None
    out = _outputs_static(node, inputs, consts)
    if out is None or (node.op_type in ("Max", "Min") and len(xs) != 2):
        return None
    dt, shape = out
    cols = [broadcast_values(x, shape) for x in xs]
    if node.op_type == "Not":
        return [tensor(dt, shape, [not v for v in cols[0]])]
    if node.op_type == "Where":
        return [tensor(dt, shape, [a if c else b for c, a, b in zip(*cols)])]
    if node.op_type == "Div":
        fn = _int_div if dt.struct not in "efd" else operator.truediv
    else:
        fn = _BINARY[node.op_type]
    try:
        return [tensor(dt, shape, [fn(a, b) for a, b in zip(*cols)])]
    except (ZeroDivisionError, OverflowError):
        return None


@folder("Gather")
def fold_gather(node, inputs, consts):
    data, idx = S.get(consts, 0), S.get(consts, 1)
    if not _small(data, idx):
        return None
    out = _outputs_static(node, inputs, consts)
    if out is None:
        return None
    a = S.axis(node, node.attr("axis", 0), len(data.shape))
    n = data.shape[a]
    outer, inner = math.prod(data.shape[:a]), math.prod(data.shape[a + 1:])
    vals = data.tolist()
    picks = [i + n if i < 0 else i for i in idx.tolist()]
    res = [vals[(o * n + i) * inner + k] for o in range(outer) for i in picks for k in range(inner)]
    return [tensor(data.dtype, out[1], res)]


@folder("Concat")
def fold_concat(node, inputs, consts):
    xs = [S.get(consts, i) for i in range(len(node.inputs))]
    if not xs or not _small(*xs):
        return None
    out = _outputs_static(node, inputs, consts)
    if out is None:
        return None
    a = S.axis(node, node.attr("axis"), len(out[1]))
    outer = math.prod(out[1][:a])
    blocks = [(x.tolist(), math.prod(x.shape[a:])) for x in xs]
    res = [v for o in range(outer) for vals, size in blocks for v in vals[o * size:(o + 1) * size]]
    return [tensor(out[0], out[1], res)]


@folder("Slice")
def fold_slice(node, inputs, consts):
    got = _small_input(node, inputs, consts)
    if got is None:
        return None
    x, out = got
    starts, ends, axes, steps, _ = indexing.slice_args(node, consts)
    picks = [list(range(d)) for d in x.shape]
    for a, start, end, step in indexing.slice_spec(node, len(x.shape), starts, ends, axes, steps):
        begin, stop, step, length = indexing.slice_axis(x.shape[a], start, end, step)
        if isinstance(begin, Sym):
            return None   # where a constant is read from depends on a dim: a view per run (wasm/lower/views.py)
        picks[a] = [begin + k * step for k in range(length)]
    vals, strides = x.tolist(), S.contiguous_strides(x.shape)
    res = [vals[sum(i * s for i, s in zip(idx, strides))] for idx in itertools.product(*picks)]
    return [tensor(x.dtype, out[1], res)]


@folder("Transpose")
def fold_transpose(node, inputs, consts):
    """PyTorch's exported pads (ConstantOfShape, Concat, Reshape, Slice, Transpose, Cast) pass here."""
    got = _small_input(node, inputs, consts)
    if got is None:
        return None
    x, out = got
    perm = node.attr("perm") or list(range(len(x.shape)))[::-1]
    vals, strides = x.tolist(), S.contiguous_strides(x.shape)
    res = [vals[sum(i * strides[p] for i, p in zip(idx, perm))]
           for idx in itertools.product(*[range(d) for d in out[1]])]
    return [tensor(x.dtype, out[1], res)]


@folder("Range")
def fold_range(node, inputs, consts):
    out = _outputs_static(node, inputs, consts)
    if out is None:
        return None
    start, _, delta = (S.const_scalar(consts, i) for i in range(3))
    return [tensor(out[0], out[1], [start + k * delta for k in range(out[1][0])])]


@folder("Expand")
def fold_expand(node, inputs, consts):
    x = S.get(consts, 0)
    if not _small(x) or S.get(consts, 1) is None:
        return None
    out = _outputs_static(node, inputs, consts)
    return None if out is None else [tensor(x.dtype, out[1], broadcast_values(x, out[1]))]


_REDUCE = {"ReduceSum": sum, "ReduceProd": math.prod, "ReduceMax": max, "ReduceMin": min}


def _empty_reduction(op_type, dtype):
    """What a reduction over no elements gives (onnx's identities): 0, 1, or the lowest (max) or
    highest (min) value of the type; None where this can't say."""
    if op_type in ("ReduceSum", "ReduceProd"):
        return int(op_type == "ReduceProd")
    low = op_type == "ReduceMax"
    if dtype.struct == "?":
        return not low
    if dtype.struct in "efd":
        return -math.inf if low else math.inf
    bits = 8 * dtype.size
    if dtype.struct in "BHIQ":
        return 0 if low else 2 ** bits - 1
    return -(2 ** (bits - 1)) if low else 2 ** (bits - 1) - 1


@folder(*_REDUCE)
def fold_reduce(node, inputs, consts):
    got = _small_input(node, inputs, consts)
    if got is None:
        return None
    x, out = got
    if x.numel == 0:   # every output element reduces no element (an empty output: nothing to fill)
        return [tensor(out[0], out[1], [_empty_reduction(node.op_type, x.dtype)] * math.prod(out[1]))]
    # Group the input's elements by their output position: reduced axes' indices dropped.
    axes = reduce.reduce_axes(node, consts)[0]
    if not axes and reduce.noop(node):
        return [x]
    reduced = set(S.axes(node, axes, len(x.shape))) if axes else set(range(len(x.shape)))
    kept = [i for i in range(len(x.shape)) if i not in reduced]
    groups = {}
    for idx, v in zip(itertools.product(*[range(d) for d in x.shape]), x.tolist()):
        groups.setdefault(tuple(idx[i] for i in kept), []).append(v)
    return [tensor(out[0], out[1], [_REDUCE[node.op_type](g) for g in groups.values()])]


install()
