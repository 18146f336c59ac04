"""An fp16 decoder against its fp32 twin on nnwasm in CPython, WASM alone (issue 15, item 4): the
bench's Optimum Llama (~125M: hidden 768, 12 layers, 12 heads / 4 KV heads, MLP 2048, vocab 32000;
bench/decoders, built by build_scripts/build_bench_decoders.py) and the same model converted to
float16 as transformers.js's fp16 models are (onnxconverter-common, keep_io_types False: float16
logits and past/present; build_scripts/build_genzoo.py's fp16()).

    .venv/bin/python bench/decoders/bench_fp16.py --fp32 DIR/llama_optimum_fp32.json \
        --fp16 DIR16/model.onnx [--rounds 3] [--new-tokens 64] [--out bench/results/fp16-decoders.json]

Each model lives in its own worker process (this script with --worker), so each process's kernels.wasm
memory is its own: created (WASM alone, fallback disabled), one warm-up generation (the prompt and 8
new tokens), then R rounds of one greedy generation each (128-token prompt, N new tokens, the past
fed back as the arrays the previous step returned), the two workers alternating, a different one first
each round. Reported per model: medians of prefill ms and decode tok/s, the wasm linear memory at the
end (a wasm memory never shrinks: its peak), peak RSS, the load average around each generation, and
whether the fp16 model's greedy tokens are the fp32 model's.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "py_runtime"))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def worker(meta_path, model_path):
    import nnwasm
    from nnwasm.host import get_host
    from bench_decoders import generate_py
    meta = json.loads(Path(meta_path).read_text())
    root = Path(meta_path).parent
    so = nnwasm.SessionOptions()
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    t = time.perf_counter()
    sess = {"decoder": nnwasm.InferenceSession(model_path, so, providers=["WasmExecutionProvider"])}
    create = time.perf_counter() - t
    first = sess["decoder"].get_inputs()
    dtypes = {i.name: i.type for i in first}
    for i in meta["roles"]["decoder"]["inputs"]:   # the fp16 twin's past is float16
        if i["past"]:
            i["dtype"] = "float16" if dtypes[i["name"]] == "tensor(float16)" else "float32"
    generate_py(meta, sess, root, 8)
    host = get_host()

    def reply(d):
        d.update(wasm_bytes=host.memory.data_len(host.store), rss_max=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
        print(json.dumps(d), flush=True)
    reply({"ready": True, "create_s": create})
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd["cmd"] == "quit":
            return
        r = generate_py(meta, sess, root, cmd["new_tokens"])
        reply(r)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--fp32", help="the fp32 model's sidecar (bench-decoders dir)/llama_optimum_fp32.json")
    ap.add_argument("--fp16", help="the fp16 twin's model.onnx")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "fp16-decoders.json"))
    a = ap.parse_args()
    if a.worker:
        return worker(*a.worker)
    meta = json.loads(Path(a.fp32).read_text())
    models = {"fp32": str(Path(a.fp32).parent / meta["roles"]["decoder"]["file"]), "fp16": a.fp16}
    procs = {}
    for name, path in models.items():
        p = subprocess.Popen([sys.executable, __file__, "--worker", a.fp32, path], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
        r = json.loads(p.stdout.readline())
        print(name, "ready", r, flush=True)
        procs[name] = (p, r)
    runs = {n: [] for n in models}
    names = list(models)
    for k in range(a.rounds):
        for name in names[k % 2:] + names[:k % 2]:
            p = procs[name][0]
            load0 = os.getloadavg()[0]
            p.stdin.write(json.dumps({"cmd": "gen", "new_tokens": a.new_tokens}) + "\n")
            p.stdin.flush()
            r = json.loads(p.stdout.readline())
            r["load"] = [load0, os.getloadavg()[0]]
            r["tok_s"] = r["decode_steps"] / (r["decode_ms"] / 1e3)
            runs[name].append(r)
            print(name, k, f"prefill {r['prefill_ms']:.0f} ms, decode {r['tok_s']:.2f} tok/s, "
                  f"wasm {r['wasm_bytes'] / 2**20:.0f} MiB, load {r['load']}", flush=True)
    for p, _ in procs.values():
        p.stdin.write('{"cmd": "quit"}\n')
        p.stdin.flush()
        p.wait(60)
    out = {"rounds": a.rounds, "new_tokens": a.new_tokens, "prompt_len": len(meta["prompt"]), "models": models,
           "runs": runs, "create_s": {n: procs[n][1]["create_s"] for n in models}}
    summary = {}
    for n, rs in runs.items():
        summary[n] = {"prefill_ms": statistics.median(r["prefill_ms"] for r in rs),
                      "tok_s": statistics.median(r["tok_s"] for r in rs),
                      "tok_s_range": [min(r["tok_s"] for r in rs), max(r["tok_s"] for r in rs)],
                      "wasm_mib": max(r["wasm_bytes"] for r in rs) / 2**20,
                      "rss_mib": max(r["rss_max"] for r in rs) / 2**20,
                      "file_mib": Path(models[n]).stat().st_size / 2**20}
    summary["same_tokens"] = all(r["tokens"] == runs["fp32"][0]["tokens"] for r in runs["fp16"])
    summary["load"] = [min(l for rs in runs.values() for r in rs for l in r["load"]),
                       max(l for rs in runs.values() for r in rs for l in r["load"])]
    out["summary"] = summary
    Path(a.out).write_text(json.dumps(out, indent=1))
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
