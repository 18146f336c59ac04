"""Integer bit ops: BitShift, BitwiseAnd/Or/Xor/Not, and BitCast (a reinterpretation of the bytes
as another element type of the same width)."""
from .. import dtypes
from . import shapes as S
from .elementwise import infer_binary, infer_unary
from .registry import op

UNSIGNED = ("uint8", "uint16", "uint32", "uint64")
INTEGERS = UNSIGNED + ("int8", "int16", "int32", "int64")


def _integers(node, inputs, allowed=INTEGERS):
    for vi in inputs:
        if vi is not None and vi.dtype is not None and vi.dtype.name not in allowed:
            S.fail(node, f"needs integer inputs ({', '.join(allowed)}), got {vi.dtype.name}")


def infer_bitshift(node, inputs, consts):
    if node.attr("direction") not in ("LEFT", "RIGHT"):
        S.fail(node, f"direction must be LEFT or RIGHT, got {node.attr('direction')!r}")
    _integers(node, inputs, UNSIGNED if node.opset < 28 else INTEGERS)   # 28 adds signed types
    return infer_binary(node, inputs, consts)


def bit_shift(node, x, y):
    """A shift by a negative amount or by the width or more gives what the sign fill alone gives:
    -1 for a right shift of a negative x, else 0 (opset 28's definition; 11 leaves it undefined)."""
    import numpy as np
    bits = x.dtype.itemsize * 8
    ok = (y >= 0) & (y < bits)
    amount = np.where(ok, y, 0).astype(x.dtype)
    if node.attr("direction") == "RIGHT":
        out = np.right_shift(x, amount)
        fill = np.where(x < 0, -1, 0).astype(x.dtype) if x.dtype.kind == "i" else np.zeros((), x.dtype)
        return np.where(ok, out, fill).astype(x.dtype)
    unsigned = np.dtype(f"u{x.dtype.itemsize}")    # a signed left shift wraps: bits past the sign are lost
    out = np.left_shift(x.view(unsigned),
                        amount.astype(unsigned)).astype(unsigned).view(x.dtype)
    return np.where(ok, out, 0).astype(x.dtype)


for _since in (11, 28):
    op("BitShift", _since, infer_bitshift)(bit_shift)


def _infer_bitwise(node, inputs, consts):
    _integers(node, inputs)
    return infer_binary(node, inputs, consts) if node.op_type != "BitwiseNot" else infer_unary(node, inputs, consts)


for _name, _fn in (("BitwiseAnd", "bitwise_and"), ("BitwiseOr", "bitwise_or"), ("BitwiseXor", "bitwise_xor"),
                   ("BitwiseNot", "bitwise_not")):
    def _kernel(node, *xs, _fn=_fn):
        import numpy as np
        return getattr(np, _fn)(*xs)
    _kernel.__name__ = _name
    op(_name, 18, _infer_bitwise)(_kernel)


def infer_bitcast(node, inputs, consts):
    x = S.need(node, inputs, 0)
    to = S.dtype_attr(node, "to")
    string = dtypes.BY_NAME["object"]
    if to == string or x.dtype == string:
        S.fail(node, "cannot bit-cast from or to string")
    if x.dtype is not None and x.dtype.size != to.size:
        S.fail(node, f"bit-casts between types of one width only, got {x.dtype.name} and {to.name}")
    return [(to, S.shape(x))]


@op("BitCast", 26, infer_bitcast)
def bit_cast(node, x):
    import numpy as np
    to = np.dtype(S.dtype_attr(node, "to").name)
    if x.dtype == object or to.itemsize != x.dtype.itemsize:
        S.fail(node, f"cannot bit-cast {x.dtype} to {to}")
    return np.ascontiguousarray(x).reshape(-1).view(to).reshape(x.shape)
