/* q8_gemm_pk8: q8_gemm_pk (gemm_pk.c) on B kept as int8 in the arena, one byte a weight (the int16
 * panels of q8_pack_b take two: a decode step streamed twice the bytes, and kernels.wasm held
 * twice the weights). Panels of 4 columns, k in blocks of 8, as q8_gemm_pk's, but each block holds
 * two column pairs, the pair's bytes interleaved: byte 2i = column c (even) at k i, byte 2i + 1 =
 * column c + 1 (odd) at k i. Read as int16 lanes, a pair's 16 bytes are e + 256 o with the even
 * column's byte e taken unsigned and the odd one's o signed: i32x4.dot_i16x8 of A's 8 values with
 * the raw vector gives sum a (e + 256 o), with its i16x8.shr_s by 8 sum a o; so the even column is
 * raw - 256 odd. Two dots, one shift a pair (extend_low/high_i8x16 would take three instructions
 * in V8 where the shift takes one). The stored bytes are B offset per column (e = b + 128 for an
 * int8 B's even columns, o = b - 128 for a uint8 B's odd ones) and B's zero point left out: acc =
 * sum_k a16 * stored - zc[j] * asum[i], zc[j] = b_zp[j] - the offset, asum[i] = sum_k a16[i][k],
 * a16 = a - a_zp. That is sum_k a16 * (b - b_zp): the int32 sums wrap as q8_gemm_pk's do (the same
 * ring: any order, the same residues), so results equal q8_gemm_pk's bit for bit (the float
 * epilogue is its store_row and gelu_all, the same operations in the same order).
 *
 * One row of A (a decoder's step): row_panels, two panels (8 columns) side by side on one load of
 * the row's 8 k values: 8 independent accumulator chains, no row computed twice. Two or more rows
 * (prefill): each panel is widened once into the worker's pack buffer as int16 (e by a mask, o by
 * the shift) and gemm_pk's tile() runs every row pair on it, so prefill keeps the int16 kernel's
 * speed (the widening is 4*kp values per panel against m*4*kp multiply-adds). */
#include "q8.h"
#include "../linalg/pack_a.h"
#include "../simd.h"
#include "../vmath.h"
#include "../threads/split.h"

enum { MR = 2, NR = 4, KB = 8 };

static uint64_t round_kb(uint64_t k) { return (k + KB - 1) / KB * KB; }

/* a16 (m rows of kp int16), then asum (m int32) */
static uint64_t scratch_of(uint64_t m, uint64_t k) { return nnw_add(nnw_mul(nnw_mul(m, round_kb(k)), 2), nnw_mul(m, 4)); }

/* bp8 (n4 * kp int8), then zc (n4 int32) */
static uint64_t bp8_of(uint64_t n, uint64_t k) {
  uint64_t n4 = (n + NR - 1) / NR * NR;
  return nnw_add(nnw_mul(n4, round_kb(k)), nnw_mul(n4, 4));
}

/* a16[i*kp + kk] = a[i][kk] - zp, 0 past k; asum[i] = the row's sum (wrapping) */
static void pack_a(const uint8_t *a, int32_t dtype, int32_t zp, int32_t m, int32_t k, int32_t kp, int16_t *a16,
                   int32_t *asum) {
  for (int32_t i = 0; i < m; i++) {
    const uint8_t *row = a + (size_t)i * (size_t)k;
    int16_t *out = a16 + (size_t)i * (size_t)kp;
    int32_t kk = 0;
#ifdef __wasm_simd128__
    v128_t vz = wasm_i16x8_splat((int16_t)zp), s = wasm_i32x4_splat(0);
    for (; kk + 8 <= k; kk += 8) {
      v128_t v = nnw_q8_load8_sub(row + kk, dtype, vz);
      wasm_v128_store(out + kk, v);
      s = wasm_i32x4_add(s, wasm_i32x4_extadd_pairwise_i16x8(v));
    }
    uint32_t sum = (uint32_t)wasm_i32x4_extract_lane(s, 0) + (uint32_t)wasm_i32x4_extract_lane(s, 1) +
                   (uint32_t)wasm_i32x4_extract_lane(s, 2) + (uint32_t)wasm_i32x4_extract_lane(s, 3);
#else
    uint32_t sum = 0;
#endif
    for (; kk < k; kk++) {
      out[kk] = (int16_t)(nnw_q8_get(row, dtype, (size_t)kk) - zp);
      sum += (uint32_t)(int32_t)out[kk];
    }
    for (; kk < kp; kk++) out[kk] = 0;
    memcpy(&asum[i], &sum, 4);
  }
}

struct pk8 {
  const int16_t *a16;
  const int8_t *bp;
  const int32_t *zc, *asum;
  const float *scale, *fbias, *r;
  float *y;
  int16_t *wide; /* NULL: no widening (one row, or kp too large for the pack buffer) */
  int32_t m, n, kp, scale_s, act;
};

#ifdef __wasm_simd128__
/* nb <= 4 floats, zeros after them */
static v128_t load_n(const float *x, int32_t nb) {
  if (nb == NR) return wasm_v128_load(x);
  float t[NR] = {0};
  for (int32_t c = 0; c < nb; c++) t[c] = x[c];
  return wasm_v128_load(t);
}

/* [sum of x0's lanes, of x1's, of x2's, of x3's] (gemm_pk.c's hsum4) */
static v128_t hsum4(v128_t x0, v128_t x1, v128_t x2, v128_t x3) {
  v128_t t01 = wasm_i32x4_add(wasm_i32x4_shuffle(x0, x1, 0, 4, 1, 5), wasm_i32x4_shuffle(x0, x1, 2, 6, 3, 7));
  v128_t t23 = wasm_i32x4_add(wasm_i32x4_shuffle(x2, x3, 0, 4, 1, 5), wasm_i32x4_shuffle(x2, x3, 2, 6, 3, 7));
  return wasm_i32x4_add(wasm_i32x4_shuffle(t01, t23, 0, 1, 4, 5), wasm_i32x4_shuffle(t01, t23, 2, 3, 6, 7));
}
#endif

/* row i's 4 sums of the panel of columns j0.. (sums on bp8, before the zero point), minus
 * zc * asum[i], through gemm_pk.c's store_row epilogue; nb <= 4 columns stored */
static inline __attribute__((always_inline)) void store_row(const struct pk8 *p, int32_t i, int32_t j0, int32_t nb,
                                                             int32_t acc_in[NR], int scale_s, int fbias, int r) {
  size_t at = (size_t)i * (size_t)p->n + (size_t)j0;
#ifdef __wasm_simd128__
  /* in a vector (zc has n4 entries) */
  v128_t acc = wasm_i32x4_sub(wasm_v128_load(acc_in),
                              wasm_i32x4_mul(wasm_v128_load(p->zc + j0), wasm_i32x4_splat(p->asum[i])));
  v128_t s = scale_s ? load_n(p->scale + j0, nb) : wasm_f32x4_splat(p->scale[0]);
  v4 v = wasm_f32x4_mul(wasm_f32x4_convert_i32x4(acc), s);
  if (fbias) v = v4_add(v, load_n(p->fbias + j0, nb));
  if (r) v = v4_add(v, load_n(p->r + at, nb));
  if (nb == NR) { /* gelu: gelu_all */
    wasm_v128_store(p->y + at, v);
    return;
  }
  float t[NR];
  wasm_v128_store(t, v);
  for (int32_t c = 0; c < nb; c++) p->y[at + (size_t)c] = t[c];
#else
  int32_t acc[NR];
  for (int32_t c = 0; c < NR; c++) /* wrapping: uint32 */
    acc[c] = (int32_t)((uint32_t)acc_in[c] - (uint32_t)p->zc[j0 + c] * (uint32_t)p->asum[i]);
  for (int32_t c = 0; c < nb; c++) {
    float v = (float)acc[c] * p->scale[scale_s ? j0 + c : 0];
    if (fbias) v += p->fbias[j0 + c];
    if (r) v += p->r[at + (size_t)c];
    if (p->act) v = v4_lane0(v4_gelu(v4_set1(v)));
    p->y[at + (size_t)c] = v;
  }
#endif
}

#ifndef __wasm_simd128__
/* the stored value of column c (0-3) at k kk of a panel: even columns unsigned, odd signed */
static inline int32_t stored(const int8_t *panel, int32_t c, int32_t kk) {
  int8_t v = panel[(size_t)(kk / KB) * NR * KB + (size_t)(c / 2) * 16 + (size_t)(kk % KB) * 2 + (size_t)(c % 2)];
  return c % 2 ? (int32_t)v : (int32_t)(uint8_t)v;
}
#endif

#ifdef __wasm_simd128__
/* [R01, O01, R23, O23] (raw and odd sums of the two pairs) -> columns [R01 - 256 O01, O01, R23 -
 * 256 O23, O23], wrapping */
static v128_t unpair(v128_t h) {
  v128_t odd = wasm_i32x4_shuffle(h, wasm_i32x4_splat(0), 1, 4, 3, 4);
  return wasm_i32x4_sub(h, wasm_i32x4_shl(odd, 8));
}
#endif

/* acc[q][c] = row a0 . stored column c of panel q, for np (1 or 2) panels side by side */
static inline __attribute__((always_inline)) void row_panels(const int16_t *a0, int32_t kp, const int8_t *panel,
                                                              int np, int32_t acc[2][NR]) {
#ifdef __wasm_simd128__
  const int8_t *p1 = np == 2 ? panel + (size_t)kp * NR : panel;
  v128_t c0 = wasm_i32x4_splat(0), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0;
/* one k block of 8: the row's 8 values x against both pairs of each panel */
#define NNW_PK8_STEP(kk)                                                                    \
  do {                                                                                      \
    v128_t x = wasm_v128_load(a0 + (kk));                                                   \
    size_t at = (size_t)(kk) * NR;                                                          \
    v128_t b01 = wasm_v128_load(panel + at), b23 = wasm_v128_load(panel + at + 16);         \
    c0 = wasm_i32x4_add(c0, wasm_i32x4_dot_i16x8(x, b01));                                  \
    c1 = wasm_i32x4_add(c1, wasm_i32x4_dot_i16x8(x, wasm_i16x8_shr(b01, 8)));               \
    c2 = wasm_i32x4_add(c2, wasm_i32x4_dot_i16x8(x, b23));                                  \
    c3 = wasm_i32x4_add(c3, wasm_i32x4_dot_i16x8(x, wasm_i16x8_shr(b23, 8)));               \
    if (np == 2) {                                                                          \
      v128_t d01 = wasm_v128_load(p1 + at), d23 = wasm_v128_load(p1 + at + 16);             \
      c4 = wasm_i32x4_add(c4, wasm_i32x4_dot_i16x8(x, d01));                                \
      c5 = wasm_i32x4_add(c5, wasm_i32x4_dot_i16x8(x, wasm_i16x8_shr(d01, 8)));             \
      c6 = wasm_i32x4_add(c6, wasm_i32x4_dot_i16x8(x, d23));                                \
      c7 = wasm_i32x4_add(c7, wasm_i32x4_dot_i16x8(x, wasm_i16x8_shr(d23, 8)));             \
    }                                                                                       \
  } while (0)
  int32_t kk = 0;
  for (; kk + 2 * KB <= kp; kk += 2 * KB) { /* two blocks a trip: half the loop's overhead */
    NNW_PK8_STEP(kk);
    NNW_PK8_STEP(kk + KB);
  }
  if (kk < kp) NNW_PK8_STEP(kk);
#undef NNW_PK8_STEP
  wasm_v128_store(acc[0], unpair(hsum4(c0, c1, c2, c3)));
  if (np == 2) wasm_v128_store(acc[1], unpair(hsum4(c4, c5, c6, c7)));
#else
  /* the same sums lane by lane; uint32 wraps like the SIMD lanes */
  for (int q = 0; q < np; q++) {
    const int8_t *pq = panel + (size_t)q * (size_t)kp * NR;
    for (int32_t c = 0; c < NR; c++) {
      uint32_t s = 0;
      for (int32_t kk = 0; kk < kp; kk++) s += (uint32_t)((int32_t)a0[kk] * stored(pq, c, kk));
      memcpy(&acc[q][c], &s, 4);
    }
  }
#endif
}

/* acc[0][c] = row i0 of a16 . column c of the widened (int16) panel w: one row alone */
static void tile16_1(const struct pk8 *p, int32_t i0, const int16_t *w, int32_t acc[MR][NR]) {
  const int16_t *a0 = p->a16 + (size_t)i0 * (size_t)p->kp;
#ifdef __wasm_simd128__
  v128_t c0 = wasm_i32x4_splat(0), c1 = c0, c2 = c0, c3 = c0;
  for (int32_t kk = 0; kk < p->kp; kk += KB, w += NR * KB) {
    v128_t x0 = wasm_v128_load(a0 + kk);
    c0 = wasm_i32x4_add(c0, wasm_i32x4_dot_i16x8(x0, wasm_v128_load(w)));
    c1 = wasm_i32x4_add(c1, wasm_i32x4_dot_i16x8(x0, wasm_v128_load(w + 8)));
    c2 = wasm_i32x4_add(c2, wasm_i32x4_dot_i16x8(x0, wasm_v128_load(w + 16)));
    c3 = wasm_i32x4_add(c3, wasm_i32x4_dot_i16x8(x0, wasm_v128_load(w + 24)));
  }
  wasm_v128_store(acc[0], hsum4(c0, c1, c2, c3));
#else
  for (int32_t c = 0; c < NR; c++) {
    uint32_t s = 0;
    for (int32_t kk = 0; kk < p->kp; kk++)
      s += (uint32_t)((int32_t)a0[kk] * (int32_t)w[(size_t)(kk / KB) * NR * KB + (size_t)c * KB + kk % KB]);
    memcpy(&acc[0][c], &s, 4);
  }
#endif
}

/* acc[r][c] = row i0 + r of a16 . column c of the widened (int16) panel w, r < 2: gemm_pk.c's tile() */
static void tile16_2(const struct pk8 *p, int32_t i0, const int16_t *w, int32_t acc[MR][NR]) {
  const int16_t *a0 = p->a16 + (size_t)i0 * (size_t)p->kp;
#ifdef __wasm_simd128__
  const int16_t *a1 = a0 + p->kp;
  v128_t c00 = wasm_i32x4_splat(0), c01 = c00, c02 = c00, c03 = c00;
  v128_t c10 = c00, c11 = c00, c12 = c00, c13 = c00;
  for (int32_t kk = 0; kk < p->kp; kk += KB, w += NR * KB) {
    v128_t x0 = wasm_v128_load(a0 + kk), x1 = wasm_v128_load(a1 + kk);
    v128_t b0 = wasm_v128_load(w), b1 = wasm_v128_load(w + 8);
    c00 = wasm_i32x4_add(c00, wasm_i32x4_dot_i16x8(x0, b0));
    c10 = wasm_i32x4_add(c10, wasm_i32x4_dot_i16x8(x1, b0));
    c01 = wasm_i32x4_add(c01, wasm_i32x4_dot_i16x8(x0, b1));
    c11 = wasm_i32x4_add(c11, wasm_i32x4_dot_i16x8(x1, b1));
    v128_t b2 = wasm_v128_load(w + 16), b3 = wasm_v128_load(w + 24);
    c02 = wasm_i32x4_add(c02, wasm_i32x4_dot_i16x8(x0, b2));
    c12 = wasm_i32x4_add(c12, wasm_i32x4_dot_i16x8(x1, b2));
    c03 = wasm_i32x4_add(c03, wasm_i32x4_dot_i16x8(x0, b3));
    c13 = wasm_i32x4_add(c13, wasm_i32x4_dot_i16x8(x1, b3));
  }
  wasm_v128_store(acc[0], hsum4(c00, c01, c02, c03));
  wasm_v128_store(acc[1], hsum4(c10, c11, c12, c13));
#else
  for (int32_t r = 0; r < 2; r++) {
    const int16_t *ar = a0 + (size_t)r * (size_t)p->kp;
    for (int32_t c = 0; c < NR; c++) {
      uint32_t s = 0;
      for (int32_t kk = 0; kk < p->kp; kk++)
        s += (uint32_t)((int32_t)ar[kk] * (int32_t)w[(size_t)(kk / KB) * NR * KB + (size_t)c * KB + kk % KB]);
      memcpy(&acc[r][c], &s, 4);
    }
  }
#endif
}

/* the int8 panel widened to int16 stored values in q8_gemm_pk's layout: w[(kk/8)*32 + c*8 + kk%8] */
static void widen(const int8_t *panel, int32_t kp, int16_t *w) {
#ifdef __wasm_simd128__
  const v128_t low = wasm_i16x8_splat(0xFF);
  for (size_t e = 0; e < (size_t)kp * NR; e += 16) {
    v128_t v = wasm_v128_load(panel + e);
    wasm_v128_store(w + e, wasm_v128_and(v, low));
    wasm_v128_store(w + e + 8, wasm_i16x8_shr(v, 8));
  }
#else
  for (int32_t kk = 0; kk < kp; kk++)
    for (int32_t c = 0; c < NR; c++) w[(size_t)(kk / KB) * NR * KB + (size_t)c * KB + kk % KB] = (int16_t)stored(panel, c, kk);
#endif
}

#ifdef __wasm_simd128__
/* gemm_pk.c's gelu_all: gelu of rows r0.. of y after the GEMM */
static void gelu_all(const struct pk8 *p, int32_t r0, int32_t rows) {
  float *y = p->y + (size_t)r0 * (size_t)p->n;
  size_t count = (size_t)rows * (size_t)p->n, i = 0;
  for (; i + 8 <= count; i += 8) {
    v4 a = v4_gelu(wasm_v128_load(y + i)), b = v4_gelu(wasm_v128_load(y + i + 4));
    wasm_v128_store(y + i, a);
    wasm_v128_store(y + i + 4, b);
  }
  for (; i < count; i++) y[i] = v4_lane0(v4_gelu(v4_set1(y[i]))); /* lane by lane: the same bits */
}
#endif

static inline int32_t cols_of(const struct pk8 *p, int32_t j0) { return p->n - j0 < NR ? p->n - j0 : NR; }

/* panels [q_lo, q_hi), row by row on the int8 panels, two panels side by side; the epilogue's
 * options as constants */
static inline __attribute__((always_inline)) void gemv_with(const struct pk8 *p, int scale_s, int fbias, int r,
                                                           int32_t q_lo, int32_t q_hi) {
  int32_t acc[2][NR];
  size_t panel_len = (size_t)p->kp * NR;
  for (int32_t i = 0; i < p->m; i++) {
    const int16_t *a0 = p->a16 + (size_t)i * (size_t)p->kp;
    int32_t q = q_lo;
    for (; q + 2 <= q_hi; q += 2) {
      row_panels(a0, p->kp, p->bp + (size_t)q * panel_len, 2, acc);
      store_row(p, i, q * NR, cols_of(p, q * NR), acc[0], scale_s, fbias, r);
      store_row(p, i, (q + 1) * NR, cols_of(p, (q + 1) * NR), acc[1], scale_s, fbias, r);
    }
    if (q < q_hi) {
      row_panels(a0, p->kp, p->bp + (size_t)q * panel_len, 1, acc);
      store_row(p, i, q * NR, cols_of(p, q * NR), acc[0], scale_s, fbias, r);
    }
  }
}

/* panels [q_lo, q_hi), each widened once into `wide`, then every row pair on it (separate from
 * the GEMV's code: one function holding both compiled the tiles worse) */
static inline __attribute__((always_inline)) void rows_with(const struct pk8 *p, int scale_s, int fbias, int r,
                                                           int32_t q_lo, int32_t q_hi, int16_t *wide) {
  int32_t acc[MR][NR];
  size_t panel_len = (size_t)p->kp * NR;
  for (int32_t q = q_lo; q < q_hi; q++) {
    int32_t j0 = q * NR, nb = cols_of(p, j0);
    widen(p->bp + (size_t)q * panel_len, p->kp, wide);
    for (int32_t i0 = 0; i0 < p->m; i0 += MR) {
      int32_t mr = p->m - i0 < MR ? p->m - i0 : MR;
      if (mr == 2) tile16_2(p, i0, wide, acc);
      else tile16_1(p, i0, wide, acc);
      for (int32_t k = 0; k < mr; k++) store_row(p, i0 + k, j0, nb, acc[k], scale_s, fbias, r);
    }
  }
}

static void run_gemv(const struct pk8 *p, int32_t q_lo, int32_t q_hi) {
  switch ((p->scale_s ? 4 : 0) | (p->fbias ? 2 : 0) | (p->r ? 1 : 0)) {
    case 0: gemv_with(p, 0, 0, 0, q_lo, q_hi); break;
    case 1: gemv_with(p, 0, 0, 1, q_lo, q_hi); break;
    case 2: gemv_with(p, 0, 1, 0, q_lo, q_hi); break;
    case 3: gemv_with(p, 0, 1, 1, q_lo, q_hi); break;
    case 4: gemv_with(p, 1, 0, 0, q_lo, q_hi); break;
    case 5: gemv_with(p, 1, 0, 1, q_lo, q_hi); break;
    case 6: gemv_with(p, 1, 1, 0, q_lo, q_hi); break;
    default: gemv_with(p, 1, 1, 1, q_lo, q_hi); break;
  }
}

static void run_rows(const struct pk8 *p, int32_t q_lo, int32_t q_hi, int16_t *wide) {
  switch ((p->scale_s ? 4 : 0) | (p->fbias ? 2 : 0) | (p->r ? 1 : 0)) {
    case 0: rows_with(p, 0, 0, 0, q_lo, q_hi, wide); break;
    case 1: rows_with(p, 0, 0, 1, q_lo, q_hi, wide); break;
    case 2: rows_with(p, 0, 1, 0, q_lo, q_hi, wide); break;
    case 3: rows_with(p, 0, 1, 1, q_lo, q_hi, wide); break;
    case 4: rows_with(p, 1, 0, 0, q_lo, q_hi, wide); break;
    case 5: rows_with(p, 1, 0, 1, q_lo, q_hi, wide); break;
    case 6: rows_with(p, 1, 1, 0, q_lo, q_hi, wide); break;
    default: rows_with(p, 1, 1, 1, q_lo, q_hi, wide); break;
  }
}

static void run_panels(const struct pk8 *p, int32_t q_lo, int32_t q_hi, int16_t *wide) {
  if (wide != NULL) run_rows(p, q_lo, q_hi, wide);
  else run_gemv(p, q_lo, q_hi);
}

/* Threads (threads/split.h): y's columns in tiles of whole panels (integer sums, every output's
 * epilogue as on one thread), each worker widening into its own pack buffer; gelu by rows */
static void panels_task(void *ctx, int32_t start, int32_t count, int32_t worker) {
  const struct pk8 *p = ctx;
  run_panels(p, start, start + count, p->wide != NULL ? (int16_t *)(void *)nnw_pool_pack_buf(worker) : NULL);
}

#ifdef __wasm_simd128__
static void gelu_task(void *ctx, int32_t start, int32_t count, int32_t worker) {
  (void)worker;
  gelu_all(ctx, start, count);
}
#endif

static void run(struct pk8 *p) {
  int32_t panels = (p->n + NR - 1) / NR;
  /* widen for two rows or more when a panel fits the pack buffer (kp <= 16384) */
  p->wide = p->m >= 2 && (uint64_t)p->kp * NR * 2 <= (uint64_t)NNW_PACK_A_FLOATS * 4
                ? (int16_t *)(void *)nnw_pool_pack_buf(0) : NULL;
  int32_t threads = nnw_split_threads((uint64_t)p->m * p->n * p->kp, NNW_SPLIT_MIN_FLOPS, panels);
  if (threads > 1) nnw_parallel_for(panels, nnw_split_tile(panels, threads), panels_task, p);
  else run_panels(p, 0, panels, p->wide);
#ifdef __wasm_simd128__
  if (p->act) {
    int32_t gt = nnw_split_threads((uint64_t)p->m * p->n * 16, NNW_SPLIT_MIN_ELEMS, p->m);
    nnw_parallel_for(p->m, gt > 1 ? nnw_split_tile(p->m, gt) : p->m, gelu_task, p);
  }
#endif
}

struct pk8_args {
  int32_t a, bp, a_zp, scale, fbias, r, y, scratch, a_dtype, m, n, k, scale_s, act;
};
typedef char pk8_args_match_ops_def[sizeof(struct pk8_args) == 4 * NNW_Q8_GEMM_PK8_NARGS ? 1 : -1];

static struct pk8_args decode(const int32_t *v) {
  struct pk8_args p;
  memcpy(&p, v, sizeof p); /* the field order is ops.def's */
  return p;
}

int nnw_validate_q8_gemm_pk8(const int32_t *args, uint32_t arena_bytes) {
  struct pk8_args p = decode(args);
  int32_t pos[] = {p.m, p.n, p.k};
  NNW_TRY(nnw_check_positive(pos, 3));
  if (!nnw_q8_is_q(p.a_dtype) || (p.scale_s & ~1) || (p.act & ~1)) return NNW_BAD_ARGS;
  uint64_t m = (uint64_t)p.m, n = (uint64_t)p.n, k = (uint64_t)p.k;
  uint64_t bp_bytes = bp8_of(n, k), y_bytes = nnw_mul(nnw_mul(m, n), 4), scratch = scratch_of(m, k);
  uint64_t scale_bytes = p.scale_s ? 4 * n : 4;
  NNW_TRY(nnw_check_typed(p.a, nnw_mul(m, k), p.a_dtype, arena_bytes, 0));
  NNW_TRY(nnw_check_tensor(p.bp, bp_bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_typed(p.a_zp, 1, p.a_dtype, arena_bytes, 1));
  NNW_TRY(nnw_check_tensor(p.scale, scale_bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(p.fbias, 4 * n, arena_bytes, 1, 1));
  NNW_TRY(nnw_check_tensor(p.r, y_bytes, arena_bytes, 1, 1));
  NNW_TRY(nnw_check_tensor(p.y, y_bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(p.scratch, scratch, arena_bytes, 0, 1));
  const int32_t at[] = {p.a, p.bp, p.a_zp, p.scale, p.fbias, p.r, p.y, p.scratch};
  const uint64_t size[] = {nnw_mul(m, k), bp_bytes, 1, scale_bytes, 4 * n, y_bytes, y_bytes, scratch};
  for (int i = 0; i < 8; i++) /* the output and the scratch apart from everything else */
    for (int j = i + 1; j < 8; j++)
      if (j >= 6) NNW_TRY(nnw_check_apart(at[i], size[i], at[j], size[j], 0));
  return NNW_OK;
}

void nnw_run_q8_gemm_pk8(const int32_t *args, uint8_t *arena) {
  struct pk8_args a = decode(args);
  int32_t kp = (int32_t)round_kb((uint64_t)a.k), n4 = (a.n + NR - 1) / NR * NR;
  int16_t *a16 = (int16_t *)(void *)(arena + a.scratch);
  int32_t *asum = (int32_t *)(void *)(arena + a.scratch + (size_t)a.m * (size_t)kp * 2);
  const int8_t *bp = (const int8_t *)(arena + a.bp);
  struct pk8 p = {.a16 = a16, .bp = bp, .zc = (const int32_t *)(const void *)(bp + (size_t)n4 * (size_t)kp),
                  .asum = asum, .scale = nnw_f32_at(arena, a.scale), .fbias = nnw_f32_at(arena, a.fbias),
                  .r = nnw_f32_at(arena, a.r), .y = nnw_f32_at(arena, a.y), .m = a.m, .n = a.n, .kp = kp,
                  .scale_s = a.scale_s, .act = a.act};
  int32_t zp = nnw_q8_get(nnw_q8_at(arena, a.a_zp), a.a_dtype, 0);
  pack_a(arena + a.a, a.a_dtype, zp, a.m, a.k, kp, a16, asum);
  run(&p);
}

/* scratch bytes q8_gemm_pk8 needs for an [m, k] a (what the plan compiler asks), -1 if too large */
NNW_EXPORT int32_t nnw_q8_gemm_pk8_scratch_bytes(int32_t m, int32_t k) {
  if (m <= 0 || k <= 0) return -1;
  uint64_t bytes = scratch_of((uint64_t)m, (uint64_t)k);
  return bytes > INT32_MAX ? -1 : (int32_t)bytes;
}

/* bytes of q8_pack_b8's panels for a [k, n] B, -1 if too large */
NNW_EXPORT int32_t nnw_q8_pack_b8_bytes(int32_t k, int32_t n) {
  if (k <= 0 || n <= 0) return -1;
  uint64_t bytes = bp8_of((uint64_t)n, (uint64_t)k);
  return bytes > INT32_MAX ? -1 : (int32_t)bytes;
}

/* ---- q8_pack_b8: B as int8 panels (an init op; lower/quant_pk8.py packs the same bytes) ------- */

struct pack_b8_args {
  int32_t b, b_zp, bp, b_dtype, k, n, b_zp_cs;
};
typedef char pack_b8_args_match_ops_def[sizeof(struct pack_b8_args) == 4 * NNW_Q8_PACK_B8_NARGS ? 1 : -1];

static struct pack_b8_args decode_pack(const int32_t *v) {
  struct pack_b8_args p;
  memcpy(&p, v, sizeof p); /* the field order is ops.def's */
  return p;
}

int nnw_validate_q8_pack_b8(const int32_t *args, uint32_t arena_bytes) {
  struct pack_b8_args p = decode_pack(args);
  int32_t pos[] = {p.k, p.n};
  NNW_TRY(nnw_check_positive(pos, 2));
  if (!nnw_q8_is_q(p.b_dtype) || (p.b_zp_cs & ~1)) return NNW_BAD_ARGS;
  uint64_t k = (uint64_t)p.k, n = (uint64_t)p.n, b_n = nnw_mul(k, n), zp_n = p.b_zp_cs ? n : 1;
  uint64_t bp_bytes = bp8_of(n, k);
  NNW_TRY(nnw_check_typed(p.b, b_n, p.b_dtype, arena_bytes, 0));
  NNW_TRY(nnw_check_typed(p.b_zp, zp_n, p.b_dtype, arena_bytes, 1));
  NNW_TRY(nnw_check_tensor(p.bp, bp_bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_apart(p.b, b_n, p.bp, bp_bytes, 0));
  NNW_TRY(nnw_check_apart(p.b_zp, zp_n, p.bp, bp_bytes, 0));
  return NNW_OK;
}

void nnw_run_q8_pack_b8(const int32_t *args, uint8_t *arena) {
  struct pack_b8_args a = decode_pack(args);
  int32_t kp = (int32_t)round_kb((uint64_t)a.k), n4 = (a.n + NR - 1) / NR * NR;
  const uint8_t *b = arena + a.b, *zp = nnw_q8_at(arena, a.b_zp);
  uint8_t *bp = arena + a.bp;
  memset(bp, 0, (size_t)n4 * (size_t)kp);
  for (int32_t j = 0; j < n4; j++) {
    /* the offset stored - b: +128 for an int8 B's even columns, -128 for a uint8 B's odd ones */
    int32_t off = a.b_dtype == NNW_I8 ? (j % 2 ? 0 : 128) : (j % 2 ? -128 : 0);
    uint8_t *col = bp + (size_t)(j / NR) * (size_t)kp * NR + (size_t)(j % NR / 2) * 16 + (size_t)(j % 2);
    if (j < a.n)
      for (int32_t kk = 0; kk < a.k; kk++)
        col[(size_t)(kk / KB) * NR * KB + (size_t)(kk % KB) * 2] =
            (uint8_t)(nnw_q8_get(b + (size_t)kk * (size_t)a.n, a.b_dtype, (size_t)j) + off);
    int32_t zc = j < a.n ? nnw_q8_get(zp, a.b_dtype, (size_t)j * (size_t)a.b_zp_cs) + off : 0;
    memcpy(bp + (size_t)n4 * (size_t)kp + 4 * (size_t)j, &zc, 4);
  }
}
