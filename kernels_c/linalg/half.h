/* float16 -> float32, exact, for finite halves (no inf or NaN: the plan compiler stores only
 * those as halves). The half's bits h go to the top of a 32-bit lane (h << 16); an arithmetic
 * shift right by 3 then puts its exponent and mantissa where float32 keeps them, with the sign
 * copied into bits 28..30, which a mask clears: sign | e << 23 | m << 13, a float32 2^112 times too
 * small (its exponent bias is 127, the half's 15). One multiply by 2^112 scales it back, exactly,
 * subnormal halves included (float32 subnormals scaled into normals: wasm never flushes them).
 * Three integer ops and a multiply per four halves, no compares, no tables. */
#ifndef NNW_HALF_H
#define NNW_HALF_H
#include <stdint.h>
#include <string.h>

#include "simd.h"

#define NNW_HALF_SCALE 0x1p112f

#ifdef __wasm_simd128__
/* eight halves at h -> two v4 (lanes 0..3, 4..7) */
static inline void nnw_half8_to_v4(const uint16_t *h, v4 *lo, v4 *hi) {
  v128_t x = wasm_v128_load(h), z = wasm_i16x8_splat(0);
  v128_t mask = wasm_i32x4_splat((int32_t)0x8FFFFFFF), scale = wasm_f32x4_splat(NNW_HALF_SCALE);
  v128_t a = wasm_i16x8_shuffle(z, x, 0, 8, 1, 9, 2, 10, 3, 11);
  v128_t b = wasm_i16x8_shuffle(z, x, 4, 12, 5, 13, 6, 14, 7, 15);
  *lo = wasm_f32x4_mul(wasm_v128_and(wasm_i32x4_shr(a, 3), mask), scale);
  *hi = wasm_f32x4_mul(wasm_v128_and(wasm_i32x4_shr(b, 3), mask), scale);
}
#else
static inline float nnw_half_to_float(uint16_t h) {
  uint32_t w = (uint32_t)h << 16, bits = (w & 0x80000000u) | ((w & 0x7FFF0000u) >> 3);
  float f;
  memcpy(&f, &bits, 4);
  return f * NNW_HALF_SCALE;
}
static inline void nnw_half8_to_v4(const uint16_t *h, v4 *lo, v4 *hi) {
  float f[8];
  for (int i = 0; i < 8; i++) f[i] = nnw_half_to_float(h[i]);
  *lo = v4_load(f);
  *hi = v4_load(f + 4);
}
#endif

#endif
