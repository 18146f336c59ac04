"""nnwasm.Tensor: what run() returns where numpy is absent (Pyodide without its numpy package, a
page that never loads it), and the conversions that make feeds without numpy.

Where numpy can be imported, run() takes and returns numpy arrays, as onnxruntime does, and none
of this is used for results. Without it, every place onnxruntime gives an ndarray (run()'s
results, OrtValue.numpy(), IOBinding.copy_outputs_to_cpu()) gives a Tensor: shape, dtype (numpy's
name, a str), tolist(), the buffer protocol (Python 3.12+; `.data` is the same typed, shaped
memoryview on any version), and __array__, so np.asarray(t) works once numpy is there.

Feeds without numpy (docs/without-numpy.md): a Tensor; a buffer (array.array, a memoryview, cast to a
shape or not, bytes) whose 1-D contents take the input's declared shape; nested lists and
Python scalars, made the declared element type (as numpy's asarray(x, dtype) does)."""
import array
import struct
import sys

from . import dtypes
from .errors import InvalidArgument, Unsupported
from .tensor import TensorData, numel

# struct / memoryview format character -> ONNX element type ('l', 'n' by their size here)
_BY_FORMAT = {d.struct: d for d in dtypes.BY_NAME.values() if d.struct}
_BY_FORMAT.update({"c": dtypes.BY_NAME["uint8"],
                   "l": dtypes.BY_NAME["int64" if struct.calcsize("l") == 8 else "int32"],
                   "L": dtypes.BY_NAME["uint64" if struct.calcsize("L") == 8 else "uint32"],
                   "n": dtypes.BY_NAME["int64" if struct.calcsize("n") == 8 else "int32"],
                   "N": dtypes.BY_NAME["uint64" if struct.calcsize("N") == 8 else "uint32"]})
# buffers whose bytes are taken as the declared element type's, not as uint8 values
RAW_BYTES = (bytes, bytearray)


def numpy_or_none():
    """numpy if it can be imported (imported now if it was not), else None. A failed import is
    not remembered: numpy loaded later (micropip, pyodide.loadPackage) is used from then on."""
    np = sys.modules.get("numpy")
    if np is not None:
        return np
    try:
        import numpy as np
    except ImportError:
        return None
    return np


class Tensor:
    """A dense tensor without numpy: nnwasm.Tensor(data, shape=None, dtype=None).

    data: a buffer (array.array, memoryview, bytes: bytes need dtype), nested lists or a scalar;
    shape: the dims (default: the buffer's own shape, or the nesting of the lists); dtype: numpy's
    name of the element type ("float32", "int64"...; default: the buffer's format, or as numpy
    infers from Python values)."""
    __slots__ = ("_td",)

    def __init__(self, data, shape=None, dtype=None):
        dt = None
        if dtype is not None:
            dt = dtypes.from_name(str(getattr(dtype, "name", dtype)))
            if dt is None:
                raise InvalidArgument(f"nnwasm.Tensor: dtype {dtype!r} is not an ONNX element type")
        if isinstance(data, Tensor):
            data = data._td
        if isinstance(data, TensorData):
            td = data
        elif is_buffer(data):
            if isinstance(data, RAW_BYTES) and dt is None:
                raise InvalidArgument("nnwasm.Tensor: bytes hold no element type: give dtype")
            td = from_buffer("nnwasm.Tensor", data, dt, shape, declared_static=shape is not None)
        else:
            td = from_values("nnwasm.Tensor", data, dt)
        if shape is not None and tuple(shape) != td.shape:
            if numel(shape) != td.numel:
                raise InvalidArgument(f"nnwasm.Tensor: {td.numel} values don't fill shape {list(shape)}")
            td = td.reshaped(shape)
        if dt is not None and td.dtype != dt:
            td = from_values("nnwasm.Tensor", td.tolist(), dt).reshaped(td.shape)
        self._td = td

    @classmethod
    def _of(cls, td):
        t = object.__new__(cls)
        t._td = td
        return t

    @property
    def shape(self):
        return self._td.shape

    @property
    def dtype(self):
        """numpy's name of the element type ("float32"); "object" for strings."""
        return self._td.dtype.name

    @property
    def ndim(self):
        return len(self._td.shape)

    @property
    def size(self):
        return self._td.numel

    @property
    def itemsize(self):
        return self._td.dtype.size

    @property
    def nbytes(self):
        return self._td.numel * self._td.dtype.size

    def __len__(self):
        if not self._td.shape:
            raise TypeError("len() of a 0-d tensor")
        return self._td.shape[0]

    def tolist(self):
        """Nested lists of Python numbers, as numpy's tolist() (a number for a 0-d tensor)."""
        return _nest(self._td.tolist(), self._td.shape)

    def tobytes(self):
        """The elements' bytes, little-endian, in C order."""
        if not self._td.dtype.size:
            raise TypeError("a string tensor has no bytes: use tolist()")
        return bytes(self._td.data)

    __bytes__ = tobytes

    @property
    def data(self):
        """A read-only memoryview of the elements with this shape and a struct format ('f',
        'q'...); types the struct module lacks are their bits ('B', or 'H' for bfloat16 and, before
        Python 3.12, float16). A tensor with no elements gives an empty 1-D view."""
        td = self._td
        if not td.dtype.size:
            raise TypeError("a string tensor has no buffer: use tolist()")
        raw = td.data
        mv = memoryview(raw if isinstance(raw, (bytes, bytearray, memoryview)) else bytes(raw)).cast("B")
        fmt = td.dtype.struct or ("H" if td.dtype.size == 2 else "B")
        if sys.byteorder == "big" and td.dtype.size > 1:   # the struct formats are native-endian
            mv = memoryview(_byteswap(mv.tobytes(), td.dtype.size))
        try:
            view = mv.cast(fmt) if td.numel == 0 else mv.cast(fmt, td.shape)
        except ValueError:   # 'e' before 3.12
            view = mv.cast("H") if td.numel == 0 else mv.cast("H", td.shape)
        return view.toreadonly()

    def __buffer__(self, flags):   # Python 3.12+ (PEP 688)
        return self.data

    def __array__(self, dtype=None, copy=None):
        a = self._td.to_numpy()
        if dtype is not None:
            return a.astype(dtype)
        return a.copy() if copy or not a.flags.writeable else a

    def numpy(self):
        """A numpy array of these values (numpy must be importable)."""
        return self.__array__()

    def __repr__(self):
        td = self._td
        head = ""
        if td.numel <= 8:
            try:
                head = f"{self.tolist()!r}, "
            except Unsupported:
                pass
        return f"nnwasm.Tensor({head}shape={list(td.shape)}, dtype={td.dtype.name})"


def _byteswap(b, size):
    return b"".join(b[i:i + size][::-1] for i in range(0, len(b), size))


def _nest(flat, shape):
    if not shape:
        return flat[0]
    if len(shape) == 1:
        return list(flat)
    step = numel(shape[1:])
    return [_nest(flat[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])]


def is_buffer(value):
    if isinstance(value, (bytes, bytearray, memoryview, array.array)):
        return True
    if isinstance(value, (str, list, tuple, int, float, bool)):
        return False
    try:
        memoryview(value)
    except TypeError:
        return False
    return True


def from_buffer(label, value, dtype, shape, declared_static=False):
    """TensorData of a buffer fed where `dtype`/`shape` are declared (either may be None, shape
    may hold names or None for symbolic dims). bytes and bytearray are raw bytes of the declared
    element type; other buffers hold values of their format, converted to the declared type if
    it differs. A 1-D buffer takes the declared shape (one symbolic dim is inferred); a buffer
    with a shape of its own (a memoryview cast to one) keeps it."""
    try:
        mv = memoryview(value)
    except TypeError as e:
        raise InvalidArgument(f"{label}: {e}") from None
    raw = isinstance(value, RAW_BYTES)
    fmt = mv.format.lstrip("@=")
    if raw:
        given = dtype if dtype is not None else dtypes.BY_NAME["uint8"]
    else:
        given = _BY_FORMAT.get(fmt[1:] if fmt[:1] == "<" and sys.byteorder == "little" else fmt)
        if given is None:
            raise InvalidArgument(f"{label}: a buffer of format '{mv.format}' has no ONNX element type "
                                  "(use a native format: 'f', 'd', 'q', 'i', 'B'...)")
    if not given.size:
        raise InvalidArgument(f"{label}: a string tensor can't be fed as bytes: feed a list of str")
    nbytes = mv.nbytes
    if nbytes % given.size:
        raise InvalidArgument(f"{label}: {nbytes} bytes are not a whole number of {given.ort_name} elements")
    n = nbytes // given.size
    if mv.ndim == 1 or raw:
        dims = _take_shape(label, n, shape, declared_static)
    else:
        dims = tuple(mv.shape)
    try:   # a view where it can be (C order, a native format), else a copy in C order
        data = mv.cast("B") if nbytes and mv.c_contiguous else mv.tobytes()
    except (TypeError, ValueError):
        data = mv.tobytes()
    if sys.byteorder == "big" and given.size > 1 and not raw:
        data = _byteswap(bytes(data), given.size)
    td = TensorData(given, dims, data)
    if dtype is not None and given != dtype:   # values of another type: converted, as numpy would
        td = from_values(label, td.tolist(), dtype).reshaped(dims)
    return td


def _take_shape(label, n, shape, declared_static):
    if shape is None or len(shape) == 1:
        if shape and isinstance(shape[0], int) and shape[0] != n and declared_static:
            raise InvalidArgument(f"{label}: {n} elements don't fill shape {list(shape)}")
        return (n,)
    known = [d for d in shape if isinstance(d, int)]
    unknown = len(shape) - len(known)
    k = numel(known)
    if unknown == 0 and k == n:
        return tuple(shape)
    if unknown == 1 and k and n % k == 0:
        return tuple(d if isinstance(d, int) else n // k for d in shape)
    how = "cast a memoryview to the shape (memoryview(buf).cast(fmt, shape)) or use nnwasm.Tensor(buf, shape)"
    if unknown == 0:
        raise InvalidArgument(f"{label}: a flat buffer of {n} elements does not fill the declared shape "
                              f"{list(shape)} ({k} elements)")
    raise InvalidArgument(f"{label}: a flat buffer of {n} elements can't take the declared shape {list(shape)} "
                          f"({unknown} symbolic dims): {how}")


def _flatten(label, value):
    """(shape, flat list) of nested lists/tuples; InvalidArgument for a ragged nesting."""
    if isinstance(value, (list, tuple)):
        if not value:
            return (0,), []
        parts = [_flatten(label, v) for v in value]
        inner = parts[0][0]
        if any(p[0] != inner for p in parts):
            raise InvalidArgument(f"{label}: the nested lists are ragged (shapes {sorted({p[0] for p in parts})}): "
                                  "a tensor needs the same length at each level")
        return (len(value),) + inner, [x for p in parts for x in p[1]]
    if isinstance(value, Tensor):
        return value.shape, value._td.tolist()
    if is_buffer(value) and not isinstance(value, RAW_BYTES):
        return _flatten(label, memoryview(value).tolist())
    return (), [value]


def _infer(flat):
    if flat and all(isinstance(v, bool) for v in flat):
        return dtypes.BY_NAME["bool"]
    if flat and all(isinstance(v, int) for v in flat):
        return dtypes.INT64
    if flat and all(isinstance(v, (str, bytes)) for v in flat):
        return dtypes.BY_NAME["object"]
    return dtypes.BY_NAME["float64"]


def from_values(label, value, dtype):
    """TensorData of nested lists / a scalar made element type dtype (None: numpy's inference)."""
    shape, flat = _flatten(label, value)
    dt = dtype or _infer(flat)
    try:
        return TensorData(dt, shape, pack(flat, dt))
    except (TypeError, ValueError, OverflowError, struct.error) as e:
        raise InvalidArgument(f"{label} ({type(value).__name__}) can't be made an array of {dt.ort_type}: {e}") from None


def pack(flat, dt):
    """Little-endian bytes of Python values as element type dt (a list of UTF-8 bytes for strings)."""
    if not dt.size:
        return [v.encode("utf-8", "surrogatepass") if isinstance(v, str) else bytes(v) for v in flat]
    if dt.ml_dtypes:
        np = numpy_or_none()
        if np is None:
            raise Unsupported(f"element type {dt.ort_name} needs numpy and ml_dtypes to be made from Python values")
        return TensorData.from_numpy(np.asarray(flat, dtype=dtypes.numpy_dtype(dt))).data
    if dt.struct == "e":
        return struct.pack(f"<{len(flat)}e", *[float(v) for v in flat])
    if dt.struct == "?":
        return bytes(bool(v) for v in flat)
    conv = float if dt.struct in "fd" else int
    a = array.array(dt.struct, [conv(v) for v in flat])
    if sys.byteorder == "big":
        a.byteswap()
    return a.tobytes()
