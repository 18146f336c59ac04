"""Reduction lowerings: Reduce* (any set of axes), ArgMax/ArgMin, Softmax/LogSoftmax/Hardmax,
LpNormalization, GlobalAveragePool and GlobalMaxPool.

Every reduction runs as `reduce` over x viewed as [outer, len, inner]. The lowering drops size-1
axes and merges neighbours that are both reduced or both kept; when more than one run of reduced
axes remains, a `transpose` into scratch first gathers them at the end."""
from ...ops.reduce import AXES_INPUT_SINCE
from ...tensor import numel
from .common import axis_attr
from .movement import lower_copy

REDUCE_KIND = {"ReduceSum": 0, "ReduceMean": 1, "ReduceMax": 2, "ReduceMin": 3, "ReduceProd": 4, "ReduceL1": 5,
               "ReduceL2": 6, "ReduceSumSquare": 7, "ReduceLogSum": 8, "ReduceLogSumExp": 9}
ARG_KIND = {"ArgMax": 0, "ArgMin": 1, "Hardmax": 2}
MAX_DIMS = 6     # the transpose op's dims


def _dtypes(node, g, data, out=None):
    """None if the data input is of a dtype named in `data` and every output of `out` (default: the
    input's dtype); the other inputs (axes) are read at plan build."""
    x = g.values[node.inputs[0]].dtype.name
    if x not in data:
        return f"'{node.inputs[0]}' is {x}; this WASM kernel takes {' or '.join(data)}"
    for name in [o for o in node.outputs if o]:
        dt = g.values[name].dtype.name
        if dt != (out or x):
            return f"'{name}' is {dt}, not {out or x}"
    return None


def reduce_axes(node, g):
    """Sorted non-negative reduced axes, "noop" (noop_with_empty_axes and no axes), or the reason
    the axes are unknown at plan build."""
    rank = len(g.values[node.inputs[0]].shape)
    if node.opset < AXES_INPUT_SINCE.get(node.op_type, 18):
        axes = node.attr("axes")
    elif len(node.inputs) > 1 and node.inputs[1]:
        t = g.initializers.get(node.inputs[1])
        if t is None:
            return "the axes input is not a constant"
        axes = t.tolist()
    else:
        axes = None
    if not axes:
        if node.opset >= AXES_INPUT_SINCE.get(node.op_type, 18) and node.attr("noop_with_empty_axes", 0):
            return "noop"
        axes = range(rank)
    return sorted({int(a) + rank if a < 0 else int(a) for a in axes})


def _merged(shape, axes):
    """[(size, reduced)] with size-1 axes dropped and same-kind neighbours merged."""
    runs = []
    for i, d in enumerate(shape):
        if d == 1:
            continue
        red = i in axes
        if runs and runs[-1][1] == red:
            runs[-1] = (runs[-1][0] * d, red)
        else:
            runs.append((d, red))
    return runs


def check_reduce(node, g):
    ints = node.op_type in ("ReduceMax", "ReduceMin", "ReduceSum")   # a mask's length (seqlens_k), ...
    allowed = ("float32", "int32", "int64") if ints else ("float32",)
    why = _dtypes(node, g, allowed)
    if why:
        return why
    axes = reduce_axes(node, g)
    if isinstance(axes, str):
        return None if axes == "noop" else axes
    if len(_merged(g.values[node.inputs[0]].shape, axes)) > MAX_DIMS:
        return f"more than {MAX_DIMS} alternating reduced and kept dims after merging"
    return None


def lower_reduce(node, b):
    x, y = node.inputs[0], node.outputs[0]
    axes = reduce_axes(node, b.graph)
    if axes == "noop":
        return lower_copy(node, b)
    runs = _merged(b.shape(x), axes)
    kind, dtype = REDUCE_KIND[node.op_type], b.dtype(x)
    reduced = [i for i, (_, red) in enumerate(runs) if red]
    if not reduced:      # only size-1 axes reduced: every output is the reduction of one value
        return b.emit("reduce", kind=kind, dtype=dtype.onnx, x=b.ref(x), y=b.ref(y), outer=numel(b.shape(x)),
                      len=1, inner=1)
    if reduced[-1] - reduced[0] + 1 == len(reduced):      # one run of reduced axes
        sizes = [d for d, _ in runs]
        return b.emit("reduce", kind=kind, dtype=dtype.onnx, x=b.ref(x), y=b.ref(y),
                      outer=numel(sizes[:reduced[0]]), len=sizes[reduced[0]], inner=numel(sizes[reduced[0] + 1:]))
    # kept axes first, reduced last, into scratch; then one row per output
    strides, acc = [0] * len(runs), 1
    for i in range(len(runs) - 1, -1, -1):
        strides[i], acc = acc, acc * runs[i][0]
    order = [i for i, (_, red) in enumerate(runs) if not red] + reduced
    dims = [runs[i][0] for i in order] + [1] * (MAX_DIMS - len(order))
    st = [strides[i] for i in order] + [0] * (MAX_DIMS - len(order))
    tmp = b.scratch(numel(b.shape(x)) * dtype.size)
    args = {"x": b.ref(x), "y": tmp, "esize": dtype.size, "rank": len(order)}
    args.update({f"d{i}": dims[i] for i in range(MAX_DIMS)})
    args.update({f"s{i}": st[i] for i in range(MAX_DIMS)})
    b.emit("transpose", **args)
    kept = numel(d for d, red in runs if not red)
    b.emit("reduce", kind=kind, dtype=dtype.onnx, x=tmp, y=b.ref(y), outer=kept,
           len=numel(b.shape(x)) // kept, inner=1)


def _arg_view(node, shape):
    """(outer, len, inner) of an ArgMax/ArgMin/Hardmax node; Hardmax before opset 13 flattens at axis."""
    if node.op_type == "Hardmax" and node.opset < 13:
        axis = axis_attr(node, len(shape), 1)
        return numel(shape[:axis]), numel(shape[axis:]), 1
    axis = axis_attr(node, len(shape), -1 if node.op_type == "Hardmax" else 0)
    return numel(shape[:axis]), shape[axis], numel(shape[axis + 1:])


def check_arg(node, g):
    if node.op_type == "Hardmax":
        why = _dtypes(node, g, ("float32",))
    else:
        why = _dtypes(node, g, ("float32", "int32", "int64"), "int64")
    if why:
        return why
    return None if g.values[node.inputs[0]].shape else f"{node.op_type} of a scalar"


def lower_arg(node, b):
    x = node.inputs[0]
    outer, length, inner = _arg_view(node, b.shape(x))
    b.emit("argreduce", kind=ARG_KIND[node.op_type], dtype=b.dtype(x).onnx, x=b.ref(x), y=b.ref(node.outputs[0]),
           outer=outer, len=length, inner=inner, select_last=node.attr("select_last_index", 0))


def check_lp_norm(node, g):
    if node.attr("p", 2) not in (1, 2):
        return "LpNormalization with p other than 1 or 2"
    return None if g.values[node.inputs[0]].shape else "LpNormalization of a scalar"


def lower_lp_norm(node, b):
    shape = b.shape(node.inputs[0])
    axis = axis_attr(node, len(shape), -1)
    b.emit("lp_normalize", x=b.ref(node.inputs[0]), y=b.ref(node.outputs[0]), outer=numel(shape[:axis]),
           len=shape[axis], inner=numel(shape[axis + 1:]), p=node.attr("p", 2))


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


def lower_global_max_pool(node, b):
    n, c, *spatial = b.shape(node.inputs[0])
    b.emit("reduce", kind=REDUCE_KIND["ReduceMax"], dtype=b.dtype(node.inputs[0]).onnx, x=b.ref(node.inputs[0]),
           y=b.ref(node.outputs[0]), outer=n * c, len=numel(spatial), inner=1)


def check_global_pool(node, g):
    return None if len(g.values[node.inputs[0]].shape) >= 3 else "input rank < 3"
