"""Why a node is not on WASM: InferenceSession.get_fallback_reasons() and
`python -m nnwasm inspect` (op counts per provider, fallback nodes with reasons, partitions and
the bytes crossing between them, share on WASM), which needs no numpy."""
import json
import subprocess
import sys

import numpy as np
import pytest
from onnx import TensorProto, helper

import nnwasm
from conftest import ROOT
from model_builders import graph_model

# Unary float32 ops that numpy runs and WASM may not: the first really sent to numpy is used, so
# the tests keep working as kernels are added.
FALLBACK_CANDIDATES = ["Acosh", "Asinh", "Atanh", "Sinh", "Cosh", "Erf", "Softplus", "Sin"]


def _chain(op, shape=(2, 3)):
    """x -> Relu -> Relu -> op -> Relu: WASM, WASM, (fallback?), WASM."""
    x = np.ones(shape, np.float32)
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="relu_a"),
             helper.make_node("Relu", ["a"], ["b"], name="relu_b"),
             helper.make_node(op, ["b"], ["c"], name="the_fallback"),
             helper.make_node("Relu", ["c"], ["y"], name="relu_y")]
    return graph_model(nodes, {"x": x}, ["y"])


@pytest.fixture(scope="module")
def fallback_model(tmp_path_factory):
    for op in FALLBACK_CANDIDATES:
        model = _chain(op)
        providers = {p for n, _, p in nnwasm.InferenceSession(model).get_provider_assignment() if n == "the_fallback"}
        if providers == {"NumpyExecutionProvider"}:
            path = tmp_path_factory.mktemp("inspect") / "fallback.onnx"
            path.write_bytes(model)
            return path, op
    pytest.fail(f"WASM now runs all of {FALLBACK_CANDIDATES}: add an op only numpy runs")


def test_fallback_reasons(fallback_model):
    path, op = fallback_model
    sess = nnwasm.InferenceSession(str(path))
    assignment = sess.get_provider_assignment()
    assert all(isinstance(a, tuple) and len(a) == 3 for a in assignment)   # unchanged format
    reasons = sess.get_fallback_reasons()
    assert set(reasons) == {n for n, _, p in assignment if p != "WasmExecutionProvider"} == {"the_fallback"}
    assert reasons["the_fallback"].startswith("WasmExecutionProvider: ")
    sess.run(None, {"x": np.ones((2, 3), np.float32)})
    assert sess.get_fallback_reasons() == reasons


def test_fallback_reasons_empty_on_wasm_and_symbolic():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="r")], "g", [x], [y])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()
    # before any run, the shapes are unknown: the reason says so
    assert "not known" in nnwasm.InferenceSession(model).get_fallback_reasons()["r"]
    # WASM alone (no numpy fallback) accepts a model with symbolic dims and runs it per shape
    so = nnwasm.SessionOptions()
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    sess = nnwasm.InferenceSession(model, so, providers=["WasmExecutionProvider"])
    for batch in (1, 4):
        x = np.linspace(-1, 1, batch * 3, dtype=np.float32).reshape(batch, 3)
        np.testing.assert_array_equal(sess.run(None, {"x": x})[0], np.maximum(x, 0))
        assert sess.get_fallback_reasons() == {}
        assert sess.get_provider_assignment() == [("r", "Relu", "WasmExecutionProvider")]


def test_wasm_only_unknown_op_still_fails_at_creation():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])
    g = helper.make_graph([helper.make_node("NoSuchOp", ["x"], ["y"], name="n")], "g", [x], [y])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()
    with pytest.raises(nnwasm.NotImplementedOp, match="NoSuchOp"):
        nnwasm.InferenceSession(model, providers=["WasmExecutionProvider"])


def inspect_cli(*args, block_numpy=True):
    """Runs `python -m nnwasm inspect ARGS` with numpy made unimportable; (code, stdout, stderr)."""
    pre = "import sys; sys.modules['numpy'] = None; " if block_numpy else "import sys; "
    code = pre + "import runpy; sys.argv = ['nnwasm'] + sys.argv[1:]; runpy.run_module('nnwasm', run_name='__main__')"
    proc = subprocess.run([sys.executable, "-c", code, "inspect", *map(str, args)], cwd=ROOT / "py_runtime",
                          capture_output=True, text=True, timeout=120)
    return proc.returncode, proc.stdout, proc.stderr


def test_inspect_cli_without_numpy(fallback_model):
    path, op = fallback_model
    code, out, err = inspect_cli(path)
    assert code == 0, err
    assert "nodes on WASM: 3/4 (75.0%)" in out
    assert f"NumpyExecutionProvider (1 nodes): {op} 1" in out
    assert "WasmExecutionProvider (3 nodes): Relu 3" in out
    assert f"the_fallback [{op}] -> NumpyExecutionProvider: WasmExecutionProvider: " in out
    parts = [line.split(":")[0].strip() for line in out.splitlines() if line.startswith("  #")]
    assert parts == ["#0 WasmExecutionProvider", "#1 NumpyExecutionProvider", "#2 WasmExecutionProvider"]
    code, out, err = inspect_cli(path, "--json")
    r = json.loads(out)
    itemsize = 4
    assert [(p["provider"], p["nodes"]) for p in r["partitions"]] == [
        ("WasmExecutionProvider", 2), ("NumpyExecutionProvider", 1), ("WasmExecutionProvider", 1)]
    # b crosses into numpy, c back into WASM; y is a graph output of the last partition
    assert [(p["bytes_in"], p["bytes_out"]) for p in r["partitions"]] == [
        (0, 6 * itemsize), (6 * itemsize, 6 * itemsize), (6 * itemsize, 0)]
    assert r["crossing_bytes"] == 12 * itemsize and r["wasm_share"] == 0.75


def test_inspect_symbolic_dims_need_input_shape(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="r")], "g", [x], [y])
    path = tmp_path / "sym.onnx"
    path.write_bytes(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString())
    code, out, err = inspect_cli(path)
    assert code == 2 and "symbolic" in err and "--input-shape x=" in err
    code, out, err = inspect_cli(path, "--input-shape", "x=5,3", "--json")
    assert code == 0, err
    r = json.loads(out)
    assert r["input_shapes"] == {"x": [5, 3]} and r["wasm_share"] == 1.0 and r["fallback"] == []


@pytest.mark.parametrize("args, message", [
    (["--input-shape", "x=2,a"], "integers"),
    (["--input-shape", "x2,3"], "NAME=D0,D1"),
    (["--input-shape", "x=0,3"], "positive"),
    (["--input-shape", "nope=2,3"], "unknown input"),
    (["--input-shape", "x=2,3,4"], "rank 3"),
    (["--input-shape", "x=2,4"], "contradicts"),
])
def test_inspect_bad_input_shape(fallback_model, args, message):
    code, out, err = inspect_cli(fallback_model[0], *args)
    assert code == 2 and message in err and "Traceback" not in err, err


def test_inspect_bad_path(tmp_path):
    code, out, err = inspect_cli(tmp_path / "missing.onnx")
    assert code == 2 and "no such model file" in err and "Traceback" not in err
    (tmp_path / "junk.onnx").write_bytes(b"not a model at all")
    code, out, err = inspect_cli(tmp_path / "junk.onnx")
    assert code == 2 and "not" in err and "Traceback" not in err, err


def test_inspect_lists_nodes_no_provider_runs(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    g = helper.make_graph([helper.make_node("NoSuchOp", ["x"], ["y"], name="n")], "g", [x], [y])
    path = tmp_path / "unknown.onnx"
    path.write_bytes(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString())
    code, out, err = inspect_cli(path)
    assert code == 0, err
    assert "n [NoSuchOp] -> (no provider)" in out and "nodes on WASM: 0/1" in out
