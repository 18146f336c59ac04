"""ONNX node -> plan ops, one entry per op type in LOWERINGS (the WASM capability table).

Each entry is (check, lower): check(node, graph) returns None when kernels.wasm can run the node
and otherwise the reason it can't; lower(node, b) emits plan ops into a PlanBuilder b. The
provider has already checked what every entry needs: ai.onnx domain, static shapes, no empty
tensors, and float32 unless the entry is in ANY_DTYPE.
"""
import math
import struct

from ..dtypes import FLOAT32
from ..tensor import TensorData, numel
from .conv_like import check_conv, check_pool, lower_average_pool, lower_conv, lower_max_pool
from .epilogue import clip_bounds, fuse_activation

ANY_DTYPE = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Concat", "Identity", "Dropout", "Transpose"}


# --- elementwise ------------------------------------------------------------------------------

BINARY_KIND = {"Add": 0, "Sub": 1, "Mul": 2, "Div": 3}


def check_binary(node, g):
    if len(g.values[node.outputs[0]].shape) > 6:
        return "more than 6 dimensions"
    return None


def _strides(shape, out_rank, out_shape):
    """Element strides of `shape` aligned right against out_shape; 0 where broadcast."""
    shape = (1,) * (out_rank - len(shape)) + tuple(shape)
    strides, acc = [0] * out_rank, 1
    for i in range(out_rank - 1, -1, -1):
        strides[i] = 0 if shape[i] == 1 and out_shape[i] != 1 else acc
        acc *= shape[i]
    return strides


def emit_binary(b, kind, a, c, y):
    """y = a OP c, a and c (Refs) broadcast to y's shape. y may be a itself when a has y's shape."""
    out = b.shape(y.name)
    rank = max(len(out), 1)
    out = tuple(out) or (1,)
    dims = list(out) + [1] * (6 - rank)
    sa = _strides(b.shape(a.name), rank, out) + [0] * (6 - rank)
    sb = _strides(b.shape(c.name), rank, out) + [0] * (6 - rank)
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
    emit_binary(b, BINARY_KIND["Mul"], b.ref(node.inputs[0]), b.constant(_f32(per_channel, s)), y)
    emit_binary(b, BINARY_KIND["Add"], y, b.constant(_f32(per_channel, t)), y)


def _f32(shape, values):
    return TensorData(FLOAT32, shape, struct.pack(f"<{len(values)}f", *values))


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


# --- linear algebra ---------------------------------------------------------------------------

def check_gemm(node, g):
    if len(node.inputs) > 2 and node.inputs[2]:
        cs = g.values[node.inputs[2]].shape
        if len(cs) > 2:
            return "Gemm C of rank > 2"
    return None


def lower_gemm(node, b):
    a, w = node.inputs[:2]
    c = node.inputs[2] if len(node.inputs) > 2 and node.inputs[2] else None
    ta, tb = node.attr("transA", 0), node.attr("transB", 0)
    sa, sw = b.shape(a), b.shape(w)
    m, k = (sa[1], sa[0]) if ta else sa
    n = sw[0] if tb else sw[1]
    c_rs = c_cs = 0
    if c is not None:
        cs = (1,) * (2 - len(b.shape(c))) + tuple(b.shape(c))
        c_rs = cs[1] if cs[0] != 1 else 0
        c_cs = 1 if cs[1] != 1 else 0
    y, lo, hi = fuse_activation(node, b)
    b.emit("gemm", a=b.ref(a), b=b.ref(w), c=b.ref(c) if c else None, y=b.ref(y), m=m, n=n, k=k,
           trans_a=ta, trans_b=tb, alpha=float(node.attr("alpha", 1.0)), beta=float(node.attr("beta", 1.0)),
           c_rs=c_rs, c_cs=c_cs, act_min=lo, act_max=hi)


def _matmul_dims(g, node):
    sa, sb = g.values[node.inputs[0]].shape, g.values[node.inputs[1]].shape
    a2 = ((1,) + tuple(sa)) if len(sa) == 1 else tuple(sa)
    b2 = (tuple(sb) + (1,)) if len(sb) == 1 else tuple(sb)
    ba, bb = numel(a2[:-2]), numel(b2[:-2])
    return a2, b2, ba, bb


def check_matmul(node, g):
    a2, b2, ba, bb = _matmul_dims(g, node)
    if ba != bb and ba != 1 and bb != 1:
        return "MatMul batch broadcasting other than one side of batch 1"
    if ba == bb and ba > 1 and a2[:-2] != b2[:-2]:
        return "MatMul batch dims differ in shape"
    return None


def lower_matmul(node, b):
    a2, b2, ba, bb = _matmul_dims(b.graph, node)
    m, k, n = a2[-2], a2[-1], b2[-1]
    b.emit("matmul", a=b.ref(node.inputs[0]), b=b.ref(node.inputs[1]), y=b.ref(node.outputs[0]),
           batch=max(ba, bb), m=m, n=n, k=k, a_bs=m * k if ba > 1 else 0, b_bs=k * n if bb > 1 else 0)


# --- data movement ----------------------------------------------------------------------------

def lower_copy(node, b):
    nbytes = b.nbytes(node.outputs[0])
    b.emit("copy2d", src=b.ref(node.inputs[0]), dst=b.ref(node.outputs[0]), rows=1, row_bytes=nbytes,
           src_stride=nbytes, dst_stride=nbytes)


def _axis(node, rank, default):
    axis = node.attr("axis", default)
    return axis + rank if axis < 0 else axis


def lower_concat(node, b):
    y = node.outputs[0]
    out = b.shape(y)
    axis = _axis(node, len(out), 0)
    size = b.dtype(y).size
    outer, inner = numel(out[:axis]), numel(out[axis + 1:])
    at = 0
    for x in node.inputs:
        if not x:
            continue
        rows = b.shape(x)[axis] * inner * size
        if rows:
            b.emit("copy2d", src=b.ref(x), dst=b.ref(y, at), rows=outer, row_bytes=rows, src_stride=rows,
                   dst_stride=out[axis] * inner * size)
        at += rows


def _transpose_axes(shape, perm):
    """(dims, x element strides) in output order, with size-1 axes dropped and neighbours that
    stay contiguous in x merged: fewer, longer loops, and most permutations fit in 6 dims."""
    strides, acc = [0] * len(shape), 1
    for i in range(len(shape) - 1, -1, -1):
        strides[i], acc = acc, acc * shape[i]
    axes = []
    for p in perm:
        d, st = shape[p], strides[p]
        if d == 1:
            continue
        if axes and axes[-1][1] == d * st:      # the previous axis steps over exactly this one
            axes[-1] = (axes[-1][0] * d, st)
        else:
            axes.append((d, st))
    return axes or [(1, 1)]


def _perm(node, rank):
    perm = node.attr("perm")
    return list(perm) if perm is not None else list(range(rank - 1, -1, -1))


def check_transpose(node, g):
    shape = g.values[node.inputs[0]].shape
    return None if len(_transpose_axes(shape, _perm(node, len(shape)))) <= 6 else "more than 6 dims after merging"


def lower_transpose(node, b):
    x = node.inputs[0]
    axes = _transpose_axes(b.shape(x), _perm(node, len(b.shape(x))))
    d = [a[0] for a in axes] + [1] * (6 - len(axes))
    st = [a[1] for a in axes] + [0] * (6 - len(axes))
    args = {"x": b.ref(x), "y": b.ref(node.outputs[0]), "esize": b.dtype(x).size, "rank": len(axes)}
    args.update({f"d{i}": d[i] for i in range(6)})
    args.update({f"s{i}": st[i] for i in range(6)})
    b.emit("transpose", **args)


def lower_softmax(node, b):
    shape = b.shape(node.inputs[0])
    rank = len(shape)
    if node.opset < 13:
        axis = _axis(node, rank, 1)
        outer, mid, inner = numel(shape[:axis]), numel(shape[axis:]), 1
    else:
        axis = _axis(node, rank, -1)
        outer, mid, inner = numel(shape[:axis]), shape[axis], numel(shape[axis + 1:])
    b.emit("softmax", x=b.ref(node.inputs[0]), y=b.ref(node.outputs[0]), outer=outer, axis=mid, inner=inner,
           log=int(node.op_type == "LogSoftmax"))


def check_softmax(node, g):
    return None if g.values[node.inputs[0]].shape else "softmax of a scalar"


def lower_global_average_pool(node, b):
    n, c, *spatial = b.shape(node.inputs[0])
    b.emit("mean_rows", x=b.ref(node.inputs[0]), y=b.ref(node.outputs[0]), rows=n * c, inner=numel(spatial))


def check_global_pool(node, g):
    return None if len(g.values[node.inputs[0]].shape) >= 3 else "input rank < 3"


def _ok(node, g):
    return None


def check_dropout(node, g):
    """Inference Dropout is a copy (passes.drop_identities bypasses it unless it makes a graph
    output); its mask must be unread and training mode off."""
    if len(node.inputs) > 2 and node.inputs[2]:
        return "Dropout with a training_mode input"
    mask = node.outputs[1] if len(node.outputs) > 1 else ""
    if mask and (mask in g.consumers() or mask in {v.name for v in g.outputs}):
        return "Dropout's mask output is used"
    return None


def _single_output(check):
    def wrapped(node, g):
        if len([o for o in node.outputs if o]) != 1:
            return "optional outputs are not supported"
        return check(node, g)
    return wrapped


LOWERINGS = {
    "Add": (check_binary, lower_binary),
    "Sub": (check_binary, lower_binary),
    "Mul": (check_binary, lower_binary),
    "Div": (check_binary, lower_binary),
    "Sum": (check_binary, lower_sum),
    "BatchNormalization": (check_batch_norm, lower_batch_norm),
    "Relu": (_ok, lower_unary),
    "Clip": (check_clip, lower_unary),
    "Sigmoid": (_ok, lower_unary),
    "Tanh": (_ok, lower_unary),
    "Conv": (check_conv, lower_conv),
    "Gemm": (check_gemm, lower_gemm),
    "MatMul": (check_matmul, lower_matmul),
    "MaxPool": (_single_output(check_pool), lower_max_pool),
    "AveragePool": (check_pool, lower_average_pool),
    "GlobalAveragePool": (check_global_pool, lower_global_average_pool),
    "Softmax": (check_softmax, lower_softmax),
    "LogSoftmax": (check_softmax, lower_softmax),
    "Reshape": (_ok, lower_copy),
    "Flatten": (_ok, lower_copy),
    "Squeeze": (_ok, lower_copy),
    "Unsqueeze": (_ok, lower_copy),
    "Identity": (_ok, lower_copy),
    "Dropout": (check_dropout, lower_copy),
    "Concat": (_ok, lower_concat),
    "Transpose": (check_transpose, lower_transpose),
}
