"""onnxruntime's Python API on nnwasm: introspection, providers, options, and clear errors for
bad feeds, bad models and unsupported ops, after which the session still works."""
import numpy as np
import pytest

import nnwasm
from model_builders import graph_model, rand, single_node
from onnx import TensorProto, helper


@pytest.fixture()
def add_model():
    x = rand(2, 3)
    return single_node("Add", {"X": x}, ["Y"], {}, {"B": rand(2, 3, seed=1)})


def test_introspection(add_model):
    sess = nnwasm.InferenceSession(add_model)
    (i,), (o,) = sess.get_inputs(), sess.get_outputs()
    assert (i.name, i.type, i.shape) == ("X", "tensor(float)", [2, 3])
    assert (o.name, o.type, o.shape) == ("Y", "tensor(float)", [2, 3])
    assert sess.get_providers() == ["WasmExecutionProvider", "NumpyExecutionProvider"]
    assert nnwasm.get_available_providers() == ["WasmExecutionProvider", "NumpyExecutionProvider"]


@pytest.mark.parametrize("providers", [["WasmExecutionProvider"], ["NumpyExecutionProvider"]])
def test_outputs_are_writable_arrays(providers):
    x = rand(2, 3)
    model = graph_model([helper.make_node("Relu", ["X"], ["Y"]), helper.make_node("Identity", ["C"], ["Z"])],
                        {"X": x}, ["Y", "Z"], {"C": rand(4, seed=2)})
    sess = nnwasm.InferenceSession(model, providers=providers)
    for out in sess.run(None, {"X": x}):
        out += 1   # raises if read-only
    y, z = sess.run(None, {"X": x})
    assert np.array_equal(y, np.maximum(x, 0)) and np.array_equal(z, rand(4, seed=2))


def test_modelmeta():
    g = helper.make_graph([helper.make_node("Relu", ["X"], ["Y"])], "g",
                          [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="me", model_version=7,
                          doc_string="what it does")
    helper.set_model_props(m, {"author": "someone"})
    meta = nnwasm.InferenceSession(m.SerializeToString()).get_modelmeta()
    assert (meta.producer_name, meta.graph_name, meta.version, meta.description) == ("me", "g", 7, "what it does")
    assert meta.custom_metadata_map == {"author": "someone"}


def test_missing_model_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        nnwasm.InferenceSession(str(tmp_path / "nope.onnx"))


def test_model_from_path_and_bytes_agree(add_model, tmp_path):
    p = tmp_path / "m.onnx"
    p.write_bytes(add_model)
    x = rand(2, 3, seed=5)
    a = nnwasm.InferenceSession(str(p)).run(None, {"X": x})[0]
    b = nnwasm.InferenceSession(add_model).run(None, {"X": x})[0]
    assert np.array_equal(a, b)


def test_bad_feeds_raise_and_session_stays_usable(add_model):
    sess = nnwasm.InferenceSession(add_model)
    x = rand(2, 3)
    good = sess.run(None, {"X": x})[0]
    with pytest.raises(nnwasm.InvalidArgument, match="invalid input name.*'Z'"):
        sess.run(None, {"Z": x})
    with pytest.raises(nnwasm.InvalidArgument, match="missing"):
        sess.run(None, {})
    with pytest.raises(nnwasm.InvalidArgument, match=r"tensor\(double\), expected tensor\(float\)"):
        sess.run(None, {"X": x.astype(np.float64)})
    with pytest.raises(nnwasm.InvalidArgument, match="rank 3"):
        sess.run(None, {"X": x[None]})
    with pytest.raises(nnwasm.InvalidArgument, match=r"shape \[2, 4\].*dimension 1"):
        sess.run(None, {"X": rand(2, 4)})
    with pytest.raises(nnwasm.InvalidArgument, match="invalid output name"):
        sess.run(["nope"], {"X": x})
    assert np.array_equal(sess.run(["Y"], {"X": x})[0], good)
    assert isinstance(nnwasm.InvalidArgument("x"), ValueError)


@pytest.mark.parametrize("data", [b"", b"\x89PNG\r\n\x1a\n" + bytes(100), b"hello world", b"\x08" * 7])
def test_corrupt_model_bytes(data):
    with pytest.raises(nnwasm.InvalidModel):
        nnwasm.InferenceSession(data)


def test_truncated_model(add_model):
    for cut in (1, len(add_model) // 2, len(add_model) - 1):
        with pytest.raises(nnwasm.InvalidModel):
            nnwasm.InferenceSession(add_model[:cut])


def _atan_model():
    """Relu, then Atan (no WASM kernel: it falls back to numpy), then Relu."""
    x = rand(2, 3)
    nodes = [helper.make_node("Relu", ["X"], ["a"], name="relu0"), helper.make_node("Atan", ["a"], ["b"], name="atan1"),
             helper.make_node("Relu", ["b"], ["Y"], name="relu2")]
    return graph_model(nodes, {"X": x}, ["Y"]), x


def test_fallback_partitions_and_assignment():
    model, x = _atan_model()
    sess = nnwasm.InferenceSession(model)
    assert sess.get_provider_assignment() == [("relu0", "Relu", "WasmExecutionProvider"),
                                              ("atan1", "Atan", "NumpyExecutionProvider"),
                                              ("relu2", "Relu", "WasmExecutionProvider")]
    want = np.maximum(np.arctan(np.maximum(x, 0)), 0).astype(np.float32)
    np.testing.assert_allclose(sess.run(None, {"X": x})[0], want, atol=1e-6)


def test_disable_cpu_ep_fallback_names_the_nodes():
    model, _ = _atan_model()
    so = nnwasm.SessionOptions()
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    with pytest.raises(nnwasm.NotImplementedOp, match=r"atan1.*Atan"):
        nnwasm.InferenceSession(model, so)


def test_unknown_op_fails_at_creation():
    x = rand(2)
    model = graph_model([helper.make_node("NoSuchOp", ["X"], ["Y"], name="mystery")], {"X": x}, ["Y"],
                        out_dtype=TensorProto.FLOAT)
    with pytest.raises(nnwasm.NotImplementedOp, match="mystery.*NoSuchOp"):
        nnwasm.InferenceSession(model)


def test_unknown_provider():
    model, _ = _atan_model()
    with pytest.raises(ValueError, match="unknown provider 'FooExecutionProvider'"):
        nnwasm.InferenceSession(model, providers=["FooExecutionProvider"])


@pytest.mark.parametrize("providers, warns", [
    (["CPUExecutionProvider"], False), (["CUDAExecutionProvider", "CPUExecutionProvider"], True),
    (["CUDAExecutionProvider"], True), ([("CUDAExecutionProvider", {"device_id": 0}), "CPUExecutionProvider"], True)])
def test_onnxruntime_provider_lists_run(providers, warns):
    """Code written for onnxruntime names its providers: CPUExecutionProvider is nnwasm's default
    list, and the ones nnwasm lacks are skipped with a warning, as onnxruntime skips those its
    build lacks."""
    model, _ = _atan_model()
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sess = nnwasm.InferenceSession(model, providers=providers)
    assert sess.get_providers() == ["WasmExecutionProvider", "NumpyExecutionProvider"]
    assert any("CUDAExecutionProvider" in str(w.message) for w in caught) == warns


def test_symbolic_batch_is_prepared_per_shape():
    g = helper.make_graph([helper.make_node("Relu", ["X"], ["Y"])], "dyn",
                          [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 3])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", 3])])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    sess = nnwasm.InferenceSession(model.SerializeToString())
    assert sess.get_inputs()[0].shape == ["N", 3]
    for n in (1, 4, 1):
        x = rand(n, 3, seed=n)
        assert np.array_equal(sess.run(None, {"X": x})[0], np.maximum(x, 0))
    assert {p for _, _, p in sess.get_provider_assignment()} == {"WasmExecutionProvider"}
    assert len(sess._cache) == 2


def test_output_that_is_a_graph_input_passthrough_via_identity():
    x = rand(3)
    model = graph_model([helper.make_node("Identity", ["X"], ["Y"])], {"X": x}, ["Y"])
    assert np.array_equal(nnwasm.InferenceSession(model).run(None, {"X": x})[0], x)


def test_concurrent_runs_from_threads_are_correct():
    """onnxruntime allows run() from several threads; one kernels.wasm instance serves them all."""
    import threading
    x0 = rand(1, 3, 16, 16)
    inits = {"W": rand(8, 3, 3, 3, seed=1)}
    model = single_node("Conv", {"X": x0}, ["Y"], dict(pads=[1, 1, 1, 1]), inits)
    sessions = [nnwasm.InferenceSession(model), nnwasm.InferenceSession(model)]
    xs = [rand(1, 3, 16, 16, seed=k) for k in range(4)]
    want = [sessions[0].run(None, {"X": x})[0] for x in xs]
    wrong, errors = [], []

    def worker(k):
        try:
            for i in range(60):
                got = sessions[(k + i) % 2].run(None, {"X": xs[k]})[0]
                if not np.array_equal(got, want[k]):
                    wrong.append(k)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and not wrong


def test_sessions_release_wasm_memory():
    import gc
    from nnwasm.host import get_host
    model = single_node("Relu", {"X": rand(256, 256)}, ["Y"])
    nnwasm.InferenceSession(model)
    gc.collect()
    host = get_host()
    host.drain()
    base = host.call("nnw_malloc", 1 << 20)
    host.call("nnw_free", base)
    for _ in range(20):
        nnwasm.InferenceSession(model).run(None, {"X": rand(256, 256)})
        gc.collect()
    host.drain()
    again = host.call("nnw_malloc", 1 << 20)
    host.call("nnw_free", again)
    assert again == base, "memory of released sessions was not reused"


def test_feeds_of_every_memory_layout_and_a_dtype_onnx_lacks():
    x = rand(3, 2)
    sess = nnwasm.InferenceSession(single_node("Relu", {"X": x.T.copy()}, ["Y"]))
    want = np.maximum(x.T, 0)
    for feed in (x.T, x.T.astype(">f4"), np.asfortranarray(x.T)):   # strided, big-endian, Fortran order
        assert np.array_equal(sess.run(None, {"X": feed})[0], want)
    with pytest.raises(nnwasm.InvalidArgument, match="input 'X': numpy dtype complex64 has no ONNX element type"):
        sess.run(None, {"X": x.T.astype(np.complex64)})


def test_wasm_only_symbolic_model_defers_ops_that_fold():
    """Shape and Range have no WASM kernels but fold once the batch dim is known: a WASM-only
    session of a model with a symbolic dim is created, and runs with every node on WASM."""
    nodes = [helper.make_node("Shape", ["X"], ["s"]),
             helper.make_node("Gather", ["s", "one"], ["n"], axis=0),
             helper.make_node("Range", ["zero", "n", "step"], ["r"]),
             helper.make_node("Cast", ["r"], ["rf"], to=TensorProto.FLOAT),
             helper.make_node("Add", ["X", "rf"], ["Y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["B", 3])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["B", 3])],
                          [helper.make_tensor("one", TensorProto.INT64, [], [1]),
                           helper.make_tensor("zero", TensorProto.INT64, [], [0]),
                           helper.make_tensor("step", TensorProto.INT64, [], [1])])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    so = nnwasm.SessionOptions()
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    sess = nnwasm.InferenceSession(model.SerializeToString(), so, providers=["WasmExecutionProvider"])
    x = rand(2, 3)
    np.testing.assert_array_equal(sess.run(None, {"X": x})[0], x + np.arange(3, dtype=np.float32))
    assert {p for _, _, p in sess.get_provider_assignment()} == {"WasmExecutionProvider"}
