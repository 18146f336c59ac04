"""nnwasm in Node, two builds of dist/web (A: e.g. main's, B: this branch's) on one decoder with its
present key/values kept in the session's memory (preferredOutputLocation "wasm"), one process each
(bench/decoders/decoders_node.mjs, "keep": true), driven alternately: each round one greedy
generation in A, then in B. Prints each round and the median decode tokens/s of each, B/A, and
the load average.

    .venv/bin/python bench/ab/ab_kept_trees_node.py MODEL --a DIST_A --b DIST_B [--dir DIR] [--rounds 5]
        [--new-tokens 64] [--node PATH]

MODEL is a bench/decoders model in --dir (e.g. llama_genai_fp32 in /work/cache/decbench/models);
a DIST is a dist/web folder (build_scripts/build_web.py)."""
import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--a", required=True, help="dist/web of the first build")
    ap.add_argument("--b", required=True, help="dist/web of the second build")
    ap.add_argument("--dir", default=str(Path.home() / ".cache" / "nnwasm" / "decbench" / "models"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--new-tokens", type=int, default=None, help="default: the model sidecar's")
    ap.add_argument("--node", default=os.environ.get("NNWASM_NODE24", "node"))
    args = ap.parse_args()
    procs = {}
    for label, dist in (("A", args.a), ("B", args.b)):
        cfg = {"dir": args.dir, "model": args.model, "runtime": "nnwasm", "threads": 1,
               "dist": str(Path(dist).resolve()), "keep": True}
        p = subprocess.Popen([args.node, str(ROOT / "bench" / "decoders" / "decoders_node.mjs"), json.dumps(cfg)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT)
        ready = json.loads(p.stdout.readline())
        if "error" in ready:
            sys.exit(f"{label}: {ready['error']}")
        procs[label] = p
    rates, tokens = {"A": [], "B": []}, {}
    print(f"load before: {os.getloadavg()[0]:.2f}", flush=True)
    for r in range(args.rounds):
        for label, p in procs.items():
            cmd = {"cmd": "gen"} if args.new_tokens is None else {"cmd": "gen", "new_tokens": args.new_tokens}
            p.stdin.write(json.dumps(cmd) + "\n")
            p.stdin.flush()
            out = json.loads(p.stdout.readline())
            if "error" in out:
                sys.exit(f"{label}: {out['error']} (step {out.get('step')})")
            rates[label].append(out["decode_steps"] / out["decode_ms"] * 1e3)
            tokens.setdefault(label, out["tokens"])
            print(f"round {r} {label}: prefill {out['prefill_ms']:.0f} ms, decode {rates[label][-1]:.2f} tok/s "
                  f"({out['decode_steps']} steps), load {os.getloadavg()[0]:.2f}", flush=True)
    for p in procs.values():
        p.stdin.write('{"cmd": "quit"}\n')
        p.stdin.flush()
        p.wait()
    a, b = statistics.median(rates["A"]), statistics.median(rates["B"])
    same = tokens.get("A") == tokens.get("B")
    print(f"{args.model}: A {a:.2f} tok/s, B {b:.2f} tok/s, B/A {b / a:.3f}; same tokens: {same}; "
          f"load after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
