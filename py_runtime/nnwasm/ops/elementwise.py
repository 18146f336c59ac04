"""Elementwise math, comparison and logic ops with numpy broadcasting (opset 7+ semantics). Before
opset 7, Add/Sub/Mul/Div took `broadcast`/`axis` attributes: registered from opset 1 for the
cases that mean the same as numpy broadcasting (equal shapes, or a suffix-aligned broadcast)."""
import functools
import math

from . import shapes as S
from .registry import op


# --- infer -------------------------------------------------------------------------------------

def infer_unary(node, inputs, consts):
    x = S.need(node, inputs, 0)
    return [(x.dtype, S.shape(x))]


def infer_binary(node, inputs, consts):
    a, b = S.need(node, inputs, 0), S.need(node, inputs, 1)
    return [(S.same_dtype(node, inputs), S.broadcast(node, S.shape(a), S.shape(b)))]


def infer_variadic(node, inputs, consts):
    if not inputs or any(vi is None for vi in inputs):
        S.fail(node, "needs at least one input and no omitted inputs")
    return [(S.same_dtype(node, inputs), S.broadcast(node, *[S.shape(vi) for vi in inputs]))]


def infer_legacy_binary(node, inputs, consts):
    """Opset 1-6: without broadcast=1 the shapes are equal; with it, b aligns at `axis`, which is
    numpy broadcasting only when `axis` is absent or puts b at the end of a."""
    a, b = S.shape(S.need(node, inputs, 0)), S.shape(S.need(node, inputs, 1))
    if node.attr("broadcast", 0):
        axis = node.attr("axis")
        if axis is not None and (a is None or b is None or axis % max(len(a), 1) != len(a) - len(b)):
            S.unsupported(node, "opset < 7 broadcasting at an axis other than the trailing one")
    elif a is not None and b is not None and tuple(a) != tuple(b):
        S.fail(node, f"opset < 7 without broadcast needs equal shapes, got {list(a)} and {list(b)}")
    return infer_binary(node, inputs, consts)


def infer_compare(node, inputs, consts):
    return [(S.BOOL, infer_binary(node, inputs, consts)[0][1])]


def infer_pow(node, inputs, consts):
    a, b = S.need(node, inputs, 0), S.need(node, inputs, 1)
    return [(a.dtype, S.broadcast(node, S.shape(a), S.shape(b)))]


def infer_is(node, inputs, consts):
    return [(S.BOOL, S.shape(S.need(node, inputs, 0)))]


def infer_where(node, inputs, consts):
    c, x, y = (S.need(node, inputs, i) for i in range(3))
    if c.dtype is not None and c.dtype != S.BOOL:
        S.fail(node, f"condition must be bool, got {c.dtype.name}")
    return [(S.same_dtype(node, inputs, (1, 2)), S.broadcast(node, S.shape(c), S.shape(x), S.shape(y)))]


# --- numpy -------------------------------------------------------------------------------------

def _np():
    import numpy
    return numpy


def _binary(name, since, infer, fn):
    def kernel(node, a, b):
        np = _np()
        with np.errstate(all="ignore"):
            return fn(np, a, b)
    kernel.__name__ = name
    op(name, since, infer)(kernel)


def _unary(name, since, fn):
    def kernel(node, x):
        np = _np()
        with np.errstate(all="ignore"):
            return np.asarray(fn(np, x)).astype(x.dtype, copy=False)
    kernel.__name__ = name
    op(name, since, infer_unary)(kernel)


def _div(np, a, b):
    if a.dtype.kind in "iu":
        b = np.where(b == 0, 1, b)   # integer division by zero is undefined in ONNX; avoid numpy's warning path
        return ((a - np.fmod(a, b)) // b).astype(a.dtype)   # truncates toward zero, as C does
    return np.divide(a, b)


def _pow(np, a, b):
    if a.dtype.kind in "iu" or b.dtype.kind in "iu":
        return np.power(a.astype(np.float64), b.astype(np.float64)).astype(a.dtype)
    return np.power(a, b.astype(a.dtype))


def _mod(node, np, a, b):
    # fmod=0 on floats is invalid before opset 28; the sign-of-divisor result numpy gives is 28's.
    return np.fmod(a, b) if node.attr("fmod", 0) else np.mod(a, b)


for _name, _fn in {
    "Add": lambda np, a, b: np.add(a, b),
    "Sub": lambda np, a, b: np.subtract(a, b),
    "Mul": lambda np, a, b: np.multiply(a, b),
    "Div": _div,
    "And": lambda np, a, b: np.logical_and(a, b),
    "Or": lambda np, a, b: np.logical_or(a, b),
    "Xor": lambda np, a, b: np.logical_xor(a, b),
}.items():
    _binary(_name, 7, infer_compare if _name in ("And", "Or", "Xor") else infer_binary, _fn)
    if _name in ("Add", "Sub", "Mul", "Div"):
        _binary(_name, 1, infer_legacy_binary, _fn)

_binary("Pow", 7, infer_pow, _pow)
_binary("Pow", 1, infer_legacy_binary, _pow)

for _name, _since, _fn in [
    ("Equal", 7, lambda np, a, b: np.equal(a, b)),
    ("Less", 7, lambda np, a, b: np.less(a, b)),
    ("Greater", 7, lambda np, a, b: np.greater(a, b)),
    ("LessOrEqual", 12, lambda np, a, b: np.less_equal(a, b)),
    ("GreaterOrEqual", 12, lambda np, a, b: np.greater_equal(a, b)),
]:
    _binary(_name, _since, infer_compare, _fn)


@op("Mod", 10, infer_binary)
def mod(node, a, b):
    np = _np()
    with np.errstate(all="ignore"):
        return _mod(node, np, a, b)


# Opset 6 allows only equal shapes and 8 adds broadcasting; numpy broadcasting covers both.
def _variadic(name, fn):
    @op(name, 6, infer_variadic)
    def kernel(node, *xs):
        return fn(_np(), xs)
    kernel.__name__ = name


_variadic("Max", lambda np, xs: functools.reduce(np.maximum, xs))
_variadic("Min", lambda np, xs: functools.reduce(np.minimum, xs))
_variadic("Sum", lambda np, xs: functools.reduce(np.add, xs))
_variadic("Mean", lambda np, xs: (functools.reduce(np.add, xs) / len(xs)).astype(xs[0].dtype))


def _erf(np, x):
    # math.erf element by element: exact, and as fast as a vectorised series here (measured).
    return np.frompyfunc(math.erf, 1, 1)(x.astype(np.float64)).astype(x.dtype)


for _name, _since, _fn in [
    ("Neg", 6, lambda np, x: np.negative(x)),
    ("Abs", 6, lambda np, x: np.abs(x)),
    ("Sqrt", 6, lambda np, x: np.sqrt(x)),
    ("Exp", 6, lambda np, x: np.exp(x)),
    ("Log", 6, lambda np, x: np.log(x)),
    ("Reciprocal", 6, lambda np, x: np.reciprocal(x)),
    ("Floor", 6, lambda np, x: np.floor(x)),
    ("Ceil", 6, lambda np, x: np.ceil(x)),
    ("Erf", 9, _erf),
    ("Sign", 9, lambda np, x: np.sign(x)),
    ("Round", 11, lambda np, x: np.round(x)),    # half to even, as ONNX specifies
    ("Sin", 7, lambda np, x: np.sin(x)),
    ("Cos", 7, lambda np, x: np.cos(x)),
    ("Tan", 7, lambda np, x: np.tan(x)),
    ("Asin", 7, lambda np, x: np.arcsin(x)),
    ("Acos", 7, lambda np, x: np.arccos(x)),
    ("Atan", 7, lambda np, x: np.arctan(x)),
    ("Sinh", 9, lambda np, x: np.sinh(x)),
    ("Cosh", 9, lambda np, x: np.cosh(x)),
    ("Asinh", 9, lambda np, x: np.arcsinh(x)),
    ("Acosh", 9, lambda np, x: np.arccosh(x)),
    ("Atanh", 9, lambda np, x: np.arctanh(x)),
    ("Not", 1, lambda np, x: np.logical_not(x)),
]:
    _unary(_name, _since, _fn)


@op("IsNaN", 9, infer_is)
def is_nan(node, x):
    return _np().isnan(x)


@op("IsInf", 10, infer_is)
def is_inf(node, x):
    pos, neg = bool(node.attr("detect_positive", 1)), bool(node.attr("detect_negative", 1))
    return _np().isinf(x) & (((x > 0) & pos) | ((x < 0) & neg))


@op("Where", 9, infer_where)
def where(node, c, x, y):
    return _np().where(c, x, y)
