"""A/B of plan files, each on its own build of kernels.wasm, in both hosts at once: wasmtime
(CPython, the host's hints) and V8 (Node, ab_plans.mjs). For changes of the plan compiler (new
ops, weights packed at load) that ab_kernels.py, one plan on several builds, cannot compare.

    python bench/ab_plans.py PLAN@WASM PLAN@WASM [...] [--seconds 30] [--ops]

Prints each pair's whole-run median in both hosts (interleaved pair by pair, relative to the
first pair), the wasmtime/V8 ratio, and the sums of per-op minima (each op run alone, pairs
interleaved op by op; ops aligned by index, so compare plans of the same model). --ops prints
every op's minima too.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "py_runtime"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pairs", nargs="+", help="PLAN.nnwp@kernels.wasm")
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--ops", action="store_true")
    args = ap.parse_args()
    os.environ["NNWASM_WASMTIME_CACHE"] = "0"   # each build compiled here, with the host's config
    from nnwasm import planfile
    from nnwasm.host.wasmtime_host import WasmtimeHost
    from nnwasm.tensor import numel
    from nnwasm.wasm.runner import WasmRunner
    node = subprocess.Popen(["node", str(ROOT / "bench" / "ab_plans.mjs"), str(args.seconds), *args.pairs],
                            stdout=subprocess.PIPE, text=True)
    rs = []
    for pair in args.pairs:
        plan, wasm = pair.split("@")
        pf = planfile.read(Path(plan).read_bytes())
        r = WasmRunner(WasmtimeHost(Path(wasm).read_bytes()), pf.plan, pf.arena_bytes, [], [], pf.ops)
        # the memory plan reuses inputs' space once read: zero them before each run (ab_kernels.py)
        rs.append((r, [(v.offset, bytes(v.dtype.size * numel(v.shape))) for v in pf.inputs], len(pf.ops)))

    def run(r, zeros):
        for o, b in zeros:
            r.host.write(r.arena + o, b)
        r.host.call("nnw_plan_run", r.plan, r.arena)

    for _ in range(5):
        for r, z, _ in rs:
            run(r, z)
    times = [[] for _ in rs]
    end = time.perf_counter() + args.seconds / 2
    while time.perf_counter() < end or len(times[0]) < 5:
        for i, (r, z, _) in enumerate(rs):
            for _ in range(2):
                t = time.perf_counter()
                run(r, z)
                times[i].append((time.perf_counter() - t) * 1e3)
    nops = min(n for _, _, n in rs)
    best = [[float("inf")] * nops for _ in rs]
    end = time.perf_counter() + args.seconds / 2
    while time.perf_counter() < end:
        for i in range(nops):
            for b, (r, _, _) in enumerate(rs):
                t = time.perf_counter()
                r.host.call("nnw_plan_run_ops", r.plan, r.arena, i, 1)
                best[b][i] = min(best[b][i], (time.perf_counter() - t) * 1e3)
    js = json.loads(node.communicate()[0])
    py = [statistics.median(t) for t in times]
    for i, pair in enumerate(args.pairs):
        so, sj = sum(best[i]), sum(js["ops"][i])
        name = "@".join(Path(p).name for p in pair.split("@"))
        print(f"{name:48s} runs wasmtime {py[i]:7.2f} ms ({py[i] / py[0]:.3f})  V8 {js['ms'][i]:7.2f} ms "
              f"({js['ms'][i] / js['ms'][0]:.3f})  wasmtime/V8 {py[i] / js['ms'][i]:.3f}  |  op sums "
              f"{so:7.2f} / {sj:7.2f} ms = {so / sj:.3f}")
    if args.ops:
        for i in range(nops):
            print(i, " ".join(f"{best[b][i]:.3f}/{js['ops'][b][i]:.3f}" for b in range(len(rs))))


if __name__ == "__main__":
    main()
