"""Values that are not plain tensors: sequences and optionals, at the session boundary and between
providers.

Forms, by where a value lives (ir.ValueInfo.kind says which a value declares):
    run()'s feeds and results      ndarray | list of ndarrays | None (an empty optional)
    env (between partitions)       TensorData | Seq of TensorData | None
    the numpy provider             ndarray | Seq of ndarrays | None
as onnxruntime's Python API takes and returns them. An optional holding a value is that value.
"""
from . import dtypes
from .errors import InvalidArgument
from .ir import ValueInfo
from .tensor import TensorData

SEQUENCE, OPTIONAL, OPTIONAL_SEQUENCE = "sequence", "optional", "optional sequence"


class Seq(list):
    """A sequence value: a list of tensors (TensorData in env, ndarrays in the numpy provider).
    A class of its own so that a kernel's sequence result is not taken for an array."""


def is_optional(kind):
    return kind in (OPTIONAL, OPTIONAL_SEQUENCE)


def holds_sequence(kind):
    return kind in (SEQUENCE, OPTIONAL_SEQUENCE)


def ort_type(vi):
    """onnxruntime's type string of a value: "tensor(float)", "seq(tensor(float))",
    "optional(seq(tensor(float)))"."""
    t = vi.dtype.ort_type if vi.dtype else "unknown"
    if holds_sequence(vi.kind):
        t = f"seq({t})"
    return f"optional({t})" if is_optional(vi.kind) else t


def to_numpy(v):
    """env form -> numpy provider form."""
    if v is None:
        return None
    if isinstance(v, list):
        return Seq(t.to_numpy() for t in v)
    return v.to_numpy()


def from_numpy(v):
    """numpy provider form -> env form."""
    if v is None:
        return None
    if isinstance(v, list):
        return Seq(TensorData.from_numpy(a) for a in v)
    return TensorData.from_numpy(v)


def to_user(v):
    """env form -> what run() returns (writable arrays, as onnxruntime's)."""
    if v is None:
        return None
    if isinstance(v, list):
        return [to_user(t) for t in v]
    a = v.to_numpy()
    return a if a.flags.writeable else a.copy()


def from_user(name, value, vi):
    """A feed for graph input vi, checked against its declared kind and element type, in env
    form. InvalidArgument, naming the input, for a feed of another kind or element type. vi None:
    a tensor (a plan file's inputs)."""
    vi = vi if vi is not None else ValueInfo(name)
    kind = vi.kind
    if value is None:
        if is_optional(kind):
            return None
        raise InvalidArgument(f"input '{name}' is None, but the model declares it {ort_type(vi)}")
    if holds_sequence(kind):
        if not isinstance(value, (list, tuple)):
            raise InvalidArgument(f"input '{name}' is a {type(value).__name__}, but the model declares it "
                                  f"{ort_type(vi)}: feed a list of arrays")
        seq = Seq(_tensor(f"{name}[{k}]", v, vi.dtype) for k, v in enumerate(value))
        for k, t in enumerate(seq):
            if vi.dtype is not None and t.dtype != vi.dtype:
                raise InvalidArgument(f"input '{name}' element {k} has type {t.dtype.ort_type}, expected "
                                      f"{vi.dtype.ort_type} (the model declares {ort_type(vi)})")
        return seq
    t = _tensor(name, value, vi.dtype)
    if is_optional(kind) and vi.dtype is not None and t.dtype != vi.dtype:   # tensors: the session checks
        raise InvalidArgument(f"input '{name}' has type {t.dtype.ort_type}, expected {vi.dtype.ort_type}")
    return t


def _tensor(name, value, dtype):
    """A tensor feed as TensorData; a list or a scalar becomes an array of the declared element
    type, as in onnxruntime (a ragged list, such as arrays of different shapes fed where the model
    declares a tensor, is InvalidArgument)."""
    import numpy as np
    if value is None:
        raise InvalidArgument(f"input '{name}' is None, expected an array")
    if not isinstance(value, np.ndarray):
        want = dtypes.numpy_dtype(dtype) if dtype is not None and dtype.size else None
        try:
            value = np.asarray(value, dtype=want)
        except (ValueError, TypeError, OverflowError) as e:
            what = f"an array of {dtype.ort_type}" if dtype is not None else "an array"
            raise InvalidArgument(f"input '{name}' ({type(value).__name__}) can't be made {what}: {e}") from None
    arr = value
    if arr.dtype.kind == "V" and dtypes.of_numpy(arr.dtype) is None:
        raise InvalidArgument(f"input '{name}' is a {arr.dtype} array, which has no ONNX element type")
    try:   # a view, no copy: the feeds are read before run() returns
        return TensorData.from_numpy(arr, copy=False)
    except InvalidArgument as e:
        raise InvalidArgument(f"input '{name}': {e}") from None
