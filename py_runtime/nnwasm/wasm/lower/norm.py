"""Normalisation lowerings: LayerNormalization, InstanceNormalization and GroupNormalization, each
one `norm` op over x viewed as [outer, groups, channels per group, inner] (see ops.def)."""
from ...tensor import numel
from .common import axis_attr


def _optional(node, i):
    return node.inputs[i] if len(node.inputs) > i and node.inputs[i] else None


def _layer_norm_view(node, g):
    """(outer, cpg, inner) of a LayerNormalization, or the reason it can't run. Scale and bias may
    broadcast over leading normalised dims (a [D] scale over [S, D]): those dims become cpg, the
    dims they span inner."""
    if node.attr("stash_type", 1) != 1:
        return "stash_type other than float32"
    xs = g.values[node.inputs[0]].shape
    axis = axis_attr(node, len(xs), -1)
    tail = tuple(xs[axis:])
    splits = set()
    for name in (node.inputs[1], _optional(node, 2)):
        if name is None:
            continue
        ps = list(g.values[name].shape)
        while ps and ps[0] == 1:
            ps.pop(0)
        split = len(tail) - len(ps)
        if split < 0 or tuple(ps) != tail[split:]:
            return f"scale/bias of shape {list(g.values[name].shape)} against normalised dims {list(tail)}"
        splits.add(split)
    if len(splits) > 1:
        return "scale and bias broadcast differently"
    split = splits.pop()
    return numel(xs[:axis]), numel(tail[:split]), numel(tail[split:])


def check_layer_norm(node, g):
    view = _layer_norm_view(node, g)
    return view if isinstance(view, str) else None


def lower_layer_norm(node, b):
    outer, cpg, inner = _layer_norm_view(node, b.graph)
    outs = list(node.outputs) + [""] * 2
    b.emit("norm", x=b.ref(node.inputs[0]), scale=b.ref(node.inputs[1]), bias=_ref(b, _optional(node, 2)),
           y=b.ref(outs[0]), mean=_ref(b, outs[1]), inv_std=_ref(b, outs[2]), outer=outer, groups=1, cpg=cpg,
           inner=inner, pg=0, pc=0, pi=1, epsilon=float(node.attr("epsilon", 1e-5)))


def _ref(b, name):
    return b.ref(name) if name else None


def _channels(node, g):
    """(n, c, spatial size) of an Instance/GroupNormalization input."""
    n, c, *spatial = g.values[node.inputs[0]].shape
    return n, c, numel(spatial)


def _per_group(node):
    """GroupNormalization before opset 21 scales per group, not per channel."""
    return node.op_type == "GroupNormalization" and node.opset < 21


def check_channel_norm(node, g):
    if len(g.values[node.inputs[0]].shape) < 2:
        return "input rank < 2"
    c = g.values[node.inputs[0]].shape[1]
    want = (node.attr("num_groups"),) if _per_group(node) else (c,)
    if any(g.values[p].shape != want for p in node.inputs[1:3]):
        return f"scale and bias are not of shape {list(want)}"
    return None


def lower_channel_norm(node, b):
    n, c, inner = _channels(node, b.graph)
    groups = node.attr("num_groups") if node.op_type == "GroupNormalization" else c
    cpg = c // groups
    pg, pc = (1, 0) if _per_group(node) else (cpg, 1)
    b.emit("norm", x=b.ref(node.inputs[0]), scale=b.ref(node.inputs[1]), bias=b.ref(node.inputs[2]),
           y=b.ref(node.outputs[0]), mean=None, inv_std=None, outer=n, groups=groups, cpg=cpg, inner=inner,
           pg=pg, pc=pc, pi=0, epsilon=float(node.attr("epsilon", 1e-5)))
