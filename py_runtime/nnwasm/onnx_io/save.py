"""ir.Graph -> ONNX model bytes: the protobuf wire-format writer, mirror of wire.py's reader
(field numbers as in messages.py). SessionOptions.optimized_model_filepath uses it to save the
optimized graph, which onnxruntime loads (com.microsoft is imported when a node uses it).

Initializers are written as raw_data (string tensors as string_data); attributes of every kind
the reader produces, subgraphs included; graph inputs and outputs with their types and shapes.
"""
import struct

from .. import ir
from ..errors import Unsupported
from ..tensor import TensorData
from .messages import AttributeProto as A

VARINT, I32, LEN = 0, 5, 2
MIN_IR_VERSION = 4     # initializers need not be graph inputs from IR version 4 on


def _varint(n):
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _key(field, wire):
    return _varint(field << 3 | wire)


def _int(field, n):
    return _key(field, VARINT) + _varint(int(n))


def _bytes(field, b):
    b = bytes(b)
    return _key(field, LEN) + _varint(len(b)) + b


def _str(field, s):
    return _bytes(field, s.encode("utf-8") if isinstance(s, str) else s)


def _float(field, f):
    return _key(field, I32) + struct.pack("<f", f)


def _packed_ints(field, values):
    return _bytes(field, b"".join(_varint(int(v)) for v in values)) if values else b""


def _packed_floats(field, values):
    return _bytes(field, struct.pack(f"<{len(values)}f", *values)) if values else b""


def tensor_proto(t, name=""):
    out = _packed_ints(1, t.shape) + _int(2, t.dtype.onnx)
    if name:
        out += _str(8, name)
    if t.dtype.size == 0:   # strings: one string_data entry each
        out += b"".join(_bytes(6, s) for s in t.data)
    elif t.dtype.packed_bits:   # int4, float4, int2...: packed in the file, a byte each in memory
        from .tensors import pack_bits
        out += _bytes(9, pack_bits(t.data, t.dtype.packed_bits))
    else:
        out += _bytes(9, t.data)
    return out


def _type_proto(vi):
    tt = b""
    if vi.dtype is not None:
        tt += _int(1, vi.dtype.onnx)
    if vi.shape is not None:
        dims = b""
        for d in vi.shape:
            dims += _bytes(1, _int(1, d) if isinstance(d, int) else _str(2, d) if d else b"")
        tt += _bytes(2, dims)
    return _bytes(1, tt)


def _value_info(vi):
    return _str(1, vi.name) + _bytes(2, _type_proto(vi))


def _attribute(name, v):
    out = _str(1, name)
    if isinstance(v, bool) or isinstance(v, int):
        return out + _int(20, A.INT) + _int(3, v)
    if isinstance(v, float):
        return out + _int(20, A.FLOAT) + _float(2, v)
    if isinstance(v, (str, bytes)):
        return out + _int(20, A.STRING) + _str(4, v)
    if isinstance(v, TensorData):
        return out + _int(20, A.TENSOR) + _bytes(5, tensor_proto(v))
    if isinstance(v, ir.Graph):
        return out + _int(20, A.GRAPH) + _bytes(6, graph_proto(v))
    if isinstance(v, (list, tuple)):
        if all(isinstance(x, (int, bool)) for x in v):    # an empty list is written as INTS
            return out + _int(20, A.INTS) + _packed_ints(8, v)
        if all(isinstance(x, (int, float)) for x in v):
            return out + _int(20, A.FLOATS) + _packed_floats(7, [float(x) for x in v])
        if all(isinstance(x, (str, bytes)) for x in v):
            return out + _int(20, A.STRINGS) + b"".join(_str(9, x) for x in v)
        if all(isinstance(x, TensorData) for x in v):
            return out + _int(20, A.TENSORS) + b"".join(_bytes(10, tensor_proto(x)) for x in v)
        if all(isinstance(x, ir.Graph) for x in v):
            return out + _int(20, A.GRAPHS) + b"".join(_bytes(11, graph_proto(x)) for x in v)
    raise Unsupported(f"attribute '{name}' ({type(v).__name__}) can't be saved by nnwasm")


def node_proto(n):
    out = b"".join(_str(1, i) for i in n.inputs) + b"".join(_str(2, o) for o in n.outputs)
    if n.name:
        out += _str(3, n.name)
    out += _str(4, n.op_type)
    if n.domain:
        out += _str(7, n.domain)
    for k in sorted(n.attrs):
        out += _bytes(5, _attribute(k, n.attrs[k]))
    return out


def graph_proto(g):
    out = b"".join(_bytes(1, node_proto(n)) for n in g.nodes)
    out += _str(2, g.name or "graph")
    out += b"".join(_bytes(5, tensor_proto(t, name)) for name, t in g.initializers.items())
    out += b"".join(_bytes(11, _value_info(v)) for v in g.inputs)
    for v in g.outputs:
        known = g.values.get(v.name)
        if known is not None and known.dtype is not None:
            v = ir.ValueInfo(v.name, known.dtype, known.shape if known.shape is not None else v.shape)
        out += _bytes(12, _value_info(v))
    return out


def model_bytes(graph):
    info = graph.model_info
    opsets = dict(graph.opsets)
    if any(n.domain == "com.microsoft" for n in graph.nodes):
        opsets.setdefault("com.microsoft", 1)
    out = _int(1, max(info.ir_version if info else 8, MIN_IR_VERSION))
    out += _str(2, "nnwasm")
    if info and info.model_version:
        out += _int(5, info.model_version)
    out += _bytes(7, graph_proto(graph))
    for d in sorted(opsets):
        out += _bytes(8, (_str(1, d) if d else b"") + _int(2, opsets[d]))
    return out


def save_model(graph, path):
    """Writes the graph as an ONNX model file at path."""
    with open(path, "wb") as f:
        f.write(model_bytes(graph))
