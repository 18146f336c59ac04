/* Lane decoding of bit-packed weights for the q4 kernels: 16 bytes of blocks seen as four 32-bit
 * lanes, each holding E = 32/bits elements (element t at bits t*bits), so element t of every lane
 * comes out of one AND (and one shift for the top one) and one int32 -> f32 conversion, with no
 * widening steps: the value arrives multiplied by 2^(bits*t), which the kernels fold into their
 * copy of A (an exact power-of-two scaling). One definition per backend, as simd.h's v4. */
#ifndef NNW_Q4_H
#define NNW_Q4_H
#include <stdint.h>
#include <string.h>

#include "../simd.h"

#ifdef __wasm_simd128__
static inline v4 q4_load16(const uint8_t *p) { return wasm_v128_load(p); }
/* f32(int32(x) & mask) per lane */
static inline v4 q4_and_cvt(v4 x, uint32_t mask) {
  return wasm_f32x4_convert_i32x4(wasm_v128_and(x, wasm_i32x4_splat((int32_t)mask)));
}
/* f32(int32((uint32(x) >> sh) & mask)) per lane */
static inline v4 q4_shr_and_cvt(v4 x, int sh, uint32_t mask) {
  return wasm_f32x4_convert_i32x4(wasm_v128_and(wasm_u32x4_shr(x, sh), wasm_i32x4_splat((int32_t)mask)));
}
#elif defined(__GNUC__) && !defined(NNW_PORTABLE_C)
static inline v4 q4_load16(const uint8_t *p) {
  v4 r;
  memcpy(&r, p, 16);
  return r;
}
static inline v4 q4_and_cvt(v4 x, uint32_t mask) {
  return __builtin_convertvector((nnw_v4i)((nnw_v4u)x & mask), v4);
}
static inline v4 q4_shr_and_cvt(v4 x, int sh, uint32_t mask) {
  return __builtin_convertvector((nnw_v4i)(((nnw_v4u)x >> sh) & mask), v4);
}
#else
static inline v4 q4_load16(const uint8_t *p) {
  v4 r;
  memcpy(r.f, p, 16);
  return r;
}
static inline v4 q4_and_cvt(v4 x, uint32_t mask) {
  for (int i = 0; i < 4; i++) {
    uint32_t u;
    memcpy(&u, &x.f[i], 4);
    x.f[i] = (float)(int32_t)(u & mask);
  }
  return x;
}
static inline v4 q4_shr_and_cvt(v4 x, int sh, uint32_t mask) {
  for (int i = 0; i < 4; i++) {
    uint32_t u;
    memcpy(&u, &x.f[i], 4);
    x.f[i] = (float)(int32_t)((u >> sh) & mask);
  }
  return x;
}
#endif

/* element t (< 32/bits) of every lane of x, as f32 times 2^(bits*t), or for the top element
 * (t = E-1, whose mask would reach the sign bit) shifted down by bits first: times 2^(bits*(E-2)) */
static inline v4 q4_elem(v4 x, int t, int bits) {
  const int e = 32 / bits;
  const uint32_t m = (1u << bits) - 1u;
  if (t < e - 1) return q4_and_cvt(x, m << (bits * t));
  return q4_shr_and_cvt(x, bits, m << (bits * (e - 2)));
}

/* the factor q4_elem's element t carries: 2^-(bits*t), 2^-(bits*(E-2)) for the top one */
static inline float q4_elem_scale(int t, int bits) {
  const int e = 32 / bits;
  int sh = bits * (t < e - 1 ? t : e - 2);
  return 1.0f / (float)(1u << sh);
}
#endif
