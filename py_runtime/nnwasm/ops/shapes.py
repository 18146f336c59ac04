"""Shape and dtype arithmetic shared by the infer functions. Pure Python.

Dims are int (known), str (symbolic) or None (unknown); a shape of None has unknown rank.
"""
from .. import dtypes
from ..errors import InvalidModel, NotImplementedOp
from ..symbolic import Sym

BOOL = dtypes.BY_NAME["bool"]
INT64 = dtypes.INT64


def fail(node, msg):
    raise InvalidModel(f"{node}: {msg}")


def unsupported(node, msg):
    raise NotImplementedOp(f"{node}: {msg}")


def get(seq, i):
    return seq[i] if seq is not None and i < len(seq) else None


def need(node, inputs, i):
    """ValueInfo of a required input."""
    vi = get(inputs, i)
    if vi is None:
        fail(node, f"input {i} is required but missing")
    return vi


def need_index(node, inputs, i, what="indices"):
    """ValueInfo of a required int32/int64 index input; InvalidModel if its type is another."""
    vi = need(node, inputs, i)
    if vi.dtype is not None and getattr(vi.dtype, "name", None) not in ("int32", "int64"):
        fail(node, f"{what} (input {i}) are {vi.dtype.name}; they must be int32 or int64")
    return vi


def shape(vi):
    return None if vi is None or vi.shape is None else tuple(vi.shape)


def dtype(vi):
    return None if vi is None else vi.dtype


def rank(vi):
    s = shape(vi)
    return None if s is None else len(s)


def known(d):
    return isinstance(d, (int, Sym))


def static(s):
    return s is not None and all(isinstance(d, (int, Sym)) for d in s)


def numel(s):
    """Element count if every dim is known, else None."""
    if not static(s):
        return None
    n = 1
    for d in s:
        n *= d
    return n


def contiguous_strides(s):
    """the element strides of a row-major (C-contiguous) tensor of shape s"""
    out, n = [], 1
    for d in reversed(s):
        out.append(n)
        n *= d
    return out[::-1]


def same_dtype(node, inputs, idxs=None):
    """The common dtype of the given inputs (all present ones by default); InvalidModel if they differ."""
    idxs = range(len(inputs)) if idxs is None else idxs
    found = None
    for i in idxs:
        dt = dtype(get(inputs, i))
        if dt is None:
            continue
        if found is not None and dt != found:
            fail(node, f"inputs must share one element type, got {found.name} and {dt.name}")
        found = dt
    return found


def const_ints(consts, i):
    """A constant input's values as a list of Python ints, or None when it is not a constant."""
    t = get(consts, i)
    return None if t is None else [v if isinstance(v, Sym) else int(v) for v in t.tolist()]


def const_scalar(consts, i):
    t = get(consts, i)
    return None if t is None or t.numel != 1 else t.tolist()[0]


def axis(node, a, r, what="axis"):
    """Normalises a possibly negative axis against rank r (None r: returned as is if >= 0)."""
    if r is None:
        return a if a >= 0 else None
    if not -r <= a < r:
        fail(node, f"{what} {a} is out of range for rank {r}")
    return a + r if a < 0 else a


def axes(node, values, r, what="axes"):
    out = [axis(node, a, r, what) for a in values]
    if None not in out and len(set(out)) != len(out):
        fail(node, f"{what} {values} repeat an axis")
    return out


def merge_dims(node, a, b, context):
    """Two dims that must be equal: the better known one; InvalidModel if both known and differ."""
    if known(a) and known(b):
        if a != b:
            fail(node, f"dims {a} and {b} must be equal ({context})")
        return a
    if known(a):
        return a
    if known(b):
        return b
    return a if a is not None else b     # two symbols: a valid model makes them equal


def broadcast(node, *shapes):
    """Multidirectional (numpy) broadcasting of shapes; None if any rank is unknown."""
    if any(s is None for s in shapes):
        return None
    r = max((len(s) for s in shapes), default=0)
    out = []
    for k in range(r):
        dims = [s[len(s) - r + k] for s in shapes if len(s) - r + k >= 0]
        out.append(_broadcast_dim(node, dims, shapes))
    return tuple(out)


def _broadcast_dim(node, dims, shapes):
    big = []   # the distinct known dims other than 1 (no set: a symbolic dim's hash is a decision)
    for d in dims:
        if known(d) and d != 1 and not any(d == e for e in big):
            big.append(d)
    if len(big) > 1:
        fail(node, f"shapes {[list(s) for s in shapes]} do not broadcast")
    if big:
        return big.pop()
    others = [d for d in dims if not known(d)]
    if not others:
        return 1
    # A 1 broadcasts to whatever the symbolic/unknown dims are; two different symbols stay unknown.
    if None in others or len(set(others)) > 1:
        return None
    return others[0]


def typed(dt, shape, kind):
    """An infer result: (dtype, shape), with the kind (ir.ValueInfo.kind) added when the value is a
    sequence or an optional rather than a tensor."""
    return (dt, shape) if kind == "tensor" else (dt, shape, kind)


def dtype_attr(node, name, default=None):
    """An element-type attribute (Cast's `to`, ...) as a DType; NotImplementedOp if nnwasm lacks it."""
    code = node.attr(name, default)
    if code is None:
        fail(node, f"attribute {name} is required")
    dt = dtypes.from_onnx(int(code))
    if dt is None:
        unsupported(node, f"element type {code} is not supported")
    return dt


def ints_attr(node, name, default=None):
    v = node.attr(name, default)
    return None if v is None else [int(x) for x in v]
