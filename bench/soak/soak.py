"""Soak (issue 18, item 5): RUNS runs of one session of a model with symbolic dims, the dims drawn
at random (seeded) each run after a first run at their largest, in CPython (wasmtime) and in Node
(the .onnx through Pyodide: soak_node.mjs). Every EVERY runs it records the process's resident
size and kernels.wasm's memory (and Pyodide's heap in Node); the report gives them at run 1, 100
and the end, and the drift after the first hundred: the largest resident size from run 100 on
minus the size at run 100. Memory is flat when that drift stays within the noise of a
garbage-collected process (a few MB) and kernels.wasm's memory stops growing once the largest dims
have run.

    python bench/soak/soak.py [--model bert_tiny.onnx] [--runs 10000] [--every 100]
                              [--max batch=4 sequence=128] [--hosts py node] [--json OUT]

Default model: the zoo's bert_tiny (~/.cache/nnwasm/zoo, `make zoo`), batch 1-4 x sequence 1-128;
without it, tests/test_memory_bounds.py's outer-product model, N 1-300.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ZOO = Path(os.environ.get("NNWASM_ZOO_DIR", Path.home() / ".cache" / "nnwasm" / "zoo"))


def rss():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))


def soak_python(model, runs, every, max_dims, seed):
    sys.path.insert(0, str(ROOT / "py_runtime"))
    import numpy as np
    import nnwasm
    from nnwasm.host import get_host
    host = get_host()
    sess = nnwasm.InferenceSession(str(model), providers=["WasmExecutionProvider"])
    rng = random.Random(seed)
    samples, t0 = [], time.perf_counter()
    for r in range(1, runs + 1):
        dims = {k: m if r == 1 else rng.randint(1, m) for k, m in max_dims.items()}
        feeds = {}
        for i in sess.get_inputs():
            shape = [d if isinstance(d, int) else dims[d] for d in i.shape]
            if i.type == "tensor(int64)":
                fill = 1 if "mask" in i.name else 0 if "type" in i.name else None
                feeds[i.name] = (np.full(shape, fill, np.int64) if fill is not None
                                 else np.array([rng.randrange(100) for _ in range(int(np.prod(shape)))], np.int64).reshape(shape))
            else:
                feeds[i.name] = np.array([rng.uniform(-1, 1) for _ in range(int(np.prod(shape)))], np.float32).reshape(shape)
        sess.run(None, feeds)
        if r % every == 0 or r == 1:
            samples.append({"run": r, "rss": rss(), "wasm": host.memory.data_len(host.store),
                            "seconds": time.perf_counter() - t0})
    return samples


def soak_node(model, runs, every, max_dims, seed):
    out = subprocess.run(["node", "--expose-gc", str(ROOT / "bench" / "soak" / "soak_node.mjs"), str(model), str(runs), str(every),
                          json.dumps(max_dims), str(seed)], cwd=ROOT, capture_output=True, text=True, timeout=7200)
    if out.returncode:
        raise RuntimeError(out.stdout[-2000:] + out.stderr[-2000:])
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def summary(samples):
    at = {s["run"]: s for s in samples}
    first, hundred, last = samples[0], at.get(100, samples[min(1, len(samples) - 1)]), samples[-1]
    later = [s for s in samples if s["run"] >= hundred["run"]]
    return {"runs": last["run"], "seconds": round(last["seconds"], 1),
            "rss_run1_MB": first["rss"] / 1e6, "rss_run100_MB": hundred["rss"] / 1e6, "rss_end_MB": last["rss"] / 1e6,
            "rss_drift_after_100_MB": (max(s["rss"] for s in later) - hundred["rss"]) / 1e6,
            "wasm_run100_MB": hundred["wasm"] / 1e6, "wasm_end_MB": last["wasm"] / 1e6}


def default_model():
    bert = ZOO / "bert_tiny.onnx"
    if bert.exists():
        return bert, {"batch": 4, "sequence": 128}
    sys.path.insert(0, str(ROOT / "tests"))
    from test_memory_bounds import _outer_model
    path = Path(os.environ.get("TMPDIR", "/tmp")) / "nnwasm-soak-outer.onnx"
    path.write_bytes(_outer_model())
    return path, {"N": 300}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model")
    ap.add_argument("--max", nargs="+", help="dim=largest, e.g. batch=4 sequence=128")
    ap.add_argument("--runs", type=int, default=10000)
    ap.add_argument("--every", type=int, default=100)
    ap.add_argument("--seed", type=int, default=18)
    ap.add_argument("--hosts", nargs="+", default=["py", "node"], choices=["py", "node"])
    ap.add_argument("--json")
    args = ap.parse_args()
    model, max_dims = default_model() if not args.model else (Path(args.model), None)
    if args.max:
        max_dims = {k: int(v) for k, v in (m.split("=") for m in args.max)}
    if not max_dims:
        ap.error("--max is needed with --model")
    report = {"model": model.name, "max_dims": max_dims}
    for host in args.hosts:
        samples = (soak_python if host == "py" else soak_node)(model, args.runs, args.every, max_dims, args.seed)
        report[host] = {"summary": summary(samples), "samples": samples}
        print(host, json.dumps(report[host]["summary"]), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
