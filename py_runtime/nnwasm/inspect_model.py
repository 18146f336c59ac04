"""What runs where, and why: the partitioning of a model for given input shapes, without running
it, without numpy (kernels.wasm only folds constants, as at session creation). `python -m nnwasm
inspect MODEL` prints it; report() returns it.

The session's own pipeline is followed (load, the optimizer at the default level, infer_shapes
with the input shapes,
partition over the default providers), so the answer is the one a session would get.
"""
import os
from collections import Counter

from . import optimizer, passes
from .errors import InvalidArgument, NnwasmError
from .onnx_io.load import load_model
from .options import SessionOptions
from .partition import partition
from .session import _resolve_providers
from .tensor import numel

NO_PROVIDER = "(no provider)"


class _Nobody:
    """Takes the nodes no real provider accepts, so the report lists them instead of failing."""
    name = NO_PROVIDER

    def capability(self, node, graph):
        return None


def parse_input_shape(text):
    """'name=d0,d1,...' -> (name, (d0, d1, ...)) with positive int dims."""
    name, eq, dims = text.partition("=")
    if not eq or not name:
        raise InvalidArgument(f"--input-shape '{text}': expected NAME=D0,D1,... (e.g. input_ids=1,16)")
    try:
        shape = tuple(int(d) for d in dims.split(",")) if dims.strip() else ()
    except ValueError:
        raise InvalidArgument(f"--input-shape '{text}': dimensions must be integers separated by commas") from None
    if any(d <= 0 for d in shape):
        raise InvalidArgument(f"--input-shape '{text}': dimensions must be positive")
    return name, shape


def _bind_shapes(graph, given):
    inputs = {vi.name: vi for vi in graph.inputs}
    unknown = [n for n in given if n not in inputs]
    if unknown:
        raise InvalidArgument(f"--input-shape names unknown input(s) {unknown}; the model's inputs are {list(inputs)}")
    shapes = {}
    for name, vi in inputs.items():
        if name in given:
            shape = given[name]
            if vi.shape is not None and len(vi.shape) != len(shape):
                raise InvalidArgument(f"--input-shape {name}: rank {len(shape)}, but the model declares "
                                      f"rank {len(vi.shape)} (shape {list(vi.shape)})")
            fixed = [i for i, (g, d) in enumerate(zip(shape, vi.shape or ())) if isinstance(d, int) and d != g]
            if fixed:
                raise InvalidArgument(f"--input-shape {name}={list(shape)} contradicts the declared shape "
                                      f"{list(vi.shape)} at dimension {fixed[0]}")
            shapes[name] = shape
        elif vi.shape is None or not vi.is_static():
            raise InvalidArgument(f"input '{name}' has shape {vi.shape if vi.shape is None else list(vi.shape)} "
                                  f"with symbolic or unknown dims: give it with --input-shape {name}=D0,D1,...")
        else:
            shapes[name] = tuple(vi.shape)
    return shapes


def _nbytes(graph, name):
    vi = graph.values.get(name)
    if vi is None or vi.dtype is None or not vi.is_static():
        return None
    return numel(vi.shape) * vi.dtype.size


def report(model, input_shapes=None):
    """A dict: input shapes, nodes, per provider op counts, fallback nodes with reasons, the
    partitions in order with the bytes that cross into/out of each, and the share on WASM."""
    if isinstance(model, (str, os.PathLike)) and not os.path.isfile(model):
        raise InvalidArgument(f"no such model file: {os.fspath(model)}")
    options = SessionOptions()   # as a session with the defaults: the optimizer at ORT_ENABLE_ALL
    providers = _resolve_providers(None, None, options)
    level = int(options.graph_optimization_level)
    graph = optimizer.optimize(load_model(model), "graph", level, providers)
    shapes = _bind_shapes(graph, dict(input_shapes or {}))
    graph = optimizer.optimize(passes.infer_shapes(graph, shapes), "shaped", level, providers)
    reasons = {}
    parts = partition(graph, providers + [_Nobody()], fallback_reasons=reasons)
    made_in = {o: k for k, p in enumerate(parts) for n in p.nodes for o in n.outputs if o}
    graph_outputs = {v.name for v in graph.outputs}
    by_provider, fallback, rows = {}, [], []
    for k, p in enumerate(parts):
        counts = by_provider.setdefault(p.provider.name, Counter())
        for n in p.nodes:
            counts[n.op_type] += 1
            key = n.name or str(n)
            if key in reasons:
                fallback.append({"node": key, "op": n.op_type, "provider": p.provider.name, "reason": reasons[key]})
        crossing_in = [v for v in p.inputs if v in made_in]
        crossing_out = [v for v in p.outputs if v not in graph_outputs or any(
            v in q.inputs for q in parts[k + 1:])]
        rows.append({"provider": p.provider.name, "nodes": len(p.nodes),
                     "bytes_in": _sum_bytes(graph, crossing_in), "bytes_out": _sum_bytes(graph, crossing_out),
                     "values_in": len(crossing_in), "values_out": len(crossing_out)})
    total = len(graph.nodes)
    on_wasm = sum(by_provider.get("WasmExecutionProvider", Counter()).values())
    return {"model": os.fspath(model) if isinstance(model, (str, os.PathLike)) else "<bytes>",
            "input_shapes": {k: list(v) for k, v in shapes.items()}, "nodes": total,
            "wasm_nodes": on_wasm, "wasm_share": on_wasm / total if total else 1.0,
            "ops_by_provider": {k: dict(sorted(v.items())) for k, v in by_provider.items()},
            "fallback": fallback, "partitions": rows,
            "crossing_bytes": sum(r["bytes_in"] or 0 for r in rows)}


def _sum_bytes(graph, names):
    sizes = [_nbytes(graph, v) for v in names]
    return None if None in sizes else sum(sizes)


def _fmt_bytes(n):
    if n is None:
        return "? B"
    for unit in ("B", "KiB", "MiB"):
        if n < 1024 or unit == "MiB":
            return f"{n} B" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024


def format_report(r):
    lines = [f"model: {r['model']}",
             "input shapes: " + ", ".join(f"{k}={v}" for k, v in r["input_shapes"].items()),
             f"nodes on WASM: {r['wasm_nodes']}/{r['nodes']} ({100 * r['wasm_share']:.1f}%)", "",
             "op counts per provider:"]
    for prov, ops in r["ops_by_provider"].items():
        lines.append(f"  {prov} ({sum(ops.values())} nodes): " + ", ".join(f"{op} {c}" for op, c in ops.items()))
    lines += ["", f"fallback nodes ({len(r['fallback'])}):"]
    for f in r["fallback"]:
        lines.append(f"  {f['node']} [{f['op']}] -> {f['provider']}: {f['reason']}")
    lines += ["", f"partitions ({len(r['partitions'])}, in run order):"]
    for k, p in enumerate(r["partitions"]):
        lines.append(f"  #{k} {p['provider']}: {p['nodes']} nodes; in from other partitions "
                     f"{p['values_in']} values {_fmt_bytes(p['bytes_in'])}, out to them "
                     f"{p['values_out']} values {_fmt_bytes(p['bytes_out'])}")
    lines.append(f"bytes crossing between partitions: {_fmt_bytes(r['crossing_bytes'])}")
    return "\n".join(lines)


def main(argv):
    import argparse
    import json
    import sys
    ap = argparse.ArgumentParser(prog="python -m nnwasm inspect",
                                 description="Show which provider runs each node of an ONNX model, and why.")
    ap.add_argument("model", help="path to an .onnx file")
    ap.add_argument("--input-shape", action="append", default=[], metavar="NAME=D0,D1,...",
                    help="a concrete shape for an input (required for inputs with symbolic dims; repeatable)")
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    a = ap.parse_args(argv)
    try:
        given = dict(parse_input_shape(s) for s in a.input_shape)
        r = report(a.model, given)
    except NnwasmError as e:
        print(f"nnwasm inspect: error: {e}", file=sys.stderr)
        return 2
    print(json.dumps(r, indent=1) if a.json else format_report(r))
    return 0
