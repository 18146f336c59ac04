"""Shape inference, between the optimizer's two phases (optimizer/__init__.py): the partitioner,
the WASM provider's capability checks and the shape-dependent optimizer passes read its
results. It needs no numpy."""

from collections import ChainMap, deque
from dataclasses import replace

from .errors import InvalidModel, NnwasmError
from .ir import Graph, Node, UnusableBody, ValueInfo, implicit_inputs, subgraphs
from .ops.registry import lookup


def infer_shapes(graph, input_shapes=None, outer=None):
    """Fills graph.values with the dtype and shape of every value, using the op registry.
    input_shapes (name -> shape) overrides the declared graph input shapes (binding symbolic dims).
    Shape computations (Shape -> Gather -> Concat -> Reshape ...) fold here, without numpy: their
    values become initializers and their nodes go, so later nodes see constant shapes. This
    mutates graph.nodes and graph.initializers: give each input-shape variant its own copies.
    A control-flow node is replaced by a copy whose subgraphs are specialised to the shapes seen
    here (BodyScope); outer is (values, initializers) of the enclosing graphs, for a subgraph."""
    values = graph.values
    seen = ChainMap(values, outer[0]) if outer else values
    inits = ChainMap(graph.initializers, outer[1]) if outer else graph.initializers
    keep = []
    for vi in graph.inputs:
        shape = input_shapes.get(vi.name, vi.shape) if input_shapes else vi.shape
        values[vi.name] = replace(vi, shape=tuple(shape) if shape is not None else None)
    for name, t in graph.initializers.items():
        if name not in {vi.name for vi in graph.inputs}:
            values[name] = ValueInfo(name, t.dtype, t.shape)
    pending = deque(graph.nodes)
    while pending:
        node = pending.popleft()
        taken = _constant_branch(node, inits)
        if taken is not None:
            pending.extendleft(reversed(_inline(node, taken, graph)))
            continue
        if subgraphs(node):
            node = replace(node, attrs=dict(node.attrs))
        keep.append(node)
        op = lookup(node.domain, node.op_type, node.opset)
        if op is None:
            # No shape knowledge: outputs stay unknown; the partitioner reports the op as unsupported.
            for o in node.outputs:
                if o and o not in values:
                    values[o] = ValueInfo(o)
            continue
        ins = [seen.get(i) if i else None for i in node.inputs]
        consts = [inits.get(i) if i else None for i in node.inputs]
        try:
            if subgraphs(node):
                outs = op.infer(node, ins, consts, BodyScope(node, seen, inits))
            else:
                outs = op.infer(node, ins, consts)
        except NnwasmError:
            raise
        except Exception as e:  # a bug or an unforeseen attribute: report it against the node
            raise InvalidModel(f"shape inference failed for {node}: {type(e).__name__}: {e}") from e
        try:
            folded = op.fold(node, ins, consts) if op.fold is not None else None
        except NnwasmError:
            raise
        except Exception as e:  # constants that contradict the node (e.g. float Gather indices)
            raise InvalidModel(f"constant folding failed for {node}: {type(e).__name__}: {e}") from e
        if folded and all(t is not None for name, t in zip(node.outputs, folded) if name):
            # The node goes; graph outputs it made are served from the initializers by the session.
            graph.initializers.update((name, t) for name, t in zip(node.outputs, folded) if name)
            keep.pop()
        for name, (dt, shape, *kind) in zip(node.outputs, outs):   # infer may add a kind (ir.ValueInfo)
            if name:
                declared = values.get(name)
                if shape is None and declared is not None:
                    shape = declared.shape
                if dt is None and declared is not None:
                    dt = declared.dtype
                kind = kind[0] if kind else declared.kind if declared is not None else "tensor"
                values[name] = ValueInfo(name, dt, tuple(shape) if shape is not None else None, kind)
    graph.nodes = keep
    return graph


def _constant_branch(node, inits):
    """The branch an If with a constant condition takes, else None."""
    if node.op_type != "If" or node.domain != "" or not node.inputs or node.inputs[0] not in inits:
        return None
    cond = inits[node.inputs[0]]
    if cond.numel != 1 or not cond.dtype.struct:
        return None
    taken = node.attrs.get("then_branch" if cond.tolist()[0] else "else_branch")
    return taken.template if isinstance(taken, UnusableBody) else taken


def _inline(node, branch, graph):
    """The branch's nodes, to run in the If's place (its outputs renamed by Identity nodes); the
    other branch is never inferred (exporters' dead branches may not even type-check)."""
    for name, t in branch.initializers.items():
        graph.initializers[name] = t
        graph.values[name] = ValueInfo(name, t.dtype, t.shape)
    renames = [Node("Identity", [b.name], [o], f"{node.name or node.op_type}/{o}", "", {}, node.opset)
               for b, o in zip(branch.outputs, node.outputs) if o]
    return list(branch.nodes) + renames


class BodyScope:
    """What a control-flow op's infer uses to see into its subgraphs: specialise(attr, inputs)
    infers the subgraph with its inputs typed as given and the enclosing values visible, stores the
    specialised copy in the node, and returns it with its outputs' dtypes and shapes filled in."""

    def __init__(self, node, values, initializers):
        self.node, self.values, self.initializers = node, values, initializers
        self.templates = dict(node.attrs)

    def specialise(self, attr, inputs, may_fail=False):
        """inputs: [(dtype, shape)] per subgraph input; None entries keep the declared type.
        may_fail: a body that fails inference becomes an ir.UnusableBody and None is returned."""
        g = self.templates[attr]
        if isinstance(g, UnusableBody):
            g = g.template
        if len(inputs) != len(g.inputs):
            raise InvalidModel(f"{self.node}: its {attr} takes {len(g.inputs)} inputs, the op gives it {len(inputs)}")
        ins = []
        for vi, given in zip(g.inputs, inputs):
            dt, shape, *kind = given if given is not None else (None, None)
            ins.append(ValueInfo(vi.name, dt or vi.dtype, tuple(shape) if shape is not None else vi.shape,
                                 kind[0] if kind else vi.kind))
        spec = Graph(list(g.nodes), ins, g.outputs, dict(g.initializers), {}, g.opsets, g.name)
        try:
            infer_shapes(spec, None, (self.values, self.initializers))
        except InvalidModel as e:
            if not may_fail:
                raise
            self.node.attrs[attr] = UnusableBody(g, f"{self.node}: its {attr} can't run with these input "
                                                          f"shapes: {e}")
            return None
        seen = ChainMap(spec.values, self.values)
        outs = []
        for vi in g.outputs:
            got = seen.get(vi.name)
            dt = got.dtype if got is not None and got.dtype is not None else vi.dtype
            shape = got.shape if got is not None and got.shape is not None else vi.shape
            outs.append(ValueInfo(vi.name, dt, shape, got.kind if got is not None else vi.kind))
        spec.outputs = outs
        self.node.attrs[attr] = spec
        return spec


def refuse_invalid_bodies(declared_nodes, graph):
    """onnxruntime infers every subgraph at load with the types it declares (ONNX's graph attribute
    inferencing) and refuses the model when one fails, taken or not: an If branch that can't be
    right, a Loop body whose declared input shapes contradict its nodes. After the session's first
    inference (declared input shapes), so that nnwasm refuses what onnxruntime refuses: an If of
    `graph` (infer_shapes' result) whose branch failed, and a Loop whose body fails inferred with
    its declared input shapes where it declares them (`declared_nodes`: the nodes before inference,
    whose subgraphs are as loaded). Branches that fail only for the concrete shapes of a run stay
    unusable, not refused (a model's branch for other input sizes)."""
    for node in graph.nodes:
        for attr, g in node.attrs.items():
            if isinstance(g, UnusableBody):
                raise InvalidModel(f"{node}: its {attr} fails shape inference with the model's declared "
                                   f"shapes (onnxruntime refuses such a model at load): {g.reason}")
    loaded = {n.name: n for n in declared_nodes if n.op_type == "Loop" and n.name}
    for node in graph.nodes:
        template = loaded.get(node.name)
        spec = node.attrs.get("body") if node.op_type == "Loop" else None
        if template is None or not isinstance(spec, Graph) or not isinstance(template.attrs.get("body"), Graph):
            continue
        body = template.attrs["body"]
        if len(body.inputs) != len(spec.inputs) or all(vi.shape is None for vi in body.inputs):
            continue
        given = [(d.dtype or s.dtype, d.shape if d.shape is not None else s.shape, s.kind)
                 for d, s in zip(body.inputs, spec.inputs)]
        if [g[1] for g in given] == [s.shape for s in spec.inputs]:
            continue   # its declared shapes are the ones it was inferred with
        scope = BodyScope(replace(node, attrs=dict(template.attrs)), graph.values, graph.initializers)
        try:
            scope.specialise("body", given)
        except InvalidModel as e:
            raise InvalidModel(f"{node}: its body fails shape inference with the input shapes it declares "
                               f"(onnxruntime refuses such a model at load): {e}") from None
