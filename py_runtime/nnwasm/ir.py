"""The graph IR every layer above model loading works on. Plain Python objects, no numpy.

Shapes are tuples whose entries are an int (known), a str (a symbolic dim such as "batch") or
None (unknown); a ValueInfo whose shape is None has unknown rank. While a variant is prepared for
symbolic dims (symbolic.py), a dim may also be a Sym: an expression known at every run, which
counts as known.

Control-flow nodes (If, Loop, Scan) hold subgraphs as Graph attributes. ONNX scoping is lexical:
a subgraph may read any value of its enclosing graphs by name; implicit_inputs() lists those
reads, and scoped() gives a subgraph a view in which they resolve.
"""
from collections import ChainMap
from dataclasses import dataclass, field

from .symbolic import Sym


@dataclass
class ValueInfo:
    name: str
    dtype: object = None          # dtypes.DType or None when unknown
    shape: tuple = None           # see module docstring
    kind: str = "tensor"          # or "sequence", "optional", "optional sequence" (values.py); dtype
                                  # and shape are then those of the (innermost) element tensor

    def is_static(self):
        return self.shape is not None and all(isinstance(d, (int, Sym)) for d in self.shape)


@dataclass
class Node:
    op_type: str
    inputs: list                  # value names; "" marks an omitted optional input
    outputs: list                 # value names; "" marks an omitted optional output
    name: str = ""
    domain: str = ""              # "" is ai.onnx
    attrs: dict = field(default_factory=dict)   # name -> int | float | str | bytes | list | TensorData | Graph
    opset: int = 0                # the model's opset version for this node's domain

    def attr(self, name, default=None):
        return self.attrs.get(name, default)

    def __str__(self):
        return f"{self.op_type} node '{self.name}'" if self.name else f"{self.op_type} node producing {self.outputs}"


@dataclass
class Graph:
    nodes: list                   # topologically sorted Nodes
    inputs: list                  # ValueInfo of the graph inputs that are not initializers
    outputs: list                 # ValueInfo of the graph outputs
    initializers: dict            # name -> TensorData (constant tensors, including overridable ones)
    values: dict = field(default_factory=dict)  # name -> ValueInfo for every value known
    opsets: dict = field(default_factory=dict)  # domain -> opset version ("" is ai.onnx)
    name: str = ""
    model_info: object = None     # onnx_io.load.ModelInfo on the main graph of a loaded model; None for subgraphs

    def producers(self):
        """value name -> the node that produces it."""
        return {o: n for n in self.nodes for o in n.outputs if o}

    def consumers(self):
        """value name -> nodes that read it, directly or from a subgraph (graph outputs are not
        nodes; see self.outputs)."""
        out = {}
        for n in self.nodes:
            for i in dict.fromkeys([i for i in n.inputs if i] + implicit_inputs(n)):
                out.setdefault(i, []).append(n)
        return out


@dataclass
class UnusableBody:
    """Stands in for a subgraph that fails shape inference for the shapes of this session (an If
    branch that is wrong for these inputs, as exporters leave for other input sizes): running it
    raises InvalidArgument with the reason."""
    template: "Graph"            # the subgraph as loaded, to specialise again for other shapes
    reason: str


def subgraphs(node):
    """[(attribute name, Graph)] of a node's subgraph attributes (If's branches, a Loop's body)."""
    out = []
    for k, v in node.attrs.items():
        if isinstance(v, Graph):
            out.append((k, v))
        elif isinstance(v, list) and v and all(isinstance(g, Graph) for g in v):
            out += [(k, g) for g in v]
    return out


def implicit_inputs(node):
    """Names of enclosing-graph values that the node's subgraphs read (at any depth), in order."""
    out = {}
    for _, g in subgraphs(node):
        for name in graph_outer_reads(g):
            out[name] = None
    return list(out)


def graph_outer_reads(g):
    """Names a graph reads that it does not define (inputs, initializers, its nodes' outputs)."""
    local = {v.name for v in g.inputs} | set(g.initializers)
    out = {}
    for n in g.nodes:
        for i in [i for i in n.inputs if i] + implicit_inputs(n):
            if i not in local:
                out[i] = None
        local.update(o for o in n.outputs if o)
    for v in g.outputs:
        if v.name not in local:
            out[v.name] = None
    return list(out)


def scoped(body, outer):
    """A view of subgraph `body` whose values and initializers fall back on those of `outer` (a
    Graph or a view), so shape lookups and weights of outer-scope reads resolve. Nodes, inputs and
    outputs are the body's own."""
    return Graph(body.nodes, body.inputs, body.outputs, ChainMap(body.initializers, outer.initializers),
                 ChainMap(body.values, outer.values), body.opsets, body.name)
