"""Threads on the decoders in CPython: bench_threads.py's table for bench/decoders' models. Per model,
nnwasm (WasmExecutionProvider alone, `simd`) at 1 and 2 threads generating greedily with the past
fed back (bench_decoders.py's generate_py: the model's prompt, then N new tokens), the two sessions
interleaved generation by generation (order alternating); decode ms a token and prefill ms, the
ratio per round, its median and spread; an Amdahl estimate from a one-thread per-op profile of the
decode steps (ops whose kernel splits: bench_threads.SPLITS). The control (two numpy sorts on two
threads / one) before and after says whether a second core was free.

    .venv/bin/python bench/speed/bench_threads_decoders.py [--models NAME ...] [--rounds 3] [--new-tokens 16]
        [--dir MODELS] [--out bench/results]

Writes OUT/threads-decoders.json and OUT/threads-decoders.md.
"""
import argparse
import json
import statistics
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path[:0] = [str(ROOT / "py_runtime"), str(ROOT / "bench" / "decoders"), str(ROOT / "bench" / "speed")]

from bench_decoders import generate_py, models_dir  # noqa: E402
from bench_threads import SPLITS, amdahl, begin, finish, session  # noqa: E402

MODELS = ["llama_genai_int4", "llama_genai_fp32", "llama_optimum_fp32", "gpt2_fp32"]


def sessions(meta, root, threads, profile_dir=None):
    """role -> bench_threads.session of the role's model"""
    return {role: session(str(root / r["file"]), threads, profile_dir, f"p{role}") for role, r in meta["roles"].items()}


def profile(meta, root, new_tokens):
    """kernel -> ms a decode step (one thread): the profile of a generation minus its prefill step"""
    with tempfile.TemporaryDirectory() as td:
        s = sessions(meta, root, 1, td)
        generate_py(meta, s, root, 2)   # warm
        dec = s["decoder"]
        dec._profiler.events.clear()
        generate_py(meta, s, root, new_tokens)
        runs, by = [], None
        for e in dec._profiler.events:
            if e.get("cat") == "Session" and e["name"] == "model_run":
                runs.append(by)
                by = None
            elif e.get("cat") == "Node":
                by = by or defaultdict(float)
                by[e["args"].get("kernel", e["name"])] += e["dur"] / 1e3
        steps = [r for r in runs if r]
        if len(steps) < 2:   # events not closed by a run event: take all but the first node's share
            steps = [by] if by else []
        dec.end_profiling()
    steps = steps[1:] or steps   # the prefill is the first run
    kernels = set().union(*steps) if steps else set()
    return {k: statistics.median(r.get(k, 0.0) for r in steps) for k in kernels}


def bench(name, root, a):
    meta = json.loads((root / f"{name}.json").read_text())
    prof = profile(meta, root, a.new_tokens)
    total = sum(prof.values())
    split = sum(v for k, v in prof.items() if k in SPLITS)
    p = split / total if total else 0.0
    one, two = sessions(meta, root, 1), sessions(meta, root, 2)
    from nnwasm.host import _HOSTS
    host = _HOSTS[two["decoder"].get_provider_assignment().kernels_flavour]
    for s in (one, two):
        generate_py(meta, s, root, 4)
    jobs = host.call("nnw_pool_jobs")
    same = generate_py(meta, one, root, a.new_tokens)["tokens"] == generate_py(meta, two, root, a.new_tokens)["tokens"]
    jobs = (host.call("nnw_pool_jobs") - jobs) / a.new_tokens
    rounds = []
    for r in range(a.rounds):
        got = {}
        for label, s in ([("1T", one), ("2T", two)] if r % 2 == 0 else [("2T", two), ("1T", one)]):
            g = generate_py(meta, s, root, a.new_tokens)
            got[label] = {"decode_ms_tok": g["decode_ms"] / g["decode_steps"], "prefill_ms": g["prefill_ms"]}
        rounds.append(got)
        print(f"  {name} round {r + 1}/{a.rounds}: decode 1T {got['1T']['decode_ms_tok']:.2f} ms/tok, "
              f"2T {got['2T']['decode_ms_tok']:.2f}, {got['2T']['decode_ms_tok'] / got['1T']['decode_ms_tok']:.3f}", flush=True)
    for s in two.values():
        s.release()
    med = lambda label, k: statistics.median(g[label][k] for g in rounds)  # noqa: E731
    dr = [g["2T"]["decode_ms_tok"] / g["1T"]["decode_ms_tok"] for g in rounds]
    pr = [g["2T"]["prefill_ms"] / g["1T"]["prefill_ms"] for g in rounds]
    return {"model": name, "same_tokens": same, "jobs_per_token": round(jobs, 1),
            "decode_ms_1t": round(med("1T", "decode_ms_tok"), 2), "decode_ms_2t": round(med("2T", "decode_ms_tok"), 2),
            "decode_ratio": round(statistics.median(dr), 3), "decode_spread": [round(min(dr), 3), round(max(dr), 3)],
            "prefill_ms_1t": round(med("1T", "prefill_ms"), 1), "prefill_ms_2t": round(med("2T", "prefill_ms"), 1),
            "prefill_ratio": round(statistics.median(pr), 3),
            "profile_ms": {k: round(v, 3) for k, v in sorted(prof.items(), key=lambda kv: -kv[1])},
            "p": round(p, 4), "predicted": {n: round(amdahl(p, n), 3) for n in (2, 4, 8)}}


def write_md(res, out):
    lines = ["# Threads on the decoders: nnwasm in CPython at 1 and 2 threads", "",
             f"{res['date']}; bench/speed/bench_threads_decoders.py, {res['settings']['rounds']} rounds of one "
             f"generation a session ({res['settings']['new_tokens']} new tokens), interleaved; medians over rounds.", "",
             f"Control (two numpy sorts on two threads / one; 1.0 = two free cores, 2.0 = one core time-shared): "
             f"before {res['control_before']:.2f}, after {res['control_after']:.2f}; load average "
             f"{res['load_before']:.1f} / {res['load_after']:.1f}.", "",
             "| model | decode ms/token 1T | 2T | 2T/1T (spread) | prefill ms 1T | 2T | 2T/1T | split jobs a token | same tokens | p (decode) | predicted 2T / 4T / 8T |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in res["models"]:
        lines.append(f"| {r['model']} | {r['decode_ms_1t']:.2f} | {r['decode_ms_2t']:.2f} | {r['decode_ratio']:.3f} "
                     f"({r['decode_spread'][0]:.2f}-{r['decode_spread'][1]:.2f}) | {r['prefill_ms_1t']:.1f} | "
                     f"{r['prefill_ms_2t']:.1f} | {r['prefill_ratio']:.3f} | {r['jobs_per_token']} | {r['same_tokens']} | "
                     f"{r['p']:.3f} | " + " / ".join(f"{r['predicted'][n]:.2f}x" for n in (2, 4, 8)) + " |")
    lines += ["", "A decode step's one-thread profile, largest kernels first (ms a step):", ""]
    for r in res["models"]:
        lines.append(f"- {r['model']}: " + ", ".join(f"{k}{'' if k in SPLITS else ' (serial)'} {v:.2f}"
                                                      for k, v in list(r["profile_ms"].items())[:8]))
    lines.append("")
    (out / "threads-decoders.md").write_text("\n".join(lines))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="*", default=MODELS)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--new-tokens", type=int, default=16)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    a = ap.parse_args()
    root = Path(a.dir) if a.dir else models_dir()
    res = begin({"rounds": a.rounds, "new_tokens": a.new_tokens})
    print(f"control before {res['control_before']:.2f} (load {res['load_before']:.2f})", flush=True)
    for name in a.models:
        res["models"].append(bench(name, root, a))
    finish(res, a.out, "threads-decoders", write_md)


if __name__ == "__main__":
    main()
