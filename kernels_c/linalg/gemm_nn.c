/* The f32 GEMM core behind conv2d, gemm and matmul: y = clamp(alpha * A B + beta * C) with B and
 * y row-major. Vectorized along the rows of B and y (the contiguous output dimension in NCHW),
 * A's scalars splatted: a 4x8 register tile holds 8 v128 accumulators, which with the two B
 * vectors and one splat stays within the 16 SIMD registers of x86-64. (A 6x8 tile, 15 registers,
 * measured 2.8x slower in V8: its allocator spills.) No packing: A's four rows stream along k,
 * and B is walked in column blocks sized to stay in L2. About 50 GFLOP/s in V8 on 1x1 convs,
 * the mul+add peak of the machine it was tuned on. */
#include "internal.h"
#include "pack_a.h"
#include "simd.h"

#define MR 4
#define NR 8
#define B_BLOCK_BYTES (128 * 1024)

#if defined(__GNUC__)
#define NNW_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define NNW_ALWAYS_INLINE inline
#endif

static NNW_ALWAYS_INLINE v4 epilogue(v4 acc, int32_t i, int32_t j, const struct nnw_epilogue *ep) {
  v4 r = v4_mul(acc, v4_set1(ep->alpha));
  if (ep->c != NULL) {
    const float *c = ep->c + i * ep->c_rs + j * ep->c_cs;
    v4 cv;
    if (ep->c_cs == 0) {
      cv = v4_load1(c);
    } else if (ep->c_cs == 1) {
      cv = v4_load(c);
    } else {
      float t[4] = {c[0], c[ep->c_cs], c[2 * ep->c_cs], c[3 * ep->c_cs]};
      cv = v4_load(t);
    }
    r = v4_madd(r, cv, v4_set1(ep->beta));
  }
  return v4_clamp(r, v4_set1(ep->lo), v4_set1(ep->hi));
}

/* rows i..i+mr-1, columns j..j+4*nv-1; mr and nv are constants after inlining */
static NNW_ALWAYS_INLINE void tile(int mr, int nv, int32_t k, const float *a, ptrdiff_t a_rs,
                                   ptrdiff_t a_cs, const float *b, ptrdiff_t ldb, float *y,
                                   ptrdiff_t ldy, int32_t i, int32_t j,
                                   const struct nnw_epilogue *ep) {
  v4 acc[MR][2];
  const float *ap[MR];
  for (int r = 0; r < mr; r++) {
    acc[r][0] = acc[r][1] = v4_set1(0.0f);
    ap[r] = a + (i + r) * a_rs;
  }
  const float *bp = b + j;
  for (int32_t kk = 0; kk < k; kk++) {
    v4 b0 = v4_load(bp), b1 = nv > 1 ? v4_load(bp + 4) : b0;
    for (int r = 0; r < mr; r++) {
      v4 av = v4_load1(ap[r]);
      acc[r][0] = v4_fmadd(acc[r][0], av, b0);
      if (nv > 1) acc[r][1] = v4_fmadd(acc[r][1], av, b1);
      ap[r] += a_cs;
    }
    bp += ldb;
  }
  for (int r = 0; r < mr; r++)
    for (int v = 0; v < nv; v++)
      v4_store(y + (i + r) * ldy + j + 4 * v, epilogue(acc[r][v], i + r, j + 4 * v, ep));
}

/* fewer than 4 columns in the whole matrix: one at a time */
static void tile_scalar(int mr, int32_t k, const float *a, ptrdiff_t a_rs, ptrdiff_t a_cs,
                        const float *b, ptrdiff_t ldb, float *y, ptrdiff_t ldy, int32_t i,
                        int32_t j, const struct nnw_epilogue *ep) {
  for (int r = 0; r < mr; r++) {
    float s = 0.0f;
    for (int32_t kk = 0; kk < k; kk++) s += a[(i + r) * a_rs + kk * a_cs] * b[kk * ldb + j];
    s *= ep->alpha;
    if (ep->c != NULL) s += ep->beta * ep->c[(i + r) * ep->c_rs + j * ep->c_cs];
    s = s < ep->lo ? ep->lo : s;
    y[(i + r) * ldy + j] = ep->hi < s ? ep->hi : s;
  }
}

/* Columns [j0, j1) of rows i..i+mr-1. The last partial vector is recomputed at n-4, overlapping
 * columns already written with the same values: cheaper than a masked tail. */
static NNW_ALWAYS_INLINE void row_block(int mr, int32_t n, int32_t k, int32_t j0, int32_t j1,
                                        const float *a, ptrdiff_t a_rs, ptrdiff_t a_cs,
                                        const float *b, ptrdiff_t ldb, float *y, ptrdiff_t ldy,
                                        int32_t i, const struct nnw_epilogue *ep) {
  int32_t j = j0;
  for (; j + NR <= j1; j += NR) tile(mr, 2, k, a, a_rs, a_cs, b, ldb, y, ldy, i, j, ep);
  if (j + 4 <= j1) {
    tile(mr, 1, k, a, a_rs, a_cs, b, ldb, y, ldy, i, j, ep);
    j += 4;
  }
  if (j < j1) {
    if (n >= 4) {
      tile(mr, 1, k, a, a_rs, a_cs, b, ldb, y, ldy, i, j1 - 4, ep);
    } else {
      for (; j < j1; j++) tile_scalar(mr, k, a, a_rs, a_cs, b, ldb, y, ldy, i, j, ep);
    }
  }
}

/* The Cranelift variant (NNW_HINT_SPLAT_BY_SHUFFLE). V8 turns a load-splat of A into one
 * vbroadcastss from memory; Cranelift into a scalar load, a movd and a vpbroadcastd, two of them
 * on the vector ports the multiplies need, and it spills a pointer or two of A's four rows. Here
 * each block of four rows is first copied k-major into pack_a.h's buffer (A[i..i+3][kk] are four
 * consecutive floats), so a k step loads one v128 and splats its lanes with pshufd. Measured
 * (bench/ab/ab_kernels.py, EfficientNet-Lite0's convs): 0.89x the time in wasmtime, wasmtime/V8
 * 1.39 -> 1.23. V8 ran a mock of this variant 12% slower (pshufd takes a shuffle port where its
 * vbroadcastss rides on the load), hence the hint. Same products, summed in the same order as
 * tile(): bit-identical results. */
#define PACK_MIN_COLS 32 /* the copy of A, redone per column block, pays from 32 columns on */

static NNW_ALWAYS_INLINE void tile_packed(int nv, int32_t k, const float *pa, const float *b,
                                          ptrdiff_t ldb, float *y, ptrdiff_t ldy, int32_t i,
                                          int32_t j, const struct nnw_epilogue *ep) {
  v4 acc[MR][2];
  for (int r = 0; r < MR; r++) acc[r][0] = acc[r][1] = v4_set1(0.0f);
  const float *bp = b + j;
  for (int32_t kk = 0; kk < k; kk++, pa += MR, bp += ldb) {
    v4 b0 = v4_load(bp), b1 = nv > 1 ? v4_load(bp + 4) : b0;
    v4 a4 = v4_load(pa);
    v4 av[MR] = {v4_dup(a4, 0), v4_dup(a4, 1), v4_dup(a4, 2), v4_dup(a4, 3)};
    for (int r = 0; r < MR; r++) {
      acc[r][0] = v4_fmadd(acc[r][0], av[r], b0);
      if (nv > 1) acc[r][1] = v4_fmadd(acc[r][1], av[r], b1);
    }
  }
  for (int r = 0; r < MR; r++)
    for (int v = 0; v < nv; v++)
      v4_store(y + (i + r) * ldy + j + 4 * v, epilogue(acc[r][v], i + r, j + 4 * v, ep));
}

/* rows i + 2h, i + 2h + 1 of a packed block of four, 16 columns: two shuffles a k step for 16
 * multiplies and adds where tile_packed takes four (MobileNetV2's pointwise convs 0.98x in
 * wasmtime; the same 2x16 tile on gemm_packed's panel pairs did not pay) */
static NNW_ALWAYS_INLINE void tile_wide(int h, int32_t k, const float *pa, const float *b,
                                        ptrdiff_t ldb, float *y, ptrdiff_t ldy, int32_t i,
                                        int32_t j, const struct nnw_epilogue *ep) {
  v4 acc[2][4];
  for (int r = 0; r < 2; r++)
    for (int v = 0; v < 4; v++) acc[r][v] = v4_set1(0.0f);
  const float *bp = b + j;
  for (int32_t kk = 0; kk < k; kk++, pa += MR, bp += ldb) {
    v4 b0 = v4_load(bp), b1 = v4_load(bp + 4), b2 = v4_load(bp + 8), b3 = v4_load(bp + 12);
    v4 a4 = v4_load(pa);
    v4 av0 = h ? v4_dup(a4, 2) : v4_dup(a4, 0), av1 = h ? v4_dup(a4, 3) : v4_dup(a4, 1);
    acc[0][0] = v4_fmadd(acc[0][0], av0, b0);
    acc[0][1] = v4_fmadd(acc[0][1], av0, b1);
    acc[0][2] = v4_fmadd(acc[0][2], av0, b2);
    acc[0][3] = v4_fmadd(acc[0][3], av0, b3);
    acc[1][0] = v4_fmadd(acc[1][0], av1, b0);
    acc[1][1] = v4_fmadd(acc[1][1], av1, b1);
    acc[1][2] = v4_fmadd(acc[1][2], av1, b2);
    acc[1][3] = v4_fmadd(acc[1][3], av1, b3);
  }
  for (int r = 0; r < 2; r++) {
    int32_t row = i + 2 * h + r;
    float *yr = y + row * ldy + j;
    if (ep->c != NULL && ep->c_cs == 0) {
      /* a conv's bias: epilogue()'s arithmetic with the row's one splat of C made once (between
       * the stores to y, which may alias C, clang had kept all four; each costs Cranelift 3
       * instructions) */
      v4 alpha = v4_set1(ep->alpha), cv = v4_load1(ep->c + row * ep->c_rs), beta = v4_set1(ep->beta);
      v4 lo = v4_set1(ep->lo), hi = v4_set1(ep->hi);
      for (int v = 0; v < 4; v++)
        v4_store(yr + 4 * v, v4_clamp(v4_madd(v4_mul(acc[r][v], alpha), cv, beta), lo, hi));
    } else {
      for (int v = 0; v < 4; v++) v4_store(yr + 4 * v, epilogue(acc[r][v], row, j + 4 * v, ep));
    }
  }
}

/* One column j of the four packed rows, as a vector down the rows: a k step is one v128 load of
 * A, a load-splat of B and one multiply and add, where tile_packed(1) recomputing four columns
 * took four shuffles and four of each (a 49-wide conv output, 7x7, ends in one such column: 14% of
 * the time of EfficientNet-Lite0's 7x7 convs went to that tile in wasmtime). Lane r sums the
 * same products in the same order as tile(); the epilogue is tile()'s, lane for lane. */
static NNW_ALWAYS_INLINE void tile_column(int32_t k, const float *pa, const float *b,
                                          ptrdiff_t ldb, float *y, ptrdiff_t ldy, int32_t i,
                                          int32_t j, const struct nnw_epilogue *ep) {
  v4 acc = v4_set1(0.0f);
  const float *bp = b + j;
  for (int32_t kk = 0; kk < k; kk++, pa += MR, bp += ldb) acc = v4_fmadd(acc, v4_load(pa), v4_load1(bp));
  v4 r = v4_mul(acc, v4_set1(ep->alpha));
  if (ep->c != NULL) {
    const float *c = ep->c + i * ep->c_rs + j * ep->c_cs;
    float t[4] = {c[0], c[ep->c_rs], c[2 * ep->c_rs], c[3 * ep->c_rs]};
    r = v4_madd(r, v4_load(t), v4_set1(ep->beta));
  }
  float out[4];
  v4_store(out, v4_clamp(r, v4_set1(ep->lo), v4_set1(ep->hi)));
  for (int q = 0; q < MR; q++) y[(i + q) * ldy + j] = out[q];
}

/* row_block for four rows of A packed in pa (n >= 4: narrower goes to tile_scalar) */
static void row_block_packed(int32_t k, int32_t j0, int32_t j1, const float *b,
                             ptrdiff_t ldb, float *y, ptrdiff_t ldy, int32_t i,
                             const struct nnw_epilogue *ep, const float *pa) {
  int32_t j = j0;
  for (; j + 16 <= j1; j += 16) {
    tile_wide(0, k, pa, b, ldb, y, ldy, i, j, ep);
    tile_wide(1, k, pa, b, ldb, y, ldy, i, j, ep);
  }
  for (; j + NR <= j1; j += NR) tile_packed(2, k, pa, b, ldb, y, ldy, i, j, ep);
  if (j + 4 <= j1) {
    tile_packed(1, k, pa, b, ldb, y, ldy, i, j, ep);
    j += 4;
  }
  if (j + 1 == j1) tile_column(k, pa, b, ldb, y, ldy, i, j, ep);
  else if (j < j1) tile_packed(1, k, pa, b, ldb, y, ldy, i, j1 - 4, ep); /* overlaps: same values */
}

void nnw_gemm_nn(int32_t m, int32_t n, int32_t k, const float *a, ptrdiff_t a_rs, ptrdiff_t a_cs,
                 const float *b, ptrdiff_t ldb, float *y, ptrdiff_t ldy,
                 const struct nnw_epilogue *epilogue) {
  nnw_gemm_nn_buf(m, n, k, a, a_rs, a_cs, b, ldb, y, ldy, epilogue, nnw_pack_a_buf);
}

void nnw_gemm_nn_buf(int32_t m, int32_t n, int32_t k, const float *a, ptrdiff_t a_rs, ptrdiff_t a_cs,
                     const float *b, ptrdiff_t ldb, float *y, ptrdiff_t ldy,
                     const struct nnw_epilogue *epilogue, float *pbuf) {
  /* a local copy: the compiler can keep it in registers, as no store to y may alias it */
  struct nnw_epilogue e = *epilogue;
  const struct nnw_epilogue *ep = &e;
  int32_t nc = (int32_t)(B_BLOCK_BYTES / (4 * (size_t)k)) / NR * NR;
  if (nc < NR) nc = NR;
  /* wasmtime's variant: four rows of A packed k-major per column block. Deep layers (k > 1024,
   * ResNet-50's 3x3 convs of 256 and 512 channels) get blocks of PACK_MIN_COLS columns, whose B
   * still fits in L2, instead of 8-column blocks on which the copy cost more than it saved. */
  int hinted = (nnw_host_hints & NNW_HINT_SPLAT_BY_SHUFFLE) && nnw_pack_a_rows(k) >= MR;
  if (hinted && nc < PACK_MIN_COLS) nc = PACK_MIN_COLS;
  /* hinted: one column block when the whole of B fits in L2 with room (the copy of A per block
   * then happens once) */
  if (hinted && (size_t)k * n * 4 <= 4 * B_BLOCK_BYTES) nc = n;
  for (int32_t j0 = 0; j0 < n; j0 += nc) {
    int32_t j1 = n - j0 < nc ? n : j0 + nc;
    int32_t i = 0;
    if (hinted && j1 - j0 >= PACK_MIN_COLS) {
      for (; i + MR <= m; i += MR) {
        nnw_pack_a_into(pbuf, MR, k, a, a_rs, a_cs, i);
        row_block_packed(k, j0, j1, b, ldb, y, ldy, i, ep, pbuf);
      }
    }
    for (; i + MR <= m; i += MR) row_block(4, n, k, j0, j1, a, a_rs, a_cs, b, ldb, y, ldy, i, ep);
    switch (m - i) {
      case 3: row_block(3, n, k, j0, j1, a, a_rs, a_cs, b, ldb, y, ldy, i, ep); break;
      case 2: row_block(2, n, k, j0, j1, a, a_rs, a_cs, b, ldb, y, ldy, i, ep); break;
      case 1: row_block(1, n, k, j0, j1, a, a_rs, a_cs, b, ldb, y, ldy, i, ep); break;
      default: break;
    }
  }
}
