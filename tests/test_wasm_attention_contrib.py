"""onnxruntime's attention contrib ops (com.microsoft GroupQueryAttention, MultiHeadAttention,
Attention) as single-node models on the shapes onnxruntime-genai's builder and the transformer
optimizer write: onnxruntime, the numpy provider and kernels.wasm alone (fallback disabled) must
agree. Bad input (a past that contradicts the node, seqlens_k out of range) is an error naming
the node, and the session stays usable."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import nnwasm
from model_builders import ort_run
from test_wasm_ops import WASM_ONLY, wasm_only_options

MS = "com.microsoft"


def _rng(seed):
    return np.random.default_rng(seed)


def R(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def make_model(op, inputs, outputs, attrs, feeds, consts=None, symbolic=()):
    """One com.microsoft node; inputs are names (None = left out) found in feeds (graph inputs) or
    consts (initializers); the inputs named in symbolic get symbolic dims only."""
    consts = consts or {}
    vis = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype),
                                         [f"{n}_{i}" for i in range(a.ndim)] if n in symbolic else a.shape)
           for n, a in feeds.items()]
    node = helper.make_node(op, [n or "" for n in inputs], outputs, name=f"{op.lower()}_0", domain=MS, **attrs)
    g = helper.make_graph([node], "g", vis, [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs],
                          [onnx.numpy_helper.from_array(v, k) for k, v in consts.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)])
    m.ir_version = 8
    return m.SerializeToString()


def run_all(model, feeds, rows=None, atol=2e-5, oracle=True):
    """WASM alone and the numpy provider against onnxruntime (or, oracle=False, against each other);
    rows [B]: compare only each batch's first rows of the [B, S, *] output (padded rows are
    undefined in onnxruntime)."""
    wasm = nnwasm.InferenceSession(model, wasm_only_options(), providers=WASM_ONLY)
    assert {p for _, _, p in wasm.get_provider_assignment()} == {"WasmExecutionProvider"}
    ref = nnwasm.InferenceSession(model, providers=["NumpyExecutionProvider"])
    got, want = wasm.run(None, feeds), ref.run(None, feeds)
    base = ort_run(model, feeds) if oracle else want
    for k, (g, w, o) in enumerate(zip(got, want, base)):
        assert g.shape == o.shape and w.shape == o.shape, (k, g.shape, w.shape, o.shape)
        if k == 0 and rows is not None:
            for bi, r in enumerate(rows):
                np.testing.assert_allclose(w[bi, :r], o[bi, :r], rtol=1e-4, atol=atol)
                np.testing.assert_allclose(g[bi, :r], o[bi, :r], rtol=1e-4, atol=atol)
        else:
            np.testing.assert_allclose(w, o, rtol=1e-4, atol=atol)
            np.testing.assert_allclose(g, o, rtol=1e-4, atol=atol)
    return wasm, got


# --- GroupQueryAttention ------------------------------------------------------------------------

def gqa_case(batch, s, hq, hkv, d, past, packed=False, rotary=False, interleaved=0, window=-1, softcap=0.0,
             seqlens=None, total=None, bias=False, sink=False, smooth=0, pos_ids=False, seed=0, symbolic=()):
    """(model, feeds, valid rows) of a GroupQueryAttention step as onnxruntime-genai runs it: past
    [B, Hkv, past, D] (None: no past inputs), total_sequence_length a constant (it comes from a Shape
    in the builder's graphs), seqlens_k fed."""
    rng = _rng(seed)
    feeds = {}
    if packed:
        feeds["qkv"] = R(rng, batch, s, (hq + 2 * hkv) * d)
        ins = ["qkv", None, None]
    else:
        feeds.update(q=R(rng, batch, s, hq * d), k=R(rng, batch, s, hkv * d), v=R(rng, batch, s, hkv * d))
        ins = ["q", "k", "v"]
    p = past or 0
    if past is not None:
        feeds.update(past_key=R(rng, batch, hkv, p, d), past_value=R(rng, batch, hkv, p, d))
        ins += ["past_key", "past_value"]
    else:
        ins += [None, None]
    total = total if total is not None else p + s
    seqlens = seqlens if seqlens is not None else [total - 1] * batch
    feeds["seqlens_k"] = np.array(seqlens, np.int32)
    consts = {"total_sequence_length": np.array(total, np.int32)}
    ins += ["seqlens_k", "total_sequence_length"]
    extra = [None] * 5
    if rotary:
        rows = max(512, p + s + 8)
        consts.update(cos_cache=R(rng, rows, d // 2), sin_cache=R(rng, rows, d // 2))
        extra[0:2] = ["cos_cache", "sin_cache"]
    if pos_ids:
        feeds["position_ids"] = (np.array(seqlens, np.int64)[:, None] + 1 - s + np.arange(s)[None]).astype(np.int64)
        extra[2] = "position_ids"
    if bias:
        feeds["attention_bias"] = R(rng, batch, 1, s, max(total, p))
        extra[3] = "attention_bias"
    if sink:
        consts["head_sink"] = R(rng, hq)
        extra[4] = "head_sink"
    ins += extra
    while ins[-1] is None:
        ins.pop()
    attrs = dict(num_heads=hq, kv_num_heads=hkv, do_rotary=int(rotary), rotary_interleaved=interleaved,
                 local_window_size=window, softcap=softcap, smooth_softmax=smooth)
    model = make_model("GroupQueryAttention", ins, ["output", "present_key", "present_value"], attrs, feeds, consts,
                       symbolic)
    first = s > 1 and s == total
    rows = [min(s, n + 1) if first else s for n in seqlens]
    return model, feeds, rows


GQA_CASES = {
    # onnxruntime-genai prompt and decode steps, Llama-style (heads 12 / kv 4, head size 64)
    "prompt_s7": dict(batch=1, s=7, hq=12, hkv=4, d=64, past=0, rotary=True),
    "prompt_s128": dict(batch=1, s=128, hq=4, hkv=2, d=16, past=0, rotary=True),
    "decode_p5": dict(batch=1, s=1, hq=12, hkv=4, d=64, past=5, rotary=True),
    "decode_p127": dict(batch=2, s=1, hq=4, hkv=1, d=16, past=127, rotary=True),
    "decode_p0_nopast": dict(batch=1, s=1, hq=4, hkv=2, d=16, past=None),
    "decode_p0_empty_past": dict(batch=1, s=1, hq=4, hkv=2, d=16, past=0),
    "prompt_no_past_inputs": dict(batch=1, s=7, hq=4, hkv=4, d=16, past=None),
    "packed_qkv_prompt": dict(batch=1, s=7, hq=4, hkv=2, d=16, past=0, packed=True, rotary=True),
    "packed_qkv_decode": dict(batch=2, s=1, hq=4, hkv=2, d=16, past=5, packed=True, rotary=True),
    "interleaved": dict(batch=2, s=7, hq=4, hkv=2, d=16, past=0, rotary=True, interleaved=1),
    "interleaved_decode": dict(batch=1, s=1, hq=4, hkv=2, d=16, past=9, rotary=True, interleaved=1),
    "window_prompt": dict(batch=1, s=7, hq=4, hkv=4, d=16, past=0, window=3),
    "window_decode": dict(batch=1, s=1, hq=4, hkv=4, d=16, past=9, window=3),
    "softcap": dict(batch=1, s=7, hq=4, hkv=2, d=16, past=0, softcap=2.0),
    "batch2_padded_prompt": dict(batch=2, s=7, hq=4, hkv=2, d=16, past=0, seqlens=[6, 3], rotary=True),
    "batch2_padded_decode": dict(batch=2, s=1, hq=4, hkv=2, d=16, past=5, seqlens=[5, 2], rotary=True),
    "subsequent_prompt": dict(batch=1, s=3, hq=4, hkv=2, d=16, past=5, rotary=True),
    "shared_buffer": dict(batch=1, s=1, hq=4, hkv=2, d=16, past=16, total=6, seqlens=[5], rotary=True),
    "attention_bias": dict(batch=1, s=7, hq=4, hkv=2, d=16, past=0, bias=True, softcap=2.0),
    "head_sink": dict(batch=1, s=7, hq=4, hkv=2, d=16, past=0, sink=True),
    "smooth_softmax": dict(batch=1, s=1, hq=4, hkv=2, d=16, past=5, smooth=1),
    "position_ids": dict(batch=2, s=1, hq=4, hkv=2, d=16, past=5, rotary=True, pos_ids=True),
}


@pytest.mark.parametrize("case", sorted(GQA_CASES))
def test_gqa(case):
    model, feeds, rows = gqa_case(**GQA_CASES[case])
    run_all(model, feeds, rows=rows)


def test_gqa_decode_loop_feeds_present_back():
    """A prompt, then decode steps with present fed back as past (what onnxruntime-genai does)."""
    hq, hkv, d, s0 = 4, 2, 16, 5
    rng = _rng(3)
    cos, sin = R(rng, 64, d // 2), R(rng, 64, d // 2)
    pk = pv = np.zeros((1, hkv, 0, d), np.float32)
    for step in range(4):
        s = s0 if step == 0 else 1
        total = pk.shape[2] + s
        feeds = dict(q=R(rng, 1, s, hq * d), k=R(rng, 1, s, hkv * d), v=R(rng, 1, s, hkv * d), past_key=pk,
                     past_value=pv, seqlens_k=np.array([total - 1], np.int32))
        model = make_model("GroupQueryAttention", ["q", "k", "v", "past_key", "past_value", "seqlens_k",
                                                   "total_sequence_length", "cos_cache", "sin_cache"],
                           ["output", "present_key", "present_value"],
                           dict(num_heads=hq, kv_num_heads=hkv, do_rotary=1), feeds,
                           {"total_sequence_length": np.array(total, np.int32), "cos_cache": cos, "sin_cache": sin})
        _, (y, pk, pv) = run_all(model, feeds)
    assert pk.shape == (1, hkv, s0 + 3, d)


def _expect_error(model, feeds, what):
    sess = nnwasm.InferenceSession(model, wasm_only_options(), providers=WASM_ONLY)
    with pytest.raises(Exception) as e:
        sess.run(None, feeds)
    assert "groupqueryattention_0" in str(e.value) or "multiheadattention_0" in str(e.value), str(e.value)
    assert what in str(e.value), str(e.value)
    return sess


@pytest.mark.parametrize("bad", [[7], [-1], [3, 100]])
def test_gqa_bad_seqlens_is_an_error_naming_the_node(bad):
    model, feeds, _ = gqa_case(batch=len(bad) if len(bad) > 1 else 1, s=1, hq=4, hkv=2, d=16, past=5)
    good = dict(feeds)
    feeds["seqlens_k"] = np.array(bad, np.int32)
    sess = _expect_error(model, feeds, "seqlens_k")
    # the session stays usable
    ref = nnwasm.InferenceSession(model, providers=["NumpyExecutionProvider"])
    np.testing.assert_allclose(sess.run(None, good)[0], ref.run(None, good)[0], rtol=1e-5, atol=1e-5)
    with pytest.raises(Exception, match="seqlens_k"):
        ref.run(None, feeds)


@pytest.mark.parametrize("shape,what", [((1, 3, 5, 16), "kv_num_heads"), ((1, 2, 5, 8), "head size")])
def test_gqa_past_contradicting_the_node_is_refused(shape, what):
    model, feeds, _ = gqa_case(batch=1, s=1, hq=4, hkv=2, d=16, past=5, symbolic=("past_key", "past_value"))
    good = dict(feeds)
    feeds["past_key"] = np.zeros(shape, np.float32)
    feeds["past_value"] = np.zeros(shape, np.float32)
    sess = nnwasm.InferenceSession(model, wasm_only_options(), providers=WASM_ONLY)
    with pytest.raises(Exception) as e:
        sess.run(None, feeds)
    assert "groupqueryattention_0" in str(e.value) and what in str(e.value), str(e.value)
    assert sess.run(None, good)[0].shape == (1, 1, 64)


def test_gqa_total_from_shape_runs_on_wasm():
    """total_sequence_length as the builder computes it: Shape(attention_mask)[1] cast to int32."""
    hq, hkv, d, p = 4, 2, 16, 6
    rng = _rng(5)
    feeds = dict(q=R(rng, 1, 1, hq * d), k=R(rng, 1, 1, hkv * d), v=R(rng, 1, 1, hkv * d),
                 past_key=R(rng, 1, hkv, p, d), past_value=R(rng, 1, hkv, p, d),
                 attention_mask=np.ones((1, p + 1), np.int64))
    i64 = TensorProto.INT64
    nodes = [
        helper.make_node("ReduceSum", ["attention_mask", "one"], ["msum"], keepdims=0),
        helper.make_node("Sub", ["msum", "one"], ["sl64"]),
        helper.make_node("Cast", ["sl64"], ["seqlens_k"], to=TensorProto.INT32),
        helper.make_node("Shape", ["attention_mask"], ["mshape"]),
        helper.make_node("Gather", ["mshape", "one_s"], ["tot64"], axis=0),
        helper.make_node("Cast", ["tot64"], ["total"], to=TensorProto.INT32),
        helper.make_node("GroupQueryAttention", ["q", "k", "v", "past_key", "past_value", "seqlens_k", "total"],
                         ["output", "present_key", "present_value"], domain=MS, num_heads=hq, kv_num_heads=hkv),
    ]
    vis = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape) for n, a in feeds.items()]
    g = helper.make_graph(nodes, "g", vis, [helper.make_tensor_value_info(o, TensorProto.FLOAT, None)
                                            for o in ("output", "present_key", "present_value")],
                          [helper.make_tensor("one", i64, [1], [1]), helper.make_tensor("one_s", i64, [], [1])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)])
    m.ir_version = 8
    model = m.SerializeToString()
    sess = nnwasm.InferenceSession(model, wasm_only_options(), providers=WASM_ONLY)
    got = sess.run(None, feeds)
    for a, o in zip(got, ort_run(model, feeds)):
        np.testing.assert_allclose(a, o, rtol=1e-4, atol=2e-5)


# --- MultiHeadAttention -------------------------------------------------------------------------

def _padding_mask(form, batch, s, t):
    """The first batch item's last two keys masked out, in one of the int32 forms MultiHeadAttention's
    key_padding_mask and Attention's mask_index share: "1d" (valid lengths [B]), "2d" ([B, T]),
    "3d" ([B, S, T])."""
    if form == "1d":
        return np.array([t - 2] + [t] * (batch - 1), np.int32)
    m = np.ones((batch, t) if form == "2d" else (batch, s, t), np.int32)
    m[0, ..., -2:] = 0
    return m


def mha_case(batch, s, n, h, l=None, form="bsd", past=None, bias=False, kpm=None, ab=False, uni=0, hv=None,
             present=True, seed=0, symbolic=()):
    rng = _rng(seed)
    hv = hv or h
    l = l or s
    f = {}
    if form == "qkv":
        f["query"] = R(rng, batch, s, n, 3, h)
        ins = ["query", None, None]
    elif form == "kv":
        f.update(query=R(rng, batch, s, n * h), key=R(rng, batch, l, n, 2, h))
        ins = ["query", "key", None]
    elif form == "bnsh":
        f.update(query=R(rng, batch, s, n * h), key=R(rng, batch, n, l, h), value=R(rng, batch, n, l, hv))
        ins = ["query", "key", "value"]
    else:
        f.update(query=R(rng, batch, s, n * h), key=R(rng, batch, l, n * h), value=R(rng, batch, l, n * hv))
        ins = ["query", "key", "value"]
    ins += [None] * 5
    t = l + (past or 0)
    consts = {}
    if bias:
        consts["bias"] = R(rng, n * (2 * h + hv))
        ins[3] = "bias"
    if kpm:
        f["key_padding_mask"] = _padding_mask(kpm, batch, s, t)
        ins[4] = "key_padding_mask"
    if ab:
        f["attention_bias"] = R(rng, batch, 1, s, t)
        ins[5] = "attention_bias"
    outs = ["output"]
    if past is not None:
        f.update(past_key=R(rng, batch, n, past, h), past_value=R(rng, batch, n, past, hv))
        ins[6:8] = ["past_key", "past_value"]
        if present:
            outs = ["output", "present_key", "present_value"]
    while ins[-1] is None:
        ins.pop()
    return make_model("MultiHeadAttention", ins, outs, dict(num_heads=n, unidirectional=uni), f, consts, symbolic), f


MHA_CASES = {
    "self": dict(batch=2, s=5, n=4, h=16),
    "cross_l9": dict(batch=2, s=5, n=4, h=16, l=9),
    "bias": dict(batch=2, s=5, n=4, h=16, bias=True),
    "whisper_cross_bnsh": dict(batch=2, s=1, n=4, h=16, form="bnsh", l=11, bias=True),
    "whisper_cross_bnsh_prompt": dict(batch=1, s=4, n=4, h=16, form="bnsh", l=15),
    "kpm_lengths": dict(batch=2, s=5, n=4, h=16, kpm="1d"),
    "kpm_2d": dict(batch=2, s=5, n=4, h=16, kpm="2d"),
    "kpm_3d": dict(batch=2, s=5, n=4, h=16, kpm="3d"),
    "attention_bias": dict(batch=2, s=5, n=4, h=16, ab=True),
    "decode_past5_bias": dict(batch=2, s=1, n=4, h=16, past=5, bias=True),
    "decode_past0": dict(batch=1, s=1, n=4, h=16, past=0, uni=1),
    "causal_past5": dict(batch=2, s=3, n=4, h=16, past=5, uni=1),
    "causal_kpm": dict(batch=2, s=5, n=4, h=16, uni=1, kpm="2d"),
    "decode_past127_kpm_bias": dict(batch=2, s=1, n=12, h=64, past=127, kpm="2d", ab=True),
    "v_head_size": dict(batch=1, s=4, n=4, h=16, hv=8, l=6),
}


@pytest.mark.parametrize("case", sorted(MHA_CASES))
def test_mha(case):
    model, feeds = mha_case(**MHA_CASES[case])
    run_all(model, feeds)


@pytest.mark.parametrize("form", ["qkv", "kv"])
@pytest.mark.parametrize("bias", [False, True])
def test_mha_packed_forms_match_unpacked(form, bias):
    """onnxruntime's CPU provider lacks packed QKV / KV: WASM and numpy are checked against each
    other and against the same data unpacked, which onnxruntime runs."""
    model, feeds = mha_case(batch=2, s=5, n=4, h=16, form=form, bias=bias)
    _, got = run_all(model, feeds, oracle=False)
    q = feeds["query"]
    if form == "qkv":
        un = dict(query=q[:, :, :, 0].reshape(2, 5, 64), key=q[:, :, :, 1].reshape(2, 5, 64),
                  value=q[:, :, :, 2].reshape(2, 5, 64))
    else:
        k = feeds["key"]
        un = dict(query=q, key=k[:, :, :, 0].reshape(2, 5, 64), value=k[:, :, :, 1].reshape(2, 5, 64))
    ins = ["query", "key", "value"] + (["bias"] if bias else [])
    consts = {}
    if bias:
        consts["bias"] = onnx.numpy_helper.to_array(onnx.load_from_string(model).graph.initializer[0])
    plain = make_model("MultiHeadAttention", ins, ["output"], dict(num_heads=4), un, consts)
    np.testing.assert_allclose(got[0], ort_run(plain, un)[0], rtol=1e-4, atol=2e-5)


def test_mha_past_contradicting_the_node_is_refused():
    model, feeds = mha_case(batch=1, s=1, n=4, h=16, past=5, symbolic=("past_key", "past_value"))
    feeds["past_key"] = np.zeros((1, 3, 5, 16), np.float32)
    sess = nnwasm.InferenceSession(model, wasm_only_options(), providers=WASM_ONLY)
    with pytest.raises(Exception) as e:
        sess.run(None, feeds)
    assert "multiheadattention_0" in str(e.value), str(e.value)


# --- Attention (the optimizer's) ----------------------------------------------------------------

def attention_case(batch, s, n, c, past=None, mask=None, uni=0, ab=False, sizes=None, present=None, seed=0):
    rng = _rng(seed)
    cols = sum(sizes) if sizes else 3 * c
    f = {"input": R(rng, batch, s, c)}
    consts = {"weights": R(rng, c, cols) * np.float32(0.3), "bias": R(rng, cols)}
    ins = ["input", "weights", "bias", None, None, None]
    t = s + (past or 0)
    if mask == "1d_start":
        f["mask_index"] = np.array([t - 2] + [t] * (batch - 1) + [1] + [0] * (batch - 1), np.int32)
    elif mask:
        f["mask_index"] = _padding_mask(mask, batch, s, t)
    if mask:
        ins[3] = "mask_index"
    outs = ["output"]
    if past is not None:
        f["past"] = R(rng, 2, batch, n, past, (sizes[1] if sizes else c) // n)
        ins[4] = "past"
    if past is not None or present:
        outs.append("present")
    if ab:
        f["attention_bias"] = R(rng, batch, n, s, t)
        ins[5] = "attention_bias"
    while ins[-1] is None:
        ins.pop()
    attrs = dict(num_heads=n, unidirectional=uni)
    if sizes:
        attrs["qkv_hidden_sizes"] = sizes
    return make_model("Attention", ins, outs, attrs, f, consts), f


ATTENTION_CASES = {
    "bert": dict(batch=2, s=7, n=4, c=64),
    "bert_12_heads_s128": dict(batch=1, s=128, n=12, c=192, mask="2d"),
    "mask_1d": dict(batch=2, s=7, n=4, c=64, mask="1d"),
    "mask_1d_start": dict(batch=2, s=7, n=4, c=64, mask="1d_start"),
    "mask_2d": dict(batch=2, s=7, n=4, c=64, mask="2d"),
    "mask_3d": dict(batch=2, s=7, n=4, c=64, mask="3d"),
    "gpt2_prompt_present": dict(batch=1, s=7, n=4, c=64, uni=1, past=0),
    "gpt2_decode_p5": dict(batch=2, s=1, n=4, c=64, past=5, uni=1),
    "gpt2_decode_p127_mask": dict(batch=2, s=1, n=12, c=192, past=127, uni=1, mask="2d"),
    "gpt2_prompt_past_mask": dict(batch=2, s=3, n=4, c=64, past=5, uni=1, mask="2d"),
    "attention_bias": dict(batch=2, s=7, n=4, c=64, ab=True),
    "qkv_hidden_sizes": dict(batch=2, s=7, n=4, c=64, sizes=[64, 64, 32]),
    "causal_mask_1d": dict(batch=2, s=7, n=4, c=64, mask="1d", uni=1),
}


@pytest.mark.parametrize("case", sorted(ATTENTION_CASES))
def test_attention(case):
    model, feeds = attention_case(**ATTENTION_CASES[case])
    run_all(model, feeds, atol=5e-5)


def test_attention_4d_mask_matches_3d():
    """The Megatron GPT-2 form [B, 1, M, M] (onnxruntime's CPU provider refuses it): rows P..P+S
    and columns 0..T of it are the 3-D mask."""
    batch, s, p, n, c, mx = 2, 3, 4, 4, 64, 16
    model, feeds = attention_case(batch, s, n, c, past=p)
    m4 = np.tril(np.ones((mx, mx), np.int32))[None, None].repeat(batch, 0)
    m4[0, 0, :, 1] = 0
    feeds4 = dict(feeds, mask_index=m4)
    g = onnx.load_from_string(model)
    g.graph.node[0].input[3:4] = ["mask_index"] if len(g.graph.node[0].input) > 3 else []
    node = g.graph.node[0]
    while len(node.input) < 4:
        node.input.append("")
    node.input[3] = "mask_index"
    g.graph.input.append(helper.make_tensor_value_info("mask_index", TensorProto.INT32, m4.shape))
    model4 = g.SerializeToString()
    _, got = run_all(model4, feeds4, oracle=False, atol=5e-5)
    g.graph.input[-1].CopyFrom(helper.make_tensor_value_info("mask_index", TensorProto.INT32, (batch, s, s + p)))
    feeds3 = dict(feeds, mask_index=np.ascontiguousarray(m4[:, 0, p:p + s, :s + p]))
    want = ort_run(g.SerializeToString(), feeds3)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-4, atol=5e-5)


# --- ai.onnx Attention (opset 23) on the same kernels -------------------------------------------

def onnx_attention_case(batch, s, hq, hkv, d, l=None, rank=4, past=None, causal=0, mask=None, softcap=0.0,
                        present=False, seed=0):
    rng = _rng(seed)
    l = l or s
    if rank == 4:
        f = dict(Q=R(rng, batch, hq, s, d), K=R(rng, batch, hkv, l, d), V=R(rng, batch, hkv, l, d))
    else:
        f = dict(Q=R(rng, batch, s, hq * d), K=R(rng, batch, l, hkv * d), V=R(rng, batch, l, hkv * d))
    ins = ["Q", "K", "V", None, None, None]
    t = l + (past or 0)
    if mask == "2d":
        f["attn_mask"] = R(rng, s, t)
    elif mask == "4d":
        f["attn_mask"] = R(rng, batch, 1, s, t)
    if mask:
        ins[3] = "attn_mask"
    outs = ["Y"]
    if past is not None:
        f.update(past_key=R(rng, batch, hkv, past, d), past_value=R(rng, batch, hkv, past, d))
        ins[4:6] = ["past_key", "past_value"]
    if past is not None or present:
        outs += ["present_key", "present_value"]
    while ins[-1] is None:
        ins.pop()
    attrs = dict(is_causal=causal)
    if softcap:
        attrs["softcap"] = softcap
    if rank == 3:
        attrs.update(q_num_heads=hq, kv_num_heads=hkv)
    node = helper.make_node("Attention", [n or "" for n in ins], outs, name="attention_0", **attrs)
    vis = [helper.make_tensor_value_info(n, TensorProto.FLOAT, a.shape) for n, a in f.items()]
    g = helper.make_graph([node], "g", vis, [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 23)])
    m.ir_version = 10
    return m.SerializeToString(), f


ONNX_ATTENTION_CASES = {
    "bnsh": dict(batch=2, s=5, hq=4, hkv=4, d=16),
    "bnsh_gqa_causal": dict(batch=1, s=7, hq=12, hkv=4, d=64, causal=1),
    "rank3_gqa": dict(batch=2, s=5, hq=4, hkv=2, d=16, rank=3),
    "decode_past5_causal": dict(batch=2, s=1, hq=4, hkv=2, d=16, past=5, causal=1),
    "decode_past0": dict(batch=1, s=1, hq=4, hkv=1, d=16, past=0, causal=1),
    "prompt_present": dict(batch=1, s=7, hq=4, hkv=2, d=16, causal=1, present=True),
    "mask_2d": dict(batch=2, s=5, hq=4, hkv=4, d=16, mask="2d"),
    "mask_4d_past": dict(batch=2, s=3, hq=4, hkv=2, d=16, past=4, mask="4d"),
    "softcap": dict(batch=1, s=5, hq=4, hkv=4, d=16, softcap=3.0),
}


@pytest.mark.parametrize("case", sorted(ONNX_ATTENTION_CASES))
def test_onnx_attention(case):
    model, feeds = onnx_attention_case(**ONNX_ATTENTION_CASES[case])
    run_all(model, feeds)
