"""The ONNX writer (onnx_io/save.py): what load_model reads, model_bytes writes back as a model
that onnx's checker accepts and onnxruntime runs with the original's results; every attribute
kind, subgraphs, initializers of every dtype, symbolic dims."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from model_builders import ort_run, rand
from nnwasm.onnx_io.load import load_model
from nnwasm.onnx_io.save import model_bytes


def _roundtrip(model, check=True):
    data = model.SerializeToString()
    out = onnx.load_from_string(model_bytes(load_model(data)))
    if check:   # onnx's checker wants every graph output shaped
        onnx.checker.check_model(out)
    return out


def _attrs(node):
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def test_every_attribute_kind_and_subgraphs():
    then_g = helper.make_graph([helper.make_node("Add", ["X", "k"], ["t"])], "then", [],
                               [helper.make_tensor_value_info("t", TensorProto.FLOAT, [2, 3])],
                               [numpy_helper.from_array(np.float32(2), "k")])
    else_g = helper.make_graph([helper.make_node("Neg", ["X"], ["e"])], "else", [],
                               [helper.make_tensor_value_info("e", TensorProto.FLOAT, [2, 3])])
    nodes = [
        helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(rand(2, 3), "")),
        helper.make_node("Constant", [], ["cf"], value_floats=[1.5, -2.0]),
        helper.make_node("Constant", [], ["ci"], value_ints=[3, -4]),
        helper.make_node("LeakyRelu", ["X"], ["l"], alpha=0.25),
        helper.make_node("Concat", ["l", "c"], ["cat"], axis=-2),
        helper.make_node("Pad", ["cat", "pads"], ["p"], mode="reflect"),
        helper.make_node("If", ["cond"], ["y_if"], then_branch=then_g, else_branch=else_g),
        helper.make_node("Custom", ["X"], ["z"], domain="my.domain", names=["a", "bc"], fs=[0.5], big=1 << 40,
                         neg=-7, tens=[numpy_helper.from_array(np.int64([1, 2]), "")]),
    ]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 3]),
                                       helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("p", "y_if")]
                          + [helper.make_tensor_value_info(n, TensorProto.INT64, None) for n in ("ci",)]
                          + [helper.make_tensor_value_info("cf", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(np.int64([0, 0, 0, 0]), "pads")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("my.domain", 1)])
    model.ir_version = 8
    out = onnx.load_from_string(model_bytes(load_model(model.SerializeToString())))
    assert [n.op_type for n in out.graph.node] == [n.op_type for n in nodes]
    for a, b in zip(nodes, out.graph.node):
        va, vb = _attrs(a), _attrs(b)
        assert va.keys() == vb.keys(), a.op_type
        for k in va:
            if isinstance(va[k], onnx.TensorProto):
                np.testing.assert_array_equal(numpy_helper.to_array(va[k]), numpy_helper.to_array(vb[k]))
            elif isinstance(va[k], list) and va[k] and isinstance(va[k][0], onnx.TensorProto):
                assert [numpy_helper.to_array(t).tolist() for t in va[k]] == [numpy_helper.to_array(t).tolist() for t in vb[k]]
            elif isinstance(va[k], onnx.GraphProto):
                assert [n.op_type for n in va[k].node] == [n.op_type for n in vb[k].node]
                assert [t.name for t in va[k].initializer] == [t.name for t in vb[k].initializer]
            else:
                assert va[k] == pytest.approx(vb[k]), (a.op_type, k)
    assert out.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "N"
    assert {(o.domain, o.version) for o in out.opset_import} == {("", 13), ("my.domain", 1)}
    # without the custom node, onnxruntime runs both alike
    model.graph.node.pop()
    del model.opset_import[1]
    saved = _roundtrip(model, check=False)
    for cond in (True, False):
        feeds = {"X": rand(2, 3), "cond": np.array(cond)}
        for a, b in zip(ort_run(model.SerializeToString(), feeds), ort_run(saved.SerializeToString(), feeds)):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64, np.int8, np.uint8, np.int32, np.int64,
                                   np.bool_, np.uint16])
def test_initializers_of_every_dtype(dtype):
    value = (np.arange(12).reshape(3, 4) % 5 - 2).astype(dtype)
    g = helper.make_graph([helper.make_node("Identity", ["W"], ["Y"])], "g", [],
                          [helper.make_tensor_value_info("Y", helper.np_dtype_to_tensor_dtype(value.dtype), [3, 4])],
                          [numpy_helper.from_array(value, "W")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    out = _roundtrip(model)
    np.testing.assert_array_equal(numpy_helper.to_array(out.graph.initializer[0]), value)
    np.testing.assert_array_equal(ort_run(out.SerializeToString(), {})[0], value)


def test_string_initializer():
    value = np.array([b"ab", b"", b"xyz"], dtype=object)
    g = helper.make_graph([helper.make_node("Identity", ["W"], ["Y"])], "g", [],
                          [helper.make_tensor_value_info("Y", TensorProto.STRING, [3])],
                          [numpy_helper.from_array(value, "W")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    out = _roundtrip(model)
    assert list(numpy_helper.to_array(out.graph.initializer[0])) == list(numpy_helper.to_array(model.graph.initializer[0]))
