"""The bench's own export of a speed-suite model against its hand-written twin (NAME_alt,
bench/speed/alt_models.py), in CPython: the node count of each, the op types left after nnwasm's
optimizer (what did not fuse), and a per-op profile (SessionOptions.enable_profiling, WASM alone)
summed by op type and kernel, interleaved run by run.

    .venv/bin/python bench/ab/ab_exports.py [NAME ...] [--runs 10] [--dir DIR]

NAME: a bench model without the suffix (default: all seven); build_scripts/build_bench_models.py
builds them (bench_speed.py does too). Median ms a run per op and kernel, and the whole run.
"""
import argparse
import collections
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "build_scripts"))
sys.path.insert(0, str(ROOT / "py_runtime"))


def session(path, profile):
    import nnwasm
    so = nnwasm.SessionOptions()
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    so.enable_profiling = profile
    return nnwasm.InferenceSession(str(path), so, providers=["WasmExecutionProvider"])


def feeds(meta, d):
    import numpy as np
    case = meta["cases"][0]
    return {n: np.fromfile(d / s["file"], dtype=s["dtype"]).reshape(s["dims"]) for n, s in case["inputs"].items()}


def optimized_ops(path, tmp):
    import nnwasm
    import onnx
    so = nnwasm.SessionOptions()
    so.optimized_model_filepath = str(tmp)
    nnwasm.InferenceSession(str(path), so)
    return collections.Counter(n.op_type for n in onnx.load(str(tmp)).graph.node), \
        collections.Counter(n.op_type for n in onnx.load(str(path)).graph.node)


def profile(sess, x, runs):
    """{op kernel: median ms a run}, median whole-run ms."""
    sess._start_profiling()
    whole = []
    for _ in range(runs):
        t = time.perf_counter()
        sess.run(None, x)
        whole.append((time.perf_counter() - t) * 1e3)
    events = [e for e in sess._end_profiling_events() if e.get("cat") == "Node" and e.get("args", {}).get("kernel")]
    per = len(events) // runs
    ops = collections.defaultdict(float)
    for i in range(per):
        e = events[i]
        ops[f"{e['args']['op_name']} {e['args']['kernel']}"] += statistics.median(events[r * per + i]["dur"] for r in range(runs)) / 1e3
    return dict(ops), statistics.median(whole)


def main():
    import build_bench_models as bbm
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    own = [n for n in bbm.MODELS if not n.endswith(bbm.ALT)]
    ap.add_argument("models", nargs="*", help=f"default: all of {own}")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--dir", default=None)
    a = ap.parse_args()
    a.models = a.models or own
    if set(a.models) - set(own):
        ap.error(f"unknown models {sorted(set(a.models) - set(own))}: choose from {own}")
    if a.dir:
        os.environ["NNWASM_BENCH_DIR"] = a.dir
    d = bbm.ensure(a.models + [n + bbm.ALT for n in a.models])
    for name in a.models:
        pair = [name, name + bbm.ALT]
        metas = {n: bbm.load_sidecar(n, d) for n in pair}
        print(f"== {name} (load {os.getloadavg()[0]:.1f})")
        sessions, xs = {}, {}
        for n in pair:
            after, before = optimized_ops(d / metas[n]["file"], d / f"{n}.opt.onnx")
            print(f"  {n}: {sum(before.values())} nodes -> {sum(after.values())} after the optimizer: "
                  + ", ".join(f"{k} {v}" for k, v in after.most_common()))
            sessions[n], xs[n] = session(d / metas[n]["file"], True), feeds(metas[n], d)
            sessions[n].run(None, xs[n])
        res = {n: profile(sessions[n], xs[n], a.runs) for n in pair}
        keys = sorted(set().union(*(r[0] for r in res.values())), key=lambda k: -max(r[0].get(k, 0) for r in res.values()))
        print(f"  {'op kernel':44s} " + " ".join(f"{n:>24s}" for n in pair))
        for k in keys[:14]:
            print(f"  {k[:44]:44s} " + " ".join(f"{res[n][0].get(k, 0):21.2f} ms" for n in pair))
        print(f"  {'whole run (median, profiling on)':44s} " + " ".join(f"{res[n][1]:21.2f} ms" for n in pair))
        print(json.dumps({n: round(res[n][1], 2) for n in pair}))


if __name__ == "__main__":
    main()
