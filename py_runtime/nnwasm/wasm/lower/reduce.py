"""Reduction lowerings: Softmax/LogSoftmax and GlobalAveragePool."""
from ...tensor import numel
from .common import axis_attr


def lower_softmax(node, b):
    shape = b.shape(node.inputs[0])
    rank = len(shape)
    if node.opset < 13:
        axis = axis_attr(node, rank, 1)
        outer, mid, inner = numel(shape[:axis]), numel(shape[axis:]), 1
    else:
        axis = axis_attr(node, rank, -1)
        outer, mid, inner = numel(shape[:axis]), shape[axis], numel(shape[axis + 1:])
    b.emit("softmax", x=b.ref(node.inputs[0]), y=b.ref(node.outputs[0]), outer=outer, axis=mid, inner=inner,
           log=int(node.op_type == "LogSoftmax"))


def check_softmax(node, g):
    return None if g.values[node.inputs[0]].shape else "softmax of a scalar"


def lower_global_average_pool(node, b):
    n, c, *spatial = b.shape(node.inputs[0])
    b.emit("mean_rows", x=b.ref(node.inputs[0]), y=b.ref(node.outputs[0]), rows=n * c, inner=numel(spatial))


def check_global_pool(node, g):
    return None if len(g.values[node.inputs[0]].shape) >= 3 else "input rank < 3"
