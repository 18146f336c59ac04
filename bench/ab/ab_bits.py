"""Do builds of kernels.wasm give the same bits? Every zoo model (and the speed bench's models) run on
each build in wasmtime, WASM alone, on their sidecars' saved feeds; prints per model whether the
outputs of each build equal the first build's bit for bit, else the largest difference relative to
the output's range. For compiler switches (emcc -> LLVM 19: identical expected) and flavours
(`simd` -> `relaxed`: within tolerance).

    python bench/ab/ab_bits.py A.wasm B.wasm [...] [--zoo] [--bench] [--all] [--models NAME ...]

(default: --zoo and --bench; --all adds the slow zoo models)
"""
import argparse
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "py_runtime"))
sys.path.insert(0, str(ROOT / "build_scripts"))
os.environ.setdefault("NNWASM_WASMTIME_CACHE", "0")

import nnwasm  # noqa: E402
from nnwasm import host as host_mod  # noqa: E402
from nnwasm.host.wasmtime_host import WasmtimeHost  # noqa: E402


def models(zoo, bench, slow, only):
    """[(label, model path, kind, [(feeds)])]: the zoo's and the bench's models with saved cases."""
    out = []
    if zoo:
        import build_zoo
        d = build_zoo.zoo_dir()
        for name in build_zoo.ZOO:
            meta = build_zoo.load_sidecar(name)
            if meta and (slow or not meta.get("slow")) and (not only or name in only):
                out.append((name, d / meta["file"], meta["kind"], [_feeds(d, c) for c in meta["cases"]]))
    if bench:
        import build_bench_models as bbm
        d = bbm.bench_dir()
        for name in bbm.MODELS:
            meta = bbm.load_sidecar(name, d)
            if meta and (not only or name in only):
                out.append((name, d / meta["file"], meta["kind"], [_feeds(d, c) for c in meta["cases"]]))
    return out


def _feeds(d, case):
    return {n: np.fromfile(d / s["file"], dtype=np.dtype(s["dtype"]).newbyteorder("<")).reshape(s["dims"])
            for n, s in case["inputs"].items()}


def outputs(wasm_bytes, path, cases):
    """The model's outputs for each case, on a session over this build of kernels.wasm."""
    old = host_mod._HOST
    host_mod._HOST = WasmtimeHost(wasm_bytes)
    try:
        so = nnwasm.SessionOptions()
        so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
        sess = nnwasm.InferenceSession(str(path), so, providers=["WasmExecutionProvider"])
        return [sess.run(None, feeds) for feeds in cases]
    finally:
        host_mod._HOST = old


def compare(a, b):
    """(identical, largest |a - b| / max(1, range of a)) over every case and output."""
    same, worst = True, 0.0
    for outs_a, outs_b in zip(a, b):
        for x, y in zip(outs_a, outs_b):
            if x.tobytes() != y.tobytes():
                same = False
                x64, y64 = x.astype(np.float64), y.astype(np.float64)
                scale = max(1.0, float(np.abs(x64).max()))
                worst = max(worst, float(np.abs(x64 - y64).max()) / scale)
    return same, worst


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("wasms", nargs="+")
    ap.add_argument("--zoo", action="store_true")
    ap.add_argument("--bench", action="store_true")
    ap.add_argument("--all", action="store_true", help="with the slow zoo models")
    ap.add_argument("--models", nargs="*")
    a = ap.parse_args()
    zoo, bench = (a.zoo, a.bench) if (a.zoo or a.bench) else (True, True)
    builds = [Path(w).read_bytes() for w in a.wasms]
    differ = 0
    for name, path, kind, cases in models(zoo, bench, a.all, a.models):
        ref = outputs(builds[0], path, cases)
        cells = []
        for w, wasm in zip(a.wasms[1:], builds[1:]):
            same, worst = compare(ref, outputs(wasm, path, cases))
            differ += not same
            cells.append(f"{Path(w).name}: " + ("identical" if same else f"differs (max {worst:.2e} of range)"))
        print(f"{name:32s} {kind:6s} {len(cases)} case(s)  " + "  ".join(cells), flush=True)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
