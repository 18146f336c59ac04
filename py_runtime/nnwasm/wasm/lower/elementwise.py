"""Elementwise lowerings: broadcasting binary ops, unary activations, Sum, and inference
BatchNormalization as a per-channel multiply-add."""
import math

from ...tensor import numel
from .common import broadcast_strides, f32_tensor
from .epilogue import clip_bounds
from .movement import lower_copy


BINARY_KIND = {"Add": 0, "Sub": 1, "Mul": 2, "Div": 3}


def check_binary(node, g):
    if len(g.values[node.outputs[0]].shape) > 6:
        return "more than 6 dimensions"
    return None


def emit_binary(b, kind, a, c, y):
    """y = a OP c, a and c (Refs) broadcast to y's shape. y may be a itself when a has y's shape."""
    out = b.shape(y.name)
    rank = max(len(out), 1)
    out = tuple(out) or (1,)
    dims = list(out) + [1] * (6 - rank)
    sa = broadcast_strides(b.shape(a.name), rank, out) + [0] * (6 - rank)
    sb = broadcast_strides(b.shape(c.name), rank, out) + [0] * (6 - rank)
    args = {"kind": kind, "a": a, "b": c, "y": y, "rank": rank}
    args.update({f"d{i}": dims[i] for i in range(6)})
    args.update({f"as{i}": sa[i] for i in range(6)})
    args.update({f"bs{i}": sb[i] for i in range(6)})
    b.emit("binary", **args)


def lower_binary(node, b):
    a, c = node.inputs
    emit_binary(b, BINARY_KIND[node.op_type], b.ref(a), b.ref(c), b.ref(node.outputs[0]))


def lower_sum(node, b):
    """Sum(x0, x1, ...) = ((x0 + x1) + x2) ...: the first add broadcasts both into y, the rest add
    into y in place."""
    xs = [x for x in node.inputs if x]
    y = b.ref(node.outputs[0])
    if len(xs) == 1:
        return lower_copy(node, b)
    emit_binary(b, BINARY_KIND["Add"], b.ref(xs[0]), b.ref(xs[1]), y)
    for x in xs[2:]:
        emit_binary(b, BINARY_KIND["Add"], y, b.ref(x), y)


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


def lower_unary(node, b):
    x, y = node.inputs[0], node.outputs[0]
    if node.op_type in ("Relu", "Clip"):
        kind, (p0, p1) = 0, clip_bounds(node, b.graph)
    else:
        kind, p0, p1 = {"Sigmoid": 1, "Tanh": 2}[node.op_type], 0.0, 0.0
    b.emit("unary", kind=kind, x=b.ref(x), y=b.ref(y), count=numel(b.shape(y)), p0=p0, p1=p1)
