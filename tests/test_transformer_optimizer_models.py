"""End to end: BERT, GPT-2 and CLIP's vision tower (transformers, tiny random configs) exported with
torch.onnx, put through onnxruntime.transformers.optimizer at opt_level 1 and 2, then run on
kernels.wasm alone (no numpy fallback) against onnxruntime. The optimizer writes
SkipLayerNormalization, BiasGelu / FastGelu / QuickGelu (and, on exports it recognises, Attention
and EmbedLayerNormalization); see docs/onnxruntime-api.md, "onnxruntime's transformer ops".
Skipped where torch or transformers is not installed."""
import sys

import numpy as np
import pytest

import nnwasm
from model_builders import ort_run
from test_wasm_ops import WASM_ONLY, wasm_only_options

torch = pytest.importorskip("torch")
if "torchvision" not in sys.modules:
    # transformers imports torchvision when it finds it, and a torchvision built for another torch
    # fails at import ("operator torchvision::nms does not exist"); these models don't need it.
    try:
        import torchvision  # noqa: F401
    except Exception:
        sys.modules["torchvision"] = None
tf = pytest.importorskip("transformers")
optimizer = pytest.importorskip("onnxruntime.transformers.optimizer")

HIDDEN, HEADS = 64, 4


class TextModel(torch.nn.Module):
    def __init__(self, m, **kw):
        super().__init__()
        self.m, self.kw = m, kw

    def forward(self, input_ids, attention_mask):
        return self.m(input_ids=input_ids, attention_mask=attention_mask, **self.kw)[0]


class BertWithSegments(torch.nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, input_ids, attention_mask, token_type_ids):
        return self.m(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)[0]


class PixelModel(torch.nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, pixel_values):
        return self.m(pixel_values=pixel_values)[0]


def _bert():
    return TextModel(tf.BertModel(tf.BertConfig(vocab_size=99, hidden_size=HIDDEN, num_hidden_layers=2,
                                                num_attention_heads=HEADS, intermediate_size=96,
                                                max_position_embeddings=64)))


def _bert_eager():
    """Eager attention: the graph the optimizer's Attention and EmbedLayerNormalization fusions match."""
    return BertWithSegments(tf.BertModel(tf.BertConfig(vocab_size=99, hidden_size=HIDDEN, num_hidden_layers=2,
                                                       num_attention_heads=HEADS, intermediate_size=96,
                                                       max_position_embeddings=64, attn_implementation="eager")))


def _gpt2():
    return TextModel(tf.GPT2LMHeadModel(tf.GPT2Config(vocab_size=99, n_embd=HIDDEN, n_layer=2, n_head=HEADS,
                                                      n_positions=64, bos_token_id=0, eos_token_id=0)),
                     use_cache=False)


def _clip_vision():
    return PixelModel(tf.CLIPVisionModel(tf.CLIPVisionConfig(hidden_size=HIDDEN, num_hidden_layers=2,
                                                             num_attention_heads=HEADS, intermediate_size=96,
                                                             image_size=32, patch_size=8)))


MODELS = {"bert": (_bert, "bert"), "bert_eager": (_bert_eager, "bert"), "gpt2": (_gpt2, "gpt2"), "clip_vision": (_clip_vision, "clip")}


def _feeds(name, batch, seq):
    rng = np.random.default_rng(1)
    if name == "clip_vision":
        return {"pixel_values": rng.standard_normal((batch, 3, 32, 32)).astype(np.float32)}
    mask = np.ones((batch, seq), np.int64)
    mask[-1, seq // 2:] = 0 if seq > 1 else 1
    feeds = {"input_ids": rng.integers(0, 99, (batch, seq)).astype(np.int64), "attention_mask": mask}
    if name == "bert_eager":
        feeds["token_type_ids"] = rng.integers(0, 2, (batch, seq)).astype(np.int64)
    return feeds


@pytest.fixture(scope="module")
def optimized(tmp_path_factory):
    """name, opt_level -> (optimized model path, its op types)."""
    out, cache = tmp_path_factory.mktemp("optimizer"), {}

    def get(name, level):
        if (name, level) not in cache:
            make, model_type = MODELS[name]
            torch.manual_seed(0)
            module = make().eval()
            feeds = _feeds(name, 2, 7)
            path = out / f"{name}.onnx"
            if not path.exists():
                dyn = {k: {0: "batch", 1: "seq"} if k != "pixel_values" else {0: "batch"} for k in feeds}
                with torch.no_grad():
                    torch.onnx.export(module, tuple(torch.from_numpy(v) for v in feeds.values()), str(path),
                                      input_names=list(feeds), output_names=["y"], dynamic_axes=dyn,
                                      opset_version=17, dynamo=False)
            m = optimizer.optimize_model(str(path), model_type=model_type, num_heads=HEADS, hidden_size=HIDDEN,
                                         opt_level=level)
            dst = out / f"{name}_opt{level}.onnx"
            m.save_model_to_file(str(dst))
            cache[name, level] = (str(dst), {(n.domain or "ai.onnx", n.op_type) for n in m.model.graph.node})
        return cache[name, level]
    return get


EMITS = {"bert": {"SkipLayerNormalization", "BiasGelu"},
         "bert_eager": {"SkipLayerNormalization", "BiasGelu", "EmbedLayerNormalization", "Attention"}, "gpt2": {"SkipLayerNormalization", "FastGelu"},
         "clip_vision": {"SkipLayerNormalization", "QuickGelu"}}


@pytest.mark.parametrize("level", [1, 2])
@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("batch,seq", [(2, 7), (1, 1)])
def test_optimized_model_on_wasm_alone(optimized, name, level, batch, seq):
    path, ops = optimized(name, level)
    ms = {op for domain, op in ops if domain == "com.microsoft"}
    assert EMITS[name] <= ms, f"the optimizer no longer emits {EMITS[name] - ms}"
    feeds = _feeds(name, batch, 7 if name == "clip_vision" else seq)
    try:
        sess = nnwasm.InferenceSession(path, wasm_only_options(None), providers=WASM_ONLY)
    except nnwasm.NotImplementedOp as e:
        # com.microsoft Attention is helper gqa's: until it lands, it must be all WASM refuses here
        refused = [line for line in str(e).splitlines()[1:] if line.strip()]
        assert refused and all("(op com.microsoft::Attention," in line for line in refused), str(e)
        pytest.xfail("com.microsoft Attention has no WASM lowering on this branch")
    assert {p for _, _, p in sess.get_provider_assignment()} == {"WasmExecutionProvider"}
    got, want = sess.run(None, feeds), ort_run(open(path, "rb").read(), feeds)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


def test_llama_export_norms_fuse_and_run_on_wasm_alone():
    """A transformers Llama exported by torch.onnx (RMSNorm spelled out, residual Adds) through
    nnwasm's own optimizer: every norm becomes SimplifiedLayerNormalization or
    SkipSimplifiedLayerNormalization (optimizer/norm_fusions.py), all on kernels.wasm, agreeing
    with onnxruntime on the unfused model."""
    import io
    torch.manual_seed(0)
    m = tf.LlamaForCausalLM(tf.LlamaConfig(vocab_size=128, hidden_size=HIDDEN, intermediate_size=96,
                                           num_hidden_layers=2, num_attention_heads=HEADS, num_key_value_heads=2,
                                           max_position_embeddings=64)).eval()
    ids = torch.randint(0, 128, (2, 7))
    mask = torch.ones(2, 7, dtype=torch.int64)
    f = io.BytesIO()
    with torch.no_grad():
        torch.onnx.export(TextModel(m, use_cache=False), (ids, mask), f, input_names=["input_ids", "attention_mask"],
                          dynamo=False, opset_version=17)
    feeds = {"input_ids": ids.numpy(), "attention_mask": mask.numpy()}
    sess = nnwasm.InferenceSession(f.getvalue(), wasm_only_options(None), providers=WASM_ONLY)
    ops = [op for _, op, p in sess.get_provider_assignment()]
    assert {p for _, _, p in sess.get_provider_assignment()} == {"WasmExecutionProvider"}
    assert ops.count("SkipSimplifiedLayerNormalization") == 4 and ops.count("SimplifiedLayerNormalization") == 1
    assert "ReduceMean" not in ops and "Pow" not in ops
    np.testing.assert_allclose(sess.run(None, feeds)[0], ort_run(f.getvalue(), feeds)[0], rtol=1e-4, atol=1e-4)
