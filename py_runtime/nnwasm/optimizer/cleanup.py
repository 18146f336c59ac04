"""Structural clean-ups: Constant nodes to initializers, Identity/Dropout bypassed, dead nodes
and unused initializers removed."""
from dataclasses import replace

from ..ir import implicit_inputs, subgraphs


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
        if (node.domain == "" and passthrough and node.inputs and node.inputs[0] and node.outputs
                and node.outputs[0] and node.outputs[0] not in graph_outputs):
            rename[node.outputs[0]] = node.inputs[0]
        else:
            keep.append(node)
    g.nodes = keep
    return len(rename)


def names_read(node):
    """Every value name a node reads, its subgraphs' reads of outer names included."""
    return {i for i in node.inputs if i} | set(implicit_inputs(node))


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


def drop_noop_casts(ctx):
    """Casts (and CastLikes) to the type their input already has (left by float16_to_float32, or written by
    exporters) forward their input. One that makes a graph output instead renames the output of
    the node before it, when nothing else reads that."""
    g = ctx.graph
    keep_names = {v.name for v in g.outputs} | {i for n in g.nodes if subgraphs(n) for i in names_read(n)}
    readers = {}
    for n in g.nodes:
        for i in names_read(n):
            readers[i] = readers.get(i, 0) + 1
    producer = {o: k for k, n in enumerate(g.nodes) for o in n.outputs if o}
    nodes, rename, count = list(g.nodes), {}, 0
    for k, node in enumerate(nodes):
        src = g.values.get(node.inputs[0]) if node.inputs else None
        if (node.domain != "" or node.op_type not in ("Cast", "CastLike") or src is None or src.dtype is None
                or not node.outputs or not node.outputs[0]):
            continue
        like = g.values.get(node.inputs[1]) if node.op_type == "CastLike" and len(node.inputs) > 1 else None
        to = node.attr("to") if node.op_type == "Cast" else like.dtype.onnx if like and like.dtype else None
        if src.dtype.onnx != to:
            continue
        x, y = node.inputs[0], node.outputs[0]
        if y not in keep_names:
            rename[y] = x
        elif x in producer and readers.get(x) == 1 and x not in keep_names:
            p = producer[x]
            nodes[p] = replace(nodes[p], outputs=[y if o == x else o for o in nodes[p].outputs])
        else:
            continue
        nodes[k] = None
        count += 1
    out = []
    for node in nodes:
        if node is not None:
            if any(i in rename for i in node.inputs):
                node = replace(node, inputs=[_resolve(rename, i) for i in node.inputs])
            out.append(node)
    g.nodes = out
    return count


def _resolve(rename, name):
    while name in rename:
        name = rename[name]
    return name
