"""ONNX element types, as plain data: no numpy needed. numpy dtypes are looked up by name only
where numpy is already imported."""
from dataclasses import dataclass


@dataclass(frozen=True)
class DType:
    onnx: int        # TensorProto.DataType value
    name: str        # numpy's name for it ("float32"); also what onnxruntime's "tensor(float)" maps to
    ort_name: str    # the element name onnxruntime prints inside "tensor(...)"
    size: int        # bytes per element (0 for string)
    struct: str      # struct/array format character ("" where none)

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
]
BY_ONNX = {d.onnx: d for d in _ALL}
BY_NAME = {d.name: d for d in _ALL}
FLOAT32 = BY_ONNX[1]
INT64 = BY_ONNX[7]


def from_onnx(code):
    """DType for a TensorProto.DataType code; None for types nnwasm does not know (bfloat16, ...)."""
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
