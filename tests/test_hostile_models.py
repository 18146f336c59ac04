"""Models that parse but lie, and models mangled byte by byte: each either runs or raises an
nnwasm error naming the problem; never another exception, a crash or a hang; and a working
session next to them keeps working."""
import numpy as np
import pytest
from onnx import helper

import nnwasm
from model_builders import graph_model, rand


def small_cnn():
    x = rand(1, 3, 16, 16)
    inits = {"W1": rand(8, 3, 3, 3, seed=1), "B1": rand(8, seed=2), "W2": rand(8, 1, 3, 3, seed=3),
             "W3": rand(10, 8, seed=4), "lo": np.float32(0), "hi": np.float32(6)}
    nodes = [helper.make_node("Conv", ["X", "W1", "B1"], ["a"], pads=[1, 1, 1, 1], strides=[2, 2]),
             helper.make_node("Clip", ["a", "lo", "hi"], ["b"]),
             helper.make_node("Conv", ["b", "W2"], ["c"], pads=[1, 1, 1, 1], group=8),
             helper.make_node("GlobalAveragePool", ["c"], ["f"]),
             helper.make_node("Flatten", ["f"], ["g"]),
             helper.make_node("Gemm", ["g", "W3"], ["Y"], transB=1)]
    return graph_model(nodes, {"X": x}, ["Y"], inits), x


def test_mutated_models_raise_only_nnwasm_errors():
    model, x = small_cnn()
    good = nnwasm.InferenceSession(model)
    want = good.run(None, {"X": x})[0]
    rng = np.random.default_rng(1234)
    outcomes = {"ran": 0, "refused": 0}
    for _ in range(400):
        raw = bytearray(model)
        for _ in range(int(rng.integers(1, 4))):
            raw[int(rng.integers(len(raw)))] = int(rng.integers(256))
        try:
            sess = nnwasm.InferenceSession(bytes(raw))
            feeds = {i.name: np.zeros([d if isinstance(d, int) and 0 <= d < 64 else 1 for d in i.shape or []],
                                      dtype=np.float32) for i in sess.get_inputs()}
            sess.run(None, feeds)
            outcomes["ran"] += 1
        except nnwasm.NnwasmError:
            outcomes["refused"] += 1
    print(outcomes)
    assert outcomes["refused"] > 0
    np.testing.assert_array_equal(good.run(None, {"X": x})[0], want)


def test_declared_shape_beyond_wasm_memory_falls_back_or_refuses():
    g = helper.make_graph([helper.make_node("Relu", ["X"], ["Y"], name="big")], "big",
                          [helper.make_tensor_value_info("X", 1, [1 << 16, 1 << 16])],
                          [helper.make_tensor_value_info("Y", 1, [1 << 16, 1 << 16])])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()
    so = nnwasm.SessionOptions()
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    with pytest.raises(nnwasm.NotImplementedOp, match="big.*tensor limit"):
        nnwasm.InferenceSession(model, so)
    sess = nnwasm.InferenceSession(model)   # 16 GiB tensor: numpy gets it, and says so if memory runs out
    assert sess.get_provider_assignment() == [("big", "Relu", "NumpyExecutionProvider")]


def test_weights_that_contradict_the_node():
    x = rand(1, 4, 8, 8)
    bad = [("Conv", {"W": rand(6, 3, 3, 3)}, {}),                 # 3 channels per group, input has 4
           ("Conv", {"W": rand(6, 2, 3, 3)}, {"group": 3}),       # group does not divide 4 channels
           ("Conv", {"W": rand(6, 4, 3, 3), "B": rand(5)}, {}),   # bias of 5 for 6 outputs
           ("Gemm", {"W": rand(5, 7)}, {})]                       # K mismatch
    for op, inits, attrs in bad:
        feeds_x = x if op == "Conv" else rand(2, 6)
        model = graph_model([helper.make_node(op, ["X", *inits], ["Y"], name="liar", **attrs)],
                            {"X": feeds_x}, ["Y"], inits, out_dtype=1)
        with pytest.raises(nnwasm.NnwasmError, match="liar"):
            sess = nnwasm.InferenceSession(model)
            sess.run(None, {"X": feeds_x})


def test_feed_of_wrong_size_through_run_raw_is_refused():
    model, x = small_cnn()
    sess = nnwasm.InferenceSession(model)
    from nnwasm import dtypes
    from nnwasm.tensor import TensorData
    with pytest.raises(nnwasm.InvalidArgument, match="bytes"):
        sess._run_raw(None, {"X": TensorData(dtypes.FLOAT32, (1, 3, 16, 16), b"\0" * 12)})
    assert sess.run(None, {"X": x})[0].shape == (1, 10)
