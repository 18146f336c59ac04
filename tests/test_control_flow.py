"""If, Loop and Scan on kernels.wasm: bodies compiled to their own plans, conditions and trip
counts read on the host, outer-scope values read by name. Each model runs with the numpy fallback
disabled (every node asserted on WasmExecutionProvider) against the numpy provider (the
reference) and onnxruntime; a control node whose body the WASM provider refuses falls back with
the reason; the numpy-free path (Pyodide) runs a Silero-like toy VAD."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import nnwasm
from model_builders import graph_model, ort_run, rand
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parent.parent
F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def wasm_session(model):
    so = nnwasm.SessionOptions()
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    sess = nnwasm.InferenceSession(model, so, providers=["WasmExecutionProvider"])
    assert {p for _, _, p in sess.get_provider_assignment()} == {"WasmExecutionProvider"}
    return sess


def check(model, *feed_sets, atol=1e-5):
    wasm = wasm_session(model)
    ref = nnwasm.InferenceSession(model, providers=["NumpyExecutionProvider"])
    for feeds in feed_sets:
        got, want, oracle = wasm.run(None, feeds), ref.run(None, feeds), ort_run(model, feeds)
        assert len(got) == len(oracle)
        for g, w, o in zip(got, want, oracle):
            assert g.shape == o.shape and g.dtype == o.dtype, (g.shape, o.shape, g.dtype, o.dtype)
            assert w.shape == o.shape and w.dtype == o.dtype
            np.testing.assert_allclose(w, o, rtol=1e-5, atol=atol)
            np.testing.assert_allclose(g, o, rtol=1e-5, atol=atol)
    return wasm


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def const(name, value):
    return numpy_helper.from_array(np.asarray(value), name)


def branch(name, nodes, outputs, inits=()):
    return helper.make_graph(nodes, name, [], outputs, list(inits))


# --- If --------------------------------------------------------------------------------------------

def if_on_scalar():
    then_g = branch("then", [helper.make_node("Mul", ["X", "A"], ["t"])], [vi("t", F, [2, 3])])
    else_g = branch("else", [helper.make_node("Add", ["X", "K"], ["e"]),
                             helper.make_node("Tanh", ["e"], ["e2"])], [vi("e2", F, [2, 3])],
                    [const("K", np.float32(0.5))])
    nodes = [helper.make_node("Equal", ["sr", "SR16"], ["is16"]),
             helper.make_node("If", ["is16"], ["Y"], then_branch=then_g, else_branch=else_g)]
    return graph_model(nodes, {"X": rand(2, 3), "sr": np.array(16000, np.int64)}, ["Y"],
                       {"SR16": np.array(16000, np.int64), "A": rand(2, 3, seed=4)})


def test_if_on_scalar_input_both_branches():
    x = rand(2, 3, seed=1)
    check(if_on_scalar(), {"X": x, "sr": np.array(16000, np.int64)}, {"X": x, "sr": np.array(8000, np.int64)})


def test_if_reads_outer_values_made_by_plans():
    """Branches read a value an earlier plan made (h), an outer initializer (W) and a graph input
    (X); the If's output feeds a later plan."""
    then_g = branch("then", [helper.make_node("Gemm", ["h", "W"], ["t"], transB=1)], [vi("t", F, [2, 4])])
    else_g = branch("else", [helper.make_node("Gemm", ["X", "W"], ["e0"], transB=1),
                             helper.make_node("Sigmoid", ["e0"], ["e"])], [vi("e", F, [2, 4])])
    nodes = [helper.make_node("Relu", ["X"], ["h"]),
             helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g),
             helper.make_node("Mul", ["y", "y"], ["Y"])]
    model = graph_model(nodes, {"X": rand(2, 5), "c": np.array(True)}, ["Y"], {"W": rand(4, 5, seed=2)})
    x = rand(2, 5, seed=3)
    check(model, {"X": x, "c": np.array(True)}, {"X": x, "c": np.array(False)})


def test_nested_if():
    inner_then = branch("it", [helper.make_node("Sub", ["X", "A"], ["it_y"])], [vi("it_y", F, [3])])
    inner_else = branch("ie", [helper.make_node("Mul", ["X", "A"], ["ie_y"])], [vi("ie_y", F, [3])])
    outer_then = branch("ot", [helper.make_node("Relu", ["X"], ["r"]),
                               helper.make_node("If", ["c2"], ["ot_y0"], then_branch=inner_then,
                                                else_branch=inner_else),
                               helper.make_node("Add", ["ot_y0", "r"], ["ot_y"])], [vi("ot_y", F, [3])])
    outer_else = branch("oe", [helper.make_node("Tanh", ["X"], ["oe_y"])], [vi("oe_y", F, [3])])
    nodes = [helper.make_node("If", ["c1"], ["Y"], then_branch=outer_then, else_branch=outer_else)]
    model = graph_model(nodes, {"X": rand(3), "c1": np.array(True), "c2": np.array(True)}, ["Y"],
                        {"A": rand(3, seed=5)})
    x = rand(3, seed=6)
    feeds = [{"X": x, "c1": np.array(a), "c2": np.array(b)} for a in (True, False) for b in (True, False)]
    check(model, *feeds)


def test_if_branches_of_different_shapes():
    """The If's output shape is known only at run time; each branch plan has its own shapes."""
    then_g = branch("then", [helper.make_node("Relu", ["X"], ["t"])], [vi("t", F, [2, 3])])
    else_g = branch("else", [helper.make_node("Concat", ["X", "X"], ["e"], axis=0)], [vi("e", F, [4, 3])])
    model = graph_model([helper.make_node("If", ["c"], ["Y"], then_branch=then_g, else_branch=else_g)],
                        {"X": rand(2, 3), "c": np.array(True)}, ["Y"])
    x = rand(2, 3, seed=7)
    sess = check(model, {"X": x, "c": np.array(True)}, {"X": x, "c": np.array(False)})
    assert sess.get_outputs()[0].shape == [None, 3]


# --- Loop ------------------------------------------------------------------------------------------

def counter_loop(m_input):
    """y <- tanh(y * A + X), cnt <- cnt + 1; scan outputs y and cnt per iteration."""
    body = helper.make_graph(
        [helper.make_node("Mul", ["y_in", "A"], ["ya"]),
         helper.make_node("Add", ["ya", "X"], ["yx"]),
         helper.make_node("Tanh", ["yx"], ["y_out"]),
         helper.make_node("Add", ["cnt_in", "ONE"], ["cnt_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Identity", ["y_out"], ["y_scan"]),
         helper.make_node("Mul", ["cnt_out", "i"], ["i_scan"])],
        "body", [vi("i", I64, []), vi("cond_in", B, []), vi("y_in", F, [2, 3]), vi("cnt_in", I64, [])],
        [vi("cond_out", B, []), vi("y_out", F, [2, 3]), vi("cnt_out", I64, []), vi("y_scan", F, [2, 3]),
         vi("i_scan", I64, [])], [const("ONE", np.int64(1))])
    loop = helper.make_node("Loop", ["M", "C", "Y0", "CNT0"], ["Y", "CNT", "YS", "IS"], body=body)
    inputs = {"X": rand(2, 3), "Y0": rand(2, 3, seed=1)}
    inits = {"A": rand(2, 3, seed=2), "CNT0": np.array(10, np.int64), "C": np.array(True)}
    if m_input:
        inputs["M"] = np.array(4, np.int64)
    else:
        inits["M"] = np.array(5, np.int64)
    return graph_model([loop], inputs, ["Y", "CNT", "YS", "IS"], inits, opset=16)


def test_loop_constant_trip_count():
    model = counter_loop(m_input=False)
    sess = check(model, {"X": rand(2, 3, seed=3), "Y0": rand(2, 3, seed=4)})
    assert sess.get_outputs()[2].shape == [5, 2, 3]


@pytest.mark.parametrize("m", [0, 1, 6])
def test_loop_trip_count_input(m):
    """M fed at run time: scan outputs grow on the host (their first dim unknown until then)."""
    check(counter_loop(m_input=True), {"X": rand(2, 3, seed=3), "Y0": rand(2, 3, seed=4), "M": np.array(m, np.int64)})


def test_loop_cond_only():
    """No M: the body computes its condition (cnt < LIMIT, on the host) and halves y."""
    body = helper.make_graph(
        [helper.make_node("Add", ["cnt_in", "ONE"], ["cnt_out"]),
         helper.make_node("Less", ["cnt_out", "LIMIT"], ["cond_out"]),
         helper.make_node("Mul", ["y_in", "HALF"], ["y_out"])],
        "body", [vi("i", I64, []), vi("cond_in", B, []), vi("cnt_in", I64, []), vi("y_in", F, [4])],
        [vi("cond_out", B, []), vi("cnt_out", I64, []), vi("y_out", F, [4])],
        [const("ONE", np.int64(1)), const("HALF", np.float32(0.5))])
    loop = helper.make_node("Loop", ["", "C", "CNT0", "Y0"], ["CNT", "Y"], body=body)
    model = graph_model([loop], {"C": np.array(True), "LIMIT": np.array(3, np.int64), "Y0": rand(4)},
                        ["CNT", "Y"], {"CNT0": np.array(0, np.int64)}, opset=16)
    y0 = rand(4, seed=9)
    check(model, *[{"C": np.array(c), "LIMIT": np.array(n, np.int64), "Y0": y0}
                   for c, n in ((True, 3), (True, 7), (False, 3), (True, -1))])


# --- Scan ------------------------------------------------------------------------------------------

def cumsum_scan(in_axis, in_dir, out_axis, out_dir):
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "x_t"], ["s_out"]),
         helper.make_node("Relu", ["s_out"], ["r_out"])],
        "body", [vi("s_in", F, [3]), vi("x_t", F, [3])], [vi("s_out", F, [3]), vi("r_out", F, [3])])
    scan = helper.make_node("Scan", ["S0", "X"], ["S", "R"], body=body, num_scan_inputs=1,
                            scan_input_axes=[in_axis], scan_input_directions=[in_dir],
                            scan_output_axes=[out_axis], scan_output_directions=[out_dir])
    x = rand(5, 3) if in_axis == 0 else rand(3, 5)
    return graph_model([scan], {"S0": rand(3, seed=1), "X": x}, ["S", "R"], opset=16), x


@pytest.mark.parametrize("in_axis,in_dir,out_axis,out_dir", [(0, 0, 0, 0), (1, 0, 0, 0), (0, 1, 0, 0),
                                                             (0, 0, 1, 0), (-1, 1, -1, 1)])
def test_scan_cumulative_sum(in_axis, in_dir, out_axis, out_dir):
    model, x = cumsum_scan(in_axis, in_dir, out_axis, out_dir)
    check(model, {"S0": rand(3, seed=2), "X": x + 0.25})


# --- a Silero-like voice-activity detector ------------------------------------------------------

def toy_vad():
    """If(Equal(sr, 16000)) picks one of two Conv/Gemm/Tanh/Sigmoid branches (different kernels
    and strides per sample rate), both reading the outer state h; outputs prob and the new state."""
    rng = np.random.default_rng(0)

    def w(*shape):
        return np.asarray(rng.standard_normal(shape) * 0.3, np.float32)

    def rate_branch(tag, k, stride):
        L = (64 - k) // stride + 1
        nodes = [helper.make_node("Conv", ["x", f"W{tag}"], [f"c{tag}"], strides=[stride], name=f"conv{tag}"),
                 helper.make_node("Relu", [f"c{tag}"], [f"r{tag}"]),
                 helper.make_node("Flatten", [f"r{tag}"], [f"f{tag}"]),
                 helper.make_node("Gemm", [f"f{tag}", f"G{tag}"], [f"g{tag}"]),
                 helper.make_node("Gemm", ["h", "Wh", "Bh"], [f"hh{tag}"]),
                 helper.make_node("Add", [f"g{tag}", f"hh{tag}"], [f"a{tag}"]),
                 helper.make_node("Tanh", [f"a{tag}"], [f"hn{tag}"]),
                 helper.make_node("Gemm", [f"hn{tag}", "Wo"], [f"o{tag}"]),
                 helper.make_node("Sigmoid", [f"o{tag}"], [f"p{tag}"]),
                 helper.make_node("Mul", [f"p{tag}", f"hn{tag}"], [f"gate{tag}"])]
        inits = [const(f"W{tag}", w(4, 1, k)), const(f"G{tag}", w(4 * L, 8))]
        return helper.make_graph(nodes, f"sr{tag}", [], [vi(f"p{tag}", F, [1, 1]), vi(f"gate{tag}", F, [1, 8])],
                                 inits)

    nodes = [helper.make_node("Equal", ["sr", "SR16"], ["is16"]),
             helper.make_node("If", ["is16"], ["prob", "hn"], then_branch=rate_branch("16", 8, 4),
                              else_branch=rate_branch("8", 4, 2))]
    inits = {"SR16": np.array(16000, np.int64), "Wh": w(8, 8), "Bh": w(8), "Wo": w(8, 1)}
    return graph_model(nodes, {"x": rand(1, 1, 64), "sr": np.array(16000, np.int64), "h": rand(1, 8)},
                       ["prob", "hn"], inits)


def test_silero_like_vad_with_symbolic_batch_wasm_only():
    """As Silero's export: batch dims symbolic, so the session is specialised at the first run."""
    import onnx
    model = onnx.load_from_string(toy_vad())
    for vi_ in model.graph.input:
        if vi_.name in ("x", "h"):
            vi_.type.tensor_type.shape.dim[0].dim_param = "batch"
    for vi_ in model.graph.output:
        vi_.type.tensor_type.shape.dim[0].dim_param = "batch"
    model = model.SerializeToString()
    x, h = rand(1, 1, 64, seed=13), rand(1, 8, seed=14)
    sess = wasm_session(model)
    assert sess.get_inputs()[0].shape == ["batch", 1, 64]
    for sr in (16000, 8000):
        feeds = {"x": x, "h": h, "sr": np.array(sr, np.int64)}
        for g, w in zip(sess.run(None, feeds), ort_run(model, feeds)):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
        assert {p for _, _, p in sess.get_provider_assignment()} == {"WasmExecutionProvider"}


def test_silero_like_vad():
    x, h = rand(1, 1, 64, seed=11), rand(1, 8, seed=12)
    sess = check(toy_vad(), {"x": x, "sr": np.array(16000, np.int64), "h": h},
                 {"x": x, "sr": np.array(8000, np.int64), "h": h})
    assert ("", "If", "WasmExecutionProvider") in sess.get_provider_assignment()


NO_NUMPY = r"""
import json, sys
sys.modules["numpy"] = None            # any import of numpy now raises ImportError
sys.path.insert(0, sys.argv[1])
import nnwasm
from nnwasm import dtypes
from nnwasm.tensor import TensorData
so = nnwasm.SessionOptions()
so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
out = []
for case in json.load(open(sys.argv[2])):
    sess = nnwasm.InferenceSession(case["model"], so, providers=["WasmExecutionProvider"])
    runs = []
    for feeds in case["feeds"]:
        feeds = {k: TensorData(dtypes.from_name(dt), shape, bytes.fromhex(data)) for k, (dt, shape, data) in feeds.items()}
        runs.append([[t.dtype.name, list(t.shape), t.tolist()] for t in sess._run_raw(None, feeds)])
    out.append(runs)
print(json.dumps({"outputs": out, "numpy_loaded": sys.modules.get("numpy") is not None}))
"""


def test_control_flow_without_numpy(tmp_path):
    """If, Loop (trip count fed at run time: scan outputs grown on the host) and Scan with numpy
    blocked, as in Pyodide."""
    x, h = rand(1, 1, 64, seed=11), rand(1, 8, seed=12)
    loop_feeds = {"X": rand(2, 3, seed=3), "Y0": rand(2, 3, seed=4)}
    scan, sx = cumsum_scan(0, 1, 0, 0)
    cases = [(toy_vad(), [{"x": x, "h": h, "sr": np.array(sr, np.int64)} for sr in (16000, 8000)]),
             (counter_loop(m_input=True), [{**loop_feeds, "M": np.array(m, np.int64)} for m in (3, 0)]),
             (scan, [{"S0": rand(3, seed=2), "X": sx}])]
    spec = []
    for k, (model, feed_sets) in enumerate(cases):
        (tmp_path / f"m{k}.onnx").write_bytes(model)
        spec.append({"model": str(tmp_path / f"m{k}.onnx"),
                     "feeds": [{n: [a.dtype.name, list(a.shape), a.tobytes().hex()] for n, a in f.items()}
                               for f in feed_sets]})
    (tmp_path / "cases.json").write_text(json.dumps(spec))
    proc = subprocess.run([sys.executable, "-c", NO_NUMPY, str(ROOT / "py_runtime"), str(tmp_path / "cases.json")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert not out["numpy_loaded"]
    for (model, feed_sets), runs in zip(cases, out["outputs"]):
        for feeds, got in zip(feed_sets, runs):
            for (dt, shape, values), want in zip(got, ort_run(model, feeds)):
                assert dt == want.dtype.name and tuple(shape) == want.shape
                np.testing.assert_allclose(np.array(values, dt).reshape(shape), want, rtol=1e-5, atol=1e-5)


# --- refusals ----------------------------------------------------------------------------------------

def test_body_the_wasm_provider_refuses_falls_back_to_numpy():
    then_g = branch("then", [helper.make_node("Asinh", ["X"], ["t"], name="asinh_in_branch")], [vi("t", F, [3])])
    else_g = branch("else", [helper.make_node("Relu", ["X"], ["e"])], [vi("e", F, [3])])
    model = graph_model([helper.make_node("If", ["c"], ["Y"], then_branch=then_g, else_branch=else_g, name="cf")],
                        {"X": rand(3), "c": np.array(True)}, ["Y"])
    # on WASM alone the If is created (the branch is checked only when taken): the run that takes
    # the branch fails naming it, the other branch runs, and the session stays usable
    wasm = wasm_session(model)
    x = rand(3)
    with pytest.raises(nnwasm.NotImplementedOp, match="'cf'.*then_branch has Asinh node 'asinh_in_branch'"):
        wasm.run(None, {"X": x, "c": np.array(True)})
    np.testing.assert_array_equal(wasm.run(None, {"X": x, "c": np.array(False)})[0], np.maximum(x, 0))
    sess = nnwasm.InferenceSession(model)
    assert sess.get_provider_assignment() == [("cf", "If", "NumpyExecutionProvider")]
    x = rand(3, seed=2)
    for c in (True, False):
        np.testing.assert_allclose(sess.run(None, {"X": x, "c": np.array(c)})[0],
                                   ort_run(model, {"X": x, "c": np.array(c)})[0], rtol=1e-6)


def test_branch_refused_with_symbolic_dims_is_checked_when_taken():
    """A merged decoder's shape: symbolic input dims (the other branch waits for them) and one
    branch WASM can't run; on WASM alone the session is created, the good branch runs at every
    length, the bad one fails naming the node, and the session stays usable."""
    then_g = branch("then", [helper.make_node("Asinh", ["X"], ["t"], name="asinh_in_branch")], [vi("t", F, None)])
    else_g = branch("else", [helper.make_node("Relu", ["X"], ["e"])], [vi("e", F, None)])
    g = helper.make_graph([helper.make_node("If", ["c"], ["Y"], then_branch=then_g, else_branch=else_g, name="cf")],
                          "g", [vi("c", TensorProto.BOOL, [1]), vi("X", F, ["n"])], [vi("Y", F, None)])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    wasm = wasm_session(model)
    for n in (0, 3, 5):
        x = rand(n) if n else np.zeros(0, np.float32)
        np.testing.assert_array_equal(wasm.run(None, {"X": x, "c": np.array([False])})[0], np.maximum(x, 0))
        with pytest.raises(nnwasm.NotImplementedOp, match="'cf'.*then_branch has Asinh node 'asinh_in_branch'"):
            wasm.run(None, {"X": x, "c": np.array([True])})


def test_loop_with_growing_carried_value_falls_back():
    """A carried value whose shape changes between iterations has no static body plan."""
    body = helper.make_graph(
        [helper.make_node("Concat", ["y_in", "X"], ["y_out"], axis=0),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body", [vi("i", I64, []), vi("cond_in", B, []), vi("y_in", F, [None])],
        [vi("cond_out", B, []), vi("y_out", F, [None])])
    loop = helper.make_node("Loop", ["M", "", "Y0"], ["Y"], body=body, name="grow")
    model = graph_model([loop], {"X": rand(2), "Y0": rand(1), "M": np.array(3, np.int64)}, ["Y"], opset=16)
    sess = nnwasm.InferenceSession(model)
    assert ("grow", "Loop", "NumpyExecutionProvider") in sess.get_provider_assignment()
    feeds = {"X": rand(2, seed=1), "Y0": rand(1, seed=2), "M": np.array(3, np.int64)}
    np.testing.assert_allclose(sess.run(None, feeds)[0], ort_run(model, feeds)[0])
    with pytest.raises(nnwasm.NotImplementedOp, match="grow.*not static"):
        wasm_session(model)


# --- nesting, mixed providers, symbolic shapes --------------------------------------------------

def test_loop_body_with_if_on_the_counter():
    """An If inside a Loop body branches on the iteration number (computed on the host) and reads
    the loop-carried value and an outer input; the Loop's trip count comes from a graph input."""
    even = branch("even", [helper.make_node("Add", ["y_in", "X"], ["ev"])], [vi("ev", F, [2, 2])])
    odd = branch("odd", [helper.make_node("Mul", ["y_in", "HALF"], ["od"])], [vi("od", F, [2, 2])])
    body = helper.make_graph(
        [helper.make_node("Div", ["i", "TWO"], ["half"]),
         helper.make_node("Mul", ["half", "TWO"], ["even_part"]),
         helper.make_node("Sub", ["i", "even_part"], ["r"]),
         helper.make_node("Equal", ["r", "ZERO"], ["is_even"]),
         helper.make_node("If", ["is_even"], ["y_out"], then_branch=even, else_branch=odd),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body", [vi("i", I64, []), vi("cond_in", B, []), vi("y_in", F, [2, 2])],
        [vi("cond_out", B, []), vi("y_out", F, [2, 2]), vi("y_out", F, [2, 2])],
        [const("TWO", np.int64(2)), const("ZERO", np.int64(0)), const("HALF", np.float32(0.5))])
    loop = helper.make_node("Loop", ["M", "", "Y0"], ["Y", "YS"], body=body)
    model = graph_model([loop], {"X": rand(2, 2), "Y0": rand(2, 2, seed=1), "M": np.array(5, np.int64)},
                        ["Y", "YS"], opset=16)
    check(model, *[{"X": rand(2, 2, seed=2), "Y0": rand(2, 2, seed=3), "M": np.array(m, np.int64)} for m in (5, 2)])


def test_if_body_reads_a_value_of_the_numpy_fallback():
    """With the fallback on, Asinh runs on numpy and the If on WASM reads its output by name."""
    then_g = branch("then", [helper.make_node("Mul", ["e", "X"], ["t"])], [vi("t", F, [4])])
    else_g = branch("else", [helper.make_node("Sub", ["e", "X"], ["s"])], [vi("s", F, [4])])
    nodes = [helper.make_node("Asinh", ["X"], ["e"], name="asinh"),
             helper.make_node("If", ["c"], ["Y"], then_branch=then_g, else_branch=else_g, name="if")]
    model = graph_model(nodes, {"X": rand(4), "c": np.array(True)}, ["Y"])
    sess = nnwasm.InferenceSession(model)
    assert sess.get_provider_assignment() == [("asinh", "Asinh", "NumpyExecutionProvider"),
                                              ("if", "If", "WasmExecutionProvider")]
    x = rand(4, seed=3)
    for c in (True, False):
        feeds = {"X": x, "c": np.array(c)}
        np.testing.assert_allclose(sess.run(None, feeds)[0], ort_run(model, feeds)[0], rtol=1e-5)


def test_if_with_a_symbolic_batch_dim():
    """Bodies are specialised per concrete input shape at the first run with it, like the main
    graph; with the fallback disabled, creation defers what needs those shapes to that run."""
    then_g = branch("then", [helper.make_node("Relu", ["X"], ["t"])], [vi("t", F, ["N", 3])])
    else_g = branch("else", [helper.make_node("Tanh", ["X"], ["e"])], [vi("e", F, ["N", 3])])
    g = helper.make_graph([helper.make_node("If", ["c"], ["Y"], then_branch=then_g, else_branch=else_g)], "g",
                          [vi("X", F, ["N", 3]), vi("c", B, [])], [vi("Y", F, ["N", 3])])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    model = model.SerializeToString()
    so = nnwasm.SessionOptions()
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    for sess in (nnwasm.InferenceSession(model), nnwasm.InferenceSession(model, so, providers=["WasmExecutionProvider"])):
        for n in (1, 4):
            for c in (True, False):
                feeds = {"X": rand(n, 3, seed=n), "c": np.array(c)}
                np.testing.assert_allclose(sess.run(None, feeds)[0], ort_run(model, feeds)[0], rtol=1e-6)
                assert sess.get_provider_assignment() == [("", "If", "WasmExecutionProvider")]


def test_wasm_only_symbolic_model_still_refuses_unknown_ops_at_creation():
    """Only what needs concrete shapes waits for the first run; an op WASM lacks fails at once."""
    g = helper.make_graph([helper.make_node("Asinh", ["X"], ["Y"], name="asinh")], "g", [vi("X", F, ["N", 3])],
                          [vi("Y", F, ["N", 3])])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    with pytest.raises(nnwasm.NotImplementedOp, match="no WASM kernel for Asinh"):
        nnwasm.InferenceSession(model.SerializeToString(), providers=["WasmExecutionProvider"])


def test_if_on_a_constant_condition_runs_only_the_taken_branch():
    """The dead branch (here ill-typed, as in some exported functions) is never compiled."""
    then_g = branch("then", [helper.make_node("Relu", ["X"], ["t"])], [vi("t", F, [3])])
    else_g = branch("else", [helper.make_node("Add", ["X", "W"], ["e"])], [vi("e", F, [3])],
                    [const("W", rand(4))])
    model = graph_model([helper.make_node("If", ["C"], ["Y"], then_branch=then_g, else_branch=else_g)],
                        {"X": rand(3)}, ["Y"], {"C": np.array(True)})
    sess = wasm_session(model)
    x = rand(3, seed=4)
    np.testing.assert_allclose(sess.run(None, {"X": x})[0], np.maximum(x, 0))


def test_if_branch_wrong_for_these_shapes_fails_only_when_taken():
    """Exporters leave branches that only type-check for other input sizes (Silero's 8 kHz branch
    with a 16 kHz chunk): with the input's dims symbolic, as in onnxruntime, only taking such a
    branch is an error. Declared with dims that make the branch wrong whatever is fed, the model is
    refused at load, as onnxruntime's graph attribute inferencing refuses it."""
    then_g = branch("then", [helper.make_node("Relu", ["X"], ["t"])], [vi("t", F, [2, 3])])
    else_g = branch("else", [helper.make_node("Add", ["X", "W"], ["e"])], [vi("e", F, [2, 3])],
                    [const("W", rand(4))])
    concrete = graph_model([helper.make_node("If", ["c"], ["Y"], then_branch=then_g, else_branch=else_g)],
                           {"X": rand(2, 3), "c": np.array(True)}, ["Y"])
    m = onnx.load_from_string(concrete)
    for d, name in zip(m.graph.input[0].type.tensor_type.shape.dim, ("n", "k")):
        d.dim_param = name
    model = m.SerializeToString()
    x = rand(2, 3, seed=5)
    np.testing.assert_allclose(ort_run(model, {"X": x, "c": np.array(True)})[0], np.maximum(x, 0))
    for sess in (wasm_session(model), nnwasm.InferenceSession(model, providers=["NumpyExecutionProvider"])):
        np.testing.assert_allclose(sess.run(None, {"X": x, "c": np.array(True)})[0], np.maximum(x, 0))
        with pytest.raises(nnwasm.InvalidArgument, match="else_branch can't run with these input shapes"):
            sess.run(None, {"X": x, "c": np.array(False)})
    with pytest.raises(Exception, match="Incompatible dimensions"):
        ort_run(concrete, {"X": x, "c": np.array(True)})
    with pytest.raises(nnwasm.InvalidModel, match="else_branch fails shape inference with the model's declared shapes"):
        nnwasm.InferenceSession(concrete)


def test_malformed_control_nodes_are_invalid_models():
    x = rand(3)
    two_outs = branch("two", [helper.make_node("Relu", ["X"], ["a"]), helper.make_node("Tanh", ["X"], ["b"])],
                      [vi("a", F, [3]), vi("b", F, [3])])
    one_out = branch("one", [helper.make_node("Relu", ["X"], ["r"])], [vi("r", F, [3])])   # not "c": the If reads an outer "c"
    bad_body = helper.make_graph([helper.make_node("Identity", ["cond_in"], ["cond_out"])], "body",
                                 [vi("cond_in", B, [])], [vi("cond_out", B, [])])
    sbody = helper.make_graph([helper.make_node("Add", ["s", "t"], ["s2"])], "sbody",
                              [vi("s", F, [3]), vi("t", F, [3])], [vi("s2", F, [3])])
    models = {
        "then_branch has 2 outputs": graph_model(
            [helper.make_node("If", ["c"], ["Y"], then_branch=two_outs, else_branch=one_out)],
            {"X": x, "c": np.array(True)}, ["Y"], out_dtype=F),
        r"input 'c' is tensor\(float\), which ai.onnx's If does not accept": graph_model(   # (was: cond must be bool)
            [helper.make_node("If", ["c"], ["Y"], then_branch=one_out, else_branch=one_out)],
            {"X": x, "c": np.array(1.0, np.float32)}, ["Y"], out_dtype=F),
        "its body has 1 outputs": graph_model(   # (and takes 1 input; the outputs are checked first, at load)
            [helper.make_node("Loop", ["", "c", "X"], ["Y"], body=bad_body)],
            {"X": x, "c": np.array(True)}, ["Y"], opset=16, out_dtype=F),
        "scan inputs have different lengths": graph_model(
            [helper.make_node("Scan", ["S", "A", "B"], ["Y"], body=helper.make_graph(
                [helper.make_node("Add", ["s", "a"], ["s2"]), helper.make_node("Add", ["s2", "b"], ["s3"])],
                "b2", [vi("s", F, [3]), vi("a", F, [3]), vi("b", F, [3])], [vi("s3", F, [3])]), num_scan_inputs=2)],
            {"S": x, "A": rand(4, 3), "B": rand(5, 3)}, ["Y"], opset=16, out_dtype=F),
        "num_scan_inputs 3 does not fit": graph_model(
            [helper.make_node("Scan", ["S", "A"], ["Y"], body=sbody, num_scan_inputs=3)],
            {"S": x, "A": rand(4, 3)}, ["Y"], opset=16, out_dtype=F),
    }
    for msg, model in models.items():
        with pytest.raises(nnwasm.InvalidModel, match=msg):
            nnwasm.InferenceSession(model)
