"""Constant, ConstantOfShape, Range, Cast, CastLike, Identity, Dropout (inference)."""
import math

from ..symbolic import Sym

from .. import dtypes
from ..tensor import TensorData
from . import casting
from . import shapes as S
from .elementwise import infer_unary
from .registry import op

FLOAT32 = dtypes.FLOAT32
STRING = dtypes.BY_NAME["object"]

# Constant's value_* attributes: dtype, and whether the value is a list (1-D) or a scalar.
CONSTANT_ATTRS = {
    "value_float": (FLOAT32, False), "value_floats": (FLOAT32, True),
    "value_int": (S.INT64, False), "value_ints": (S.INT64, True),
    "value_string": (STRING, False), "value_strings": (STRING, True),
}


def constant_attr(node):
    present = [k for k in ("value", "sparse_value", *CONSTANT_ATTRS) if k in node.attrs]
    if len(present) != 1:
        S.fail(node, f"needs exactly one value attribute, got {present or 'none'}")
    name = present[0]
    if name in ("value", "sparse_value") and not isinstance(node.attrs[name], TensorData):
        S.unsupported(node, f"attribute {name} of type {type(node.attrs[name]).__name__}")
    return name, node.attrs[name]


def infer_constant(node, inputs, consts):
    name, v = constant_attr(node)
    if isinstance(v, TensorData):
        return [(v.dtype, v.shape)]
    dt, is_list = CONSTANT_ATTRS[name]
    return [(dt, (len(v),) if is_list else ())]


@op("Constant", 1, infer_constant)
def constant(node):
    import numpy as np
    name, v = constant_attr(node)
    if isinstance(v, TensorData):
        return v.to_numpy().copy()
    dt = CONSTANT_ATTRS[name][0]
    return np.array(v, dtype=object if dt == STRING else dt.name)


def fill_value(node):
    v = node.attr("value")
    if v is None:
        return FLOAT32, 0.0
    if not isinstance(v, TensorData) or v.numel != 1:
        S.fail(node, "attribute value must be a one-element tensor")
    return v.dtype, v.tolist()[0]


def infer_constant_of_shape(node, inputs, consts):
    shp = S.need(node, inputs, 0)
    dt = fill_value(node)[0]
    target = S.const_ints(consts, 0)
    if target is not None:
        if min(target, default=0) < 0:
            S.fail(node, f"shape {target} has negative dims")
        return [(dt, tuple(target))]
    ss = S.shape(shp)
    return [(dt, (None,) * ss[0] if ss is not None and len(ss) == 1 and S.known(ss[0]) else None)]


@op("ConstantOfShape", 9, infer_constant_of_shape)
def constant_of_shape(node, shape):
    import numpy as np
    dt, v = fill_value(node)
    return np.full([int(d) for d in shape.tolist()], v, dtype=dt.name)


def range_length(start, limit, delta):
    if delta == 0:
        raise ValueError("delta is 0")
    if any(isinstance(v, Sym) for v in (start, limit)) and isinstance(delta, int):
        # a symbolic dim's range (positions up to a past length): an expression, guarded on its sign
        n = limit - start if delta == 1 else (limit - start + delta - (1 if delta > 0 else -1)) // delta
        return n if n >= 0 else 0
    return max(int(math.ceil((limit - start) / delta)), 0)


def infer_range(node, inputs, consts):
    for i in range(3):
        s = S.shape(S.need(node, inputs, i))
        if s is not None and S.numel(s) not in (None, 1):
            S.fail(node, f"input {i} must be a scalar, got shape {list(s)}")
    dt = S.same_dtype(node, inputs)
    vals = [S.const_scalar(consts, i) for i in range(3)]
    if None in vals:
        return [(dt, (None,))]
    if vals[2] == 0:
        S.fail(node, "delta must not be 0")
    return [(dt, (range_length(*vals),))]


@op("Range", 11, infer_range)
def range_(node, start, limit, delta):
    import numpy as np
    s, l, d = (v.reshape(-1)[0] for v in (start, limit, delta))
    if d == 0:
        S.fail(node, "delta must not be 0")
    n = range_length(float(s), float(l), float(d)) if start.dtype.kind == "f" else range_length(int(s), int(l), int(d))
    return (s + np.arange(n, dtype=start.dtype) * d).astype(start.dtype)


def infer_cast(node, inputs, consts):
    x = S.need(node, inputs, 0)
    return [(S.dtype_attr(node, "to"), S.shape(x))]


def cast_array(x, dt, saturate=True, round_mode="up"):
    import numpy as np
    if dt.ml_dtypes or dtypes.of_numpy(x.dtype) is None or dtypes.of_numpy(x.dtype).ml_dtypes:
        if x.dtype == object:
            x = cast_array(x, dtypes.FLOAT32)
        return casting.to_type(x, dt, saturate, round_mode) if dt != STRING else cast_array(x.astype("float32"), dt)
    if dt == STRING:
        return np.array([_float_str(v) if isinstance(v, float) else str(v) for v in x.reshape(-1).tolist()],
                        dtype=object).reshape(x.shape)
    if x.dtype == object:   # strings to numbers: numpy parses "1e3", "NaN", "-INF"
        return np.array([float(v) for v in x.reshape(-1)]).astype(dt.name).reshape(x.shape)
    return x.astype(dt.name)


def _float_str(v):
    return "NaN" if math.isnan(v) else ("INF" if v > 0 else "-INF") if math.isinf(v) else repr(v)


@op("Cast", 6, infer_cast)
def cast(node, x):
    return cast_array(x, S.dtype_attr(node, "to"), bool(node.attr("saturate", 1)), node.attr("round_mode", "up"))


@op("CastLike", 15, lambda node, inputs, consts: [(S.need(node, inputs, 1).dtype,
                                                  S.shape(S.need(node, inputs, 0)))])
def cast_like(node, x, like):
    return cast_array(x, dtypes.of_numpy(like.dtype), bool(node.attr("saturate", 1)), node.attr("round_mode", "up"))


@op("Identity", 1, lambda node, inputs, consts: [S.typed(S.need(node, inputs, 0).dtype, S.shape(inputs[0]),
                                                           inputs[0].kind)])
def identity(node, x):
    return x


def infer_dropout(node, inputs, consts):
    x = S.need(node, inputs, 0)
    mask = x.dtype if node.opset < 10 else S.BOOL
    return [(x.dtype, S.shape(x)), (mask, S.shape(x))][:max(1, len(node.outputs))]


def _dropout(node, x, ratio, training):
    import numpy as np
    if training and ratio != 0:
        S.unsupported(node, "training-mode Dropout (random) is not supported")
    mask = np.ones(x.shape, dtype=x.dtype if node.opset < 10 else np.bool_)
    return (x, mask) if len(node.outputs) > 1 else (x,)


@op("Dropout", 7, infer_dropout)
def dropout_7(node, x):
    return _dropout(node, x, node.attr("ratio", 0.5), False)


@op("Dropout", 12, infer_dropout)
def dropout_12(node, x, ratio=None, training_mode=None):
    ratio = 0.5 if ratio is None else float(ratio.reshape(-1)[0])
    return _dropout(node, x, ratio, training_mode is not None and bool(training_mode.reshape(-1)[0]))
