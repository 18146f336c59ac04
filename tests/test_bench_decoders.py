"""bench/decoders/bench_decoders.py's generation loop on a tiny hand-made decoder (no timing asserted): the
past is fed back step by step (the logits depend on it), an empty past starts the first step, the
tokens agree with a numpy re-computation in CPython (onnxruntime) and in Node (onnxruntime-web
through bench/decoders/decoders_node.mjs), and a runtime that cannot run the model is recorded as "fails: ..."
in the table instead of stopping the run."""
import json
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench" / "decoders"))
sys.path.insert(0, str(ROOT / "build_scripts"))
import bench_decoders  # noqa: E402
import build_bench_decoders  # noqa: E402

V, D = 50, 4
PROMPT = [3, 17, 8, 41, 22]


def weights():
    rng = np.random.default_rng(0)
    return rng.standard_normal((V, D)).astype(np.float32), rng.standard_normal((D, V)).astype(np.float32)


def tiny_decoder(folder):
    """logits = (E[ids] + sum of the whole key cache) @ W; present.0.key = past ++ E[ids]."""
    E, W = weights()
    nodes = [
        helper.make_node("Gather", ["E", "input_ids"], ["emb"]),
        helper.make_node("Unsqueeze", ["emb", "one"], ["k"]),
        helper.make_node("Concat", ["past_key_values.0.key", "k"], ["present.0.key"], axis=2),
        helper.make_node("ReduceSum", ["present.0.key", "axes12"], ["s"], keepdims=0),
        helper.make_node("Unsqueeze", ["s", "one"], ["s3"]),
        helper.make_node("Add", ["emb", "s3"], ["h"]),
        helper.make_node("MatMul", ["h", "W"], ["logits"]),
    ]
    graph = helper.make_graph(
        nodes, "tiny_decoder",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch_size", "sequence_length"]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch_size", "total_sequence_length"]),
         helper.make_tensor_value_info("past_key_values.0.key", TensorProto.FLOAT,
                                       ["batch_size", 1, "past_sequence_length", "head_size"])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch_size", "sequence_length", V]),
         helper.make_tensor_value_info("present.0.key", TensorProto.FLOAT, ["batch_size", 1, "total", "head_size"])],
        [helper.make_tensor("E", TensorProto.FLOAT, E.shape, E.ravel()),
         helper.make_tensor("W", TensorProto.FLOAT, W.shape, W.ravel()),
         helper.make_tensor("one", TensorProto.INT64, [1], [1]),
         helper.make_tensor("axes12", TensorProto.INT64, [2], [1, 2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    (folder / "tiny").mkdir()
    onnx.save(model, str(folder / "tiny" / "model.onnx"))
    ins, outs, ops = build_bench_decoders.describe(folder / "tiny" / "model.onnx")
    meta = {"name": "tiny", "family": "tiny", "format": "onnx", "precision": "fp32", "exporter": "onnx.helper",
            "roles": {"decoder": {"file": "tiny/model.onnx", "inputs": ins, "outputs": outs, "ops": ops,
                                  "external_data": []}},
            "prompt": PROMPT, "prompt_len": len(PROMPT), "new_tokens": 6, "vocab": V}
    build_bench_decoders.add_past(meta, head_dim=D)
    (folder / "tiny.json").write_text(json.dumps(meta))
    return meta


def expected_tokens(n):
    E, W = weights()
    tokens, cache = list(PROMPT), np.zeros((0, D), np.float32)
    for step in range(n):
        ids = tokens if step == 0 else tokens[-1:]
        cache = np.concatenate([cache, E[ids]])
        logits = (E[ids] + cache.sum(0)) @ W
        tokens.append(int(logits[-1].argmax()))
    return tokens[len(PROMPT):]


def test_sidecar_past(tmp_path):
    meta = tiny_decoder(tmp_path)
    (past,) = [i for i in meta["roles"]["decoder"]["inputs"] if i["past"]]
    assert past["empty"] == [1, 1, 0, D]
    assert meta["past_map"] == {"present.0.key": "past_key_values.0.key"}


def test_generate_cpython_feeds_the_past_back(tmp_path):
    meta = tiny_decoder(tmp_path)
    want = expected_tokens(6)
    assert len(set(want)) > 1   # the past changes the answer: a loop that dropped it would differ
    cell = bench_decoders.PyCell("ort", meta, 1, tmp_path)
    r = cell.gen()
    assert r["tokens"] == want and r["decode_steps"] == 5
    assert cell.gen(3)["tokens"] == want[:3]


def test_failure_is_a_row_not_a_crash(tmp_path):
    tiny_decoder(tmp_path)
    (tmp_path / "tiny.json").write_text((tmp_path / "tiny.json").read_text().replace('"past_key_values.0.key"', '"pkv"', 1))
    meta = json.loads((tmp_path / "tiny.json").read_text())
    with pytest.raises(Exception) as e:
        bench_decoders.PyCell("ort", meta, 1, tmp_path).gen()
    row = {"model": "tiny", "runtime": "ort", "threads": 1, "error": f"run: {bench_decoders.first_line(e.value)}"}
    md = bench_decoders.table({"rows": [row]})
    assert "| tiny |" in md and "fails: run: " in md


@pytest.mark.node
def test_generate_node_ort_web(tmp_path):
    tiny_decoder(tmp_path)
    import shutil
    cell = bench_decoders.NodeCell(shutil.which("node"), "ort-web", "tiny", 1, tmp_path, ROOT / "dist" / "web")
    try:
        r = cell.gen()
        assert r["tokens"] == expected_tokens(6)
        assert r["wasm_bytes"] > 1 << 20
    finally:
        cell.close()
