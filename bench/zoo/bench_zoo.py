"""The model zoo (build_scripts/build_zoo.py), batch/sequence of each model's first case, single
thread: nnwasm against onnxruntime, interleaved run by run, medians (the machine is shared: only
ratios measured together mean anything).

    python bench/zoo/bench_zoo.py [--seconds 3] [--all] [--only NAME ...] [--no-node] [--json out.json]

Per model:
  wasm%      share of nodes on WASM (python -m nnwasm inspect)
  CPython    nnwasm on WASM alone (numpy fallback disabled), and "before": the WASM provider
             limited to the ops it had before issue 5 (BEFORE_ISSUE_5), the rest on numpy, as
             the runtime was; each over onnxruntime CPU (1 thread). A model must not be slower
             through the new kernels than "before" (empty where the model did not run at all).
  Node       nnwasm via web/nnwasm.mjs (WASM alone: Pyodide has no numpy) over onnxruntime-web's
             wasm backend (1 thread), from bench/zoo/bench_zoo_web.mjs.
Models that can't run print why. --all adds the slow models.
"""
import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "py_runtime"))
sys.path.insert(0, str(ROOT / "build_scripts"))
import build_zoo  # noqa: E402


def feeds_of(meta, zoo):
    import numpy as np
    case = meta["cases"][0]
    return {n: np.fromfile(zoo / s["file"], dtype=np.dtype(s["dtype"]).newbyteorder("<")).reshape(s["dims"])
            for n, s in case["inputs"].items()}


def _why(e):
    return f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"


# The WASM provider's ops before issue 5's kernels (LOWERINGS on 2026-11-22): "before" runs
# every other op on numpy, as the runtime then did (the optimizer of today still runs).
BEFORE_ISSUE_5 = set("""Add Sub Mul Div Sum BatchNormalization Relu Clip Sigmoid Tanh Conv MaxPool AveragePool
    Gemm MatMul GlobalAveragePool Softmax LogSoftmax Reshape Flatten Squeeze Unsqueeze Identity Dropout
    Concat Transpose""".split())


def _before_provider():
    """A WASM provider that refuses what it could not run before issue 5, registered by name."""
    from nnwasm.providers import PROVIDERS
    from nnwasm.wasm.provider import WasmExecutionProvider

    class Before(WasmExecutionProvider):
        name = "WasmExecutionProvider(before issue 5)"

        def capability(self, node, graph):
            if node.domain not in ("", "ai.onnx") or node.op_type not in BEFORE_ISSUE_5:
                return "not on WASM before issue 5"
            return super().capability(node, graph)
    PROVIDERS[Before.name] = Before
    return [Before.name, "NumpyExecutionProvider"]


def bench_cpython(name, meta, zoo, seconds):
    import onnxruntime
    import nnwasm
    path = str(zoo / meta["file"])
    x = feeds_of(meta, zoo)
    so = onnxruntime.SessionOptions()
    so.intra_op_num_threads = so.inter_op_num_threads = 1
    runners, row = {"ort": onnxruntime.InferenceSession(path, so, providers=["CPUExecutionProvider"])}, {}
    wasm_only = nnwasm.SessionOptions()
    wasm_only.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    for key, make in (("wasm", lambda: nnwasm.InferenceSession(path, wasm_only, providers=["WasmExecutionProvider"])),
                      ("before", lambda: nnwasm.InferenceSession(path, providers=_before_provider()))):
        try:
            sess = make()
            sess.run(None, x)
            runners[key] = sess
        except nnwasm.NnwasmError as e:
            row[f"{key}_error"] = _why(e)
    times = {k: [] for k in runners}
    for run in runners.values():   # warm-up
        run.run(None, x)
    end = time.perf_counter() + seconds
    while time.perf_counter() < end or len(times["ort"]) < 3:
        for k, sess in runners.items():
            t = time.perf_counter()
            sess.run(None, x)
            times[k].append((time.perf_counter() - t) * 1e3)
    med = {k: statistics.median(v) for k, v in times.items()}
    row.update({f"{k}_ms": v for k, v in med.items()})
    row.update({f"{k}_over_ort": med[k] / med["ort"] for k in med if k != "ort"})
    row["runs"] = len(times["ort"])
    return row


def bench_node(names, zoo, seconds):
    proc = subprocess.run(["node", str(ROOT / "bench" / "zoo" / "bench_zoo_web.mjs"), str(zoo), str(seconds), *names],
                          cwd=ROOT, capture_output=True, text=True, timeout=3600)
    if proc.returncode:
        raise RuntimeError(f"bench_zoo_web.mjs failed:\n{proc.stderr[-3000:]}")
    return {r["model"]: r for r in map(json.loads, proc.stdout.strip().splitlines()) if "model" in r}


def fmt(v, spec=".2f"):
    return "" if v is None else format(v, spec)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=3, help="measuring time per model and runtime pair")
    ap.add_argument("--all", action="store_true", help="include the slow models")
    ap.add_argument("--only", nargs="*", choices=list(build_zoo.ZOO))
    ap.add_argument("--no-node", action="store_true")
    ap.add_argument("--json")
    a = ap.parse_args()
    from nnwasm.inspect_model import NO_PROVIDER, report
    zoo = build_zoo.ensure(a.only)
    names = a.only or [n for n, (_, _, slow) in build_zoo.ZOO.items() if a.all or not slow]
    rows = {}
    for name in names:
        meta = build_zoo.load_sidecar(name)
        shapes = {n: tuple(s["dims"]) for n, s in meta["cases"][0]["inputs"].items()}
        r = report(str(zoo / meta["file"]), shapes)
        rows[name] = {"wasm_share": r["wasm_share"], "shapes": r["input_shapes"],
                      "fallback_ops": sorted({f["op"] for f in r["fallback"]}),
                      "no_provider_ops": sorted({f["op"] for f in r["fallback"] if f["provider"] == NO_PROVIDER}),
                      "cpython": bench_cpython(name, meta, zoo, a.seconds)}
        print(f"{name}: {json.dumps(rows[name])}", file=sys.stderr, flush=True)
    if not a.no_node:
        for name, r in bench_node(names, zoo, a.seconds).items():
            rows[name]["node"] = r
    print(f"{'model':30s} {'wasm%':>6s} | {'ort ms':>8s} {'wasm/ort':>8s} {'before/ort':>11s} | "
          f"{'ortweb ms':>9s} {'nnwasm/ortweb':>13s} | why not on WASM alone")
    for name, row in rows.items():
        c, n = row["cpython"], row.get("node", {})
        why = "falls back: " + " ".join(row["fallback_ops"]) if row["fallback_ops"] else (
            c.get("wasm_error") or n.get("error") or "")
        print(f"{name:30s} {100 * row['wasm_share']:5.1f}% | {fmt(c.get('ort_ms')):>8s} {fmt(c.get('wasm_over_ort')):>8s} "
              f"{fmt(c.get('before_over_ort')):>11s} | {fmt(n.get('ortweb_ms')):>9s} "
              f"{fmt(n.get('nnwasm_over_ortweb')):>13s} | {why[:100]}")
        if c.get("before_error"):
            print(f"{'':30s} did not run before issue 5: " + c["before_error"][:120])
    if a.json:
        Path(a.json).write_text(json.dumps({"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                                            "models": rows}, indent=1))


if __name__ == "__main__":
    main()
