"""Helpers every lowering family shares: dtype rules for checks, broadcast strides, axes, and
small constant tensors built without numpy."""
import struct

from ...dtypes import FLOAT32
from ...tensor import TensorData, numel


def tensors(node):
    """Every named input and output of a node, inputs first."""
    return [n for n in node.inputs if n] + [n for n in node.outputs if n]


def consts(node, g):
    """The node's inputs as TensorData where they are initializers, else None (S.const_ints' view)."""
    return [g.initializers.get(n) if n else None for n in node.inputs]


def f32(check):
    """The check, for a node whose every input and output is float32 (the compute kernels' type)."""
    def wrapped(node, g):
        for name in tensors(node):
            dt = g.values[name].dtype
            if dt.name != "float32":
                return f"'{name}' is {dt.name}; this WASM kernel takes float32"
            if numel(g.values[name].shape) == 0:
                return f"'{name}' is empty"
        return check(node, g)
    return wrapped


def any_dtype(check):
    """The check, for a data-movement node: its data input and outputs may be of any fixed-size
    type (the kernels move bytes); its other inputs (shapes, axes) are read at plan build."""
    def wrapped(node, g):
        for name in node.inputs[:1] + [o for o in node.outputs if o]:
            dt = g.values[name].dtype
            if dt.size == 0:
                return f"'{name}' is of type {dt.name}"
        return check(node, g)
    return wrapped


def ok(node, g):
    return None


def single_output(check):
    def wrapped(node, g):
        if len([o for o in node.outputs if o]) != 1:
            return "optional outputs are not supported"
        return check(node, g)
    return wrapped


def dtype_of(g, name):
    return g.values[name].dtype.name


def out_rank_at_most_6(node, g):
    """For the broadcasting kernels: at most 6 output dims. (Opset < 7 broadcasting that is not
    numpy's never gets here: the registry refuses it, see ops/elementwise.py.)"""
    if len(g.values[node.outputs[0]].shape) > 6:
        return "more than 6 dimensions"
    return None


def broadcast_args(b, out, operands, prefixes):
    """The `rank d0..d5` and per-operand `<prefix>0..5` element strides of a broadcasting op
    (binary, binary_int, compare, where) writing value out from the Refs operands."""
    shape = tuple(b.shape(out)) or (1,)
    rank = len(shape)
    args = {"rank": rank}
    args.update({f"d{i}": (list(shape) + [1] * 6)[i] for i in range(6)})
    for ref, prefix in zip(operands, prefixes):
        strides = broadcast_strides(b.shape(ref.name), rank, shape) + [0] * (6 - rank)
        args.update({f"{prefix}{i}": strides[i] for i in range(6)})
    return args


def broadcast_strides(shape, out_rank, out_shape):
    """Element strides of `shape` aligned right against out_shape; 0 where broadcast."""
    shape = (1,) * (out_rank - len(shape)) + tuple(shape)
    strides, acc = [0] * out_rank, 1
    for i in range(out_rank - 1, -1, -1):
        strides[i] = 0 if shape[i] == 1 and out_shape[i] != 1 else acc
        acc *= shape[i]
    return strides


def axis_attr(node, rank, default):
    axis = node.attr("axis", default)
    return axis + rank if axis < 0 else axis


def f32_tensor(shape, values):
    return TensorData(FLOAT32, tuple(shape), struct.pack(f"<{len(values)}f", *values))
