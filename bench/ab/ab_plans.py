"""A/B of plan files, each on its own build of kernels.wasm, in both hosts at once: wasmtime
(CPython, the host's hints) and V8 (Node, ab_plans.mjs). For changes of the plan compiler (new
ops, weights packed at load) that ab_kernels.py, one plan on several builds, cannot compare.

    python bench/ab/ab_plans.py PLAN@WASM PLAN@WASM [...] [--seconds 30] [--ops]

Prints each pair's whole-run median in both hosts (interleaved pair by pair, relative to the
first pair), the wasmtime/V8 ratio, and the sums of per-op minima (each op run alone, pairs
interleaved op by op; ops aligned by index, so compare plans of the same model). --ops prints
every op's minima too.
"""
import argparse
import statistics
from pathlib import Path

from plan_builds import Build, read_plan, start_node_half, time_ops, time_runs, warm_up


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pairs", nargs="+", help="PLAN.nnwp@kernels.wasm")
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--ops", action="store_true")
    args = ap.parse_args()
    node = start_node_half("ab_plans.mjs", args.seconds, *args.pairs)
    builds = [Build(read_plan(plan), wasm) for plan, wasm in (pair.split("@") for pair in args.pairs)]
    warm_up(builds)
    times = time_runs(builds, args.seconds / 2)
    nops = min(len(b.pf.ops) for b in builds)
    best = [[min(t) for t in ops] for ops in time_ops(builds, range(nops), args.seconds / 2)]
    js = node()
    py = [statistics.median(t) for t in times]
    for i, pair in enumerate(args.pairs):
        so, sj = sum(best[i]), sum(js["ops"][i])
        name = "@".join(Path(p).name for p in pair.split("@"))
        print(f"{name:48s} runs wasmtime {py[i]:7.2f} ms ({py[i] / py[0]:.3f})  V8 {js['ms'][i]:7.2f} ms "
              f"({js['ms'][i] / js['ms'][0]:.3f})  wasmtime/V8 {py[i] / js['ms'][i]:.3f}  |  op sums "
              f"{so:7.2f} / {sj:7.2f} ms = {so / sj:.3f}")
    if args.ops:
        for i in range(nops):
            print(i, " ".join(f"{best[b][i]:.3f}/{js['ops'][b][i]:.3f}" for b in range(len(builds))))


if __name__ == "__main__":
    main()
