"""The speed suite's second, untuned export of each model (issue 16, "An independent harness ..."):
the seven bench models written by hand as plain torch nn.Modules, as people write them outside
torchvision and transformers, with seeded random weights, and exported the ways people export
them (the TorchScript exporter at several opsets, the dynamo exporter that torch.onnx.export uses
by default since torch 2.9). build_scripts/build_bench_models.py lists them (the one list of the
suite's models, names ending in "_alt") and caches them next to the bench's own exports.

| model | written as | exported with |
|---|---|---|
| efficientnet_lite0_alt | MBConv blocks, ReLU6 (F.relu6), no SE, flatten head | TorchScript, opset 10 (ReLU6 = Clip with attributes) |
| mobilenet_v2_alt | inverted residuals, nn.ReLU6, x.mean((2, 3)) head | dynamo (opset 18) |
| squeezenet1_1_alt | Fire modules, ceil-mode max pools, x.view(x.size(0), -1) head | TorchScript, opset 13 |
| resnet50_alt | Bottleneck blocks, torch.flatten head | TorchScript, opset 17 |
| bert_4l_alt | 4 layers, hidden 256, 4 heads, FFN 1024: attention written out (view/transpose, q @ k^T / sqrt(d), masked_fill, softmax, @ v), GELU written out (erf), LayerNorm written out (mean, var, sqrt), pooled output (first token, Linear, Tanh) | TorchScript, opset 14 |
| *_int8_qdq_alt, *_int8_dynamic_alt | onnxruntime.quantization of the two above, as the bench's own | |

Random weights: convolutions and linear layers rescaled to unit output variance on a random input
(as build_bench_models.py does for torchvision's: random init otherwise drives MobileNetV2's
activations into denormals) and BatchNorm statistics drawn at random, so that folding them is real
work for the exporter or the runtime.
"""
import math
import warnings

IMAGE = {"x": ("float32", [1, 3, 224, 224])}
SEQ = 128


def _torch():
    import torch
    return torch


# --- convolutional nets ------------------------------------------------------------------------

def _conv_bn(nn, cin, cout, k, stride=1, groups=1, act=None):
    layers = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
    if act is not None:
        layers.append(act())
    return nn.Sequential(*layers)


def efficientnet_lite0():
    torch = _torch()
    nn, F = torch.nn, torch.nn.functional

    class ReLU6(nn.Module):
        def forward(self, x):
            return F.relu6(x)

    class MBConv(nn.Module):
        def __init__(self, cin, cout, expand, k, stride):
            super().__init__()
            mid = cin * expand
            self.expand = _conv_bn(nn, cin, mid, 1, act=ReLU6) if expand != 1 else None
            self.dw = _conv_bn(nn, mid, mid, k, stride, groups=mid, act=ReLU6)
            self.project = _conv_bn(nn, mid, cout, 1)
            self.residual = stride == 1 and cin == cout

        def forward(self, x):
            y = self.expand(x) if self.expand is not None else x
            y = self.project(self.dw(y))
            return x + y if self.residual else y

    class EfficientNetLite0(nn.Module):
        # (expand, kernel, stride, out channels, repeats): EfficientNet-B0's stages; Lite: no SE, ReLU6
        STAGES = [(1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3), (6, 5, 1, 112, 3),
                  (6, 5, 2, 192, 4), (6, 3, 1, 320, 1)]

        def __init__(self):
            super().__init__()
            self.stem = _conv_bn(nn, 3, 32, 3, 2, act=ReLU6)
            blocks, cin = [], 32
            for e, k, s, c, n in self.STAGES:
                for i in range(n):
                    blocks.append(MBConv(cin, c, e, k, s if i == 0 else 1))
                    cin = c
            self.blocks = nn.Sequential(*blocks)
            self.head = _conv_bn(nn, cin, 1280, 1, act=ReLU6)
            self.fc = nn.Linear(1280, 1000)

        def forward(self, x):
            x = self.head(self.blocks(self.stem(x)))
            x = F.adaptive_avg_pool2d(x, 1)
            return self.fc(torch.flatten(x, 1))
    return EfficientNetLite0()


def mobilenet_v2():
    torch = _torch()
    nn = torch.nn

    class InvertedResidual(nn.Module):
        def __init__(self, cin, cout, stride, t):
            super().__init__()
            mid = cin * t
            layers = [] if t == 1 else [_conv_bn(nn, cin, mid, 1, act=nn.ReLU6)]
            layers += [_conv_bn(nn, mid, mid, 3, stride, groups=mid, act=nn.ReLU6), _conv_bn(nn, mid, cout, 1)]
            self.body = nn.Sequential(*layers)
            self.residual = stride == 1 and cin == cout

        def forward(self, x):
            return x + self.body(x) if self.residual else self.body(x)

    class MobileNetV2(nn.Module):
        SETTINGS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                    (6, 320, 1, 1)]

        def __init__(self):
            super().__init__()
            layers, cin = [_conv_bn(nn, 3, 32, 3, 2, act=nn.ReLU6)], 32
            for t, c, n, s in self.SETTINGS:
                for i in range(n):
                    layers.append(InvertedResidual(cin, c, s if i == 0 else 1, t))
                    cin = c
            layers.append(_conv_bn(nn, cin, 1280, 1, act=nn.ReLU6))
            self.features = nn.Sequential(*layers)
            self.dropout = nn.Dropout(0.2)
            self.fc = nn.Linear(1280, 1000)

        def forward(self, x):
            return self.fc(self.dropout(self.features(x).mean((2, 3))))
    return MobileNetV2()


def squeezenet1_1():
    torch = _torch()
    nn = torch.nn

    class Fire(nn.Module):
        def __init__(self, cin, squeeze, e1, e3):
            super().__init__()
            self.squeeze = nn.Conv2d(cin, squeeze, 1)
            self.e1 = nn.Conv2d(squeeze, e1, 1)
            self.e3 = nn.Conv2d(squeeze, e3, 3, padding=1)
            self.relu = nn.ReLU(inplace=True)

        def forward(self, x):
            x = self.relu(self.squeeze(x))
            return torch.cat([self.relu(self.e1(x)), self.relu(self.e3(x))], 1)

    class SqueezeNet11(nn.Module):
        def __init__(self):
            super().__init__()
            pool = lambda: nn.MaxPool2d(3, 2, ceil_mode=True)  # noqa: E731
            self.features = nn.Sequential(
                nn.Conv2d(3, 64, 3, 2), nn.ReLU(inplace=True), pool(),
                Fire(64, 16, 64, 64), Fire(128, 16, 64, 64), pool(),
                Fire(128, 32, 128, 128), Fire(256, 32, 128, 128), pool(),
                Fire(256, 48, 192, 192), Fire(384, 48, 192, 192), Fire(384, 64, 256, 256), Fire(512, 64, 256, 256))
            self.classifier = nn.Sequential(nn.Dropout(0.5), nn.Conv2d(512, 1000, 1), nn.ReLU(inplace=True),
                                            nn.AdaptiveAvgPool2d(1))

        def forward(self, x):
            x = self.classifier(self.features(x))
            return x.view(x.size(0), -1)
    return SqueezeNet11()


def resnet50():
    torch = _torch()
    nn = torch.nn

    class Bottleneck(nn.Module):
        def __init__(self, cin, width, stride):
            super().__init__()
            cout = width * 4
            self.c1 = _conv_bn(nn, cin, width, 1, act=nn.ReLU)
            self.c2 = _conv_bn(nn, width, width, 3, stride, act=nn.ReLU)
            self.c3 = _conv_bn(nn, width, cout, 1)
            self.down = _conv_bn(nn, cin, cout, 1, stride) if stride != 1 or cin != cout else None
            self.relu = nn.ReLU()

        def forward(self, x):
            skip = self.down(x) if self.down is not None else x
            return self.relu(self.c3(self.c2(self.c1(x))) + skip)

    class ResNet50(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = _conv_bn(nn, 3, 64, 7, 2, act=nn.ReLU)
            self.pool = nn.MaxPool2d(3, 2, 1)
            blocks, cin = [], 64
            for width, n, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
                for i in range(n):
                    blocks.append(Bottleneck(cin, width, stride if i == 0 else 1))
                    cin = width * 4
            self.blocks = nn.Sequential(*blocks)
            self.fc = nn.Linear(2048, 1000)

        def forward(self, x):
            x = self.blocks(self.pool(self.stem(x)))
            x = nn.functional.adaptive_avg_pool2d(x, (1, 1))
            return self.fc(torch.flatten(x, 1))
    return ResNet50()


def unit_outputs(model, *inputs):
    """Rescales each Conv2d/Linear so that its output has unit variance on `inputs` (LSUV-like), in
    place: torchvision's random init makes MobileNetV2's activations vanish (its depthwise fan counts
    every channel) into denormals by the last layers (logits ~1e-9), which no trained model has.
    build_bench_models.py's torchvision models and the hand-written ones below."""
    torch = _torch()

    def rescale(module, inputs, out):
        s = out.std()
        module.weight.data /= s
        if module.bias is not None:
            module.bias.data /= s
        return out / s
    hooks = [m.register_forward_hook(rescale) for m in model.modules()
             if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear))]
    with torch.no_grad():
        model.eval()(*inputs)
    for h in hooks:
        h.remove()
    return model


def _randomize(model, spec):
    """BatchNorm statistics at random, then each conv / linear rescaled to unit output variance on a
    random input (unit_outputs: no denormals, logits of a trained net's size)."""
    torch = _torch()
    g = torch.Generator().manual_seed(1)
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            c = m.num_features
            m.running_mean.copy_(0.1 * torch.randn(c, generator=g))
            m.running_var.copy_(0.5 + torch.rand(c, generator=g))
            m.weight.data.copy_(1 + 0.1 * torch.randn(c, generator=g))
            m.bias.data.copy_(0.1 * torch.randn(c, generator=g))
    return unit_outputs(model, *_example(spec))


# --- the BERT-like encoder ------------------------------------------------------------------------

def bert_4l(layers=4, hidden=256, heads=4, ffn=1024, vocab=30522, positions=512):
    torch = _torch()
    nn = torch.nn

    class LayerNorm(nn.Module):
        def __init__(self, d, eps=1e-12):
            super().__init__()
            self.weight = nn.Parameter(1 + 0.1 * torch.randn(d))
            self.bias = nn.Parameter(0.1 * torch.randn(d))
            self.eps = eps

        def forward(self, x):
            mean = x.mean(-1, keepdim=True)
            var = ((x - mean) ** 2).mean(-1, keepdim=True)
            return self.weight * (x - mean) / torch.sqrt(var + self.eps) + self.bias

    def gelu(x):
        return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))

    class SelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.h, self.d = heads, hidden // heads
            self.query, self.key, self.value = (nn.Linear(hidden, hidden) for _ in range(3))
            self.out = nn.Linear(hidden, hidden)

        def forward(self, x, mask):
            b, s, _ = x.shape
            q = self.query(x).view(b, s, self.h, self.d).transpose(1, 2)
            k = self.key(x).view(b, s, self.h, self.d).transpose(1, 2)
            v = self.value(x).view(b, s, self.h, self.d).transpose(1, 2)
            scores = q @ k.transpose(-2, -1) / math.sqrt(self.d)
            scores = scores.masked_fill(mask == 0, -1e9)
            p = scores.softmax(dim=-1)
            y = (p @ v).transpose(1, 2).contiguous().view(b, s, hidden)
            return self.out(y)

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn, self.ln1 = SelfAttention(), LayerNorm(hidden)
            self.fc1, self.fc2, self.ln2 = nn.Linear(hidden, ffn), nn.Linear(ffn, hidden), LayerNorm(hidden)

        def forward(self, x, mask):
            x = self.ln1(x + self.attn(x, mask))
            return self.ln2(x + self.fc2(gelu(self.fc1(x))))

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.words, self.positions = nn.Embedding(vocab, hidden), nn.Embedding(positions, hidden)
            self.ln = LayerNorm(hidden)
            self.layers = nn.ModuleList(Layer() for _ in range(layers))
            self.pool = nn.Linear(hidden, hidden)

        def forward(self, input_ids, attention_mask):
            pos = torch.arange(input_ids.shape[1], device=input_ids.device)
            x = self.ln(self.words(input_ids) + self.positions(pos)[None])
            mask = attention_mask[:, None, None, :]
            for layer in self.layers:
                x = layer(x, mask)
            return torch.tanh(self.pool(x[:, 0]))
    model = Encoder()
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.Linear):   # BERT's init: N(0, 0.02)
                m.weight.normal_(0, 0.02)
                m.bias.normal_(0, 0.02)
            elif isinstance(m, nn.Embedding):
                m.weight.normal_(0, 0.02)
    return model


# --- export ---------------------------------------------------------------------------------------

def _example(spec):
    torch = _torch()
    args = []
    for _, (dtype, shape) in spec.items():
        if dtype == "int64":
            args.append(torch.randint(0, 1000, shape, generator=torch.Generator().manual_seed(2)))
        else:
            args.append(torch.randn(shape, generator=torch.Generator().manual_seed(2)))
    return args


def export(model, spec, path, opset, dynamo):
    torch = _torch()
    args = _example(spec)
    if "attention_mask" in spec:
        args[list(spec).index("attention_mask")] = torch.ones(spec["attention_mask"][1], dtype=torch.int64)
    kw = {"external_data": False, "optimize": True} if dynamo else {"do_constant_folding": True}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(model.eval(), tuple(args), str(path), input_names=list(spec), output_names=["y"],
                          opset_version=opset, dynamo=dynamo, **kw)
    return spec


# name -> (module maker, input spec, opset, dynamo exporter?)
EXPORTS = {
    "efficientnet_lite0_alt": (efficientnet_lite0, IMAGE, 10, False),
    "mobilenet_v2_alt": (mobilenet_v2, IMAGE, 18, True),
    "squeezenet1_1_alt": (squeezenet1_1, IMAGE, 13, False),
    "resnet50_alt": (resnet50, IMAGE, 17, False),
    "bert_4l_alt": (bert_4l, {"input_ids": ("int64", [1, SEQ]), "attention_mask": ("int64", [1, SEQ])}, 14, False),
}


def builder(name):
    """build_bench_models.py's builder(path, built) -> input spec for one of EXPORTS."""
    def build(path, built):
        torch = _torch()
        make, spec, opset, dynamo = EXPORTS[name]
        torch.manual_seed(0)
        model = make()
        if spec is IMAGE:
            _randomize(model, spec)
        return export(model, spec, path, opset, dynamo)
    return build
