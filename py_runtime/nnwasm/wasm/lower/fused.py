"""Lowerings of onnxruntime's fused contrib ops (com.microsoft FusedConv, FusedGemm) that the
optimizer emits: the conv2d / gemm kernels' clamp epilogue takes Relu and Clip; Sigmoid and Tanh
run as an in-place unary op after them, and FusedConv's residual Z as an in-place binary add."""
import math

from ...tensor import numel
from .conv import check_conv, emit_conv
from .elementwise import BINARY_KIND, emit_binary
from .linalg import check_gemm, gemm_args

UNARY_KIND = {"Sigmoid": 1, "Tanh": 2}


def _activation(node, params_of):
    """(clamp lo, clamp hi, unary kind or None), or None when kernels.wasm lacks the activation."""
    name = node.attr("activation", "")
    if name == "Relu":
        return 0.0, math.inf, None
    if name == "Clip":
        lo, hi = params_of(node)
        return (lo, hi, None) if lo <= hi else None
    if name in UNARY_KIND:
        return -math.inf, math.inf, UNARY_KIND[name]
    return None


def _conv_params(node):
    p = list(node.attr("activation_params", []))
    return (float(p[0]), float(p[1])) if len(p) == 2 else (math.nan, math.nan)


def check_fused_conv(node, g):
    if _activation(node, _conv_params) is None:
        return f"FusedConv activation {node.attr('activation', '')!r} has no WASM kernel"
    if len(node.inputs) > 3 and node.inputs[3] and g.values[node.inputs[3]].shape != g.values[node.outputs[0]].shape:
        return "FusedConv residual Z is broadcast"
    return check_conv(node, g)


def _epilogue(node, b, y, act):
    lo, hi, kind = act
    if kind is not None:
        b.emit("unary", kind=kind, x=y, y=y, count=numel(b.shape(y.name)), p0=0.0, p1=0.0)


def lower_fused_conv(node, b):
    act = _activation(node, _conv_params)
    z = node.inputs[3] if len(node.inputs) > 3 and node.inputs[3] else None
    y = b.ref(node.outputs[0])
    lo, hi = (act[0], act[1]) if z is None else (-math.inf, math.inf)
    emit_conv(node, b, y, lo, hi)
    if z is not None:
        emit_binary(b, BINARY_KIND["Add"], y, b.ref(z), y)
        if act[2] is None and (act[0], act[1]) != (-math.inf, math.inf):
            b.emit("unary", kind=0, x=y, y=y, count=numel(b.shape(y.name)), p0=act[0], p1=act[1])
    _epilogue(node, b, y, act)


def check_fused_gemm(node, g):
    if node.attr("activation", "") not in ("Relu", "Sigmoid", "Tanh"):
        return f"FusedGemm activation {node.attr('activation', '')!r} has no WASM kernel"
    return check_gemm(node, g)


def lower_fused_gemm(node, b):
    act = _activation(node, None)
    y = b.ref(node.outputs[0])
    b.emit("gemm", **gemm_args(node, b), y=y, act_min=act[0], act_max=act[1])
    _epilogue(node, b, y, act)
