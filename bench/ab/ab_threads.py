"""1 thread against 2 per split kernel (kernels_c/threads/split.h), in CPython (wasmtime): each
kernel's one-op model of tests/test_threads_kernels.py (sizes over the threshold) run by a
1-thread and a 2-thread session, interleaved round by round (the order alternating), medians per
round; the ratio is the median over rounds of 2T / 1T, with its spread, and the same for the
process's CPU time a run (both threads counted: the work the split adds, wake-ups and joins, which
does not depend on a free core the way wall time does). A control before and after
says how many cores the process really had (two numpy sorts on two threads / one; 1.0: two free
cores, 2.0: one core time-shared), with the load average.

    .venv/bin/python bench/ab/ab_threads.py [--kernels NAME ...] [--rounds 7] [--runs 5] [--out FILE.json]
"""
import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path[:0] = [str(ROOT / "py_runtime"), str(ROOT / "tests"), str(ROOT / "bench" / "speed"), str(ROOT / "build_scripts")]

from bench_threads import control  # noqa: E402
from test_threads import host_of, session  # noqa: E402
from test_threads_kernels import KERNELS  # noqa: E402


def bench(name, rounds, runs):
    model, feeds = KERNELS[name]()
    one, two = session(model, 1), session(model, 2)
    host = host_of(two)
    for s in (one, two, one, two):
        s.run(None, feeds)
    jobs = host.call("nnw_pool_jobs")
    two.run(None, feeds)
    jobs = host.call("nnw_pool_jobs") - jobs
    ratios, m1s, m2s, cpu = [], [], [], []
    for r in range(rounds):
        got = {}
        for label, s in ([("1T", one), ("2T", two)] if r % 2 == 0 else [("2T", two), ("1T", one)]):
            ts, cs = [], []
            for _ in range(runs):
                t, c = time.perf_counter(), time.process_time()
                s.run(None, feeds)
                ts.append((time.perf_counter() - t) * 1e3)
                cs.append(time.process_time() - c)
            got[label] = statistics.median(ts)
            got[label + "cpu"] = statistics.median(cs)
        m1s.append(got["1T"])
        m2s.append(got["2T"])
        ratios.append(got["2T"] / got["1T"])
        if got["1Tcpu"] > 0:
            cpu.append(got["2Tcpu"] / got["1Tcpu"])
    two.release()
    return {"kernel": name, "jobs_per_run": jobs, "ms_1t": round(statistics.median(m1s), 3),
            "ms_2t": round(statistics.median(m2s), 3), "ratio": round(statistics.median(ratios), 3),
            "spread": [round(min(ratios), 3), round(max(ratios), 3)],
            "cpu_ratio": round(statistics.median(cpu), 3) if cpu else None}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", nargs="*", choices=list(KERNELS), default=[k for k in KERNELS if "NaN" not in k])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out")
    a = ap.parse_args()
    out = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "load_before": os.getloadavg()[0],
           "control_before": control(), "rows": []}
    print(f"control before {out['control_before']:.2f} (load {out['load_before']:.2f})", flush=True)
    print("| kernel | 1T ms | 2T ms | 2T/1T (spread) | CPU 2T/1T | split jobs a run |\n|---|---|---|---|---|---|", flush=True)
    for name in a.kernels:
        row = bench(name, a.rounds, a.runs)
        out["rows"].append(row)
        print(f"| {name} | {row['ms_1t']:.3f} | {row['ms_2t']:.3f} | {row['ratio']:.3f} "
              f"({row['spread'][0]:.2f}-{row['spread'][1]:.2f}) | {row['cpu_ratio']} | {row['jobs_per_run']} |", flush=True)
    out["control_after"], out["load_after"] = control(), os.getloadavg()[0]
    print(f"control after {out['control_after']:.2f} (load {out['load_after']:.2f})")
    if a.out:
        Path(a.out).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
