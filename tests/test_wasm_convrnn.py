"""ConvTranspose and the recurrent layers (RNN, GRU, LSTM) on kernels.wasm against the numpy provider
and onnxruntime (test_wasm_ops.check: every node must run on WasmExecutionProvider)."""
import numpy as np
import pytest

import nnwasm
from model_builders import graph_model, ort_run, rand, single_node
import onnx
from onnx import helper, numpy_helper
from test_wasm_ops import check, wasm_only_options

CT_CASES = {
    "k2s2": dict(x=(1, 8, 6, 7), w=(8, 4, 2, 2), attrs=dict(strides=[2, 2])),
    "k4s2p1": dict(x=(1, 6, 5, 5), w=(6, 3, 4, 4), attrs=dict(strides=[2, 2], pads=[1, 1, 1, 1])),
    "k3p1_batch2": dict(x=(2, 3, 5, 6), w=(3, 4, 3, 3), attrs=dict(pads=[1, 1, 1, 1])),
    "grouped": dict(x=(1, 4, 5, 5), w=(4, 3, 3, 3), attrs=dict(group=2, strides=[2, 2])),
    "depthwise": dict(x=(1, 3, 4, 5), w=(3, 1, 3, 3), attrs=dict(group=3, strides=[2, 1])),
    "dilated": dict(x=(1, 2, 5, 4), w=(2, 3, 3, 2), attrs=dict(dilations=[2, 3], pads=[1, 0, 2, 1])),
    "output_padding": dict(x=(1, 3, 4, 5), w=(3, 2, 3, 3), attrs=dict(strides=[2, 3], output_padding=[1, 2])),
    "asym_pads": dict(x=(1, 2, 5, 6), w=(2, 3, 3, 2), attrs=dict(pads=[0, 1, 2, 0], strides=[2, 1])),
    "output_shape": dict(x=(1, 2, 4, 4), w=(2, 3, 3, 3), attrs=dict(strides=[2, 2], output_shape=[9, 10])),
    "output_shape_same_upper": dict(x=(1, 2, 4, 4), w=(2, 3, 3, 3),
                                    attrs=dict(strides=[2, 2], output_shape=[9, 8], auto_pad="SAME_UPPER")),
    "same_upper": dict(x=(1, 2, 5, 4), w=(2, 3, 4, 3), attrs=dict(strides=[2, 2], auto_pad="SAME_UPPER")),
    "same_lower": dict(x=(1, 2, 5, 4), w=(2, 3, 4, 3), attrs=dict(strides=[2, 2], auto_pad="SAME_LOWER")),
    "valid": dict(x=(1, 2, 5, 4), w=(2, 3, 3, 3), attrs=dict(strides=[2, 2], auto_pad="VALID")),
    "conv1d": dict(x=(1, 4, 10), w=(4, 3, 3), attrs=dict(strides=[2], pads=[1, 0])),
    "conv1d_output_padding": dict(x=(2, 2, 7), w=(2, 5, 4), attrs=dict(strides=[3], output_padding=[2])),
    "unet_up": dict(x=(1, 64, 12, 12), w=(64, 32, 2, 2), attrs=dict(strides=[2, 2])),
    "pixel": dict(x=(1, 5, 3, 3), w=(5, 7, 1, 1), attrs={}),
}


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("case", sorted(CT_CASES))
def test_conv_transpose(case, bias):
    c = CT_CASES[case]
    inits = {"W": rand(*c["w"], seed=1)}
    if bias:
        inits["B"] = rand(c["w"][1] * c["attrs"].get("group", 1), seed=2)
    x = rand(*c["x"])
    check(single_node("ConvTranspose", {"X": x}, ["Y"], c["attrs"], inits), {"X": x}, atol=1e-4)


@pytest.mark.parametrize("act", ["Relu", "Clip"])
def test_conv_transpose_fused_activation(act):
    x, inits = rand(1, 6, 5, 5), {"W": rand(6, 4, 4, 4, seed=1), "B": rand(4, seed=2)}
    nodes = [helper.make_node("ConvTranspose", ["X", "W", "B"], ["T"], strides=[2, 2], pads=[1, 1, 1, 1])]
    if act == "Relu":
        nodes.append(helper.make_node("Relu", ["T"], ["Y"]))
    else:
        inits.update(lo=np.float32(-0.5), hi=np.float32(0.5))
        nodes.append(helper.make_node("Clip", ["T", "lo", "hi"], ["Y"]))
    sess = check(graph_model(nodes, {"X": x}, ["Y"], inits), {"X": x}, atol=1e-4)
    assert len(sess.get_provider_assignment()) == 2


def test_conv_transpose_weight_as_input():
    x, w = rand(1, 3, 4, 4), rand(3, 2, 3, 3, seed=1)
    model = graph_model([helper.make_node("ConvTranspose", ["X", "W"], ["Y"], strides=[2, 2])],
                        {"X": x, "W": w}, ["Y"])
    check(model, {"X": x, "W": w}, atol=1e-4)


GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}


def recurrent_model(op, seq=5, batch=3, inp=4, hidden=6, direction="forward", layout=0, bias=True,
                    initial=False, peepholes=False, outputs=("Y", "Y_h", "Y_c"), opset=14, seq_lens=None,
                    **attrs):
    """A one-node model of `op`, weights as initializers; returns (model, feeds)."""
    dirs, g = 2 if direction == "bidirectional" else 1, GATES[op]
    x = rand(*((batch, seq, inp) if layout else (seq, batch, inp)))
    inits = {"W": rand(dirs, g * hidden, inp, seed=1) * 0.6, "R": rand(dirs, g * hidden, hidden, seed=2) * 0.6}
    names = ["X", "W", "R", "", "", "", "", ""]
    if bias:
        inits["B"] = rand(dirs, 2 * g * hidden, seed=3) * 0.5
        names[3] = "B"
    if seq_lens is not None:
        inits["L"] = np.asarray(seq_lens, np.int32)
        names[4] = "L"
    feeds = {"X": x}
    if initial:
        state = (batch, dirs, hidden) if layout else (dirs, batch, hidden)
        feeds["H0"] = rand(*state, seed=4)
        names[5] = "H0"
        if op == "LSTM":
            feeds["C0"] = rand(*state, seed=5)
            names[6] = "C0"
    if peepholes:
        inits["P"] = rand(dirs, 3 * hidden, seed=6)
        names[7] = "P"
    while names[-1] == "":
        names.pop()
    outs = [o if o in outputs else "" for o in (("Y", "Y_h", "Y_c") if op == "LSTM" else ("Y", "Y_h"))]
    while outs[-1] == "":
        outs.pop()
    if opset >= 14:
        attrs["layout"] = layout
    node = helper.make_node(op, names, outs, hidden_size=hidden, direction=direction, **attrs)
    model = graph_model([node], {k: v for k, v in feeds.items()}, [o for o in outs if o], inits, opset=opset)
    return model, feeds


RNN_CASES = {
    "lstm": ("LSTM", {}),
    "lstm_reverse": ("LSTM", dict(direction="reverse", initial=True)),
    "lstm_bidirectional": ("LSTM", dict(direction="bidirectional", initial=True)),
    "lstm_bidirectional_layout1": ("LSTM", dict(direction="bidirectional", layout=1, initial=True)),
    "lstm_no_bias_batch1": ("LSTM", dict(bias=False, batch=1, hidden=5)),
    "lstm_peepholes": ("LSTM", dict(peepholes=True, initial=True, direction="bidirectional")),
    "lstm_clip": ("LSTM", dict(clip=0.7, initial=True)),
    "lstm_input_forget": ("LSTM", dict(input_forget=1, peepholes=True)),
    "lstm_only_y_h": ("LSTM", dict(outputs=("Y_h",), layout=1)),
    "lstm_only_y_c": ("LSTM", dict(outputs=("Y_c",), direction="reverse")),
    "lstm_opset7": ("LSTM", dict(opset=7, initial=True)),
    "lstm_seq_lens_full": ("LSTM", dict(seq_lens=[5, 5, 5])),
    "lstm_wide": ("LSTM", dict(seq=7, batch=2, inp=33, hidden=40, direction="bidirectional")),
    "gru": ("GRU", {}),
    "gru_lbr": ("GRU", dict(linear_before_reset=1, initial=True)),
    "gru_bidirectional": ("GRU", dict(direction="bidirectional", initial=True, hidden=7)),
    "gru_lbr_bidirectional_layout1": ("GRU", dict(direction="bidirectional", layout=1, linear_before_reset=1)),
    "gru_reverse_clip": ("GRU", dict(direction="reverse", clip=0.5, bias=False)),
    "gru_only_y": ("GRU", dict(outputs=("Y",), batch=1)),
    "rnn": ("RNN", dict(initial=True)),
    "rnn_bidirectional_layout1": ("RNN", dict(direction="bidirectional", layout=1, hidden=9)),
    "rnn_reverse_no_bias": ("RNN", dict(direction="reverse", bias=False, clip=1.5)),
}


def check_batchwise(op, kw):
    """layout 1, which onnxruntime's CPU kernels refuse: the oracle is onnxruntime on the same
    model in layout 0, its inputs and outputs transposed."""
    model, feeds = recurrent_model(op, **kw)
    model0, _ = recurrent_model(op, **{**kw, "layout": 0})
    feeds0 = {k: v.transpose(1, 0, 2) for k, v in feeds.items()}
    oracle = [o.transpose(2, 0, 1, 3) if o.ndim == 4 else o.transpose(1, 0, 2) for o in ort_run(model0, feeds0)]
    wasm = nnwasm.InferenceSession(model, wasm_only_options(), providers=["WasmExecutionProvider"])
    assert {p for _, _, p in wasm.get_provider_assignment()} == {"WasmExecutionProvider"}
    ref = nnwasm.InferenceSession(model, providers=["NumpyExecutionProvider"])
    got, want = wasm.run(None, feeds), ref.run(None, feeds)
    assert len(got) == len(oracle)
    for g, w, o in zip(got, want, oracle):
        assert g.shape == o.shape and g.dtype == o.dtype
        np.testing.assert_allclose(w, o, rtol=1e-5, atol=2e-5)
        np.testing.assert_allclose(g, o, rtol=1e-5, atol=2e-5)


@pytest.mark.parametrize("case", sorted(RNN_CASES))
def test_recurrent(case):
    op, kw = RNN_CASES[case]
    if kw.get("layout"):
        check_batchwise(op, kw)
    else:
        model, feeds = recurrent_model(op, **kw)
        check(model, feeds, atol=2e-5)


@pytest.mark.parametrize("op,kw,reason", [
    ("LSTM", dict(seq_lens=[5, 3, 4]), "sequence_lens"),
    ("GRU", dict(activations=["Sigmoid", "Relu"]), "activations"),
])
def test_recurrent_refusals_fall_back_to_numpy(op, kw, reason):
    model, feeds = recurrent_model(op, **kw)
    with pytest.raises(nnwasm.errors.NotImplementedOp, match=reason):
        nnwasm.InferenceSession(model, wasm_only_options(), providers=["WasmExecutionProvider"])
    sess = nnwasm.InferenceSession(model)
    assert [p for _, _, p in sess.get_provider_assignment()] == ["NumpyExecutionProvider"]
    ref = nnwasm.InferenceSession(model, providers=["NumpyExecutionProvider"])
    for got, want in zip(sess.run(None, feeds), ort_run(model, feeds)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    for got, want in zip(ref.run(None, feeds), ort_run(model, feeds)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_torch_style_bidirectional_lstm_then_transpose():
    """What torch.onnx (TorchScript exporter, opset 17) emits for nn.LSTM(bidirectional=True,
    batch_first=True): Transpose, LSTM with B and initial states, Transpose, Reshape."""
    seq, batch, inp, hid = 6, 2, 8, 10
    x = rand(batch, seq, inp)
    inits = {"W": rand(2, 4 * hid, inp, seed=1) * 0.5, "R": rand(2, 4 * hid, hid, seed=2) * 0.5,
             "B": rand(2, 8 * hid, seed=3) * 0.5, "H0": np.zeros((2, batch, hid), np.float32),
             "C0": np.zeros((2, batch, hid), np.float32), "shape": np.array([batch, seq, 2 * hid], np.int64)}
    nodes = [
        helper.make_node("Transpose", ["X"], ["xt"], perm=[1, 0, 2]),
        helper.make_node("LSTM", ["xt", "W", "R", "B", "", "H0", "C0"], ["y", "yh", "yc"], hidden_size=hid,
                         direction="bidirectional"),
        helper.make_node("Transpose", ["y"], ["yt"], perm=[2, 0, 1, 3]),
        helper.make_node("Reshape", ["yt", "shape"], ["Y"]),
    ]
    check(graph_model(nodes, {"X": x}, ["Y", "yh"], inits, opset=17), {"X": x}, atol=2e-5)


@pytest.mark.parametrize("name,shape", [("B", (1, 40)), ("H0", (2, 3, 6)), ("P", (1, 12)), ("C0", (1, 3, 5))])
def test_recurrent_inconsistent_shapes_are_invalid(name, shape):
    model, feeds = recurrent_model("LSTM", initial=True, peepholes=True)
    m = onnx.load_from_string(model)
    for t in m.graph.initializer:
        if t.name == name:
            t.CopyFrom(numpy_helper.from_array(np.zeros(shape, np.float32), name))
    for vi in m.graph.input:
        if vi.name == name:
            vi.CopyFrom(helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, shape))
    with pytest.raises(nnwasm.errors.InvalidModel, match=name.replace("H0", "initial_h").replace("C0", "initial_c")):
        nnwasm.InferenceSession(m.SerializeToString())
