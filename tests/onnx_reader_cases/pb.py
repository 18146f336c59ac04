"""A tiny protobuf encoder, to write wire forms the onnx package never emits (unpacked repeated
fields, unknown fields, groups, over-long varints) and check how the reader takes them."""
import struct

VARINT, I64, LEN, SGROUP, EGROUP, I32 = 0, 1, 2, 3, 4, 5


def varint(n):
    n &= (1 << 64) - 1  # negative ints are written as their 64-bit two's complement (10 bytes)
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def tag(field, wire_type):
    return varint(field << 3 | wire_type)


def vint(field, n):
    return tag(field, VARINT) + varint(n)


def ld(field, payload):
    if isinstance(payload, str):
        payload = payload.encode()
    return tag(field, LEN) + varint(len(payload)) + payload


def f32(field, x):
    return tag(field, I32) + struct.pack("<f", x)


def f64(field, x):
    return tag(field, I64) + struct.pack("<d", x)


def packed_varints(field, values):
    return ld(field, b"".join(varint(v) for v in values))
