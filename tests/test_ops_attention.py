"""Attention (23-25), RotaryEmbedding, LinearAttention, CausalConvWithState and FlexAttention beyond
the backend suite's cases: combinations it does not cover, checked against onnx's reference
evaluator, symbolic dims, and bad attributes/inputs refused with nnwasm errors."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

import nnwasm  # noqa: E402
from nnwasm.errors import InvalidArgument, InvalidModel  # noqa: E402

F = TensorProto.FLOAT


def model(op, inputs, n_out, opset, domain="", **attrs):
    """inputs: {name: array or (elem_type, shape)}; a value of None is an omitted input."""
    vis = []
    for name, v in inputs.items():
        if v is None:
            continue
        et, shape = (helper.np_dtype_to_tensor_dtype(v.dtype), v.shape) if isinstance(v, np.ndarray) else v
        vis.append(helper.make_tensor_value_info(name, et, shape))
    outs = [f"y{i}" for i in range(n_out)]
    names = [k if v is not None else "" for k, v in inputs.items()]
    node = helper.make_node(op, names, outs, domain=domain, **attrs)
    g = helper.make_graph([node], "t", vis, [helper.make_tensor_value_info(o, F, None) for o in outs])
    opsets = [helper.make_opsetid("", opset)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    m = helper.make_model(g, opset_imports=opsets)
    m.ir_version = 10
    return m


def check(m, feeds, rtol=1e-5, atol=1e-6):
    want = ReferenceEvaluator(m).run(None, feeds)
    for providers in (["NumpyExecutionProvider"], None):
        got = nnwasm.InferenceSession(m.SerializeToString(), providers=providers).run(None, feeds)
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


def r(*shape, seed=0):
    return np.random.default_rng(seed + len(shape)).standard_normal(shape).astype(np.float32)


def test_attention_3d_gqa_past_causal_short_bool_mask():
    # 4 query heads on 2 kv heads, a cache of 3, a boolean mask covering only 4 of the 5 keys
    feeds = {"Q": r(2, 2, 16), "K": r(2, 2, 8, seed=1), "V": r(2, 2, 12, seed=2),
             "mask": np.array([[True, False, True, True], [True, True, True, True]]),
             "pk": r(2, 2, 3, 4, seed=3), "pv": r(2, 2, 3, 6, seed=4)}
    m = model("Attention", {"Q": feeds["Q"], "K": feeds["K"], "V": feeds["V"], "mask": feeds["mask"],
                            "pk": feeds["pk"], "pv": feeds["pv"]}, 4, 23,
              q_num_heads=4, kv_num_heads=2, is_causal=1, qk_matmul_output_mode=3, softcap=2.0)
    check(m, feeds)


@pytest.mark.parametrize("window", [(1, 0), (2, 1), (-1, 1)])
def test_attention_window_with_nonpad_and_float_mask(window):
    feeds = {"Q": r(2, 2, 3, 4), "K": r(2, 2, 6, 4, seed=1), "V": r(2, 2, 6, 5, seed=2),
             "mask": r(2, 3, 6, seed=3), "n": np.array([4, 6], np.int64)}
    m = model("Attention", {"Q": feeds["Q"], "K": feeds["K"], "V": feeds["V"], "mask": feeds["mask"],
                            "pk": None, "pv": None, "n": feeds["n"]}, 4, 25,
              left_window_size=window[0], right_window_size=window[1], qk_matmul_output_mode=2)
    check(m, feeds)


def test_attention_symbolic_batch_runs_at_two_sizes():
    m = model("Attention", {"Q": (F, ["N", 2, 3, 4]), "K": (F, ["N", 2, 5, 4]), "V": (F, ["N", 2, 5, 4])},
              1, 23, is_causal=1)
    sess = nnwasm.InferenceSession(m.SerializeToString(), providers=["NumpyExecutionProvider"])
    for n in (1, 3):
        feeds = {"Q": r(n, 2, 3, 4), "K": r(n, 2, 5, 4, seed=1), "V": r(n, 2, 5, 4, seed=2)}
        np.testing.assert_allclose(sess.run(None, feeds)[0], ReferenceEvaluator(m).run(None, feeds)[0],
                                   rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("attrs,inputs,match", [
    ({}, {"Q": (F, [1, 3, 8]), "K": (F, [1, 3, 8]), "V": (F, [1, 3, 8])}, "q_num_heads and kv_num_heads"),
    ({"q_num_heads": 3, "kv_num_heads": 2}, {"Q": (F, [1, 3, 6]), "K": (F, [1, 3, 4]), "V": (F, [1, 3, 4])},
     "not a multiple"),
    ({"qk_matmul_output_mode": 7}, {"Q": (F, [1, 2, 3, 4]), "K": (F, [1, 2, 3, 4]), "V": (F, [1, 2, 3, 4])},
     "qk_matmul_output_mode"),
    ({}, {"Q": (F, [1, 2, 3, 4]), "K": (F, [1, 2, 3, 5]), "V": (F, [1, 2, 3, 4])}, "head sizes"),
    ({}, {"Q": (F, [1, 2, 3, 4]), "K": (F, [1, 2, 3, 4]), "V": (F, [1, 2, 3, 4]), "m": (F, [3, 3]),
          "pk": (F, [1, 2, 2, 4])}, "together"),
])
def test_attention_bad_models_are_refused(attrs, inputs, match):
    m = model("Attention", inputs, 1, 23, **attrs)
    with pytest.raises(InvalidModel, match=match):
        nnwasm.InferenceSession(m.SerializeToString(), providers=["NumpyExecutionProvider"])


def test_attention_window_needs_opset_25():
    m = model("Attention", {"Q": (F, [1, 2, 3, 4]), "K": (F, [1, 2, 3, 4]), "V": (F, [1, 2, 3, 4])}, 1, 24,
              left_window_size=1)
    with pytest.raises(InvalidModel, match="opset 25"):
        nnwasm.InferenceSession(m.SerializeToString(), providers=["NumpyExecutionProvider"])


def test_attention_mask_longer_than_keys_is_a_run_time_error():
    m = model("Attention", {"Q": (F, [1, 1, 2, 4]), "K": (F, [1, 1, "S", 4]), "V": (F, [1, 1, "S", 4]),
                            "m": (F, [2, 5])}, 1, 23)
    sess = nnwasm.InferenceSession(m.SerializeToString(), providers=["NumpyExecutionProvider"])
    with pytest.raises(InvalidArgument, match="exceeds"):
        sess.run(None, {"Q": r(1, 1, 2, 4), "K": r(1, 1, 3, 4), "V": r(1, 1, 3, 4), "m": r(2, 5)})


def test_rotary_partial_interleaved_with_positions():
    feeds = {"X": r(2, 3, 12), "cos": r(8, 2), "sin": r(8, 2, seed=1),
             "p": np.array([[0, 3, 7], [1, 1, 2]], np.int64)}
    m = model("RotaryEmbedding", feeds, 1, 23, num_heads=2, rotary_embedding_dim=4, interleaved=1)
    check(m, feeds)


def test_rotary_position_out_of_cache_is_refused_at_run():
    feeds = {"X": r(1, 2, 2, 4), "cos": r(4, 2), "sin": r(4, 2, seed=1), "p": np.array([[0, 9]], np.int64)}
    m = model("RotaryEmbedding", feeds, 1, 23)
    with pytest.raises(InvalidArgument, match="position_ids"):
        nnwasm.InferenceSession(m.SerializeToString(), providers=["NumpyExecutionProvider"]).run(None, feeds)


def test_linear_attention_gated_delta_gqa_per_key_decay():
    feeds = {"q": r(2, 3, 16), "k": r(2, 3, 8, seed=1), "v": r(2, 3, 6, seed=2), "s": r(2, 2, 4, 3, seed=3),
             "g": -np.abs(r(2, 3, 8, seed=4)), "b": np.abs(r(2, 3, 2, seed=5))}
    m = model("LinearAttention", feeds, 2, 27, q_num_heads=4, kv_num_heads=2)
    check(m, feeds, rtol=1e-4, atol=1e-5)


def test_linear_attention_rule_and_inputs_must_agree():
    m = model("LinearAttention", {"q": (F, [1, 2, 4]), "k": (F, [1, 2, 4]), "v": (F, [1, 2, 4])}, 2, 27,
              q_num_heads=1, kv_num_heads=1)   # gated_delta by default: needs decay and beta
    with pytest.raises(InvalidModel, match="needs decay"):
        nnwasm.InferenceSession(m.SerializeToString(), providers=["NumpyExecutionProvider"])


def test_causal_conv_state_carries_across_calls():
    x, w, b = r(1, 3, 7), r(3, 1, 4, seed=1), r(3, seed=2)
    m = model("CausalConvWithState", {"x": (F, [1, 3, "L"]), "w": w, "b": b, "s": (F, [1, 3, 3])}, 2, 27,
              activation="silu")
    sess = nnwasm.InferenceSession(m.SerializeToString(), providers=["NumpyExecutionProvider"])
    whole, _ = sess.run(None, {"x": x, "w": w, "b": b, "s": np.zeros((1, 3, 3), np.float32)})
    first, state = sess.run(None, {"x": x[:, :, :4], "w": w, "b": b, "s": np.zeros((1, 3, 3), np.float32)})
    second, _ = sess.run(None, {"x": x[:, :, 4:], "w": w, "b": b, "s": state})
    np.testing.assert_allclose(np.concatenate([first, second], axis=2), whole, rtol=1e-6, atol=1e-6)


def test_flex_attention_prob_mod_and_gqa():
    body = helper.make_graph([helper.make_node("Mul", ["p", "two"], ["o"])], "pm",
                             [helper.make_tensor_value_info("p", F, None)],
                             [helper.make_tensor_value_info("o", F, None)],
                             [helper.make_tensor("two", F, [], [2.0])])
    feeds = {"Q": r(1, 4, 3, 4), "K": r(1, 2, 5, 4, seed=1), "V": r(1, 2, 5, 3, seed=2)}
    m = model("FlexAttention", feeds, 1, 26, domain="ai.onnx.preview", prob_mod=body, scale=0.3)
    check(m, feeds)
