"""Zero-size tensors (a dim of 0) on WASM, with ONNX's semantics and no kernel call on them.

A decoder's first step feeds an empty past (length 0): Concat onto it, Slice/Gather/Reshape/
Transpose/Softmax of the values made from it, MatMul with an inner dim of 0. The provider decides
per node (wasm/provider.py asks `empty_refusal` when any of its values is empty), before the op's
own check and lowering, which then never see an empty tensor:

- every output empty: nothing to compute; the node emits no op (its outputs are 0 bytes).
- some input empty, an output not: only ops whose result is defined then run, listed in
  EMPTY_INPUTS: Concat (the regular lowering skips empty pieces), MatMul / Gemm with K = 0
  (zeros, or Gemm's beta * C), reductions over an empty axis (the op's identity: 0 for sums,
  1 for ReduceProd, -inf / +inf for ReduceMax / ReduceMin, -inf for the log reductions, 0 for
  ReduceMean, as onnxruntime gives). Gemm follows ONNX's formula (beta * C, as the numpy
  reference): onnxruntime 1.31 returns C unscaled when K = 0. Any other op is refused naming the empty value
  (Gather from an empty axis, ArgMax over one: errors in onnxruntime too).

A fill is one gather_axes op whose tables are all PAD (lower/tables.py): every output element is
the pad value, one constant element in the weights.
"""
import math

from ...tensor import numel
from .common import tensors
from .elementwise import BINARY_KIND, emit_binary
from .reduce import REDUCE_KIND, reduce_axes
from .tables import MAX_RANK, PAD, int32_tensor, scalar_tensor


def _empty(g, name):
    return name not in g.initializers and numel(g.values[name].shape) == 0


def has_empty(node, g):
    """Whether a value the node's kernels would touch (not a constant read at plan build) is empty."""
    return any(_empty(g, n) for n in tensors(node))


def _outputs_empty(node, g):
    return all(numel(g.values[o].shape) == 0 for o in node.outputs if o)


def empty_refusal(node, g, check):
    """None if the node runs with its empty values (check: the op's own capability check, used
    where the regular lowering handles them), else why not."""
    if _outputs_empty(node, g):
        return None
    if not any(_empty(g, n) for n in node.inputs if n):   # some outputs empty (Split's pieces): the op's own
        return check(node, g)
    rule = EMPTY_INPUTS.get(node.op_type)
    if rule is None:
        first = next(n for n in tensors(node) if _empty(g, n))
        return f"'{first}' is empty and {node.op_type} has no result defined for it"
    return (rule[0] or check)(node, g)


def lower_empty(node, b):
    """Lowers a node with an empty value in its special form; False when the regular lowering
    does (Concat)."""
    if _outputs_empty(node, b.graph):
        return True
    if not any(_empty(b.graph, n) for n in node.inputs if n):
        return False
    lower = EMPTY_INPUTS[node.op_type][1]
    if lower is None:
        return False
    lower(node, b)
    return True


def emit_fill(b, y, value):
    """y (a value name) = value everywhere."""
    shape = tuple(b.shape(y)) or (1,)
    dims = [numel(shape[:-1]), shape[-1]] if len(shape) > 1 else [shape[0]]
    pad = b.constant(scalar_tensor(b.dtype(y), value))
    args = {"x": pad, "y": b.ref(y), "table": b.constant(int32_tensor([PAD] * sum(dims))), "value": pad,
            "esize": b.dtype(y).size, "x_count": 1, "rank": len(dims)}
    args.update({f"d{i}": dims[i] if i < len(dims) else 1 for i in range(MAX_RANK)})
    b.emit("gather_axes", **args)


def _float_out(node, g):
    for name in [node.inputs[0]] + [o for o in node.outputs if o]:
        if g.values[name].dtype.name != "float32":
            return f"'{name}' is {g.values[name].dtype.name}; this WASM kernel takes float32"
    return None


def check_matmul(node, g):
    return _float_out(node, g)


def lower_matmul(node, b):   # K = 0: a sum of no products
    emit_fill(b, node.outputs[0], 0.0)


def check_gemm(node, g):
    why = _float_out(node, g)
    if why or len(node.inputs) < 3 or not node.inputs[2]:
        return why
    if len(g.values[node.outputs[0]].shape) > 6:
        return "more than 6 dimensions"
    return None


def lower_gemm(node, b):     # K = 0: alpha * A B is zeros, Y = beta * C broadcast
    y = node.outputs[0]
    if len(node.inputs) < 3 or not node.inputs[2]:
        return emit_fill(b, y, 0.0)
    beta = b.constant(scalar_tensor(b.dtype(y), float(node.attr("beta", 1.0))))
    emit_binary(b, BINARY_KIND["Mul"], b.ref(node.inputs[2]), beta, b.ref(y))


IDENTITY = {"ReduceSum": 0.0, "ReduceMean": 0.0, "ReduceProd": 1.0, "ReduceL1": 0.0, "ReduceL2": 0.0,
            "ReduceSumSquare": 0.0, "ReduceLogSum": -math.inf, "ReduceLogSumExp": -math.inf,
            "ReduceMax": -math.inf, "ReduceMin": math.inf}


def check_reduce(node, g):
    dt = g.values[node.inputs[0]].dtype
    if dt.name == "float32" or (dt.name in ("int32", "int64") and node.op_type in ("ReduceMax", "ReduceMin")):
        axes = reduce_axes(node, g)
        return axes if isinstance(axes, str) and axes != "noop" else None
    return f"'{node.inputs[0]}' is {dt.name}; an empty {node.op_type} on WASM takes float32"


def lower_reduce(node, b):
    y = node.outputs[0]
    value = IDENTITY[node.op_type]
    if b.dtype(y).name != "float32":   # ReduceMax / ReduceMin of integers: the type's bounds
        bits = 8 * b.dtype(y).size - 1
        value = -(1 << bits) if node.op_type == "ReduceMax" else (1 << bits) - 1
    emit_fill(b, y, value)


# op -> (check, lowering) for a node with an empty input and a non-empty output; None: the op's
# regular check or lowering handles it
EMPTY_INPUTS = {
    "Concat": (None, None),
    "MatMul": (check_matmul, lower_matmul),
    "Gemm": (check_gemm, lower_gemm),
    **{op: (check_reduce, lower_reduce) for op in REDUCE_KIND},
}
