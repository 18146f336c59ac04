"""NumpyExecutionProvider: runs any node the op registry has a numpy implementation for, one node
at a time. It is the fallback for what the WASM provider can't run, and the reference the WASM
kernels are tested against. numpy is imported only when a partition of it is compiled, so a
model that runs entirely on WASM never imports numpy (Pyodide has none)."""
from .. import dtypes
from ..errors import FallbackUnavailable, InvalidArgument, InvalidModel, NnwasmError
from ..ir import implicit_inputs, subgraphs
from ..ops.control import numpy_refusal
from ..ops.registry import lookup
from ..profiling import node_label
from ..values import from_numpy, to_numpy


class NumpyExecutionProvider:
    name = "NumpyExecutionProvider"

    def __init__(self, options=None):
        self.options = dict(options or {})

    def capability(self, node, graph):
        op = lookup(node.domain, node.op_type, node.opset)
        if op is None or op.numpy is None:
            return f"no numpy implementation of {node.domain or 'ai.onnx'}::{node.op_type} at opset {node.opset}"
        return numpy_refusal(node)

    def compile(self, part, graph):
        try:
            import numpy  # noqa: F401
        except ImportError:
            names = ", ".join(str(n) for n in part.nodes)
            raise FallbackUnavailable(
                f"numpy is not available here, and these nodes need the numpy fallback provider: {names}") from None
        return _NumpyRunner(part, graph)


class _NumpyRunner:
    def __init__(self, part, graph):
        self.part = part
        self.ops = [lookup(n.domain, n.op_type, n.opset) for n in part.nodes]
        self.consts = {k: t.to_numpy() for k, t in graph.initializers.items()
                       if any(k in n.inputs or k in implicit_inputs(n) for n in part.nodes)}
        self.outputs = set(part.outputs)
        # ml_dtypes registers its types' names with numpy (np.dtype("bfloat16") in a kernel) when
        # imported; where it is missing, this refuses now, naming the type
        for dt in {vi.dtype for n in part.nodes for v in n.inputs + n.outputs
                   for vi in [graph.values.get(v)] if vi is not None and vi.dtype is not None and vi.dtype.ml_dtypes}:
            dtypes.numpy_dtype(dt)

    def run(self, env, prof=None):
        vals = dict(self.consts)
        for name in self.part.inputs:
            vals[name] = to_numpy(env[name])
        for node, op in zip(self.part.nodes, self.ops):
            t0 = prof and prof.clock()
            args = [vals[i] if i else None for i in node.inputs]
            try:
                outs = op.numpy(node, *args, scope=vals) if subgraphs(node) else op.numpy(node, *args)
            except NnwasmError:
                raise
            except Exception as e:
                raise InvalidArgument(f"{node} failed in NumpyExecutionProvider: {type(e).__name__}: {e}") from e
            if any(node.outputs[len(outs):]):
                raise InvalidModel(f"{node} names {len(node.outputs)} outputs {node.outputs}; {node.op_type} "
                                   f"produces {len(outs)}")
            for name, arr in zip(node.outputs, outs):
                if name:
                    vals[name] = arr
            if prof:
                prof.node(node_label(node), node.op_type, op.numpy.__name__, NumpyExecutionProvider.name, t0,
                          prof.clock())
        for name in self.outputs:
            env[name] = from_numpy(vals[name])
