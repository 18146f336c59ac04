"""Assigns every node to a provider and groups nodes into partitions.

Pass 1: each node goes to the first provider, in priority order, whose capability accepts it.
Pass 2: the nodes are put in an order that keeps each provider's nodes together (Kahn's
topological sort preferring a ready node of the current partition's provider), and each maximal
run of one provider becomes a partition. Only the values that cross partitions leave WASM memory.
"""
from dataclasses import dataclass, field

from .errors import NotImplementedOp
from .ir import implicit_inputs


@dataclass
class Partition:
    provider: object                # the provider instance
    nodes: list
    inputs: list = field(default_factory=list)    # value names read from outside the partition
    outputs: list = field(default_factory=list)   # value names needed after it (later partitions, graph outputs)


class Deferred(str):
    """A capability refusal saying only that shapes are not known yet (symbolic input dims)."""


class TakenOnly(str):
    """A capability refusal that matters only if a run takes the path it names (an If branch that
    can't run while the other can): a node no provider accepts outright is that provider's, and
    the run that takes the path fails naming the node."""


def assign(graph, providers, defer=False, fallback_reasons=None):
    """node index -> provider; raises NotImplementedOp listing every node no provider accepts.
    defer (at the creation of a session whose input shapes are symbolic): a node that a provider
    refused only with a Deferred reason is provisionally that provider's; the first run with
    concrete shapes judges it again. fallback_reasons, a dict, gets node name (or description if
    unnamed) -> why the providers before the node's own refused it."""
    chosen, refused = [], []
    for node in graph.nodes:
        reasons, tentative = [], None
        for p in providers:
            why = p.capability(node, graph)
            if why is None:
                chosen.append(p)
                if reasons and fallback_reasons is not None:
                    fallback_reasons[node.name or str(node)] = "; ".join(reasons)
                break
            if tentative is None and (isinstance(why, TakenOnly) or (defer and isinstance(why, Deferred))):
                tentative = p
            reasons.append(f"{p.name}: {why}")
        else:
            chosen.append(tentative)
            if tentative is not None:
                continue
            refused.append(f"{node} (op {node.domain or 'ai.onnx'}::{node.op_type}, opset {node.opset}): "
                           + "; ".join(reasons))
    if refused:
        raise NotImplementedOp("no enabled provider can run these nodes:\n  " + "\n  ".join(refused))
    return chosen


def partition(graph, providers, fallback_reasons=None):
    chosen = assign(graph, providers, fallback_reasons=fallback_reasons)
    n = len(graph.nodes)
    producer = {o: i for i, node in enumerate(graph.nodes) for o in node.outputs if o}
    reads = [node.inputs + implicit_inputs(node) for node in graph.nodes]
    deps = [{producer[v] for v in r if v in producer} for r in reads]
    users = [[] for _ in range(n)]
    for i, d in enumerate(deps):
        for j in d:
            users[j].append(i)
    waiting = [len(d) for d in deps]
    ready = [i for i in range(n) if waiting[i] == 0]
    parts, current = [], None
    while ready:
        same = [i for i in ready if current is not None and chosen[i] is current.provider]
        i = min(same) if same else min(ready)
        ready.remove(i)
        if current is None or chosen[i] is not current.provider:
            current = Partition(chosen[i], [])
            parts.append(current)
        current.nodes.append(graph.nodes[i])
        for u in users[i]:
            waiting[u] -= 1
            if waiting[u] == 0:
                ready.append(u)
    _boundaries(graph, parts)
    return parts


def _boundaries(graph, parts):
    graph_outputs = [v.name for v in graph.outputs]
    for k, part in enumerate(parts):
        made = {o for node in part.nodes for o in node.outputs if o}
        read_later = {i for later in parts[k + 1:] for node in later.nodes
                      for i in node.inputs + implicit_inputs(node)}
        seen = set()
        for node in part.nodes:
            for i in node.inputs + implicit_inputs(node):   # subgraphs read enclosing values too
                if i and i not in made and i not in seen and i not in graph.initializers:
                    seen.add(i)
                    part.inputs.append(i)
        part.outputs = [o for node in part.nodes for o in node.outputs
                        if o and (o in read_later or o in graph_outputs)]
