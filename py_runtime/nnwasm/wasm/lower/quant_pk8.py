"""q8_gemm_pk8 (kernels_c/q8/gemm_pk8.c): the int8 GEMM of dynamically quantized transformers
(MatMulIntegerToFloat, DynamicQuantizeMatMul) on B kept as int8 panels, one byte a weight, packed
here once per weight (q8_pack_b8's layout in ops.def). It replaces q8_gemm_pk's int16 panels
(two bytes a weight) in new plans; q8_gemm_pk stays for plan files that hold it."""
import struct
from array import array

from ...tensor import TensorData, numel
from .quant import U8, _const_values, _scratch_bytes


def pack_q8_b8(t, zps, k, n):
    """[K, N] uint8/int8 bytes -> q8_pack_b8's panels (ops.def): 4 columns, k in blocks of 8, each
    block two column pairs of 16 bytes with the pair's bytes interleaved ([ceil(N/4)][ceil(K/8)][2]
    [8][2]), zeros past K and N; an int8 B's even columns + 128, a uint8 B's odd ones - 128; then
    int32 zc[ceil(N/4)*4] = the zero point plus that offset (0 past N). (pack_q8_b8_pieces' pieces,
    put together.)"""
    kp, n4 = -(-k // 8) * 8, -(-n // 4) * 4
    out = bytearray(n4 * kp + 4 * n4)
    view = memoryview(out)

    def write(off, piece):
        view[off:off + len(piece)] = piece

    pack_q8_b8_pieces(t, zps, k, n, write)
    return TensorData(U8, (n4 * kp + 4 * n4,), view)


PACK_PIECE = 1 << 20   # bytes of panels pack_q8_b8_pieces makes at a time


def pack_q8_b8_pieces(t, zps, k, n, write, piece=PACK_PIECE):
    """pack_q8_b8's bytes through write(offset, bytes-like), a run of whole panels (about `piece`
    bytes) at a time, then zc: Python holds the weight's bytes (a view) and one piece, never the
    whole packed tensor beside a copy of the weight (a 125M decoder's lm_head is 24.6 MB). Pure
    Python at C speed: columns are strided slices, the offsets a translate table, the pairs and the
    panel order strided slice assignments."""
    kp, n4 = -(-k // 8) * 8, -(-n // 4) * 4
    nk = kp // 8
    data = memoryview(t.data).cast("B")
    if data.nbytes != k * n:
        raise AssertionError(f"pack_q8_b8: {data.nbytes} bytes for a [{k}, {n}] weight")
    signed, pad = t.dtype.name == "int8", bytes(kp - k)
    flip = bytes((v + 128) & 0xFF for v in range(256))
    cols_at_once = max(4, piece // kp // 4 * 4)
    for g0 in range(0, n4, cols_at_once):
        g1 = min(n4, g0 + cols_at_once)
        out = array("Q", bytes((g1 - g0) * kp))
        for j0 in range(g0, g1, 2):   # a pair of columns: 2*kp bytes, nk blocks of two 8-byte words
            pair = bytearray(2 * kp)
            for c in (0, 1):
                j = j0 + c
                if j < n:
                    col = data[j::n].tobytes()
                    pair[c::2] = (col.translate(flip) if signed == (c == 0) else col) + pad
            words = array("Q", bytes(pair))
            base = ((j0 - g0) // 4) * 4 * nk + (j0 % 4 // 2) * 2   # the panel's first word, then the pair's
            out[base:base + 4 * nk:4] = words[0::2]
            out[base + 1:base + 4 * nk:4] = words[1::2]
        write(g0 * kp, out.tobytes())
        del out
    off = [(128 if signed else 0) if j % 2 == 0 else (0 if signed else -128) for j in range(n4)]
    zc = [(zps[j] if len(zps) > 1 else zps[0]) + off[j] if j < n else 0 for j in range(n4)]
    write(n4 * kp, struct.pack(f"<{n4}i", *zc))


def packed_b8(b, w, w_zp):
    """A Ref to pack_q8_b8 of the constant w, made once per (weight, zero point)."""
    k, n = b.shape(w)
    cache = b.__dict__.setdefault("q8_packed8", {})
    if (w, w_zp) not in cache:
        zps = [int(v) for v in _const_values(b.graph, w_zp)] if w_zp else [0]
        t = b.graph.initializers[w]
        kp, n4 = -(-k // 8) * 8, -(-n // 4) * 4
        cache[(w, w_zp)] = b.constant(b.derived(("pack_q8_b8", k, n, *zps), t, make=lambda: pack_q8_b8(t, zps, k, n),
                                                like=(U8, (n4 * kp + 4 * n4,)),
                                                stream=lambda write: pack_q8_b8_pieces(t, zps, k, n, write)))
    return cache[(w, w_zp)]


def emit_gemm_pk8(b, a, w, a_zp, w_zp, y, scale, scale_s, fbias, r, act, m=None):
    """MatMulIntegerToFloat / DynamicQuantizeMatMul (+ epilogue) as q8_gemm_pk8. a, a_zp: names or
    Refs (DynamicQuantizeMatMul's quantized A is scratch); m: A's rows (default: from a's shape)."""
    k, n = b.shape(w)
    ref = lambda v: b.ref(v) if isinstance(v, str) else v
    if m is None:
        m = numel(b.shape(a)[:-1])
    b.emit("q8_gemm_pk8", a=ref(a), bp=packed_b8(b, w, w_zp), a_zp=ref(a_zp) if a_zp else None, scale=scale,
           fbias=b.ref(fbias) if fbias else None, r=b.ref(r) if r else None, y=b.ref(y),
           scratch=b.scratch(_scratch_bytes(b.host, "nnw_q8_gemm_pk8_scratch_bytes", m, k)),
           a_dtype=b.dtype(a).onnx if isinstance(a, str) else U8.onnx, m=m, n=n, k=k, scale_s=scale_s, act=act)
