"""The graph IR every layer above model loading works on. Plain Python objects, no numpy.

Shapes are tuples whose entries are an int (known), a str (a symbolic dim such as "batch") or
None (unknown); a ValueInfo whose shape is None has unknown rank.
"""
from dataclasses import dataclass, field


@dataclass
class ValueInfo:
    name: str
    dtype: object = None          # dtypes.DType or None when unknown
    shape: tuple = None           # see module docstring

    def is_static(self):
        return self.shape is not None and all(isinstance(d, int) for d in self.shape)


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
        """value name -> nodes that read it (graph outputs are not nodes; see self.outputs)."""
        out = {}
        for n in self.nodes:
            for i in n.inputs:
                if i:
                    out.setdefault(i, []).append(n)
        return out
