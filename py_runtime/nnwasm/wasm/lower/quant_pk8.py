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
    int32 zc[ceil(N/4)*4] = the zero point plus that offset (0 past N). Pure Python at C speed as
    quant.pack_q8_b was: columns are strided slices, the offsets a translate table, the pairs and
    the panel order strided slice assignments."""
    kp, n4 = -(-k // 8) * 8, -(-n // 4) * 4
    nk = kp // 8
    data = t.data if isinstance(t.data, bytes) else bytes(memoryview(t.data).cast("B"))
    signed, pad = t.dtype.name == "int8", bytes(kp - k)
    flip = bytes((v + 128) & 0xFF for v in range(256))
    out = array("Q", bytes(n4 * kp))
    for j0 in range(0, n4, 2):   # a pair of columns: 2*kp bytes, nk blocks of two 8-byte words
        pair = bytearray(2 * kp)
        for c in (0, 1):
            j = j0 + c
            if j < n:
                col = data[j::n]
                pair[c::2] = (col.translate(flip) if signed == (c == 0) else col) + pad
        words = array("Q", bytes(pair))
        base = (j0 // 4) * 4 * nk + (j0 % 4 // 2) * 2   # the panel's first word, then the pair's
        out[base:base + 4 * nk:4] = words[0::2]
        out[base + 1:base + 4 * nk:4] = words[1::2]
    off = [(128 if signed else 0) if j % 2 == 0 else (0 if signed else -128) for j in range(n4)]
    zc = [(zps[j] if len(zps) > 1 else zps[0]) + off[j] if j < n else 0 for j in range(n4)]
    return TensorData(U8, (n4 * kp + 4 * n4,), memoryview(out.tobytes() + struct.pack(f"<{n4}i", *zc)))


def packed_b8(b, w, w_zp):
    """A Ref to pack_q8_b8 of the constant w, made once per (weight, zero point)."""
    k, n = b.shape(w)
    cache = b.__dict__.setdefault("q8_packed8", {})
    if (w, w_zp) not in cache:
        zps = [int(v) for v in _const_values(b.graph, w_zp)] if w_zp else [0]
        t = b.graph.initializers[w]
        kp, n4 = -(-k // 8) * 8, -(-n // 4) * 4
        cache[(w, w_zp)] = b.constant(b.derived(("pack_q8_b8", k, n, *zps), t, make=lambda: pack_q8_b8(t, zps, k, n),
                                                like=(U8, (n4 * kp + 4 * n4,))))
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
