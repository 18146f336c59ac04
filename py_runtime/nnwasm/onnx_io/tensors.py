"""TensorProto -> TensorData, for every way ONNX stores tensor contents: raw_data, the typed
repeated fields, and external files next to the model."""
import array
import os
import sys

from .. import dtypes
from ..errors import InvalidModel, Unsupported
from ..tensor import TensorData
from .external import ExternalSources
from .messages import parse_tensor_proto

# More elements than wasm32 memory can hold: catches garbage dims before any arithmetic on them.
MAX_ELEMENTS = 1 << 32
# A sparse tensor is small in the file but allocated dense: bound what a hostile file can ask
# for (Pyodide's heap is a few GB at most).
MAX_DENSIFIED_BYTES = 1 << 28
EXTERNAL = 1  # TensorProto.DataLocation

# Element types that the ONNX spec stores in int32_data, with the array code that packs them.
_IN_INT32_DATA = {"int8": "b", "uint8": "B", "int16": "h", "uint16": "H", "bool": "B", "int32": "i",
                  "float16": "H"}
_IN_UINT64_DATA = {"uint32": "I", "uint64": "Q"}
# Bit patterns stored one per int32_data entry: bfloat16 as uint16, the float8 types as uint8.
_BITS_IN_INT32_DATA = {"bfloat16": ("H", 0xFFFF), "float8_e4m3fn": ("B", 0xFF), "float8_e4m3fnuz": ("B", 0xFF),
                       "float8_e5m2": ("B", 0xFF), "float8_e5m2fnuz": ("B", 0xFF), "float8_e8m0fnu": ("B", 0xFF)}


def tensor_label(t):
    return f"tensor '{t.name}'" if t.name else "an unnamed tensor"


def tensor_dtype(t):
    """dtypes.DType of a TensorProto; Unsupported if nnwasm does not know its element type
    (InvalidModel if no ONNX version knows it either)."""
    dt = dtypes.from_onnx(t.data_type or 0)
    if dt is None:
        raise (Unsupported if 0 < (t.data_type or 0) <= 28 else InvalidModel)(f"{tensor_label(t)} has element type {t.data_type or 0}, "
                           f"which nnwasm does not support")
    return dt


def checked_shape(dims, what):
    """dims as a tuple after checking that they are non-negative and describe a sane size."""
    n = 1
    for d in dims:
        if d < 0:
            raise InvalidModel(f"{what} has a negative dimension in {list(dims)}")
        n *= d
        if n > MAX_ELEMENTS or d > MAX_ELEMENTS:
            raise InvalidModel(f"{what} has an absurd size: dims {list(dims)}")
    return tuple(dims)


def tensor_data(t, model_dir=None):
    """TensorData for a messages.TensorProto. model_dir is the folder of the model file, used to
    resolve external data, or the ExternalSources a host gave (external.py); None when the model
    came from bytes alone (then external data is refused)."""
    label = tensor_label(t)
    dt = tensor_dtype(t)
    shape = checked_shape(t.dims, label)
    n = 1
    for d in shape:
        n *= d
    if t.segment is not None:
        raise Unsupported(f"{label} is segmented (TensorProto.segment), which nnwasm does not support")
    location = t.data_location or 0
    if location == EXTERNAL:
        if dt.name == "object":
            raise Unsupported(f"{label} is a string tensor stored externally, which nnwasm does not support")
        data = _external_bytes(t, model_dir, label)
    elif location != 0:
        raise InvalidModel(f"{label} has an invalid data_location {location}")
    elif dt.name == "object":
        if t.raw_data is not None and len(t.raw_data):
            raise InvalidModel(f"{label} is a string tensor stored in raw_data, which ONNX forbids")
        if len(t.string_data) != n:
            raise InvalidModel(f"{label} has shape {list(shape)} ({n} strings) but holds "
                               f"{len(t.string_data)} strings")
        return TensorData(dt, shape, [bytes(s) for s in t.string_data])
    elif t.raw_data is not None:
        data = t.raw_data
    else:
        data = _typed_field_bytes(t, dt, label)
    if dt.packed_bits:
        data = unpack_bits(data, dt.packed_bits, n, label)
    if len(data) != n * dt.size:
        raise InvalidModel(f"{label} has shape {list(shape)} and type {dt.name} ({n * dt.size} bytes) "
                           f"but holds {len(data)} bytes of data")
    return TensorData(dt, shape, data)


def _join(chunks):
    if len(chunks) == 1:
        return chunks[0]
    return b"".join(chunks)


def _pack(values, code, label, dtype_name):
    """Little-endian bytes of integers (a list or a message's array.array) as array type code."""
    try:
        a = array.array(code, values)   # a copy even when values is already of this code
    except OverflowError:
        raise InvalidModel(f"{label} holds a value out of range for {dtype_name}") from None
    if sys.byteorder == "big":
        a.byteswap()
    return a.tobytes()


def unpack_bits(data, bits, n, label):
    """One byte per element from ONNX's packing of 4-bit (two a byte, low nibble first) or 2-bit
    (four a byte, lowest bits first) elements; InvalidModel unless data holds exactly n of them."""
    per = 8 // bits
    if len(data) != (n + per - 1) // per:
        raise InvalidModel(f"{label} holds {len(data)} bytes of {bits}-bit data for {n} elements "
                           f"(expected {(n + per - 1) // per})")
    data = bytes(data)
    mask = (1 << bits) - 1
    out = bytearray(len(data) * per)
    for k in range(per):
        out[k::per] = data.translate(bytes(((b >> (k * bits)) & mask) for b in range(256)))
    return bytes(out[:n])


def pack_bits(data, bits):
    """ONNX's packed form of one-byte-per-element 4- or 2-bit data (unpack_bits' inverse)."""
    per = 8 // bits
    mask = (1 << bits) - 1
    data = bytes(data) + bytes(-len(data) % per)
    out = bytearray(len(data) // per)
    for k in range(per):
        part = data[k::per].translate(bytes(((b & mask) << (k * bits)) for b in range(256)))
        out = bytearray(a | b for a, b in zip(out, part)) if k else bytearray(part)
    return bytes(out)


def _typed_field_bytes(t, dt, label):
    """Little-endian bytes from whichever typed field the ONNX spec assigns to dt."""
    name = dt.name
    if dt.packed_bits:   # packed bytes, one per int32_data entry
        return _pack(t.int32_data, "B", label, name)
    if name in _BITS_IN_INT32_DATA:
        code, mask = _BITS_IN_INT32_DATA[name]
        return _pack([v & mask for v in t.int32_data], code, label, name)
    if name == "float32":
        return _join(t.float_data) if t.float_data else b""
    if name == "float64":
        return _join(t.double_data) if t.double_data else b""
    if name == "int64":
        return _pack(t.int64_data, "q", label, name)
    if name in _IN_UINT64_DATA:
        return _pack(t.uint64_data, _IN_UINT64_DATA[name], label, name)
    values = t.int32_data
    if name == "bool":
        values = [1 if v else 0 for v in values]
    elif name == "float16":
        # The spec stores float16 bit patterns as uint16 values; some writers store them signed.
        if values and not -0x8000 <= min(values) <= max(values) <= 0xFFFF:
            raise InvalidModel(f"{label} holds a value out of range for float16 bit patterns")
        values = [v & 0xFFFF for v in values]
    return _pack(values, _IN_INT32_DATA[name], label, name)


def _external_bytes(t, model_dir, label):
    keys = {e.key: e.value for e in t.external_data}
    where = keys.get("location")
    if not where:
        raise InvalidModel(f"{label} has external data without a 'location'")
    if model_dir is None:
        raise InvalidModel(f"{label} stores its data in the external file '{where}', but the model "
                           f"was given as bytes: load it from its path instead")
    try:
        offset = int(keys.get("offset") or 0)
        length = int(keys["length"]) if keys.get("length") else None
    except ValueError:
        raise InvalidModel(f"{label} has a non-integer external data offset or length") from None
    if isinstance(model_dir, ExternalSources):   # files a host gave (the JS shim's externalData)
        return model_dir.tensor_data(label, where, offset, length)
    files = model_dir if isinstance(model_dir, ExternalFiles) else ExternalFiles(model_dir)
    try:
        f = files.open(_safe_external_path(files.model_dir, where, label))
        size = os.fstat(f.fileno()).st_size
        if length is None:
            length = size - offset
        if offset < 0 or length < 0 or offset + length > size:
            raise InvalidModel(f"{label}: external data at offset {offset}, length {length} does not fit "
                               f"in '{where}' ({size} bytes)")
        f.seek(offset)
        data = f.read(length)
    finally:
        if files is not model_dir:
            files.close()
    if len(data) != length:
        raise InvalidModel(f"{label}: external file '{where}' was truncated while reading")
    # "checksum" (the SHA-1 of the whole file, per onnx.proto) is not verified, as neither onnx nor
    # onnxruntime does: it would mean hashing a multi-GB file once per tensor.
    return data


class ExternalFiles:
    """The external data files of a model loaded from its folder, each opened once for the whole
    load (load_model closes them): in JupyterLite every open() of a notebook file transfers the
    whole file, so a file opened per tensor would be transferred once per tensor."""

    def __init__(self, model_dir):
        self.model_dir = model_dir
        self.files = {}   # real path -> open file

    def open(self, path):
        f = self.files.get(path)
        if f is None:
            f = self.files[path] = open(path, "rb")
        return f

    def close(self):
        for f in self.files.values():
            f.close()
        self.files.clear()


def _safe_external_path(model_dir, where, label):
    """The external file's path, refusing anything that could leave the model's folder."""
    parts = where.replace("\\", "/").split("/")
    if "\0" in where or os.path.isabs(where) or where.startswith(("/", "\\")) or ":" in parts[0] or ".." in parts:
        raise InvalidModel(f"{label}: external data location '{where}' must be a relative path "
                           f"inside the model's folder")
    root = os.path.realpath(model_dir)
    path = os.path.realpath(os.path.join(root, *[p for p in parts if p]))
    if os.path.commonpath([root, path]) != root:
        raise InvalidModel(f"{label}: external data location '{where}' resolves outside the model's folder")
    if not os.path.isfile(path):
        raise InvalidModel(f"{label}: external data file '{where}' does not exist in the model's folder")
    return path


def sparse_tensor_data(sp, model_dir=None):
    """Dense TensorData for a messages.SparseTensorProto (indices either [NNZ] linear positions or
    [NNZ, rank] coordinates), as onnxruntime densifies sparse initializers."""
    if sp.values is None or sp.indices is None:
        raise InvalidModel("a sparse tensor lacks its values or indices")
    label = f"sparse {tensor_label(sp.values)}"
    values = tensor_data(sp.values, model_dir)
    indices = tensor_data(sp.indices, model_dir)
    shape = checked_shape(sp.dims, label)
    size = values.dtype.size
    numel = 1
    for d in shape:
        numel *= d
    if size == 0 or numel * size > MAX_DENSIFIED_BYTES:
        raise InvalidModel(f"{label} of type {values.dtype.name} and shape {list(shape)} cannot be densified")
    nnz = values.numel
    if len(values.shape) != 1 or indices.dtype.name != "int64":
        raise InvalidModel(f"{label} needs 1-D values and int64 indices")
    flat = indices.tolist()
    if indices.shape == (nnz, len(shape)):
        strides = [1] * len(shape)
        for i in range(len(shape) - 2, -1, -1):
            strides[i] = strides[i + 1] * shape[i + 1]
        coords = [flat[k * len(shape):(k + 1) * len(shape)] for k in range(nnz)]
        if any(not 0 <= c < d for row in coords for c, d in zip(row, shape)):
            raise InvalidModel(f"{label} has an index out of range of its shape {list(shape)}")
        flat = [sum(c * s for c, s in zip(row, strides)) for row in coords]
    elif indices.shape != (nnz,):
        raise InvalidModel(f"{label} has indices of shape {list(indices.shape)} for {nnz} values")
    out = bytearray(numel * size)
    src = bytes(values.data)
    for k, pos in enumerate(flat):
        if not 0 <= pos < numel:
            raise InvalidModel(f"{label} has index {pos}, out of range for {numel} elements")
        out[pos * size:(pos + 1) * size] = src[k * size:(k + 1) * size]
    return TensorData(values.dtype, shape, bytes(out))


def parse_tensor(buf):
    """TensorData from a standalone serialized TensorProto (e.g. a backend test's input_0.pb)."""
    return tensor_data(parse_tensor_proto(buf), None)
