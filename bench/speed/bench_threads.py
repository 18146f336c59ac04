"""Threads in CPython (issue 16 items 5-6): per bench model, nnwasm at 1 and 2 threads
(SessionOptions.intra_op_num_threads, kernels-threads.wasm) interleaved round by round, and an
Amdahl estimate from a one-thread per-op profile: the share p of the run spent in ops whose kernel
splits over the pool (SPLITS, kernels_c/threads/split.h) predicts a speed-up of 1 / ((1 - p) + p / n)
at n threads. A control says how many cores the process really had: two numpy sorts on two threads
(the GIL released) against one, wall time (1.0: two free cores; 2.0: one core time-shared).

    .venv/bin/python bench/speed/bench_threads.py [--models NAME ...] [--rounds 5] [--runs 3]
                                                  [--profile-runs 3] [--out bench/results]

Models: build_scripts/build_bench_models.py's seven ($NNWASM_BENCH_DIR). Writes OUT/threads.json
and OUT/threads.md.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "py_runtime"))
sys.path.insert(0, str(ROOT / "build_scripts"))
sys.path.insert(0, str(ROOT / "tests"))
import build_bench_models  # noqa: E402

# plan kernels that split over the pool when their work passes split.h's threshold (the estimate
# counts every op of these kernels: small ones that stay on one thread make it an upper bound)
SPLITS = {"gemm_packed", "matmul", "binary", "conv2d", "conv2d_winograd", "conv2d_winograd_s2", "attention", "attention_kv",
          "q8_conv2d", "q8_conv2d_pk", "q8_gemm_pk", "q8_gemm_pkq", "q8_gemm_pk8", "gemm", "q4_matmul", "gemm_packed_f16",
          "softmax", "norm", "skip_norm", "unary", "pool2d", "q8_dyn_quantize"}


def amdahl(p, n):
    return 1.0 / ((1.0 - p) + p / n)


def session(path, threads, profile_dir=None, prefix="p"):
    """nnwasm on WASM alone, `simd` (kernels-threads.wasm at threads > 1); profiled into profile_dir/prefix*"""
    import nnwasm
    so = nnwasm.SessionOptions()
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    so.add_session_config_entry("session.kernels_flavour", "simd")
    so.intra_op_num_threads = threads
    if profile_dir:
        so.enable_profiling = True
        so.profile_file_prefix = os.path.join(profile_dir, prefix)
    return nnwasm.InferenceSession(path, so, providers=["WasmExecutionProvider"])


def feeds_of(meta, d):
    case = meta["cases"][0]
    return {n: np.fromfile(d / s["file"], dtype=s["dtype"]).reshape(s["dims"]) for n, s in case["inputs"].items()}


def profile(path, feeds, runs):
    """kernel -> median ms per run over `runs` profiled one-thread runs"""
    with tempfile.TemporaryDirectory() as td:
        s = session(path, 1, td)
        s.run(None, feeds)
        per_run = []
        for _ in range(runs):
            s._profiler.events.clear()
            s.run(None, feeds)
            by = defaultdict(float)
            for e in s._profiler.events:
                if e.get("cat") == "Node":
                    by[e["args"].get("kernel", e["name"])] += e["dur"] / 1e3
            per_run.append(by)
        s.end_profiling()
    kernels = set().union(*per_run)
    return {k: statistics.median(r.get(k, 0.0) for r in per_run) for k in kernels}


def timed(run):
    t, c = time.perf_counter(), time.process_time()
    run()
    return (time.perf_counter() - t) * 1e3, (time.process_time() - c) * 1e3


def control(size=4_000_000, reps=3):
    """wall time of two numpy sorts on two threads / one sort on one (GIL released in sort)"""
    a = [np.random.default_rng(i).random(size) for i in range(2)]
    one, two = [], []
    for _ in range(reps):
        t = time.perf_counter()
        np.sort(a[0])
        one.append(time.perf_counter() - t)
        ts = [threading.Thread(target=np.sort, args=(x,)) for x in a]
        t = time.perf_counter()
        for th in ts:
            th.start()
        for th in ts:
            th.join()
        two.append(time.perf_counter() - t)
    return statistics.median(two) / statistics.median(one)


def begin(settings, **more):
    """a result's head: the date, settings, and the load average and control before the models"""
    return {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), **more, "settings": settings,
            "load_before": os.getloadavg()[0], "control_before": control(), "models": []}


def finish(result, out, stem, write_md):
    """the control and load average after, then OUT/stem.json and (write_md) OUT/stem.md, printed"""
    result["control_after"], result["load_after"] = control(), os.getloadavg()[0]
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.json").write_text(json.dumps(result, indent=1))
    write_md(result, out)
    print((out / f"{stem}.md").read_text())


def wake_cost(jobs=400):
    """seconds one empty 4-tile job costs on a 2-thread pool (nnw_pool_bench_jobs: wake + join)"""
    from test_threads import matmul_model   # noqa: E402 -- tests/ holds the small model
    from nnwasm.host import _HOSTS
    s = session(matmul_model(layers=1), 2)
    host = _HOSTS[s.get_provider_assignment().kernels_flavour]
    ts = []
    for _ in range(5):
        t = time.perf_counter()
        host.call("nnw_pool_bench_jobs", jobs, 4)
        ts.append((time.perf_counter() - t) / jobs)
    s.release()
    return statistics.median(ts)


def bench_model(name, d, a, wake):
    meta = build_bench_models.load_sidecar(name, d)
    path = str(d / meta["file"])
    feeds = feeds_of(meta, d)
    prof = profile(path, feeds, a.profile_runs)
    total = sum(prof.values())
    split = sum(v for k, v in prof.items() if k in SPLITS)
    p = split / total if total else 0.0
    row = {"model": name, "profile_ms": {k: round(v, 3) for k, v in sorted(prof.items(), key=lambda kv: -kv[1])},
           "split_ms": round(split, 3), "other_ms": round(total - split, 3), "p": round(p, 4),
           "predicted": {n: round(amdahl(p, n), 3) for n in (2, 4, 8)}}
    one, two = session(path, 1), session(path, 2)
    host = __import__("nnwasm.host", fromlist=["_HOSTS"])._HOSTS[two.get_provider_assignment().kernels_flavour]
    for s in (one, two):
        s.run(None, feeds)
    jobs = host.call("nnw_pool_jobs")
    two.run(None, feeds)
    row["jobs_per_run"] = host.call("nnw_pool_jobs") - jobs
    # with the measured cost of each job's wake-up and join on top (this machine's load included)
    row["predicted_with_wake"] = {n: round(total / ((total - split) + split / n + row["jobs_per_run"] * wake * 1e3), 3)
                                  for n in (2, 4, 8)}
    load0 = os.getloadavg()[0]
    rounds = []
    for r in range(a.rounds):
        order = [("1T", one), ("2T", two)] if r % 2 == 0 else [("2T", two), ("1T", one)]
        got = {}
        for label, s in order:
            got[label] = [timed(lambda: s.run(None, feeds)) for _ in range(a.runs)]
        rounds.append(got)
        m1 = statistics.median(t for t, _ in got["1T"])
        m2 = statistics.median(t for t, _ in got["2T"])
        print(f"  {name} round {r + 1}/{a.rounds}: 1T {m1:.1f} ms, 2T {m2:.1f} ms, {m2 / m1:.3f}", flush=True)
    two.release()
    ratios = [statistics.median(t for t, _ in g["2T"]) / statistics.median(t for t, _ in g["1T"]) for g in rounds]
    row.update({"ms_1t": round(statistics.median(statistics.median(t for t, _ in g["1T"]) for g in rounds), 2),
                "ms_2t": round(statistics.median(statistics.median(t for t, _ in g["2T"]) for g in rounds), 2),
                "ratio_2t_1t": round(statistics.median(ratios), 3),
                "ratio_spread": [round(min(ratios), 3), round(max(ratios), 3)],
                "cpu_per_wall_2t": round(statistics.median(c / t for g in rounds for t, c in g["2T"]), 2),
                "load_before": round(load0, 2), "load_after": round(os.getloadavg()[0], 2)})
    return row


def write_md(result, out):
    lines = ["# Threads: nnwasm in CPython at 1 and 2 threads, and Amdahl estimates", "",
             f"{result['date']}, {result['cpu']}; written by bench/speed/bench_threads.py "
             f"(rounds {result['settings']['rounds']} x {result['settings']['runs']} runs a thread count, "
             "interleaved; a ratio is the median over rounds of the round's medians).", "",
             f"Control (two numpy sorts on two threads / one sort, wall time; 1.0 = two free cores, 2.0 = one "
             f"core time-shared): before {result['control_before']:.2f}, after {result['control_after']:.2f}. "
             f"Load average before {result['load_before']:.2f}, after {result['load_after']:.2f}.", "",
             f"An empty job (wake + join, nnw_pool_bench_jobs) cost {result['wake_us']:.0f} us at the start of the run.", "",
             "| model | 1T ms | 2T ms | 2T/1T (spread) | 2T cpu/wall | split jobs a run | ms in split ops | other ms | p | predicted 2T | 4T | 8T | same with wake-ups 2T / 4T / 8T | load before/after |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in result["models"]:
        lines.append(f"| {r['model']} | {r['ms_1t']:.1f} | {r['ms_2t']:.1f} | {r['ratio_2t_1t']:.3f} "
                     f"({r['ratio_spread'][0]:.2f}-{r['ratio_spread'][1]:.2f}) | {r['cpu_per_wall_2t']:.2f} | "
                     f"{r['jobs_per_run']} | {r['split_ms']:.1f} | {r['other_ms']:.1f} | {r['p']:.3f} | "
                     f"{r['predicted'][2]:.2f}x | {r['predicted'][4]:.2f}x | {r['predicted'][8]:.2f}x | "
                     + " / ".join(f"{r['predicted_with_wake'][n]:.2f}x" for n in (2, 4, 8))
                     + f" | {r['load_before']:.1f}/{r['load_after']:.1f} |")
    lines += ["", "p: the share of the one-thread profile (CPython, wasmtime) in ops whose kernel splits "
              f"({', '.join(sorted(SPLITS))}); predicted n-thread speed-up 1 / ((1 - p) + p / n), no "
              "wake-up cost, perfect balance; an upper bound: every op of these kernels counts, also the few under the "
              "threshold and the serial parts inside them (im2col, A's packing); \"with wake-ups\" adds the split jobs "
              "a run times the empty job's cost. The ops left on one thread, largest first:", ""]
    for r in result["models"]:
        rest = [(k, v) for k, v in r["profile_ms"].items() if k not in SPLITS][:4]
        lines.append(f"- {r['model']}: " + ", ".join(f"{k} {v:.2f} ms" for k, v in rest))
    lines.append("")
    (out / "threads.md").write_text("\n".join(lines))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="*", choices=list(build_bench_models.MODELS), default=list(build_bench_models.MODELS))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--profile-runs", type=int, default=3)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    a = ap.parse_args()
    d = build_bench_models.ensure(a.models)
    cpu = [ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines() if ln.startswith("model name")]
    result = begin({"rounds": a.rounds, "runs": a.runs, "profile_runs": a.profile_runs},
                   cpu=f"{cpu[0]} x {len(cpu)}" if cpu else "?")
    result["wake_us"] = wake_cost() * 1e6
    print(f"control before: {result['control_before']:.2f} (load {result['load_before']:.2f}), "
          f"empty job {result['wake_us']:.0f} us", flush=True)
    for name in a.models:
        result["models"].append(bench_model(name, d, a, result["wake_us"] / 1e6))
    finish(result, a.out, "threads", write_md)


if __name__ == "__main__":
    main()
