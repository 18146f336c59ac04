"""compile_plan: an ONNX model -> .nnwp plan file bytes, and `python -m nnwasm compile`.

The session's own pipeline (load, the optimizer at the session options' level, shape inference
with the given shapes, partitioning) over the WASM provider alone; the one partition must be one
straight-line plan, which planfile.write stores with its I/O table. No numpy: Pyodide too.
"""
from . import optimizer, passes, planfile
from .errors import NnwasmError, Unsupported
from .inspect_model import _Nobody, _bind_shapes, parse_input_shape
from .ir import subgraphs
from .onnx_io.load import load_model
from .options import SessionOptions
from .partition import partition
from .wasm.provider import WasmExecutionProvider


def compile_plan(model, input_shapes=None, sess_options=None):
    """Plan file bytes for a model (path or bytes) whose nodes all run on WASM, with concrete
    shapes for its symbolic input dims ({name: (d0, d1, ...)}); Unsupported naming what is not."""
    from . import __version__
    options = sess_options or SessionOptions()
    wasm = WasmExecutionProvider()
    level = int(options.graph_optimization_level)
    graph = optimizer.optimize(load_model(model), "graph", level, [wasm])
    shapes = _bind_shapes(graph, {k: tuple(v) for k, v in dict(input_shapes or {}).items()})
    graph = optimizer.optimize(passes.infer_shapes(graph, shapes), "shaped", level, [wasm])
    reasons = {}
    parts = partition(graph, [wasm, _Nobody()], fallback_reasons=reasons)
    off = [f"{n} ({reasons.get(n.name or str(n), '')})" for p in parts if p.provider is not wasm for n in p.nodes]
    if off:
        raise Unsupported("a plan file runs on kernels.wasm alone; these nodes can't:\n  " + "\n  ".join(off))
    nodes = [n for p in parts for n in p.nodes]
    special = [str(n) for n in nodes if subgraphs(n) or wasm.plan_refusal(n, graph) is not None]
    if special:
        raise Unsupported("control flow and host-computed integer ops are not in plan files yet: "
                          + ", ".join(special))
    inputs = [v.name for v in graph.inputs]
    outputs = [v.name for v in graph.outputs]
    made = {o for n in nodes for o in n.outputs if o}
    bad = [o for o in outputs if o not in made]
    if bad:
        raise Unsupported(f"graph output(s) {bad} are initializers or graph inputs, not computed by a "
                          "node: not in plan files yet")
    if len(set(outputs)) != len(outputs):
        raise Unsupported(f"graph outputs {outputs} name a value twice: not in plan files yet")
    b, plan, _, io, ops = wasm.build_plan(nodes, graph, inputs, outputs)

    def values(names):
        return [planfile.Value(n, b.dtype(n), tuple(b.shape(n)), io[n]) for n in names]
    return planfile.write(plan, values(inputs), values(outputs), f"nnwasm {__version__}", graph.name, ops)


def main(argv):
    import argparse
    import sys
    ap = argparse.ArgumentParser(prog="python -m nnwasm compile",
                                 description="Compile an ONNX model whose nodes all run on WASM to a .nnwp plan file.")
    ap.add_argument("model", help="path to an .onnx file")
    ap.add_argument("-o", "--output", required=True, help="the .nnwp file to write")
    ap.add_argument("--input-shape", action="append", default=[], metavar="NAME=D0,D1,...",
                    help="a concrete shape for an input (required for inputs with symbolic dims; repeatable)")
    a = ap.parse_args(argv)
    try:
        given = dict(parse_input_shape(s) for s in a.input_shape)
        data = compile_plan(a.model, given)
        with open(a.output, "wb") as f:
            f.write(data)
    except (NnwasmError, OSError) as e:
        print(f"nnwasm compile: error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {a.output} ({len(data)} bytes)")
    return 0

