"""Fixtures for the JS thread-pool tests (tests/test_threads_js.py, tests/test_threads_page.py):
zoo models compiled into .nnwp plan files for their cases' shapes, the cases' inputs, and the
outputs CPython's nnwasm gives on the `simd` flavour (one thread), which Node and Chromium must
equal bit for bit on 1 and 2 threads."""
import hashlib
import json
import sys

import numpy as np

from conftest import ROOT
from test_zoo import load_case

sys.path.insert(0, str(ROOT / "build_scripts"))
import build_zoo  # noqa: E402

# fast: a representative set (transformer, conv, fp16, int8); the rest under NNWASM_ZOO_ALL=1
FAST = ["bert_tiny", "mobilenet_v3_small", "efficientnet_b0", "mobilenet_v3_small_fp16", "gpt2_tiny"]
ALL = FAST + ["distilbert_tiny", "vit_tiny", "unet_small", "audio_rnn", "bert_tiny_int8_dynamic",
              "mobilenet_v3_small_int8_qdq", "bert_tiny_fp16"]


def build(folder, names):
    """Writes <model>.<case>.nnwp, inputs as .bin files and fixtures.json: {key: {plan, inputs:
    {name: {file, dtype, shape}}, sha256: {output: hex}}}, CPython's simd outputs by their SHA-256."""
    import nnwasm
    so = nnwasm.SessionOptions()
    so.add_session_config_entry("session.kernels_flavour", "simd")
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    fixtures, zoo = {}, build_zoo.zoo_dir()
    for name in names:
        meta = build_zoo.load_sidecar(name)
        if not meta:
            raise RuntimeError(f"the model zoo is not built in {zoo}: run `make zoo`")
        model = (zoo / meta["file"]).read_bytes()
        for case in meta["cases"][:1]:
            feeds, _ = load_case(zoo, case)
            key = f"{name}.{case['name']}"
            (folder / f"{key}.nnwp").write_bytes(nnwasm.compile_plan(model, {k: v.shape for k, v in feeds.items()}))
            sess = nnwasm.InferenceSession(model, so, providers=["WasmExecutionProvider"])
            outs = sess.run(None, feeds)
            inputs = {}
            for i, (k, v) in enumerate(feeds.items()):
                v = np.ascontiguousarray(v)
                (folder / f"{key}.in{i}.bin").write_bytes(v.tobytes())
                inputs[k] = {"file": f"{key}.in{i}.bin", "dtype": str(v.dtype), "shape": list(v.shape)}
            fixtures[key] = {"plan": f"{key}.nnwp", "onnx": str(zoo / meta["file"]), "inputs": inputs,
                             "sha256": {o.name: hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()
                                        for o, a in zip(sess.get_outputs(), outs)}}
    (folder / "fixtures.json").write_text(json.dumps(fixtures, indent=1))
    return fixtures
