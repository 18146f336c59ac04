"""TensorData: a dense tensor as dtype + shape + little-endian bytes. The runtime's core moves
tensors in this form so that it runs without numpy (in Pyodide, numpy is optional)."""
import array
import sys

from . import dtypes
from .errors import InvalidArgument


class LazyBytes:
    """Bytes that live elsewhere (an external data file, a plan's arena, made on demand):
    len(), bytes(), the buffer protocol and indexing through the subclass's tobytes(), so a
    TensorData can hold them as its data; fill(host, ptr) writes them to kernels.wasm's memory
    without Python holding them (onnx_io/external.py, wasm/derived.py)."""
    __slots__ = ()

    def __bytes__(self):
        return self.tobytes()

    def __buffer__(self, flags):
        return memoryview(self.tobytes())

    def __getitem__(self, index):
        return self.tobytes()[index]


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


class TensorData:
    __slots__ = ("dtype", "shape", "data")

    def __init__(self, dtype, shape, data):
        self.dtype = dtype            # dtypes.DType
        self.shape = tuple(int(d) for d in shape)
        self.data = data              # bytes-like, len == numel * dtype.size, little-endian
        if dtype.size and len(data) != numel(self.shape) * dtype.size:
            raise InvalidArgument(f"tensor of shape {list(self.shape)} and type {dtype.name} needs "
                                  f"{numel(self.shape) * dtype.size} bytes, got {len(data)}")

    @property
    def numel(self):
        return numel(self.shape)

    def tolist(self):
        """Flat list of Python numbers (str for strings). Meant for small constants (shapes, axes,
        attribute tensors), not weights."""
        if self.dtype.size == 0:
            return [_text(b) for b in self.data]
        if self.dtype.ml_dtypes:    # bfloat16, float8...: through ml_dtypes (needs numpy)
            as_int = "int" in self.dtype.name and "float" not in self.dtype.name
            return self.to_numpy().reshape(-1).astype("int64" if as_int else "float64").tolist()
        if not self.dtype.struct or self.dtype.struct == "e":
            import struct
            return list(struct.unpack(f"<{self.numel}{self.dtype.struct}", bytes(self.data)))
        a = array.array(self.dtype.struct if self.dtype.struct != "?" else "B")
        a.frombytes(bytes(self.data))
        if sys.byteorder == "big":
            a.byteswap()
        out = a.tolist()
        return [bool(v) for v in out] if self.dtype.struct == "?" else out

    def to_numpy(self):
        import numpy as np
        if self.dtype.size == 0:   # strings: an object array of str, as onnxruntime returns them
            return np.array([_text(b) for b in self.data] or np.empty(0), dtype=object).reshape(self.shape)
        dt = dtypes.numpy_dtype(self.dtype)
        if self.dtype.size > 1 and not self.dtype.ml_dtypes:
            dt = dt.newbyteorder("<")
        elif self.dtype.size > 1 and sys.byteorder == "big":   # bfloat16: ml_dtypes has no byte order
            return np.frombuffer(self.data, dtype="<u2").astype("=u2").view(dt).reshape(self.shape)
        return np.frombuffer(self.data, dtype=dt).reshape(self.shape)

    @classmethod
    def from_numpy(cls, arr, copy=True):
        """copy=False views arr's memory (when it is already contiguous and little-endian): only
        for a caller that is done with the TensorData before arr can change (run()'s feeds)."""
        import numpy as np
        shape = np.shape(arr)
        if arr.dtype.kind in "OSU":   # strings: a list of UTF-8 bytes (data of a string TensorData)
            return cls(dtypes.BY_NAME["object"], shape, [_utf8(v) for v in np.reshape(arr, -1).tolist()])
        arr = np.ascontiguousarray(arr).reshape(shape)   # ascontiguousarray makes 0-d arrays 1-d
        dt = dtypes.of_numpy(arr.dtype)
        if dt is None:
            raise InvalidArgument(f"numpy dtype {arr.dtype} has no ONNX element type")
        if dt.ml_dtypes and dt.size > 1 and sys.byteorder == "big":
            arr = arr.view("=u2").astype("<u2")
        elif arr.dtype.byteorder == ">":
            arr = arr.astype(arr.dtype.newbyteorder("<"))
        if copy:
            return cls(dt, arr.shape, arr.tobytes())
        if dt.ml_dtypes:   # the buffer protocol knows no ml_dtypes type: view the bytes
            arr = arr.view("u1" if dt.size == 1 else "<u2")
        return cls(dt, arr.shape, memoryview(arr).cast("B") if arr.size else b"")

    def reshaped(self, shape):
        """The same values under another shape of as many elements."""
        return TensorData(self.dtype, shape, self.data)

    def __repr__(self):
        return f"TensorData({self.dtype.name}, {list(self.shape)})"


class SymTensor(TensorData):
    """A small integer tensor some of whose values are symbolic dims (symbolic.Sym): a shape
    computation (Shape -> Gather -> Concat) folded while a variant is traced with symbolic dims.
    tolist() keeps the Syms, so folding and shape inference go on with them; reading `data`
    converts each to an int, which specialises the variant to that value (a guard)."""
    __slots__ = ("values",)

    def __init__(self, dtype, shape, values):
        self.dtype, self.shape, self.values = dtype, tuple(int(d) for d in shape), list(values)

    @property
    def data(self):
        import struct
        return struct.pack(f"<{len(self.values)}{self.dtype.struct}", *[int(v) for v in self.values])

    def tolist(self):
        return list(self.values)

    def reshaped(self, shape):
        return SymTensor(self.dtype, shape, self.values)

    def to_numpy(self):
        import numpy as np
        return np.frombuffer(self.data, dtype=dtypes.numpy_dtype(self.dtype).newbyteorder("<")).reshape(self.shape)


class WidenedHalf(TensorData):
    """float32 values widened exactly from the float16 tensor `half` (the optimizer's fp16 pass
    makes them): a lowering may store `half` instead, at half the bytes, and widen in its kernel
    (wasm/lower/half.py)."""
    __slots__ = ("half",)

    def __init__(self, dtype, shape, data, half):
        super().__init__(dtype, shape, data)
        self.half = half


def _utf8(v):
    if isinstance(v, str):
        return v.encode("utf-8", "surrogatepass")
    if isinstance(v, (bytes, bytearray)):
        return bytes(v)
    raise InvalidArgument(f"a string tensor holds a {type(v).__name__} ({v!r}), not a str or bytes")


def _text(b):
    try:
        return bytes(b).decode("utf-8")
    except UnicodeDecodeError:   # not UTF-8: kept as bytes rather than mangled
        return bytes(b)
