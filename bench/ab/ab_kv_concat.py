"""ms per decode step of a decoder (Optimum's present = Concat(past, new), or onnxruntime-genai's
GroupQueryAttention with --model .../llama_genai_fp32/model.onnx) with its cache kept in
kernels.wasm's memory (IOBinding, presents on the "wasm" device fed back), at several past lengths,
for two nnwasm source trees driven interleaved in one run (A: e.g. main, B: this branch; with --copy, C: B with every present in a new block). Each
round and past length: one step from a random host past of that length (the first, not timed:
it brings the cache onto the device), `--warm` steps, then `--steps` timed steps; the median
of each, and B/A ratios.

    .venv/bin/python bench/ab/ab_kv_concat.py --a /work/main/py_runtime --b py_runtime \
        [--model /work/cache/decbench/models/llama_optimum_fp32/model.onnx] [--past 16 256 1024]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

WORKER = r'''
import json, sys, time
import numpy as np
import os
import nnwasm
if os.environ.get("KVC_COPY"):   # the fused attention, but every present in a new block (the past copied)
    from nnwasm.wasm.region import Region
    Region.tail_free = lambda self, start, rows: False
path = sys.argv[1]
so = nnwasm.SessionOptions()
so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
sess = nnwasm.InferenceSession(path, so)
ins = {i.name: i for i in sess.get_inputs()}
outs = [o.name for o in sess.get_outputs()]
pk = [n for n in ins if n.startswith("past_key_values")]
rng = np.random.default_rng(0)
print(json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    cmd = json.loads(line)
    if cmd.get("quit"):
        break
    p, n, warm = cmd["past"], cmd["steps"], cmd["warm"]
    # kv_cache_dim: the genai builder's symbolic head size (KV_DIM, default 64)
    shape = lambda i: [1 if isinstance(d, str) and "batch" in d else int(os.environ.get("KV_DIM", 64))
                       if d == "kv_cache_dim" else (p if isinstance(d, str) else d) for d in ins[i].shape]
    past = {k: rng.standard_normal(shape(k)).astype(np.float32) for k in pk}
    tok, times = 7, []
    for step in range(1 + warm + n):
        b = sess.io_binding()
        b.bind_cpu_input("input_ids", np.array([[tok]], np.int64))
        b.bind_cpu_input("attention_mask", np.ones((1, p + step + 1), np.int64))
        if "position_ids" in ins:
            b.bind_cpu_input("position_ids", np.array([[p + step]], np.int64))
        if "use_cache_branch" in ins:
            b.bind_cpu_input("use_cache_branch", np.array([True]))
        for k, v in past.items():
            (b.bind_ortvalue_input if isinstance(v, nnwasm.OrtValue) else b.bind_cpu_input)(k, v)
        for o in outs:
            b.bind_output(o, "wasm" if o.startswith("present") else "cpu")
        t0 = time.perf_counter()
        sess.run_with_iobinding(b)
        dt = time.perf_counter() - t0
        got = dict(zip(outs, b.get_outputs()))
        logits = got["logits"].numpy()
        tok = int(logits[0, -1].argmax())
        past = {k: got[k.replace("past_key_values", "present")] for k in pk}
        if step > warm:
            times.append(dt * 1e3)
    print(json.dumps({"ms": times, "logit0": float(logits[0, -1, 0])}), flush=True)
'''


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--a", required=True, help="py_runtime folder of the first tree")
    ap.add_argument("--b", required=True, help="py_runtime folder of the second tree")
    ap.add_argument("--model", default="/work/cache/decbench/models/llama_optimum_fp32/model.onnx")
    ap.add_argument("--past", type=int, nargs="*", default=[16, 256, 1024])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--warm", type=int, default=2)
    ap.add_argument("--copy", action="store_true", help="also B with every present in a new block (label C): "
                    "what the in-place append adds to the fused attention")
    args = ap.parse_args()
    procs = {}
    trees = [("A", args.a, ""), ("B", args.b, "")] + ([("C", args.b, "1")] if args.copy else [])
    for label, tree, copy in trees:
        env = dict(os.environ, PYTHONPATH=str(Path(tree).resolve()), KVC_COPY=copy)
        p = subprocess.Popen([sys.executable, "-c", WORKER, args.model], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, env=env)
        json.loads(p.stdout.readline())
        procs[label] = p
    ms = {(label, past): [] for label in procs for past in args.past}
    print(f"load before: {os.getloadavg()[0]:.1f}", flush=True)
    for r in range(args.rounds):
        for past in args.past:
            for label, p in procs.items():
                p.stdin.write(json.dumps({"past": past, "steps": args.steps, "warm": args.warm}) + "\n")
                p.stdin.flush()
                out = json.loads(p.stdout.readline())
                ms[label, past] += out["ms"]
                print(f"round {r} past {past} {label}: median {statistics.median(out['ms']):.1f} ms "
                      f"(logit {out['logit0']:.6f})", flush=True)
    for p in procs.values():
        p.stdin.write('{"quit": true}\n')
        p.stdin.flush()
        p.wait()
    print(f"load after: {os.getloadavg()[0]:.1f}")
    labels = list(procs)
    print("| past | " + " | ".join(f"{x} ms/step" for x in labels) + " | " +
          " | ".join(f"{x}/A" for x in labels[1:]) + " |\n" + "|---" * (2 * len(labels)) + "|")
    for past in args.past:
        med = {x: statistics.median(ms[x, past]) for x in labels}
        print(f"| {past} | " + " | ".join(f"{med[x]:.1f}" for x in labels) + " | " +
              " | ".join(f"{med[x] / med['A']:.2f}" for x in labels[1:]) + " |")


if __name__ == "__main__":
    main()
