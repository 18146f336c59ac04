/* float16 -> float32, exact, for finite halves (no inf or NaN: the plan compiler stores only
 * those as halves), eight at a time from gemm_packed_f16's panels, where a k step's 8 columns are
 * stored in the order c0 c4 c1 c5 c2 c6 c3 c7: read as four 32-bit lanes, lane i holds column i
 * in its low half and column i + 4 in its high half, so no shuffle is needed.
 * A half's bits h at the top of a lane (h << 16), shifted right arithmetically by 3, put its
 * exponent and mantissa where float32 keeps them, with the sign copied into bits 28..30 (and the
 * low half's bits below 13), which a mask clears: sign | e << 23 | m << 13, a float32 2^112 times
 * too small (its exponent bias is 127, the half's 15). A multiply by 2^112 scales it back,
 * exactly, subnormal halves included (float32 subnormals scaled into normals: wasm never flushes
 * them). The GEMV path skips that multiply and scales A by 2^112 instead (gemm_packed_f16.c). */
#ifndef NNW_HALF_H
#define NNW_HALF_H
#include <stdint.h>
#include <string.h>

#include "simd.h"

#define NNW_HALF_SCALE 0x1p112f

#ifdef __wasm_simd128__
/* eight halves at h (paired as above) -> columns 0..3 and 4..7, 2^-112 times their values */
static inline void nnw_half8_bits(const uint16_t *h, v4 *lo, v4 *hi) {
  v128_t x = wasm_v128_load(h), mask = wasm_i32x4_splat((int32_t)0x8FFFE000);
  *lo = wasm_v128_and(wasm_i32x4_shr(wasm_i32x4_shl(x, 16), 3), mask);
  *hi = wasm_v128_and(wasm_i32x4_shr(x, 3), mask);
}
#else
static inline float nnw_half_bits(uint16_t h) {
  uint32_t w = (uint32_t)h << 16, bits = (w & 0x80000000u) | ((w & 0x7FFF0000u) >> 3);
  float f;
  memcpy(&f, &bits, 4);
  return f;
}
static inline void nnw_half8_bits(const uint16_t *h, v4 *lo, v4 *hi) {
  float f[8];
  for (int i = 0; i < 4; i++) {
    f[i] = nnw_half_bits(h[2 * i]);
    f[i + 4] = nnw_half_bits(h[2 * i + 1]);
  }
  *lo = v4_load(f);
  *hi = v4_load(f + 4);
}
#endif

/* the eight halves' values */
static inline void nnw_half8_to_v4(const uint16_t *h, v4 *lo, v4 *hi) {
  nnw_half8_bits(h, lo, hi);
  *lo = v4_mul(*lo, v4_set1(NNW_HALF_SCALE));
  *hi = v4_mul(*hi, v4_set1(NNW_HALF_SCALE));
}

#endif
