"""Activations written out by hand, as one op (onnxruntime's HardSwish fusion does the first):

HardSwish:  x * relu6(x + 3) / 6 in its exported orders: Div(Mul(x, c), 6) | Mul(Mul(x, c), 1/6) |
            Mul(x, Div(c, 6)) | Mul(x, Mul(c, 1/6)) with c = Clip(Add(x, 3), 0, 6) (bounds as
            attributes before opset 11, as inputs after), and Mul(x, HardSigmoid(x, 1/6, 0.5))
            (F.hardsigmoid) -> HardSwish(x) from opset 14; before it (no HardSwish in ai.onnx),
            the written-out forms become Mul(x, HardSigmoid(x, alpha=1/6, beta=0.5)): two passes
            over the tensor instead of four.
"""
from ..ir import Node, ValueInfo
from .fusions import activation_params
from .rewrite import close, const_scalar, is_f32
from .transformer import _replace_matches


def _sixth(g, node, name):
    """Whether node scales `name` by 1/6 (Div by 6 or Mul by 1/6)."""
    if node.op_type == "Div":
        return node.inputs[0] == name and close(const_scalar(g, node.inputs[1]), 6.0, 1e-6)
    other = node.inputs[1] if node.inputs[0] == name else node.inputs[0]
    return close(const_scalar(g, other), 1 / 6, 1e-6)


def _relu6_of_x_plus_3(g, m, name):
    """(x, [add, clip]) if name = Clip(Add(x, 3), 0, 6) read only once, else None."""
    clip = m.op(name, "Clip")
    if clip is None or len(m.r.of(name)) != 1:
        return None
    act = activation_params(g, clip)
    if act is None or act[1] != [0.0, 6.0]:
        return None
    add = m.op(clip.inputs[0], "Add")
    if add is None or len(m.r.of(add.outputs[0])) != 1:
        return None
    x = next((i for i in add.inputs if close(const_scalar(g, m.other(add, i)), 3.0, 1e-6)), None)
    return (x, [add, clip]) if x is not None else None


def _hard_swish_at(ctx, mul, m):
    """At the Mul that multiplies x by the gate (or by the gate's sixth)."""
    g = ctx.graph
    for gate in mul.inputs:
        x = m.other(mul, gate)
        if x is None or x == gate:
            continue
        hs = m.op(gate, "HardSigmoid")
        if hs is not None and hs.inputs[0] == x and len(m.r.of(gate)) == 1 \
                and close(hs.attr("alpha", 0.2), 1 / 6, 1e-6) and close(hs.attr("beta", 0.5), 0.5, 1e-6):
            if g.opsets.get("", 0) < 14:
                return None   # already the best form there is below opset 14
            pattern, y = [hs, mul], mul.outputs[0]
            break
        scaled = m.op(gate, "Div", "Mul")   # x * (relu6(x + 3) / 6)
        if scaled is not None and len(m.r.of(gate)) == 1:
            c = next((i for i in scaled.inputs if _relu6_of_x_plus_3(g, m, i)), None)
            found = _relu6_of_x_plus_3(g, m, c) if c and _sixth(g, scaled, c) else None
            if found and found[0] == x:
                pattern, y = found[1] + [scaled, mul], mul.outputs[0]
                break
        found = _relu6_of_x_plus_3(g, m, gate)   # (x * relu6(x + 3)) / 6
        last = m.reader(mul.outputs[0], "Div", "Mul")
        if found and found[0] == x and last is not None and _sixth(g, last, mul.outputs[0]):
            pattern, y = found[1] + [mul, last], last.outputs[0]
            break
    else:
        return None
    if not is_f32(g, x, y):
        return None
    opset = g.opsets.get("", 0)
    if opset >= 14:
        return pattern, Node("HardSwish", [x], [y], name=mul.name, opset=opset)
    gate = ctx.fresh(mul.name + "_hard_sigmoid")
    g.values[gate] = ValueInfo(gate, g.values[x].dtype, g.values[x].shape)
    return pattern, [Node("HardSigmoid", [x], [gate], name=gate, attrs={"alpha": 1 / 6, "beta": 0.5}, opset=opset),
                     Node("Mul", [x, gate], [y], name=mul.name, opset=opset)]


def fuse_hard_swish(ctx):
    return _replace_matches(ctx, lambda n: n.op_type == "Mul", _hard_swish_at)
