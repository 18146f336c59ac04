"""Structural clean-ups: Constant nodes to initializers, Identity/Dropout bypassed, dead nodes
and unused initializers removed."""
from dataclasses import replace

from ..ir import Graph


def constants_to_initializers(ctx):
    """Constant nodes become initializers, so providers see their values as weights."""
    g, keep = ctx.graph, []
    for node in g.nodes:
        if node.op_type == "Constant" and node.domain == "" and len(node.attrs) == 1 and "value" in node.attrs:
            g.initializers[node.outputs[0]] = node.attrs["value"]
        else:
            keep.append(node)
    n = len(g.nodes) - len(keep)
    g.nodes = keep
    return n


def drop_identities(ctx):
    """Identity and inference-mode Dropout forward their input; rename their consumers' inputs.
    A node whose output is a graph output keeps running (the output's name must exist). A
    Dropout whose mask output nobody reads counts as inference mode too (old exporters name it).
    An output a subgraph reads keeps its node too (subgraphs refer to outer values by name)."""
    g = ctx.graph
    graph_outputs = {v.name for v in g.outputs}
    graph_outputs |= {i for n in g.nodes if subgraphs(n) for i in names_read(n)}
    read = {i for node in g.nodes for i in node.inputs} | graph_outputs
    rename, keep = {}, []
    for node in g.nodes:
        if any(i in rename for i in node.inputs):
            node = replace(node, inputs=[rename.get(i, i) for i in node.inputs])
        passthrough = node.op_type == "Identity" or (
            node.op_type == "Dropout" and (len(node.outputs) < 2 or not node.outputs[1] or node.outputs[1] not in read)
            and (len(node.inputs) < 3 or not node.inputs[2]))
        if node.domain == "" and passthrough and node.outputs[0] not in graph_outputs:
            rename[node.outputs[0]] = node.inputs[0]
        else:
            keep.append(node)
    g.nodes = keep
    return len(rename)


def subgraphs(node):
    """The ir.Graphs among a node's attributes (If/Loop/Scan bodies)."""
    out = []
    for v in node.attrs.values():
        if isinstance(v, Graph):
            out.append(v)
        elif isinstance(v, list):
            out.extend(x for x in v if isinstance(x, Graph))
    return out


def names_read(node):
    """Every value name a node reads, its subgraphs' reads of outer names included."""
    names = {i for i in node.inputs if i}
    for sg in subgraphs(node):
        for n in sg.nodes:
            names |= names_read(n)
        names |= {o.name for o in sg.outputs}
    return names


def remove_dead_nodes(ctx):
    """Nodes whose outputs nobody reads and that make no graph output go (onnxruntime's
    unreachable-node elimination); then initializers nobody reads."""
    g = ctx.graph
    live = {v.name for v in g.outputs}
    keep = []
    for node in reversed(g.nodes):
        if any(o and o in live for o in node.outputs):
            keep.append(node)
            live |= names_read(node)
    removed = len(g.nodes) - len(keep)
    g.nodes = keep[::-1]
    unused = [k for k in g.initializers if k not in live]
    for k in unused:
        del g.initializers[k]
    return removed + len(unused)
