"""The same plan file in both hosts of kernels.wasm: CPython (wasmtime) against Node (V8), one
thread, batch 1, interleaved batch by batch in one run (a Node child answers over a pipe:
bench_hosts_node.mjs), medians. The target of issue 7: CPython within 1.2x of Node.

    python bench/speed/bench_hosts.py [--seconds 20] [--profile] [--json out.json] [model ...]

Models: the demo's EfficientNet-Lite0 plan and plans compiled (once, cached in
~/.cache/nnwasm/bench-hosts, or $NNWASM_BENCH_HOSTS_DIR) from the zoo (build_scripts/build_zoo.py) and the bench models
(~/.cache/nnwasm/bench-*) with their first test case as feeds (random where a model has none).
--profile adds per-kernel totals on both hosts (one profiled run per op each, medians of runs)
and their ratio, to tell codegen (uniform) from a few kernels.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from importlib import metadata
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "py_runtime"))
CACHE = Path.home() / ".cache" / "nnwasm"
OUT = Path(os.environ.get("NNWASM_BENCH_HOSTS_DIR") or CACHE / "bench-hosts")   # plans and feeds
MODELS = {   # name -> the .onnx (relative to ~/.cache/nnwasm) or a ready plan
    "efficientnet_lite0": ROOT / "demo" / "assets" / "efficientnet-lite0.nnwp",
    "mobilenet_v2": "bench-conv/mobilenet_v2.onnx",
    "squeezenet1_1": "bench-conv/squeezenet1_1.onnx",
    "resnet50": "bench-conv/resnet50.onnx",
    "bert": "bench-bert/bert.onnx",
    "bert_4l": "bench/bert_4l.onnx",
    "bert_4l_int8_dynamic": "bench/bert_4l_int8_dynamic.onnx",
    "mobilenet_v3_small": "zoo/mobilenet_v3_small.onnx",
    "efficientnet_b0": "zoo/efficientnet_b0.onnx",
    "bert_tiny": "zoo/bert_tiny.onnx",
    "vit_tiny": "zoo/vit_tiny.onnx",
    "mobilenet_v2_int8_qdq": "bench/mobilenet_v2_int8_qdq.onnx",
}
DEFAULT = ["efficientnet_lite0", "mobilenet_v2", "squeezenet1_1", "bert", "mobilenet_v3_small", "bert_tiny"]


def prepare(name):
    """(plan path, [feed specs], {name: array}) for a model; the plan compiled once."""
    import nnwasm
    from nnwasm.plan_compile import compile_plan
    src = MODELS[name]
    src = src if isinstance(src, Path) else CACHE / src
    meta_file = src.with_suffix(".json")
    meta = json.loads(meta_file.read_text()) if src.suffix == ".onnx" and meta_file.exists() else None
    OUT.mkdir(parents=True, exist_ok=True)
    plan = src if src.suffix == ".nnwp" else OUT / f"{name}.nnwp"
    case = meta["cases"][0]["inputs"] if meta else {}
    if not plan.exists():
        shapes = {n: t["dims"] for n, t in case.items()}
        plan.write_bytes(compile_plan(str(src), shapes))
    feeds, specs = {}, []
    rng = np.random.default_rng(0)
    for v in nnwasm.InferenceSession(str(plan)).get_inputs():
        dt = {"tensor(float)": np.float32, "tensor(int64)": np.int64, "tensor(int32)": np.int32}[v.type]
        if v.name in case:
            x = np.fromfile(meta_file.parent / case[v.name]["file"], dt).reshape(case[v.name]["dims"])
        else:
            x = rng.standard_normal(v.shape).astype(dt) if dt == np.float32 else np.ones(v.shape, dt)
        f = OUT / f"{name}.{v.name}.bin"
        x.tofile(f)
        feeds[v.name] = x
        specs.append({"name": v.name, "dtype": np.dtype(dt).name, "dims": list(x.shape), "file": str(f)})
    return plan, specs, feeds


class Node:
    def __init__(self):
        self.p = subprocess.Popen(["node", str(ROOT / "bench" / "speed" / "bench_hosts_node.mjs")], cwd=ROOT,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def ask(self, **req):
        self.p.stdin.write(json.dumps(req) + "\n")
        self.p.stdin.flush()
        ans = json.loads(self.p.stdout.readline())
        if "error" in ans:
            raise RuntimeError(f"node: {ans['error']}")
        return ans

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def py_times(sess, feeds, n):
    out = []
    for _ in range(n):
        t = time.perf_counter()
        sess.run(None, feeds)
        out.append((time.perf_counter() - t) * 1e3)
    return out


def profile(name, plan, feeds, node, runs, batch=2):
    """Per-op medians on both hosts, profiled interleaved in small batches:
    [(node, kernel, cpython ms, node ms)] in plan order (an op is one plan op)."""
    import nnwasm
    py, js = defaultdict(list), defaultdict(list)
    with tempfile.TemporaryDirectory() as d:
        so = nnwasm.SessionOptions()
        so.enable_profiling = True
        so.profile_file_prefix = os.path.join(d, "p")
        sess = nnwasm.InferenceSession(str(plan), so)
        for _ in range(0, runs, batch):
            sess._profiler.events.clear()
            for _ in range(batch):
                sess.run(None, feeds)
            for dst, events in ((py, sess._profiler.events),
                                (js, node.ask(op="profile", model=name, n=batch)["events"])):
                ops = [e for e in events if e.get("cat") == "Node"]
                n = len(ops) // batch
                for i, e in enumerate(ops):
                    dst[(i % n, e["name"], e["args"]["kernel"])].append(e["dur"] / 1e3)
        sess.end_profiling()
    return [(k[1], k[2], statistics.median(py[k]), statistics.median(js.get(k, [0]))) for k in sorted(py)]


def report_profile(ops):
    by_kernel = defaultdict(lambda: [0.0, 0.0])
    for _, kernel, a, b in ops:
        by_kernel[kernel][0] += a
        by_kernel[kernel][1] += b
    for k, (a, b) in sorted(by_kernel.items(), key=lambda kv: -kv[1][0])[:10]:
        print(f"    {k:28s} {a:7.2f} ms  {b:7.2f} ms  {a / max(b, 1e-9):5.2f}x")
    print(f"    {'(sum of ops)':28s} {sum(o[2] for o in ops):7.2f} ms  {sum(o[3] for o in ops):7.2f} ms")
    print("    largest gaps:")
    for node_name, k, a, b in sorted(ops, key=lambda o: -(o[2] - o[3]))[:8]:
        print(f"      {node_name[:40]:40s} {k:14s} {a:6.3f} ms {b:6.3f} ms {a / max(b, 1e-9):5.2f}x")
    return {k: {"cpython_ms": a, "node_ms": b} for k, (a, b) in by_kernel.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("models", nargs="*")
    ap.add_argument("--seconds", type=float, default=20, help="measuring time per model and host")
    ap.add_argument("--batch", type=int, default=3, help="runs a host makes before the other's turn")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--json")
    args = ap.parse_args()
    import nnwasm
    names = args.models or DEFAULT
    node = Node()
    results = {}
    try:
        for name in names:
            plan, specs, feeds = prepare(name)
            t0 = time.perf_counter()
            sess = nnwasm.InferenceSession(str(plan))
            py_create = (time.perf_counter() - t0) * 1e3
            js_create = node.ask(op="load", model=name, plan=str(plan), feeds=specs)["create_ms"]
            # V8 tiers up in the background: warm both on count and time
            warm_end, k = time.perf_counter() + 4, 0
            while k < 30 or time.perf_counter() < warm_end:
                py_times(sess, feeds, args.batch), node.ask(op="run", model=name, n=args.batch)
                k += args.batch
            py, js = [], []
            end = time.perf_counter() + 2 * args.seconds
            while time.perf_counter() < end or len(py) < 10:
                py += py_times(sess, feeds, args.batch)
                js += node.ask(op="run", model=name, n=args.batch)["times"]
            r = {"cpython_ms": statistics.median(py), "node_ms": statistics.median(js), "runs": len(py),
                 "cpython_create_ms": py_create, "node_create_ms": js_create}
            r["ratio"] = r["cpython_ms"] / r["node_ms"]
            print(f"{name:20s} CPython {r['cpython_ms']:8.2f} ms  Node {r['node_ms']:8.2f} ms  "
                  f"ratio {r['ratio']:.2f}  ({r['runs']} runs each; create {py_create:.0f} / {js_create:.0f} ms)",
                  flush=True)
            if args.profile:
                ops = profile(name, plan, feeds, node, max(10, min(60, int(2000 / r["node_ms"]))))
                r["kernels"] = report_profile(ops)
            results[name] = r
            sess = None
    finally:
        node.close()
    res = {"wasmtime": metadata.version("wasmtime"),
           "node": subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip(),
           "models": results}
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
