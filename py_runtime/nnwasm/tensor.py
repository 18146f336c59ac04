"""TensorData: a dense tensor as dtype + shape + little-endian bytes. The runtime's core moves
tensors in this form so that it runs without numpy (in Pyodide, numpy is optional)."""
import array
import sys

from . import dtypes
from .errors import InvalidArgument


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
        """Flat list of Python numbers. Meant for small constants (shapes, axes), not weights."""
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
        return np.frombuffer(self.data, dtype=np.dtype(self.dtype.name).newbyteorder("<")).reshape(self.shape)

    @classmethod
    def from_numpy(cls, arr, copy=True):
        """copy=False views arr's memory (when it is already contiguous and little-endian): only
        for a caller that is done with the TensorData before arr can change (run()'s feeds)."""
        import numpy as np
        shape = np.shape(arr)
        arr = np.ascontiguousarray(arr).reshape(shape)   # ascontiguousarray makes 0-d arrays 1-d
        dt = dtypes.from_name(arr.dtype.name)
        if dt is None:
            raise InvalidArgument(f"numpy dtype {arr.dtype} has no ONNX element type")
        if arr.dtype.byteorder == ">":
            arr = arr.astype(arr.dtype.newbyteorder("<"))
        if copy:
            return cls(dt, arr.shape, arr.tobytes())
        return cls(dt, arr.shape, memoryview(arr).cast("B") if arr.size else b"")

    def __repr__(self):
        return f"TensorData({self.dtype.name}, {list(self.shape)})"
