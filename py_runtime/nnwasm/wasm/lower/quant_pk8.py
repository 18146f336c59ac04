"""q8_gemm_pk8 (kernels_c/q8/gemm_pk8.c): the int8 GEMM of dynamically quantized transformers
(MatMulIntegerToFloat, DynamicQuantizeMatMul) on B kept as int8 panels, one byte a weight, packed
here once per weight (q8_pack_b8's layout in ops.def). It replaces q8_gemm_pk's int16 panels
(two bytes a weight) in new plans; q8_gemm_pk stays for plan files that hold it."""
import struct

from ...tensor import TensorData, numel
from .quant import U8, _const_values, _panels, _scratch_bytes


def pack_q8_b8(t, zps, k, n):
    """[K, N] uint8/int8 bytes -> int8 panels of 4 columns, k in blocks of 8 ([ceil(N/4)][ceil(K/8)]
    [4][8], zeros past K and N; uint8 values minus 128), then int32 zc[ceil(N/4)*4] (the zero point,
    minus 128 for uint8; 0 past N). Pure Python at C speed as quant.pack_q8_b: columns are strided
    slices, uint8 -> int8 by a translate table, the panel order from strided slice assignments."""
    kp, n4 = -(-k // 8) * 8, -(-n // 4) * 4
    data = t.data if isinstance(t.data, bytes) else bytes(memoryview(t.data).cast("B"))
    unsigned, pad = t.dtype.name == "uint8", bytes(kp - k)
    flip = bytes((v + 128) & 0xFF for v in range(256)) if unsigned else None
    cols = [(data[j::n].translate(flip) if unsigned else data[j::n]) + pad if j < n else bytes(kp)
            for j in range(n4)]
    out = bytearray(_panels(cols, kp // 8))
    del cols
    shift = 128 if unsigned else 0
    zc = [(zps[j] if len(zps) > 1 else zps[0]) - shift if j < n else 0 for j in range(n4)]
    out += struct.pack(f"<{n4}i", *zc)
    return TensorData(U8, (len(out),), memoryview(out))


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
