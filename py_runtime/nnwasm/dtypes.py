"""ONNX element types, as plain data: no numpy needed. numpy dtypes are looked up by name only
where numpy is already imported (numpy_dtype), and the types numpy lacks (bfloat16, the float8
family, 4- and 2-bit types) come from the ml_dtypes package, imported only when such a tensor
meets numpy. TensorData holds these one byte per element (two for bfloat16), as ml_dtypes does:
ONNX packs 4-bit types two to a byte and 2-bit types four to a byte only in the file."""
from dataclasses import dataclass

from .errors import Unsupported


@dataclass(frozen=True)
class DType:
    onnx: int        # TensorProto.DataType value
    name: str        # numpy's name for it ("float32"); also what onnxruntime's "tensor(float)" maps to
    ort_name: str    # the element name onnxruntime prints inside "tensor(...)"
    size: int        # bytes per element (0 for string)
    struct: str      # struct/array format character ("" where none)
    ml_dtypes: bool = False   # numpy lacks it: ml_dtypes.<name> is its numpy dtype
    packed_bits: int = 0      # 4 or 2 when ONNX packs several elements into a byte (raw_data)

    @property
    def ort_type(self):
        return f"tensor({self.ort_name})"


_ALL = [
    DType(1, "float32", "float", 4, "f"),
    DType(2, "uint8", "uint8", 1, "B"),
    DType(3, "int8", "int8", 1, "b"),
    DType(4, "uint16", "uint16", 2, "H"),
    DType(5, "int16", "int16", 2, "h"),
    DType(6, "int32", "int32", 4, "i"),
    DType(7, "int64", "int64", 8, "q"),
    DType(8, "object", "string", 0, ""),
    DType(9, "bool", "bool", 1, "?"),
    DType(10, "float16", "float16", 2, "e"),
    DType(11, "float64", "double", 8, "d"),
    DType(12, "uint32", "uint32", 4, "I"),
    DType(13, "uint64", "uint64", 8, "Q"),
    DType(16, "bfloat16", "bfloat16", 2, "", True),
    DType(17, "float8_e4m3fn", "float8e4m3fn", 1, "", True),
    DType(18, "float8_e4m3fnuz", "float8e4m3fnuz", 1, "", True),
    DType(19, "float8_e5m2", "float8e5m2", 1, "", True),
    DType(20, "float8_e5m2fnuz", "float8e5m2fnuz", 1, "", True),
    DType(21, "uint4", "uint4", 1, "", True, 4),
    DType(22, "int4", "int4", 1, "", True, 4),
    DType(23, "float4_e2m1fn", "float4e2m1", 1, "", True, 4),
    DType(24, "float8_e8m0fnu", "float8e8m0", 1, "", True),
    DType(25, "uint2", "uint2", 1, "", True, 2),
    DType(26, "int2", "int2", 1, "", True, 2),
]
BY_ONNX = {d.onnx: d for d in _ALL}
BY_NAME = {d.name: d for d in _ALL}
FLOAT32 = BY_ONNX[1]
INT64 = BY_ONNX[7]


def from_onnx(code):
    """DType for a TensorProto.DataType code; None for types nnwasm does not know (complex, float6)."""
    return BY_ONNX.get(code)


def from_name(name):
    """DType for a numpy dtype name ("float32") or an onnxruntime type string ("tensor(float)")."""
    if name.startswith("tensor(") and name.endswith(")"):
        inner = name[7:-1]
        for d in _ALL:
            if d.ort_name == inner:
                return d
        return None
    return BY_NAME.get(name)


def numpy_dtype(dt):
    """numpy's dtype for dt (numpy must be importable); Unsupported, naming the type, when it
    needs ml_dtypes and that is missing (Pyodide without the package)."""
    import numpy as np
    if not dt.ml_dtypes:
        return np.dtype(dt.name)
    try:
        import ml_dtypes
    except ImportError:
        raise Unsupported(f"element type {dt.ort_name} needs the ml_dtypes package, which is not installed "
                          f"here") from None
    return np.dtype(getattr(ml_dtypes, dt.name))


def of_numpy(np_dtype):
    """DType of a numpy dtype (ml_dtypes' included); None if ONNX has no such element type."""
    return BY_NAME.get(np_dtype.name)
