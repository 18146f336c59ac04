"""What a KV-cache decoder's runs allocate in Python (issue 15, item 8: peak wasm memory): in
Pyodide, Python's heap is a wasm memory that never shrinks, so a weight-sized temporary made once
(at the prompt, at a decode step) stays as heap for the page's life. Measured with tracemalloc on
a small decoder whose weights dominate everything else it holds (an embedding Gather and an LM
head MatMul, the past concatenated as a decoder's), in fp32 and through onnxruntime's
quantize_dynamic (QInt8: Gather + DequantizeLinear, DynamicQuantizeLinear + MatMulInteger), on
WASM alone: the prompt's run (which builds and loads its plan, packing the weights), the first
decode step (the step's plan) and later steps each allocate at most a fraction of the weights.
bench/results/shared-weights.md has the 125M Llama's figures."""
import gc
import tracemalloc

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import nnwasm
from test_node_shim import web_bundle  # noqa: F401 (the fixture: dist/web/ rebuilt)

H, V = 256, 32768   # an 8 MiB int8 LM head and embedding (32 MiB each in fp32)
PROMPT = 16


def _float_model(path):
    rng = np.random.default_rng(0)
    emb = (rng.standard_normal((V, H)) * 0.1).astype(np.float32)
    head = (rng.standard_normal((H, V)) * 0.1).astype(np.float32)
    nodes = [helper.make_node("Gather", ["emb", "input_ids"], ["x"]),
             helper.make_node("Concat", ["past", "x"], ["present"], axis=1),
             helper.make_node("MatMul", ["x", "head"], ["logits"])]
    g = helper.make_graph(nodes, "decoder",
                          [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, "seq"]),
                           helper.make_tensor_value_info("past", TensorProto.FLOAT, [1, "past_len", H])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, "seq", V]),
                           helper.make_tensor_value_info("present", TensorProto.FLOAT, [1, "total", H])],
                          [numpy_helper.from_array(emb, "emb"), numpy_helper.from_array(head, "head")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    path.write_bytes(m.SerializeToString())
    return emb.nbytes + head.nbytes


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """{precision: (model path, bytes of its weights)}"""
    from onnxruntime.quantization import QuantType, quantize_dynamic
    d = tmp_path_factory.mktemp("decoder_memory")
    fp32 = d / "fp32.onnx"
    size = _float_model(fp32)
    int8 = d / "int8.onnx"
    quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8, op_types_to_quantize=["MatMul", "Gather"])
    return {"fp32": (fp32, size), "int8": (int8, size // 4)}


def _phase(fn):
    """(fn's result, the most Python held above what it held before, during fn)."""
    gc.collect()
    before = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    out = fn()
    return out, tracemalloc.get_traced_memory()[1] - before


def _generate(path, steps=4):
    """[(phase, bytes above before)]: create, the prompt, then decode steps with the present fed back."""
    so = nnwasm.SessionOptions()
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    tracemalloc.start()
    try:
        sess, rise = _phase(lambda: nnwasm.InferenceSession(str(path), so))
        phases = [("create", rise)]
        ids = np.arange(1, PROMPT + 1, dtype=np.int64)[None]
        past = np.zeros((1, 0, H), np.float32)
        (logits, present), rise = _phase(lambda: sess.run(None, {"input_ids": ids, "past": past}))
        phases.append(("prompt", rise))
        for k in range(steps):
            ids = np.array([[int(logits[0, -1].argmax()) % V]], np.int64)
            past = present
            (logits, present), rise = _phase(lambda: sess.run(None, {"input_ids": ids, "past": past}))
            phases.append((f"step {k + 1}", rise))
        assert present.shape == (1, PROMPT + steps, H) and np.isfinite(logits).all()
        assert all(a[2] == "WasmExecutionProvider" for a in sess.get_provider_assignment())
    finally:
        tracemalloc.stop()
    return phases


# Of the weights' bytes: the prompt's run packs every weight (q8_gemm_pk's int16 panels are twice
# an int8 weight; gemm_packed's as big as an fp32 one) straight into kernels.wasm's memory a piece
# at a time; the first step's plan finds them there; later steps only rebind dims.
LIMITS = {"prompt": 0.25, "step 1": 0.1, "later": 0.05}


@pytest.mark.parametrize("precision", ["int8", "fp32"])
def test_runs_allocate_a_fraction_of_the_weights(models, precision):
    path, weights = models[precision]
    _generate(path, steps=1)   # the host, the imports, the kernels' first calls: once
    phases = _generate(path)
    shown = ", ".join(f"{p} {r / 2**20:.1f} MiB" for p, r in phases)
    for phase, rise in phases[1:]:
        limit = LIMITS.get(phase, LIMITS["later"]) * weights
        assert rise <= limit, (f"{precision}: the {phase} made Python hold {rise / 2**20:.1f} MiB at once, more than "
                               f"{limit / 2**20:.1f} MiB ({LIMITS.get(phase, LIMITS['later'])} of the "
                               f"{weights / 2**20:.0f} MiB of weights): {shown}")


def _cpython_steps(path, steps=3):
    """(prompt, [last row of logits per run], [tokens fed after each]) of CPython's nnwasm on WASM
    alone, checked against onnxruntime."""
    import onnxruntime
    so = nnwasm.SessionOptions()
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    sess = nnwasm.InferenceSession(str(path), so)
    ref = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    prompt = list(range(1, PROMPT + 1))
    ids, past, rows, tokens = prompt, np.zeros((1, 0, H), np.float32), [], []
    for _ in range(steps):
        feeds = {"input_ids": np.array([ids], np.int64), "past": past}
        logits, present = sess.run(None, feeds)
        want = ref.run(None, feeds)
        np.testing.assert_allclose(logits, want[0], rtol=1e-3, atol=1e-3)
        np.testing.assert_array_equal(present, want[1])
        rows.append(logits[0, -1].tolist())
        ids, past = [int(logits[0, -1].argmax())], present
        tokens.append(ids[0])
    return prompt, rows, tokens


@pytest.mark.node
def test_embedded_weights_stay_in_js(web_bundle, models, tmp_path):  # noqa: F811
    """tests/node/embedded-data.test.mjs: in Pyodide (Node), the model's bytes given to create()
    keep their weights on the JS side (web/embedded-data.mjs), the session generates CPython's bits."""
    import json
    import os
    import shutil
    import subprocess
    from conftest import ROOT
    spec = {"hidden": H, "models": {}}
    for name, (path, weights) in models.items():
        prompt, rows, tokens = _cpython_steps(path)
        spec["models"][name] = {"model": str(path), "weights": weights, "prompt": prompt, "logits": rows,
                                "tokens": tokens}
    (tmp_path / "cases.json").write_text(json.dumps(spec))
    node = shutil.which("node")
    assert node, "Node.js is not installed"
    env = {**os.environ, "NNWASM_EMBEDDED_CASES": str(tmp_path / "cases.json"),
           "NNWASM_DIST_URL": web_bundle.as_uri() + "/"}
    proc = subprocess.run([node, "--test", "--test-reporter=spec", "tests/node/embedded-data.test.mjs"], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=900)
    print(proc.stdout[-4000:])
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    assert "ℹ skipped 0" in proc.stdout and "ℹ fail 0" in proc.stdout


def test_long_generated_code_is_compiled_in_chunks_with_the_same_results(monkeypatch):
    """symbolic._Gen._chunked: a 125M decoder's guard checker (32,000 lines) compiled in one piece
    made CPython's compiler peak at +113 MB at each new variant; chunks give the same values,
    stores and guard outcomes, and compiling them peaks at a fraction of that."""
    import random
    from nnwasm import symbolic
    from nnwasm.symbolic import Sym, smax
    rng = random.Random(0)
    names = [f"n{i}" for i in range(6)]
    exprs = [Sym.var(n) for n in names]
    for _ in range(3000):
        a, b = rng.choice(exprs[-50:] + exprs[:6]), rng.choice(exprs[:6] + [1, 2, 3])
        op = rng.randrange(4)
        exprs.append(a + b if op == 0 else a * b if op == 1 else a - b if op == 2 else smax(a, b))
    base = {n: 10 for n in names}
    guards = {}
    for k in range(3000):
        a, b, op = rng.choice(exprs), rng.choice(exprs + [0, 5]), rng.choice(["==", "!=", ">=", "<"])
        with symbolic.Binding(base):
            guards[k] = (a, op, b, eval(f"symbolic.value(a) {op} symbolic.value(b)"))
    stores = list(enumerate(rng.sample(exprs, 500)))
    built = {}
    for chunk in (10 ** 9, 97):
        monkeypatch.setattr(symbolic, "CHUNK_LINES", chunk)
        tracemalloc.start()
        try:
            built[chunk] = (symbolic.compile_values(exprs[::7]), symbolic.compile_stores(stores, exprs[:5]),
                            symbolic.Checker(guards))
            built[chunk][2](base)
            built[chunk] += (tracemalloc.get_traced_memory()[1],)
        finally:
            tracemalloc.stop()
    (v1, s1, c1, peak1), (v2, s2, c2, peak2) = built[10 ** 9], built[97]
    assert peak2 < peak1 / 4, (peak1, peak2)
    assert c1(base) is True and c2(base) is True
    for _ in range(200):
        dims = {n: rng.choice([10, 10, rng.randrange(0, 20)]) for n in names}
        m1, m2 = (memoryview(bytearray(4 * 500)).cast("i") for _ in range(2))
        assert v1(dims) == v2(dims) and s1(dims, m1) == s2(dims, m2) and m1.tolist() == m2.tolist()
        assert c1(dims) == c2(dims)
