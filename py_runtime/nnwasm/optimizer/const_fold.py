"""Constant folding through any node whose inputs are all constant, run by whichever provider
can (in the session's priority order; each compiles a one-node partition and runs it once), so
weights behind Cast / Transpose / Reshape / DequantizeLinear / Mul chains become initializers
before the providers are asked to run the graph. In Pyodide, where the numpy provider can't
compile, the WASM provider folds what it has kernels for and the rest stays in the graph.

Not folded: nodes with subgraphs, random ops, and expansions whose output is much larger than
their inputs (ConstantOfShape / Expand / Tile ...: onnxruntime leaves those too, keeping the
model small in memory)."""
from ..errors import FallbackUnavailable, NnwasmError
from ..partition import Partition
from ..symbolic import is_sym
from ..tensor import SymTensor, numel
from .cleanup import subgraphs

NEVER = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial",
         "Bernoulli", "Dropout"}
SMALL_OUTPUT_BYTES = 1 << 16   # any output this small folds, whatever its inputs


def _bytes(vi):
    return numel(vi.shape) * vi.dtype.size


def foldable(node, g):
    """True when the node computes a fixed value of acceptable size from constants alone."""
    named = [i for i in node.inputs if i]
    if node.op_type in NEVER or not named or subgraphs(node):
        return False
    if any(i not in g.initializers for i in named):
        return False
    if any(isinstance(g.initializers[i], SymTensor) and any(is_sym(v) for v in g.initializers[i].values)
           for i in named):
        return False   # values of symbolic dims (symbolic.py): computed per run, not fixed here
    outs = [g.values.get(o) for o in node.outputs if o]
    if not outs or any(v is None or v.dtype is None or not v.dtype.size or not v.is_static() or v.kind != "tensor"
                       or any(is_sym(d) for d in v.shape) for v in outs):   # initializers are tensors: sequences and optionals stay
        return False
    out_bytes = sum(_bytes(v) for v in outs)
    in_bytes = sum(g.initializers[i].numel * max(g.initializers[i].dtype.size, 1) for i in set(named))
    return out_bytes <= SMALL_OUTPUT_BYTES or out_bytes <= 2 * in_bytes


def evaluate(node, ctx):
    """{output name: TensorData} computed by the first provider that can, or None."""
    outs = [o for o in node.outputs if o]
    for p in ctx.providers:
        try:
            if p.capability(node, ctx.graph) is not None:
                continue
            runner = p.compile(Partition(p, [node], [], outs), ctx.graph)
        except FallbackUnavailable:
            continue
        except NnwasmError:
            return None     # left in the graph: it fails (or not) at run time, as without folding
        env = {}
        try:
            runner.run(env)
        except NnwasmError:
            return None
        finally:
            close = getattr(runner, "close", None)
            if close:
                close()
        return {o: env[o] for o in outs}
    return None


def fold_constants(ctx):
    g, keep, n = ctx.graph, [], 0
    for node in g.nodes:
        values = evaluate(node, ctx) if foldable(node, g) else None
        if values is None:
            keep.append(node)
        else:
            g.initializers.update(values)
            n += 1
    g.nodes = keep
    return n
