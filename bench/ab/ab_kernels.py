"""A/B builds of kernels.wasm on one plan file, in both hosts: wasmtime (CPython) and V8 (Node,
ab_kernels.mjs), each build's runs interleaved with the others' in one process, medians. For
kernel changes that must pay in one engine without costing in the other.

    python bench/ab/ab_kernels.py PLAN.nnwp A.wasm B.wasm [...] [--seconds 15] [--match NAME]

Prints each build's median run in both hosts, relative to the first, and the wasmtime/V8 ratio;
with --match, also the sum of the per-op medians of the ops whose node name contains NAME
(each op run alone, nnw_plan_run_ops), to see a change on the layers it touches.
(Builds: build_scripts/build_kernels.py's wasm_cmd(flavour, files, out), to files of your own.)
"""
import argparse
import statistics
from pathlib import Path

from plan_builds import Build, read_plan, start_node_half, time_ops, time_runs, warm_up


def wasmtime_times(plan_path, wasms, seconds, match):
    pf = read_plan(plan_path)
    builds = [Build(pf, w) for w in wasms]
    warm_up(builds)
    times = time_runs(builds, seconds)
    picked = [i for i, op in enumerate(pf.ops) if match and match in op.node]
    match_ms = None
    if picked:
        per = time_ops(builds, picked, seconds / 2)
        match_ms = [sum(statistics.median(t) for t in ops) for ops in per]
    return [statistics.median(t) for t in times], match_ms, len(times[0])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("plan")
    ap.add_argument("wasms", nargs="+")
    ap.add_argument("--seconds", type=float, default=15)
    ap.add_argument("--match", default="")
    args = ap.parse_args()
    node = start_node_half("ab_kernels.mjs", args.plan, args.seconds, args.match, *args.wasms)
    py, py_match, n = wasmtime_times(args.plan, args.wasms, args.seconds, args.match)   # both hosts at once: same load
    js = node()
    for i, w in enumerate(args.wasms):
        print(f"{Path(w).name:24s} wasmtime {py[i]:7.2f} ms ({py[i] / py[0]:.3f})  "
              f"V8 {js['ms'][i]:7.2f} ms ({js['ms'][i] / js['ms'][0]:.3f})  wasmtime/V8 {py[i] / js['ms'][i]:.2f}")
        if py_match:
            a, b = py_match[i], js["match_ms"][i]
            print(f"{'  ops ~ ' + args.match:24s} wasmtime {a:7.2f} ms ({a / py_match[0]:.3f})  "
                  f"V8 {b:7.2f} ms ({b / js['match_ms'][0]:.3f})  wasmtime/V8 {a / b:.2f}")
    print(f"({n} runs each in wasmtime, {js['runs']} in V8)")


if __name__ == "__main__":
    main()
