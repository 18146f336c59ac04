"""The BERT encoder of the speed issue (4 layers, hidden 256, 4 heads, seq 128, batch 1, random
weights) and its dynamically quantized form, in the zoo's layout (bench/zoo/bench_zoo_web.mjs drives
them too), each also compiled into a plan file for bench/speed/bench_bert_web.mjs:
    .venv/bin/python bench/speed/build_bench_bert.py [DIR]   (default ~/.cache/nnwasm/bench-bert)
"""
import json
import sys
import types
import warnings
from pathlib import Path

import numpy as np


def build(out):
    sys.modules.setdefault("torchvision._meta_registrations", types.ModuleType("torchvision._meta_registrations"))
    import torch
    from transformers import BertConfig, BertModel
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    cfg = BertConfig(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024,
                     attn_implementation="eager")
    model = BertModel(cfg, add_pooling_layer=False).eval()

    class Wrapper(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.model(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state
    rng = np.random.default_rng(0)
    ids = rng.integers(0, cfg.vocab_size, (1, 128)).astype(np.int64)
    mask = np.ones((1, 128), np.int64)
    mask[0, 100:] = 0
    types_ = np.zeros((1, 128), np.int64)
    types_[0, 64:] = 1
    feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types_}
    axes = {"batch": 0, "sequence": 1}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(Wrapper(), tuple(torch.from_numpy(v) for v in feeds.values()), str(out / "bert.onnx"),
                          input_names=list(feeds), output_names=["y"], opset_version=14, dynamo=False,
                          do_constant_folding=True,
                          dynamic_axes={n: {i: a for a, i in axes.items()} for n in [*feeds, "y"]})
    from onnxruntime.quantization import QuantType, quantize_dynamic
    quantize_dynamic(str(out / "bert.onnx"), str(out / "bert_int8.onnx"), weight_type=QuantType.QInt8)
    ref = out / "bert.ref"
    ref.mkdir(exist_ok=True)
    for n, v in feeds.items():
        (ref / f"{n}.bin").write_bytes(v.tobytes())
    for name in ("bert", "bert_int8"):
        case = {n: {"dtype": "int64", "dims": [1, 128], "file": f"bert.ref/{n}.bin"} for n in feeds}
        (out / f"{name}.json").write_text(json.dumps({"name": name, "file": f"{name}.onnx",
                                                      "cases": [{"name": "case0", "inputs": case}]}, indent=1))
    compile_plans(out)


def compile_plans(out):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent / "py_runtime"))
    import nnwasm
    shapes = {n: (1, 128) for n in ("input_ids", "attention_mask", "token_type_ids")}
    for name in ("bert", "bert_int8"):
        (out / f"{name}.nnwp").write_bytes(nnwasm.compile_plan(str(out / f"{name}.onnx"), shapes))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--plans-only"]:
        sys.exit(compile_plans(Path(sys.argv[2]) if len(sys.argv) > 2 else Path.home() / ".cache" / "nnwasm" / "bench-bert"))
    build(Path(sys.argv[1]) if len(sys.argv) > 1 else Path.home() / ".cache" / "nnwasm" / "bench-bert")
