"""Profiling as onnxruntime's (py_runtime/nnwasm/profiling.py): SessionOptions.enable_profiling,
end_profiling() writing a Chrome trace with one Node event per plan op (node, op type, kernel,
provider), numpy nodes, host ops and control nodes timed where they run, and nothing of it when
profiling is off."""
import json
import os
import re
import time

import numpy as np
import pytest
from onnx import TensorProto, helper

import nnwasm
from model_builders import graph_model, rand
from nnwasm.host import get_host
from nnwasm.wasm.lowering import LOWERINGS

WASM, NUMPY = "WasmExecutionProvider", "NumpyExecutionProvider"
F = TensorProto.FLOAT


def _cnn():
    x = rand(1, 3, 8, 8, seed=1)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("Sigmoid", ["c"], ["s"], name="act"),
             helper.make_node("GlobalAveragePool", ["s"], ["g"]),   # unnamed: its output names it
             helper.make_node("Flatten", ["g"], ["f"], name="flat"),
             helper.make_node("Gemm", ["f", "fw", "fb"], ["logits"], transB=1, name="fc")]
    inits = {"w": rand(4, 3, 3, 3, seed=2), "b": rand(4, seed=3), "fw": rand(5, 4, seed=4), "fb": rand(5, seed=5)}
    return graph_model(nodes, {"x": x}, ["logits"], inits), {"x": x}


def _options(enable=True, prefix=None):
    so = nnwasm.SessionOptions()
    so.enable_profiling = enable
    if prefix is not None:
        so.profile_file_prefix = prefix
    return so


def _plan_ops(sess):
    """The PlanOps of the session's WASM plans, in run order."""
    runners = sess._runner if hasattr(sess, "_runner") else next(iter(sess._cache.values())).runners[0]
    return runners.ops


def check_trace(events, pid=os.getpid()):
    """What Perfetto and chrome://tracing need of a JSON-array trace: complete ("X") events with
    numeric ts/dur in microseconds, integer pid/tid, a name and args."""
    assert isinstance(events, list) and events
    for e in events:
        assert set(e) == {"cat", "pid", "tid", "dur", "ts", "ph", "name", "args"}, e
        assert e["ph"] == "X" and e["cat"] in ("Session", "Node") and isinstance(e["name"], str)
        assert isinstance(e["ts"], (int, float)) and isinstance(e["dur"], (int, float))
        assert e["ts"] >= 0 and e["dur"] >= 0 and e["pid"] == pid and isinstance(e["tid"], int)
        assert isinstance(e["args"], dict)


def nodes_within_runs(events):
    """The Node events, after checking that events are listed as they end (as onnxruntime lists
    them: a control node after its body's ops, model_run after its nodes) and that each Node
    event lies in a model_run span."""
    ends = [e["ts"] + e["dur"] for e in events]
    assert all(a <= b + 1e-3 for a, b in zip(ends, ends[1:])), ends
    runs = [e for e in events if e["name"] == "model_run"]
    nodes = [e for e in events if e["cat"] == "Node"]
    for e in nodes:
        assert any(r["ts"] <= e["ts"] and e["ts"] + e["dur"] <= r["ts"] + r["dur"] + 1e-3 for r in runs), e
    return nodes


def test_trace_has_one_event_per_plan_op(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    model, feeds = _cnn()
    sess = nnwasm.InferenceSession(model, _options())
    start = sess.get_profiling_start_time_ns()
    assert abs(start / 1e9 - time.time()) < 600
    want = sess.run(None, feeds)
    got = sess.run(None, feeds)
    assert all(np.array_equal(a, b) for a, b in zip(want, got))
    name = sess.end_profiling()
    assert re.fullmatch(r"nnwasm_profile_\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d_\d{3}\.json", name)
    assert os.listdir(tmp_path) == [name]
    events = json.loads((tmp_path / name).read_text())
    check_trace(events)
    assert [e["name"] for e in events if e["cat"] == "Session"] == \
        ["model_loading_array", "session_initialization", "model_run", "model_run"]
    ops = _plan_ops(sess)
    # Conv + Sigmoid are one FusedConv (conv2d and unary ops); the unnamed pool is named by its output
    assert [op.node for op in ops] == ["conv", "conv", "g", "flat", "fc"]
    nodes = nodes_within_runs(events)
    assert [(e["name"], e["args"]) for e in nodes] == 2 * [
        (f"{op.node}_kernel_time", {"op_name": op.op_type, "provider": WASM, "kernel": op.kernel}) for op in ops]
    assert {op.kernel for op in ops} >= {"conv2d", "gemm"}
    # profiling stops with end_profiling, as onnxruntime's
    assert sess.end_profiling() == "" and sess.get_profiling_start_time_ns() == 0
    sess.run(None, feeds)
    assert os.listdir(tmp_path) == [name]


def test_profiling_off_writes_nothing_and_runs_whole_plans(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    model, feeds = _cnn()
    host = get_host()
    calls = []
    real = host.call

    def spy(name, *args):
        calls.append(name)
        return real(name, *args)
    monkeypatch.setattr(host, "call", spy)
    off = nnwasm.InferenceSession(model)
    off.run(None, feeds)
    assert "nnw_plan_run" in calls and "nnw_plan_run_ops" not in calls
    assert off.end_profiling() == "" and off.get_profiling_start_time_ns() == 0
    assert os.listdir(tmp_path) == []
    calls.clear()
    on = nnwasm.InferenceSession(model, _options())
    on.run(None, feeds)
    assert calls.count("nnw_plan_run_ops") == len(_plan_ops(on)) and "nnw_plan_run" not in calls


def test_profile_file_prefix(tmp_path):
    model, feeds = _cnn()
    sess = nnwasm.InferenceSession(model, _options(prefix=str(tmp_path / "run")))
    sess.run(None, feeds)
    name = sess.end_profiling()
    assert name.startswith(str(tmp_path / "run_")) and name.endswith(".json")
    check_trace(json.loads(open(name).read()))


def test_plan_file_trace_names_the_same_nodes_and_kernels(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    model, feeds = _cnn()
    onnx_sess = nnwasm.InferenceSession(model, _options())
    plan_sess = nnwasm.InferenceSession(nnwasm.compile_plan(model), _options())
    assert type(plan_sess).__name__ == "PlanSession"
    traces = []
    for sess in (onnx_sess, plan_sess):
        sess.run(None, feeds)
        events = json.loads(open(sess.end_profiling()).read())
        check_trace(events)
        traces.append(events)
    assert [e["name"] for e in traces[1] if e["cat"] == "Session"] == \
        ["model_loading_array", "session_initialization", "model_run"]
    a, b = ([(e["name"], e["args"]) for e in nodes_within_runs(t)] for t in traces)
    assert a == b and len(a) == len(_plan_ops(plan_sess))


def test_numpy_nodes_control_flow_and_host_ops_get_events(monkeypatch):
    # without its plan op, Equal on two int64 scalars is computed on the host (wasm/control.py)
    monkeypatch.delitem(LOWERINGS, "Equal")
    then_g = helper.make_graph([helper.make_node("Mul", ["X", "A"], ["t"], name="then_mul")], "then", [],
                               [helper.make_tensor_value_info("t", F, [2, 3])])
    else_g = helper.make_graph([helper.make_node("Tanh", ["X"], ["e"], name="else_tanh")], "else", [],
                               [helper.make_tensor_value_info("e", F, [2, 3])])
    nodes = [helper.make_node("Equal", ["sr", "SR16"], ["is16"], name="is16"),
             helper.make_node("If", ["is16"], ["Y"], then_branch=then_g, else_branch=else_g, name="branch")]
    feeds = {"X": rand(2, 3), "sr": np.array(16000, np.int64)}
    model = graph_model(nodes, feeds, ["Y"], {"SR16": np.array(16000, np.int64), "A": rand(2, 3, seed=4)})
    wasm = nnwasm.InferenceSession(model, _options(), providers=[WASM])
    wasm.run(None, feeds)
    events = wasm._end_profiling_events()
    check_trace(events)
    nodes = {e["name"]: e for e in nodes_within_runs(events)}
    assert nodes["is16_kernel_time"]["args"] == {"op_name": "Equal", "provider": WASM, "kernel": "host"}
    assert nodes["branch_kernel_time"]["args"] == {"op_name": "If", "provider": WASM, "kernel": "IfRunner"}
    inner, outer = nodes["then_mul_kernel_time"], nodes["branch_kernel_time"]
    assert inner["args"]["kernel"] == "binary" and "else_tanh_kernel_time" not in nodes
    assert outer["ts"] <= inner["ts"] and inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"] + 1e-3
    assert wasm._end_profiling_events() is None

    cpu = nnwasm.InferenceSession(model, _options(), providers=[NUMPY])
    cpu.run(None, feeds)
    events = cpu._end_profiling_events()
    check_trace(events)
    args = [e["args"] for e in nodes_within_runs(events)]
    assert [a["op_name"] for a in args] == ["Equal", "If"] and {a["provider"] for a in args} == {NUMPY}
    assert all(a["kernel"] for a in args)


def test_index_error_in_a_profiled_run_names_the_node():
    feeds = {"X": rand(5, 3), "I": np.array([1, 5], np.int64)}
    model = graph_model([helper.make_node("Gather", ["X", "I"], ["Y"], name="lookup")], feeds, ["Y"])
    sess = nnwasm.InferenceSession(model, _options(), providers=[WASM])
    with pytest.raises(nnwasm.errors.InvalidArgument, match="index out of range in Gather node 'lookup'"):
        sess.run(None, feeds)
    feeds["I"] = np.array([1, 4], np.int64)
    np.testing.assert_array_equal(sess.run(None, feeds)[0], feeds["X"][[1, 4]])
    events = sess._end_profiling_events()
    assert [e["name"] for e in events if e["cat"] == "Node"] == ["lookup_kernel_time"] * 2


def test_symbolic_shapes_are_prepared_inside_the_run():
    x = rand(2, 4)
    model = graph_model([helper.make_node("Relu", ["x"], ["y"], name="relu")], {"x": x}, ["y"])
    import onnx
    m = onnx.load_from_string(model)
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
    sess = nnwasm.InferenceSession(m.SerializeToString(), _options())
    sess.run(None, {"x": x})
    sess.run(None, {"x": x})
    events = sess._end_profiling_events()
    check_trace(events)
    assert [e["name"] for e in events if e["cat"] == "Session"] == \
        ["model_loading_array", "session_initialization", "prepare_input_shapes", "model_run", "model_run"]
