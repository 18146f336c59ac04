"""Build the speed benchmark's models (bench/speed/bench_speed.py): batch 1, static shapes, RANDOM weights
except EfficientNet-Lite0 (the demo's real model), each also compiled to a .nnwp plan file.

    .venv/bin/python build_scripts/build_bench_models.py [--only NAME ...] [--force] [--list]

They live outside git: $NNWASM_BENCH_DIR, else ~/.cache/nnwasm/bench. A model whose sidecar records
this BUILDER_VERSION is not rebuilt; its plan is recompiled whenever kernels.wasm or nnwasm's
sources changed (plan_stamp). Per model NAME, as build_zoo.py's (whose export, quantizers and
reference writer this reuses): NAME.onnx, NAME.json (inputs, kind, the float model it derives from,
cases with feeds and onnxruntime's outputs in NAME.ref/), and NAME.nnwp, or in the sidecar
"plan_error" saying why nnwasm.compile_plan refused it.

Each model NAME also has a second, untuned export NAME_alt (issue 16): the same architecture written
by hand as plain torch modules and exported as people export them (bench/speed/alt_models.py).
"""
import argparse
import functools
import hashlib
import json
import os
import shutil
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "py_runtime" / "nnwasm"
sys.path.insert(0, str(ROOT / "build_scripts"))
sys.path.insert(0, str(ROOT / "py_runtime"))
sys.path.insert(0, str(ROOT / "bench" / "speed"))
import alt_models  # noqa: E402
import build_zoo  # noqa: E402

BUILDER_VERSION = 2
IMAGE = {"x": ("float32", [1, 3, 224, 224])}
SEQ = 128


def bench_dir():
    return Path(os.environ.get("NNWASM_BENCH_DIR") or Path.home() / ".cache" / "nnwasm" / "bench")


def efficientnet_lite0(path, built):
    shutil.copyfile(ROOT / "demo" / "assets" / "efficientnet-lite0.onnx", path)
    return {"input": ("float32", [1, 3, 224, 224])}


def _unit_outputs(model):
    """alt_models.unit_outputs on a random image: no denormals from torchvision's random init"""
    import torch
    return alt_models.unit_outputs(model, torch.randn(IMAGE["x"][1]))


def _vision(arch):
    def make():
        return _unit_outputs(getattr(build_zoo._torchvision().models, arch)(weights=None)), IMAGE
    return make


def bert_4l():
    from transformers import BertConfig, BertModel
    cfg = BertConfig(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024,
                     max_position_embeddings=512, attn_implementation="eager")
    model, _ = build_zoo._text(BertModel(cfg, add_pooling_layer=False), "last_hidden_state")
    return model, {"input_ids": ("int64", [1, SEQ]), "attention_mask": ("int64", [1, SEQ])}


# name -> (builder, kind, the float model an int8 one derives from). Builders taking (path, built)
# write the file themselves; the others return (torch module, input spec) for build_zoo.export.
MODELS = {
    "efficientnet_lite0": (efficientnet_lite0, "float", None),
    "mobilenet_v2": (_vision("mobilenet_v2"), "float", None),
    "squeezenet1_1": (_vision("squeezenet1_1"), "float", None),
    "resnet50": (_vision("resnet50"), "float", None),
    "bert_4l": (bert_4l, "float", None),
    "mobilenet_v2_int8_qdq": (build_zoo.quantize_static_of("mobilenet_v2"), "int8", "mobilenet_v2"),
    "bert_4l_int8_dynamic": (build_zoo.quantize_dynamic_of("bert_4l"), "int8", "bert_4l"),
    # the second, untuned export of each (issue 16): written by hand as plain nn.Modules (bench/speed/alt_models.py)
    "efficientnet_lite0_alt": (alt_models.builder("efficientnet_lite0_alt"), "float", None),
    "mobilenet_v2_alt": (alt_models.builder("mobilenet_v2_alt"), "float", None),
    "squeezenet1_1_alt": (alt_models.builder("squeezenet1_1_alt"), "float", None),
    "resnet50_alt": (alt_models.builder("resnet50_alt"), "float", None),
    "bert_4l_alt": (alt_models.builder("bert_4l_alt"), "float", None),
    "mobilenet_v2_int8_qdq_alt": (build_zoo.quantize_static_of("mobilenet_v2_alt"), "int8", "mobilenet_v2_alt"),
    "bert_4l_int8_dynamic_alt": (build_zoo.quantize_dynamic_of("bert_4l_alt"), "int8", "bert_4l_alt"),
}
ALT = "_alt"   # the untuned exports' suffix: bench_speed.py --export bench | alt | both
WRITES_ITSELF = {"efficientnet_lite0", "mobilenet_v2_int8_qdq", "bert_4l_int8_dynamic"} | {n for n in MODELS if n.endswith(ALT)}


def build_one(name, out, built):
    import nnwasm
    make, kind, base = MODELS[name]
    path = out / f"{name}.onnx"
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spec = make(path, built) if name in WRITES_ITSELF else build_zoo.export(make, path)
    built[name] = {"path": path, "spec": spec}
    meta = {"builder_version": BUILDER_VERSION, "name": name, "file": path.name, "kind": kind, "base": base,
            "inputs": [{"name": n, "dtype": d, "shape": s} for n, (d, s) in spec.items()],
            "cases": build_zoo.references(name, path, spec)}
    compile_plan(name, out, meta)
    print(f"built {name} ({path.stat().st_size >> 10} KiB, plan: {meta.get('plan') or meta['plan_error'][:80]})"
          f" in {time.perf_counter() - t0:.1f} s", flush=True)


@functools.cache
def plan_stamp():
    """What a plan file depends on besides its model: kernels.wasm and the compiler's sources. A
    plan compiled by another nnwasm may be refused by this kernels.wasm (or run differently)."""
    h = hashlib.sha256((PACKAGE / "kernels.wasm").read_bytes())
    for p in sorted(PACKAGE.rglob("*.py")):
        h.update(p.relative_to(PACKAGE).as_posix().encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def compile_plan(name, out, meta):
    """(Re)compiles NAME.onnx to NAME.nnwp with this nnwasm and writes the sidecar."""
    import nnwasm
    plan = out / f"{name}.nnwp"
    plan.unlink(missing_ok=True)
    meta.pop("plan", None)
    meta.pop("plan_error", None)
    try:
        plan.write_bytes(nnwasm.compile_plan(str(out / meta["file"])))
        meta["plan"] = plan.name
    except nnwasm.NnwasmError as e:
        meta["plan_error"] = f"{type(e).__name__}: {str(e)[:600]}"
    meta["plan_stamp"] = plan_stamp()
    (out / f"{name}.json").write_text(json.dumps(meta, indent=1))


def load_sidecar(name, out=None):
    """The sidecar of a built, up-to-date model, or None."""
    p = (out or bench_dir()) / f"{name}.json"
    try:
        meta = json.loads(p.read_text())
    except (OSError, ValueError):
        return None
    return meta if meta.get("builder_version") == BUILDER_VERSION and (p.parent / meta["file"]).exists() else None


def ensure(names=None, force=False):
    """Builds the named models (default: all) that are missing or stale, and the float models the
    int8 ones derive from; returns the directory."""
    out = bench_dir()
    out.mkdir(parents=True, exist_ok=True)
    want = set(names or MODELS)
    want |= {MODELS[n][2] for n in want if MODELS[n][2]}
    built = {}
    for name in [n for n in MODELS if n in want]:
        meta = None if force else load_sidecar(name, out)
        if meta is None:
            build_one(name, out, built)
        else:
            if meta.get("plan_stamp") != plan_stamp():
                compile_plan(name, out, meta)   # the model is current, its plan is not
            built[name] = {"path": out / meta["file"],
                           "spec": {i["name"]: (i["dtype"], i["shape"]) for i in meta["inputs"]}}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", choices=list(MODELS), help="build only these (and their float bases)")
    ap.add_argument("--force", action="store_true", help="rebuild even if up to date")
    ap.add_argument("--list", action="store_true", help="list the models and exit")
    a = ap.parse_args()
    if a.list:
        print("\n".join(f"{n:24s} {kind}" for n, (_, kind, _) in MODELS.items()))
        return
    t0 = time.perf_counter()
    out = ensure(a.only, a.force)
    print(f"bench models in {out} ({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
