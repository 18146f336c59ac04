/* q8_gemm_pk: the int8 GEMM of dynamically quantized transformers (MatMulIntegerToFloat by a
 * constant B), on B packed once at plan build. The layout is XNNPACK's "c8" idea: both operands
 * are int16 with k contiguous in blocks of 8, so one i32x4.dot_i16x8 of 8 k values of an A row
 * with 8 of a B column adds 4 partial sums into that (row, column)'s accumulator, and the 4 lanes
 * are summed once after the k loop. No operand is splat: the inner loop is loads, dots and adds
 * only, which Cranelift compiles as tightly as V8 (its v128.load32_splat is three instructions,
 * two on the vector ports: docs/wasmtime.md). The int32 sums wrap as q8_gemm's do, and integer
 * addition in any order gives the same sums, so results equal q8_gemm_ep's bit for bit. */
#include "q8.h"
#include "requant.h"
#include "../simd.h"
#include "../vmath.h"
#include "../threads/split.h"

enum { MR = 2, NR = 4, KB = 8 };

static uint64_t round_kb(uint64_t k) { return (k + KB - 1) / KB * KB; }

uint64_t nnw_q8_gemm_pk_scratch(uint64_t m, uint64_t k) { return nnw_mul(nnw_mul(m, round_kb(k)), 2); }

/* a16[i*kp + kk] = a[i][kk] - zp, 0 past k */
static void pack_a(const uint8_t *a, int32_t dtype, int32_t zp, int32_t m, int32_t k, int32_t kp,
                   int16_t *a16) {
  for (int32_t i = 0; i < m; i++) {
    const uint8_t *row = a + (size_t)i * (size_t)k;
    int16_t *out = a16 + (size_t)i * (size_t)kp;
    int32_t kk = 0;
#ifdef __wasm_simd128__
    v128_t vz = wasm_i16x8_splat((int16_t)zp);
    for (; kk + 8 <= k; kk += 8) wasm_v128_store(out + kk, nnw_q8_load8_sub(row + kk, dtype, vz));
#endif
    for (; kk < k; kk++) out[kk] = (int16_t)(nnw_q8_get(row, dtype, (size_t)kk) - zp);
    for (; kk < kp; kk++) out[kk] = 0;
  }
}

struct pk {
  const int16_t *a16, *bp;
  const float *scale, *fbias, *r;
  float *y;
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
#endif

/* the float epilogue of one row's 4 column sums (q8_gemm.c: store_f32, the same operations in
 * the same order), nb <= 4 columns stored */
static inline __attribute__((always_inline)) void store_row(const struct pk *p, int32_t i, int32_t j0, int32_t nb,
                                                             const int32_t acc[NR], int scale_s, int fbias, int r) {
  size_t at = (size_t)i * (size_t)p->n + (size_t)j0;
#ifdef __wasm_simd128__
  v128_t s = scale_s ? load_n(p->scale + j0, nb) : wasm_f32x4_splat(p->scale[0]);
  v4 v = wasm_f32x4_mul(wasm_f32x4_convert_i32x4(wasm_v128_load(acc)), s);
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
  for (int32_t c = 0; c < nb; c++) {
    float v = (float)acc[c] * p->scale[scale_s ? j0 + c : 0];
    if (fbias) v += p->fbias[j0 + c];
    if (r) v += p->r[at + (size_t)c];
    if (p->act) v = v4_lane0(v4_gelu(v4_set1(v)));
    p->y[at + (size_t)c] = v;
  }
#endif
}

#ifdef __wasm_simd128__
/* [sum of x0's lanes, of x1's, of x2's, of x3's] */
static v128_t hsum4(v128_t x0, v128_t x1, v128_t x2, v128_t x3) {
  v128_t t01 = wasm_i32x4_add(wasm_i32x4_shuffle(x0, x1, 0, 4, 1, 5), wasm_i32x4_shuffle(x0, x1, 2, 6, 3, 7));
  v128_t t23 = wasm_i32x4_add(wasm_i32x4_shuffle(x2, x3, 0, 4, 1, 5), wasm_i32x4_shuffle(x2, x3, 2, 6, 3, 7));
  return wasm_i32x4_add(wasm_i32x4_shuffle(t01, t23, 0, 1, 4, 5), wasm_i32x4_shuffle(t01, t23, 2, 3, 6, 7));
}
#endif

/* acc[r][c] = row i0 + r of a16 . column c of the panel, for r < mr (mr <= MR) */
static void tile(const struct pk *p, int32_t i0, int32_t mr, const int16_t *panel, int32_t acc[MR][NR]) {
  const int16_t *a0 = p->a16 + (size_t)i0 * (size_t)p->kp;
#ifdef __wasm_simd128__
  const int16_t *a1 = mr > 1 ? a0 + p->kp : a0; /* one row: computed twice, stored once */
  v128_t c00 = wasm_i32x4_splat(0), c01 = c00, c02 = c00, c03 = c00;
  v128_t c10 = c00, c11 = c00, c12 = c00, c13 = c00;
  for (int32_t kk = 0; kk < p->kp; kk += KB, panel += NR * KB) {
    v128_t x0 = wasm_v128_load(a0 + kk), x1 = wasm_v128_load(a1 + kk);
    v128_t b0 = wasm_v128_load(panel), b1 = wasm_v128_load(panel + 8);
    c00 = wasm_i32x4_add(c00, wasm_i32x4_dot_i16x8(x0, b0));
    c10 = wasm_i32x4_add(c10, wasm_i32x4_dot_i16x8(x1, b0));
    c01 = wasm_i32x4_add(c01, wasm_i32x4_dot_i16x8(x0, b1));
    c11 = wasm_i32x4_add(c11, wasm_i32x4_dot_i16x8(x1, b1));
    v128_t b2 = wasm_v128_load(panel + 16), b3 = wasm_v128_load(panel + 24);
    c02 = wasm_i32x4_add(c02, wasm_i32x4_dot_i16x8(x0, b2));
    c12 = wasm_i32x4_add(c12, wasm_i32x4_dot_i16x8(x1, b2));
    c03 = wasm_i32x4_add(c03, wasm_i32x4_dot_i16x8(x0, b3));
    c13 = wasm_i32x4_add(c13, wasm_i32x4_dot_i16x8(x1, b3));
  }
  wasm_v128_store(acc[0], hsum4(c00, c01, c02, c03));
  wasm_v128_store(acc[1], hsum4(c10, c11, c12, c13));
#else
  /* the same sums lane by lane; uint32 wraps like the SIMD lanes */
  for (int32_t r = 0; r < mr; r++) {
    const int16_t *ar = a0 + (size_t)r * (size_t)p->kp;
    for (int32_t c = 0; c < NR; c++) {
      uint32_t s = 0;
      for (int32_t kk = 0; kk < p->kp; kk++)
        s += (uint32_t)((int32_t)ar[kk] * (int32_t)panel[(size_t)(kk / KB) * NR * KB + (size_t)c * KB + kk % KB]);
      memcpy(&acc[r][c], &s, 4);
    }
  }
#endif
}

#ifdef __wasm_simd128__
/* gelu of all of y, contiguous, after the GEMM: a loop of independent iterations, so the CPU
 * overlaps their long dependency chains (erf's two polynomials and a division), which it could
 * not when each ran at the end of a tile; and read in order (a panel's rows are n floats apart,
 * every one in the same L1 set when n is 1024) */
static void gelu_all(const struct pk *p, int32_t r0, int32_t rows) {
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

/* the GEMM with the epilogue's options as constants: one loop per combination, no tests per row */
static inline __attribute__((always_inline)) void run_with(const struct pk *p, int scale_s, int fbias, int r,
                                                          int32_t j_lo, int32_t j_hi) {
  int32_t acc[MR][NR];
  for (int32_t j0 = j_lo; j0 < j_hi; j0 += NR) {
    int32_t nb = p->n - j0 < NR ? p->n - j0 : NR;
    const int16_t *panel = p->bp + (size_t)(j0 / NR) * (size_t)p->kp * NR;
    for (int32_t i0 = 0; i0 < p->m; i0 += MR) {
      int32_t mr = p->m - i0 < MR ? p->m - i0 : MR;
      tile(p, i0, mr, panel, acc);
      for (int32_t k = 0; k < mr; k++) store_row(p, i0 + k, j0, nb, acc[k], scale_s, fbias, r);
    }
  }
}

static void run_cols(const struct pk *p, int32_t j_lo, int32_t j_hi) {
  switch ((p->scale_s ? 4 : 0) | (p->fbias ? 2 : 0) | (p->r ? 1 : 0)) {
    case 0: run_with(p, 0, 0, 0, j_lo, j_hi); break;
    case 1: run_with(p, 0, 0, 1, j_lo, j_hi); break;
    case 2: run_with(p, 0, 1, 0, j_lo, j_hi); break;
    case 3: run_with(p, 0, 1, 1, j_lo, j_hi); break;
    case 4: run_with(p, 1, 0, 0, j_lo, j_hi); break;
    case 5: run_with(p, 1, 0, 1, j_lo, j_hi); break;
    case 6: run_with(p, 1, 1, 0, j_lo, j_hi); break;
    default: run_with(p, 1, 1, 1, j_lo, j_hi); break;
  }
}

/* Threads (threads/split.h): y's columns in tiles of whole NR-column panels (integer sums, every
 * output's epilogue as on one thread), then gelu by rows (lane by lane: the same bits) */
static void cols_task(void *ctx, int32_t start, int32_t count, int32_t worker) {
  const struct pk *p = ctx;
  (void)worker;
  int32_t hi = (start + count) * NR;
  run_cols(p, start * NR, hi < p->n ? hi : p->n);
}

#ifdef __wasm_simd128__
static void gelu_task(void *ctx, int32_t start, int32_t count, int32_t worker) {
  (void)worker;
  gelu_all(ctx, start, count);
}
#endif

static void run(const struct pk *p) {
  int32_t panels = (p->n + NR - 1) / NR;
  int32_t threads = nnw_split_threads((uint64_t)p->m * p->n * p->kp, NNW_SPLIT_MIN_FLOPS, panels);
  if (threads > 1) nnw_parallel_for(panels, nnw_split_tile(panels, threads), cols_task, (void *)p);
  else run_cols(p, 0, p->n);
#ifdef __wasm_simd128__
  if (p->act) {
    int32_t gt = nnw_split_threads((uint64_t)p->m * p->n * 16, NNW_SPLIT_MIN_ELEMS, p->m);
    nnw_parallel_for(p->m, gt > 1 ? nnw_split_tile(p->m, gt) : p->m, gelu_task, (void *)p);
  }
#endif
}

struct pk_args {
  int32_t a, bp, a_zp, scale, fbias, r, y, scratch, a_dtype, m, n, k, scale_s, act;
};
typedef char pk_args_match_ops_def[sizeof(struct pk_args) == 4 * NNW_Q8_GEMM_PK_NARGS ? 1 : -1];

static struct pk_args decode(const int32_t *v) {
  struct pk_args p;
  memcpy(&p, v, sizeof p); /* the field order is ops.def's */
  return p;
}

int nnw_validate_q8_gemm_pk(const int32_t *args, uint32_t arena_bytes) {
  struct pk_args p = decode(args);
  int32_t pos[] = {p.m, p.n, p.k};
  NNW_TRY(nnw_check_positive(pos, 3));
  if (!nnw_q8_is_q(p.a_dtype) || (p.scale_s & ~1) || (p.act & ~1)) return NNW_BAD_ARGS;
  uint64_t m = (uint64_t)p.m, n = (uint64_t)p.n, k = (uint64_t)p.k, kp = round_kb(k);
  uint64_t bp_bytes = nnw_mul(nnw_mul((n + NR - 1) / NR * NR, kp), 2);
  uint64_t y_bytes = nnw_mul(nnw_mul(m, n), 4), scratch = nnw_q8_gemm_pk_scratch(m, k);
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
  for (int i = 0; i < 8; i++)      /* the output and the scratch apart from everything else */
    for (int j = i + 1; j < 8; j++)
      if (j >= 6) NNW_TRY(nnw_check_apart(at[i], size[i], at[j], size[j], 0));
  return NNW_OK;
}

void nnw_run_q8_gemm_pk(const int32_t *args, uint8_t *arena) {
  struct pk_args a = decode(args);
  struct pk p = {
      .a16 = (const int16_t *)(const void *)(arena + a.scratch),
      .bp = (const int16_t *)(const void *)(arena + a.bp), .scale = nnw_f32_at(arena, a.scale),
      .fbias = nnw_f32_at(arena, a.fbias), .r = nnw_f32_at(arena, a.r), .y = nnw_f32_at(arena, a.y),
      .m = a.m, .n = a.n, .kp = (int32_t)round_kb((uint64_t)a.k), .scale_s = a.scale_s, .act = a.act};
  int32_t zp = nnw_q8_get(nnw_q8_at(arena, a.a_zp), a.a_dtype, 0);
  pack_a(arena + a.a, a.a_dtype, zp, a.m, a.k, p.kp, (int16_t *)(void *)(arena + a.scratch));
  run(&p);
}

/* scratch bytes q8_gemm_pk needs for an [m, k] a (what the plan compiler asks), -1 if too large */
NNW_EXPORT int32_t nnw_q8_gemm_pk_scratch_bytes(int32_t m, int32_t k) {
  if (m <= 0 || k <= 0) return -1;
  uint64_t bytes = nnw_q8_gemm_pk_scratch((uint64_t)m, (uint64_t)k);
  return bytes > INT32_MAX ? -1 : (int32_t)bytes;
}

/* ---- q8_gemm_pkq: QGemm's quantized output on the same packed B ---------------------------- */

struct pkq_args {
  int32_t a, bp, a_zp, bias, scale, y, scratch, a_dtype, y_dtype, m, n, k, bias_s, scale_s, y_zp, y_min,
      y_max;
};
typedef char pkq_args_match_ops_def[sizeof(struct pkq_args) == 4 * NNW_Q8_GEMM_PKQ_NARGS ? 1 : -1];

static struct pkq_args decode_q(const int32_t *v) {
  struct pkq_args p;
  memcpy(&p, v, sizeof p); /* the field order is ops.def's */
  return p;
}

int nnw_validate_q8_gemm_pkq(const int32_t *args, uint32_t arena_bytes) {
  struct pkq_args p = decode_q(args);
  int32_t pos[] = {p.m, p.n, p.k};
  NNW_TRY(nnw_check_positive(pos, 3));
  if (!nnw_q8_is_q(p.a_dtype) || !nnw_q8_is_q(p.y_dtype) || (p.bias_s & ~1) || (p.scale_s & ~1))
    return NNW_BAD_ARGS;
  NNW_TRY(nnw_q8_check_out(p.y_dtype, p.y_zp, p.y_min, p.y_max));
  uint64_t m = (uint64_t)p.m, n = (uint64_t)p.n, k = (uint64_t)p.k, kp = round_kb(k);
  uint64_t bp_bytes = nnw_mul(nnw_mul((n + NR - 1) / NR * NR, kp), 2);
  uint64_t y_bytes = nnw_mul(m, n), scratch = nnw_q8_gemm_pk_scratch(m, k);
  uint64_t bias_bytes = p.bias_s ? 4 * n : 4, scale_bytes = p.scale_s ? 4 * n : 4;
  NNW_TRY(nnw_check_typed(p.a, nnw_mul(m, k), p.a_dtype, arena_bytes, 0));
  NNW_TRY(nnw_check_tensor(p.bp, bp_bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_typed(p.a_zp, 1, p.a_dtype, arena_bytes, 1));
  NNW_TRY(nnw_check_tensor(p.bias, bias_bytes, arena_bytes, 1, 1));
  NNW_TRY(nnw_check_tensor(p.scale, scale_bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_typed(p.y, y_bytes, p.y_dtype, arena_bytes, 0));
  NNW_TRY(nnw_check_tensor(p.scratch, scratch, arena_bytes, 0, 1));
  const int32_t at[] = {p.a, p.bp, p.a_zp, p.bias, p.scale, p.y, p.scratch};
  const uint64_t size[] = {nnw_mul(m, k), bp_bytes, 1, bias_bytes, scale_bytes, y_bytes, scratch};
  for (int i = 0; i < 7; i++)      /* the output and the scratch apart from everything else */
    for (int j = i + 1; j < 7; j++)
      if (j >= 5) NNW_TRY(nnw_check_apart(at[i], size[i], at[j], size[j], 0));
  return NNW_OK;
}

/* acc[c] = row a0 . column c of the panel: tile() for one row without computing it twice */
static void tile1(const int16_t *a0, int32_t kp, const int16_t *panel, int32_t acc[NR]) {
#ifdef __wasm_simd128__
  v128_t c0 = wasm_i32x4_splat(0), c1 = c0, c2 = c0, c3 = c0;
  for (int32_t kk = 0; kk < kp; kk += KB, panel += NR * KB) {
    v128_t x0 = wasm_v128_load(a0 + kk);
    c0 = wasm_i32x4_add(c0, wasm_i32x4_dot_i16x8(x0, wasm_v128_load(panel)));
    c1 = wasm_i32x4_add(c1, wasm_i32x4_dot_i16x8(x0, wasm_v128_load(panel + 8)));
    c2 = wasm_i32x4_add(c2, wasm_i32x4_dot_i16x8(x0, wasm_v128_load(panel + 16)));
    c3 = wasm_i32x4_add(c3, wasm_i32x4_dot_i16x8(x0, wasm_v128_load(panel + 24)));
  }
  wasm_v128_store(acc, hsum4(c0, c1, c2, c3));
#else
  for (int32_t c = 0; c < NR; c++) {
    uint32_t s = 0;
    for (int32_t kk = 0; kk < kp; kk++)
      s += (uint32_t)((int32_t)a0[kk] * (int32_t)panel[(size_t)(kk / KB) * NR * KB + (size_t)c * KB + kk % KB]);
    memcpy(&acc[c], &s, 4);
  }
#endif
}

/* q8_gemm's quantized store (gemm.c: store / store_f32) of nb <= 4 columns of one row: the
 * wrapping bias add, float product and round-half-even saturation, so the same bytes */
static void store_q(const struct pkq_args *a, const int32_t *bias, const float *scale, uint8_t *y,
                    int32_t j0, int32_t nb, const int32_t acc[NR]) {
  int32_t t[NR];
  for (int32_t c = 0; c < NR; c++) {
    int32_t j = j0 + (c < nb ? c : 0);
    t[c] = (int32_t)((uint32_t)acc[c] + (bias ? (uint32_t)bias[j * a->bias_s] : 0u));
  }
#ifdef __wasm_simd128__
  float s[NR];
  for (int32_t c = 0; c < NR; c++) s[c] = scale[(j0 + (c < nb ? c : 0)) * a->scale_s];
  struct nnw_q8_rq rq = nnw_q8_rq_init(a->y_zp, a->y_min, a->y_max);
  v128_t q = nnw_q8_rq4(&rq, wasm_v128_load(t), wasm_v128_load(s));
  q = nnw_q8_rq_pack(q, q, a->y_dtype == NNW_U8);
  if (nb == NR) {
    wasm_v128_store32_lane(y + j0, q, 0);
    return;
  }
  uint8_t b[16];
  wasm_v128_store(b, q);
  memcpy(y + j0, b, (size_t)nb);
#else
  for (int32_t c = 0; c < nb; c++)
    y[j0 + c] = (uint8_t)nnw_q8_round_sat((float)t[c] * scale[(j0 + c) * a->scale_s], a->y_zp, a->y_min, a->y_max);
#endif
}

/* Threads: as q8_gemm_pk, y's columns in tiles of whole panels */
struct pkq_job {
  const struct pkq_args *a;
  const struct pk *p;
  const int32_t *bias;
  const float *scale;
  uint8_t *arena;
};

static void pkq_task(void *ctx, int32_t start, int32_t count, int32_t worker) {
  const struct pkq_job *j = ctx;
  const struct pk *p = j->p;
  int32_t acc[MR][NR];
  (void)worker;
  for (int32_t j0 = start * NR; j0 < p->n && j0 < (start + count) * NR; j0 += NR) {
    int32_t nb = p->n - j0 < NR ? p->n - j0 : NR;
    const int16_t *panel = p->bp + (size_t)(j0 / NR) * (size_t)p->kp * NR;
    for (int32_t i0 = 0; i0 < p->m; i0 += MR) {
      int32_t mr = p->m - i0 < MR ? p->m - i0 : MR;
      if (mr == 1)
        tile1(p->a16 + (size_t)i0 * (size_t)p->kp, p->kp, panel, acc[0]);
      else
        tile(p, i0, mr, panel, acc);
      for (int32_t r = 0; r < mr; r++)
        store_q(j->a, j->bias, j->scale, j->arena + j->a->y + (size_t)(i0 + r) * (size_t)p->n, j0, nb, acc[r]);
    }
  }
}

void nnw_run_q8_gemm_pkq(const int32_t *args, uint8_t *arena) {
  struct pkq_args a = decode_q(args);
  struct pk p = {.a16 = (const int16_t *)(const void *)(arena + a.scratch),
                 .bp = (const int16_t *)(const void *)(arena + a.bp), .m = a.m, .n = a.n,
                 .kp = (int32_t)round_kb((uint64_t)a.k)};
  const int32_t *bias = a.bias < 0 ? NULL : (const int32_t *)(const void *)(arena + a.bias);
  const float *scale = nnw_f32_at(arena, a.scale);
  int32_t zp = nnw_q8_get(nnw_q8_at(arena, a.a_zp), a.a_dtype, 0);
  pack_a(arena + a.a, a.a_dtype, zp, a.m, a.k, p.kp, (int16_t *)(void *)(arena + a.scratch));
  struct pkq_job job = {&a, &p, bias, scale, arena};
  int32_t panels = (p.n + NR - 1) / NR;
  int32_t threads = nnw_split_threads((uint64_t)p.m * p.n * p.kp, NNW_SPLIT_MIN_FLOPS, panels);
  nnw_parallel_for(panels, threads > 1 ? nnw_split_tile(panels, threads) : panels, pkq_task, &job);
}

/* ---- q8_pack_b: B packed at plan load (an init op), pack_q8_b's layout (lower/quant.py) ------ */

struct pack_b_args {
  int32_t b, b_zp, bp, b_dtype, k, n, b_zp_cs;
};
typedef char pack_b_args_match_ops_def[sizeof(struct pack_b_args) == 4 * NNW_Q8_PACK_B_NARGS ? 1 : -1];

static struct pack_b_args decode_pack_b(const int32_t *v) {
  struct pack_b_args p;
  memcpy(&p, v, sizeof p); /* the field order is ops.def's */
  return p;
}

int nnw_validate_q8_pack_b(const int32_t *args, uint32_t arena_bytes) {
  struct pack_b_args p = decode_pack_b(args);
  int32_t pos[] = {p.k, p.n};
  NNW_TRY(nnw_check_positive(pos, 2));
  if (!nnw_q8_is_q(p.b_dtype) || (p.b_zp_cs & ~1)) return NNW_BAD_ARGS;
  uint64_t k = (uint64_t)p.k, n = (uint64_t)p.n, b_n = nnw_mul(k, n), zp_n = p.b_zp_cs ? n : 1;
  uint64_t bp_bytes = nnw_mul(nnw_mul((n + NR - 1) / NR * NR, round_kb(k)), 2);
  NNW_TRY(nnw_check_typed(p.b, b_n, p.b_dtype, arena_bytes, 0));
  NNW_TRY(nnw_check_typed(p.b_zp, zp_n, p.b_dtype, arena_bytes, 1));
  NNW_TRY(nnw_check_tensor(p.bp, bp_bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_apart(p.b, b_n, p.bp, bp_bytes, 0));
  NNW_TRY(nnw_check_apart(p.b_zp, zp_n, p.bp, bp_bytes, 0));
  return NNW_OK;
}

void nnw_run_q8_pack_b(const int32_t *args, uint8_t *arena) {
  struct pack_b_args a = decode_pack_b(args);
  int32_t kp = (int32_t)round_kb((uint64_t)a.k), n4 = (a.n + NR - 1) / NR * NR;
  const uint8_t *b = arena + a.b, *zp = nnw_q8_at(arena, a.b_zp);
  int16_t *bp = (int16_t *)(void *)(arena + a.bp);
  memset(bp, 0, 2 * (size_t)n4 * (size_t)kp);
  for (int32_t kk = 0; kk < a.k; kk++) {
    const uint8_t *row = b + (size_t)kk * (size_t)a.n;
    int16_t *out = bp + (size_t)(kk / KB) * NR * KB + (size_t)(kk % KB);
    for (int32_t j = 0; j < a.n; j++)
      out[(size_t)(j / NR) * (size_t)kp * NR + (size_t)(j % NR) * KB] =
          (int16_t)(nnw_q8_get(row, a.b_dtype, (size_t)j) - nnw_q8_get(zp, a.b_dtype, (size_t)j * (size_t)a.b_zp_cs));
  }
}
