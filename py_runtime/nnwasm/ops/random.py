"""RandomNormal, RandomUniform (and their -Like forms), Bernoulli, Multinomial.

Each run draws from a numpy Generator: seeded from the `seed` attribute when the node has one (so a
seeded node repeats its values run after run), else from fresh entropy, or, after nnwasm.set_seed(s),
from one generator seeded with s that every unseeded node advances (as onnxruntime's set_seed makes
its unseeded random ops reproducible from process start). The values are not
onnxruntime's or onnx's reference's (those use other generators); only their distribution is
specified.
"""
from .. import dtypes
from . import shapes as S
from .registry import op

_FLOATS = ("float16", "float32", "float64")
_FLOATS_22 = _FLOATS + ("bfloat16",)
# Bernoulli's output: any number or bool
_BERNOULLI_OUT = _FLOATS + ("bfloat16", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32",
                            "int64", "bool")


def _float_types(node):
    return _FLOATS_22 if node.opset >= 22 else _FLOATS


def _check(node, dt, allowed, what):
    if dt is not None and dt.name not in allowed:
        S.fail(node, f"{what} {dt.ort_name} is not one of {', '.join(dtypes.BY_NAME[a].ort_name for a in allowed)}")
    return dt


def _generator(node):
    import numpy as np
    seed = node.attr("seed")
    if seed is None:   # fresh entropy, unless nnwasm.set_seed gave one generator for them all
        from ..ortapi import _state
        if _state["seed"] is None:
            return np.random.default_rng()
        if _state.get("rng") is None:
            _state["rng"] = np.random.default_rng(_state["seed"] & 0xFFFFFFFFFFFFFFFF)
        return _state["rng"]
    if seed != seed or abs(seed) == float("inf"):
        S.fail(node, f"seed {seed} is not a finite number")
    return np.random.default_rng(int(seed) & 0xFFFFFFFFFFFFFFFF)


def _shape_attr(node):
    shape = S.ints_attr(node, "shape")
    if shape is None:
        S.fail(node, "attribute shape is required")
    if any(d < 0 for d in shape):
        S.fail(node, f"shape {shape} has a negative dim")
    return tuple(shape)


def _params(node):
    if node.op_type.startswith("RandomNormal"):
        scale = float(node.attr("scale", 1.0))
        if not scale >= 0:
            S.fail(node, f"scale {scale} must be >= 0")
        return float(node.attr("mean", 0.0)), scale
    low, high = float(node.attr("low", 0.0)), float(node.attr("high", 1.0))
    if not low <= high:
        S.fail(node, f"low {low} must be <= high {high}")
    return low, high


def infer_random(node, inputs, consts):
    _params(node)
    dt = _check(node, S.dtype_attr(node, "dtype", 1), _float_types(node), "dtype")
    return [(dt, _shape_attr(node))]


def infer_random_like(node, inputs, consts):
    _params(node)
    x = S.need(node, inputs, 0)
    dt = S.dtype_attr(node, "dtype") if node.attr("dtype") is not None else x.dtype
    _check(node, dt, _float_types(node), "output type")
    return [(dt, S.shape(x))]


def _draw(node, shape, dt):
    import numpy as np
    rng = _generator(node)
    a, b = _params(node)
    if node.op_type.startswith("RandomNormal"):
        v = rng.standard_normal(shape) * b + a
    else:
        v = rng.uniform(a, b, shape) if a < b else np.full(shape, a)
    return v.astype(dtypes.numpy_dtype(dt))


def _random(node):
    return _draw(node, _shape_attr(node), S.dtype_attr(node, "dtype", 1))


def _random_like(node, x):
    dt = S.dtype_attr(node, "dtype") if node.attr("dtype") is not None else dtypes.of_numpy(x.dtype)
    _check(node, dt, _float_types(node), "output type")
    return _draw(node, x.shape, dt)


for _since in (1, 22):
    op("RandomNormal", _since, infer_random)(_random)
    op("RandomUniform", _since, infer_random)(_random)
    op("RandomNormalLike", _since, infer_random_like)(_random_like)
    op("RandomUniformLike", _since, infer_random_like)(_random_like)


# --- Bernoulli ------------------------------------------------------------------------------------

def infer_bernoulli(node, inputs, consts):
    x = S.need(node, inputs, 0)
    _check(node, x.dtype, _float_types(node), "input type")
    dt = S.dtype_attr(node, "dtype") if node.attr("dtype") is not None else x.dtype
    _check(node, dt, _BERNOULLI_OUT, "output type")
    return [(dt, S.shape(x))]


@op("Bernoulli", 15, infer_bernoulli)
@op("Bernoulli", 22, infer_bernoulli)
def bernoulli(node, x):
    import numpy as np
    from .misc import cast_array
    dt = S.dtype_attr(node, "dtype") if node.attr("dtype") is not None else dtypes.of_numpy(x.dtype)
    p = np.asarray(x, dtype=np.float64)
    if np.isnan(p).any() or (p < 0).any() or (p > 1).any():
        from ..errors import InvalidArgument
        raise InvalidArgument(f"{node}: probabilities must lie in [0, 1]")
    draws = _generator(node).random(p.shape) < p
    return cast_array(draws.astype(np.float32), dt)


# --- Multinomial ----------------------------------------------------------------------------------

def _sample_size(node):
    n = node.attr("sample_size", 1)
    if not isinstance(n, int) or n < 1:
        S.fail(node, f"sample_size {n} must be a positive integer")
    return n


def _multinomial_dtype(node):
    dt = S.dtype_attr(node, "dtype", 6)
    if dt.name not in ("int32", "int64"):
        S.fail(node, f"dtype {dt.ort_name} must be int32 or int64")
    return dt


def infer_multinomial(node, inputs, consts):
    x = S.need(node, inputs, 0)
    _check(node, x.dtype, _float_types(node), "input type")
    xs = S.shape(x)
    if xs is not None and len(xs) != 2:
        S.fail(node, f"input must be [batch_size, class_size], got shape {list(xs)}")
    n = _sample_size(node)
    return [(_multinomial_dtype(node), None if xs is None else (xs[0], n))]


@op("Multinomial", 7, infer_multinomial)
@op("Multinomial", 22, infer_multinomial)
def multinomial(node, x):
    """x: unnormalised log-probabilities, one row per batch item; samples class indices."""
    import numpy as np
    from ..errors import InvalidArgument
    if x.ndim != 2 or x.shape[1] == 0:
        raise InvalidArgument(f"{node}: input must be [batch_size, class_size > 0], got shape {list(x.shape)}")
    n, dt = _sample_size(node), _multinomial_dtype(node)
    logits = x.astype(np.float64)
    top = logits.max(axis=1, keepdims=True)
    if not np.isfinite(top).all():
        raise InvalidArgument(f"{node}: each row needs a finite largest log-probability")
    cdf = np.cumsum(np.exp(logits - top), axis=1)
    cdf /= cdf[:, -1:]
    u = _generator(node).random((x.shape[0], n))
    idx = np.stack([np.searchsorted(cdf[b], u[b], side="right") for b in range(x.shape[0])]) \
        if x.shape[0] else np.zeros((0, n), dtype=np.int64)
    return np.minimum(idx, x.shape[1] - 1).astype(dt.name)
