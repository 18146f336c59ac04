"""Comparisons and logic (bool outputs, one byte 0/1): Equal/Less/Greater/LessOrEqual/
GreaterOrEqual and And/Or/Xor on `compare`, Not/IsNaN/IsInf on `unary_bool`, and Where."""
from ...tensor import numel
from .common import broadcast_args, dtype_of, out_rank_at_most_6

COMPARE_KIND = {"Equal": 0, "Less": 1, "Greater": 2, "LessOrEqual": 3, "GreaterOrEqual": 4,
                "And": 5, "Or": 6, "Xor": 7}
# the dtypes compare reads (ONNX codes): every fixed-size type but float16
COMPARE_DTYPES = {"float32": 1, "uint8": 2, "int8": 3, "uint16": 4, "int16": 5, "int32": 6, "int64": 7,
                  "bool": 9, "float64": 11, "uint32": 12, "uint64": 13}


def check_compare(node, g):
    """Equal/Less/... on two inputs of one type of COMPARE_DTYPES (And/Or/Xor: bool), output bool."""
    a, c = (dtype_of(g, n) for n in node.inputs[:2])
    if a != c:
        return f"inputs of different types ({a}, {c})"
    if node.op_type in ("And", "Or", "Xor") and a != "bool":
        return f"{node.op_type} on {a}; the WASM kernel takes bool"
    if a not in COMPARE_DTYPES:
        return f"{node.op_type} on {a}; the WASM kernel takes {', '.join(COMPARE_DTYPES)}"
    return out_rank_at_most_6(node, g)


def lower_compare(node, b):
    a, c = (b.ref(n) for n in node.inputs[:2])
    y = b.ref(node.outputs[0])
    b.emit("compare", kind=COMPARE_KIND[node.op_type], dtype=COMPARE_DTYPES[b.dtype(a.name).name],
           a=a, b=c, y=y, **broadcast_args(b, y.name, (a, c), ("as", "bs")))


def check_not(node, g):
    dt = dtype_of(g, node.inputs[0])
    return None if dt == "bool" else f"Not on {dt}; the WASM kernel takes bool"


def check_is(node, g):
    """IsNaN/IsInf: float32 input, bool output."""
    dt = dtype_of(g, node.inputs[0])
    if dt != "float32":
        return f"{node.op_type} on {dt}; the WASM kernel takes float32"
    if node.op_type == "IsInf" and not (node.attr("detect_positive", 1) or node.attr("detect_negative", 1)):
        return "IsInf detecting neither sign"
    return None


def lower_unary_bool(node, b):
    if node.op_type == "IsInf":
        pos, neg = node.attr("detect_positive", 1), node.attr("detect_negative", 1)
        kind = 2 if pos and neg else 3 if pos else 4
    else:
        kind = {"Not": 0, "IsNaN": 1}[node.op_type]
    y = node.outputs[0]
    b.emit("unary_bool", kind=kind, x=b.ref(node.inputs[0]), y=b.ref(y), count=numel(b.shape(y)))


def check_where(node, g):
    """Where: bool condition, x and y of one fixed-size type (1, 2, 4 or 8 bytes)."""
    c, x, y = (g.values[n].dtype for n in node.inputs[:3])
    if c.name != "bool":
        return f"condition is {c.name}"
    if x != y or x.size not in (1, 2, 4, 8):
        return f"x and y are {x.name} and {y.name}"
    return out_rank_at_most_6(node, g)


def lower_where(node, b):
    cond, x, y = (b.ref(n) for n in node.inputs[:3])
    out = b.ref(node.outputs[0])
    b.emit("where", esize=b.dtype(x.name).size, cond=cond, x=x, y=y, out=out,
           **broadcast_args(b, out.name, (cond, x, y), ("cs", "xs", "ys")))
