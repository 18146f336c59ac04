"""The speed benchmark (issue 7): batch 1, one thread, every runtime interleaved in one run.

    .venv/bin/python bench/speed/bench_speed.py [--models NAME ...] [--rounds 10] [--seconds 5] [--quick]
                                          [--no-python] [--no-tfjs] [--pyodide] [--threads 1 2] [--node PATH]
                                          [--export bench|alt|both] [--before DIR] [--out bench/results]

--export: the bench's own exports (build_scripts/build_bench_models.py), the untuned hand-written twins
(NAME_alt, bench/speed/alt_models.py), or both side by side (the default). --before DIR: plan files of the
same models compiled by another nnwasm, timed as "nnwasm-before" in the same rounds (before/after a change).

--threads 1 2 adds, per thread count t > 1, a second Node process holding nnwasm and onnxruntime-web at
t threads (their env.wasm.numThreads: a count is set once per process, before the first session) and
nnwasm in CPython at SessionOptions.intra_op_num_threads = t; their times are keyed "<runtime>@t" and
interleaved in the same rounds as the one-thread runtimes.

Per model (build_scripts/build_bench_models.py, cached in ~/.cache/nnwasm/bench), one Node process
(bench/speed/speed_node.mjs) holds nnwasm on its .nnwp plan file, onnxruntime-web (wasm, 1 thread),
TF.js's wasm backend where it has the architecture, bench/speed/peak.c's f32x4 loop, and with --pyodide
nnwasm on the .onnx through Pyodide; this process holds nnwasm in CPython (wasmtime, WASM alone),
onnxruntime (1 thread, sequential) and the peak loop under wasmtime. All warm up first (Node: each
>= 30 runs and >= 4 s, so that V8 has tiered up), then R rounds each run every runtime a few times
in turn (Node's then CPython's), so that the machine's drift cancels in ratios: a ratio is the
median over rounds of the two runtimes' medians in that round. Writes OUT/speed.json, and through
bench/speed/speed_report.py OUT/speed.md and OUT/speed.png.
"""
import argparse
import json
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "build_scripts"))
sys.path.insert(0, str(ROOT / "py_runtime"))
sys.path.insert(0, str(ROOT / "bench" / "speed"))
import build_bench_models  # noqa: E402
import model_flops  # noqa: E402
import speed_report  # noqa: E402

TFJS = {"mobilenet_v2", "squeezenet1_1", "resnet50"}   # speed_tfjs_models.mjs
PEAK_ITERS = 1_200_000                                 # as speed_node.mjs: 96 flops each


def build_peak():
    from build_kernels import llvm19, wasm_cmd
    out = ROOT / "build" / "bench" / "peak.wasm"
    out.parent.mkdir(parents=True, exist_ok=True)
    src = ROOT / "bench" / "speed" / "peak.c"
    if not out.exists() or out.stat().st_mtime < src.stat().st_mtime:
        subprocess.run(wasm_cmd("simd", [src], out), check=True, env=llvm19()[1])   # as kernels.wasm
    return out


def machine():
    cpu = [ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
           if ln.startswith("model name")]
    from importlib.metadata import version
    pkg = lambda p: json.loads((ROOT / "node_modules" / p / "package.json").read_text())["version"]  # noqa: E731
    return {"cpu": f"{cpu[0]} x {len(cpu)}" if cpu else platform.processor(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "node": subprocess.run([NODE, "--version"], capture_output=True, text=True).stdout.strip(),
            "onnxruntime": version("onnxruntime"), "wasmtime": version("wasmtime"),
            "onnxruntime-web": pkg("onnxruntime-web"), "tfjs": pkg("@tensorflow/tfjs-backend-wasm"),
            "load_average": list(__import__("os").getloadavg())}


NODE = "node"   # --node


class Node:
    """speed_node.mjs for one model: one JSON command a line, one JSON reply."""
    def __init__(self, cfg):
        self.p = subprocess.Popen([NODE, str(ROOT / "bench" / "speed" / "speed_node.mjs"), json.dumps(cfg)], cwd=ROOT,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.ready = self._reply()

    def _reply(self):
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError(f"speed_node.mjs exited ({self.p.wait()})")
        return json.loads(line)

    def __call__(self, **cmd):
        self.p.stdin.write(json.dumps(cmd) + "\n")
        self.p.stdin.flush()
        return self._reply()


def python_runtimes(meta, d, peak_bytes, threads=(1,)):
    """name -> (run, session or None) for CPython; errors -> why not."""
    import numpy as np
    import onnxruntime
    import nnwasm
    from nnwasm.host.wasmtime_host import WasmtimeHost
    case = meta["cases"][0]
    x = {n: np.fromfile(d / s["file"], dtype=s["dtype"]).reshape(s["dims"]) for n, s in case["inputs"].items()}
    path = str(d / meta["file"])
    out, errors, create = {}, {}, {}
    so = onnxruntime.SessionOptions()
    so.intra_op_num_threads = so.inter_op_num_threads = 1
    so.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    wasm_only = nnwasm.SessionOptions()
    wasm_only.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    makers = {"py-nnwasm": lambda: nnwasm.InferenceSession(path, wasm_only, providers=["WasmExecutionProvider"]),
              "ort": lambda: onnxruntime.InferenceSession(path, so, providers=["CPUExecutionProvider"])}
    for t in threads:
        if t > 1:
            threaded = nnwasm.SessionOptions()
            threaded.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
            threaded.intra_op_num_threads = t
            makers[f"py-nnwasm@{t}"] = (lambda so=threaded: nnwasm.InferenceSession(path, so, providers=["WasmExecutionProvider"]))
    for name, make in makers.items():
        t = time.perf_counter()
        try:
            s = make()
            create[name] = (time.perf_counter() - t) * 1e3
            s.run(None, x)
            out[name] = (lambda s=s: s.run(None, x))
        except Exception as e:   # noqa: BLE001 -- reported, not fatal
            errors[name] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
    host = WasmtimeHost(peak_bytes)
    out["py-peak"] = lambda: host.call("peak", PEAK_ITERS, 1000)
    return out, errors, create


def timed(run):
    t = time.perf_counter()
    run()
    return (time.perf_counter() - t) * 1e3


def bench_model(name, a, d, peak):
    meta = build_bench_models.load_sidecar(name, d)
    rts = ["nnwasm", *(["nnwasm-pyodide"] if a.pyodide else []), "ort-web",
           *(["tfjs"] if name in TFJS and not a.no_tfjs else []), "peak", *(["nnwasm-fp32"] if meta["base"] else []),
           *(["nnwasm-before"] if a.before and (Path(a.before) / f"{name}.nnwp").exists() else [])]
    print(f"{name}: starting Node ({', '.join(rts)})", flush=True)
    node = Node({"dir": str(d), "model": name, "runtimes": rts, "peakWasm": str(peak), "base": meta["base"], "threads": 1,
                 "before": a.before})
    row = {"model": name, "kind": meta["kind"], "base": meta["base"], "gflop": model_flops.gflop(d / meta["file"]),
           "plan_error": meta.get("plan_error"), **node.ready}
    # a Node process per setting that is fixed per realm: 1 (the default flavour, one thread), a thread
    # count t > 1 (env.wasm.numThreads), "simd" (--flavour-ab: env.wasm.relaxedSimd = false, one thread)
    nodes = {1: node}
    more = [(t, ["nnwasm", "ort-web"], {"threads": t}) for t in a.threads if t > 1]
    if a.flavour_ab:
        more.append(("simd", ["nnwasm", *(["nnwasm-fp32"] if meta["base"] else [])], {"threads": 1, "flavour": "simd"}))
    for label, runtimes, cfg in more:
        print(f"{name}: starting Node, {label}{' threads' if label != 'simd' else ' flavour'} ({', '.join(runtimes)})", flush=True)
        nodes[label] = Node({"dir": str(d), "model": name, "runtimes": runtimes, "peakWasm": str(peak), "base": meta["base"], **cfg})
        for key in ("create_ms", "errors", "max_abs_diff"):
            row[key].update({f"{k}@{label}": v for k, v in nodes[label].ready.get(key, {}).items()})
    suffix = lambda t, k: k if t == 1 else f"{k}@{t}"   # noqa: E731
    py, py_errors, py_create = ({}, {}, {}) if a.no_python else python_runtimes(meta, d, peak.read_bytes(), a.threads)
    row["errors"].update(py_errors)
    row["create_ms"].update(py_create)
    last = {}
    for t, nd in nodes.items():
        w = nd(cmd="warm", runs=a.warm_runs, seconds=a.warm_seconds)
        last.update({suffix(t, k): v for k, v in w["last_ms"].items()})
        row[suffix(t, "nnwasm_runs_on")] = w.get("nnwasm")   # {flavour, threads} once warm
        if t == 1:
            row["warm_runs"] = w["warm_runs"]
    end = time.perf_counter() + min(a.warm_seconds, 2)
    for k, run in py.items():   # wasmtime compiles ahead of time: a few runs warm the caches
        for i in range(3):
            last[k] = timed(run)
        while time.perf_counter() < end and k != "py-peak":
            last[k] = timed(run)
    per_round = {k: max(1, round(a.seconds * 1e3 / a.rounds / max(v, 0.01))) for k, v in last.items()}
    per_round = {k: min(n, 50) for k, n in per_round.items()}
    rounds = []
    for r in range(a.rounds):
        times = {}
        ts = list(nodes)
        for t in ts[r % len(ts):] + ts[:r % len(ts)]:   # the Node processes in turn, rotated each round
            mine = {k: per_round[suffix(t, k)] for k in nodes[t].ready.get("create_ms", {}) if suffix(t, k) in per_round}
            got = nodes[t](cmd="round", runs=mine, index=r)["times"]
            times.update({suffix(t, k): v for k, v in got.items()})
        order = list(py)[r % max(len(py), 1):] + list(py)[:r % max(len(py), 1)]
        for k in order:
            times[k] = [timed(py[k]) for _ in range(per_round[k])]
        rounds.append({k: [round(t, 3) for t in v] for k, v in times.items()})
        print(f"  round {r + 1}/{a.rounds}: " + ", ".join(f"{k} {statistics.median(v):.1f}" for k, v in times.items()),
              flush=True)
    prof = node(cmd="profile", runs=a.profile_runs)
    row["ops"], row["top_nodes"] = prof["ops"], prof.get("nodes")
    row["memory"] = node(cmd="quit")["memory"]
    for t, nd in nodes.items():
        if t != 1:
            row["memory"].update({f"{k}@{t}": v for k, v in nd(cmd="quit")["memory"].items()})
    row["rounds"] = rounds
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="*", choices=list(build_bench_models.MODELS), help="default: those of --export")
    ap.add_argument("--export", choices=["bench", "alt", "both"], default="both",
                    help="the bench's own exports, the untuned hand-written ones (NAME_alt: bench/speed/alt_models.py), "
                         "or both side by side (default)")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--seconds", type=float, default=5, help="measured time per model and runtime, over all rounds")
    ap.add_argument("--warm-runs", type=int, default=30)
    ap.add_argument("--warm-seconds", type=float, default=4)
    ap.add_argument("--profile-runs", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="a smoke run: 3 rounds, 1 s, little warm-up (V8 not tiered up)")
    ap.add_argument("--no-python", action="store_true", help="skip CPython (nnwasm under wasmtime, onnxruntime)")
    ap.add_argument("--no-tfjs", action="store_true")
    ap.add_argument("--pyodide", action="store_true", help="also nnwasm on the .onnx through Pyodide in Node")
    ap.add_argument("--threads", nargs="*", type=int, default=[1],
                    help="thread counts: nnwasm and onnxruntime-web in Node and nnwasm in CPython at each (1 always runs)")
    ap.add_argument("--flavour-ab", action="store_true",
                    help="also nnwasm in Node on the baseline simd flavour (relaxed SIMD off), one thread: the flavour A/B")
    ap.add_argument("--node", default="node", help="the Node binary (issue 16: Node 24 LTS)")
    ap.add_argument("--before", default=None, help="a folder of plan files NAME.nnwp compiled by another nnwasm (before a "
                    "change): Node runs them too, as runtime nnwasm-before, on this kernels.wasm, in the same rounds")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    a = ap.parse_args()
    global NODE
    NODE = a.node
    a.threads = sorted(set(a.threads) | {1})
    if not a.models:
        alt = build_bench_models.ALT
        own = [n for n in build_bench_models.MODELS if not n.endswith(alt)]
        a.models = {"bench": own, "alt": [n + alt for n in own],
                    "both": [m for n in own for m in (n, n + alt)]}[a.export]
    if a.quick:
        a.rounds, a.seconds, a.warm_runs, a.warm_seconds, a.profile_runs = 3, 1, 3, 0.3, 2
    d = build_bench_models.ensure(a.models)
    peak = build_peak()
    result = {"machine": machine(), "settings": {k: v for k, v in vars(a).items() if k != "out"},
              "peak_gflop_per_run": 96 * PEAK_ITERS / 1e9, "models": []}
    for name in a.models:
        result["models"].append(bench_model(name, a, d, peak))
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "speed.json").write_text(json.dumps(result, indent=1))
    speed_report.write(result, out)
    print((out / "speed.md").read_text())


if __name__ == "__main__":
    main()
