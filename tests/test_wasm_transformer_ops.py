"""onnxruntime's transformer norms, activations, embeddings and rotary embedding (ops/contrib_transformer.py,
wasm/lower/contrib_transformer.py): each op as a single-node model on the numpy provider and on
kernels.wasm alone, against onnxruntime, on the shapes the optimizer's and onnxruntime-genai's
models use (batch 1-2, sequence 1 and 7, hidden 64-768 and odd sizes); bad attributes and shapes
are refused naming the node."""
import numpy as np
import onnx
import pytest
from onnx import helper

import nnwasm
from model_builders import rand
from test_wasm_ops import check

MS = "com.microsoft"
NP = {np.dtype("float32"): onnx.TensorProto.FLOAT, np.dtype("int32"): onnx.TensorProto.INT32,
      np.dtype("int64"): onnx.TensorProto.INT64}


def model(op, inputs, feeds, inits, n_out=1, domain=MS, opset=17, **attrs):
    """A one-node model: inputs names in order ("" = omitted); feeds/inits name -> array."""
    keep = [True] * n_out if isinstance(n_out, int) else n_out     # or which outputs, by position
    outs = [f"Y{i}" if k else "" for i, k in enumerate(keep)]
    node = helper.make_node(op, inputs, outs, domain=domain, name="the_node", **attrs)
    g = helper.make_graph([node], "g",
                          [helper.make_tensor_value_info(k, NP[v.dtype], v.shape) for k, v in feeds.items()],
                          [helper.make_tensor_value_info(o, onnx.TensorProto.INT32 if (op, i) == (
                              "EmbedLayerNormalization", 1) else onnx.TensorProto.FLOAT, None)
                           for i, o in enumerate(outs) if o],
                          [onnx.numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(MS, 1)])
    m.ir_version = 8
    return m.SerializeToString()


def refused(m, feeds, match, providers=("NumpyExecutionProvider",)):
    """Creation or the run fails with an nnwasm error naming the node."""
    with pytest.raises(nnwasm.NnwasmError, match=match) as e:
        nnwasm.InferenceSession(m, providers=list(providers)).run(None, feeds)
    assert "the_node" in str(e.value)


SHAPES = [(1, 1, 64), (2, 7, 64), (1, 7, 768), (2, 1, 37), (3, 5)]


# ---- SkipLayerNormalization / SkipSimplifiedLayerNormalization ---------------------------------

@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("variant", ["plain", "beta_bias_outs", "skip2d", "skip1sh", "sum_only"])
def test_skip_layer_norm(shape, variant):
    h = shape[-1]
    x = rand(*shape)
    skip_shape = {"skip2d": shape[-2:], "skip1sh": (1, *shape[-2:])}.get(variant, shape)
    if len(shape) == 2 and variant in ("skip2d", "skip1sh"):
        skip_shape = shape
    feeds = {"X": x, "S": rand(*skip_shape, seed=1)}
    inits = {"G": rand(h, seed=2) + 1}
    names = ["X", "S", "G"]
    outs = 1
    if variant == "beta_bias_outs":
        inits.update(B=rand(h, seed=3), BI=rand(h, seed=4))
        names += ["B", "BI"]
        outs = 4
    if variant == "sum_only":
        inits["BI"] = rand(h, seed=4)
        names += ["", "BI"]
        outs = [True, False, False, True]
    check(model("SkipLayerNormalization", names, feeds, inits, outs, epsilon=1e-5), feeds, atol=2e-5)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("bias,outs", [(False, 1), (True, 4), (True, [True, False, True, True]),
                                       (False, [True, False, False, True])])   # onnxruntime-genai's form
def test_skip_simplified_layer_norm(shape, bias, outs):
    h = shape[-1]
    feeds = {"X": rand(*shape), "S": rand(*shape, seed=1)}
    inits = {"G": rand(h, seed=2) + 1}
    names = ["X", "S", "G"]
    if bias:
        inits["BI"] = rand(h, seed=4)
        names.append("BI")
    check(model("SkipSimplifiedLayerNormalization", names, feeds, inits, outs), feeds, atol=2e-5)


def test_skip_layer_norm_large_mean():
    """Two-pass statistics: a residual stream far from zero keeps its precision."""
    feeds = {"X": rand(2, 7, 64) + 300, "S": rand(2, 7, 64, seed=1)}
    check(model("SkipLayerNormalization", ["X", "S", "G"], feeds, {"G": rand(64, seed=2)}), feeds, atol=1e-3,
          rtol=1e-3)


@pytest.mark.parametrize("gamma,skip,match", [
    ((63,), (2, 7, 64), "gamma"),
    ((64,), (2, 6, 64), "skip"),
    ((64,), (3, 7, 64), "skip"),
])
def test_skip_layer_norm_bad_shapes(gamma, skip, match):
    feeds = {"X": rand(2, 7, 64), "S": rand(*skip, seed=1)}
    refused(model("SkipLayerNormalization", ["X", "S", "G"], feeds, {"G": rand(*gamma, seed=2)}), feeds, match)


def test_skip_layer_norm_rank4_refused():
    feeds = {"X": rand(1, 2, 7, 64), "S": rand(1, 2, 7, 64, seed=1)}
    refused(model("SkipLayerNormalization", ["X", "S", "G"], feeds, {"G": rand(64, seed=2)}), feeds, "2-D or 3-D")


# ---- SimplifiedLayerNormalization (ai.onnx) and RMSNormalization --------------------------------

@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("outs", [1, 2])
def test_simplified_layer_norm(shape, outs):
    feeds = {"X": rand(*shape)}
    check(model("SimplifiedLayerNormalization", ["X", "G"], feeds, {"G": rand(shape[-1], seed=2)}, outs, domain="",
                epsilon=1e-6), feeds, atol=2e-5)


def test_simplified_layer_norm_axis1():
    feeds = {"X": rand(2, 7, 64)}
    check(model("SimplifiedLayerNormalization", ["X", "G"], feeds, {"G": rand(7, 64, seed=2)}, 2, domain="", axis=1),
          feeds, atol=2e-5)


def test_simplified_layer_norm_three_outputs_refused():
    feeds = {"X": rand(2, 7, 64)}
    m = model("SimplifiedLayerNormalization", ["X", "G"], feeds, {"G": rand(64, seed=2)}, 3, domain="")
    refused(m, feeds, "at most 2")


@pytest.mark.parametrize("shape", SHAPES)
def test_rms_normalization_23(shape):
    feeds = {"X": rand(*shape)}
    check(model("RMSNormalization", ["X", "G"], feeds, {"G": rand(shape[-1], seed=2)}, domain="", opset=23),
          feeds, atol=2e-5)


# ---- BiasGelu, FastGelu, QuickGelu ---------------------------------------------------------------

@pytest.mark.parametrize("shape", [(1, 1, 64), (2, 7, 96), (1, 7, 3072), (2, 7, 37)])
@pytest.mark.parametrize("op,bias", [("BiasGelu", True), ("FastGelu", True), ("FastGelu", False),
                                     ("QuickGelu", False)])
def test_gelus(op, bias, shape):
    feeds = {"X": rand(*shape) * 4}
    inits = {"B": rand(shape[-1], seed=1)} if bias else {}
    check(model(op, ["X", "B"] if bias else ["X"], feeds, inits), feeds, atol=2e-5)


def test_quick_gelu_alpha():
    feeds = {"X": rand(2, 7, 64) * 4}
    check(model("QuickGelu", ["X"], feeds, {}, alpha=1.5), feeds, atol=2e-5)


@pytest.mark.parametrize("op", ["BiasGelu", "FastGelu"])
@pytest.mark.parametrize("bias", [(63,), (7, 64)])
def test_gelu_bad_bias(op, bias):
    feeds = {"X": rand(2, 7, 64)}
    refused(model(op, ["X", "B"], feeds, {"B": rand(*bias, seed=1)}), feeds, "bias")


# ---- EmbedLayerNormalization ----------------------------------------------------------------------

def _eln_feeds(batch, seq, vocab, dtype=np.int32):
    rng = np.random.default_rng(3)
    return {"ids": rng.integers(0, vocab, (batch, seq)).astype(dtype),
            "segs": rng.integers(0, 2, (batch, seq)).astype(dtype),
            "mask": (rng.random((batch, seq)) > 0.3).astype(np.int32)}


@pytest.mark.parametrize("batch,seq,hidden", [(1, 1, 64), (2, 7, 64), (1, 7, 768), (2, 5, 37)])
@pytest.mark.parametrize("variant", ["full", "no_segment", "no_mask", "position_ids", "sum_out"])
def test_embed_layer_norm(batch, seq, hidden, variant):
    vocab = 50
    f = _eln_feeds(batch, seq, vocab)
    inits = {"we": rand(vocab, hidden, seed=1), "pe": rand(16, hidden, seed=2), "se": rand(2, hidden, seed=3),
             "g": rand(hidden, seed=4) + 1, "b": rand(hidden, seed=5)}
    names = ["ids", "segs", "we", "pe", "se", "g", "b", "mask"]
    feeds = {"ids": f["ids"], "segs": f["segs"], "mask": f["mask"]}
    outs = 2
    if variant == "no_segment":
        names[1] = names[4] = ""
        del feeds["segs"], inits["se"]
    if variant == "no_mask":
        names = names[:7]
        del feeds["mask"]
    if variant == "position_ids":
        names.append("pos")
        feeds["pos"] = np.random.default_rng(4).integers(0, 16, (batch, seq)).astype(np.int32)
        outs = 3
    if variant == "sum_out":
        outs = [True, False, True]
    check(model("EmbedLayerNormalization", names, feeds, inits, outs, epsilon=1e-12), feeds, atol=2e-5)


def test_embed_layer_norm_shared_position_ids():
    """position_ids [1, S], shared by the batch."""
    f = _eln_feeds(2, 7, 50)
    feeds = {"ids": f["ids"], "segs": f["segs"], "pos": np.array([[6, 5, 4, 3, 2, 1, 0]], np.int32)}
    inits = {"we": rand(50, 64, seed=1), "pe": rand(16, 64, seed=2), "se": rand(2, 64, seed=3),
             "g": rand(64, seed=4), "b": rand(64, seed=5)}
    check(model("EmbedLayerNormalization", ["ids", "segs", "we", "pe", "se", "g", "b", "", "pos"], feeds, inits, 3),
          feeds, atol=2e-5)


def test_embed_layer_norm_bad_id():
    f = _eln_feeds(2, 7, 50)
    f["ids"][1, 3] = 50
    inits = {"we": rand(50, 64, seed=1), "pe": rand(16, 64, seed=2), "se": rand(2, 64, seed=3),
             "g": rand(64, seed=4), "b": rand(64, seed=5)}
    m = model("EmbedLayerNormalization", ["ids", "segs", "we", "pe", "se", "g", "b", "mask"], f, inits, 2)
    refused(m, f, "outside")
    wasm = nnwasm.InferenceSession(m, providers=["WasmExecutionProvider"])
    with pytest.raises(nnwasm.NnwasmError, match="the_node"):
        wasm.run(None, f)
    f["ids"][1, 3] = -1      # onnxruntime refuses a negative id too (no wrapping, unlike Gather)
    with pytest.raises(nnwasm.NnwasmError, match="the_node"):
        wasm.run(None, f)
    f["ids"][1, 3] = 4
    np.testing.assert_allclose(wasm.run(None, f)[0],
                               nnwasm.InferenceSession(m, providers=["NumpyExecutionProvider"]).run(None, f)[0],
                               atol=2e-5)


def test_embed_layer_norm_bad_table():
    f = _eln_feeds(2, 7, 50)
    inits = {"we": rand(50, 64, seed=1), "pe": rand(16, 63, seed=2), "se": rand(2, 64, seed=3),
             "g": rand(64, seed=4), "b": rand(64, seed=5)}
    refused(model("EmbedLayerNormalization", ["ids", "segs", "we", "pe", "se", "g", "b", "mask"], f, inits, 2), f,
            "position_embedding")


# ---- RotaryEmbedding ------------------------------------------------------------------------------

def _caches(positions, half, seed=7):
    ang = np.random.default_rng(seed).random((positions, half)) * 6
    return np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)


@pytest.mark.parametrize("layout", ["bsd", "bnsh"])
@pytest.mark.parametrize("interleaved", [0, 1])
@pytest.mark.parametrize("batch,seq,heads,head,rd", [(1, 1, 4, 16, 0), (2, 7, 4, 16, 0), (1, 7, 12, 64, 0),
                                                      (2, 7, 2, 16, 8), (2, 1, 3, 12, 0)])
@pytest.mark.parametrize("pos_kind", ["matrix", "start"])
def test_ms_rotary_embedding(layout, interleaved, batch, seq, heads, head, rd, pos_kind):
    shape = (batch, seq, heads * head) if layout == "bsd" else (batch, heads, seq, head)
    cos, sin = _caches(32, (rd or head) // 2)
    pos = (np.random.default_rng(5).integers(0, 32, (batch, seq)) if pos_kind == "matrix"
           else np.array([3])).astype(np.int64)
    feeds = {"X": rand(*shape), "P": pos}
    attrs = dict(interleaved=interleaved)
    if rd or layout == "bsd":
        attrs["num_heads"] = heads
    if rd:
        attrs["rotary_embedding_dim"] = rd
    check(model("RotaryEmbedding", ["X", "P", "C", "S"], feeds, {"C": cos, "S": sin}, **attrs), feeds, atol=1e-6)


@pytest.mark.parametrize("interleaved", [0, 1])
@pytest.mark.parametrize("shape,heads,rd,cache", [((2, 4, 7, 16), 0, 0, "pos"), ((2, 7, 64), 4, 0, "pos"),
                                                  ((1, 7, 64), 4, 8, "pos"), ((2, 4, 7, 16), 0, 0, "bs"),
                                                  ((2, 7, 64), 4, 0, "bs")])
def test_onnx_rotary_embedding_23(shape, heads, rd, cache, interleaved):
    batch = shape[0]
    seq = shape[2] if len(shape) == 4 else shape[1]
    head = shape[3] if len(shape) == 4 else shape[2] // heads
    half = (rd or head) // 2
    feeds = {"X": rand(*shape)}
    names = ["X", "C", "S"]
    if cache == "pos":
        cos, sin = _caches(32, half)
        feeds["P"] = np.random.default_rng(5).integers(0, 32, (batch, seq)).astype(np.int64)
        names.append("P")
    else:
        cos, sin = (c.reshape(batch, seq, half) for c in _caches(batch * seq, half))
    feeds.update(C=cos, S=sin)
    attrs = dict(interleaved=interleaved)
    if heads:
        attrs["num_heads"] = heads
    if rd:
        attrs["rotary_embedding_dim"] = rd
    check(model("RotaryEmbedding", names, feeds, {}, domain="", opset=23, **attrs), feeds, atol=1e-6)


def test_ms_rotary_bad_position():
    cos, sin = _caches(8, 8)
    feeds = {"X": rand(1, 7, 64), "P": np.array([[0, 1, 2, 3, 4, 5, 8]], np.int64)}
    m = model("RotaryEmbedding", ["X", "P", "C", "S"], feeds, {"C": cos, "S": sin}, num_heads=4)
    refused(m, feeds, "outside")
    wasm = nnwasm.InferenceSession(m, providers=["WasmExecutionProvider"])
    with pytest.raises(nnwasm.NnwasmError, match="the_node"):
        wasm.run(None, feeds)
    feeds["P"][0, 6] = 6
    assert np.isfinite(wasm.run(None, feeds)[0]).all()


@pytest.mark.parametrize("attrs,match", [(dict(num_heads=5), "num_heads"),
                                         (dict(num_heads=4, rotary_embedding_dim=9), "rotary_embedding_dim"),
                                         (dict(num_heads=4, rotary_embedding_dim=8), "caches"),
                                         (dict(num_heads=4, is_packed_batching=1), "is_packed_batching")])
def test_ms_rotary_bad_attributes(attrs, match):
    cos, sin = _caches(8, 8)
    feeds = {"X": rand(1, 7, 64), "P": np.arange(7, dtype=np.int64)[None]}
    refused(model("RotaryEmbedding", ["X", "P", "C", "S"], feeds, {"C": cos, "S": sin}, **attrs), feeds, match)


# ---- the optimizer's RMSNorm and residual fusions (optimizer/norm_fusions.py) -----------------------

def test_rms_and_skip_norm_fusions_on_torch_export(tmp_path):
    """A Llama-style block as torch.onnx writes it (RMSNorm spelled out with Pow, ReduceMean, Sqrt,
    Div(1, .) and Muls; residual Adds before each norm) becomes SimplifiedLayerNormalization and
    Skip(Simplified)LayerNormalization, runs on kernels.wasm alone, agrees with onnxruntime on the
    unfused model, and the saved optimized model loads and agrees in onnxruntime too."""
    torch = pytest.importorskip("torch")
    import io
    from model_builders import ort_run
    from test_wasm_ops import WASM_ONLY, wasm_only_options

    class RMS(torch.nn.Module):
        def __init__(self, h):
            super().__init__()
            self.w = torch.nn.Parameter(torch.rand(h) + 0.5)

        def forward(self, x):
            return self.w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6))

    class Block(torch.nn.Module):
        def __init__(self, h):
            super().__init__()
            self.n1, self.n2, self.n3 = RMS(h), RMS(h), torch.nn.LayerNorm(h)
            self.l1, self.l2 = torch.nn.Linear(h, h), torch.nn.Linear(h, h)

        def forward(self, x):
            x = x + self.l1(self.n1(x))
            x = x + self.l2(self.n2(x))
            return self.n3(x + self.l1(x))

    torch.manual_seed(0)
    f, x = io.BytesIO(), torch.randn(2, 7, 64)
    torch.onnx.export(Block(64).eval(), (x,), f, opset_version=17, dynamo=False, input_names=["x"],
                      output_names=["y"])
    feeds = {"x": x.numpy()}
    so = wasm_only_options(None)
    so.optimized_model_filepath = str(tmp_path / "opt.onnx")
    sess = nnwasm.InferenceSession(f.getvalue(), so, providers=WASM_ONLY)
    ops = {op for _, op, p in sess.get_provider_assignment()}
    assert {"SimplifiedLayerNormalization", "SkipSimplifiedLayerNormalization", "SkipLayerNormalization"} <= ops
    assert not {"ReduceMean", "Pow", "Sqrt", "Div"} & ops
    want = ort_run(f.getvalue(), feeds)[0]
    np.testing.assert_allclose(sess.run(None, feeds)[0], want, atol=2e-5)
    np.testing.assert_allclose(ort_run((tmp_path / "opt.onnx").read_bytes(), feeds)[0], want, atol=2e-5)


def test_ms_rotary_heads_from_the_cache():
    """3-D input without num_heads: onnxruntime takes the head size from the caches (2 x their width)."""
    cos, sin = _caches(32, 8)
    feeds = {"X": rand(2, 7, 64), "P": np.random.default_rng(5).integers(0, 32, (2, 7)).astype(np.int64)}
    check(model("RotaryEmbedding", ["X", "P", "C", "S"], feeds, {"C": cos, "S": sin}), feeds, atol=1e-6)
