"""The optimizer's fusions on the forms other exporters and hand-written torch modules produce
(issue 16, "An independent harness ..."): attention written out (view/transpose or permute, scale
after or before q @ k^T, masked_fill or an additive [B, 1, 1, L] mask, torch's SDPA export),
LayerNorm written out (mean/var/sqrt, rsqrt, x.var), GELU written out (erf, tanh) and
F.gelu(approximate="tanh"), pooled heads, common subexpressions; and the CNN forms (ReLU6 as Clip
with attributes or inputs, Flatten or view heads, the dynamo exporter). Each checks that the fusion
happened (op types of the optimized model) and that every optimization level, the saved optimized
model in onnxruntime, and kernels.wasm agree with onnxruntime on the original model."""
import math

import numpy as np
import pytest
from onnx import helper

import nnwasm
from model_builders import graph_model, ort_run, rand
from test_optimizer import NUMPY, agree, ops

torch = pytest.importorskip("torch")
nn, F = torch.nn, torch.nn.functional

HIDDEN, HEADS = 32, 4
D = HIDDEN // HEADS


def export(module, args, tmp_path, opset=14, dynamo=False, names=None):
    names = names or [f"x{i}" for i in range(len(args))]
    path = tmp_path / "m.onnx"
    kw = {"external_data": False} if dynamo else {"do_constant_folding": True}
    with torch.no_grad():
        torch.onnx.export(module.eval(), tuple(args), str(path), input_names=names, output_names=["y"],
                          opset_version=opset, dynamo=dynamo, **kw)
    return path.read_bytes(), {n: a.numpy() for n, a in zip(names, args)}


def on_wasm(model, feeds):
    """kernels.wasm alone (no numpy fallback): its answers against onnxruntime's, and its op types."""
    so = nnwasm.SessionOptions()
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    sess = nnwasm.InferenceSession(model, so)
    for got, want in zip(sess.run(None, feeds), ort_run(model, feeds)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    return [op for _, op, _ in sess.get_provider_assignment()]


# --- common subexpressions -----------------------------------------------------------------------

def test_cse_merges_duplicate_nodes(tmp_path):
    nodes = [helper.make_node("ReduceMean", ["X"], ["m1"], axes=[-1]), helper.make_node("ReduceMean", ["X"], ["m2"], axes=[-1]),
             helper.make_node("Sub", ["X", "m1"], ["d1"]), helper.make_node("Sub", ["X", "m2"], ["d2"]),
             helper.make_node("Pow", ["d1", "two"], ["p"]), helper.make_node("Pow", ["d2", "two_again"], ["p2"]),
             helper.make_node("Add", ["p", "p2"], ["Y"])]
    model = graph_model(nodes, {"X": rand(2, 5, 8)}, ["Y"], {"two": np.float32(2), "two_again": np.float32(2)})
    _, saved = agree(model, {"X": rand(2, 5, 8)}, tmp_path, providers=NUMPY)
    assert ops(saved) == ["ReduceMean", "Sub", "Pow", "Add"]


def test_cse_keeps_random_and_graph_outputs(tmp_path):
    nodes = [helper.make_node("Relu", ["X"], ["Y"]), helper.make_node("Relu", ["X"], ["Z"]),
             helper.make_node("RandomUniformLike", ["X"], ["r1"], seed=1.0), helper.make_node("RandomUniformLike", ["X"], ["r2"], seed=1.0),
             helper.make_node("Sub", ["r1", "r2"], ["W"])]
    model = graph_model(nodes, {"X": rand(3, 4)}, ["Y", "Z", "W"])
    sess = nnwasm.InferenceSession(model, providers=NUMPY)
    y, z, _ = sess.run(None, {"X": rand(3, 4)})
    np.testing.assert_array_equal(y, z)


# --- LayerNorm written out -----------------------------------------------------------------------

class HandLayerNorm(nn.Module):
    def __init__(self, form, d=HIDDEN, eps=1e-12):
        super().__init__()
        self.form, self.eps = form, eps
        self.weight = nn.Parameter(1 + 0.1 * torch.randn(d))
        self.bias = nn.Parameter(0.1 * torch.randn(d))

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        if self.form == "gamma_first":        # BERT-from-scratch tutorials
            var = ((x - mean) ** 2).mean(-1, keepdim=True)
            return self.weight * (x - mean) / torch.sqrt(var + self.eps) + self.bias
        if self.form == "rsqrt":
            var = (x - mean).pow(2).mean(-1, keepdim=True)
            return (x - mean) * torch.rsqrt(var + self.eps) * self.weight + self.bias
        var = x.var(-1, keepdim=True, unbiased=False)
        return (x - mean) / torch.sqrt(var + self.eps) * self.weight + self.bias


@pytest.mark.parametrize("opset", [14, 17])
@pytest.mark.parametrize("form", ["gamma_first", "rsqrt", "var"])
def test_hand_written_layer_norm(tmp_path, form, opset):
    torch.manual_seed(0)
    model, feeds = export(HandLayerNorm(form), [torch.randn(2, 7, HIDDEN)], tmp_path, opset)
    _, saved = agree(model, feeds, tmp_path, providers=NUMPY)
    assert ops(saved) == ["LayerNormalization"]
    assert on_wasm(model, feeds) == ["LayerNormalization"]


# --- GELU written out ----------------------------------------------------------------------------

GELUS = {
    "erf_by_hand": lambda x: 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0))),
    "erf_mul": lambda x: x * 0.5 * (1.0 + torch.erf(x * 0.7071067811865476)),
    "tanh_by_hand": lambda x: 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * torch.pow(x, 3)))),
    "tanh_cube_mul": lambda x: 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + x * x * x * 0.044715))),
    "F.gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
}


class Lambda(nn.Module):
    def __init__(self, fn, *modules):
        super().__init__()
        self.fn, self.mods = fn, nn.ModuleList(modules)   # modules fn uses: their weights are the model's

    def forward(self, *xs):
        return self.fn(*xs)


@pytest.mark.parametrize("opset", [14, 17])
@pytest.mark.parametrize("form", list(GELUS))
def test_hand_written_gelu(tmp_path, form, opset):
    model, feeds = export(Lambda(GELUS[form]), [torch.randn(3, 5, 16)], tmp_path, opset)
    _, saved = agree(model, feeds, tmp_path, providers=NUMPY)
    assert ops(saved) == (["Gelu"] if form.startswith("erf") else ["FastGelu"])
    assert on_wasm(model, feeds) == ops(saved)


# --- attention written out -----------------------------------------------------------------------

class HandAttention(nn.Module):
    """Self-attention as people write it; `form` picks the variant."""

    def __init__(self, form):
        super().__init__()
        self.form = form
        self.q, self.k, self.v, self.o = (nn.Linear(HIDDEN, HIDDEN) for _ in range(4))

    def forward(self, x, mask):
        b, s, _ = x.shape
        f = self.form
        if f in ("permute", "permute_inf"):
            q = self.q(x).reshape(b, s, HEADS, D).permute(0, 2, 1, 3)
            k = self.k(x).reshape(b, s, HEADS, D).permute(0, 2, 3, 1)
            v = self.v(x).reshape(b, s, HEADS, D).permute(0, 2, 1, 3)
            scores = torch.matmul(q, k) * (1.0 / math.sqrt(D))
        else:
            q = self.q(x).view(b, s, HEADS, D).transpose(1, 2)
            k = self.k(x).view(b, s, HEADS, D).transpose(1, 2)
            v = self.v(x).view(b, s, HEADS, D).transpose(1, 2)
            if f == "scale_q_first":
                scores = (q * D ** -0.5) @ k.transpose(-2, -1)
            elif f == "sdpa":
                bias = (1.0 - mask[:, None, None, :].float()) * -10000.0
                y = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
                return self.o(y.transpose(1, 2).reshape(b, s, HIDDEN))
            else:
                scores = q @ k.transpose(-2, -1) / math.sqrt(D)
        if f in ("masked_fill", "scale_q_first"):
            scores = scores.masked_fill(mask[:, None, None, :] == 0, -1e9)
        elif f == "permute_inf":
            scores = scores.masked_fill(mask[:, None, None, :] == 0, float("-inf"))
        elif f in ("additive", "permute"):
            scores = scores + (1.0 - mask[:, None, None, :].float()) * -10000.0
        p = scores.softmax(dim=-1)
        y = (p @ v).transpose(1, 2).contiguous().view(b, s, HIDDEN)
        return self.o(y)


def _attention_feeds():
    x = torch.randn(2, 7, HIDDEN)
    mask = torch.ones(2, 7, dtype=torch.int64)
    mask[1, 5:] = 0
    return [x, mask]


@pytest.mark.parametrize("form", ["masked_fill", "additive", "permute", "permute_inf", "scale_q_first", "sdpa", "no_mask"])
def test_hand_written_attention(tmp_path, form):
    torch.manual_seed(0)
    attn = HandAttention(form)
    if form == "no_mask":
        model, feeds = export(Lambda(lambda x: attn(x, None), attn), _attention_feeds()[:1], tmp_path, 14, names=["x"])
    else:
        model, feeds = export(attn, _attention_feeds(), tmp_path, 14, names=["x", "mask"])
    _, saved = agree(model, feeds, tmp_path, providers=NUMPY)
    assert "MultiHeadAttention" in ops(saved) and "Softmax" not in ops(saved) and "Transpose" not in ops(saved)
    wasm_ops = on_wasm(model, feeds)
    assert "MultiHeadAttention" in wasm_ops and "Softmax" not in wasm_ops


def test_attention_fill_not_minus_infinity_stays(tmp_path):
    """masked_fill with a value softmax does not treat as -inf (here 0) is no additive mask."""
    class Fill0(HandAttention):
        def forward(self, x, mask):
            b, s, _ = x.shape
            q, k, v = (lin(x).view(b, s, HEADS, D).transpose(1, 2) for lin in (self.q, self.k, self.v))
            scores = (q @ k.transpose(-2, -1) / math.sqrt(D)).masked_fill(mask[:, None, None, :] == 0, 0.0)
            return self.o((scores.softmax(-1) @ v).transpose(1, 2).reshape(b, s, HIDDEN))
    torch.manual_seed(0)
    model, feeds = export(Fill0("x"), _attention_feeds(), tmp_path, 14, names=["x", "mask"])
    _, saved = agree(model, feeds, tmp_path, providers=NUMPY)
    assert "MultiHeadAttention" not in ops(saved) and "Softmax" in ops(saved)


# --- a whole hand-written encoder and its pooled heads --------------------------------------------

def test_hand_written_encoder_is_fused(tmp_path):
    """bench/speed/alt_models.py's BERT-like encoder, small: every layer's attention, both LayerNorms,
    the GELU and the pooler fused; on kernels.wasm alone, like onnxruntime."""
    import sys
    from conftest import ROOT
    sys.path.insert(0, str(ROOT / "bench" / "speed"))
    import alt_models
    torch.manual_seed(0)
    enc = alt_models.bert_4l(layers=2, hidden=HIDDEN, heads=HEADS, ffn=64, vocab=100, positions=16)
    ids = torch.randint(0, 100, (1, 9))
    mask = torch.ones(1, 9, dtype=torch.int64)
    mask[0, 7:] = 0
    model, feeds = export(enc, [ids, mask], tmp_path, 14, names=["input_ids", "attention_mask"])
    _, saved = agree(model, feeds, tmp_path, providers=NUMPY)
    got = ops(saved)
    assert got.count("MultiHeadAttention") == 2 and got.count("Gelu") == 2
    assert got.count("LayerNormalization") + got.count("SkipLayerNormalization") == 5
    assert not {"Softmax", "Erf", "ReduceMean", "Sqrt", "Transpose", "Tanh"} & set(got), got
    assert "MultiHeadAttention" in on_wasm(model, feeds)


@pytest.mark.parametrize("head", ["first_token", "mean"])
def test_pooled_heads(tmp_path, head):
    lin = nn.Linear(HIDDEN, HIDDEN)
    fn = (lambda x: torch.tanh(lin(x[:, 0]))) if head == "first_token" else (lambda x: lin(x.mean(1)))
    model, feeds = export(Lambda(fn, lin), [torch.randn(1, 7, HIDDEN)], tmp_path, 14)
    _, saved = agree(model, feeds, tmp_path, providers=NUMPY)
    assert ops(saved) == (["Gather", "FusedGemm"] if head == "first_token" else ["ReduceMean", "Gemm"])


# --- convolutional export forms -------------------------------------------------------------------

class SmallCnn(nn.Module):
    def __init__(self, head):
        super().__init__()
        self.head = head
        self.c1, self.b1 = nn.Conv2d(3, 8, 3, 2, 1, bias=False), nn.BatchNorm2d(8)
        self.c2, self.b2 = nn.Conv2d(8, 8, 3, 1, 1, groups=8, bias=False), nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, 5)
        for b in (self.b1, self.b2):
            b.running_mean.normal_()
            b.running_var.uniform_(0.5, 1.5)

    def forward(self, x):
        x = F.relu6(self.b1(self.c1(x)))
        x = self.b2(self.c2(x))
        x = x * F.relu6(x + 3) / 6   # HardSwish written out
        if self.head == "flatten":
            return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))
        if self.head == "view":
            x = F.adaptive_avg_pool2d(x, 1)
            return self.fc(x.view(x.size(0), -1))
        return self.fc(x.mean((2, 3)))


@pytest.mark.parametrize("opset,dynamo,head", [(10, False, "flatten"), (11, False, "view"), (13, False, "view"),
                                               (17, False, "mean"), (18, True, "mean")])
def test_cnn_export_forms(tmp_path, opset, dynamo, head):
    torch.manual_seed(0)
    model, feeds = export(SmallCnn(head), [torch.randn(1, 3, 16, 16)], tmp_path, opset, dynamo)
    _, saved = agree(model, feeds, tmp_path, providers=NUMPY)
    got = ops(saved)
    assert got[:2] == ["FusedConv", "Conv"] or got[:2] == ["FusedConv", "FusedConv"], got
    assert not {"BatchNormalization", "Clip", "Shape", "Gather", "Concat", "Unsqueeze"} & set(got), got
    assert "HardSwish" in got or ("HardSigmoid" in got and got.count("Mul") == 1), got
    assert set(on_wasm(model, feeds)) <= {"FusedConv", "Conv", "HardSwish", "HardSigmoid", "Mul", "GlobalAveragePool",
                                          "ReduceMean", "Flatten", "Reshape", "Gemm"}


# --- torch.nn.MultiheadAttention and nn.TransformerEncoderLayer (optimizer/attention_views.py) -----

class TorchMha(nn.Module):
    def __init__(self, batch_first, need_weights):
        super().__init__()
        self.need_weights = need_weights
        self.mha = nn.MultiheadAttention(HIDDEN, HEADS, batch_first=batch_first)

    def forward(self, x):
        return self.mha(x, x, x, need_weights=self.need_weights)[0]


def _no_fastpath():
    torch.backends.mha.set_fastpath_enabled(False)   # the fused MHA op has no ONNX export


@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("need_weights", [False, True])
def test_torch_multihead_attention(tmp_path, batch_first, need_weights):
    _no_fastpath()
    torch.manual_seed(0)
    x = torch.randn(1, 7, HIDDEN) if batch_first else torch.randn(7, 1, HIDDEN)
    model, feeds = export(TorchMha(batch_first, need_weights), [x], tmp_path, 14)
    _, saved = agree(model, feeds, tmp_path, providers=NUMPY)
    assert "MultiHeadAttention" in ops(saved) and "Softmax" not in ops(saved), ops(saved)
    assert "MultiHeadAttention" in on_wasm(model, feeds)


@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("opset", [14, 17])
def test_torch_transformer_encoder_layer(tmp_path, batch_first, opset):
    _no_fastpath()
    torch.manual_seed(0)
    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = nn.TransformerEncoderLayer(HIDDEN, HEADS, 64, dropout=0.0, activation="gelu",
                                                    batch_first=batch_first)

        def forward(self, x, pad):
            return self.layer(x, src_key_padding_mask=pad)
    x = torch.randn(1, 7, HIDDEN) if batch_first else torch.randn(7, 1, HIDDEN)
    mask = torch.zeros(1, 7, dtype=torch.bool)
    mask[0, 5:] = True   # key padding
    model, feeds = export(Encoder(), [x, mask], tmp_path, opset)
    _, saved = agree(model, feeds, tmp_path, providers=NUMPY)
    got = ops(saved)
    assert "MultiHeadAttention" in got and "Softmax" not in got and "Gelu" in got, got
    assert not {"ReduceMean", "Erf"} & set(got), got
    assert "MultiHeadAttention" in on_wasm(model, feeds)


def test_torch_multihead_attention_batch_two_agrees(tmp_path):
    """Batch 2 with [S, B, E]: fused (batches as heads) or not, the answers are onnxruntime's."""
    _no_fastpath()
    torch.manual_seed(0)
    model, feeds = export(TorchMha(False, False), [torch.randn(7, 2, HIDDEN)], tmp_path, 14)
    agree(model, feeds, tmp_path, providers=NUMPY)
    on_wasm(model, feeds)
