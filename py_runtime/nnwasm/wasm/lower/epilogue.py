"""Fused epilogues: a Relu or Clip that only post-processes one op's output is folded into that
op's clamp arguments (act_min/act_max in ops.def), saving a pass over memory."""
import math

INF = math.inf


def _const(graph, name):
    return graph.initializers.get(name) if name else None


def clip_bounds(node, g):
    """(lo, hi) of a Relu or Clip node, or None when they are not compile-time constants."""
    if node.op_type == "Relu":
        return 0.0, INF
    if node.opset < 11:
        lo, hi = float(node.attr("min", -INF)), float(node.attr("max", INF))
        return (-INF if math.isnan(lo) else lo), (INF if math.isnan(hi) else hi)
    bounds = []
    for i, default in ((1, -INF), (2, INF)):
        name = node.inputs[i] if len(node.inputs) > i else ""
        if not name:
            bounds.append(default)
            continue
        t = _const(g, name)
        if t is None or t.numel != 1:
            return None
        v = float(t.tolist()[0])
        bounds.append(default if math.isnan(v) else v)   # a NaN bound clips nothing, as in onnxruntime
    return tuple(bounds)


def fuse_activation(node, b):
    """If the node's only consumer is a Relu/Clip of the same partition with constant bounds, fold
    it into this op's epilogue: returns (value to write, lo, hi)."""
    out = node.outputs[0]
    users = b.users.get(out, [])
    if len(users) == 1 and out not in b.outputs and users[0].op_type in ("Relu", "Clip") \
            and id(users[0]) in b.members:
        bounds = clip_bounds(users[0], b.graph)
        if bounds is not None and bounds[0] <= bounds[1]:
            b.fused.add(id(users[0]))
            return users[0].outputs[0], bounds[0], bounds[1]
    return out, -INF, INF
