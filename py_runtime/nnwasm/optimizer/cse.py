"""Common subexpression elimination, as onnxruntime's (level 1): two nodes of the same op, domain
and attributes reading the same values compute the same thing, so the later one goes and its
readers read the first one's outputs.

Hand-written models lean on it: `(x - x.mean(-1, keepdim=True)) ** 2` next to
`(x - mean) / sqrt(var + eps)` traces to two Sub nodes (and `x.var()` to a second ReduceMean);
once they are one, the LayerNorm, GELU and attention fusions see the shapes they match. Small
constants count by value (two Constant 2.0s are the same input). Left alone: nodes reading a
weight (an initializer of more than SMALL elements: merging two Convs that share one would leave one
output with two BatchNorms, which then fold into neither), nodes of constants only (folded anyway;
merged, a constant read twice stops the Conv / BatchNorm folds), nodes with subgraphs, random ops, Q/DQ nodes, nodes whose outputs are graph outputs or read inside a subgraph (renaming
there would have to reach into bodies).
"""
from dataclasses import replace

from ..ir import Graph, subgraphs
from ..tensor import TensorData
from .cleanup import names_read

RANDOM = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli"}
# each QDQ node unit keeps its own DequantizeLinear (onnxruntime's EnsureUniqueDQForNodeUnit): fuse_qdq
# reads one DQ per consumer
KEEP = RANDOM | {"QuantizeLinear", "DequantizeLinear"}
SMALL = 64   # constants up to this many elements compare by value


def _attr_key(v):
    if isinstance(v, TensorData):
        return ("tensor", v.dtype.name, v.shape, bytes(v.data))
    if isinstance(v, list):
        return tuple(_attr_key(x) for x in v)
    if isinstance(v, float) and v != v:
        return "nan"
    return v


def common_subexpressions(ctx):
    g = ctx.graph
    graph_outputs = {v.name for v in g.outputs}
    fed = {v.name for v in g.inputs}
    info = g.model_info                         # overridable initializers (IR >= 4) may be fed: by name only
    if info is not None and info.ir_version >= 4:
        fed |= set(info.initializer_inputs)
    in_bodies = {i for n in g.nodes if subgraphs(n) for i in names_read(n)}
    keys = {}                                   # input name -> what it is, for comparing

    def input_key(name):
        if name not in keys:
            t = g.initializers.get(name)
            keys[name] = (("const", t.dtype.name, t.shape, bytes(t.data)) if t is not None and name not in fed
                          and t.numel <= SMALL else ("value", name))
        return keys[name]

    def big(name):   # a weight: two Convs sharing one (test models dedupe initializers) each fold their own BatchNorm
        t = g.initializers.get(name) if name else None
        return t is not None and t.numel > SMALL

    seen, rename, out, removed = {}, {}, [], 0
    for node in g.nodes:
        if any(i in rename for i in node.inputs):
            node = replace(node, inputs=[rename.get(i, i) for i in node.inputs])
        if (node.op_type in KEEP and node.domain in ("", "com.microsoft")) or subgraphs(node) or not node.outputs \
                or any(isinstance(v, Graph) for v in node.attrs.values()) or any(big(i) for i in node.inputs) \
                or all(i in g.initializers for i in node.inputs if i):   # constant folding's: shared, they stop folds
            out.append(node)
            continue
        try:
            key = (node.domain, node.op_type, node.opset, tuple(input_key(i) if i else "" for i in node.inputs),
                   tuple(sorted((k, _attr_key(v)) for k, v in node.attrs.items())), len(node.outputs))
            hash(key)
        except TypeError:
            out.append(node)
            continue
        first = seen.get(key)
        if first is None or any(o and (o in graph_outputs or o in in_bodies) for o in node.outputs) \
                or any(bool(a) != bool(b) for a, b in zip(first.outputs, node.outputs)):
            seen.setdefault(key, node)
            out.append(node)
            continue
        for a, b in zip(first.outputs, node.outputs):
            if b:
                rename[b] = a
        removed += 1
    g.nodes = out
    return removed
