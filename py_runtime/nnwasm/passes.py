"""Shape inference, between the optimizer's two phases (optimizer/__init__.py): the partitioner,
the WASM provider's capability checks and the shape-dependent optimizer passes read its
results. It needs no numpy."""

from .errors import InvalidModel, NnwasmError
from .ir import ValueInfo
from .ops.registry import lookup


def infer_shapes(graph, input_shapes=None):
    """Fills graph.values with the dtype and shape of every value, using the op registry.
    input_shapes (name -> shape) overrides the declared graph input shapes (binding symbolic dims).
    Shape computations (Shape -> Gather -> Concat -> Reshape ...) fold here, without numpy: their
    values become initializers and their nodes go, so later nodes see constant shapes. This
    mutates graph.nodes and graph.initializers: give each input-shape variant its own copies."""
    values = graph.values
    keep = []
    for vi in graph.inputs:
        shape = input_shapes.get(vi.name, vi.shape) if input_shapes else vi.shape
        values[vi.name] = ValueInfo(vi.name, vi.dtype, tuple(shape) if shape is not None else None)
    for name, t in graph.initializers.items():
        if name not in {vi.name for vi in graph.inputs}:
            values[name] = ValueInfo(name, t.dtype, t.shape)
    for node in graph.nodes:
        keep.append(node)
        op = lookup(node.domain, node.op_type, node.opset)
        if op is None:
            # No shape knowledge: outputs stay unknown; the partitioner reports the op as unsupported.
            for o in node.outputs:
                if o and o not in values:
                    values[o] = ValueInfo(o)
            continue
        ins = [values.get(i) if i else None for i in node.inputs]
        consts = [graph.initializers.get(i) if i else None for i in node.inputs]
        try:
            outs = op.infer(node, ins, consts)
        except NnwasmError:
            raise
        except Exception as e:  # a bug or an unforeseen attribute: report it against the node
            raise InvalidModel(f"shape inference failed for {node}: {type(e).__name__}: {e}") from e
        folded = op.fold(node, ins, consts) if op.fold is not None else None
        if folded and all(t is not None for name, t in zip(node.outputs, folded) if name):
            # The node goes; graph outputs it made are served from the initializers by the session.
            graph.initializers.update((name, t) for name, t in zip(node.outputs, folded) if name)
            keep.pop()
        for name, (dt, shape) in zip(node.outputs, outs):
            if name:
                declared = values.get(name)
                if shape is None and declared is not None:
                    shape = declared.shape
                if dt is None and declared is not None:
                    dt = declared.dtype
                values[name] = ValueInfo(name, dt, tuple(shape) if shape is not None else None)
    graph.nodes = keep
    return graph
