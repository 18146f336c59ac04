/* Shared by the int8 kernels (kernels_c/q8/): element access by nnw_dtype, the round-and-saturate
 * rule, and the integer GEMM that q8_gemm and q8_conv2d run on. */
#ifndef NNW_Q8_H
#define NNW_Q8_H
#include <math.h>

#include "internal.h"

/* the quantized types' ranges; 0 for a dtype that is not uint8/int8 */
static inline int nnw_q8_is_q(int32_t dtype) { return dtype == NNW_U8 || dtype == NNW_I8; }
static inline int32_t nnw_q8_min(int32_t dtype) { return dtype == NNW_I8 ? -128 : 0; }
static inline int32_t nnw_q8_max(int32_t dtype) { return dtype == NNW_I8 ? 127 : 255; }

/* element i of a uint8/int8/int32 tensor as int32 (p may be NULL: 0) */
static inline int32_t nnw_q8_get(const uint8_t *p, int32_t dtype, size_t i) {
  if (p == NULL) return 0;
  switch (dtype) {
    case NNW_U8: return p[i];
    case NNW_I8: return (int8_t)p[i];
    default: {
      int32_t v;
      memcpy(&v, p + 4 * i, 4);
      return v;
    }
  }
}

static inline const uint8_t *nnw_q8_at(const uint8_t *arena, int32_t t) {
  return t < 0 ? NULL : arena + t;
}

#ifdef __wasm_simd128__
#include <wasm_simd128.h>

/* One k step of one row of a 4 x 8 int8 tile on int16 pairs: the row's pair v (splatted) against
 * the panel's two column halves bl and bh, added into sums c0 (columns 0-3) and c1 (4-7). A macro:
 * the microkernels (conv2d_pw.c, gemm.c) keep their eight sums in their own locals. */
#define NNW_Q8_DOT_ROW(c0, c1, v, bl, bh) \
  ((c0) = wasm_i32x4_add((c0), wasm_i32x4_dot_i16x8((v), (bl))), \
   (c1) = wasm_i32x4_add((c1), wasm_i32x4_dot_i16x8((v), (bh))))

/* 8 values of dtype (uint8 or int8) at p, widened to int16, minus vz */
static inline v128_t nnw_q8_load8_sub(const uint8_t *p, int32_t dtype, v128_t vz) {
  return wasm_i16x8_sub(dtype == NNW_U8 ? wasm_u16x8_load8x8(p) : wasm_i16x8_load8x8(p), vz);
}

/* One row of an int16 panel of 8 columns: out[2c + h] = row_h[c] - vz[c] for rows r0, r1 (r1
 * NULL: zeros), the pairs (k, k+1) of each column interleaved for i32x4.dot_i16x8. */
static inline void nnw_q8_pair_row8(int16_t *out, const uint8_t *r0, const uint8_t *r1, int32_t dtype, v128_t vz) {
  v128_t v0 = nnw_q8_load8_sub(r0, dtype, vz), v1 = r1 ? nnw_q8_load8_sub(r1, dtype, vz) : wasm_i16x8_splat(0);
  wasm_v128_store(out, wasm_i16x8_shuffle(v0, v1, 0, 8, 1, 9, 2, 10, 3, 11));
  wasm_v128_store(out + 8, wasm_i16x8_shuffle(v0, v1, 4, 12, 5, 13, 6, 14, 7, 15));
}
#endif

/* round half to even (the default rounding mode) and saturate into [lo, hi] after adding zp;
 * NaN goes to lo. The clamp happens in float so the conversion never overflows. */
static inline int32_t nnw_q8_round_sat(float v, int32_t zp, int32_t lo, int32_t hi) {
  float r = nearbyintf(v) + (float)zp;
  if (!(r >= (float)lo)) return lo;
  if (r > (float)hi) return hi;
  return (int32_t)r;
}

/* The integer GEMM: y[i*ldy + j] for i < m, j < n, following q8_gemm's rule in ops.def.
 * a[i*lda + kk], b[kk*ldb + j] (uint8 or int8); a_zp[i*a_zp_rs], b_zp[j*b_zp_cs] of the same
 * dtypes (NULL = 0); bias (int32) and scale indexed by i if per_row else j, times their stride.
 * scratch: nnw_q8_gemm_scratch(m, k) bytes, 4-aligned. */
struct nnw_q8_gemm {
  int32_t m, n, k, a_dtype, b_dtype, y_dtype;
  const uint8_t *a, *b, *a_zp, *b_zp;
  ptrdiff_t lda, ldb, a_zp_rs, b_zp_cs;
  const int32_t *bias;
  const float *scale;
  ptrdiff_t bias_s, scale_s;
  int per_row;
  int32_t y_zp, y_min, y_max;
  uint8_t *y;
  ptrdiff_t ldy;
  void *scratch;
  /* float32 output only (q8_gemm_ep): + fbias[j] + r[i*ldy + j], then gelu if act; NULL/0 = none */
  const float *fbias, *r;
  int act;
};
uint64_t nnw_q8_gemm_scratch(uint64_t m, uint64_t k);
void nnw_q8_gemm_run(const struct nnw_q8_gemm *g);

/* NNW_OK if y_dtype's output parameters are in range: y_zp, y_min <= y_max inside the type */
int nnw_q8_check_out(int32_t y_dtype, int32_t y_zp, int32_t y_min, int32_t y_max);

#endif
