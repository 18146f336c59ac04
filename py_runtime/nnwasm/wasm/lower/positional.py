"""Trilu on WASM: Where(mask, x, 0) with the triangle's mask a bool constant of the last two dims,
built at plan build (shapes are static), broadcast over the leading ones by the where kernel."""
import struct

from ...dtypes import BY_NAME
from ...tensor import TensorData
from .common import broadcast_args
from .tables import scalar_tensor


def _k(node, g):
    if len(node.inputs) < 2 or not node.inputs[1]:
        return 0
    t = g.initializers.get(node.inputs[1])
    return None if t is None or t.numel != 1 else int(t.tolist()[0])


def check_trilu(node, g):
    x = g.values[node.inputs[0]]
    if x.dtype.size not in (1, 2, 4, 8):
        return f"'{node.inputs[0]}' is of type {x.dtype.name}"
    if _k(node, g) is None:
        return "k is not a constant"
    if len(x.shape) > 6:
        return "more than 6 dimensions"
    return None


def lower_trilu(node, b):
    x, y = node.inputs[0], node.outputs[0]
    rows, cols = b.shape(x)[-2:]
    k, upper = _k(node, b.graph), node.attr("upper", 1)
    keep = [(j - i >= k) if upper else (j - i <= k) for i in range(rows) for j in range(cols)]
    mask = b.constant(TensorData(BY_NAME["bool"], (rows, cols), struct.pack(f"<{len(keep)}?", *keep)))
    zero = b.constant(scalar_tensor(b.dtype(x), 0))
    out = b.ref(y)
    b.emit("where", esize=b.dtype(x).size, cond=mask, x=b.ref(x), y=zero, out=out,
           **broadcast_args(b, y, (mask, b.ref(x), zero), ("cs", "xs", "ys")))


# --- Range: positions from dims, computed per run -----------------------------------------------

def _range_args(node, g):
    vals = []
    for name in node.inputs[:3]:
        t = g.initializers.get(name) if name else None
        if t is None or t.numel != 1:
            return None
        vals.append(t.tolist()[0])
    return vals


def check_range(node, g):
    """A Range left unfolded because its length is a symbolic dim (symbolic.py): its start, limit
    and delta are constants or expressions of the dims, evaluated per run into the kernel's words."""
    dt = g.values[node.outputs[0]].dtype
    if dt.name not in ("int32", "int64"):
        return f"a Range of {dt.name} (the kernel makes int32 and int64)"
    vals = _range_args(node, g)
    if vals is None:
        return "start, limit and delta must be constants or expressions of the input dims"
    if not all(-(1 << 31) <= v < (1 << 31) for v in vals):
        return "start, limit or delta beyond 32 bits"
    return None


def lower_range(node, b):
    start, _, delta = _range_args(node, b.graph)
    y = node.outputs[0]
    b.emit("range", y=b.ref(y), dtype=0 if b.dtype(y).name == "int32" else 1, n=b.shape(y)[0],
           start=start, delta=delta)
