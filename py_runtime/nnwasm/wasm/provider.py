"""WasmExecutionProvider: runs nodes on kernels.wasm. Its capability is the LOWERINGS table plus
the checks every kernel needs; a partition compiles to one plan, loaded once, run in one call.
Control flow (If/Loop/Scan with bodies that run on WASM) and tiny integer nodes computed on the
host split a partition into steps (wasm/control.py)."""
from ..errors import Unsupported
from ..host import get_host
from ..ir import subgraphs
from ..ops.registry import lookup
from ..partition import Deferred
from ..profiling import node_label
from ..tensor import numel
from .control import compile_nodes, control_refusal, host_op_refusal
from .lower.attention_concat import fuse as fuse_attention_concat
from .lower.empty import empty_refusal, has_empty, lower_empty
from .lowering import LOWERINGS, lowering_key
from .plan import PlanArgumentError, PlanBuilder
from .runner import PlanOp, WasmRunner


# wasm32 addresses 4 GiB and the plan ABI uses int32 offsets: keep every tensor well inside that.
MAX_TENSOR_BYTES = 1 << 30
MAX_ARENA_BYTES = (1 << 31) - (1 << 24)


class WasmExecutionProvider:
    name = "WasmExecutionProvider"

    def __init__(self, options=None):
        self.options = dict(options or {})
        # PlanBuilder.derived's cache, {} when the session will build plans for several input shapes
        # (symbolic dims): weights are then packed once, not per variant; None keeps nothing.
        self.derived = None
        # the kernels.wasm flavour its plans load on (host/flavours.py); set from SessionOptions by
        # the session, None: the process's default
        self.flavour = None
        self.budget = None   # the session's memory_limit.Budget, set by the session; None: no limit

    def capability(self, node, graph):
        if lookup(node.domain, node.op_type, node.opset) is None:
            # LOWERINGS rows follow the registry's semantics, which start at its since-versions
            return f"nnwasm knows no {node.op_type} at opset {node.opset}"
        why = _value_refusal(node, graph)
        if why:
            return why
        if subgraphs(node):
            return control_refusal(self, node, graph)
        why = self.plan_refusal(node, graph)
        return None if why is None or host_op_refusal(node, graph) is None else why

    def plan_refusal(self, node, graph):
        """None if the node lowers to plan ops, else why not."""
        entry = LOWERINGS.get(lowering_key(node))
        if entry is None:
            if lookup(node.domain, node.op_type, node.opset).fold is not None and not _all_constant(node, graph):
                # Shape, Range, ConstantOfShape... fed by symbolic dims fold away at the first run
                return Deferred(f"no WASM kernel for {node.op_type}, which may fold once input shapes are known")
            return f"no WASM kernel for {lowering_key(node)}"
        names = [n for n in node.inputs if n] + [n for n in node.outputs if n]
        empty = False
        for name in names:
            vi = graph.values.get(name)
            if vi is None or vi.dtype is None or not vi.is_static():
                return Deferred(f"the shape or type of '{name}' is not known at session creation")
            # an empty constant (Resize's roi) is read at plan build, never by a kernel
            empty = empty or (numel(vi.shape) == 0 and name not in graph.initializers)
            if numel(vi.shape) * max(vi.dtype.size, 1) > MAX_TENSOR_BYTES:
                return f"'{name}' is larger than kernels.wasm's {MAX_TENSOR_BYTES >> 20} MiB tensor limit"
        if empty and not getattr(entry[0], "empty_ok", False):
            # zero-size values: lower/empty.py decides, the op's own check never sees them; a check
            # with empty_ok (an attention's zero-length past) handles them itself
            return empty_refusal(node, graph, entry[0])
        return entry[0](node, graph)

    def compile(self, part, graph):
        return compile_nodes(self, part.nodes, graph, part.outputs)

    def compile_plan(self, nodes, graph, inputs, outputs):
        """One plan for straight-line nodes that all lower to plan ops, loaded into kernels.wasm."""
        b, plan, arena, io, ops = self.build_plan(nodes, graph, inputs, outputs, fill_weights=True, place_io=True)
        ins = [(n, 0 if n in b.placed else io[n], b.nbytes(n)) for n in inputs]
        outs = [(n, 0 if n in b.placed else io[n], b.dtype(n), b.shape(n)) for n in outputs]
        return WasmRunner(b.host, plan, arena, ins, outs, ops, b.sym_words, b.kept_bytes, sym_fills=b.sym_fills,
                          fills=b.fills, placed=b.placed, in_place=b.in_place, budget=self.budget,
                          capacity=b.capacity, lengths=b.lengths, shared=b.shared, relocs=b.relocs)

    def build_plan(self, nodes, graph, inputs, outputs, fill_weights=False, place_io=False):
        """(builder, plan bytes, arena bytes, {value: arena offset}, [PlanOp] of the run ops): the
        plan alone, not loaded; plan files (planfile.py) are written from it. fill_weights:
        see PlanBuilder."""
        b = PlanBuilder(graph, inputs, outputs)
        b.fill_weights, b.place_io = fill_weights, place_io
        b.host = get_host(self.flavour)   # lowerings may run kernels.wasm to fold constants
        b.derived_cache = self.derived
        b.users = graph.consumers()
        b.members = {id(n) for n in nodes}
        b.position = {o: i for i, n in enumerate(nodes) for o in n.outputs if o}
        ops = []
        fuse_attention_concat(b, nodes)
        for node in nodes:
            if id(node) not in b.fused:
                try:
                    lowering = LOWERINGS[lowering_key(node)]
                    if id(node) in b.lower_as:
                        b.lower_as[id(node)](b)
                    elif not (has_empty(node, graph) and not getattr(lowering[0], "empty_ok", False)
                            and lower_empty(node, b)):
                        lowering[1](node, b)
                except PlanArgumentError as e:
                    raise Unsupported(f"{node}: {e}") from None
                ops += [PlanOp(node_label(node), node.op_type, kernel) for kernel, _ in b.ops[len(ops):]]
        plan, arena, io = b.finish(MAX_ARENA_BYTES)
        return b, plan, arena, io, ops


def _all_constant(node, graph):
    return all(n in graph.initializers for n in node.inputs if n)


def _value_refusal(node, graph):
    """Why kernels.wasm can't hold one of the node's values (a sequence, an optional, a type from
    ml_dtypes such as bfloat16), else None."""
    for name in [n for n in node.inputs if n] + [n for n in node.outputs if n]:
        vi = graph.values.get(name)
        if vi is not None and vi.kind != "tensor":
            return f"'{name}' is a {vi.kind}, which kernels.wasm does not hold"
        if vi is not None and vi.dtype is not None and vi.dtype.ml_dtypes:
            return f"'{name}' is of type {vi.dtype.ort_name}, which kernels.wasm does not handle"
    return None
