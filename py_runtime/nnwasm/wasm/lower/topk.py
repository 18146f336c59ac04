"""TopK on the `topk` kernel (kernels_c/reduce/topk.c): x viewed as [outer, len, inner] around the
axis, k a plan constant (an initializer, or a graph input the session specialises on, see
shape_values.py). Sorted output only: onnxruntime's order for sorted=0 is its own."""
from ...tensor import numel
from .common import axis_attr

DTYPES = ("float32", "int32", "int64")


def _k(node, g):
    if node.opset < 10:
        return int(node.attr("k"))
    t = g.initializers.get(node.inputs[1])
    return None if t is None or t.numel != 1 else int(t.tolist()[0])


def check_topk(node, g):
    x = g.values[node.inputs[0]]
    if x.dtype.name not in DTYPES:
        return f"'{node.inputs[0]}' is {x.dtype.name}; this WASM kernel takes {' or '.join(DTYPES)}"
    if not x.shape:
        return "TopK of a scalar"
    if not node.attr("sorted", 1):
        return "TopK with sorted=0"
    k = _k(node, g)
    if k is None:
        return "k is not a constant"
    axis = axis_attr(node, len(x.shape), -1)
    if not 1 <= k <= x.shape[axis]:
        return f"k {k} outside [1, {x.shape[axis]}]"
    return None


def lower_topk(node, b):
    shape = b.shape(node.inputs[0])
    axis = axis_attr(node, len(shape), -1)
    k = _k(node, b.graph)
    values, indices = node.outputs[0], node.outputs[1]
    # an output the graph does not use still needs room: the kernel writes both
    vref = b.ref(values) if values else b.scratch(numel(shape[:axis]) * k * numel(shape[axis + 1:]) * b.dtype(node.inputs[0]).size)
    iref = b.ref(indices) if indices else b.scratch(numel(shape[:axis]) * k * numel(shape[axis + 1:]) * 8)
    b.emit("topk", x=b.ref(node.inputs[0]), values=vref, indices=iref, scratch=b.scratch(4 * k),
           dtype=b.dtype(node.inputs[0]).onnx, outer=numel(shape[:axis]), len=shape[axis],
           inner=numel(shape[axis + 1:]), k=k, largest=node.attr("largest", 1))
