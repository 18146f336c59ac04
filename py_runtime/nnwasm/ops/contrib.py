"""onnxruntime's contrib ops the optimizer emits (domain com.microsoft), so an optimized model
runs here and, saved with optimized_model_filepath, in onnxruntime:
  FusedConv  Y = act(Conv(X, W, B) + Z)   activation: Relu, Clip, Sigmoid, Tanh, LeakyRelu,
                                           HardSigmoid; activation_params: their numbers
  FusedGemm  Y = act(Gemm(A, B, C))        activation_alpha (LeakyRelu's alpha)
  Gelu       x * (1 + erf(x / sqrt 2)) / 2
  FastGelu   Gelu's tanh approximation of x + bias
  (MultiHeadAttention, GroupQueryAttention, Attention: ops/attention_contrib.py)
and LayerNormalization in the ai.onnx domain before opset 17 (onnxruntime registers it there as
a contrib op at every opset)."""
import math

from . import activations, conv, linalg, norm
from .elementwise import infer_unary
from .registry import register
from .shapes import unsupported

MS = "com.microsoft"


def apply_activation(np, name, params, y):
    """y (a float array) through one of FusedConv's activations, in place where it can."""
    if name == "Relu":
        return np.maximum(y, 0, out=y)
    if name == "Clip":
        return np.clip(y, params[0], params[1], out=y)
    if name == "Sigmoid":
        return activations._sigmoid(np, y).astype(y.dtype, copy=False)
    if name == "Tanh":
        return np.tanh(y, out=y)
    if name == "LeakyRelu":
        return np.where(y >= 0, y, y * params[0]).astype(y.dtype, copy=False)
    if name == "HardSigmoid":
        return np.clip(y * params[0] + params[1], 0, 1).astype(y.dtype, copy=False)
    raise ValueError(f"unknown activation {name!r}")


ACTIVATIONS = ("Relu", "Sigmoid", "Tanh", "LeakyRelu", "HardSigmoid", "Clip")


def _check_activation(node):
    if node.attr("activation", "") not in ACTIVATIONS:
        unsupported(node, f"activation {node.attr('activation', '')!r}")


def infer_fused_conv(node, inputs, consts):
    _check_activation(node)
    return conv.infer_conv(node, inputs[:3], consts[:3])


def fused_conv(node, x, w, b=None, z=None):
    import numpy as np
    y = np.array(conv.conv(node, x, w, b), copy=True)
    if z is not None:
        y += z
    return apply_activation(np, node.attr("activation"), node.attr("activation_params", []), y)


def infer_fused_gemm(node, inputs, consts):
    _check_activation(node)
    return linalg.infer_gemm(node, inputs, consts)


def fused_gemm(node, a, b, c=None):
    import numpy as np
    y = np.array(linalg.gemm(node, a, b, c), copy=True)
    name = node.attr("activation")
    params = [node.attr("activation_alpha", node.attr("leaky_relu_alpha", 0.01))]
    if name == "HardSigmoid":
        params = [node.attr("activation_alpha", 0.2), node.attr("activation_beta", 0.5)]
    return apply_activation(np, name, params, y)


def gelu(node, x):
    import numpy as np
    erf = np.frompyfunc(math.erf, 1, 1)(x.astype(np.float64) / math.sqrt(2)).astype(np.float64)
    return (0.5 * x * (1 + erf)).astype(x.dtype)


def fast_gelu(node, x, bias=None):
    import numpy as np
    if bias is not None:
        x = x + bias
    x64 = x.astype(np.float64)
    return (0.5 * x64 * (1 + np.tanh(math.sqrt(2 / math.pi) * (x64 + 0.044715 * x64 ** 3)))).astype(x.dtype)


def infer_fast_gelu(node, inputs, consts):
    from .contrib_transformer import infer_bias_act     # the bias is 1-D of the last dim, as BiasGelu's
    return infer_bias_act(node, inputs, consts)


register("FusedConv", 1, infer_fused_conv, fused_conv, MS)
register("FusedGemm", 1, infer_fused_gemm, fused_gemm, MS)
register("Gelu", 1, infer_unary, gelu, MS)
register("FastGelu", 1, infer_fast_gelu, fast_gelu, MS)
register("LayerNormalization", 1, norm.infer_layer_norm, norm.layer_norm)
