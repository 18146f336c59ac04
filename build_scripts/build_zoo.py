"""Build the model zoo: public architectures with RANDOM weights (no model hub), exported to ONNX,
with onnxruntime's outputs saved next to each model for the tests and benchmarks to compare with.

    .venv/bin/pip install -r build_scripts/requirements-zoo.txt     (or: make zoo)
    .venv/bin/python build_scripts/build_zoo.py [--only NAME ...] [--force] [--list]

The zoo lives outside git: $NNWASM_ZOO_DIR, else ~/.cache/nnwasm/zoo. A model whose sidecar
records this BUILDER_VERSION is not rebuilt. Per model NAME:
    NAME.onnx                the model
    NAME.json                its sidecar: inputs (with symbolic dims), kind, cases (below)
    NAME.ref/CASE.IO.bin     raw little-endian tensors of each case's feeds and onnxruntime's
                             outputs, described in the sidecar's "cases" (Node reads them
                             without numpy)
Dynamic-axes models get two cases of different batch/sequence shapes; static ones get one.
Everything is seeded: a rebuild gives the same weights and feeds.
"""
import argparse
import json
import os
import sys
import time
import types
import warnings
from pathlib import Path

BUILDER_VERSION = 2
OPSET = 17
ROOT = Path(__file__).resolve().parent.parent


def zoo_dir():
    return Path(os.environ.get("NNWASM_ZOO_DIR") or Path.home() / ".cache" / "nnwasm" / "zoo")


# --- torch models ------------------------------------------------------------------------------

def _skip_torchvision_registrations():
    # torchvision's PyPI wheels link their C extension (detection ops) against the CUDA torch, so
    # it can't load into torch 2.13.0+cpu and its fake-kernel registrations fail at import (also
    # when transformers imports it). The zoo's architectures need none of those ops.
    sys.modules.setdefault("torchvision._meta_registrations", types.ModuleType("torchvision._meta_registrations"))


def _torchvision():
    _skip_torchvision_registrations()
    import torchvision
    return torchvision


def _image(size, batch=1):
    return {"x": ("float32", [batch, 3, size, size])}


def mobilenet_v3_small():
    return _torchvision().models.mobilenet_v3_small(weights=None), _image(224)


def efficientnet_b0():
    return _torchvision().models.efficientnet_b0(weights=None), _image(224)


def convnext_tiny():
    return _torchvision().models.convnext_tiny(weights=None), _image(224)


def deeplabv3_mobilenet_v3_large():
    import torch
    net = _torchvision().models.segmentation.deeplabv3_mobilenet_v3_large(
        weights=None, weights_backbone=None, num_classes=21, aux_loss=False)

    class OutOnly(torch.nn.Module):   # the model returns a dict {"out": ...}
        def __init__(self):
            super().__init__()
            self.net = net

        def forward(self, x):
            return self.net(x)["out"]
    return OutOnly(), _image(224)


def vit_tiny():
    vt = _torchvision().models.VisionTransformer(image_size=64, patch_size=16, num_layers=2, num_heads=2,
                                                 hidden_dim=64, mlp_dim=128, num_classes=10)
    return vt, _image(64)


def unet_small():
    import torch
    from torch import nn

    def block(cin, cout):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(),
                             nn.Conv2d(cout, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU())

    class UNet(nn.Module):
        def __init__(self, c=(8, 16, 32)):
            super().__init__()
            self.down = nn.ModuleList([block(3, c[0]), block(c[0], c[1])])
            self.mid = block(c[1], c[2])
            self.up = nn.ModuleList([nn.ConvTranspose2d(c[2], c[1], 2, stride=2),
                                     nn.ConvTranspose2d(c[1], c[0], 2, stride=2)])
            self.dec = nn.ModuleList([block(2 * c[1], c[1]), block(2 * c[0], c[0])])
            self.head = nn.Conv2d(c[0], 2, 1)

        def forward(self, x):
            skips = []
            for d in self.down:
                x = d(x)
                skips.append(x)
                x = nn.functional.max_pool2d(x, 2)
            x = self.mid(x)
            for up, dec, skip in zip(self.up, self.dec, reversed(skips)):
                x = dec(torch.cat([up(x), skip], dim=1))
            return torch.sigmoid(self.head(x))
    return UNet(), _image(64)


def audio_rnn():
    import torch
    from torch import nn

    class AudioRNN(nn.Module):
        """[B, T, 40] features -> Conv1d front end -> bidirectional GRU -> LSTM -> per-frame logits."""
        def __init__(self):
            super().__init__()
            self.front = nn.Sequential(nn.Conv1d(40, 32, 3, padding=1), nn.ReLU())
            self.gru = nn.GRU(32, 24, batch_first=True, bidirectional=True)
            self.lstm = nn.LSTM(48, 24, batch_first=True)
            self.out = nn.Linear(24, 12)

        def forward(self, x):
            x = self.front(x.transpose(1, 2)).transpose(1, 2)
            x, _ = self.gru(x)
            x, _ = self.lstm(x)
            return self.out(x)
    return AudioRNN(), {"x": ("float32", ["batch", "time", 40])}


def _text(model, output):
    import torch

    class Wrapper(torch.nn.Module):   # transformers 5.x: keyword call (a positional one hits use_cache)
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask):
            return getattr(self.model(input_ids=input_ids, attention_mask=attention_mask), output)
    spec = {"input_ids": ("int64", ["batch", "sequence"]), "attention_mask": ("int64", ["batch", "sequence"])}
    return Wrapper(), spec


def bert_tiny():
    from transformers import BertConfig, BertModel
    cfg = BertConfig(vocab_size=1000, hidden_size=128, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=256, max_position_embeddings=128, attn_implementation="eager")
    return _text(BertModel(cfg, add_pooling_layer=False), "last_hidden_state")


def distilbert_tiny():
    from transformers import DistilBertConfig, DistilBertModel
    cfg = DistilBertConfig(vocab_size=1000, dim=64, n_layers=2, n_heads=2, hidden_dim=128,
                           max_position_embeddings=128, attn_implementation="eager")
    return _text(DistilBertModel(cfg), "last_hidden_state")


def gpt2_tiny():
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(vocab_size=1000, n_embd=64, n_layer=2, n_head=2, n_positions=128, use_cache=False, bos_token_id=0, eos_token_id=0,
                     attn_implementation="eager")
    return _text(GPT2LMHeadModel(cfg), "logits")


def export(make, path):
    _skip_torchvision_registrations()
    import torch
    torch.manual_seed(0)
    torch.backends.mha.set_fastpath_enabled(False)   # the fused MHA op has no ONNX export
    model, spec = make()
    model.eval()
    args, dynamic = [], {}
    for name, (dtype, shape) in spec.items():
        concrete = [d if isinstance(d, int) else (2 if d == "batch" else 16) for d in shape]
        if dtype == "int64":
            args.append(torch.ones(concrete, dtype=torch.int64))
        else:
            args.append(torch.randn(concrete))
        if any(isinstance(d, str) for d in shape):
            dynamic[name] = {i: d for i, d in enumerate(shape) if isinstance(d, str)}
    dynamic_out = {}
    if dynamic:   # the outputs keep the inputs' leading symbolic axes
        first = next(iter(dynamic.values()))
        dynamic_out = {"y": {i: d for i, d in first.items()}}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, tuple(args), str(path), input_names=list(spec), output_names=["y"],
                          dynamic_axes={**dynamic, **dynamic_out} or None, opset_version=OPSET,
                          dynamo=False, do_constant_folding=True)
    return spec


# --- derived models (int8, fp16) ---------------------------------------------------------------

def quantize_dynamic_of(base):
    def build(path, built):
        from onnxruntime.quantization import QuantType, quantize_dynamic
        quantize_dynamic(str(built[base]["path"]), str(path), weight_type=QuantType.QInt8)
        return built[base]["spec"]
    return build


def quantize_static_of(base):
    def build(path, built):
        import numpy as np
        from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                              quant_pre_process, quantize_static)
        spec = built[base]["spec"]

        class Random(CalibrationDataReader):
            def __init__(self):
                rng = np.random.default_rng(1)
                self.batches = iter([{n: rng.standard_normal(s).astype(np.float32) for n, (_, s) in spec.items()}
                                     for _ in range(8)])

            def get_next(self):
                return next(self.batches, None)
        pre = path.with_suffix(".pre.onnx")
        quant_pre_process(str(built[base]["path"]), str(pre), skip_symbolic_shape=True)
        # reduce_range (7-bit weights), as onnxruntime advises on x86 without VNNI: its u8s8 kernels
        # there saturate int16 pair sums otherwise, and its answers stop being the reference's
        quantize_static(str(pre), str(path), Random(), quant_format=QuantFormat.QDQ,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, per_channel=True,
                        reduce_range=True)
        pre.unlink()
        return spec
    return build


def float16_of(base, keep_io_types):
    def build(path, built):
        import onnx
        from onnxconverter_common import float16
        m = float16.convert_float_to_float16(onnx.load(str(built[base]["path"])), keep_io_types=keep_io_types)
        onnx.save(m, str(path))
        spec = dict(built[base]["spec"])
        if not keep_io_types:
            spec = {n: ("float16" if d == "float32" else d, s) for n, (d, s) in spec.items()}
        return spec
    return build


# name -> (builder, kind, slow). Torch builders are exported; derived ones take a built base.
# "slow" models are left out of the default test run (NNWASM_ZOO_ALL=1 / make test-all runs them).
ZOO = {
    "mobilenet_v3_small": (mobilenet_v3_small, "float", False),
    "efficientnet_b0": (efficientnet_b0, "float", False),
    "convnext_tiny": (convnext_tiny, "float", True),
    "deeplabv3_mobilenet_v3_large": (deeplabv3_mobilenet_v3_large, "float", True),
    "vit_tiny": (vit_tiny, "float", False),
    "unet_small": (unet_small, "float", False),
    "audio_rnn": (audio_rnn, "float", False),
    "bert_tiny": (bert_tiny, "float", False),
    "distilbert_tiny": (distilbert_tiny, "float", False),
    "gpt2_tiny": (gpt2_tiny, "float", False),
    "bert_tiny_int8_dynamic": (quantize_dynamic_of("bert_tiny"), "int8", False),
    "mobilenet_v3_small_int8_qdq": (quantize_static_of("mobilenet_v3_small"), "int8", False),
    "mobilenet_v3_small_fp16": (float16_of("mobilenet_v3_small", keep_io_types=False), "fp16", False),
    "bert_tiny_fp16": (float16_of("bert_tiny", keep_io_types=True), "fp16", False),
}
DERIVED_FROM = {"bert_tiny_int8_dynamic": "bert_tiny", "mobilenet_v3_small_int8_qdq": "mobilenet_v3_small",
                "mobilenet_v3_small_fp16": "mobilenet_v3_small", "bert_tiny_fp16": "bert_tiny"}

# Concrete shapes for the symbolic dims, one dict per case: two different ones for dynamic models.
CASES = [{"batch": 1, "sequence": 16, "time": 50}, {"batch": 3, "sequence": 7, "time": 23}]


def _feeds(spec, dims, seed):
    import numpy as np
    rng = np.random.default_rng(seed)
    feeds = {}
    for name, (dtype, shape) in spec.items():
        s = [d if isinstance(d, int) else dims[d] for d in shape]
        if name == "input_ids":
            feeds[name] = rng.integers(0, 1000, s, dtype=np.int64)
        elif name == "attention_mask":   # right padding, a different length per row
            lengths = [s[1] - (i * 3) % s[1] for i in range(s[0])]
            feeds[name] = np.array([[1] * n + [0] * (s[1] - n) for n in lengths], np.int64).reshape(s)
        else:
            feeds[name] = rng.standard_normal(s).astype(dtype)
    return feeds


def _save(arr, path):
    import numpy as np
    np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<")).tofile(path)
    return {"dtype": str(arr.dtype), "dims": list(arr.shape), "file": f"{path.parent.name}/{path.name}"}


def references(name, path, spec):
    """Runs onnxruntime (CPU, 1 thread) on each case; saves feeds and outputs as raw bytes."""
    import onnxruntime
    so = onnxruntime.SessionOptions()
    so.intra_op_num_threads = so.inter_op_num_threads = 1
    sess = onnxruntime.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    dynamic = any(isinstance(d, str) for _, s in spec.values() for d in s)
    ref = path.with_suffix(".ref")
    ref.mkdir(exist_ok=True)
    cases = []
    for k, dims in enumerate(CASES if dynamic else CASES[:1]):
        feeds = _feeds(spec, dims, seed=k)
        outs = sess.run(None, feeds)
        case = "case%d" % k
        cases.append({"name": case,
                      "inputs": {n: _save(a, ref / f"{case}.in.{n}.bin") for n, a in feeds.items()},
                      "outputs": {o.name: _save(a, ref / f"{case}.out.{o.name}.bin")
                                  for o, a in zip(sess.get_outputs(), outs)}})
    return cases


def build_one(name, out, built):
    make, kind, slow = ZOO[name]
    path = out / f"{name}.onnx"
    t0 = time.perf_counter()
    with warnings.catch_warnings():   # converters' warnings about values clamped to fp16 etc.
        warnings.simplefilter("ignore")
        spec = make(path, built) if name in DERIVED_FROM else export(make, path)
    built[name] = {"path": path, "spec": spec}
    sidecar = {"builder_version": BUILDER_VERSION, "name": name, "file": path.name, "kind": kind, "slow": slow,
               "derived_from": DERIVED_FROM.get(name),
               "inputs": [{"name": n, "dtype": d, "shape": s} for n, (d, s) in spec.items()],
               "cases": references(name, path, spec)}
    (out / f"{name}.json").write_text(json.dumps(sidecar, indent=1))
    print(f"built {name} ({path.stat().st_size >> 10} KiB) in {time.perf_counter() - t0:.1f} s", flush=True)


def load_sidecar(name, out=None):
    """The sidecar of a built, up-to-date model, or None."""
    p = (out or zoo_dir()) / f"{name}.json"
    try:
        meta = json.loads(p.read_text())
    except (OSError, ValueError):
        return None
    if meta.get("builder_version") != BUILDER_VERSION or not (p.parent / meta["file"]).exists():
        return None
    return meta


def ensure(names=None, force=False):
    """Builds the named models (default: all) that are missing or stale; returns the zoo dir."""
    out = zoo_dir()
    out.mkdir(parents=True, exist_ok=True)
    want = list(names or ZOO)
    for n in list(want):   # a derived model needs its base built in this process or on disk
        if n in DERIVED_FROM and DERIVED_FROM[n] not in want:
            want.insert(0, DERIVED_FROM[n])
    built = {}
    for name in [n for n in ZOO if n in want]:
        meta = None if force else load_sidecar(name, out)
        if meta is not None:
            built[name] = {"path": out / meta["file"],
                           "spec": {i["name"]: (i["dtype"], i["shape"]) for i in meta["inputs"]}}
            continue
        build_one(name, out, built)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", choices=list(ZOO), help="build only these (and their bases)")
    ap.add_argument("--force", action="store_true", help="rebuild even if up to date")
    ap.add_argument("--list", action="store_true", help="list the zoo's models and exit")
    a = ap.parse_args()
    if a.list:
        for n, (_, kind, slow) in ZOO.items():
            print(f"{n:32s} {kind:6s} {'slow' if slow else ''}")
        return
    t0 = time.perf_counter()
    out = ensure(a.only, a.force)
    print(f"zoo in {out} ({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
