"""fp16 decoders on WASM alone (numpy fallback disabled) against onnxruntime: the optimizer's fp16
pass (optimizer/fp16.py) reaches into If, Loop and Scan bodies, so Optimum's merged fp16 decoders
(an If on use_cache_branch whose branches hold the whole decoder) compute in float32 with their
weights kept as halves, and take and give a float16 KV cache.

Fast tests build tiny models here (a merged decoder in the shape Optimum's merge_decoders writes it,
a Loop and a Scan with float16 bodies), converted by onnxconverter-common as transformers.js's fp16
models are (keep_io_types False). The genzoo's fp16 exports (build_scripts/build_genzoo.py:
gpt2_merged_fp16, llama_merged_fp16, whisper_merged_fp16; `make genzoo`) generate 16 greedy steps
with their float16 past fed back, the tokens onnxruntime's; without the genzoo they skip. The
bench-size Llama (bench/decoders/bench_fp16.py) runs only with NNWASM_ZOO_ALL=1."""
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import nnwasm
from conftest import ROOT
from test_wasm_ops import WASM_ONLY, wasm_only_options

onnxconverter_common = pytest.importorskip("onnxconverter_common")
onnxruntime = pytest.importorskip("onnxruntime")
sys.path.insert(0, str(ROOT / "build_scripts"))
import build_genzoo  # noqa: E402  (no torch at import)

H, HEADS, HD, V = 32, 2, 16, 50
F, F16 = TensorProto.FLOAT, TensorProto.FLOAT16


def to_fp16(m):
    from onnxconverter_common import float16
    m16 = float16.convert_float_to_float16(m, keep_io_types=False)
    build_genzoo._fix_casts(m16.graph)
    return m16


def _w(rng, *shape, scale=0.2):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def _branch(name, with_past, rng_seed):
    """One branch of the merged decoder: embedding (outer weight), one attention layer with the
    past concatenated (with_past) or not, a body-local output projection and bias, the LM head
    (outer weight). Outputs logits [1, seq, V], present key/value [1, HEADS, total, HD]."""
    rng = np.random.default_rng(rng_seed)
    inits = {"wo": _w(rng, H, H), "bo": _w(rng, H), "scale": np.array(1 / np.sqrt(HD), np.float32),
             "shape_h": np.array([1, -1, HEADS, HD], np.int64), "shape_o": np.array([1, -1, H], np.int64)}
    n = helper.make_node
    nodes = [n("Gather", ["emb", "input_ids"], ["x"])]
    for p in "qkv":
        nodes += [n("MatMul", ["x", f"w{p}"], [f"{p}0"]), n("Reshape", [f"{p}0", "shape_h"], [f"{p}1"]),
                  n("Transpose", [f"{p}1"], [f"{p}h"], perm=[0, 2, 1, 3])]
    if with_past:
        nodes += [n("Concat", ["past_key_values.0.key", "kh"], ["present.0.key_b"], axis=2),
                  n("Concat", ["past_key_values.0.value", "vh"], ["present.0.value_b"], axis=2)]
    else:
        nodes += [n("Identity", ["kh"], ["present.0.key_b"]), n("Identity", ["vh"], ["present.0.value_b"])]
    nodes += [n("Transpose", ["present.0.key_b"], ["kt"], perm=[0, 1, 3, 2]),
              n("MatMul", ["qh", "kt"], ["s0"]), n("Mul", ["s0", "scale"], ["s1"]),
              n("Softmax", ["s1"], ["p"], axis=-1), n("MatMul", ["p", "present.0.value_b"], ["a0"]),
              n("Transpose", ["a0"], ["a1"], perm=[0, 2, 1, 3]), n("Reshape", ["a1", "shape_o"], ["a2"]),
              n("MatMul", ["a2", "wo"], ["o0"]), n("Add", ["o0", "bo"], ["o1"]), n("Add", ["o1", "x"], ["r"]),
              n("MatMul", ["r", "head"], ["logits_b"])]
    outs = [helper.make_tensor_value_info("logits_b", F, None),
            helper.make_tensor_value_info("present.0.key_b", F, None),
            helper.make_tensor_value_info("present.0.value_b", F, None)]
    return helper.make_graph(nodes, name, [], outs, [numpy_helper.from_array(v, k) for k, v in inits.items()])


def merged_decoder(seed=0):
    """An fp32 decoder merged as Optimum's merge_decoders writes it: the shared weights in the outer
    graph, an If on use_cache_branch (then: with the past; else: without), the If's outputs the
    graph's outputs."""
    rng = np.random.default_rng(seed)
    outer = {"emb": _w(rng, V, H, scale=1.0), "wq": _w(rng, H, H), "wk": _w(rng, H, H), "wv": _w(rng, H, H),
             "head": _w(rng, H, V)}
    node = helper.make_node("If", ["use_cache_branch"], ["logits", "present.0.key", "present.0.value"],
                            name="optimum::if", then_branch=_branch("with_past", True, seed + 1),
                            else_branch=_branch("no_past", False, seed + 1))
    past = ["batch_size", HEADS, "past_sequence_length", HD]
    g = helper.make_graph(
        [node], "merged",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch_size", "sequence_length"]),
         helper.make_tensor_value_info("past_key_values.0.key", F, past),
         helper.make_tensor_value_info("past_key_values.0.value", F, past),
         helper.make_tensor_value_info("use_cache_branch", TensorProto.BOOL, [1])],
        [helper.make_tensor_value_info("logits", F, ["batch_size", "sequence_length", V]),
         helper.make_tensor_value_info("present.0.key", F, ["batch_size", HEADS, "total", HD]),
         helper.make_tensor_value_info("present.0.value", F, ["batch_size", HEADS, "total", HD])],
        [numpy_helper.from_array(v, k) for k, v in outer.items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _providers(sess):
    return {p for _, _, p in sess.get_provider_assignment()}


def _generate(run, dtype, steps, prompt=(3, 7, 11, 1)):
    """Greedy generation with the past fed back: [(feeds, outputs)] per step."""
    tokens, past, record = list(prompt), None, []
    for step in range(steps):
        ids = tokens if step == 0 else tokens[-1:]
        if past is None:
            past = [np.zeros((1, HEADS, 0, HD), dtype)] * 2
        feeds = {"input_ids": np.array([ids], np.int64), "past_key_values.0.key": past[0],
                 "past_key_values.0.value": past[1], "use_cache_branch": np.array([step > 0])}
        outs = run(feeds)
        record.append((feeds, outs))
        past = outs[1:]
        tokens.append(int(outs[0][0, -1].astype(np.float32).argmax()))
    return tokens[len(prompt):], record


def _close(got, want, what):
    assert got.dtype == want.dtype and got.shape == want.shape, what
    # onnxruntime computes in float16, nnwasm in float32: float16 rounding apart
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2e-2, atol=2e-2, err_msg=what)


def test_merged_fp16_decoder_on_wasm_alone():
    """The If's branches compute in float32 on kernels.wasm; past and present stay float16 at the
    graph's boundary; each step agrees with onnxruntime on nnwasm's own feeds; the greedy tokens are
    onnxruntime's (and the fp32 model's)."""
    m32 = merged_decoder()
    m16 = to_fp16(merged_decoder()).SerializeToString()
    sess = nnwasm.InferenceSession(m16, wasm_only_options(), providers=WASM_ONLY)
    ort = onnxruntime.InferenceSession(m16, providers=["CPUExecutionProvider"])
    assert [(i.name, i.type) for i in sess.get_inputs()] == [(i.name, i.type) for i in ort.get_inputs()]
    assert [(o.name, o.type) for o in sess.get_outputs()] == [(o.name, o.type) for o in ort.get_outputs()]
    tokens, record = _generate(lambda f: sess.run(None, f), np.float16, 12)
    assert _providers(sess) == {"WasmExecutionProvider"}
    for step, (feeds, outs) in enumerate(record):
        for name, g, w in zip(("logits", "present.0.key", "present.0.value"), outs, ort.run(None, feeds)):
            assert g.dtype == np.float16
            _close(g, w, f"step {step} {name}")
    ort_tokens, _ = _generate(lambda f: ort.run(None, f), np.float16, 12)
    s32 = nnwasm.InferenceSession(m32.SerializeToString(), wasm_only_options(), providers=WASM_ONLY)
    tokens32, _ = _generate(lambda f: s32.run(None, f), np.float32, 12)
    assert tokens == ort_tokens == tokens32


def test_merged_fp16_decoder_weights_stay_halves():
    """The branches' MatMuls by the outer float16 weights run gemm_packed_f16 on halves."""
    m16 = to_fp16(merged_decoder()).SerializeToString()
    sess = nnwasm.InferenceSession(m16, wasm_only_options(), providers=WASM_ONLY)
    _generate(lambda f: sess.run(None, f), np.float16, 2)
    kernels = set()

    def walk(r):
        for op in getattr(r, "ops", None) or ():
            kernels.add(op.kernel)
        for s in getattr(r, "steps", None) or ():
            walk(s)
        for b in (getattr(r, "bodies", None) or {}).values():
            if not isinstance(b, str) and getattr(b, "runner", None) is not None:
                walk(b.runner)
        if getattr(r, "runner", None) is not None:
            walk(r.runner)
    for p in sess._cache.values():
        for r in p.runners:
            walk(r)
    assert "gemm_packed_f16" in kernels, kernels


def test_fp16_pass_converts_bodies_and_keeps_the_boundary():
    """After the pass: no float16 compute left in the branches, only the Casts at their end that
    keep the If's outputs float16 and, in the cache branch, the KV cache in halves: the past's
    halves concatenated with the new rows cast to float16 (the present), widened once for the
    attention. Nothing widens the past outside the If."""
    from nnwasm.ir import subgraphs
    m16 = to_fp16(merged_decoder()).SerializeToString()
    sess = nnwasm.InferenceSession(m16, wasm_only_options(), providers=WASM_ONLY)
    g = sess._graph
    (if_node,) = [n for n in g.nodes if n.op_type == "If"]
    assert all(g.values[o].dtype.name == "float16" for o in if_node.outputs)
    branches = dict(subgraphs(if_node))
    for attr, body in branches.items():
        half = [n for n in body.nodes if any(body.values.get(o) and body.values[o].dtype.name == "float16"
                                             for o in n.outputs)]
        ops = sorted(n.op_type for n in half)
        assert ops == (["Cast"] * 3 + ["Concat"] * 2 if attr == "then_branch" else ["Cast"] * 3), ops
        assert all(t.dtype.name != "float16" for t in body.initializers.values())
    concats = [n for n in branches["then_branch"].nodes if n.op_type == "Concat"]
    assert sorted(n.inputs[0] for n in concats) == ["past_key_values.0.key", "past_key_values.0.value"]
    assert not [n for n in g.nodes if n.op_type == "Cast"]


def _loop_model():
    """A Loop whose body multiplies the carried float16 state by a body-local float16 weight and adds
    an outer float16 bias, and a Scan whose body sums float16 rows scaled by its own constant."""
    rng = np.random.default_rng(3)
    body = helper.make_graph(
        [helper.make_node("MatMul", ["s_in", "wb"], ["s0"]), helper.make_node("Add", ["s0", "bias"], ["s1"]),
         helper.make_node("Tanh", ["s1"], ["s_out"]), helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Mul", ["s_out", "half"], ["scan_out"])],
        "loop_body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("s_in", F, [1, 8])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("s_out", F, [1, 8]),
         helper.make_tensor_value_info("scan_out", F, [1, 8])],
        [numpy_helper.from_array(_w(rng, 8, 8, scale=0.5), "wb"), numpy_helper.from_array(np.float32(0.5), "half")])
    scan_body = helper.make_graph(
        [helper.make_node("Mul", ["row", "k"], ["r0"]), helper.make_node("Add", ["acc_in", "r0"], ["acc_out"]),
         helper.make_node("Identity", ["acc_out"], ["y"])],
        "scan_body",
        [helper.make_tensor_value_info("acc_in", F, [8]), helper.make_tensor_value_info("row", F, [8])],
        [helper.make_tensor_value_info("acc_out", F, [8]), helper.make_tensor_value_info("y", F, [8])],
        [numpy_helper.from_array(np.float32(1.5), "k")])
    g = helper.make_graph(
        [helper.make_node("Loop", ["trip", "", "x"], ["final", "stacked"], body=body),
         helper.make_node("Scan", ["acc0", "rows"], ["acc", "ys"], body=scan_body, num_scan_inputs=1)],
        "loops",
        [helper.make_tensor_value_info("x", F, [1, 8]), helper.make_tensor_value_info("rows", F, [5, 8])],
        [helper.make_tensor_value_info("final", F, [1, 8]), helper.make_tensor_value_info("stacked", F, [4, 1, 8]),
         helper.make_tensor_value_info("acc", F, [8]), helper.make_tensor_value_info("ys", F, [5, 8])],
        [numpy_helper.from_array(np.array(4, np.int64), "trip"), numpy_helper.from_array(_w(rng, 1, 8), "bias"),
         numpy_helper.from_array(np.zeros(8, np.float32), "acc0")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_fp16_loop_and_scan_bodies_on_wasm_alone():
    m16 = to_fp16(_loop_model()).SerializeToString()
    sess = nnwasm.InferenceSession(m16, wasm_only_options(), providers=WASM_ONLY)
    ort = onnxruntime.InferenceSession(m16, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(4)
    feeds = {"x": rng.standard_normal((1, 8)).astype(np.float16),
             "rows": rng.standard_normal((5, 8)).astype(np.float16)}
    got = sess.run(None, feeds)
    assert _providers(sess) == {"WasmExecutionProvider"}
    for name, g, w in zip(("final", "stacked", "acc", "ys"), got, ort.run(None, feeds)):
        assert g.dtype == np.float16
        _close(g, w, name)


# --- the genzoo's fp16 exports ---------------------------------------------------------------------

GENZOO_FP16 = [n for n in build_genzoo.GENZOO if n.endswith("_fp16")]


@pytest.mark.parametrize("name", GENZOO_FP16)
def test_genzoo_fp16_generates_16_steps_on_wasm_alone(name):
    """16 greedy steps with the float16 past fed back (onnxruntime's tokens on its own feeds), on
    WASM alone; the float16 logits and present.* of every step within float16 rounding of
    onnxruntime's on nnwasm's feeds."""
    meta = build_genzoo.load_sidecar(name)
    if meta is None:
        pytest.skip(f"the genzoo's {name} is not built in {build_genzoo.genzoo_dir()}: run `make genzoo`")
    folder = build_genzoo.genzoo_dir()
    ort = build_genzoo.ort_runner(folder, {r: v["file"] for r, v in meta["roles"].items()})
    ours = {}
    for role, r in meta["roles"].items():
        ours[role] = nnwasm.InferenceSession(str(folder / r["file"]), wasm_only_options(), providers=WASM_ONLY)

    def run(role, feeds):
        s = ours[role]
        return dict(zip([o.name for o in s.get_outputs()], s.run(None, feeds)))

    def check(step, feeds, outs):
        for oname, ref in ort("decoder", feeds).items():
            if ".encoder." in oname and step > 0:   # the merged decoder's dummy cross-attention outputs
                continue
            got = outs[oname]
            assert got.dtype == ref.dtype == np.float16 or not oname.startswith(("logits", "present")), oname
            scale = max(1.0, float(np.abs(ref.astype(np.float32)).max())) if ref.size else 1.0
            np.testing.assert_allclose(got.astype(np.float32), ref.astype(np.float32), rtol=1e-2,
                                       atol=5e-3 * scale, err_msg=f"{name} step {step} {oname}")
    tokens = build_genzoo.generate(meta, run, steps=16, on_step=check)
    want = build_genzoo.generate(meta, ort, steps=16)
    assert tokens == want
    for s in ours.values():
        assert _providers(s) == {"WasmExecutionProvider"}


@pytest.mark.skipif(os.environ.get("NNWASM_ZOO_ALL") != "1", reason="the bench-size Llama: NNWASM_ZOO_ALL=1")
def test_bench_size_fp16_llama_is_onnxruntimes():
    """The bench's 125M Llama converted to float16 (bench/decoders/bench_fp16.py's twin, in
    /work/cache or $NNWASM_FP16_LLAMA): 16 greedy steps from the 128-token prompt on WASM alone,
    onnxruntime's float16 tokens (measured: all 64 of the bench's, where the fp32 model's part
    from them after 41)."""
    import json
    path = Path(os.environ.get("NNWASM_FP16_LLAMA", "/work/cache/fp16if/llama_optimum_fp16/model.onnx"))
    meta_path = Path(os.environ.get("NNWASM_BENCH_DECODERS_DIR", "/work/cache/decbench/models")) / "llama_optimum_fp32.json"
    if not path.exists() or not meta_path.exists():
        pytest.skip("the bench Llama and its fp16 twin are not built")
    sys.path.insert(0, str(ROOT / "bench" / "decoders"))
    from bench_decoders import generate_py
    meta = json.loads(meta_path.read_text())
    for i in meta["roles"]["decoder"]["inputs"]:
        if i["past"]:
            i["dtype"] = "float16"
    sess = nnwasm.InferenceSession(str(path), wasm_only_options(), providers=WASM_ONLY)
    so = onnxruntime.SessionOptions()
    so.intra_op_num_threads = 1
    ort = onnxruntime.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    ours = generate_py(meta, {"decoder": sess}, meta_path.parent, 16)["tokens"]
    assert _providers(sess) == {"WasmExecutionProvider"}
    assert ours == generate_py(meta, {"decoder": ort}, meta_path.parent, 16)["tokens"]
