"""Peak memory of session creation + the first run against what the session must hold: the
weights (the model's bytes, as the caller has them) plus the arenas of its plans in kernels.wasm
(which hold the weights once more, then the activations). Each measurement is a fresh process:
its resident size before creating the session (kernels.wasm loaded, nnwasm imported), when its
peak resident size is reset (Linux's /proc/self/clear_refs, "5"), and that peak (VmHWM) after the
first run, so every host copy made on the way (file reads, packing, plan words) counts.

    python bench/memory/peak_memory.py [MODEL.onnx ...] [--hosts py-onnx py-plan node-plan] [--json OUT]

Hosts: py-onnx (CPython, the .onnx), py-plan (CPython, a .nnwp compiled from it), node-plan (Node,
the .nnwp opened by path: the PlanReceiver writes its weights straight into kernels.wasm). Default
models: the demo's EfficientNet-Lite0 and the zoo's static models found in ~/.cache/nnwasm/zoo.
tests/test_memory_bounds.py asserts peak / (weights + arenas) <= 1.2 for each (issue 18, item 3).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ZOO = Path(os.environ.get("NNWASM_ZOO_DIR", Path.home() / ".cache" / "nnwasm" / "zoo"))
STATIC_ZOO = ["mobilenet_v3_small", "efficientnet_b0", "vit_tiny", "unet_small", "mobilenet_v3_small_int8_qdq"]
HOSTS = ["py-onnx", "py-plan", "node-plan"]

# The CPython child: argv = model path. Prints {rssBefore, peakRss, arenas, weights}.
PY_CHILD = r"""
import json, sys
sys.path.insert(0, sys.argv[2])
import numpy as np
import nnwasm
from nnwasm.host import get_host
get_host()   # kernels.wasm loaded before the baseline
def status(key):
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) * 1024 for l in f if l.startswith(key + ":"))
path = sys.argv[1]
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")   # resets the peak resident size (VmHWM) to the current one
rss0 = status("VmRSS")
sess = nnwasm.InferenceSession(path)
feeds = {}
for i in sess.get_inputs():
    dt = {"tensor(float)": np.float32, "tensor(int64)": np.int64, "tensor(float16)": np.float16}[i.type]
    feeds[i.name] = np.ones([d if isinstance(d, int) else 1 for d in i.shape], dt)
sess.run(None, feeds)
peak = status("VmHWM")
runners = []
def walk(r):
    if hasattr(r, "held_bytes"):
        runners.append(r)
    for s in getattr(r, "steps", ()):
        walk(s)
if hasattr(sess, "_runner"):
    walk(sess._runner)
else:
    for p in sess._cache.values():
        for r in p.runners:
            walk(r)
blocks = {id(b): b.size for r in runners for b in getattr(r, "_blocks", ())}   # the weights the plans share
print(json.dumps({"rssBefore": rss0, "peakRss": peak, "arenas": sum(r._cap for r in runners) + sum(blocks.values())}))
"""


def plan_sizes(nnwp):
    sys.path.insert(0, str(ROOT / "py_runtime"))
    from nnwasm import planfile
    import struct
    pf = planfile.read(nnwp.read_bytes())
    head = struct.unpack_from("<8i", pf.plan)
    return head[3], pf.arena_bytes   # weights, arena


def measure(model, host, nnwp):
    if host == "node-plan":
        out = subprocess.run(["node", str(ROOT / "bench" / "memory" / "peak_node.mjs"), str(nnwp)], cwd=ROOT,
                             capture_output=True, text=True, timeout=600)
    else:
        path = model if host == "py-onnx" else nnwp
        out = subprocess.run([sys.executable, "-c", PY_CHILD, str(path), str(ROOT / "py_runtime")], cwd=ROOT,
                             capture_output=True, text=True, timeout=600)
    if out.returncode:
        return {"error": (out.stdout + out.stderr)[-800:]}
    r = json.loads(out.stdout.strip().splitlines()[-1])
    weights, arena = plan_sizes(nnwp)
    if host == "py-onnx":
        weights, arena = Path(model).stat().st_size, r["arenas"]
    grown = r["peakRss"] - r["rssBefore"]
    return {"weights": weights, "arenas": arena, "peakGrowth": grown, "ratio": grown / (weights + arena)}


def default_models():
    models = [ROOT / "demo" / "assets" / "efficientnet-lite0.onnx"]
    models += [ZOO / f"{n}.onnx" for n in STATIC_ZOO if (ZOO / f"{n}.onnx").exists()]
    return models


def run(models, hosts, workdir):
    sys.path.insert(0, str(ROOT / "py_runtime"))
    import nnwasm
    rows = []
    for model in models:
        model = Path(model)
        nnwp = Path(workdir) / (model.stem + ".nnwp")
        nnwp.write_bytes(nnwasm.compile_plan(str(model)))
        for host in hosts:
            rows.append({"model": model.stem, "host": host, **measure(model, host, nnwp)})
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*")
    ap.add_argument("--hosts", nargs="+", default=HOSTS, choices=HOSTS)
    ap.add_argument("--json")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        rows = run(args.models or default_models(), args.hosts, d)
    print("| model | host | weights MB | arenas MB | peak growth MB | peak / (weights + arenas) |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        if "error" in r:
            print(f"| {r['model']} | {r['host']} | error: {r['error'][-200:]!r} | | | |")
        else:
            print(f"| {r['model']} | {r['host']} | {r['weights'] / 1e6:.1f} | {r['arenas'] / 1e6:.1f} | "
                  f"{r['peakGrowth'] / 1e6:.1f} | {r['ratio']:.2f} |")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
