"""Operator fusions, as onnxruntime's: Conv + bias Add, MatMul + Add -> Gemm (basic); Conv
[+ residual Add] + activation -> com.microsoft FusedConv, Gemm + activation -> FusedGemm
(extended). onnxruntime's own contrib op names, so an optimized model still loads there."""
import struct
from dataclasses import replace

from ..dtypes import FLOAT32
from ..ir import ValueInfo
from ..tensor import TensorData
from .rewrite import FLOAT_MAX, Readers, accept, const_values, is_f32, ms_node, splice

CONV_ATTRS = ("auto_pad", "dilations", "group", "kernel_shape", "pads", "strides")


def activation_params(g, node):
    """(onnxruntime activation name, [params]) for an activation node we can fuse, or None."""
    t = node.op_type
    if node.domain != "":
        return None
    if t in ("Relu", "Sigmoid", "Tanh"):
        return t, []
    if t == "LeakyRelu":
        return t, [float(node.attr("alpha", 0.01))]
    if t == "HardSigmoid":
        return t, [float(node.attr("alpha", 0.2)), float(node.attr("beta", 0.5))]
    if t == "Clip":
        if node.opset < 11:
            lo, hi = node.attr("min", -FLOAT_MAX), node.attr("max", FLOAT_MAX)
        else:
            bounds = []
            for i, default in ((1, -FLOAT_MAX), (2, FLOAT_MAX)):
                name = node.inputs[i] if len(node.inputs) > i else ""
                vals = const_values(g, name) if name else [default]
                if vals is None or len(vals) != 1:
                    return None
                v = float(vals[0])
                bounds.append(default if v != v else max(-FLOAT_MAX, min(FLOAT_MAX, v)))   # NaN: no bound
            lo, hi = bounds
        return (t, [float(lo), float(hi)]) if lo <= hi else None
    return None


def _f32_list(t):
    return list(struct.unpack(f"<{t.numel}f", bytes(t.data)))


def per_channel(g, name, m, rank):
    """The values of a constant broadcast over channel axis 1 of a rank-`rank` tensor: [m]."""
    t = g.initializers.get(name)
    if t is None or t.dtype != FLOAT32 or t.numel != m:
        return None
    shape = tuple(t.shape)
    while shape and shape[0] == 1 and len(shape) > rank - 1:
        shape = shape[1:]
    if shape != (m,) + (1,) * (rank - 2):
        return None
    return _f32_list(t)


def fuse_conv_bias_add(ctx):
    """Conv followed by an Add of a per-channel constant: the constant joins Conv's bias."""
    g, r, n = ctx.graph, Readers(ctx.graph), 0
    for conv in list(g.nodes):
        if conv.op_type != "Conv" or conv.domain != "" or not is_f32(g, conv.outputs[0]):
            continue
        add = r.only(conv.outputs[0])
        if add is None or add.op_type != "Add" or add.domain != "" or len(add.inputs) != 2:
            continue
        other = add.inputs[1] if add.inputs[0] == conv.outputs[0] else add.inputs[0]
        y = g.values[conv.outputs[0]]
        if y.shape is None or not isinstance(y.shape[1], int) or g.values[add.outputs[0]].shape != y.shape:
            continue
        m = y.shape[1]
        extra = per_channel(g, other, m, len(y.shape))
        bias = conv.inputs[2] if len(conv.inputs) > 2 and conv.inputs[2] else None
        old = _f32_list(g.initializers[bias]) if bias and bias in g.initializers else [0.0] * m
        if extra is None or (bias and bias not in g.initializers):
            continue
        name = ctx.fresh(conv.outputs[0] + "_bias")
        g.initializers[name] = TensorData(FLOAT32, (m,), struct.pack(f"<{m}f", *[a + b for a, b in zip(old, extra)]))
        g.values[name] = ValueInfo(name, FLOAT32, (m,))
        fused = replace(conv, inputs=[conv.inputs[0], conv.inputs[1], name], outputs=[add.outputs[0]])
        if splice(g, [conv, add], [fused]):
            n += 1
    return n


def matmul_add_to_gemm(ctx):
    """2-D MatMul + Add of a bias broadcastable to [M, N] -> Gemm (onnxruntime's MatMulAddFusion);
    N-D MatMul + Add stay as they are."""
    g, r, n = ctx.graph, Readers(ctx.graph), 0
    for mm in list(g.nodes):
        # Gemm before opset 7 broadcasts C only with its broadcast attribute: leave those
        if mm.op_type != "MatMul" or mm.domain != "" or mm.opset < 7 or not is_f32(g, *mm.inputs, mm.outputs[0]):
            continue
        add = r.only(mm.outputs[0])
        if add is None or add.op_type != "Add" or add.domain != "" or len(add.inputs) != 2:
            continue
        c = add.inputs[1] if add.inputs[0] == mm.outputs[0] else add.inputs[0]
        sa, sb, sy = (g.values[x].shape for x in (mm.inputs[0], mm.inputs[1], mm.outputs[0]))
        sc = g.values[c].shape if c in g.values else None
        if sa is None or sb is None or len(sa) != 2 or len(sb) != 2 or sc is None or not is_f32(g, c):
            continue
        if g.values[add.outputs[0]].shape != sy or len(sc) > 2:
            continue
        # Gemm broadcasts C to [M, N] one way only: C must not grow the output.
        if any(not (d == 1 or d == e) for d, e in zip(reversed(sc), reversed(sy))):
            continue
        gemm = replace(mm, op_type="Gemm", inputs=[mm.inputs[0], mm.inputs[1], c], outputs=[add.outputs[0]],
                       attrs={})
        if not accept(ctx, gemm, [mm, add]):
            continue
        if splice(g, [mm, add], [gemm]):
            n += 1
    return n


def fuse_conv_activation(ctx):
    """Conv [+ Add(residual Z)] + activation -> com.microsoft FusedConv (Y = act(Conv + Z))."""
    g, r, n, used = ctx.graph, Readers(ctx.graph), 0, set()
    for conv in list(g.nodes):
        if conv.op_type != "Conv" or conv.domain != "" or id(conv) in used or not is_f32(g, conv.outputs[0]):
            continue
        pattern, z = [conv], None
        nxt = r.only(conv.outputs[0])
        if nxt is not None and nxt.op_type == "Add" and nxt.domain == "" and len(nxt.inputs) == 2:
            other = nxt.inputs[1] if nxt.inputs[0] == conv.outputs[0] else nxt.inputs[0]
            if g.values.get(other) is not None and g.values[other].shape == g.values[conv.outputs[0]].shape \
                    and g.values[nxt.outputs[0]].shape == g.values[conv.outputs[0]].shape and other != conv.outputs[0]:
                pattern.append(nxt)
                z = other
                nxt = r.only(nxt.outputs[0])
        act = activation_params(g, nxt) if nxt is not None else None
        if act is None or any(id(p) in used for p in pattern + [nxt]):
            continue
        pattern.append(nxt)
        inputs = list(conv.inputs[:3]) + [""] * (3 - len(conv.inputs[:3]))
        if z:
            inputs.append(z)
        while inputs and not inputs[-1]:
            inputs.pop()
        attrs = {k: v for k, v in conv.attrs.items() if k in CONV_ATTRS}
        if act[1]:   # written only when there are numbers: an empty list has no attribute type
            attrs["activation_params"] = act[1]
        fused = ms_node(ctx, "FusedConv", inputs, [nxt.outputs[0]], conv.name,
                        **attrs, activation=act[0])
        if not accept(ctx, fused, pattern):
            continue
        used.update(id(p) for p in pattern)
        if splice(g, pattern, [fused]):
            n += 1
    return n


def fuse_gemm_activation(ctx):
    """Gemm + activation -> com.microsoft FusedGemm."""
    g, r, n = ctx.graph, Readers(ctx.graph), 0
    for gemm in list(g.nodes):
        if gemm.op_type != "Gemm" or gemm.domain != "" or not is_f32(g, gemm.outputs[0]):
            continue
        nxt = r.only(gemm.outputs[0])
        act = activation_params(g, nxt) if nxt is not None else None
        if act is None or act[0] not in ("Relu", "Sigmoid", "Tanh", "LeakyRelu"):
            continue
        extra = {"activation_alpha": act[1][0]} if act[1] else {}
        fused = ms_node(ctx, "FusedGemm", gemm.inputs, [nxt.outputs[0]], gemm.name,
                        **gemm.attrs, activation=act[0], **extra)
        if not accept(ctx, fused, [gemm, nxt]):
            continue
        if splice(g, [gemm, nxt], [fused]):
            n += 1
    return n
