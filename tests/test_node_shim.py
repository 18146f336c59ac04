"""Runs the JS shim's own tests (tests/node/*.test.mjs, node:test) in Node 20 against the built
bundle, with fixtures made here: small ONNX models and the preprocessed coffee photo."""
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
from onnx import helper

import imagenet_fixture
from conftest import ROOT
from model_builders import graph_model
from plan_fixtures import build_plan_fixtures
from tfjs_helper_graphs import write_fixtures as write_tfjs_helpers

pytestmark = pytest.mark.node

# Ops that WASM may not run but numpy does; the first one nnwasm really sends to numpy is used,
# so the test keeps working as WASM kernels are added.
FALLBACK_CANDIDATES = ["Erf", "Sin", "Cos", "Atan", "Asinh", "Softplus", "Neg", "Abs", "Exp"]


@pytest.fixture(scope="module")
def web_bundle():
    """dist/web/ rebuilt from the current sources (idempotent), so Node never tests a stale wheel."""
    proc = subprocess.run([sys.executable, str(ROOT / "build_scripts" / "build_web.py")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"build_web.py failed:\n{proc.stdout}\n{proc.stderr}"
    return ROOT / "dist" / "web"


def _add_model(path):
    b = np.array([0.5, -1.0, 2.0, -3.0], np.float32)
    x = np.array([[1.0, 0.25, -4.0, 2.5]], np.float32)
    nodes = [helper.make_node("Add", ["x", "b"], ["s"], name="add0"),
             helper.make_node("Relu", ["s"], ["y"], name="relu0")]
    path.write_bytes(graph_model(nodes, {"x": x}, ["y"], {"b": b}, out_dtype=1))
    return {"model": str(path), "input": "x", "output": "y", "dims": list(x.shape),
            "x": x.ravel().tolist(), "y": np.maximum(x + b, 0).ravel().tolist(),
            "errors": _feed_errors(path, x)}


def _feed_errors(path, x):
    """[error type name, message] CPython's nnwasm gives for bad feeds, as the JS bridge passes
    them (_run_raw on TensorData): the JS shim must report the very same, with or without proxy."""
    import nnwasm
    from nnwasm import dtypes
    from nnwasm.tensor import TensorData
    sess = nnwasm.InferenceSession(str(path))
    f32, i32 = dtypes.from_name("float32"), dtypes.from_name("int32")
    cases = {"name": {"nope": TensorData(f32, x.shape, x.tobytes())},
             "dtype": {"x": TensorData(i32, x.shape, x.astype(np.int32).tobytes())},
             "dims": {"x": TensorData(f32, (x.size, 1), x.tobytes())}}
    errors = {}
    for case, feeds in cases.items():
        with pytest.raises(nnwasm.NnwasmError) as info:
            sess._run_raw(None, feeds)
        errors[case] = [type(info.value).__name__, str(info.value)]
    return errors


def _efficientnet_logits(photo, path):
    """EfficientNet-Lite0's logits for the photo from CPython's nnwasm (same plan, same
    kernels.wasm as Pyodide's: bit-identical), for JS to compare with."""
    import nnwasm
    sess = nnwasm.InferenceSession(str(ROOT / "demo" / "assets" / "efficientnet-lite0.onnx"),
                                   providers=["WasmExecutionProvider"])
    logits = sess.run(None, {sess.get_inputs()[0].name: photo})[0]
    logits.astype("<f4").tofile(path)
    return str(path)


def _fallback_model(path):
    """x -> Relu (WASM) -> an op only numpy runs; returns the fixture entry."""
    import nnwasm
    x = np.ones((2, 3), np.float32)
    for op in FALLBACK_CANDIDATES:
        nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu_on_wasm"),
                 helper.make_node(op, ["r"], ["y"], name=f"{op.lower()}_needs_numpy")]
        model = graph_model(nodes, {"x": x}, ["y"], out_dtype=1)
        try:
            assignment = nnwasm.InferenceSession(model).get_provider_assignment()
        except nnwasm.NnwasmError:
            continue
        numpy_nodes = [n for n, _, p in assignment if p == "NumpyExecutionProvider"]
        wasm_nodes = [n for n, _, p in assignment if p == "WasmExecutionProvider"]
        if numpy_nodes and wasm_nodes:
            path.write_bytes(model)
            return {"model": str(path), "numpy_nodes": numpy_nodes, "wasm_nodes": wasm_nodes}
    pytest.fail(f"WASM now runs all of {FALLBACK_CANDIDATES}: add an op only numpy runs to FALLBACK_CANDIDATES")


def _vad_model(path):
    """test_control_flow.py's Silero-like VAD (If on the sample rate, WASM only) and onnxruntime's
    outputs for each rate, for the JS test to run in Pyodide (no numpy)."""
    from model_builders import ort_run, rand
    from test_control_flow import toy_vad
    model = toy_vad()
    path.write_bytes(model)
    x, h = rand(1, 1, 64, seed=11), rand(1, 8, seed=12)
    runs = []
    for sr in (16000, 8000):
        prob, hn = ort_run(model, {"x": x, "h": h, "sr": np.array(sr, np.int64)})
        runs.append({"sr": sr, "prob": prob.ravel().tolist(), "hn": hn.ravel().tolist()})
    return {"model": str(path), "x": x.ravel().tolist(), "h": h.ravel().tolist(), "runs": runs}


@pytest.fixture(scope="module")
def node_fixtures(tmp_path_factory):
    d = tmp_path_factory.mktemp("node_fixtures")
    assets = ROOT / "demo" / "assets"
    coffee = imagenet_fixture.preprocess(assets / "coffee.png").astype("<f4")
    coffee.tofile(d / "coffee.bin")
    fixtures = {
        "efficientnet": str(assets / "efficientnet-lite0.onnx"),
        "recipe": str(assets / "efficientnet-lite0.json"),
        "labels": str(assets / "imagenet_labels.json"),
        "coffee": str(d / "coffee.bin"),
        "efficientnet_logits": _efficientnet_logits(coffee, d / "efficientnet_logits.bin"),
        "add": _add_model(d / "add.onnx"),
        "fallback": _fallback_model(d / "fallback.onnx"),
        "vad": _vad_model(d / "vad.onnx"),
        "tfjs_helpers": write_tfjs_helpers(d / "tfjs_helpers"),   # onnxruntime-clients.test.mjs
    }
    (d / "fixtures.json").write_text(json.dumps(fixtures, indent=1))
    (d / "plans").mkdir()
    build_plan_fixtures(d / "plans")   # for plan-runner.test.mjs
    return d


def test_node_shim(web_bundle, node_fixtures, record_property):
    node = shutil.which("node")
    assert node, "Node.js is not installed"
    env = {**os.environ, "NNWASM_NODE_FIXTURES": str(node_fixtures),
           "NNWASM_PLAN_FIXTURES": str(node_fixtures / "plans"), "NNWASM_DIST_URL": web_bundle.as_uri() + "/"}
    proc = subprocess.run([node, "--test", "--test-reporter=tap", "tests/node/"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    counts = {k: int(v) for k, v in re.findall(r"^# (tests|pass|fail|skipped|cancelled|todo) (\d+)$", out, re.M)}
    assert counts.get("skipped") == 0, "Node tests were skipped:\n" + out[-6000:]
    assert counts.get("tests", 0) >= 30 and counts.get("pass") == counts["tests"], f"{counts}\n{out[-6000:]}"
    for key in ("nnwasm-timings", "nnwasm-vs-onnxruntime-web", "nnwasm-proxy-timings"):
        found = re.search(rf"{key} (.*)", out)
        assert found, f"the EfficientNet tests printed no {key} line:\n" + out[-6000:]
        record_property(key, found.group(1))
        print(f"Node, EfficientNet-Lite0, {key}:", found.group(1))
