"""Issue 18 item 1: nnwasm refuses at load what onnxruntime refuses as invalid (onnx's checker inside
onnxruntime, its op schemas, its graph resolution), without importing onnx, each as InvalidGraph
naming the node or value. The installed onnx package ships no invalid test models, so the checker's
cases are built here, after onnx's own test_checker.py (missing/unknown/mistyped attributes, ops
absent at an opset, SSA violations, bad element types, opsets, IR versions) plus the fuzz kinds of
issue 18. onnxruntime is the oracle: each model must be refused by it, and by nnwasm."""
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import nnwasm
import nnwasm.capi.onnxruntime_pybind11_state
from nnwasm.onnx_io import validity

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def vi(name, elem=F, shape=(2,)):
    return helper.make_tensor_value_info(name, elem, shape)


def model(nodes, inputs=None, outputs=None, inits=(), opsets=(("", 17),), ir=8, value_info=()):
    g = helper.make_graph(nodes, "g", inputs if inputs is not None else [vi("X")],
                          outputs if outputs is not None else [vi("Y")], list(inits), value_info=list(value_info))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets])
    m.ir_version = ir
    return m


def relu(**kw):
    return helper.make_node("Relu", ["X"], ["Y"], name="r", **kw)


def _loop_body(i_type=I64, outputs=2):
    return helper.make_graph([helper.make_node("Identity", ["c"], ["c2"]), helper.make_node("Neg", ["a"], ["a2"])],
                             "body", [vi("i", i_type, []), vi("c", B, []), vi("a")],
                             [vi("c2", B, []), vi("a2")] * (outputs // 2))


def _untyped_attribute():
    n = helper.make_node("Gather", ["X", "I"], ["Y"], name="g")
    n.attribute.append(onnx.AttributeProto(name="axis", i=0))    # no type field
    return model([n], [vi("X"), vi("I", I64, [1])], [vi("Y", F, [1])])


# (name, model, what nnwasm's message says)
INVALID = [
    ("unknown attribute on ai.onnx", model([relu(bogus=1)]), r"'r'.*attribute 'bogus'.*does not define"),
    ("unknown attribute on ConstantOfShape (fuzz)",
     model([helper.make_node("ConstantOfShape", ["S"], ["Y"], name="c", bogus=3)], [vi("S", I64, [1])]),
     r"'c'.*attribute 'bogus'"),
    ("ReduceSum axes as an attribute at opset 13 (fuzz)",
     model([helper.make_node("ReduceSum", ["X"], ["Y"], name="rs", axes=[0])], outputs=[vi("Y", F, None)],
           opsets=(("", 13),)), r"'rs'.*attribute 'axes'"),
    ("unknown attribute on ai.onnx.ml",
     model([helper.make_node("Normalizer", ["X"], ["Y"], name="nm", domain="ai.onnx.ml", bogus=1)],
           opsets=(("", 17), ("ai.onnx.ml", 3))), r"'nm'.*attribute 'bogus'"),
    ("unknown attribute on com.microsoft",
     model([helper.make_node("FastGelu", ["X"], ["Y"], name="fg", domain="com.microsoft", bogus=1)],
           opsets=(("", 17), ("com.microsoft", 1))), r"'fg'.*attribute 'bogus'"),
    ("attribute of the wrong type", model([helper.make_node("Softmax", ["X"], ["Y"], name="sm", axis=1.5)]),
     r"'sm'.*'axis' is of type FLOAT"),
    ("attribute without a type", _untyped_attribute(), r"'g'.*attribute 'axis' has no type"),
    ("missing required attribute", model([helper.make_node("Cast", ["X"], ["Y"], name="cast")]),
     r"'cast' lacks attribute 'to'"),
    ("op not in the imported opset", model([helper.make_node("Gelu", ["X"], ["Y"], name="ge")]),
     r"'ge'.*Gelu exists from opset 20"),
    ("too many inputs", model([helper.make_node("Relu", ["X", "X"], ["Y"], name="r2")]), r"'r2' has 2 inputs"),
    ("empty required input", model([helper.make_node("Add", ["X", ""], ["Y"], name="add")]),
     r"'add': input 1 is empty"),
    ("input of a type the op refuses",
     model([relu()], [vi("X", TensorProto.INT4)]), r"'r': input 'X' is tensor\(int4\)"),
    ("one type parameter bound to two types",
     model([helper.make_node("Add", ["X", "Z"], ["Y"], name="add")], [vi("X"), vi("Z", TensorProto.DOUBLE)]),
     r"'add': type parameter T is bound to both tensor\(float\) and tensor\(double\)"),
    ("declared output type that the op does not make",
     model([relu()], outputs=[vi("Y", TensorProto.DOUBLE)]),
     r"'r': type parameter T is bound to both tensor\(float\) and tensor\(double\) \('Y'\)"),
    ("Cast output declared as another type",
     model([helper.make_node("Cast", ["X"], ["Y"], name="cast", to=I64)]), r"'cast': output 'Y' is tensor\(float\)"),
    ("graph input of element type 0 (fuzz)", model([relu()], [vi("X", 0)]), r"input 'X' has element type 0"),
    ("graph output of element type 0", model([relu()], outputs=[vi("Y", 0, None)]), r"output 'Y' has element type 0"),
    ("value_info of element type 0",
     model([helper.make_node("Relu", ["X"], ["a"]), helper.make_node("Relu", ["a"], ["Y"])], value_info=[vi("a", 0)]),
     r"value_info 'a' has element type 0"),
    ("element type out of range", model([relu()], [vi("X", 99)]), r"input 'X' has element type 99"),
    ("initializer of element type 0", None, r"'W' has element type 0"),
    ("ai.onnx opset beyond onnx's (fuzz)", model([relu()], opsets=(("", 10000),)),
     r"domain 'ai.onnx' version 10000 is outside"),
    ("ai.onnx.ml opset beyond onnx's", model([relu()], opsets=(("", 17), ("ai.onnx.ml", 99))),
     r"domain 'ai.onnx.ml' version 99"),
    ("com.microsoft opset 2", model([relu()], opsets=(("", 17), ("com.microsoft", 2))), r"'com.microsoft' version 2"),
    ("IR version beyond onnx's", model([relu()], ir=99), r"ir_version 99"),
    ("graph input also produced by a node",
     model([helper.make_node("Relu", ["X"], ["X2"], name="p"), helper.make_node("Relu", ["X2"], ["Y"])],
           [vi("X"), vi("X2")]), r"'p' produces 'X2', which is already a graph input"),
    ("two nodes writing one value",
     model([helper.make_node("Relu", ["X"], ["Y"], name="a"), helper.make_node("Neg", ["X"], ["Y"], name="b")]),
     r"'b' produces 'Y'"),
    ("duplicate node names",
     model([helper.make_node("Relu", ["X"], ["a"], name="n"), helper.make_node("Relu", ["a"], ["Y"], name="n")]),
     r"two nodes are named 'n'"),
    ("a node reading an undefined value", model([helper.make_node("Add", ["X", "nowhere"], ["Y"], name="add")]),
     r"'add' reads 'nowhere'"),
    ("IR 3 subgraph initializer that is not a subgraph input (fuzz)", None, r"initializer 'one' is not a graph input"),
    ("Loop body with more outputs than the Loop (fuzz)",
     model([helper.make_node("Loop", ["M", "", "X"], ["Y"], name="loop", body=_loop_body(outputs=4))],
           [vi("X"), vi("M", I64, [])]), r"'loop' has 1 outputs; its body has 4 outputs"),
    ("Loop body iteration number of another type (fuzz)",
     model([helper.make_node("Loop", ["M", "", "X"], ["Y"], name="loop", body=_loop_body(i_type=F))],
           [vi("X"), vi("M", I64, [])]), r"'loop': body input 'i' is tensor\(float\)"),
    ("QuantizeLinear without zero point feeding an int8 QLinearMatMul (fuzz)",
     model([helper.make_node("QuantizeLinear", ["X", "s"], ["q"]),
            helper.make_node("QLinearMatMul", ["q", "s", "z", "W", "s", "z", "s", "z"], ["Y"], name="qm")],
           [vi("X", F, [2, 2])], [vi("Y", TensorProto.INT8, [2, 2])],
           [numpy_helper.from_array(np.float32(0.1), "s"), numpy_helper.from_array(np.int8(0), "z"),
            numpy_helper.from_array(np.ones((2, 2), np.int8), "W")]), r"'qm': type parameter T1 is bound to both"),
]


def _special(name):
    if name == "initializer of element type 0":
        w = numpy_helper.from_array(np.ones(2, np.float32), "W")
        w.data_type = 0
        return model([helper.make_node("Add", ["X", "W"], ["Y"])], inits=[w])
    if name.startswith("IR 3 subgraph initializer"):
        one = numpy_helper.from_array(np.ones(2, np.float32), "one")
        then_g = helper.make_graph([helper.make_node("Add", ["X", "one"], ["t"])], "then", [], [vi("t")], [one])
        else_g = helper.make_graph([helper.make_node("Neg", ["X"], ["e"])], "else", [], [vi("e")])
        return model([helper.make_node("If", ["C"], ["Y"], then_branch=then_g, else_branch=else_g)],
                     [vi("X"), vi("C", B, [])], ir=3)
    raise KeyError(name)


@pytest.mark.parametrize("name,m,want", INVALID, ids=[c[0] for c in INVALID])
def test_onnxruntime_and_nnwasm_refuse(name, m, want):
    m = m if m is not None else _special(name)
    raw = m.SerializeToString()
    so = ort.SessionOptions()
    so.log_severity_level = 4
    with pytest.raises(Exception) as refused:     # the oracle: onnxruntime refuses it as invalid
        ort.InferenceSession(raw, so, providers=["CPUExecutionProvider"])
    assert "NOT_IMPLEMENTED" not in str(refused.value), refused.value
    with pytest.raises(nnwasm.capi.onnxruntime_pybind11_state.InvalidGraph, match=want):
        nnwasm.InferenceSession(raw)
    with pytest.raises(nnwasm.capi.onnxruntime_pybind11_state.InvalidGraph):
        nnwasm.InferenceSession(raw, providers=["NumpyExecutionProvider"])


# onnx's checker refuses these, onnxruntime loads and runs them: nnwasm follows onnxruntime
# (docs/hardening.md lists them and the other differences).
def test_checker_refuses_what_onnxruntime_runs():
    m = model([relu()], outputs=[vi("Y", F, None)])   # full_check: "Field 'shape' of 'type' is required"
    with pytest.raises(Exception):
        onnx.checker.check_model(m, full_check=True)
    x = np.array([-1, 2], np.float32)
    got = nnwasm.InferenceSession(m.SerializeToString()).run(None, {"X": x})
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"X": x})
    np.testing.assert_array_equal(got[0], want[0])
    m = model([relu(__hint=1)])
    np.testing.assert_array_equal(nnwasm.InferenceSession(m.SerializeToString()).run(None, {"X": x})[0], [0, 2])


def test_schema_table_is_current():
    """op_schemas.json matches the onnx and onnxruntime the tests use (else rerun gen_op_schemas.py)."""
    d = validity.data()
    assert d["onnx"] == onnx.__version__ and d["onnxruntime"] == ort.__version__, \
        "rerun build_scripts/gen_op_schemas.py"
    assert d["opsets"][""][1] >= onnx.defs.onnx_opset_version() and d["max_ir_version"] >= onnx.IR_VERSION


def test_loader_first_checks_follow_onnx_schemas():
    """The bounds the loader checks an ai.onnx node against before decoding its attributes (derived
    from op_schemas.json) are onnx's, over every version of each op."""
    big = 2 ** 31 - 1
    arity, kinds = {}, {}
    for s in onnx.defs.get_all_schemas_with_history():
        if s.domain == "":
            lo_i, hi_i, lo_o, hi_o = arity.get(s.name, (big, 0, big, 0))
            arity[s.name] = (min(lo_i, s.min_input), max(hi_i, s.max_input),
                             min(lo_o, s.min_output), max(hi_o, s.max_output))
            for a in s.attributes.values():
                kinds.setdefault(a.name, set()).add(int(a.type))
    assert validity.ai_onnx_arity() == {op: tuple(None if n >= big else n for n in b) for op, b in arity.items()}
    assert validity.ai_onnx_attribute_types() == kinds
    assert validity.ai_onnx_arity()["Conv"] == (2, 3, 1, 1) and validity.ai_onnx_arity()["Concat"] == (1, None, 1, 1)


def test_validity_does_not_import_onnx():
    import subprocess
    import sys
    from pathlib import Path
    code = ("import sys; sys.modules['onnx'] = None; import nnwasm, numpy as np\n"
            f"nnwasm.InferenceSession(sys.stdin.buffer.read()).run(None, {{'X': np.ones(2, np.float32)}})")
    root = Path(__file__).resolve().parents[1]
    r = subprocess.run([sys.executable, "-c", code], input=model([relu()]).SerializeToString(),
                       capture_output=True, env={"PYTHONPATH": str(root / "py_runtime")})
    assert r.returncode == 0, r.stderr.decode()[-2000:]
