/* gemm_packed: y = act(A B + bias + r) with B a constant packed at plan build into panels of 8
 * columns, each [k][8] contiguous (ops.def). The panel stays in L1 while every row of A streams
 * past it: the unpacked core (gemm_nn.c) walks B's rows at a stride of n floats, which for
 * n = 1024 maps every row to the same L1 set. A 4x8 register tile: 8 accumulators, two B
 * vectors and one splat of A. Transformer linear layers (MatMul + bias Add [+ Gelu | + residual
 * Add]) lower here. */
#include <math.h>

#include "internal.h"
#include "gemm_packed.h"
#include "pack_a.h"
#include "simd.h"
#include "threads/split.h"
#include "vmath.h"

#define MR 4
#define NR 8

#if defined(__GNUC__)
#define NNW_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define NNW_ALWAYS_INLINE inline
#endif

struct gemm_packed {
  int32_t a, bp, bias, r, y, m, n, k, act;
  float lo, hi;
};

static void gp_decode(const int32_t *v, struct gemm_packed *p) {
  p->a = v[NNW_GEMM_PACKED_A];
  p->bp = v[NNW_GEMM_PACKED_BP];
  p->bias = v[NNW_GEMM_PACKED_BIAS];
  p->r = v[NNW_GEMM_PACKED_R];
  p->y = v[NNW_GEMM_PACKED_Y];
  p->m = v[NNW_GEMM_PACKED_M];
  p->n = v[NNW_GEMM_PACKED_N];
  p->k = v[NNW_GEMM_PACKED_K];
  p->act = v[NNW_GEMM_PACKED_ACT];
  p->lo = nnw_arg_f32(v[NNW_GEMM_PACKED_ACT_MIN]);
  p->hi = nnw_arg_f32(v[NNW_GEMM_PACKED_ACT_MAX]);
}

int nnw_validate_gemm_packed(const int32_t *args, uint32_t arena_bytes) {
  struct gemm_packed p;
  gp_decode(args, &p);
  int32_t dims[] = {p.m, p.n, p.k};
  NNW_TRY(nnw_check_positive(dims, 3));
  if ((p.act & ~1) || !(p.lo <= p.hi)) return NNW_BAD_ARGS;
  uint64_t m = (uint64_t)p.m, n = (uint64_t)p.n, k = (uint64_t)p.k;
  uint64_t panels = (n + NR - 1) / NR;
  uint64_t a_bytes = nnw_mul(m * 4, k), b_bytes = nnw_mul(nnw_mul(panels, NR * 4), k);
  uint64_t y_bytes = nnw_mul(m * 4, n);
  NNW_TRY(nnw_check_tensor(p.a, a_bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(p.bp, b_bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(p.bias, n * 4, arena_bytes, 1, 1));
  NNW_TRY(nnw_check_tensor(p.r, y_bytes, arena_bytes, 1, 1));
  NNW_TRY(nnw_check_tensor(p.y, y_bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_apart(p.a, a_bytes, p.y, y_bytes, 0));
  NNW_TRY(nnw_check_apart(p.bp, b_bytes, p.y, y_bytes, 0));
  NNW_TRY(nnw_check_apart(p.bias, n * 4, p.y, y_bytes, 0));
  NNW_TRY(nnw_check_apart(p.r, y_bytes, p.y, y_bytes, 0));
  return NNW_OK;
}

struct ep {
  const float *bias, *r; /* bias at column j; r at row i (stride n) */
  int32_t n, act;
  float lo, hi;
};

/* acc + bias + r, activated and clamped; bias8/r8 hold the 8 columns' values (zero if absent) */
static NNW_ALWAYS_INLINE v4 finish(v4 acc, v4 bias, const float *r, const struct ep *e) {
  acc = v4_add(acc, bias);
  if (r != NULL) acc = v4_add(acc, v4_load(r));
  if (e->act == 1) acc = v4_gelu(acc);
  return v4_clamp(acc, v4_set1(e->lo), v4_set1(e->hi));
}

/* finish() for the transformer's unclamped epilogues with their shape a constant (fin: 0 bias,
 * 1 bias + residual; -1 finish() as it is): no tests and no splats of an infinite clamp at each
 * tile's end (the clamp to [-inf, inf] is the identity, NaN included: the same bits). In V8,
 * BERT-mini's 128 x 256 x 256 projections 0.337 -> 0.316 ms and its FFN2 (+ residual) 1.37 ->
 * 1.28 ms (per-op medians); the FFN1's Gelu the same way ran 3 % slower, so it keeps finish(). */
static NNW_ALWAYS_INLINE v4 finish_c(v4 acc, v4 bias, const float *r, const struct ep *e, int fin) {
  if (fin < 0) return finish(acc, bias, r, e);
  acc = v4_add(acc, bias);
  return fin == 1 ? v4_add(acc, v4_load(r)) : acc;
}

/* rows i..i+mr-1 of one panel (columns j..j+7, all inside n) */
static NNW_ALWAYS_INLINE void tile(int mr, int32_t k, const float *a, const float *bp, float *y,
                                   int32_t i, int32_t j, const struct ep *e, int fin) {
  v4 acc[MR][2];
  const float *ap[MR];
  for (int r = 0; r < mr; r++) {
    acc[r][0] = acc[r][1] = v4_set1(0.0f);
    ap[r] = a + (size_t)(i + r) * k;
  }
  for (int32_t kk = 0; kk < k; kk++) {
    v4 b0 = v4_load(bp), b1 = v4_load(bp + 4);
    for (int r = 0; r < mr; r++) {
      v4 av = v4_load1(ap[r] + kk);
      acc[r][0] = v4_fmadd(acc[r][0], av, b0);
      acc[r][1] = v4_fmadd(acc[r][1], av, b1);
    }
    bp += NR;
  }
  v4 bias0 = v4_set1(0.0f), bias1 = bias0;
  if (e->bias != NULL) {
    bias0 = v4_load(e->bias + j);
    bias1 = v4_load(e->bias + j + 4);
  }
  for (int r = 0; r < mr; r++) {
    float *yr = y + (size_t)(i + r) * e->n + j;
    const float *rr = e->r != NULL ? e->r + (size_t)(i + r) * e->n + j : NULL;
    v4_store(yr, finish_c(acc[r][0], bias0, rr, e, fin));
    v4_store(yr + 4, finish_c(acc[r][1], bias1, rr != NULL ? rr + 4 : NULL, e, fin));
  }
}

/* One row of A against P whole panels from column j (a decode step's GEMV): tile(1, ...)'s sums
 * for P * 8 columns at once. tile(1) waits an add's latency every k step on its two accumulators;
 * here 2P chains run side by side. Each output's products are summed in the same order as
 * tile()'s: the same bits. */
#define ROW_PANELS 4
static NNW_ALWAYS_INLINE void row_panels(int32_t k, const float *ar, const float *bp, float *y, int32_t i, int32_t j,
                                         const struct ep *e, int fin) {
  v4 acc[ROW_PANELS][2];
  const float *b[ROW_PANELS];
  for (int p = 0; p < ROW_PANELS; p++) {
    acc[p][0] = acc[p][1] = v4_set1(0.0f);
    b[p] = bp + (size_t)p * NR * k;
  }
  for (int32_t kk = 0; kk < k; kk++) {
    v4 av = v4_load1(ar + kk);
    for (int p = 0; p < ROW_PANELS; p++) {
      acc[p][0] = v4_fmadd(acc[p][0], av, v4_load(b[p]));
      acc[p][1] = v4_fmadd(acc[p][1], av, v4_load(b[p] + 4));
      b[p] += NR;
    }
  }
  for (int p = 0; p < ROW_PANELS; p++) {
    int32_t jp = j + p * NR;
    v4 bias0 = v4_set1(0.0f), bias1 = bias0;
    if (e->bias != NULL) {
      bias0 = v4_load(e->bias + jp);
      bias1 = v4_load(e->bias + jp + 4);
    }
    float *yr = y + (size_t)i * e->n + jp;
    const float *rr = e->r != NULL ? e->r + (size_t)i * e->n + jp : NULL;
    v4_store(yr, finish_c(acc[p][0], bias0, rr, e, fin));
    v4_store(yr + 4, finish_c(acc[p][1], bias1, rr != NULL ? rr + 4 : NULL, e, fin));
  }
}

/* The Cranelift variant (NNW_HINT_SPLAT_BY_SHUFFLE, gemm_nn.c has the story): tile() on four
 * rows of A packed k-major at pa (pack_a.h), one v128 load a k step and its lanes splatted by
 * pshufd, where Cranelift turns tile()'s load-splats into 3 instructions each and spills a row
 * pointer. BERT-mini's projections 0.47 -> 0.39 ms in wasmtime; V8 ran the same loop with
 * load-splats from the packed rows no faster than tile(), so it keeps tile(). The same products
 * summed in the same order as tile(): the same bits. */
static NNW_ALWAYS_INLINE void tile_pa(int32_t k, const float *pa, const float *bp, float *y,
                                      int32_t i, int32_t j, const struct ep *e, int fin) {
  v4 acc[MR][2];
  for (int r = 0; r < MR; r++) acc[r][0] = acc[r][1] = v4_set1(0.0f);
  for (int32_t kk = 0; kk < k; kk++, pa += MR, bp += NR) {
    v4 b0 = v4_load(bp), b1 = v4_load(bp + 4), a4 = v4_load(pa);
    v4 av[MR] = {v4_dup(a4, 0), v4_dup(a4, 1), v4_dup(a4, 2), v4_dup(a4, 3)};
    for (int r = 0; r < MR; r++) {
      acc[r][0] = v4_fmadd(acc[r][0], av[r], b0);
      acc[r][1] = v4_fmadd(acc[r][1], av[r], b1);
    }
  }
  v4 bias0 = v4_set1(0.0f), bias1 = bias0;
  if (e->bias != NULL) {
    bias0 = v4_load(e->bias + j);
    bias1 = v4_load(e->bias + j + 4);
  }
  for (int r = 0; r < MR; r++) {
    float *yr = y + (size_t)(i + r) * e->n + j;
    const float *rr = e->r != NULL ? e->r + (size_t)(i + r) * e->n + j : NULL;
    v4_store(yr, finish_c(acc[r][0], bias0, rr, e, fin));
    v4_store(yr + 4, finish_c(acc[r][1], bias1, rr != NULL ? rr + 4 : NULL, e, fin));
  }
}

/* rows [0, rows4) (a multiple of 4) against the `full` columns of whole panels: A packed chunk by
 * chunk, each chunk against every panel (a panel still streams from L1 past a chunk's rows) */
static NNW_ALWAYS_INLINE void packed_rows(int32_t rows4, int32_t full, int32_t k, const float *a, const float *bp,
                                          float *y, const struct ep *e, int fin, float *pbuf) {
  int32_t chunk = nnw_pack_a_rows(k);
  for (int32_t c = 0; c < rows4; c += chunk) {
    int32_t rows = rows4 - c < chunk ? rows4 - c : chunk;
    nnw_pack_a_into(pbuf, rows, k, a, k, 1, c);
    const float *b = bp;
    for (int32_t j = 0; j < full; j += NR, b += (size_t)NR * k) {
      const float *pa = pbuf;
      for (int32_t i = c; i < c + rows; i += MR, pa += (size_t)MR * k) tile_pa(k, pa, b, y, i, j, e, fin);
    }
  }
}

/* the last panel, w < 8 columns: computed whole into a local tile, its w columns kept */
static void tail_panel(int32_t m, int32_t k, int32_t w, const float *a, const float *bp, float *y,
                       int32_t j, const struct ep *e) {
  float bias[NR] = {0}, rr[NR] = {0}, out[NR];
  if (e->bias != NULL) memcpy(bias, e->bias + j, 4 * (size_t)w);
  v4 bias0 = v4_load(bias), bias1 = v4_load(bias + 4);
  for (int32_t i = 0; i < m; i++) {
    v4 acc0 = v4_set1(0.0f), acc1 = acc0;
    const float *ai = a + (size_t)i * k, *b = bp;
    for (int32_t kk = 0; kk < k; kk++, b += NR) {
      v4 av = v4_load1(ai + kk);
      acc0 = v4_fmadd(acc0, av, v4_load(b));
      acc1 = v4_fmadd(acc1, av, v4_load(b + 4));
    }
    const float *r = NULL;
    if (e->r != NULL) {
      memcpy(rr, e->r + (size_t)i * e->n + j, 4 * (size_t)w);
      r = rr;
    }
    v4_store(out, finish(acc0, bias0, r, e));
    v4_store(out + 4, finish(acc1, bias1, r != NULL ? r + 4 : NULL, e));
    memcpy(y + (size_t)i * e->n + j, out, 4 * (size_t)w);
  }
}

/* the whole panels' rows from i0 (and the tail panel), the epilogue's shape fin a constant */
static NNW_ALWAYS_INLINE void panels(int32_t m, int32_t n, int32_t k, const float *a, const float *bp, float *y,
                                     int32_t i0, const struct ep *e, int fin) {
  int32_t j = 0;
  if (m - i0 == 1) /* one row left: ROW_PANELS panels at a time, then panel by panel */
    for (; n - j >= ROW_PANELS * NR; j += ROW_PANELS * NR, bp += (size_t)ROW_PANELS * NR * k)
      row_panels(k, a + (size_t)i0 * k, bp, y, i0, j, e, fin);
  for (; j < n; j += NR, bp += (size_t)NR * k) {
    if (n - j < NR) {
      tail_panel(m, k, n - j, a, bp, y, j, e);
      break;
    }
    int32_t i = i0;
    for (; i + MR <= m; i += MR) tile(MR, k, a, bp, y, i, j, e, fin);
    switch (m - i) {
      case 3: tile(3, k, a, bp, y, i, j, e, fin); break;
      case 2: tile(2, k, a, bp, y, i, j, e, fin); break;
      case 1: tile(1, k, a, bp, y, i, j, e, fin); break;
      default: break;
    }
  }
}

#define NNW_PANELS(name, fin)                                                      \
  static void panels_##name(int32_t m, int32_t n, int32_t k, const float *a, const float *bp, \
                            float *y, int32_t i0, const struct ep *e) {          \
    panels(m, n, k, a, bp, y, i0, e, fin);                                         \
  }
NNW_PANELS(bias, 0)
NNW_PANELS(residual, 1)
#undef NNW_PANELS

/* The wasmtime path's rows, one function per epilogue shape (fin as finish_c's), kept out of line:
 * inlined into nnw_run_gemm_packed, they made V8 compile its tile loops worse. */
#define NNW_PACKED(name, fin)                                                                       \
  static __attribute__((noinline)) void packed_##name(int32_t rows4, int32_t full, int32_t k,       \
                                                      const float *a, const float *bp, float *y,    \
                                                      const struct ep *e, float *pbuf) {            \
    packed_rows(rows4, full, k, a, bp, y, e, fin, pbuf);                                             \
  }
NNW_PACKED(bias, 0)
NNW_PACKED(residual, 1)
NNW_PACKED(any, -1)
#undef NNW_PACKED

/* columns [0, cols) of y = act(A B + bias + r), y's rows ldy floats apart, A packed into pbuf */
static void gemm_cols(int32_t m, int32_t cols, int32_t ldy, int32_t k, const float *a, const float *bp,
                      const float *bias, const float *r, float *y, int32_t act, float lo, float hi, float *pbuf) {
  const struct ep e = {bias, r, ldy, act, lo, hi};
  int32_t i0 = 0; /* rows below i0 are done for every whole panel */
  /* The epilogue's shape is tested where each path is picked, not computed once into a fin: that
   * version compiled differently, and V8 ran BERT-mini 1.009x slower (ab_kernels.py, A/A 1.000). */
  int unclamped = lo == -INFINITY && hi == INFINITY;
  if ((nnw_host_hints & NNW_HINT_SPLAT_BY_SHUFFLE) && nnw_pack_a_rows(k) > 0) {
    i0 = m / MR * MR;
    int32_t full = cols / NR * NR;
    if (unclamped && act == 0 && e.r == NULL) packed_bias(i0, full, k, a, bp, y, &e, pbuf);
    else if (unclamped && act == 0) packed_residual(i0, full, k, a, bp, y, &e, pbuf);
    else packed_any(i0, full, k, a, bp, y, &e, pbuf);
  }
  if (unclamped && act == 0 && e.r == NULL)
    panels_bias(m, cols, k, a, bp, y, i0, &e);
  else if (unclamped && act == 0)
    panels_residual(m, cols, k, a, bp, y, i0, &e);
  else
    panels(m, cols, k, a, bp, y, i0, &e, -1);
}

/* Threads (threads/pool.h): y's columns split into tiles of whole 8-column panels, each tile's
 * every output computed by gemm_cols exactly as one thread computes it (the row path depends on m
 * and k only, the tail panel stays the last tile's): N threads give the bits of one. Products
 * under GEMM_PARALLEL_MACS stay on the caller (waking a helper costs about as much). */
#define GEMM_PARALLEL_MACS (1 << 19)

struct cols_job {
  struct gemm_packed p;
  uint8_t *arena;
};

static void cols_task(void *ctx, int32_t start, int32_t count, int32_t worker) {
  const struct cols_job *job = ctx;
  const struct gemm_packed *p = &job->p;
  int32_t j0 = start * NR, cols = p->n - j0 < count * NR ? p->n - j0 : count * NR;
  const float *bias = nnw_f32_at(job->arena, p->bias), *r = nnw_f32_at(job->arena, p->r);
  gemm_cols(p->m, cols, p->n, p->k, nnw_f32_at(job->arena, p->a), nnw_f32_at(job->arena, p->bp) + (size_t)j0 * p->k,
            bias != NULL ? bias + j0 : NULL, r != NULL ? r + j0 : NULL, nnw_f32_at(job->arena, p->y) + j0, p->act,
            p->lo, p->hi, nnw_pool_pack_buf(worker));
}

void nnw_run_gemm_packed(const int32_t *args, uint8_t *arena) {
  struct gemm_packed p;
  gp_decode(args, &p);
  int32_t npanels = (p.n + NR - 1) / NR;
  int32_t threads = nnw_split_threads((uint64_t)p.m * (uint64_t)p.n * (uint64_t)p.k, GEMM_PARALLEL_MACS, npanels);
  if (threads > 1) {
    struct cols_job job = {p, arena};
    nnw_parallel_for(npanels, nnw_split_tile(npanels, threads), cols_task, &job);
    return;
  }
  nnw_gemm_packed_cols(p.m, p.n, p.n, p.k, nnw_f32_at(arena, p.a), nnw_f32_at(arena, p.bp),
                       nnw_f32_at(arena, p.bias), nnw_f32_at(arena, p.r), nnw_f32_at(arena, p.y), p.act, p.lo, p.hi);
}

void nnw_gemm_packed_cols(int32_t m, int32_t cols, int32_t ldy, int32_t k, const float *a, const float *bp,
                          const float *bias, const float *r, float *y, int32_t act, float lo, float hi) {
  gemm_cols(m, cols, ldy, k, a, bp, bias, r, y, act, lo, hi, nnw_pack_a_buf);
}

void nnw_gemm_packed_cols_buf(int32_t m, int32_t cols, int32_t ldy, int32_t k, const float *a, const float *bp,
                              const float *bias, const float *r, float *y, int32_t act, float lo, float hi, float *pbuf) {
  gemm_cols(m, cols, ldy, k, a, bp, bias, r, y, act, lo, hi, pbuf);
}
