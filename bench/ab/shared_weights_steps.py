"""Median decode-step time, weights shared vs private (plan.SHARE_WEIGHTS), interleaved in one
process, on a tiny genzoo decoder, so the per-step work outside the kernels shows
(bench/results/shared-weights.md). usage: python bench/ab/shared_weights_steps.py MODEL [rounds]"""
import sys, time, statistics
from pathlib import Path
wt = str(Path(__file__).resolve().parents[2])
name = sys.argv[1]
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
sys.path.insert(0, f"{wt}/py_runtime"); sys.path.insert(0, f"{wt}/build_scripts")
import numpy as np, nnwasm, build_genzoo
from nnwasm.wasm import plan as plan_module
meta = build_genzoo.load_sidecar(name)
path = str(build_genzoo.genzoo_dir() / meta["roles"]["decoder"]["file"])
def make(share):
    plan_module.SHARE_WEIGHTS = share
    so = nnwasm.SessionOptions(); so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    s = nnwasm.InferenceSession(path, so)
    names = [o.name for o in s.get_outputs()]
    times = []
    def run(role, feeds):
        t = time.perf_counter(); o = dict(zip(names, s.run(None, feeds))); times.append(time.perf_counter() - t); return o
    build_genzoo.generate(meta, run, steps=4)   # plans built, traced
    return run, times
runs = {m: make(m == "share") for m in ("share", "private")}
for m in runs: runs[m][1].clear()
for r in range(rounds):
    for m, (run, times) in runs.items():
        build_genzoo.generate(meta, run, steps=24)
# (each generation's first step, the prompt, left out)
res = {m: statistics.median([x for i, x in enumerate(t) if i % 24]) * 1e3 for m, (_, t) in runs.items()}
print(name, {m: f"{v:.3f} ms" for m, v in res.items()}, f"share/private {res['share'] / res['private']:.3f}")
