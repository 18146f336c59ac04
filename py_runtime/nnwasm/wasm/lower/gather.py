"""Gather and GatherElements: indices are a tensor read at run time (embedding ids), int32 or
int64; the kernels check each index and stop the run with NNW_BAD_INDEX when one is out of range."""
from ...tensor import numel
from .common import axis_attr
from .half import lower_gather_half

INDEX_DTYPES = ("int32", "int64")


def check_gather(node, g):
    dt = g.values[node.inputs[1]].dtype
    return None if dt.name in INDEX_DTYPES else f"indices of type {dt.name}"


def lower_gather(node, b):
    x, idx = node.inputs[:2]
    xs = b.shape(x)
    a = axis_attr(node, len(xs), 0)
    dims = dict(outer=numel(xs[:a]), axis_dim=xs[a], n_idx=numel(b.shape(idx)), inner=numel(xs[a + 1:]))
    if lower_gather_half(node, b, **dims):   # a float16 model's table, kept as halves
        return
    b.emit("gather", x=b.ref(x), idx=b.ref(idx), y=b.ref(node.outputs[0]), esize=b.dtype(x).size,
           idx_dtype=b.dtype(idx).onnx, **dims)


def check_gather_elements(node, g):
    reason = check_gather(node, g)
    if reason is None and len(g.values[node.inputs[0]].shape) > 6:
        return "more than 6 dims"
    return reason


def lower_gather_elements(node, b):
    x, idx = node.inputs[:2]
    xs, ds = b.shape(x), b.shape(idx)
    a = axis_attr(node, len(xs), 0)
    st, acc = [0] * len(xs), 1
    for i in range(len(xs) - 1, -1, -1):
        st[i], acc = acc, acc * xs[i]
    pad = 6 - len(ds)
    args = {"x": b.ref(x), "idx": b.ref(idx), "y": b.ref(node.outputs[0]), "esize": b.dtype(x).size,
            "idx_dtype": b.dtype(idx).onnx, "rank": len(ds), "axis": a, "axis_dim": xs[a]}
    args.update({f"d{i}": v for i, v in enumerate(list(ds) + [1] * pad)})
    args.update({f"s{i}": v for i, v in enumerate(st + [0] * pad)})
    b.emit("gather_elements", **args)
