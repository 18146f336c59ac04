"""EfficientNet-Lite0, batch 1, single thread: nnwasm against its peers, measured interleaved in
one run (the machine is shared, so only ratios taken together mean anything). Reports medians.

    python bench/speed/bench_efficientnet.py [--seconds 20] [--json out.json]

Rows:
  CPython  nnwasm (kernels.wasm in wasmtime)       vs onnxruntime CPU (native, 1 thread)
  Node     nnwasm (kernels.wasm in V8, via Pyodide) vs onnxruntime-web wasm (1 thread, SIMD)
The Node row runs bench/speed/bench_web.mjs, the comparison that matters for pages.
"""
import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "py_runtime"))
sys.path.insert(0, str(ROOT / "tests"))
MODEL = ROOT / "demo" / "assets" / "efficientnet-lite0.onnx"


def bench_cpython(seconds):
    import onnxruntime
    import nnwasm
    from imagenet_fixture import preprocess
    x = {"input": preprocess(ROOT / "demo" / "assets" / "coffee.png")}
    so = onnxruntime.SessionOptions()
    so.intra_op_num_threads = so.inter_op_num_threads = 1
    t0 = time.perf_counter()
    ours = nnwasm.InferenceSession(str(MODEL))
    create = time.perf_counter() - t0
    ort = onnxruntime.InferenceSession(str(MODEL), so, providers=["CPUExecutionProvider"])
    times = {"nnwasm": [], "ort": []}
    for _ in range(3):       # warm-up
        ours.run(None, x), ort.run(None, x)
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        for name, sess in (("nnwasm", ours), ("ort", ort)):
            t = time.perf_counter()
            sess.run(None, x)
            times[name].append((time.perf_counter() - t) * 1e3)
    med = {k: statistics.median(v) for k, v in times.items()}
    return {"nnwasm_ms": med["nnwasm"], "onnxruntime_cpu_ms": med["ort"], "runs": len(times["nnwasm"]),
            "nnwasm_create_ms": create * 1e3, "ratio_nnwasm_over_ort": med["nnwasm"] / med["ort"]}


def bench_node(seconds):
    out = subprocess.run(["node", str(ROOT / "bench" / "speed" / "bench_web.mjs"), str(seconds)], cwd=ROOT,
                         capture_output=True, text=True, timeout=600)
    if out.returncode:
        raise RuntimeError(f"bench_web.mjs failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--json")
    ap.add_argument("--skip-node", action="store_true")
    args = ap.parse_args()
    res = {"cpython": bench_cpython(args.seconds)}
    c = res["cpython"]
    print(f"CPython: nnwasm/wasmtime {c['nnwasm_ms']:.1f} ms, onnxruntime CPU {c['onnxruntime_cpu_ms']:.1f} ms "
          f"-> nnwasm takes {c['ratio_nnwasm_over_ort']:.2f}x onnxruntime's time ({c['runs']} runs each)")
    if not args.skip_node:
        res["node"] = n = bench_node(args.seconds)
        print(f"Node:    nnwasm/V8 {n['nnwasm_ms']:.1f} ms, onnxruntime-web wasm {n['ortweb_ms']:.1f} ms "
              f"-> nnwasm takes {n['nnwasm_ms'] / n['ortweb_ms']:.2f}x onnxruntime-web's time ({n['runs']} runs each)")
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
