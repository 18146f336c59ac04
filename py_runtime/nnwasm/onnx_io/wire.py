"""Protobuf wire-format decoding, driven by the field tables in messages.py.

onnx and protobuf are not available in Pyodide, so nnwasm reads the wire format itself. A model
is decoded from one immutable `bytes` object; byte payloads (raw_data, packed float_data) come
back as memoryview slices of it, so weights are never copied while parsing. Every malformed
input raises InvalidModel naming the message, the field and the absolute byte offset.
"""
import array
import struct

from ..errors import InvalidModel

# Wire types (the low 3 bits of a tag).
VARINT, I64, LEN, SGROUP, EGROUP, I32 = 0, 1, 2, 3, 4, 5

# Field kinds: how a known field's payload becomes a Python value.
INT64 = "int64"        # varint -> signed 64-bit int
INT32 = "int32"        # varint (int32 and enums) -> signed 32-bit int, as protobuf truncates it
UINT64 = "uint64"      # varint -> unsigned 64-bit int
FLOAT = "float"        # fixed32 -> float
DOUBLE = "double"      # fixed64 -> float
FLOAT_LE = "float_le"  # fixed32, kept as little-endian bytes (memoryview): big float_data payloads
DOUBLE_LE = "double_le"
STRING = "string"      # UTF-8 -> str
BYTES = "bytes"        # memoryview slice
MESSAGE = "message"    # nested message, decoded with its class's table
RAW = "raw"            # nested message kept undecoded, as a memoryview slice

_VARINT_KINDS = (INT64, INT32, UINT64)
_ARRAY_CODE = {INT64: "q", INT32: "i", UINT64: "Q"}
_FIXED_SIZE = {FLOAT: 4, FLOAT_LE: 4, DOUBLE: 8, DOUBLE_LE: 8}
_FIXED_WIRE = {FLOAT: I32, FLOAT_LE: I32, DOUBLE: I64, DOUBLE_LE: I64}
_MASK64 = (1 << 64) - 1
# Nested messages allowed: enough for 64 levels of subgraphs (Graph > Node > Attribute > Graph),
# small enough that the recursive decoder stays far from Python's recursion limit.
MAX_NESTING = 256


class Field(tuple):
    """One entry of a message's field table: (name, kind, repeated, message class, oneof name)."""
    __slots__ = ()

    def __new__(cls, name, kind, repeated=False, msg=None, oneof=None):
        return tuple.__new__(cls, (name, kind, repeated, msg, oneof))


def _fail(cls, fnum, name, at, what):
    field = f".{name}" if name else ""
    raise InvalidModel(f"invalid ONNX protobuf: {cls.__name__}{field} (field {fnum}) at byte {at}: {what}")


def read_varint(data, pos, end, cls=None, fnum=0, name=""):
    """(value, position after it) of the varint at data[pos]; at most 10 bytes, masked to 64 bits."""
    start = pos
    result = 0
    shift = 0
    while True:
        if pos >= end:
            _fail(cls or Message, fnum, name, start, "varint runs past the end of its message")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result & _MASK64, pos
        shift += 7
        if shift >= 70:
            _fail(cls or Message, fnum, name, start, "varint longer than 10 bytes")


def _skip(data, pos, end, wt, cls, fnum, at):
    """Position after the payload of an unknown field of wire type wt starting at pos."""
    if wt == VARINT:
        return read_varint(data, pos, end, cls, fnum)[1]
    if wt == LEN:
        n, pos = read_varint(data, pos, end, cls, fnum)
        size = n
    elif wt == I64:
        size = 8
    elif wt == I32:
        size = 4
    elif wt in (SGROUP, EGROUP):
        _fail(cls, fnum, "", at, "protobuf groups (wire types 3/4) are not valid in ONNX")
    else:
        _fail(cls, fnum, "", at, f"invalid wire type {wt}")
    if pos + size > end:
        _fail(cls, fnum, "", at, f"{size}-byte payload runs past the end of its message (byte {end})")
    return pos + size


def _packed_varints(out, data, a, b, kind, cls, fnum, name):
    pos = a
    while pos < b:
        v = data[pos]
        if v < 0x80:
            pos += 1
        else:
            v, pos = read_varint(data, pos, b, cls, fnum, name)
        out.append(_signed(v, kind))


def _signed(v, kind):
    if kind == INT64:
        return v - (1 << 64) if v >= 1 << 63 else v
    if kind == INT32:
        v &= 0xFFFFFFFF
        return v - (1 << 32) if v >= 1 << 31 else v
    return v


class Message:
    """Base of the decoded ONNX messages. FIELDS maps field number -> Field. A singular field that
    was absent from the bytes reads as None (proto2 presence); a repeated one reads as a list
    (array.array for integers), or as the empty tuple when absent (no empty container per
    message: a big graph has ~10^5 messages)."""
    FIELDS = {}

    def __repr__(self):
        shown = []
        for name, *_ in self.FIELDS.values():
            v = getattr(self, name)
            if v is not None and v != []:
                shown.append(f"{name}={v!r}" if not isinstance(v, memoryview) else f"{name}=<{len(v)} bytes>")
        return f"{type(self).__name__}({', '.join(shown)})"


def define(cls, *fields):
    """Attach a field table, given as (number, Field) pairs, to a Message subclass."""
    cls.FIELDS = dict(fields)
    for _, f in fields:
        setattr(cls, f[0], () if f[2] else None)
        if f[4]:
            setattr(cls, f[4], None)
    return cls


def _list(obj, name, kind):
    """The container behind repeated field `name` of obj, created on first use: an array.array
    for integers (8 bytes an element, not a Python int's ~36: int64_data can be large), else a list."""
    cur = getattr(obj, name)
    if cur.__class__ is not tuple:
        return cur
    cur = array.array(_ARRAY_CODE[kind]) if kind in _ARRAY_CODE else []
    setattr(obj, name, cur)
    return cur


def decode_into(obj, data, mv, pos, end, depth):
    """Decode the message bytes data[pos:end] into obj, per type(obj).FIELDS.
    data is the whole buffer (bytes), mv a memoryview of it (for zero-copy slices)."""
    cls = type(obj)
    if depth > MAX_NESTING:
        _fail(cls, 0, "", pos, f"messages nested deeper than {MAX_NESTING} levels")
    fields = cls.FIELDS
    while pos < end:
        at = pos
        tag = data[pos]
        if tag < 0x80:
            pos += 1
        else:
            tag, pos = read_varint(data, pos, end, cls)
        fnum = tag >> 3
        wt = tag & 7
        f = fields.get(fnum)
        if f is None:
            if fnum == 0:
                _fail(cls, 0, "", at, "field number 0 is invalid")
            pos = _skip(data, pos, end, wt, cls, fnum, at)
            continue
        name, kind, repeated, msg, oneof = f
        if wt == LEN:
            if pos < end and data[pos] < 0x80:
                n = data[pos]
                pos += 1
            else:
                n, pos = read_varint(data, pos, end, cls, fnum, name)
            a = pos
            pos += n
            if pos > end:
                _fail(cls, fnum, name, at, f"length {n} runs past the end of its message (byte {end})")
            if kind == STRING:
                try:
                    val = data[a:pos].decode("utf-8")
                except UnicodeDecodeError:
                    _fail(cls, fnum, name, at, "string is not valid UTF-8")
            elif kind == BYTES or kind == RAW:
                val = mv[a:pos]
            elif kind == MESSAGE:
                old = None if repeated else getattr(obj, name)
                if old is not None:          # protobuf merges repeated occurrences of a singular message
                    decode_into(old, data, mv, a, pos, depth + 1)
                    continue
                val = msg()
                decode_into(val, data, mv, a, pos, depth + 1)
            elif repeated and kind in _VARINT_KINDS:
                _packed_varints(_list(obj, name, kind), data, a, pos, kind, cls, fnum, name)
                continue
            elif repeated and kind in _FIXED_SIZE:
                size = _FIXED_SIZE[kind]
                if n % size:
                    _fail(cls, fnum, name, at, f"packed length {n} is not a multiple of {size}")
                if kind == FLOAT_LE or kind == DOUBLE_LE:
                    _list(obj, name, kind).append(mv[a:pos])
                else:
                    _list(obj, name, kind).extend(struct.unpack_from(f"<{n // size}{'f' if size == 4 else 'd'}", data, a))
                continue
            else:
                _fail(cls, fnum, name, at, f"wire type 2 (length-delimited) is wrong for a {kind} field")
        elif wt == VARINT and kind in _VARINT_KINDS:
            if pos < end and data[pos] < 0x80:
                val = data[pos]
                pos += 1
            else:
                val, pos = read_varint(data, pos, end, cls, fnum, name)
                val = _signed(val, kind)
        elif kind in _FIXED_WIRE and wt == _FIXED_WIRE[kind]:
            size = _FIXED_SIZE[kind]
            if pos + size > end:
                _fail(cls, fnum, name, at, f"{size}-byte value runs past the end of its message (byte {end})")
            if kind == FLOAT_LE or kind == DOUBLE_LE:
                val = mv[pos:pos + size]
            else:
                val = struct.unpack_from("<f" if size == 4 else "<d", data, pos)[0]
            pos += size
        else:
            _fail(cls, fnum, name, at, f"wire type {wt} is wrong for a {kind} field")
        if repeated:
            _list(obj, name, kind).append(val)
        else:
            setattr(obj, name, val)
        if oneof:
            setattr(obj, oneof, name)
    return obj


def parse(cls, buf):
    """Decode a whole serialized message of type cls from a bytes-like object."""
    data = buf if isinstance(buf, bytes) else bytes(buf)
    return decode_into(cls(), data, memoryview(data), 0, len(data), 0)
