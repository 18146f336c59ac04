/* gemm_packed_f16: gemm_packed (gemm_packed.c) on B panels stored as float16 (each k step's 8
 * columns paired c0 c4 c1 c5 c2 c6 c3 c7, half.h), half the bytes of the float32 panels, widened exactly to float32 (half.h) where they are read. The sums are
 * gemm_packed's on the widened B, in its order: the same bits.
 *   m >= 4: `block` panels at a time are widened into scratch (32*k bytes each) and gemm_packed's
 *           own core runs on them, so the widening costs k*8 conversions per panel for all m rows.
 *   m < 4 (a decode step's GEMV): each k step's eight halves are widened in registers and used
 *           at once; the weights are read once, at half the bytes. Their widening skips its
 *           multiply by 2^112 (half.h): A's rows are scaled by 2^112 instead (into scratch), and
 *           (a 2^112) (b 2^-112) is the same real number as a b, so each product rounds to the same
 *           float and the sums are the same bits. Exact while |a| < 2^16 (a 2^112 finite): a row
 *           with a larger finite value takes the full widening. Cranelift (the
 *           NNW_HINT_SPLAT_BY_SHUFFLE hosts) ran this loop 3.5x slower than the float32 GEMV and
 *           the blocks 1.8x (768 x 768, per-op minima): its load-splats of A cost three
 *           instructions each, so there rows_dup loads four k steps of A at once and splats them
 *           by shuffles (a row with a larger value widens in blocks). */
#include <math.h>

#include "gemm_packed.h"
#include "half.h"
#include "internal.h"
#include "simd.h"
#include "threads/split.h"
#include "vmath.h"

#define NR 8

#if defined(__GNUC__)
#define NNW_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define NNW_ALWAYS_INLINE inline
#endif

struct gemm_packed_f16 {
  int32_t a, bp, bias, r, y, scratch, m, n, k, act, block;
  float lo, hi;
};

static void decode(const int32_t *v, struct gemm_packed_f16 *p) {
  p->a = v[NNW_GEMM_PACKED_F16_A];
  p->bp = v[NNW_GEMM_PACKED_F16_BP];
  p->bias = v[NNW_GEMM_PACKED_F16_BIAS];
  p->r = v[NNW_GEMM_PACKED_F16_R];
  p->y = v[NNW_GEMM_PACKED_F16_Y];
  p->scratch = v[NNW_GEMM_PACKED_F16_SCRATCH];
  p->m = v[NNW_GEMM_PACKED_F16_M];
  p->n = v[NNW_GEMM_PACKED_F16_N];
  p->k = v[NNW_GEMM_PACKED_F16_K];
  p->act = v[NNW_GEMM_PACKED_F16_ACT];
  p->block = v[NNW_GEMM_PACKED_F16_BLOCK];
  p->lo = nnw_arg_f32(v[NNW_GEMM_PACKED_F16_ACT_MIN]);
  p->hi = nnw_arg_f32(v[NNW_GEMM_PACKED_F16_ACT_MAX]);
}

int nnw_validate_gemm_packed_f16(const int32_t *args, uint32_t arena_bytes) {
  struct gemm_packed_f16 p;
  decode(args, &p);
  int32_t dims[] = {p.m, p.n, p.k, p.block};
  NNW_TRY(nnw_check_positive(dims, 4));
  if ((p.act & ~1) || !(p.lo <= p.hi)) return NNW_BAD_ARGS;
  uint64_t m = (uint64_t)p.m, n = (uint64_t)p.n, k = (uint64_t)p.k;
  uint64_t panels = (n + NR - 1) / NR;
  uint64_t a_bytes = nnw_mul(m * 4, k), b_bytes = nnw_mul(nnw_mul(panels, NR * 2), k);
  uint64_t y_bytes = nnw_mul(m * 4, n), s_bytes = nnw_mul(nnw_mul((uint64_t)p.block, NR * 4), k);
  NNW_TRY(nnw_check_tensor(p.a, a_bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(p.bp, b_bytes, arena_bytes, 0, 0));
  if (p.bp % 2) return NNW_BAD_ARGS;
  NNW_TRY(nnw_check_tensor(p.bias, n * 4, arena_bytes, 1, 1));
  NNW_TRY(nnw_check_tensor(p.r, y_bytes, arena_bytes, 1, 1));
  NNW_TRY(nnw_check_tensor(p.y, y_bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(p.scratch, s_bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_apart(p.a, a_bytes, p.y, y_bytes, 0));
  NNW_TRY(nnw_check_apart(p.bp, b_bytes, p.y, y_bytes, 0));
  NNW_TRY(nnw_check_apart(p.bias, n * 4, p.y, y_bytes, 0));
  NNW_TRY(nnw_check_apart(p.r, y_bytes, p.y, y_bytes, 0));
  int32_t ins[] = {p.a, p.bp, p.bias, p.r, p.y};
  uint64_t in_bytes[] = {a_bytes, b_bytes, n * 4, y_bytes, y_bytes};
  for (int t = 0; t < 5; t++) NNW_TRY(nnw_check_apart(p.scratch, s_bytes, ins[t], in_bytes[t], 0));
  return NNW_OK;
}

/* gemm_packed.c's finish(): acc + bias + r, activated, clamped (the unclamped clamp is the identity) */
static inline v4 finish(v4 acc, v4 bias, const float *r, int32_t act, float lo, float hi) {
  acc = v4_add(acc, bias);
  if (r != NULL) acc = v4_add(acc, v4_load(r));
  if (act == 1) acc = v4_gelu(acc);
  return v4_clamp(acc, v4_set1(lo), v4_set1(hi));
}

/* the epilogue of mr rows' two accumulators: bias, residual, activation, the w columns stored */
static NNW_ALWAYS_INLINE void store_rows(int mr, v4 acc[3][2], float *y, int32_t j, int32_t w,
                                         const struct gemm_packed_f16 *p, const float *bias, const float *r) {
  float bb[NR] = {0}, rr[NR] = {0}, out[NR];
  if (bias != NULL) memcpy(bb, bias + j, 4 * (size_t)w);
  for (int i = 0; i < mr; i++) {
    const float *ri = NULL;
    if (r != NULL) {
      memcpy(rr, r + (size_t)i * p->n + j, 4 * (size_t)w);
      ri = rr;
    }
    v4_store(out, finish(acc[i][0], v4_load(bb), ri, p->act, p->lo, p->hi));
    v4_store(out + 4, finish(acc[i][1], v4_load(bb + 4), ri != NULL ? ri + 4 : NULL, p->act, p->lo, p->hi));
    memcpy(y + (size_t)i * p->n + j, out, 4 * (size_t)w);
  }
}

/* rows 0..mr-1 (mr < 4) of one panel, its halves widened in registers; w columns kept. scaled:
 * a holds A's rows times 2^112, and the halves are widened without their multiply. */
static NNW_ALWAYS_INLINE void rows_f16(int mr, int32_t k, const float *a, const uint16_t *bp, float *y, int32_t j, int32_t w,
                            const struct gemm_packed_f16 *p, const float *bias, const float *r, int scaled) {
  v4 acc[3][2];
  for (int i = 0; i < mr; i++) acc[i][0] = acc[i][1] = v4_set1(0.0f);
  for (int32_t kk = 0; kk < k; kk++, bp += NR) {
    v4 b0, b1;
    if (scaled) nnw_half8_bits(bp, &b0, &b1);
    else nnw_half8_to_v4(bp, &b0, &b1);
    for (int i = 0; i < mr; i++) {
      v4 av = v4_load1(a + (size_t)i * k + kk);
      acc[i][0] = v4_fmadd(acc[i][0], av, b0);
      acc[i][1] = v4_fmadd(acc[i][1], av, b1);
    }
  }
  store_rows(mr, acc, y, j, w, p, bias, r);
}

/* row1_f16 on four whole panels side by side from column j (eight accumulator chains, as
 * gemm_packed.c's row_panels: one chain waited an add's latency a k step), each output summed in
 * row1_f16's order: the same bits */
static NNW_ALWAYS_INLINE void row4_f16(int32_t k, const float *a, const uint16_t *bp, float *y, int32_t j,
                                       const struct gemm_packed_f16 *p, const float *bias, const float *r, int scaled) {
  v4 acc[4][2];
  const uint16_t *b[4];
  for (int q = 0; q < 4; q++) {
    acc[q][0] = acc[q][1] = v4_set1(0.0f);
    b[q] = bp + (size_t)q * NR * k;
  }
  for (int32_t kk = 0; kk < k; kk++) {
    v4 av = v4_load1(a + kk);
    for (int q = 0; q < 4; q++) {
      v4 b0, b1;
      if (scaled) nnw_half8_bits(b[q], &b0, &b1);
      else nnw_half8_to_v4(b[q], &b0, &b1);
      acc[q][0] = v4_fmadd(acc[q][0], av, b0);
      acc[q][1] = v4_fmadd(acc[q][1], av, b1);
      b[q] += NR;
    }
  }
  for (int q = 0; q < 4; q++) {
    int32_t jq = j + q * NR;
    v4 b0 = bias != NULL ? v4_load(bias + jq) : v4_set1(0.0f), b1 = bias != NULL ? v4_load(bias + jq + 4) : b0;
    v4_store(y + jq, finish(acc[q][0], b0, r != NULL ? r + jq : NULL, p->act, p->lo, p->hi));
    v4_store(y + jq + 4, finish(acc[q][1], b1, r != NULL ? r + jq + 4 : NULL, p->act, p->lo, p->hi));
  }
}

/* rows_f16 for one row, its two accumulators plain locals */
static NNW_ALWAYS_INLINE void row1_f16(int32_t k, const float *a, const uint16_t *bp, float *y, int32_t j, int32_t w,
                                       const struct gemm_packed_f16 *p, const float *bias, const float *r, int scaled) {
  v4 acc0 = v4_set1(0.0f), acc1 = acc0;
  for (int32_t kk = 0; kk < k; kk++, bp += NR) {
    v4 b0, b1;
    if (scaled) nnw_half8_bits(bp, &b0, &b1);
    else nnw_half8_to_v4(bp, &b0, &b1);
    v4 av = v4_load1(a + kk);
    acc0 = v4_fmadd(acc0, av, b0);
    acc1 = v4_fmadd(acc1, av, b1);
  }
  float bb[NR] = {0}, rr[NR] = {0}, out[NR];
  const float *ri = NULL;
  if (bias != NULL) memcpy(bb, bias + j, 4 * (size_t)w);
  if (r != NULL) {
    memcpy(rr, r + j, 4 * (size_t)w);
    ri = rr;
  }
  v4_store(out, finish(acc0, v4_load(bb), ri, p->act, p->lo, p->hi));
  v4_store(out + 4, finish(acc1, v4_load(bb + 4), ri != NULL ? ri + 4 : NULL, p->act, p->lo, p->hi));
  memcpy(y + j, out, 4 * (size_t)w);
}

/* rows_f16 (scaled) for the NNW_HINT_SPLAT_BY_SHUFFLE hosts (Cranelift), where each load-splat
 * of A is three instructions: four k steps of each row loaded as one v128 and their lanes
 * splatted by a shuffle (pshufd), as gemm_packed.c's tile_pa does. The same products summed in
 * the same order: the same bits as rows_f16. */
#define NNW_F16_STEP(t)                                                                             \
  {                                                                                               \
    v4 b0, b1;                                                                                    \
    nnw_half8_bits(bp + (t) * NR, &b0, &b1);                                                      \
    for (int i = 0; i < mr; i++) {                                                                \
      v4 av = v4_dup(a4[i], t);                                                                   \
      acc[i][0] = v4_fmadd(acc[i][0], av, b0);                                                    \
      acc[i][1] = v4_fmadd(acc[i][1], av, b1);                                                    \
    }                                                                                             \
  }
static NNW_ALWAYS_INLINE void rows_dup(int mr, int32_t k, const float *a, const uint16_t *bp, float *y, int32_t j,
                                       int32_t w, const struct gemm_packed_f16 *p, const float *bias, const float *r) {
  v4 acc[3][2];
  for (int i = 0; i < mr; i++) acc[i][0] = acc[i][1] = v4_set1(0.0f);
  int32_t kk = 0;
  for (; kk + 4 <= k; kk += 4, bp += 4 * NR) {
    v4 a4[3];
    for (int i = 0; i < mr; i++) a4[i] = v4_load(a + (size_t)i * k + kk);
    NNW_F16_STEP(0)
    NNW_F16_STEP(1)
    NNW_F16_STEP(2)
    NNW_F16_STEP(3)
  }
  for (; kk < k; kk++, bp += NR) {
    v4 b0, b1;
    nnw_half8_bits(bp, &b0, &b1);
    for (int i = 0; i < mr; i++) {
      v4 av = v4_load1(a + (size_t)i * k + kk);
      acc[i][0] = v4_fmadd(acc[i][0], av, b0);
      acc[i][1] = v4_fmadd(acc[i][1], av, b1);
    }
  }
  store_rows(mr, acc, y, j, w, p, bias, r);
}
#undef NNW_F16_STEP

static void gemv_dup(int32_t m, int32_t k, const float *a, const uint16_t *bp, float *y,
                     const struct gemm_packed_f16 *p, const float *bias, const float *r, int32_t q0, int32_t q1) {
  bp += (size_t)q0 * NR * k;
  for (int32_t j = q0 * NR; j < p->n && j < q1 * NR; j += NR, bp += (size_t)NR * k) {
    int32_t w = p->n - j < NR ? p->n - j : NR;
    if (m == 1) rows_dup(1, k, a, bp, y, j, w, p, bias, r);
    else if (m == 2) rows_dup(2, k, a, bp, y, j, w, p, bias, r);
    else rows_dup(3, k, a, bp, y, j, w, p, bias, r);
  }
}

/* every panel for m < 4 rows, mr and scaled constants in each copy: the accumulators stay in
 * registers (a loop over a variable row count kept them in memory: 2x slower) */
#define NNW_GEMV(name, sc)                                                                          \
  static void name(int32_t m, int32_t k, const float *a, const uint16_t *bp, float *y,              \
                   const struct gemm_packed_f16 *p, const float *bias, const float *r, int32_t q0,  \
                   int32_t q1) {                                                                  \
    int32_t n = p->n;                                                                             \
    bp += (size_t)q0 * NR * k;                                                                    \
    int32_t j = q0 * NR, end = n < q1 * NR ? n : q1 * NR;                                         \
    if (m == 1) /* four whole panels at a time, then panel by panel */                            \
      for (; end - j >= 4 * NR; j += 4 * NR, bp += (size_t)4 * NR * k)                           \
        row4_f16(k, a, bp, y, j, p, bias, r, sc);                                                 \
    for (; j < end; j += NR, bp += (size_t)NR * k) {                                              \
      int32_t w = n - j < NR ? n - j : NR;                                                        \
      if (m == 1) row1_f16(k, a, bp, y, j, w, p, bias, r, sc);                                    \
      else if (m == 2) rows_f16(2, k, a, bp, y, j, w, p, bias, r, sc);                            \
      else rows_f16(3, k, a, bp, y, j, w, p, bias, r, sc);                                        \
    }                                                                                             \
  }
NNW_GEMV(gemv_scaled, 1)
NNW_GEMV(gemv_full, 0)
#undef NNW_GEMV

/* Threads (threads/split.h): y's columns in tiles of whole 8-column panels, each panel's outputs
 * computed by the code one thread uses (GEMV: the same row function per panel; blocks: each tile
 * widens its own panels of the block into their place in scratch and runs gemm_packed's core on
 * them, as gemm_packed's own split does), so N threads give the bits of one. */
enum { F16_SCALED, F16_FULL, F16_DUP, F16_BLOCK };

struct f16_job {
  const struct gemm_packed_f16 *p;
  const float *a, *bias, *r;
  const uint16_t *bp;
  float *y, *s;
  int32_t mode, q0, cols; /* F16_BLOCK: the block's first panel and its columns */
};

static void widen(const uint16_t *h, float *s, size_t halves) {
  for (size_t e = 0; e < halves; e += NR) {
    v4 lo, hi;
    nnw_half8_to_v4(h + e, &lo, &hi);
    v4_store(s + e, lo);
    v4_store(s + e + 4, hi);
  }
}

static void f16_task(void *ctx, int32_t start, int32_t count, int32_t worker) {
  const struct f16_job *j = ctx;
  const struct gemm_packed_f16 *p = j->p;
  int32_t m = p->m, k = p->k;
  if (j->mode == F16_DUP) gemv_dup(m, k, j->a, j->bp, j->y, p, j->bias, j->r, start, start + count);
  else if (j->mode == F16_SCALED) gemv_scaled(m, k, j->a, j->bp, j->y, p, j->bias, j->r, start, start + count);
  else if (j->mode == F16_FULL) gemv_full(m, k, j->a, j->bp, j->y, p, j->bias, j->r, start, start + count);
  else {
    int32_t c0 = start * NR, cols = j->cols - c0 < count * NR ? j->cols - c0 : count * NR, j0 = j->q0 * NR + c0;
    float *s = j->s + (size_t)c0 * k;
    widen(j->bp + (size_t)(j->q0 + start) * NR * k, s, (size_t)count * NR * k);
    nnw_gemm_packed_cols_buf(m, cols, p->n, k, j->a, s, j->bias != NULL ? j->bias + j0 : NULL,
                             j->r != NULL ? j->r + j0 : NULL, j->y + j0, p->act, p->lo, p->hi, nnw_pool_pack_buf(worker));
  }
}

void nnw_run_gemm_packed_f16(const int32_t *args, uint8_t *arena) {
  struct gemm_packed_f16 p;
  decode(args, &p);
  const float *a = nnw_f32_at(arena, p.a), *bias = nnw_f32_at(arena, p.bias), *r = nnw_f32_at(arena, p.r);
  const uint16_t *bp = (const uint16_t *)(const void *)(arena + p.bp);
  float *y = nnw_f32_at(arena, p.y), *s = nnw_f32_at(arena, p.scratch);
  int32_t m = p.m, n = p.n, k = p.k, panels = (n + NR - 1) / NR;
  int32_t threads = nnw_split_threads((uint64_t)m * (uint64_t)n * (uint64_t)k, NNW_SPLIT_MIN_FLOPS, panels);
  struct f16_job job = {&p, a, bias, r, bp, y, s, F16_BLOCK, 0, 0};
  if (m < 4) {
    int hinted = (nnw_host_hints & NNW_HINT_SPLAT_BY_SHUFFLE) != 0;
    size_t len = (size_t)m * k;
    int scaled = 1;
    for (size_t e = 0; e < len; e++) {
      float v = a[e] < 0 ? -a[e] : a[e];
      if (v >= 65536.0f && v != INFINITY) scaled = 0; /* a 2^112 would overflow */
      s[e] = a[e] * NNW_HALF_SCALE;
    }
    if (scaled || !hinted) {
      job.mode = scaled && hinted ? F16_DUP : scaled ? F16_SCALED : F16_FULL;
      job.a = scaled ? s : a;
      if (threads > 1) nnw_parallel_for(panels, nnw_split_tile(panels, threads), f16_task, &job);
      else f16_task(&job, 0, panels, 0);
      return;
    }
  }
  for (int32_t q0 = 0; q0 < panels; q0 += p.block) {
    int32_t nq = panels - q0 < p.block ? panels - q0 : p.block, j0 = q0 * NR;
    int32_t cols = n - j0 < nq * NR ? n - j0 : nq * NR;
    if (threads > 1 && nq > 1) {
      job.q0 = q0;
      job.cols = cols;
      nnw_parallel_for(nq, nnw_split_tile(nq, threads), f16_task, &job);
      continue;
    }
    widen(bp + (size_t)q0 * NR * k, s, (size_t)nq * NR * k);
    nnw_gemm_packed_cols(m, cols, n, k, a, s, bias != NULL ? bias + j0 : NULL, r != NULL ? r + j0 : NULL, y + j0,
                         p.act, p.lo, p.hi);
  }
}
