"""nnwasm.onnx_io: the pure-Python ONNX reader, checked against the onnx package's own parse."""
import contextlib
import glob
import os
import random
import signal
import struct
import time
import warnings
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from nnwasm import dtypes, ir
from nnwasm.errors import InvalidArgument, InvalidModel, Unsupported
from nnwasm.onnx_io import load_model, parse_tensor, tensor_data
from nnwasm.onnx_io.messages import parse_tensor_proto
from onnx_reader_cases import pb
from onnx_reader_cases.compare import assert_graph_equal, assert_tensor_equal, unsupported_reason

F = TensorProto.FLOAT
BACKEND_DATA = Path(onnx.__file__).parent / "backend" / "test" / "data"


@contextlib.contextmanager
def deadline(seconds):
    """Turn a hang into a test failure (SIGALRM; the suite runs on Linux)."""
    def expired(*_):
        raise TimeoutError(f"still running after {seconds} s: the reader hangs")
    old = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def model_bytes(nodes, inputs, outputs, inits=(), opsets=(("", 17),), ir_version=8, **graph_kw):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits), **graph_kw)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets])
    m.ir_version = ir_version
    return m.SerializeToString()


def vi(name, elem=F, shape=(2,)):
    return helper.make_tensor_value_info(name, elem, shape)


def rich_model(extras=True):
    """A model using most of what the reader handles: initializers in raw and typed form, a
    sparse initializer, an initializer that is also an input, If/Loop subgraphs reading outer-scope
    values, every attribute type, symbolic and unknown dims, value_info, a custom domain."""
    w = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "w")
    b = helper.make_tensor("b", F, [3], [0.5, -1.5, 2.5])                       # float_data
    k = helper.make_tensor("k", TensorProto.INT64, [2], [-1, 2**40])           # int64_data
    h = helper.make_tensor("h", TensorProto.FLOAT16, [2], np.array([1.5, -2], np.float16))  # int32_data bits
    s = helper.make_tensor("s", TensorProto.STRING, [2], [b"ab", "\u00e9".encode()])
    sp = helper.make_sparse_tensor(helper.make_tensor("sp", F, [2], [7.0, 8.0]),
                                   helper.make_tensor("sp_i", TensorProto.INT64, [2], [1, 5]), [2, 3])
    then_g = helper.make_graph([helper.make_node("Add", ["y", "b"], ["t"])], "then", [], [vi("t", shape=[2, 3])])
    else_g = helper.make_graph([helper.make_node("Identity", ["y"], ["e"])], "else", [], [vi("e", shape=[2, 3])])
    body = helper.make_graph(
        [helper.make_node("Add", ["v_in", "b"], ["v_out"], name="body_add"),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body", [vi("i", TensorProto.INT64, []), vi("cond_in", TensorProto.BOOL, []), vi("v_in", shape=[3])],
        [vi("cond_out", TensorProto.BOOL, []), vi("v_out", shape=[3])])
    attrs = dict(f=0.1, i=-7, s=b"\xff\xfe", s2="text", t=numpy_helper.from_array(np.ones(2, np.float64)),
                 fs=[1.0, float("nan"), -0.0], ins=[-1, 0, 2**62], strs=["a", "b"],
                 ts=[numpy_helper.from_array(np.arange(3, dtype=np.int8))],
                 sparse=helper.make_sparse_tensor(helper.make_tensor("v", TensorProto.INT32, [1], [9]),
                                                  helper.make_tensor("i", TensorProto.INT64, [1, 2], [1, 0]), [2, 2]),
                 tp=helper.make_optional_type_proto(helper.make_tensor_type_proto(F, [2])))
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["y"], name="mm"),
        helper.make_node("If", ["c"], ["z"], then_branch=then_g, else_branch=else_g),
        helper.make_node("ReduceSum", ["z"], ["r"], keepdims=0, name="sum", domain="ai.onnx"),
        helper.make_node("Loop", ["", "c", "b"], ["lv"], body=body),
        helper.make_node("Custom", ["r", "k", "h", "s", "sp"], ["out2"], domain="com.example", **attrs),
    ]
    g = helper.make_graph(
        nodes, "rich", [vi("x", shape=["batch", 2]), vi("c", TensorProto.BOOL, []), vi("w", shape=[2, 3])],
        [vi("r", shape=[None]), vi("lv", shape=[3]), vi("out2", TensorProto.FLOAT, None)],
        [w, b, k, h, s], value_info=[vi("y", shape=["batch", 3]), vi("z", shape=[-1, 3])], sparse_initializer=[sp])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("ai.onnx", 17), helper.make_opsetid("com.example", 2)],
                          producer_name="nnwasm-tests", producer_version="1.0", doc_string="doc", domain="d")
    m.ir_version, m.model_version = 9, 3
    if not extras:   # the ModelProto fields numbered after opset_import
        return m
    m.functions.append(helper.make_function("com.example", "Twice", ["a"], ["b"], [helper.make_node("Add", ["a", "a"], ["b"])],
                                            [helper.make_opsetid("", 17)]))
    m.training_info.add().algorithm.name = "unknown to nnwasm: skipped"
    helper.set_model_props(m, {"author": "me", "license": "MIT"})
    return m


# ---- model-level parse against onnx ----

def test_rich_model_matches_onnx():
    m = rich_model()
    g = load_model(m.SerializeToString())
    assert_graph_equal(g, m.graph)
    assert g.opsets == {"": 17, "com.example": 2}
    assert [n.name for n in g.nodes] == ["mm", "", "sum", "", ""]    # unnamed nodes stay unnamed
    assert [n.opset for n in g.nodes] == [17, 17, 17, 17, 2]
    assert [v.name for v in g.inputs] == ["x", "c"]                   # "w" is an overridable initializer
    assert g.values["x"].shape == ("batch", 2) and g.values["z"].shape == (None, 3)
    assert g.values["out2"].shape is None
    assert g.values["r"].shape == (None,)
    assert g.initializers["sp"].tolist() == [0, 7, 0, 0, 0, 8]
    attrs = g.nodes[4].attrs
    assert attrs["s"] == b"\xff\xfe" and attrs["s2"] == "text" and attrs["i"] == -7
    assert attrs["sparse"].tolist() == [0, 0, 9, 0]
    assert attrs["tp"].value == "optional_type"
    info = g.model_info
    assert (info.ir_version, info.producer_name, info.producer_version, info.domain, info.model_version,
            info.doc_string, info.graph_name) == (9, "nnwasm-tests", "1.0", "d", 3, "doc", "rich")
    assert info.metadata_props == {"author": "me", "license": "MIT"}
    assert info.num_functions == 1
    then_g = g.nodes[1].attrs["then_branch"]
    assert isinstance(then_g, ir.Graph) and then_g.nodes[0].inputs == ["y", "b"]


def test_input_forms(tmp_path):
    raw = rich_model().SerializeToString()
    p = tmp_path / "m.onnx"
    p.write_bytes(raw)
    buf = bytearray(raw)
    graphs = [load_model(str(p)), load_model(p), load_model(raw), load_model(buf), load_model(memoryview(raw))]
    buf[:] = bytes(len(buf))   # the caller reusing its buffer must not change the loaded weights
    for g in graphs:
        assert g.initializers["w"].tolist() == [0, 1, 2, 3, 4, 5]
    with pytest.raises(InvalidArgument):
        load_model(12)


@pytest.mark.parametrize("code", sorted(dtypes.BY_ONNX))
@pytest.mark.parametrize("form", ["raw", "typed"])
def test_tensor_storage_forms(code, form):
    dt = dtypes.BY_ONNX[code]
    samples = {"float32": [1.5, -0.0, float("inf"), float("nan"), 3e38, 1e-45],
               "float64": [1.5, -2.25, float("-inf"), 1e308], "float16": [1.5, -2.0, 65504, float("inf")],
               "bool": [True, False, True], "object": [b"", b"x\x00y", "\u00e9".encode()]}
    if dt.ml_dtypes:   # bfloat16, float8, float4, int4, int2 (odd counts: packed data has a padding nibble)
        import ml_dtypes
        np_dt = getattr(ml_dtypes, dt.name)
        if "int" in dt.name:
            info = ml_dtypes.iinfo(np_dt)
            arr = np.array([info.min, info.max, 0, 1, info.max // 3], dtype=np_dt)
        else:
            info = ml_dtypes.finfo(np_dt)
            arr = np.array([1.0, float(info.max), float(info.tiny), 0.5, 2.0], dtype=np.float32).astype(np_dt)
    elif dt.name in samples:
        arr = np.array(samples[dt.name], dtype=dt.name)
    else:
        info = np.iinfo(dt.name)
        arr = np.array([info.min, info.max, 0, 1, info.max // 3], dtype=dt.name)
    arr = arr.reshape(1, -1)
    if form == "raw" and dt.name != "object":
        t = numpy_helper.from_array(arr, "t")
        assert t.HasField("raw_data")
    else:
        t = helper.make_tensor("t", code, arr.shape, arr.flatten().tolist() if dt.name != "float16" else arr.flatten())
        assert not t.HasField("raw_data")
    assert_tensor_equal(parse_tensor(t.SerializeToString()), t, dt.name)
    # opset 25: the first Identity that takes every element type (onnxruntime refuses the model before)
    m = model_bytes([helper.make_node("Identity", ["t"], ["y"])], [], [vi("y", code, [1, arr.size])], [t],
                    opsets=(("", 25),))
    assert_tensor_equal(load_model(m).initializers["t"], t, dt.name)


def test_empty_and_scalar_tensors():
    for arr in [np.zeros((0, 3), np.float32), np.array(4.5, np.float32), np.zeros((2, 0), np.int64)]:
        t = numpy_helper.from_array(arr, "t")
        assert_tensor_equal(parse_tensor(t.SerializeToString()), t)
    t = helper.make_tensor("e", TensorProto.INT32, [0], [])   # no data field at all
    assert parse_tensor(t.SerializeToString()).shape == (0,)


# ---- wire format details, with hand-made bytes ----

def test_unpacked_repeated_fields_and_unknown_fields():
    vals = [1.5, -2.0, 3.25]
    body = (b"".join(pb.vint(1, d) for d in [1, 3]) + pb.vint(2, F)           # dims unpacked
            + b"".join(pb.f32(4, v) for v in vals)                              # float_data unpacked
            + pb.vint(99, 5) + pb.f64(98, 1.0) + pb.ld(97, b"junk") + pb.f32(96, 2.0)  # unknown fields
            + pb.ld(8, "t"))
    ref = TensorProto.FromString(body)
    assert_tensor_equal(parse_tensor(body), ref)
    assert parse_tensor(body).tolist() == vals

    i64 = pb.packed_varints(1, [3]) + pb.vint(2, TensorProto.INT64) + pb.vint(7, -5) + pb.packed_varints(7, [2**63 - 1, -(2**63)])
    assert parse_tensor(i64).tolist() == [-5, 2**63 - 1, -(2**63)]
    assert_tensor_equal(parse_tensor(i64), TensorProto.FromString(i64))
    i32 = pb.vint(1, 2) + pb.vint(2, TensorProto.INT8) + pb.vint(5, -128) + pb.vint(5, 127)   # 10-byte negative int32
    assert parse_tensor(i32).tolist() == [-128, 127]
    dbl = pb.vint(1, 2) + pb.vint(2, TensorProto.DOUBLE) + pb.f64(10, 0.5) + pb.ld(10, struct.pack("<d", -1.0))
    assert parse_tensor(dbl).tolist() == [0.5, -1.0]
    u64 = pb.vint(1, 2) + pb.vint(2, TensorProto.UINT64) + pb.vint(11, 2**64 - 1) + pb.packed_varints(11, [7])
    assert parse_tensor(u64).tolist() == [2**64 - 1, 7]


def test_singular_message_fields_merge_like_protobuf():
    a = model_bytes([helper.make_node("Relu", ["x"], ["y"])], [vi("x")], [vi("y")])
    m = onnx.ModelProto.FromString(a)
    g1 = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [vi("x")], [])
    g2 = helper.make_graph([helper.make_node("Neg", ["y"], ["z"])], "", [], [vi("z")])
    raw = pb.vint(1, 8) + pb.ld(7, g1.SerializeToString()) + pb.ld(8, m.opset_import[0].SerializeToString()) \
        + pb.ld(7, g2.SerializeToString())
    ref = onnx.ModelProto.FromString(raw)
    assert len(ref.graph.node) == 2
    assert_graph_equal(load_model(raw), ref.graph)


@pytest.mark.parametrize("raw, words", [
    (pb.vint(1, 2) + b"\x10" + b"\xff" * 10 + b"\x01", ["TensorProto.data_type", "field 2", "byte 3", "10 bytes"]),
    (pb.vint(1, 2) + pb.tag(9, pb.LEN) + pb.varint(100) + b"abc", ["TensorProto.raw_data", "byte 2", "past the end"]),
    (pb.ld(1, b"\x01\x02") + pb.ld(2, b"x"), ["TensorProto.data_type", "field 2", "byte 4", "wire type 2"]),
    (pb.vint(8, 1), ["TensorProto.name", "byte 0", "wire type 0"]),
    (pb.vint(1, 2) + pb.tag(50, pb.SGROUP) + pb.tag(50, pb.EGROUP), ["group", "field 50", "byte 2"]),
    (pb.tag(51, pb.EGROUP), ["group"]),
    (pb.tag(52, 6) + b"\x00", ["invalid wire type 6"]),
    (b"\x00\x01", ["field number 0"]),
    (pb.ld(4, b"\x00" * 6), ["TensorProto.float_data", "multiple of 4"]),
    (pb.ld(8, b"\xc3\x28"), ["TensorProto.name", "UTF-8"]),
    (pb.tag(4, pb.I32) + b"\x00\x00", ["TensorProto.float_data", "past the end"]),
    (pb.vint(1, 2) + b"\x08", ["TensorProto.dims", "byte 3", "past the end"]),
])
def test_wire_errors_name_message_field_and_offset(raw, words):
    with pytest.raises(InvalidModel) as e:
        parse_tensor_proto(raw)
    for w in words:
        assert w in str(e.value)


def test_deep_message_nesting_is_refused_without_recursion_error():
    graph = b""
    for _ in range(1000):   # GraphProto.node > NodeProto.attribute > AttributeProto.g > GraphProto ...
        graph = pb.ld(1, pb.ld(4, "If") + pb.ld(5, pb.ld(1, "g") + pb.vint(20, 5) + pb.ld(6, graph)))
    raw = pb.vint(1, 8) + pb.ld(7, graph) + pb.ld(8, pb.vint(2, 17))
    with pytest.raises(InvalidModel, match="nested deeper"):
        load_model(raw)


def nested_if_model(depth):
    """If nodes nested depth levels deep, the innermost reading the main graph's input "x". Written
    with the encoder: onnx's helpers re-parse subgraphs and stop at protobuf's depth limit (100)."""
    inner = helper.make_graph([helper.make_node("Identity", ["x"], ["y0"])], "g0", [], [vi("y0")]).SerializeToString()
    for level in range(1, depth + 1):
        other = helper.make_graph([helper.make_node("Identity", ["x"], [f"o{level}"])], f"o{level}", [],
                                  [vi(f"o{level}")]).SerializeToString()
        node = (pb.ld(1, "c") + pb.ld(2, f"y{level}") + pb.ld(4, "If")
                + pb.ld(5, pb.ld(1, "then_branch") + pb.vint(20, 5) + pb.ld(6, inner))
                + pb.ld(5, pb.ld(1, "else_branch") + pb.vint(20, 5) + pb.ld(6, other)))
        inner = pb.ld(1, node) + pb.ld(2, f"g{level}") + pb.ld(12, vi(f"y{level}").SerializeToString())
    main = inner + b"".join(pb.ld(11, v.SerializeToString()) for v in [vi("c", TensorProto.BOOL, []), vi("x")])
    return pb.vint(1, 8) + pb.ld(7, main) + pb.ld(8, pb.vint(2, 17))


def test_subgraph_depth_is_bounded():
    g = load_model(nested_if_model(64))
    for _ in range(64):
        g = g.nodes[0].attrs["then_branch"]
    assert g.nodes[0].inputs == ["x"]   # outer-scope reference 64 levels up
    with pytest.raises(InvalidModel, match="deeper than 64"):
        load_model(nested_if_model(65))


# ---- external data ----

def _external_model(tmp_path, name="m.onnx"):
    m = rich_model()
    for t in m.graph.initializer:   # onnx moves only raw_data tensors out of the file
        if t.data_type != TensorProto.STRING:
            t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t), t.name))
    onnx.save_model(m, str(tmp_path / name), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="weights.bin", size_threshold=0)
    return m


def test_external_data_matches_onnx(tmp_path):
    _external_model(tmp_path)
    proto = onnx.ModelProto.FromString((tmp_path / "m.onnx").read_bytes())
    assert sum(t.data_location == TensorProto.EXTERNAL for t in proto.graph.initializer) >= 4
    assert_graph_equal(load_model(tmp_path / "m.onnx"), onnx.load_model(str(tmp_path / "m.onnx")).graph)
    with pytest.raises(InvalidModel, match="external file 'weights.bin'.*given as bytes"):
        load_model((tmp_path / "m.onnx").read_bytes())


def _model_with_location(folder, location, extra=()):
    t = helper.make_tensor("w", F, [2], [0.0, 0.0])
    t.ClearField("float_data")
    t.data_location = TensorProto.EXTERNAL
    for k, v in [("location", location), *extra]:
        e = t.external_data.add()
        e.key, e.value = k, v
    raw = model_bytes([helper.make_node("Neg", ["w"], ["y"])], [], [vi("y")], [t])
    (folder / "m.onnx").write_bytes(raw)
    return folder / "m.onnx"


def test_external_data_paths_are_confined(tmp_path):
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    outside = tmp_path / "secret.bin"
    outside.write_bytes(struct.pack("<2f", 1, 2))
    (model_dir / "ok.bin").write_bytes(struct.pack("<3f", 9, 1, 2))
    (model_dir / "sub").mkdir()
    os.symlink(outside, model_dir / "link_out.bin")
    os.symlink(model_dir / "ok.bin", model_dir / "sub" / "link_in.bin")

    good = load_model(_model_with_location(model_dir, "sub/link_in.bin", [("offset", "4"), ("length", "8")]))
    assert good.initializers["w"].tolist() == [1.0, 2.0]
    for location, msg in [("../secret.bin", "relative path"), (str(outside), "relative path"),
                          ("sub/../../secret.bin", "relative path"), ("link_out.bin", "outside"),
                          ("missing.bin", "does not exist"), ("", "without a 'location'"),
                          ("ok\0.bin", "relative path")]:
        with pytest.raises(InvalidModel, match=msg):
            load_model(_model_with_location(model_dir, location))
    for extra, msg in [([("offset", "8"), ("length", "8")], "does not fit"), ([("offset", "-4")], "does not fit"),
                       ([("length", "x")], "non-integer"),
                       ([("offset", "0")], "holds 12 bytes")]:
        with pytest.raises(InvalidModel, match=msg):
            load_model(_model_with_location(model_dir, "ok.bin", extra))


# ---- model validation ----

def _bad(raw, *words, error=InvalidModel):
    with pytest.raises(error) as e:
        load_model(raw)
    for w in words:
        assert w in str(e.value), str(e.value)


def test_not_a_model():
    _bad(b"", "empty")
    _bad(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(40), "PNG")
    _bad(b"PK\x03\x04" + bytes(30), "zip")
    _bad(b"hello world, this is not a model\n", "text file")
    _bad(numpy_helper.from_array(np.ones(3, np.float32)).SerializeToString(), "not")
    _bad(pb.vint(1, 8) + pb.ld(8, pb.vint(2, 17)), "without graph")


def test_model_level_checks():
    relu = [helper.make_node("Relu", ["x"], ["y"])]
    _bad(model_bytes(relu, [vi("x")], [vi("y")], ir_version=0), "ir_version 0")
    _bad(model_bytes(relu, [vi("x")], [vi("y")], opsets=()), "no opset_import")
    _bad(model_bytes(relu, [vi("x")], [vi("y")], opsets=(("ai.onnx.ml", 3),)), "Relu", "ai.onnx")
    ml_only = model_bytes([helper.make_node("Binarizer", ["x"], ["y"], domain="ai.onnx.ml")], [vi("x")], [vi("y")],
                          opsets=(("ai.onnx.ml", 1),))
    assert load_model(ml_only).nodes[0].opset == 1
    _bad(model_bytes(relu, [vi("x", TensorProto.FLOAT6E2M3)], [vi("y")]), "input 'x'", "element type 27", error=Unsupported)
    seq_seq = helper.make_value_info("y", helper.make_sequence_type_proto(
        helper.make_sequence_type_proto(helper.make_tensor_type_proto(F, None))))
    _bad(model_bytes([helper.make_node("SequenceConstruct", ["x"], ["y"])], [vi("x")], [seq_seq]), "'y'", "sequence of",
         error=Unsupported)
    seq_out = helper.make_tensor_sequence_value_info("y", F, ["n"])
    g = load_model(model_bytes([helper.make_node("SequenceConstruct", ["x"], ["y"])], [vi("x")], [seq_out]))
    assert (g.outputs[0].kind, g.outputs[0].dtype.name, g.outputs[0].shape) == ("sequence", "float32", ("n",))


def test_graph_structure_checks():
    x, y = [vi("x")], [vi("z")]
    n1, n2 = helper.make_node("Relu", ["x"], ["y"], name="first"), helper.make_node("Neg", ["y"], ["z"], name="second")
    _bad(model_bytes([n2, n1], x, y), "Neg node 'second'", "'y'", "topologically")
    _bad(model_bytes([n1, helper.make_node("Neg", ["x"], ["y"])], x, [vi("y")]), "produces 'y'")
    init = numpy_helper.from_array(np.ones(2, np.float32), "x")
    _bad(model_bytes([n1], [], [vi("y")], [init, init]), "two initializers")
    _bad(model_bytes([n1], [vi("x"), vi("x")], [vi("y")]), "two inputs")
    _bad(model_bytes([helper.make_node("Relu", ["x"], ["x"])], x, [vi("x")]), "produces 'x'")
    _bad(model_bytes([n1], x, [vi("nowhere")]), "output 'nowhere'")
    later = helper.make_graph([helper.make_node("Identity", ["late"], ["t"])], "then", [], [vi("t")])
    uses_later = [helper.make_node("If", ["c"], ["u"], then_branch=later, else_branch=later),
                  helper.make_node("Relu", ["x"], ["late"])]
    _bad(model_bytes(uses_later, [vi("c", TensorProto.BOOL, []), vi("x")], [vi("u")]), "subgraph 'then'", "'late'")
    twice = helper.make_node("Relu", ["x"], ["y"], alpha=1.0)
    twice.attribute.append(helper.make_attribute("alpha", 2.0))
    _bad(model_bytes([twice], x, [vi("y")]), "repeated attribute 'alpha'")
    ref = helper.make_node("Relu", ["x"], ["y"])
    ref.attribute.append(helper.make_attribute_ref("alpha", onnx.AttributeProto.FLOAT))
    _bad(model_bytes([ref], x, [vi("y")]), "only valid inside functions")


def test_tensor_checks():
    def init_model(t):
        return model_bytes([helper.make_node("Identity", [t.name], ["y"])], [], [vi("y")], [t])

    def tensor(name, dims, data):   # bypasses make_tensor's own size check
        return TensorProto(name=name, dims=dims, data_type=F, float_data=data)
    _bad(init_model(tensor("w", [2, 2], [1.0, 2.0, 3.0])), "tensor 'w'", "[2, 2]", "12 bytes")
    _bad(init_model(tensor("neg", [-1], [1.0])), "tensor 'neg'", "negative")
    _bad(init_model(tensor("huge", [2**31, 2**31, 0], [])), "tensor 'huge'", "absurd")
    t = helper.make_tensor("seg", F, [1], [1.0])
    t.segment.begin = 0
    _bad(init_model(t), "'seg'", "segment", error=Unsupported)
    t = helper.make_tensor("f6", TensorProto.FLOAT6E2M3, [1], [1.0])
    _bad(init_model(t), "'f6'", "element type 27", error=Unsupported)
    t = helper.make_tensor("str", TensorProto.STRING, [1], [b"a"])
    t.raw_data = b"a"
    _bad(init_model(t), "'str'", "raw_data")
    t = TensorProto.FromString(helper.make_tensor("loc", F, [1], [1.0]).SerializeToString() + pb.vint(14, 2))
    _bad(init_model(t), "'loc'", "data_location")
    t = TensorProto(name="u8", dims=[1], data_type=TensorProto.UINT8, int32_data=[300])
    _bad(init_model(t), "'u8'", "out of range")
    _bad(init_model(tensor("nodata", [3], [])), "'nodata'", "0 bytes")
    sp = helper.make_sparse_tensor(helper.make_tensor("sp", F, [1], [1.0]),
                                   helper.make_tensor("i", TensorProto.INT64, [1], [6]), [2, 3])
    raw = model_bytes([helper.make_node("Identity", ["sp"], ["y"])], [], [vi("y")], sparse_initializer=[sp])
    _bad(raw, "sparse tensor 'sp'", "index 6")


# ---- corrupt input never escapes as anything but InvalidModel (or Unsupported, when a mutation
# yields a well-formed model of an element type nnwasm lacks) ----

def _load_or_invalid(raw):
    try:
        load_model(raw)
        return True
    except (InvalidModel, Unsupported):
        return False


@pytest.mark.parametrize("which", ["rich", "pytorch conv"])
def test_truncated_models_are_refused(which):
    if which == "rich":
        raw = rich_model(extras=False).SerializeToString()
    else:
        raw = (BACKEND_DATA / "pytorch-operator" / "test_operator_conv" / "model.onnx").read_bytes()
    assert onnx.ModelProto.FromString(raw).ListFields()[-1][0].name == "opset_import"  # so no prefix is whole
    with deadline(60):
        loaded = [n for n in range(len(raw)) if _load_or_invalid(raw[:n])]
    assert loaded == [] and _load_or_invalid(raw)


def test_mutated_and_random_bytes_raise_only_invalid_model():
    rng = random.Random(20261122)
    raw = rich_model().SerializeToString()
    real = (BACKEND_DATA / "pytorch-operator" / "test_operator_conv" / "model.onnx").read_bytes()
    outcomes = {True: 0, False: 0}
    with deadline(120):
        for base, count in [(raw, 3000), (real, 500)]:
            for _ in range(count):
                buf = bytearray(base)
                for _ in range(rng.choice([1, 1, 1, 2, 5])):
                    pos = rng.randrange(len(buf))
                    buf[pos] = rng.randrange(256) if rng.random() < 0.5 else buf[pos] ^ (1 << rng.randrange(8))
                outcomes[_load_or_invalid(bytes(buf))] += 1
        for _ in range(500):
            outcomes[_load_or_invalid(rng.randbytes(rng.randrange(1, 3000)))] += 1
        for n in range(0, len(real), 7):
            outcomes[_load_or_invalid(real[:n] + rng.randbytes(rng.randrange(1, 50)))] += 1
    print("corrupt inputs: loaded", outcomes[True], "refused", outcomes[False])
    assert outcomes[False] > outcomes[True]


# ---- the onnx backend test models ----

def _tensor_pbs(model, data_set):
    """Serialized TensorProtos of a backend case's tensor inputs and outputs, as cmd_tools writes them."""
    out = []
    for vis, values in [(model.graph.input, data_set[0]), (model.graph.output, data_set[1])]:
        for v_info, value in zip(vis, values):
            if v_info.type.WhichOneof("value") != "tensor_type":
                continue
            t = value if isinstance(value, TensorProto) else numpy_helper.from_array(value, v_info.name)
            out.append(t.SerializeToString())
    return out


@pytest.fixture(scope="module")
def node_cases():
    """(name, model bytes, [tensor .pb bytes]) of the ONNX node tests. This onnx wheel ships without
    backend/test/data/node, so they are generated from onnx's case definitions (as its
    cmd_tools generate-data does) when the folder is missing."""
    folder = BACKEND_DATA / "node"
    if folder.is_dir():
        return [(d.name, (d / "model.onnx").read_bytes(),
                 [p.read_bytes() for p in sorted(d.glob("test_data_set_0/*.pb"))]) for d in sorted(folder.iterdir())]
    import onnx.backend.test.case.node as node_test
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        cases = node_test.collect_testcases()
    return [(c.name, c.model.SerializeToString(), _tensor_pbs(c.model, c.data_sets[0])) for c in cases]


def test_backend_node_models_match_onnx(node_cases):
    assert len(node_cases) > 1000
    t0 = time.perf_counter()
    refused, wrong = 0, []
    for name, raw, _ in node_cases:
        m = onnx.ModelProto.FromString(raw)
        reason = unsupported_reason(m)
        try:
            g = load_model(raw)
            if reason:
                wrong.append(f"{name}: loaded despite {reason}")
            else:
                assert_graph_equal(g, m.graph)
        except Unsupported as e:
            refused += 1
            if not reason:
                wrong.append(f"{name}: {e}")
        except AssertionError as e:
            wrong.append(f"{name}: differs from onnx: {e!r}")
    print(f"{len(node_cases)} node models, {refused} refused for unsupported types, {time.perf_counter() - t0:.1f} s")
    assert wrong == []


def test_backend_node_tensors_match_onnx(node_cases):
    by_type = {}
    for _, _, pbs in node_cases:
        for raw in pbs:
            by_type.setdefault(TensorProto.FromString(raw).data_type, []).append(raw)
    assert {c for c in dtypes.BY_ONNX if c != TensorProto.UINT16} <= set(by_type)   # what the suite covers
    for code, raws in by_type.items():
        for raw in raws[:: max(1, len(raws) // 40)]:
            ref = TensorProto.FromString(raw)
            if dtypes.from_onnx(code) is None:
                with pytest.raises(Unsupported, match=f"element type {code}"):
                    parse_tensor(raw)
            else:
                assert_tensor_equal(parse_tensor(raw), ref, ref.name)


def test_backend_files_on_disk_match_onnx():
    """The converted models the wheel does ship, with their test data files."""
    paths = sorted(glob.glob(str(BACKEND_DATA / "*" / "*" / "model.onnx")) + glob.glob(str(BACKEND_DATA / "light" / "*.onnx")))
    assert len(paths) > 100
    for p in paths:
        assert_graph_equal(load_model(p), onnx.load_model(p, load_external_data=False).graph)
        for pbf in glob.glob(os.path.join(os.path.dirname(p), "test_data_set_0", "*.pb")):
            raw = Path(pbf).read_bytes()
            assert_tensor_equal(parse_tensor(raw), TensorProto.FromString(raw), pbf)


# ---- speed ----

def test_big_model_loads_fast(tmp_path):
    n = 5_500_000   # 22 MB of float32
    w = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    for form in ["raw_data", "float_data"]:
        t = numpy_helper.from_array(w, "w") if form == "raw_data" else helper.make_tensor("w", F, [n], w)
        raw = model_bytes([helper.make_node("Neg", ["w"], ["y"])], [], [vi("y", shape=[n])], [t])
        path = tmp_path / f"{form}.onnx"
        path.write_bytes(raw)
        t0 = time.perf_counter()
        g = load_model(path)
        dt = time.perf_counter() - t0
        print(f"{len(raw) / 1e6:.1f} MB model ({form}) loaded in {dt * 1000:.1f} ms")
        data = g.initializers["w"].data
        assert isinstance(data, memoryview) and data == w.tobytes()   # a view of the file bytes, not a copy

    nodes = [helper.make_node("LeakyRelu", [f"v{i}"], [f"v{i + 1}"], name=f"n{i}", alpha=0.5) for i in range(20000)]
    raw = model_bytes(nodes, [vi("v0")], [vi("v20000")])
    t0 = time.perf_counter()
    g = load_model(raw)
    print(f"20000-node model ({len(raw) / 1e6:.1f} MB) loaded in {(time.perf_counter() - t0) * 1000:.1f} ms")
    assert len(g.nodes) == 20000


def test_tensor_data_direct():
    t = parse_tensor_proto(numpy_helper.from_array(np.arange(4, dtype=np.int16).reshape(2, 2), "a").SerializeToString())
    d = tensor_data(t, None)
    assert (d.dtype.name, d.shape, d.tolist()) == ("int16", (2, 2), [0, 1, 2, 3])
