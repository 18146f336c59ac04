"""Activations and the softmax family. Results keep the input's element type."""
import math

from . import shapes as S
from .elementwise import infer_unary
from .registry import op


def _np():
    import numpy
    return numpy


def infer_prelu(node, inputs, consts):
    x, slope = S.need(node, inputs, 0), S.need(node, inputs, 1)
    out = S.broadcast(node, S.shape(x), S.shape(slope))
    if out is not None and len(out) > len(x.shape):
        S.fail(node, f"slope shape {list(slope.shape)} does not broadcast to input shape {list(x.shape)}")
    return [(S.same_dtype(node, inputs), S.shape(x) if S.shape(x) is not None else out)]


def infer_clip(node, inputs, consts):
    x = S.need(node, inputs, 0)
    for i in (1, 2):
        n = S.numel(S.shape(S.get(inputs, i)))
        if n is not None and n != 1:
            S.fail(node, f"min/max must be scalars, got shape {list(inputs[i].shape)}")
    return [(S.same_dtype(node, inputs), S.shape(x))]


def infer_softmax(node, inputs, consts):
    x = S.need(node, inputs, 0)
    S.axis(node, node.attr("axis", -1 if node.opset >= 13 else 1), S.rank(x))
    return [(x.dtype, S.shape(x))]


def _activation(name, since, fn):
    def kernel(node, x):
        np = _np()
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            return np.asarray(fn(np, node, x)).astype(x.dtype, copy=False)
    kernel.__name__ = name
    op(name, since, infer_unary)(kernel)


def _sigmoid(np, x):
    # exp of -|x| never overflows; both branches are exact in their half.
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _gelu(np, node, x):
    approx = node.attr("approximate", "none")
    if approx == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    if approx != "none":
        S.fail(node, f"unknown approximate={approx!r}")
    erf = np.frompyfunc(math.erf, 1, 1)(x.astype(np.float64) / math.sqrt(2)).astype(np.float64)
    return 0.5 * x * (1 + erf)


_SELU_ALPHA = 1.67326319217681884765625
_SELU_GAMMA = 1.05070102214813232421875

for _name, _since, _fn in [
    ("Relu", 6, lambda np, node, x: np.maximum(x, 0)),
    ("LeakyRelu", 6, lambda np, node, x: np.where(x >= 0, x, x * node.attr("alpha", 0.01))),
    ("Elu", 6, lambda np, node, x: np.where(x > 0, x, node.attr("alpha", 1.0) * np.expm1(x))),
    ("Selu", 6, lambda np, node, x: node.attr("gamma", _SELU_GAMMA) * np.where(
        x > 0, x, node.attr("alpha", _SELU_ALPHA) * np.expm1(x))),
    ("Celu", 12, lambda np, node, x: np.maximum(x, 0) + np.minimum(
        0, node.attr("alpha", 1.0) * np.expm1(x / node.attr("alpha", 1.0)))),
    ("ThresholdedRelu", 10, lambda np, node, x: np.where(x > node.attr("alpha", 1.0), x, 0)),
    ("Sigmoid", 6, lambda np, node, x: _sigmoid(np, x)),
    ("HardSigmoid", 6, lambda np, node, x: np.clip(
        x * node.attr("alpha", 0.2) + node.attr("beta", 0.5), 0, 1)),
    ("HardSwish", 14, lambda np, node, x: x * np.clip(x / 6 + 0.5, 0, 1)),
    ("Tanh", 6, lambda np, node, x: np.tanh(x)),
    ("Softplus", 1, lambda np, node, x: np.logaddexp(0, x)),
    ("Softsign", 1, lambda np, node, x: x / (1 + np.abs(x))),
    ("Mish", 18, lambda np, node, x: x * np.tanh(np.logaddexp(0, x))),
    ("Gelu", 20, _gelu),
]:
    _activation(_name, _since, _fn)


def infer_prelu_legacy(node, inputs, consts):
    """PRelu-1/6: slope is a scalar ([1]) or one value a channel ([C], along axis 1)."""
    x, slope = S.need(node, inputs, 0), S.need(node, inputs, 1)
    xs, ss = S.shape(x), S.shape(slope)
    if xs is not None and ss is not None and not _legacy_slope_fits(xs, ss):
        S.fail(node, f"slope shape {list(ss)} is neither [1] nor [C] for input shape {list(xs)} "
                     "(PRelu before opset 7 broadcasts a slope along the channel axis only)")
    return [(S.same_dtype(node, inputs), xs)]


def _legacy_slope_fits(xs, ss):
    n = 1
    for d in ss:
        n = n * d if isinstance(d, int) and isinstance(n, int) else None
    channels = xs[1] if len(xs) > 1 else None
    return n == 1 or n is None or (len(ss) == 1 and (channels is None or not isinstance(channels, int) or n == channels))


@op("PRelu", 1, infer_prelu_legacy)
def prelu_legacy(node, x, slope):
    np = _np()
    if slope.size != 1:   # one value a channel, along axis 1
        slope = slope.reshape((1, -1) + (1,) * (x.ndim - 2))
    return np.where(x < 0, x * slope, x).astype(x.dtype, copy=False)


@op("PRelu", 7, infer_prelu)
def prelu(node, x, slope):
    return _np().where(x < 0, x * slope, x).astype(x.dtype, copy=False)


@op("Clip", 6, infer_clip)
def clip_6(node, x):
    return _clip(x, node.attr("min", -math.inf), node.attr("max", math.inf))


@op("Clip", 11, infer_clip)
def clip_11(node, x, lo=None, hi=None):
    return _clip(x, lo, hi)


def _clip(x, lo, hi):
    # max then min: when min > max every value becomes max, as the spec says. A NaN bound clips
    # nothing, as in onnxruntime (std::max(x, NaN) is x).
    np = _np()
    if lo is not None and not np.isnan(np.asarray(lo, dtype=np.float64)).any():
        x = np.maximum(x, np.asarray(lo, dtype=x.dtype))
    if hi is not None and not np.isnan(np.asarray(hi, dtype=np.float64)).any():
        x = np.minimum(x, np.asarray(hi, dtype=x.dtype))
    return x


def _softmax_like(name, since, fn):
    def kernel(node, x):
        np = _np()
        a = node.attr("axis", -1 if since >= 13 else 1)
        a = a + x.ndim if a < 0 else a
        if x.size == 0:   # an empty axis (a decoder's empty past): nothing to normalise
            return x.copy()
        if since < 13:  # opsets 1-12: softmax over the input flattened to 2-D at axis
            flat = x.reshape(math.prod(x.shape[:a]), math.prod(x.shape[a:]))
            return fn(np, flat, 1).reshape(x.shape)
        return fn(np, x, a)
    kernel.__name__ = name
    op(name, since, infer_softmax)(kernel)


def _softmax(np, x, a):
    with np.errstate(invalid="ignore"):   # inf - inf is NaN, as the spec's reference gives
        e = np.exp(x - np.max(x, axis=a, keepdims=True))
    return e / np.sum(e, axis=a, keepdims=True)


def _log_softmax(np, x, a):
    with np.errstate(invalid="ignore"):
        z = x - np.max(x, axis=a, keepdims=True)
    return z - np.log(np.sum(np.exp(z), axis=a, keepdims=True))


def _hardmax(np, x, a):
    out = np.zeros_like(x)
    np.put_along_axis(out, np.expand_dims(np.argmax(x, axis=a), a), 1, axis=a)
    return out


for _since in (1, 13):
    _softmax_like("Softmax", _since, _softmax)
    _softmax_like("LogSoftmax", _since, _log_softmax)
    _softmax_like("Hardmax", _since, _hardmax)


def _swish(np, x, alpha):
    return x * _sigmoid(np, x * np.asarray(alpha, x.dtype))


def _shrink(np, node, x):
    lambd, bias = node.attr("lambd", 0.5), node.attr("bias", 0.0)
    return np.where(x > lambd, x - bias, np.where(x < -lambd, x + bias, 0))


_activation("Shrink", 9, _shrink)
_activation("Swish", 24, lambda np, node, x: _swish(np, x, node.attr("alpha", 1.0)))


def infer_swiglu(node, inputs, consts):
    a, b = S.need(node, inputs, 0), S.need(node, inputs, 1)
    sa, sb = S.shape(a), S.shape(b)
    if sa is not None and sb is not None:
        if len(sa) != len(sb):
            S.fail(node, f"A {list(sa)} and B {list(sb)} must have one shape (no broadcasting)")
        sa = tuple(S.merge_dims(node, p, q, "A and B") for p, q in zip(sa, sb))
    return [(S.same_dtype(node, inputs), sa if sa is not None else sb)]


@op("SwiGLU", 28, infer_swiglu)
def swiglu(node, a, b):
    """Swish(A) * B, A and B of one shape."""
    np = _np()
    if a.shape != b.shape:
        S.fail(node, f"A {list(a.shape)} and B {list(b.shape)} must have one shape (no broadcasting)")
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        return (_swish(np, a, node.attr("alpha", 1.0)) * b).astype(a.dtype, copy=False)
