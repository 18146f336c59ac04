"""Inference BatchNormalization folded into the Conv, ConvTranspose (group 1) or Gemm before it (onnxruntime's
ConvBNFusion): y = (conv(x) - mean) * s + bias with s = scale / sqrt(var + eps) becomes a Conv
with weights W * s (per output channel) and bias b * s + bias - mean * s. The per-channel numbers
are computed here in Python (M values); the weights, the big part, are multiplied by a Mul node
on constants that constant folding runs on a provider (WASM or numpy). If no provider can, the
BatchNormalization stays."""
import math
import struct
from dataclasses import replace

from ..dtypes import FLOAT32
from ..ir import Node, ValueInfo
from ..tensor import TensorData
from .const_fold import evaluate
from .rewrite import Readers, is_f32, splice


def _f32(t):
    return list(struct.unpack(f"<{t.numel}f", bytes(t.data)))


def _const(g, name, shape, values):
    g.initializers[name] = TensorData(FLOAT32, shape, struct.pack(f"<{len(values)}f", *values))
    g.values[name] = ValueInfo(name, FLOAT32, tuple(shape))


def _affine(g, bn, m):
    """(s, t) of an inference BatchNormalization with constant [m] float32 parameters, or None."""
    if bn.attr("training_mode", 0) or bn.attr("spatial", 1) != 1 or len([o for o in bn.outputs if o]) != 1:
        return None
    params = [g.initializers.get(x) for x in bn.inputs[1:5]]
    if len(params) != 4 or any(t is None or t.dtype != FLOAT32 or t.shape != (m,) for t in params):
        return None
    scale, bias, mean, var = (_f32(t) for t in params)
    eps = float(bn.attr("epsilon", 1e-5))
    if any(v + eps <= 0 for v in var):
        return None
    s = [sc / math.sqrt(v + eps) for sc, v in zip(scale, var)]
    return s, [b - mu * k for b, mu, k in zip(bias, mean, s)]


def _scaled_weight(ctx, w, s_shape, s):
    """Name of a new initializer holding w * s (s broadcast as s_shape), or None."""
    g = ctx.graph
    s_name, out = ctx.fresh(w + "_bn_scale"), ctx.fresh(w + "_bn")
    _const(g, s_name, s_shape, s)
    g.values[out] = ValueInfo(out, FLOAT32, g.initializers[w].shape)
    got = evaluate(Node("Mul", [w, s_name], [out], name=out, opset=max(g.opsets.get("", 13), 7)), ctx)
    del g.initializers[s_name], g.values[s_name]
    if got is None:
        del g.values[out]
        return None
    g.initializers[out] = got[out]
    return out


def fuse_batch_norm(ctx):
    g, r, n = ctx.graph, Readers(ctx.graph), 0
    for node in list(g.nodes):
        if (node.domain != "" or node.op_type not in ("Conv", "ConvTranspose", "Gemm") or len(node.inputs) < 2
                or not node.outputs or not node.outputs[0] or not is_f32(g, node.outputs[0])):
            continue   # a node missing inputs or outputs is left for shape inference to refuse
        bn = r.only(node.outputs[0])
        if bn is None or bn.op_type != "BatchNormalization" or bn.domain != "":
            continue
        w = node.inputs[1]
        y = g.values[node.outputs[0]].shape
        wt = g.initializers.get(w)
        if wt is None or wt.dtype != FLOAT32 or y is None or len(y) < 2 or not isinstance(y[1], int):
            continue
        m = y[1]
        affine = _affine(g, bn, m)
        if affine is None:
            continue
        s, t = affine
        bias = node.inputs[2] if len(node.inputs) > 2 and node.inputs[2] else None
        if node.op_type in ("Conv", "ConvTranspose"):
            # Conv weights are [M, C/group, k...]; ConvTranspose's [C, M/group, k...] (group 1 here)
            axis = 0 if node.op_type == "Conv" else 1
            if wt.shape[axis] != m or (axis and node.attr("group", 1) != 1) \
                    or (bias and (bias not in g.initializers or g.initializers[bias].shape != (m,))):
                continue
            old = _f32(g.initializers[bias]) if bias else [0.0] * m
            new_b = [b * k + c for b, k, c in zip(old, s, t)]
            s_shape = tuple(m if i == axis else 1 for i in range(len(wt.shape)))
            attrs = node.attrs
        else:
            beta, tb = float(node.attr("beta", 1.0)), node.attr("transB", 0)
            ct = g.initializers.get(bias) if bias else None
            if bias and (ct is None or ct.dtype != FLOAT32 or ct.numel not in (1, m) or len(ct.shape) > 2
                         or (len(ct.shape) == 2 and ct.shape[0] != 1)):
                continue
            old = (_f32(ct) * m if ct.numel == 1 else _f32(ct)) if bias else [0.0] * m
            new_b = [beta * b * k + c for b, k, c in zip(old, s, t)]
            s_shape = (m, 1) if tb else (1, m)
            attrs = {**node.attrs, "beta": 1.0}
        new_w = _scaled_weight(ctx, w, s_shape, s)
        if new_w is None:
            continue
        b_name = ctx.fresh(bn.outputs[0] + "_bias")
        _const(g, b_name, (m,), new_b)
        fused = replace(node, inputs=[node.inputs[0], new_w, b_name], outputs=[bn.outputs[0]], attrs=attrs)
        if splice(g, [node, bn], [fused]):
            n += 1
    return n


def fuse_conv_mul(ctx):
    """Conv followed by a Mul by a per-channel constant (onnxruntime's ConvMulFusion; older
    exporters write BatchNormalization so): the scale joins the weights and the bias."""
    from .fusions import per_channel
    g, r, n = ctx.graph, Readers(ctx.graph), 0
    for conv in list(g.nodes):
        if conv.op_type != "Conv" or conv.domain != "" or not is_f32(g, conv.outputs[0]):
            continue
        mul = r.only(conv.outputs[0])
        if mul is None or mul.op_type != "Mul" or mul.domain != "" or len(mul.inputs) != 2:
            continue
        y = g.values[conv.outputs[0]].shape
        w, wt = conv.inputs[1], g.initializers.get(conv.inputs[1])
        if wt is None or wt.dtype != FLOAT32 or y is None or not isinstance(y[1], int) \
                or g.values[mul.outputs[0]].shape != y:
            continue
        m = y[1]
        other = mul.inputs[1] if mul.inputs[0] == conv.outputs[0] else mul.inputs[0]
        s = per_channel(g, other, m, len(y))
        bias = conv.inputs[2] if len(conv.inputs) > 2 and conv.inputs[2] else None
        if s is None or wt.shape[0] != m or (bias and (bias not in g.initializers
                                                        or g.initializers[bias].shape != (m,))):
            continue
        new_w = _scaled_weight(ctx, w, (m,) + (1,) * (len(wt.shape) - 1), s)
        if new_w is None:
            continue
        inputs = [conv.inputs[0], new_w]
        if bias:
            b_name = ctx.fresh(mul.outputs[0] + "_bias")
            _const(g, b_name, (m,), [b * k for b, k in zip(_f32(g.initializers[bias]), s)])
            inputs.append(b_name)
        if splice(g, [conv, mul], [replace(conv, inputs=inputs, outputs=[mul.outputs[0]])]):
            n += 1
    return n
