"""Element types from ml_dtypes (bfloat16, float8, int4...) and sequence / optional values at the
session boundary (values.py): fed and returned as onnxruntime does, and refused clearly when a
feed contradicts the model's declared type."""
import sys

import ml_dtypes
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import nnwasm
from nnwasm.errors import InvalidArgument, Unsupported

F = TensorProto.FLOAT
PROVIDERS = [["NumpyExecutionProvider"], None]


def _model(nodes, inputs, outputs, initializers=(), opset=21):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 10
    return m.SerializeToString()


def _seq(name, elem=F, shape=None):
    return helper.make_tensor_sequence_value_info(name, elem, shape)


def _opt(name, elem=F, shape=None):
    return helper.make_value_info(name, helper.make_optional_type_proto(helper.make_tensor_type_proto(elem, shape)))


@pytest.fixture()
def seq_model():
    """x: seq(tensor(float)) -> (length, the sequence with t inserted at the front)."""
    return _model([helper.make_node("SequenceLength", ["x"], ["n"]),
                   helper.make_node("SequenceInsert", ["x", "t", "zero"], ["y"])],
                  [_seq("x"), helper.make_tensor_value_info("t", F, [2])],
                  [helper.make_tensor_value_info("n", TensorProto.INT64, []), _seq("y")],
                  [numpy_helper.from_array(np.array(0, np.int64), "zero")])


@pytest.mark.parametrize("providers", PROVIDERS)
def test_sequence_in_and_out(seq_model, providers):
    sess = nnwasm.InferenceSession(seq_model, providers=providers)
    assert [i.type for i in sess.get_inputs()] == ["seq(tensor(float))", "tensor(float)"]
    assert [o.type for o in sess.get_outputs()] == ["tensor(int64)", "seq(tensor(float))"]
    xs = [np.arange(3, dtype=np.float32), np.ones((2, 2), np.float32)]
    t = np.array([7, 8], np.float32)
    n, y = sess.run(None, {"x": xs, "t": t})
    assert n == 2 and isinstance(y, list) and len(y) == 3
    for got, want in zip(y, [t] + xs):
        assert np.array_equal(got, want) and got.flags.writeable
    n, y = sess.run(None, {"x": [], "t": t})   # an empty sequence
    assert n == 0 and len(y) == 1


def test_bad_sequence_feeds(seq_model):
    sess = nnwasm.InferenceSession(seq_model, providers=["NumpyExecutionProvider"])
    t = np.zeros(2, np.float32)
    with pytest.raises(InvalidArgument, match="input 'x'.*seq\\(tensor\\(float\\)\\).*list of arrays"):
        sess.run(None, {"x": np.zeros(3, np.float32), "t": t})
    with pytest.raises(InvalidArgument, match="input 'x' element 1 has type tensor\\(double\\)"):
        sess.run(None, {"x": [np.zeros(1, np.float32), np.zeros(1)], "t": t})
    with pytest.raises(InvalidArgument, match="input 't' \\(list\\) can't be made an array of tensor\\(float\\)"):
        sess.run(None, {"x": [], "t": [np.zeros(2, np.float32), np.zeros(3, np.float32)]})   # a sequence?
    assert sess.run(None, {"x": [], "t": [1, 2]})[1][0].dtype == np.float32   # a list: as onnxruntime
    with pytest.raises(InvalidArgument, match="input 'x' is None"):
        sess.run(None, {"x": None, "t": t})
    assert sess.run(None, {"x": [t], "t": t})[0] == 1   # the session still works


@pytest.mark.parametrize("providers", PROVIDERS)
def test_optional_in_and_out(providers):
    m = _model([helper.make_node("OptionalHasElement", ["x"], ["has"]), helper.make_node("Identity", ["x"], ["y"])],
               [_opt("x", F, [2])], [helper.make_tensor_value_info("has", TensorProto.BOOL, []), _opt("y", F, [2])],
               opset=18)
    sess = nnwasm.InferenceSession(m, providers=providers)
    assert sess.get_inputs()[0].type == "optional(tensor(float))"
    has, y = sess.run(None, {"x": None})
    assert has == False and y is None   # noqa: E712 - a numpy bool
    has, y = sess.run(None, {"x": np.array([1, 2], np.float32)})
    assert has == True and np.array_equal(y, [1, 2])   # noqa: E712
    with pytest.raises(InvalidArgument, match="input 'x' has type tensor\\(int32\\), expected tensor\\(float\\)"):
        sess.run(None, {"x": np.array([1, 2], np.int32)})


def test_optional_get_element_of_empty_is_invalid_argument():
    m = _model([helper.make_node("OptionalGetElement", ["x"], ["y"])], [_opt("x", F, [2])],
               [helper.make_tensor_value_info("y", F, [2])], opset=18)
    sess = nnwasm.InferenceSession(m, providers=["NumpyExecutionProvider"])
    with pytest.raises(InvalidArgument, match="empty"):
        sess.run(None, {"x": None})


@pytest.mark.parametrize("position, message", [(3, "out of range"), (-4, "out of range")])
def test_sequence_positions_are_checked(position, message):
    m = _model([helper.make_node("SequenceAt", ["x", "p"], ["y"])], [_seq("x"),
               helper.make_tensor_value_info("p", TensorProto.INT64, [])], [helper.make_tensor_value_info("y", F, None)])
    sess = nnwasm.InferenceSession(m, providers=["NumpyExecutionProvider"])
    xs = [np.full(1, k, np.float32) for k in range(3)]
    assert sess.run(None, {"x": xs, "p": np.array(-1, np.int64)})[0] == 2
    with pytest.raises(InvalidArgument, match=message):
        sess.run(None, {"x": xs, "p": np.array(position, np.int64)})


# --- element types from ml_dtypes -------------------------------------------------------------------

@pytest.mark.parametrize("providers", PROVIDERS)
def test_bfloat16_feed_and_output(providers):
    m = _model([helper.make_node("Cast", ["x"], ["f"], to=F), helper.make_node("Cast", ["f"], ["y"], to=TensorProto.BFLOAT16)],
               [helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [3])],
               [helper.make_tensor_value_info("f", F, [3]), helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [3])])
    sess = nnwasm.InferenceSession(m, providers=providers)
    assert sess.get_inputs()[0].type == "tensor(bfloat16)"
    x = np.array([1.5, -2.25, 3e38], dtype=ml_dtypes.bfloat16)
    f, y = sess.run(None, {"x": x})
    assert f.dtype == np.float32 and np.array_equal(f, x.astype(np.float32))
    assert y.dtype == ml_dtypes.bfloat16 and np.array_equal(y.view(np.uint16), x.view(np.uint16))
    with pytest.raises(InvalidArgument, match="input 'x' has type tensor\\(float\\), expected tensor\\(bfloat16\\)"):
        sess.run(None, {"x": x.astype(np.float32)})


@pytest.mark.parametrize("saturate, want", [(1, [448, -448, 448, 1.0]), (0, [np.nan, np.nan, np.nan, 1.0])])
def test_float8_cast_saturates(saturate, want):
    m = _model([helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT8E4M3FN, saturate=saturate)],
               [helper.make_tensor_value_info("x", F, [4])], [helper.make_tensor_value_info("y", TensorProto.FLOAT8E4M3FN, [4])])
    (y,) = nnwasm.InferenceSession(m).run(None, {"x": np.array([1e4, -np.inf, np.inf, 1.0], np.float32)})
    assert y.dtype == ml_dtypes.float8_e4m3fn
    np.testing.assert_array_equal(y.astype(np.float32), np.array(want, np.float32))


@pytest.mark.parametrize("code, np_type", [(TensorProto.INT4, ml_dtypes.int4), (TensorProto.UINT2, ml_dtypes.uint2)])
def test_packed_initializers_read_and_write(tmp_path, code, np_type):
    """An odd element count: ONNX pads the last byte."""
    w = np.array([1, 0, 1, 1, 0], dtype=np_type) if code == TensorProto.UINT2 else \
        np.array([-8, 7, 0, -1, 3], dtype=np_type)
    m = _model([helper.make_node("Identity", ["w"], ["y"])], [], [helper.make_tensor_value_info("y", code, [5])],
               [numpy_helper.from_array(w, "w")], opset=25)   # the first Identity of 2-bit types
    so = nnwasm.SessionOptions()
    so.optimized_model_filepath = str(tmp_path / "opt.onnx")
    (y,) = nnwasm.InferenceSession(m, so).run(None, {})
    assert y.dtype == np_type and np.array_equal(y.astype(np.int8), w.astype(np.int8))
    import onnx
    saved = onnx.load(str(tmp_path / "opt.onnx"))
    t = {i.name: i for i in saved.graph.initializer}["y" if "y" in {i.name for i in saved.graph.initializer} else "w"]
    assert np.array_equal(numpy_helper.to_array(t).astype(np.int8), w.astype(np.int8))


def test_without_ml_dtypes_the_type_is_named(monkeypatch):
    m = _model([helper.make_node("Cast", ["x"], ["y"], to=F)], [helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [2])],
               [helper.make_tensor_value_info("y", F, [2])])
    x = np.array([1, 2], dtype=ml_dtypes.bfloat16)
    sess = nnwasm.InferenceSession(m, providers=["NumpyExecutionProvider"])
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)   # import ml_dtypes now fails, as in a bare Pyodide
    with pytest.raises(Unsupported, match="bfloat16 needs the ml_dtypes package"):
        sess.run(None, {"x": x})


@pytest.mark.parametrize("providers", PROVIDERS)
def test_string_feeds_and_outputs(providers):
    m = _model([helper.make_node("Equal", ["x", "c"], ["eq"]), helper.make_node("Cast", ["f"], ["s"], to=TensorProto.STRING)],
               [helper.make_tensor_value_info("x", TensorProto.STRING, [3]), helper.make_tensor_value_info("f", F, [2])],
               [helper.make_tensor_value_info("eq", TensorProto.BOOL, [3]), helper.make_tensor_value_info("s", TensorProto.STRING, [2])],
               [helper.make_tensor("c", TensorProto.STRING, [3], [b"a", "\u00e9".encode(), b"z"])])
    sess = nnwasm.InferenceSession(m, providers=providers)
    for x in (np.array(["a", "\u00e9", "b"], dtype=object), np.array(["a", "\u00e9", "b"])):   # object or <U
        eq, s = sess.run(None, {"x": x, "f": np.array([1.5, -2], np.float32)})
        assert eq.tolist() == [True, True, False]
        assert s.dtype == object and s.tolist() == ["1.5", "-2.0"]
    with pytest.raises(InvalidArgument, match="input 'x'.*int"):
        sess.run(None, {"x": np.array([1, 2, 3], dtype=object), "f": np.zeros(2, np.float32)})
