"""WasmExecutionProvider: runs nodes on kernels.wasm. Its capability is the LOWERINGS table plus
the checks every kernel needs; a partition compiles to one plan, loaded once, run in one call."""
from ..host import get_host
from ..tensor import numel
from .lowering import LOWERINGS, lowering_key
from .plan import PlanBuilder
from .runner import WasmRunner


# wasm32 addresses 4 GiB and the plan ABI uses int32 offsets: keep every tensor well inside that.
MAX_TENSOR_BYTES = 1 << 30
MAX_ARENA_BYTES = (1 << 31) - (1 << 24)


class WasmExecutionProvider:
    name = "WasmExecutionProvider"

    def __init__(self, options=None):
        self.options = dict(options or {})

    def capability(self, node, graph):
        entry = LOWERINGS.get(lowering_key(node))
        if entry is None and node.domain not in ("", "ai.onnx"):
            return f"no WASM kernel for {node.domain}:{node.op_type}"
        if entry is None:
            return f"no WASM kernel for {node.op_type}"
        names = [n for n in node.inputs if n] + [n for n in node.outputs if n]
        for name in names:
            vi = graph.values.get(name)
            if vi is None or vi.dtype is None or not vi.is_static():
                return f"the shape or type of '{name}' is not known at session creation"
            if numel(vi.shape) == 0:
                return f"'{name}' is empty"
            if numel(vi.shape) * max(vi.dtype.size, 1) > MAX_TENSOR_BYTES:
                return f"'{name}' is larger than kernels.wasm's {MAX_TENSOR_BYTES >> 20} MiB tensor limit"
        return entry[0](node, graph)

    def compile(self, part, graph):
        b = PlanBuilder(graph, part.inputs, part.outputs)
        b.host = get_host()
        b.users = graph.consumers()
        b.members = {id(n) for n in part.nodes}
        for node in part.nodes:
            if id(node) not in b.fused:
                LOWERINGS[lowering_key(node)][1](node, b)
        plan, arena, io = b.finish(MAX_ARENA_BYTES)
        ins = [(n, io[n], b.nbytes(n)) for n in part.inputs]
        outs = [(n, io[n], b.dtype(n), b.shape(n)) for n in part.outputs]
        return WasmRunner(b.host, plan, arena, ins, outs, len(b.ops))
