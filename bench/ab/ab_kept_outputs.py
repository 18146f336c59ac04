"""nnwasm in Node: a decoder's present key/values kept in the session's memory
(preferredOutputLocation "wasm", fed back by reference) against CPU outputs (copied to JS and back
every step), two processes driven interleaved by bench/decoders/decoders_node.mjs ("keep": false
for the second). Prints each round and the median decode tokens/s of each, with the load average.

    .venv/bin/python bench/ab/ab_kept_outputs.py MODEL [--dir DIR] [--rounds 3] [--new-tokens 24] [--node PATH]

MODEL is a bench/decoders model (make bench-decoders builds them into --dir)."""
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
    ap.add_argument("--dir", default=str(Path.home() / ".cache" / "nnwasm" / "decbench" / "models"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--new-tokens", type=int, default=24)
    ap.add_argument("--node", default=os.environ.get("NNWASM_NODE24", "node"))
    args = ap.parse_args()
    procs = {}
    for keep in (True, False):
        cfg = {"dir": args.dir, "model": args.model, "runtime": "nnwasm", "threads": 1,
               "dist": str(ROOT / "dist" / "web"), "keep": keep}
        p = subprocess.Popen([args.node, str(ROOT / "bench" / "decoders" / "decoders_node.mjs"), json.dumps(cfg)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT)
        ready = json.loads(p.stdout.readline())
        if "error" in ready:
            sys.exit(f"keep={keep}: {ready['error']}")
        procs[keep] = p
    rates = {True: [], False: []}
    print(f"load before: {os.getloadavg()[0]:.1f}")
    for r in range(args.rounds):
        for keep, p in procs.items():
            p.stdin.write(json.dumps({"cmd": "gen", "new_tokens": args.new_tokens}) + "\n")
            p.stdin.flush()
            out = json.loads(p.stdout.readline())
            if "error" in out:
                sys.exit(f"keep={keep}: {out['error']}")
            rates[keep].append(out["decode_steps"] / out["decode_ms"] * 1e3)
            print(f"round {r} {'kept' if keep else 'cpu '}: prefill {out['prefill_ms']:.0f} ms, "
                  f"decode {rates[keep][-1]:.1f} tok/s, first tokens {out['tokens'][:4]}", flush=True)
    for p in procs.values():
        p.stdin.write('{"cmd": "quit"}\n')
        p.stdin.flush()
        p.wait()
    kept, cpu = statistics.median(rates[True]), statistics.median(rates[False])
    print(f"{args.model}: kept {kept:.1f} tok/s, CPU outputs {cpu:.1f} tok/s, kept/CPU {kept / cpu:.2f}; "
          f"load after {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
