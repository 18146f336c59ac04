"""Conv nets (SqueezeNet 1.1, ResNet-50, MobileNetV2 from torchvision with random weights;
EfficientNet-Lite0 from demo/assets) in Node, one thread: nnwasm plan files against
onnxruntime-web 1.30 (wasm, numThreads = 1), interleaved, medians; GFLOP/s of nnwasm.

    python bench/speed/bench_conv.py [--seconds 20] [--before DIR] [--profile] [--only NAME ...]

--before DIR: another checkout (its py_runtime with a built kernels.wasm, and its web/) measured in
the same run, its plans compiled by its own Python. --profile: nnwasm's per-op medians, summed by
kernel, instead of timings. Models are cached in ~/.cache/nnwasm/bench-conv.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
CACHE = Path(os.path.expanduser("~/.cache/nnwasm/bench-conv"))
GFLOP = {"squeezenet1_1": 0.70, "resnet50": 8.18, "mobilenet_v2": 0.60, "efficientnet-lite0": 0.77}


def models():
    CACHE.mkdir(parents=True, exist_ok=True)
    out = {}
    for name in ("squeezenet1_1", "resnet50", "mobilenet_v2"):
        path = CACHE / f"{name}.onnx"
        if not path.exists():
            sys.modules["torchvision._meta_registrations"] = types.ModuleType("torchvision._meta_registrations")
            import torch
            import torchvision
            torch.manual_seed(0)
            m = getattr(torchvision.models, name)(weights=None).eval()
            torch.onnx.export(m, torch.randn(1, 3, 224, 224), str(path), opset_version=13, input_names=["x"],
                              output_names=["y"], dynamo=False)
        out[name] = path
    out["efficientnet-lite0"] = ROOT / "demo" / "assets" / "efficientnet-lite0.onnx"
    return out


def compile_plan(root, onnx, dest):
    code = ("import sys; sys.path.insert(0, sys.argv[1] + '/py_runtime'); import nnwasm; "
            "open(sys.argv[3], 'wb').write(nnwasm.compile_plan(sys.argv[2]))")
    subprocess.run([sys.executable, "-c", code, str(root), str(onnx), str(dest)], check=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--before", type=Path)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--only", nargs="*")
    a = ap.parse_args()
    roots = [("after", ROOT)] + ([("before", a.before.resolve())] if a.before else [])
    chosen = {k: v for k, v in models().items() if not a.only or k in a.only}
    with tempfile.TemporaryDirectory() as tmp:
        job = {"seconds": a.seconds, "profile": a.profile, "models": [], "builds": [
            {"label": label, "web": (root / "web").as_uri(),
             "kernels": str(root / "py_runtime" / "nnwasm" / "kernels.wasm")} for label, root in roots]}
        for name, onnx in chosen.items():
            plans = []
            for label, root in roots:
                dest = Path(tmp) / f"{name}.{label}.nnwp"
                compile_plan(root, onnx, dest)
                plans.append(str(dest))
            job["models"].append({"name": name, "onnx": str(onnx), "plans": plans})
        (Path(tmp) / "job.json").write_text(json.dumps(job))
        proc = subprocess.Popen(["node", str(ROOT / "bench" / "speed" / "bench_conv.mjs"), str(Path(tmp) / "job.json")],
                                stdout=subprocess.PIPE, text=True, cwd=ROOT)
        for line in proc.stdout:
            r = json.loads(line)
            if a.profile:
                kinds = {}
                for key, ms in r["ops"]:
                    kinds[key.split("\t")[1]] = kinds.get(key.split("\t")[1], 0) + ms
                total = sum(kinds.values())
                print(f"{r['model']}: {total:.1f} ms in ops; by kernel: " + ", ".join(
                    f"{k} {v:.1f}" for k, v in sorted(kinds.items(), key=lambda kv: -kv[1])))
                for key, ms in sorted(r["ops"], key=lambda kv: -kv[1])[:12]:
                    print(f"    {ms:7.2f} ms  {key}")
                continue
            ms = r["ms"]
            cells = "  ".join(f"{k} {v:7.2f} ms" for k, v in ms.items())
            ratios = "  ".join(f"{k}/ort {ms[k] / ms['ort-web']:.3f}" for k, _ in roots)
            extra = f"  after/before {ms['after'] / ms['before']:.3f}" if a.before else ""
            print(f"{r['model']:20} {cells}  {ratios}{extra}  nnwasm {GFLOP[r['model']] / ms['after'] * 1e3:.1f} "
                  f"GFLOP/s  ({r['runs']} runs)", flush=True)
        if proc.wait():
            raise SystemExit("node failed")


if __name__ == "__main__":
    main()
