"""Per-op minima of builds of kernels.wasm in both hosts at once: wasmtime (CPython, with the
host's hints) and V8 (Node, ab_ops_hosts.mjs, no hints). Each plan op runs alone
(nnw_plan_run_ops), builds interleaved op by op; the minima are summed by class (the kernel;
conv2d split into dw<k>s<stride>@<output size> / pw / other, "_big" above 14x14 outputs).

    python bench/ab/ab_ops_hosts.py PLAN A.wasm [B.wasm ...] [--seconds 15] [--ops]

Minima, not medians: on a shared machine a preempted op shows as a slow median, not a slow
kernel (docs/wasmtime.md). --ops also prints every op's minima.
"""
import argparse
import struct
from pathlib import Path

from plan_builds import Build, read_plan, start_node_half, time_ops, warm_up

CONV = {"oh": 10, "kh": 12, "sh": 14, "group": 20}   # conv2d's argument indices (ops.def)


def classes(pf):
    words = struct.unpack(f"<{len(pf.plan) // 4}i", pf.plan)
    out, at = [], 8 + words[5]
    for op in pf.ops:
        n = words[at + 1]
        a, at = words[at + 2:at + 2 + n], at + 2 + n
        k = op.kernel
        if k == "conv2d":
            if a[CONV["group"]] > 1:
                k += f":dw{a[CONV['kh']]}s{a[CONV['sh']]}@{a[CONV['oh']]}"
            else:
                k += ":pw" if a[CONV["kh"]] == 1 else ":other"
                k += "_big" if a[CONV["oh"]] > 14 else ""
        out.append(k)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("plan")
    ap.add_argument("wasms", nargs="+")
    ap.add_argument("--seconds", type=float, default=15)
    ap.add_argument("--ops", action="store_true")
    args = ap.parse_args()
    node = start_node_half("ab_ops_hosts.mjs", args.plan, args.seconds, *args.wasms)
    pf = read_plan(args.plan)
    builds = [Build(pf, w) for w in args.wasms]
    warm_up(builds)
    per = time_ops(builds, range(len(pf.ops)), args.seconds)
    best = [[min(t) for t in ops] for ops in per]
    rounds = len(per[0][0])
    js = [[m for m, _ in ops] for ops in node()]
    cls = classes(pf)
    names = sorted(set(cls), key=lambda c: -sum(best[0][i] for i, k in enumerate(cls) if k == c))
    print(f"{'minima, ms':22s}" + "".join(f"  {Path(w).name[:18]:>18s} wasmtime / V8  ratio" for w in args.wasms))
    for c in ["total"] + names:
        idx = [i for i, k in enumerate(cls) if c in ("total", k)]
        row = f"{c:22s}"
        for b in range(len(args.wasms)):
            a, v = sum(best[b][i] for i in idx), sum(js[b][i] for i in idx)
            row += f"  {a:18.3f} / {v:7.3f}  {a / max(v, 1e-9):5.2f}"
        print(row)
    if args.ops:
        for i, op in enumerate(pf.ops):
            print(i, cls[i], " ".join(f"{best[b][i]:.3f}/{js[b][i]:.3f}" for b in range(len(args.wasms))), op.node)
    print(f"({rounds} rounds in wasmtime)")


if __name__ == "__main__":
    main()
