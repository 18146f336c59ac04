"""ScatterND (reduction "none") with constant indices on WASM, as a decoder's causal mask is built
(Marian's merged decoder): y = Where(mask, updates gathered to y's positions, data), the gather
table (an updates element offset per y element, PAD where nothing is written) and the bool mask
computed at plan build. Two kernel ops (gather_axes, where), no new kernel; the table and mask
cost 5 bytes per element of y, so larger outputs are refused."""
import struct

from ...dtypes import BY_NAME
from ...tensor import TensorData, numel
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
    t = _table(node, g)
    return t if isinstance(t, str) else None


def lower_scatter_nd(node, b):
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
