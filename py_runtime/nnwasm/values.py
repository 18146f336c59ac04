"""Values that are not plain tensors: sequences and optionals, at the session boundary and between
providers.

Forms, by where a value lives (ir.ValueInfo.kind says which a value declares):
    run()'s feeds and results      ndarray | list of ndarrays | None (an empty optional)
                                   (nnwasm.Tensor for ndarray without numpy: user_tensor.py)
    env (between partitions)       TensorData | Seq of TensorData | None
    the numpy provider             ndarray | Seq of ndarrays | None
as onnxruntime's Python API takes and returns them. An optional holding a value is that value.
"""
import array

from . import dtypes, user_tensor
from .errors import InvalidArgument
from .ir import ValueInfo
from .tensor import TensorData
from .user_tensor import Tensor, numpy_or_none

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


def to_user(v, as_numpy=None):
    """env form -> what run() returns: writable numpy arrays, as onnxruntime's, where numpy can be
    imported; nnwasm.Tensor (user_tensor.py) where it can't. as_numpy: whether it can, if the
    caller knows (a failed import is not cached: one try per run, not per output)."""
    if v is None:
        return None
    if as_numpy is None:
        as_numpy = numpy_or_none() is not None
    if isinstance(v, list):
        return [to_user(t, as_numpy) for t in v]
    if not as_numpy:
        return Tensor._of(v if type(v) is TensorData else TensorData(v.dtype, v.shape, v.data))
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
        seq = Seq(_tensor(f"{name}[{k}]", v, vi.dtype, None) for k, v in enumerate(value))
        for k, t in enumerate(seq):
            if vi.dtype is not None and t.dtype != vi.dtype:
                raise InvalidArgument(f"input '{name}' element {k} has type {t.dtype.ort_type}, expected "
                                      f"{vi.dtype.ort_type} (the model declares {ort_type(vi)})")
        return seq
    t = _tensor(name, value, vi.dtype, vi.shape)
    if is_optional(kind) and vi.dtype is not None and t.dtype != vi.dtype:   # tensors: the session checks
        raise InvalidArgument(f"input '{name}' has type {t.dtype.ort_type}, expected {vi.dtype.ort_type}")
    return t


def _tensor(name, value, dtype, shape):
    """A tensor feed as TensorData. numpy arrays as in onnxruntime; a list or a scalar becomes an
    array of the declared element type, as in onnxruntime (a ragged list, such as arrays of
    different shapes fed where the model declares a tensor, is InvalidArgument); an nnwasm.Tensor
    as it is; a buffer (bytes, array.array, memoryview) takes the declared type and shape
    (user_tensor.from_buffer). Without numpy, lists and scalars are converted in Python."""
    if value is None:
        raise InvalidArgument(f"input '{name}' is None, expected an array")
    if isinstance(value, TensorData):   # OrtValues' and the JS bridge's form
        return value
    if isinstance(value, Tensor):
        return value._td
    if isinstance(value, (bytes, bytearray, memoryview, array.array)):
        return user_tensor.from_buffer(f"input '{name}'", value, dtype, shape)
    np = numpy_or_none()
    if np is None:
        if user_tensor.is_buffer(value):
            return user_tensor.from_buffer(f"input '{name}'", value, dtype, shape)
        return user_tensor.from_values(f"input '{name}'", value, dtype)
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
    if shape is not None and not arr.flags.c_contiguous and (
            arr.ndim != len(shape) or any(isinstance(e, int) and g != e for g, e in zip(arr.shape, shape))):
        # refused before the copy that makes it contiguous: a broadcast view of 2**40 elements is
        # 4 TiB once copied (the session's shape check would refuse it after the copy)
        if arr.ndim != len(shape):   # the session's wording (session._check_feed)
            raise InvalidArgument(f"input '{name}' has rank {arr.ndim} (shape {list(arr.shape)}), "
                                  f"expected rank {len(shape)} (shape {list(shape)})")
        bad = [i for i, (g, e) in enumerate(zip(arr.shape, shape)) if isinstance(e, int) and g != e]
        raise InvalidArgument(f"input '{name}' has shape {list(arr.shape)}, expected {list(shape)} "
                              f"(mismatch at dimension {', '.join(map(str, bad))})")
    try:   # a view, no copy: the feeds are read before run() returns
        return TensorData.from_numpy(arr, copy=False)
    except InvalidArgument as e:
        raise InvalidArgument(f"input '{name}': {e}") from None
