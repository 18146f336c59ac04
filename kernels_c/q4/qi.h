/* 128-bit integer vectors for q4_matmul's int8 path (nbits_int8.c): the few i16x8 / i32x4
 * operations it needs, as WASM SIMD (no relaxed SIMD: the same bits on every engine), and lane by
 * lane in plain C for the native builds, so the sanitizer build runs the same loops on the same
 * integers. One definition per backend, as simd.h's v4. */
#ifndef NNW_Q4_QI_H
#define NNW_Q4_QI_H
#include <stdint.h>
#include <string.h>

#include "../simd.h"

#ifdef __wasm_simd128__
typedef v128_t qi;
static inline qi qi_load(const void *p) { return wasm_v128_load(p); }
/* 8 bytes, zeros above: a column's last half chunk, never read past */
static inline qi qi_load8(const void *p) { return wasm_v128_load64_zero(p); }
static inline qi qi_splat16(int32_t x) { return wasm_i16x8_splat((int16_t)x); }
static inline qi qi_splat32(int32_t x) { return wasm_i32x4_splat(x); }
static inline qi qi_make32(int32_t a, int32_t b, int32_t c, int32_t d) { return wasm_i32x4_make(a, b, c, d); }
static inline qi qi_and(qi a, qi b) { return wasm_v128_and(a, b); }
static inline qi qi_xor(qi a, qi b) { return wasm_v128_xor(a, b); }
/* each uint16 lane shifted right by n */
static inline qi qi_shr16(qi a, int n) { return wasm_u16x8_shr(a, n); }
/* lane i: a[2i] b[2i] + a[2i+1] b[2i+1], int16 lanes, exact in int32 */
static inline qi qi_dot16(qi a, qi b) { return wasm_i32x4_dot_i16x8(a, b); }
static inline qi qi_add32(qi a, qi b) { return wasm_i32x4_add(a, b); }
static inline qi qi_sub32(qi a, qi b) { return wasm_i32x4_sub(a, b); }
static inline qi qi_mul32(qi a, qi b) { return wasm_i32x4_mul(a, b); }
static inline v4 qi_to_f32(qi a) { return wasm_f32x4_convert_i32x4(a); }
/* (a0, a0, a1, a1) and (a2, a2, a3, a3) */
static inline qi qi_dup01(qi a) { return wasm_i32x4_shuffle(a, a, 0, 0, 1, 1); }
static inline qi qi_dup23(qi a) { return wasm_i32x4_shuffle(a, a, 2, 2, 3, 3); }
static inline v4 q4_make4(float a, float b, float c, float d) { return wasm_f32x4_make(a, b, c, d); }
/* lane c: the sum of x_c's four lanes (four columns' dot products into one vector) */
static inline qi qi_sum4(qi x0, qi x1, qi x2, qi x3) {
  qi t01 = wasm_i32x4_add(wasm_i32x4_shuffle(x0, x1, 0, 4, 1, 5), wasm_i32x4_shuffle(x0, x1, 2, 6, 3, 7));
  qi t23 = wasm_i32x4_add(wasm_i32x4_shuffle(x2, x3, 0, 4, 1, 5), wasm_i32x4_shuffle(x2, x3, 2, 6, 3, 7));
  return wasm_i32x4_add(wasm_i32x4_shuffle(t01, t23, 0, 1, 4, 5), wasm_i32x4_shuffle(t01, t23, 2, 3, 6, 7));
}
/* lane c of *lo: x_c's lanes 0 + 1; of *hi: its lanes 2 + 3 (two blocks in one chunk) */
static inline void qi_sum2(qi x0, qi x1, qi x2, qi x3, qi *lo, qi *hi) {
  qi t01 = wasm_i32x4_add(wasm_i32x4_shuffle(x0, x1, 0, 4, 2, 6), wasm_i32x4_shuffle(x0, x1, 1, 5, 3, 7));
  qi t23 = wasm_i32x4_add(wasm_i32x4_shuffle(x2, x3, 0, 4, 2, 6), wasm_i32x4_shuffle(x2, x3, 1, 5, 3, 7));
  *lo = wasm_i32x4_shuffle(t01, t23, 0, 1, 4, 5);
  *hi = wasm_i32x4_shuffle(t01, t23, 2, 3, 6, 7);
}
#else
typedef struct {
  int32_t w[4];
} qi;
static inline qi qi_load(const void *p) {
  qi r;
  memcpy(r.w, p, 16);
  return r;
}
static inline qi qi_load8(const void *p) {
  qi r = {{0, 0, 0, 0}};
  memcpy(r.w, p, 8);
  return r;
}
static inline qi qi_make32(int32_t a, int32_t b, int32_t c, int32_t d) {
  qi r = {{a, b, c, d}};
  return r;
}
static inline qi qi_splat32(int32_t x) { return qi_make32(x, x, x, x); }
static inline qi qi_splat16(int32_t x) {
  uint32_t u = (uint32_t)(uint16_t)x * 0x10001u;
  return qi_splat32((int32_t)u);
}
static inline qi qi_and(qi a, qi b) {
  for (int i = 0; i < 4; i++) a.w[i] &= b.w[i];
  return a;
}
static inline qi qi_xor(qi a, qi b) {
  for (int i = 0; i < 4; i++) a.w[i] ^= b.w[i];
  return a;
}
static inline qi qi_shr16(qi a, int n) {
  uint16_t h[8];
  memcpy(h, a.w, 16);
  for (int i = 0; i < 8; i++) h[i] = (uint16_t)(h[i] >> n);
  memcpy(a.w, h, 16);
  return a;
}
static inline qi qi_dot16(qi a, qi b) {
  int16_t x[8], y[8];
  memcpy(x, a.w, 16);
  memcpy(y, b.w, 16);
  qi r;
  for (int i = 0; i < 4; i++) r.w[i] = (int32_t)x[2 * i] * y[2 * i] + (int32_t)x[2 * i + 1] * y[2 * i + 1];
  return r;
}
static inline qi qi_add32(qi a, qi b) {
  for (int i = 0; i < 4; i++) a.w[i] = (int32_t)((uint32_t)a.w[i] + (uint32_t)b.w[i]);
  return a;
}
static inline qi qi_sub32(qi a, qi b) {
  for (int i = 0; i < 4; i++) a.w[i] = (int32_t)((uint32_t)a.w[i] - (uint32_t)b.w[i]);
  return a;
}
static inline qi qi_mul32(qi a, qi b) {
  for (int i = 0; i < 4; i++) a.w[i] = (int32_t)((uint32_t)a.w[i] * (uint32_t)b.w[i]);
  return a;
}
static inline v4 qi_to_f32(qi a) {
  float f[4];
  for (int i = 0; i < 4; i++) f[i] = (float)a.w[i];
  return v4_load(f);
}
static inline qi qi_dup01(qi a) { return qi_make32(a.w[0], a.w[0], a.w[1], a.w[1]); }
static inline qi qi_dup23(qi a) { return qi_make32(a.w[2], a.w[2], a.w[3], a.w[3]); }
static inline v4 q4_make4(float a, float b, float c, float d) {
  float f[4] = {a, b, c, d};
  return v4_load(f);
}
static inline qi qi_sum4(qi x0, qi x1, qi x2, qi x3) {
  const qi *x[4] = {&x0, &x1, &x2, &x3};
  qi r;
  for (int c = 0; c < 4; c++) {
    uint32_t u = ((uint32_t)x[c]->w[0] + (uint32_t)x[c]->w[2]) + ((uint32_t)x[c]->w[1] + (uint32_t)x[c]->w[3]);
    r.w[c] = (int32_t)u;
  }
  return r;
}
static inline void qi_sum2(qi x0, qi x1, qi x2, qi x3, qi *lo, qi *hi) {
  const qi *x[4] = {&x0, &x1, &x2, &x3};
  for (int c = 0; c < 4; c++) {
    lo->w[c] = (int32_t)((uint32_t)x[c]->w[0] + (uint32_t)x[c]->w[1]);
    hi->w[c] = (int32_t)((uint32_t)x[c]->w[2] + (uint32_t)x[c]->w[3]);
  }
}
#endif
#endif
