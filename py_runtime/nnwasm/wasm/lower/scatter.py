"""ScatterND (reduction "none") on WASM, as a decoder's causal mask is built (Marian's merged
decoder). With constant indices: y = Where(mask, updates gathered to y's positions, data), the
gather table (an updates element offset per y element, PAD where nothing is written) and the bool
mask computed at plan build, two kernel ops (gather_axes, where); the table and mask cost 5 bytes
per element of y, so larger outputs are refused. With indices computed in the plan (positions over
a symbolic past length, symbolic.py): data copied to y, then the scatter_nd kernel, which checks
each index at run time."""
import struct

from ...dtypes import BY_NAME
from ...tensor import TensorData, numel
from .movement import lower_copy
from .tables import MAX_RANK, PAD, int32_tensor, scalar_tensor

MAX_ELEMENTS = 1 << 20


def _table(node, g):
    """[updates offset or PAD] per element of y, or why not."""
    if node.attr("reduction", "none") != "none":
        return "only reduction 'none'"
    t = g.initializers.get(node.inputs[1])
    if t is None:
        return "the indices are not a constant"
    ds = tuple(g.values[node.inputs[0]].shape)
    ishape = tuple(t.shape)
    k = ishape[-1] if ishape else 0
    if numel(ds) > MAX_ELEMENTS:
        return f"more than {MAX_ELEMENTS} output elements"
    inner = numel(ds[k:])
    strides = [numel(ds[j + 1:]) for j in range(k)]
    idx = t.tolist()
    table = [PAD] * numel(ds)
    for row in range(len(idx) // k if k else 1):
        base = 0
        for j in range(k):
            v = idx[row * k + j]
            v = v + ds[j] if v < 0 else v
            if not 0 <= v < ds[j]:
                return f"index {idx[row * k + j]} out of range for axis {j} of size {ds[j]}"
            base += v * strides[j]
        table[base:base + inner] = range(row * inner, row * inner + inner)   # the last duplicate wins
    return table


def check_scatter_nd(node, g):
    dt = g.values[node.inputs[0]].dtype
    if dt.size not in (1, 2, 4, 8):
        return f"'{node.inputs[0]}' is of type {dt.name}"
    if node.inputs[1] not in g.initializers:
        return _check_runtime(node, g)
    t = _table(node, g)
    return t if isinstance(t, str) else None


def _check_runtime(node, g):
    if node.attr("reduction", "none") != "none":
        return "only reduction 'none'"
    ishape = g.values[node.inputs[1]].shape
    if not ishape or not isinstance(ishape[-1], int) or not 1 <= ishape[-1] <= MAX_RANK:
        return f"indices of shape {list(ishape or ())}: their last dim must be 1 to {MAX_RANK}"
    return None


def lower_scatter_nd(node, b):
    if node.inputs[1] not in b.graph.initializers:
        return _lower_runtime(node, b)
    data, upd, y = node.inputs[0], node.inputs[2], node.outputs[0]
    table, dt = _table(node, b.graph), b.dtype(y)
    n = len(table)
    picked = b.scratch(n * dt.size)
    args = {"x": b.ref(upd), "y": picked, "table": b.constant(int32_tensor(table)),
            "value": b.constant(scalar_tensor(dt, 0)), "esize": dt.size, "x_count": max(numel(b.shape(upd)), 1),
            "rank": 1, **{f"d{i}": n if i == 0 else 1 for i in range(MAX_RANK)}}
    if numel(b.shape(upd)) == 0:   # nothing written: y is the data
        args["x"] = args["value"]
    b.emit("gather_axes", **args)
    mask = b.constant(TensorData(BY_NAME["bool"], (n,), struct.pack(f"<{n}?", *[v != PAD for v in table])))
    one = {f"{p}{i}": (1 if i == 0 else 0) for p in ("cs", "xs", "ys") for i in range(6)}
    b.emit("where", esize=dt.size, cond=mask, x=picked, y=b.ref(data), out=b.ref(y), rank=1,
           **{f"d{i}": n if i == 0 else 1 for i in range(6)}, **one)


def _lower_runtime(node, b):
    data, idx, upd, y = node.inputs[0], node.inputs[1], node.inputs[2], node.outputs[0]
    ds, ishape, esize = b.shape(data), b.shape(idx), b.dtype(y).size
    lower_copy(node, b)   # y = data (its inputs[0] and outputs[0]), then the scattered rows
    k = ishape[-1]
    rows = numel(ishape[:-1])
    if rows == 0:
        return
    dims = list(ds[:k]) + [1] * (MAX_RANK - k)
    b.emit("scatter_nd", idx=b.ref(idx), upd=b.ref(upd), y=b.ref(y), esize=esize, rows=rows, k=k,
           inner=numel(ds[k:]), **{f"d{i}": dims[i] for i in range(MAX_RANK)})
