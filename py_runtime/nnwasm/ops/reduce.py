"""Reduce* ops, ArgMax, ArgMin, CumSum and CumProd. Axes are an attribute until they become an
input (ReduceSum at opset 13, the others at 18), together with noop_with_empty_axes."""
from . import shapes as S
from .casting import widened
from .registry import op

AXES_INPUT_SINCE = {"ReduceSum": 13}      # every other Reduce* takes axes as an input from 18


def reduce_axes(node, consts):
    """(axes or None for 'all/none', known) for a Reduce node."""
    if node.opset < AXES_INPUT_SINCE.get(node.op_type, 18):
        return S.ints_attr(node, "axes"), True
    if S.get(node.inputs, 1) in (None, ""):
        return None, True
    axes = S.const_ints(consts, 1)
    return axes, axes is not None


def noop(node):
    return node.opset >= AXES_INPUT_SINCE.get(node.op_type, 18) and node.attr("noop_with_empty_axes", 0)


def reduce_shape(node, xs, axes):
    if xs is None:
        return None
    if not axes:
        if noop(node):
            return xs
        axes = range(len(xs))
    axes = set(S.axes(node, list(axes), len(xs)))
    if node.attr("keepdims", 1):
        return tuple(1 if i in axes else d for i, d in enumerate(xs))
    return tuple(d for i, d in enumerate(xs) if i not in axes)


def infer_reduce(node, inputs, consts):
    x = S.need(node, inputs, 0)
    axes, known = reduce_axes(node, consts)
    if not known:
        r = S.rank(x)
        return [(x.dtype, (None,) * r if r is not None and node.attr("keepdims", 1) else None)]
    return [(x.dtype, reduce_shape(node, S.shape(x), axes))]


def _fill(np, x, low):
    """The identity of max (low=True) or min over x's dtype: what an empty reduction gives."""
    if x.dtype == np.bool_:
        return not low
    if x.dtype.kind == "f":
        return -np.inf if low else np.inf
    info = np.iinfo(x.dtype)
    return info.min if low else info.max


def _log_sum_exp(np, x, axes, keep):
    if x.size == 0:
        return np.log(np.sum(np.exp(x), axis=axes, keepdims=keep))
    m = np.max(x, axis=axes, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    out = np.log(np.sum(np.exp(x - m), axis=axes, keepdims=True)) + m
    return out if keep else np.squeeze(out, axis=axes)


REDUCERS = {
    "ReduceSum": lambda np, x, axes, keep: np.sum(x, axis=axes, keepdims=keep, dtype=x.dtype),
    # over an empty axis: 0, as onnxruntime gives (numpy's mean would be 0/0 = NaN)
    "ReduceMean": lambda np, x, axes, keep: (np.mean(x, axis=axes, keepdims=keep) if x.size else
                                            np.sum(x, axis=axes, keepdims=keep, dtype=x.dtype)),
    "ReduceMax": lambda np, x, axes, keep: np.max(x, axis=axes, keepdims=keep, initial=_fill(np, x, True)),
    "ReduceMin": lambda np, x, axes, keep: np.min(x, axis=axes, keepdims=keep, initial=_fill(np, x, False)),
    "ReduceProd": lambda np, x, axes, keep: np.prod(x, axis=axes, keepdims=keep, dtype=x.dtype),
    "ReduceL1": lambda np, x, axes, keep: np.sum(np.abs(x), axis=axes, keepdims=keep, dtype=x.dtype),
    "ReduceL2": lambda np, x, axes, keep: np.sqrt(np.sum(x * x, axis=axes, keepdims=keep)),
    "ReduceSumSquare": lambda np, x, axes, keep: np.sum(x * x, axis=axes, keepdims=keep, dtype=x.dtype),
    "ReduceLogSum": lambda np, x, axes, keep: np.log(np.sum(x, axis=axes, keepdims=keep)),
    "ReduceLogSumExp": _log_sum_exp,
}


def _reducer(name, since, fn):
    def kernel(node, x, axes=None):
        import numpy as np
        if node.opset < AXES_INPUT_SINCE.get(name, 18):
            axes = S.ints_attr(node, "axes")
        elif axes is not None:
            axes = [int(a) for a in axes.tolist()]
        if not axes:
            if noop(node):
                return x
            axes = range(x.ndim)
        axes = tuple(sorted(S.axes(node, list(axes), x.ndim)))
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.asarray(fn(np, x, axes, bool(node.attr("keepdims", 1)))).astype(x.dtype, copy=False)
    kernel.__name__ = name
    op(name, since, infer_reduce)(widened(kernel))


for _name, _fn in REDUCERS.items():
    _reducer(_name, 1, _fn)
    _reducer(_name, AXES_INPUT_SINCE.get(_name, 18), _fn)


def infer_arg(node, inputs, consts):
    x = S.need(node, inputs, 0)
    xs = S.shape(x)
    if xs is None:
        return [(S.INT64, None)]
    a = S.axis(node, node.attr("axis", 0), len(xs))
    if node.attr("keepdims", 1):
        return [(S.INT64, tuple(1 if i == a else d for i, d in enumerate(xs)))]
    return [(S.INT64, tuple(d for i, d in enumerate(xs) if i != a))]


def _arg(name, fn):
    @op(name, 1, infer_arg)
    def kernel(node, x):
        import numpy as np
        a = node.attr("axis", 0) % x.ndim
        if node.attr("select_last_index", 0):
            i = x.shape[a] - 1 - fn(np, np.flip(x, axis=a), a)
        else:
            i = fn(np, x, a)
        if node.attr("keepdims", 1):
            i = np.expand_dims(i, a)
        return i.astype(np.int64)
    kernel.__name__ = name


_arg("ArgMax", lambda np, x, a: np.argmax(x, axis=a))
_arg("ArgMin", lambda np, x, a: np.argmin(x, axis=a))


def infer_cumulative(node, inputs, consts):
    x, ax = S.need(node, inputs, 0), S.need(node, inputs, 1)
    if S.numel(S.shape(ax)) not in (None, 1) or S.rank(ax) not in (None, 0, 1):
        S.fail(node, f"axis must be a scalar or one value, got shape {list(S.shape(ax))}")
    a = S.const_scalar(consts, 1)
    if a is not None and S.rank(x) is not None:
        S.axis(node, int(a), S.rank(x))
    return [(x.dtype, S.shape(x))]


def _cumulative(name, since, fn, identity):
    def kernel(node, x, axis):
        """exclusive=1 shifts in the identity (each output leaves its own element out); reverse=1
        accumulates from the end."""
        import numpy as np
        if axis.size != 1:
            S.fail(node, f"axis must be one value, got {axis.size}")
        a = S.axis(node, int(axis.reshape(-1)[0]), x.ndim)
        rev = bool(node.attr("reverse", 0))
        y = np.flip(x, a) if rev else x
        if node.attr("exclusive", 0) and y.shape[a]:
            head = np.full((*y.shape[:a], 1, *y.shape[a + 1:]), identity, x.dtype)
            y = np.concatenate([head, np.take(y, range(y.shape[a] - 1), axis=a)], axis=a)
        with np.errstate(all="ignore"):
            y = fn(np, y, a).astype(x.dtype)
        return np.flip(y, a) if rev else y
    kernel.__name__ = name
    op(name, since, infer_cumulative)(kernel)


for _since in (11, 14):      # 14 adds float16/bfloat16
    _cumulative("CumSum", _since, lambda np, y, a: np.cumsum(y, axis=a, dtype=y.dtype), 0)
_cumulative("CumProd", 26, lambda np, y, a: np.cumprod(y, axis=a, dtype=y.dtype), 1)
