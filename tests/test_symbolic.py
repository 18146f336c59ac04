"""Symbolic dims (py_runtime/nnwasm/symbolic.py): the expressions, the guards, and sessions whose
one traced variant serves every input shape that makes the same decisions."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import nnwasm
from nnwasm import session as session_module
from nnwasm.symbolic import Binding, Sym, holds, value
from model_builders import ort_run

P, S = Sym.var("P"), Sym.var("S")


@pytest.fixture
def tracing(monkeypatch):
    """Sessions created in the test trace symbolic dims (whatever NNWASM_SYMBOLIC says)."""
    monkeypatch.setattr(session_module, "_SYMBOLIC", True)


def test_expressions_normalise():
    assert ((P + S) - P).expr() == "S"
    assert (P + S) - P - S == 0 and isinstance((P + S) - P - S, int)
    assert 0 * P == 0 and isinstance(0 * P, int)
    assert ((4 * P + 8) // 4).expr() == "2 + P"
    assert ((64 * S * P) // (16 * S)).expr() == "4*P"
    with Binding({"P": 7, "S": 3}):
        assert value((P + 3) // 4) == 2 and value((P * S) % 5) == 1 and value(-P) == -7
        assert str(P * S) == "21" and int(P - S) == 4


def test_guards_record_decisions():
    with Binding({"P": 5}, trace=True) as b:
        size = (P + 1) * 64
        assert size > 100            # a comparison: guarded, holds for P >= 1
        assert list(range(P + 1))[-1] == 5   # a conversion to int: P == 5 from now on
    assert holds(b.guards, {"P": 5})
    assert not holds(b.guards, {"P": 6})
    with Binding({"P": 5}, trace=True) as b:
        assert (P + 1) * 64 > 100
    assert holds(b.guards, {"P": 40}) and not holds(b.guards, {"P": 0})


def test_sym_needs_bound_dims():
    with pytest.raises(RuntimeError, match="no dims bound"):
        value(P + 1)


def _wasm_only():
    so = nnwasm.SessionOptions()
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    return so


def _matmul_model():
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((64, 96)).astype(np.float32), "w")
    b = numpy_helper.from_array(np.random.default_rng(1).standard_normal(96).astype(np.float32), "b")
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y0"]), helper.make_node("Add", ["y0", "b"], ["y1"]),
                           helper.make_node("Relu", ["y1"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 96])], [w, b])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m.SerializeToString()


def test_one_traced_variant_serves_every_batch(tracing):
    model = _matmul_model()
    so = nnwasm.SessionOptions()
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    sess = nnwasm.InferenceSession(model, so)
    for n in (1, 2, 3, 300, 7, 2):   # 300 grows the arena, kept weights and all
        x = np.random.default_rng(n).standard_normal((n, 64)).astype(np.float32)
        np.testing.assert_allclose(sess.run(None, {"x": x})[0], ort_run(model, {"x": x})[0], rtol=1e-5, atol=1e-5)
    assert len(sess._traced_variants) == 2   # n = 1 traces alone: broadcasting decides on 1


def _range_model():
    """y = x + Range(0, n): values computed from the dim (a decoder's positions), per run."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
             helper.make_node("Range", ["zero", "n", "one"], ["r"]),
             helper.make_node("Cast", ["r"], ["rf"], to=TensorProto.FLOAT),
             helper.make_node("Add", ["x", "rf"], ["y"])]
    inits = [numpy_helper.from_array(np.array(0, np.int64), "zero"), numpy_helper.from_array(np.array(1, np.int64), "one")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n"])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m.SerializeToString()


def test_values_computed_from_a_dim_reuse_one_variant(tracing):
    sess = nnwasm.InferenceSession(_range_model(), _wasm_only())
    for n in (3, 4, 5, 6, 4, 1):
        x = np.ones(n, np.float32)
        np.testing.assert_array_equal(sess.run(None, {"x": x})[0], x + np.arange(n, dtype=np.float32))
    assert len(sess._traced_variants) == 2 and sess._traced_reused   # n = 1 alone: broadcasting decides on 1


def _tile_model():
    """y = Tile(x, Shape(x)): Tile's index tables are as long as the dim, so every trace specialises."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Tile", ["x", "s"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m.SerializeToString()


def test_a_model_that_specialises_stops_being_traced(tracing):
    sess = nnwasm.InferenceSession(_tile_model())
    for n in (3, 4, 5, 6, 4):
        x = np.arange(n, dtype=np.float32)
        np.testing.assert_array_equal(sess.run(None, {"x": x})[0], np.tile(x, n))
    assert len(sess._traced_variants) == session_module._MAX_UNREUSED_TRACES


def test_tracing_off_with_nnwasm_symbolic_0(monkeypatch):
    assert session_module._SYMBOLIC == (__import__("os").environ.get("NNWASM_SYMBOLIC", "1") != "0")
    monkeypatch.setattr(session_module, "_SYMBOLIC", False)
    sess = nnwasm.InferenceSession(_matmul_model())
    for n in (1, 2):
        x = np.ones((n, 64), np.float32)
        sess.run(None, {"x": x})
    assert sess._traced_variants == [] and len(sess._cache) == 2
