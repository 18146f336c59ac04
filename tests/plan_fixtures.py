"""Fixtures for tests/node/plan-runner.test.mjs: small models compiled into .nnwp plan files
(docs/architecture.md, "Plan files"), their inputs, and the outputs CPython's nnwasm gives on the same plan."""
import json

import numpy as np
from onnx import helper

import imagenet_fixture
from conftest import ROOT
from model_builders import graph_model, rand


def write_plan_file(model_bytes, feeds, path):
    """Compiles a model whose nodes all run on WASM into a .nnwp file with nnwasm.compile_plan (the
    shapes of `feeds`); returns the ONNX session's outputs, the reference the JS runner must equal."""
    import nnwasm
    shapes = {k: tuple(v.shape) for k, v in feeds.items()}
    path.write_bytes(nnwasm.compile_plan(model_bytes, shapes))
    return nnwasm.InferenceSession(model_bytes, providers=["WasmExecutionProvider"]).run(None, feeds)


def _cnn():
    x = rand(1, 3, 12, 12, seed=1)
    w, b = rand(8, 3, 3, 3, seed=2) * 0.3, rand(8, seed=3)
    fw, fb = rand(5, 8, seed=4), rand(5, seed=5)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("GlobalAveragePool", ["r"], ["g"]),
             helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("Gemm", ["f", "fw", "fb"], ["logits"], transB=1)]
    return graph_model(nodes, {"x": x}, ["logits"], {"w": w, "b": b, "fw": fw, "fb": fb}), {"x": x}


def _attention():
    ids = np.array([[3, 0, 7, 11, 2, 9]], np.int64)
    emb, wq, wk, wv = rand(12, 16, seed=6), rand(16, 16, seed=7) * 0.25, rand(16, 16, seed=8) * 0.25, rand(16, 16, seed=9)
    nodes = [helper.make_node("Gather", ["emb", "ids"], ["h"]),
             helper.make_node("MatMul", ["h", "wq"], ["q"]),
             helper.make_node("MatMul", ["h", "wk"], ["k"]),
             helper.make_node("MatMul", ["h", "wv"], ["v"]),
             helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
             helper.make_node("MatMul", ["q", "kt"], ["scores"]),
             helper.make_node("Softmax", ["scores"], ["probs"], axis=-1),
             helper.make_node("MatMul", ["probs", "v"], ["out"])]
    return graph_model(nodes, {"ids": ids}, ["out", "probs"], {"emb": emb, "wq": wq, "wk": wk, "wv": wv}), {"ids": ids}


def _encoder_layer():
    """A BERT encoder layer as exported (2 heads of 4 over 5 tokens): gemm_packed with its bias, Gelu
    and residual epilogues, and the fused attention op with a broadcast mask."""
    x, mask = rand(1, 5, 8, seed=10), np.zeros((1, 1, 5, 5), np.float32)
    mask[..., 3:] = -3.4e38
    w = {n: rand(8, 8, seed=11 + i) * 0.4 for i, n in enumerate(["wq", "wk", "wv", "wo"])}
    w.update(b=rand(8, seed=15), w1=rand(8, 16, seed=16) * 0.4, b1=rand(16, seed=17), w2=rand(16, 8, seed=18) * 0.3,
             heads=np.array([1, 5, 2, 4], np.int64), flat=np.array([1, 5, 8], np.int64), scale=np.float32(0.5),
             sqrt2=np.float32(np.sqrt(2)), one=np.float32(1), half=np.float32(0.5))
    nodes = []
    for n, perm in (("q", [0, 2, 1, 3]), ("k", [0, 2, 3, 1]), ("v", [0, 2, 1, 3])):
        nodes += [helper.make_node("MatMul", ["x", "w" + n], [n + "m"]), helper.make_node("Add", ["b", n + "m"], [n]),
                  helper.make_node("Reshape", [n, "heads"], [n + "4"]),
                  helper.make_node("Transpose", [n + "4"], [n + "t"], perm=perm)]
    nodes += [helper.make_node("MatMul", ["qt", "kt"], ["qk"]), helper.make_node("Mul", ["qk", "scale"], ["s"]),
              helper.make_node("Add", ["s", "mask"], ["sm"]), helper.make_node("Softmax", ["sm"], ["p"], axis=-1),
              helper.make_node("MatMul", ["p", "vt"], ["o4"]), helper.make_node("Transpose", ["o4"], ["ot"], perm=[0, 2, 1, 3]),
              helper.make_node("Reshape", ["ot", "flat"], ["o"]), helper.make_node("MatMul", ["o", "wo"], ["om"]),
              helper.make_node("Add", ["om", "b"], ["ob"]), helper.make_node("Add", ["ob", "x"], ["h"]),
              helper.make_node("MatMul", ["h", "w1"], ["fm"]), helper.make_node("Add", ["fm", "b1"], ["f"]),
              helper.make_node("Div", ["f", "sqrt2"], ["fd"]), helper.make_node("Erf", ["fd"], ["fe"]),
              helper.make_node("Add", ["fe", "one"], ["f1"]), helper.make_node("Mul", ["f", "f1"], ["fg"]),
              helper.make_node("Mul", ["fg", "half"], ["g"]), helper.make_node("MatMul", ["g", "w2"], ["y2"]),
              helper.make_node("Add", ["b", "y2"], ["y3"]), helper.make_node("Add", ["y3", "h"], ["y"])]
    return graph_model(nodes, {"x": x, "mask": mask}, ["y"], w, opset=14), {"x": x, "mask": mask}


def _efficientnet():
    """EfficientNet-Lite0 (all of it runs on WASM) and the demo's coffee photo."""
    assets = ROOT / "demo" / "assets"
    x = imagenet_fixture.preprocess(assets / "coffee.png").astype("<f4")
    return (assets / "efficientnet-lite0.onnx").read_bytes(), {"input": x}


def _bert_int8():
    """A toy BERT through onnxruntime's quantize_dynamic: q8_gemm_pk8 with its bias, Gelu and
    residual epilogues, DynamicQuantizeLinear, an int8 embedding."""
    from quant_models import quantize_dynamic_bytes, small_bert
    return quantize_dynamic_bytes(small_bert()), {"ids": np.array([[3, 1, 4, 1, 5, 9, 2, 6]], np.int64)}


def _gqa():
    """GroupQueryAttention (onnxruntime-genai's): a decode step of a padded batch of 2 with rotary over
    a past of 5, then grouped heads (rope, kv_append, attention_kv)."""
    from test_wasm_attention_contrib import gqa_case
    model, feeds, _ = gqa_case(batch=2, s=1, hq=4, hkv=2, d=16, past=5, seqlens=[5, 2], rotary=True)
    return model, feeds


def _nbits_int8():
    """MatMulNBits at accuracy_level 4 (q4_matmul's int8 path): a decode row and a 6-row prefill
    (a 4-row tile and two rows alone), 4 bits in blocks of 32 without zero points (onnxruntime-genai's
    int4) and 8 bits with them; float steps in a fixed order, so V8 must give CPython's bits."""
    from test_quant_blocks_int8 import build
    import onnx
    parts = [onnx.load_from_string(build(200, 37, bits, 32, zk, (rows, ), seed=rows + bits)[0])
             for bits, zk, rows in ((4, "none", 1), (8, "u8", 6))]
    for i, mp in enumerate(parts):
        for t in mp.graph.initializer:
            t.name = f"{t.name}{i}"
        for n in mp.graph.node:
            n.input[:] = [f"{x}{i}" if x else x for x in n.input]
            n.output[:] = [f"{x}{i}" for x in n.output]
            n.name = f"{n.name}{i}"
        for v in list(mp.graph.input) + list(mp.graph.output):
            v.name = f"{v.name}{i}"
    g = helper.make_graph([n for mp in parts for n in mp.graph.node], "nbits",
                          [v for mp in parts for v in mp.graph.input], [v for mp in parts for v in mp.graph.output],
                          [t for mp in parts for t in mp.graph.initializer])
    model = helper.make_model(g, opset_imports=parts[0].opset_import)
    model.ir_version = parts[0].ir_version
    rng = np.random.default_rng(4)
    feeds = {"A0": rng.standard_normal((1, 200)).astype(np.float32), "A1": rng.standard_normal((6, 200)).astype(np.float32)}
    return model.SerializeToString(), feeds


def build_plan_fixtures(d):
    """Writes the .nnwp files, their inputs and CPython's outputs (raw bytes) and fixtures.json
    into folder d, for tests/node/plan-runner.test.mjs (NNWASM_PLAN_FIXTURES=d)."""
    fixtures = {}
    for name, build in {"cnn": _cnn, "attention": _attention, "encoder_layer": _encoder_layer,
                        "efficientnet": _efficientnet, "bert_int8": _bert_int8, "gqa": _gqa,
                        "nbits_int8": _nbits_int8}.items():
        model, feeds = build()
        results = write_plan_file(model, feeds, d / f"{name}.nnwp")
        entry = {"plan": str(d / f"{name}.nnwp"), "inputs": {}, "outputs": {},
                 "profile": _profiled_nodes(d / f"{name}.nnwp", feeds)}
        for k, v in feeds.items():
            v.tofile(d / f"{name}.in.{k}.bin")
            entry["inputs"][k] = {"path": str(d / f"{name}.in.{k}.bin"), "dtype": v.dtype.name, "shape": list(v.shape)}
        for k, v in zip([o for o in _output_names(model)], results):
            v.tofile(d / f"{name}.out.{k}.bin")
            entry["outputs"][k] = {"path": str(d / f"{name}.out.{k}.bin"), "dtype": v.dtype.name, "shape": list(v.shape)}
        fixtures[name] = entry
    (d / "fixtures.json").write_text(json.dumps(fixtures, indent=1))
    return d


def _profiled_nodes(plan_path, feeds):
    """[name, op type, kernel, provider] of each Node event of CPython's profile of one run."""
    import nnwasm
    so = nnwasm.SessionOptions()
    so.enable_profiling = True
    sess = nnwasm.InferenceSession(str(plan_path), so)
    sess.run(None, feeds)
    return [[e["name"], *(e["args"][k] for k in ("op_name", "kernel", "provider"))]
            for e in sess._end_profiling_events() if e["cat"] == "Node"]


def _output_names(model_bytes):
    import onnx
    return [o.name for o in onnx.load_from_string(model_bytes).graph.output]
