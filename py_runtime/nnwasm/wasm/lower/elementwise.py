"""Elementwise lowerings: broadcasting arithmetic (float32 on `binary`, int32/int64 on
`binary_int`), unary activations and math, the variadic Sum/Max/Min/Mean, and inference
BatchNormalization as a per-channel multiply-add. Comparisons, logic, Where and Cast are in
logic.py and cast.py."""
import math

from ...tensor import TensorData, numel
from .common import broadcast_args, dtype_of, f32_tensor, out_rank_at_most_6, tensors
from .epilogue import clip_bounds
from .movement import lower_copy


BINARY_KIND = {"Add": 0, "Sub": 1, "Mul": 2, "Div": 3, "Pow": 4, "Max": 5, "Min": 6, "PRelu": 7, "Mod": 8}
INT_KIND = {"Add": 0, "Sub": 1, "Mul": 2, "Div": 3, "Max": 4, "Min": 5, "Mod": 6, "FMod": 7}
# binary's kinds that binary_int has too (Mod fmod=1 is both's C remainder)
INT_OF_BINARY = {0: 0, 1: 1, 2: 2, 3: 3, 5: 4, 6: 5, 8: 7}
INT_DTYPES = {"uint8": 2, "int8": 3, "uint16": 4, "int16": 5, "int32": 6, "int64": 7, "uint32": 12, "uint64": 13}


def check_binary(node, g):
    return out_rank_at_most_6(node, g)


def check_prelu(node, g):
    """PRelu from opset 7 (numpy broadcasting); before it a [C] slope goes along axis 1."""
    if node.opset < 7:
        return "PRelu before opset 7 broadcasts its slope along the channel axis (numpy provider)"
    return check_binary(node, g)


def check_arith(node, g):
    """Add/Sub/Mul/Div/Max/Min/Mod/Sum/Mean: float32 (binary) or, but for Sum and Mean (float-only
    in ONNX), any integer type (binary_int); every input and the output of that one type."""
    xs = tensors(node)
    kinds = {dtype_of(g, n) for n in xs}
    if len(kinds) != 1:
        return f"mixed types {sorted(kinds)}"
    dt = kinds.pop()
    if dt in INT_DTYPES and node.op_type in INT_KIND:
        return out_rank_at_most_6(node, g)
    if dt != "float32":
        ints = "" if node.op_type not in INT_KIND else " or integers"
        return f"{node.op_type} on {dt}; the WASM kernels take float32{ints}"
    if node.op_type == "Mod" and dt == "float32" and not node.attr("fmod", 0):
        return "Mod of floats with fmod=0"
    return out_rank_at_most_6(node, g)


def check_neg(node, g):
    """Neg: float32 (unary) or a signed integer type (binary_int: 0 - x)."""
    dt = dtype_of(g, node.inputs[0])
    if dt in ("int8", "int16", "int32", "int64", "float32"):
        return None
    return f"Neg on {dt}; the WASM kernels take float32 or signed integers"


def emit_binary(b, kind, a, c, y):
    """y = a OP c, a and c (Refs) broadcast to y's shape; kind is a BINARY_KIND value. y may be a
    itself when a has y's shape. Integer y runs the same kind on binary_int."""
    dt = b.dtype(y.name).name
    if dt in INT_DTYPES:
        return emit_binary_int(b, INT_OF_BINARY[kind], a, c, y)
    b.emit("binary", kind=kind, a=a, b=c, y=y, **broadcast_args(b, y.name, (a, c), ("as", "bs")))


def emit_binary_int(b, kind, a, c, y):
    """binary_int of INT_KIND `kind` at y's integer type."""
    b.emit("binary_int", kind=kind, dtype=INT_DTYPES[b.dtype(y.name).name], a=a, b=c, y=y,
           **broadcast_args(b, y.name, (a, c), ("as", "bs")))


def lower_binary(node, b):
    a, c = (b.ref(n) for n in node.inputs[:2])
    y = b.ref(node.outputs[0])
    if node.op_type == "Mod" and not node.attr("fmod", 0):   # integers only (check_arith)
        return emit_binary_int(b, INT_KIND["Mod"], a, c, y)
    emit_binary(b, BINARY_KIND[node.op_type], a, c, y)


def lower_neg(node, b):
    x, y = node.inputs[0], node.outputs[0]
    dt = b.dtype(x)
    if dt.name == "float32":
        return lower_unary(node, b)
    zero = b.constant(TensorData(dt, (), bytes(dt.size)))
    emit_binary_int(b, INT_KIND["Sub"], zero, b.ref(x), b.ref(y))


def lower_variadic(node, b):
    """Sum/Max/Min(x0, x1, ...) = ((x0 OP x1) OP x2) ...: the first op broadcasts both into y, the
    rest combine into y in place. Mean is the Sum divided by the count."""
    xs = [x for x in node.inputs if x]
    y = b.ref(node.outputs[0])
    if len(xs) == 1:
        return lower_copy(node, b)
    kind = BINARY_KIND["Add" if node.op_type in ("Sum", "Mean") else node.op_type]
    emit_binary(b, kind, b.ref(xs[0]), b.ref(xs[1]), y)
    for x in xs[2:]:
        emit_binary(b, kind, y, b.ref(x), y)
    if node.op_type == "Mean":
        emit_binary(b, BINARY_KIND["Div"], y, b.constant(f32_tensor((), [float(len(xs))])), y)


def batch_norm_affine(node, g):
    """Inference BatchNormalization as y = x * s + t per channel: (s, t) as lists of floats, or
    the reason it can't run on WASM. s and t come from the C-long parameters, in Python."""
    if node.attr("spatial", 1) != 1 or node.attr("training_mode", 0) or len([o for o in node.outputs if o]) > 1:
        return "training-mode or non-spatial BatchNormalization"
    params = [g.initializers.get(n) for n in node.inputs[1:5]]
    c = g.values[node.inputs[0]].shape[1]
    if any(t is None or t.shape != (c,) for t in params):
        return "BatchNormalization parameters are not constant [C] tensors"
    scale, bias, mean, var = (t.tolist() for t in params)
    eps = float(node.attr("epsilon", 1e-5))
    s = [sc / math.sqrt(v + eps) for sc, v in zip(scale, var)]
    return s, [bi - m * k for bi, m, k in zip(bias, mean, s)]


def check_batch_norm(node, g):
    if len(g.values[node.inputs[0]].shape) < 2:
        return "input rank < 2"
    why = batch_norm_affine(node, g)
    return why if isinstance(why, str) else None


def lower_batch_norm(node, b):
    s, t = batch_norm_affine(node, b.graph)
    rank = len(b.shape(node.inputs[0]))
    per_channel = (len(s),) + (1,) * (rank - 2)
    y = b.ref(node.outputs[0])
    emit_binary(b, BINARY_KIND["Mul"], b.ref(node.inputs[0]), b.constant(f32_tensor(per_channel, s)), y)
    emit_binary(b, BINARY_KIND["Add"], y, b.constant(f32_tensor(per_channel, t)), y)


def check_clip(node, g):
    bounds = clip_bounds(node, g)
    if bounds is None:
        return "Clip min/max are not constant scalars"
    if not bounds[0] <= bounds[1]:   # also catches NaN
        return "Clip min > max (or NaN)"
    return None


def check_gelu(node, g):
    if node.attr("approximate", "none") not in ("none", "tanh"):
        return f"Gelu approximate={node.attr('approximate')!r}"
    return None


# op type -> (unary kind, (p0, p1) from the node's attributes); ops.def lists the kinds
_SELU_ALPHA, _SELU_GAMMA = 1.67326319217681884765625, 1.05070102214813232421875
UNARY = {
    "Sigmoid": (1, None), "Tanh": (2, None), "Exp": (3, None), "Log": (4, None), "Sqrt": (5, None),
    "Reciprocal": (6, None), "Neg": (7, None), "Abs": (8, None), "Erf": (9, None),
    "HardSigmoid": (12, lambda n: (n.attr("alpha", 0.2), n.attr("beta", 0.5))),
    "HardSwish": (13, None),
    "LeakyRelu": (14, lambda n: (n.attr("alpha", 0.01), 0.0)),
    "Elu": (15, lambda n: (n.attr("alpha", 1.0), 0.0)),
    "Softplus": (16, None),
    "Selu": (17, lambda n: (n.attr("alpha", _SELU_ALPHA), n.attr("gamma", _SELU_GAMMA))),
    "Softsign": (18, None), "Sign": (19, None), "Floor": (20, None), "Ceil": (21, None),
    "Round": (22, None), "Sin": (23, None), "Cos": (24, None), "Mish": (25, None),
}


def lower_unary(node, b):
    x, y = node.inputs[0], node.outputs[0]
    p0 = p1 = 0.0
    if node.op_type in ("Relu", "Clip"):
        kind, (p0, p1) = 0, clip_bounds(node, b.graph)
    elif node.op_type == "Gelu":
        kind = 11 if node.attr("approximate", "none") == "tanh" else 10
    else:
        kind, params = UNARY[node.op_type]
        if params:
            p0, p1 = (float(p) for p in params(node))
    b.emit("unary", kind=kind, x=b.ref(x), y=b.ref(y), count=numel(b.shape(y)), p0=p0, p1=p1)
