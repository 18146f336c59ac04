/* q4_matmul: onnxruntime's MatMulNBits on its weights as shipped (uint8 blocks, ops.def 110).
 *
 * Decode (m <= 4) is a matrix-vector product bound by memory bandwidth, so the blocks are read
 * once, 16 bytes at a time, and decoded in registers (q4.h): as llama.cpp's q4_0 dot products
 * and MLAS's SQNBit kernels, the sum over a block is taken on the raw values and the block's
 * scale and zero point applied once per block, using sum_k a_k (q_k - z) s = s (sum_k a_k q_k -
 * z sum_k a_k). A is copied once per row into scratch in the lanes' element order, each element
 * times the power of two its weight arrives with, with zeros past K (so a partial last block
 * needs no test), together with its sums over each block per lane. Four columns share each load
 * of that copy, all in float32. With a_int8 (accuracy_level 4) A is quantized to int8 per block and
 * both decode and prefill are integer dot products instead: nbits_int8.c.
 *
 * Prefill (m > 4) dequantizes 64 columns at a time into scratch in gemm_packed's panel layout
 * and runs gemm_packed's microkernel on them: the packed weights stay the only copy of B.
 * Sums are in a fixed order on every engine (no FMA): the same bits in V8, wasmtime, natively. */
#include <math.h>

#include "../internal.h"
#include "../threads/split.h"
#include "nbits_int8.h"
#include "q4.h"

#if defined(__GNUC__)
#define Q4_INLINE inline __attribute__((always_inline))
#else
#define Q4_INLINE inline
#endif

void nnw_run_gemm_packed(const int32_t *args, uint8_t *arena);

enum { GEMV_MAX_M = 4, NC = 4, NP = 64 };

struct q4mm_args {
  int32_t a, b, scales, zp, bias, y, scratch, m, n, k, bits, bs, zp_kind, a_int8;
};
typedef char q4mm_args_match_ops_def[sizeof(struct q4mm_args) == 4 * NNW_Q4_MATMUL_NARGS ? 1 : -1];

/* the shape of the problem, derived once */
struct q4mm {
  int32_t m, n, k, bits, bs, zk, i8;
  int32_t kb, blob, zrow; /* blocks a column, bytes a block, bytes of packed zero points a column */
  int32_t ce, nc, units;  /* elements a 16-byte chunk, chunks a column, A-sum units a column */
};

static int shape_of(const struct q4mm_args *v, struct q4mm *s) {
  int32_t pos[] = {v->m, v->n, v->k};
  NNW_TRY(nnw_check_positive(pos, 3));
  if (v->bits != 2 && v->bits != 4 && v->bits != 8) return NNW_BAD_ARGS;
  if (v->bs < 16 || v->bs > (1 << 20) || (v->bs & (v->bs - 1))) return NNW_BAD_ARGS;
  if (v->zp_kind < 0 || v->zp_kind > 2 || (v->zp_kind == 0) != (v->zp < 0)) return NNW_BAD_ARGS;
  if (v->a_int8 != 0 && (v->a_int8 != 1 || !nnw_q4i8_supported(v->bits, v->bs) || v->zp_kind == 2)) return NNW_BAD_ARGS;
  s->i8 = v->a_int8;
  s->m = v->m, s->n = v->n, s->k = v->k, s->bits = v->bits, s->bs = v->bs, s->zk = v->zp_kind;
  s->kb = (int32_t)(((int64_t)v->k + v->bs - 1) / v->bs);
  s->blob = v->bs * v->bits / 8;
  s->zrow = (int32_t)(((int64_t)s->kb * v->bits + 7) / 8);
  s->ce = 128 / v->bits;
  int64_t kp = (int64_t)s->kb * v->bs;
  s->nc = (int32_t)((kp + s->ce - 1) / s->ce);
  s->units = v->bs >= s->ce ? s->kb : s->nc;
  return NNW_OK;
}

static uint64_t gemv_scratch(const struct q4mm *s) {
  return nnw_add(nnw_mul((uint64_t)s->nc * 4, (uint64_t)s->ce), nnw_mul((uint64_t)s->units, 16));
}

static uint64_t gemm_scratch(const struct q4mm *s) {
  return nnw_add(nnw_mul(NP * 4, (uint64_t)s->k), nnw_mul((uint64_t)s->m * 4, NP));
}

/* the float path's, or the int8 path's when that is larger (one size for both: the exported query
 * does not take a_int8) */
static uint64_t scratch_of(const struct q4mm *s) {
  uint64_t f = s->m <= GEMV_MAX_M ? gemv_scratch(s) : gemm_scratch(s);
  uint64_t i = nnw_q4i8_supported(s->bits, s->bs) ? nnw_q4i8_scratch(s->m, s->k, s->bits, s->bs) : 0;
  return f > i ? f : i;
}

NNW_EXPORT int32_t nnw_q4_matmul_scratch_bytes(int32_t m, int32_t n, int32_t k, int32_t bits, int32_t bs) {
  struct q4mm_args v = {0, 0, 0, -1, -1, 0, 0, m, n, k, bits, bs, 0, 0};
  struct q4mm s;
  if (shape_of(&v, &s) != NNW_OK) return -1;
  uint64_t b = scratch_of(&s);
  return b > 0x7FFFFFF0u ? -1 : (int32_t)b;
}

int nnw_validate_q4_matmul(const int32_t *args, uint32_t arena_bytes) {
  struct q4mm_args v;
  memcpy(&v, args, sizeof v); /* the field order is ops.def's */
  struct q4mm s;
  NNW_TRY(shape_of(&v, &s));
  uint64_t m = (uint64_t)v.m, n = (uint64_t)v.n, k = (uint64_t)v.k;
  uint64_t a_bytes = nnw_mul(m * 4, k), y_bytes = nnw_mul(m * 4, n);
  uint64_t b_bytes = nnw_mul(nnw_mul(n, (uint64_t)s.kb), (uint64_t)s.blob);
  uint64_t sc_bytes = nnw_mul(nnw_mul(n, (uint64_t)s.kb), 4);
  uint64_t zp_bytes = s.zk == 2 ? sc_bytes : s.zk == 1 ? nnw_mul(n, (uint64_t)s.zrow) : 0;
  uint64_t scr = scratch_of(&s);
  NNW_TRY(nnw_check_tensor(v.a, a_bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(v.b, b_bytes, arena_bytes, 0, 0));
  NNW_TRY(nnw_check_tensor(v.scales, sc_bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(v.zp, zp_bytes, arena_bytes, 1, s.zk == 2));
  NNW_TRY(nnw_check_tensor(v.bias, n * 4, arena_bytes, 1, 1));
  NNW_TRY(nnw_check_tensor(v.y, y_bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(v.scratch, scr, arena_bytes, 0, 1));
  const int32_t in[] = {v.a, v.b, v.scales, v.zp, v.bias};
  const uint64_t in_bytes[] = {a_bytes, b_bytes, sc_bytes, zp_bytes, n * 4};
  for (int i = 0; i < 5; i++) {
    NNW_TRY(nnw_check_apart(in[i], in_bytes[i], v.y, y_bytes, 0));
    NNW_TRY(nnw_check_apart(in[i], in_bytes[i], v.scratch, scr, 0));
  }
  return nnw_check_apart(v.y, y_bytes, v.scratch, scr, 0);
}

/* ---- the pieces both paths share --------------------------------------------------------------- */

struct q4run {
  struct q4mm s;
  const float *a, *scales, *zpf, *bias;
  const uint8_t *b, *zpb;
  float *y;
};

static Q4_INLINE float zp_at(const struct q4run *p, int32_t j, int32_t blk) {
  if (p->s.zk == 2) return p->zpf[(size_t)j * (size_t)p->s.kb + (size_t)blk];
  if (p->s.zk == 0) return (float)(1 << (p->s.bits - 1));
  int32_t bit = blk * p->s.bits;
  uint8_t byte = p->zpb[(size_t)j * (size_t)p->s.zrow + (size_t)(bit / 8)];
  return (float)((byte >> (bit % 8)) & ((1 << p->s.bits) - 1));
}

/* ---- GEMV: m <= 4, one row of A at a time ----------------------------------------------------- */

/* ap[c*ce + t*4 + l] = a[c*ce + l*e + t] * q4_elem_scale(t), 0 past k; asum[u*4 + l] the sum of
 * the unit u's a over lane l (unit: a block, or a chunk when blocks are smaller than a chunk) */
static void prep_row(const struct q4mm *s, const float *a, float *ap, float *asum) {
  const int e = 32 / s->bits, ce = s->ce;
  float fs[32];
  for (int t = 0; t < e; t++) fs[t] = q4_elem_scale(t, s->bits);
  int32_t cpu = s->bs >= ce ? s->bs / ce : 1; /* chunks a unit */
  for (int32_t u = 0; u < s->units; u++) {
    float acc[4] = {0, 0, 0, 0};
    for (int32_t c = u * cpu; c < (u + 1) * cpu; c++) {
      for (int l = 0; l < 4; l++)
        for (int t = 0; t < e; t++) {
          int64_t kk = (int64_t)c * ce + l * e + t;
          float v = kk < s->k ? a[kk] : 0.0f;
          ap[(size_t)c * (size_t)ce + (size_t)(t * 4 + l)] = v * fs[t];
          acc[l] += v;
        }
    }
    memcpy(asum + (size_t)u * 4, acc, sizeof acc);
  }
}

/* y[j..j+3] of one row, blocks of at least a chunk: per block, the raw dot in 4 lanes for each
 * of 4 columns, then tot += (dot - z * asum) * s */
static Q4_INLINE void gemv4_big(const struct q4run *p, const float *ap, const float *asum, int32_t j,
                                const int32_t *cols, float out[NC], int bits) {
  const int e = 32 / bits, ce = 4 * e;
  const int32_t cpb = p->s.bs / ce;
  const size_t colbytes = (size_t)p->s.kb * (size_t)p->s.blob;
  const uint8_t *col[NC];
  v4 tot[NC];
  for (int c = 0; c < NC; c++) {
    col[c] = p->b + (size_t)cols[c] * colbytes;
    tot[c] = v4_set1(0.0f);
  }
  (void)j;
  for (int32_t blk = 0; blk < p->s.kb; blk++) {
    v4 acc[NC];
    for (int c = 0; c < NC; c++) acc[c] = v4_set1(0.0f);
    const float *apc = ap + (size_t)blk * (size_t)p->s.bs;
    for (int32_t ch = 0; ch < cpb; ch++, apc += ce) {
      size_t off = ((size_t)blk * (size_t)cpb + (size_t)ch) * 16;
      v4 x[NC];
      for (int c = 0; c < NC; c++) x[c] = q4_load16(col[c] + off);
      for (int t = 0; t < e; t++) {
        v4 av = v4_load(apc + 4 * t);
        for (int c = 0; c < NC; c++) acc[c] = v4_add(acc[c], v4_mul(av, q4_elem(x[c], t, bits)));
      }
    }
    v4 as = v4_load(asum + (size_t)blk * 4);
    for (int c = 0; c < NC; c++) {
      v4 sc = v4_set1(p->scales[(size_t)cols[c] * (size_t)p->s.kb + (size_t)blk]);
      v4 z = v4_set1(zp_at(p, cols[c], blk));
      tot[c] = v4_add(tot[c], v4_mul(v4_sub(acc[c], v4_mul(z, as)), sc));
    }
  }
  for (int c = 0; c < NC; c++) out[c] = v4_hsum(tot[c]);
}

/* the same for blocks smaller than a chunk (bs 16 at 4 bits; 16, 32 at 2 bits): each lane of a
 * chunk belongs to one block, so the scales and zero points are per-lane vectors; the column's
 * last chunk may end inside 16 bytes (copied into zeros: never read past B) */
static Q4_INLINE void gemv4_small(const struct q4run *p, const float *ap, const float *asum, const int32_t *cols,
                                  float out[NC], int bits) {
  const int e = 32 / bits, ce = 4 * e;
  const int32_t lpb = p->s.bs / e; /* lanes a block */
  const size_t colbytes = (size_t)p->s.kb * (size_t)p->s.blob;
  v4 tot[NC];
  for (int c = 0; c < NC; c++) tot[c] = v4_set1(0.0f);
  for (int32_t ch = 0; ch < p->s.nc; ch++) {
    const float *apc = ap + (size_t)ch * (size_t)ce;
    size_t off = (size_t)ch * 16;
    v4 x[NC];
    for (int c = 0; c < NC; c++) {
      const uint8_t *src = p->b + (size_t)cols[c] * colbytes + off;
      if (off + 16 <= colbytes) {
        x[c] = q4_load16(src);
      } else {
        uint8_t tmp[16] = {0};
        memcpy(tmp, src, colbytes - off);
        x[c] = q4_load16(tmp);
      }
    }
    v4 acc[NC];
    for (int c = 0; c < NC; c++) acc[c] = v4_set1(0.0f);
    for (int t = 0; t < e; t++) {
      v4 av = v4_load(apc + 4 * t);
      for (int c = 0; c < NC; c++) acc[c] = v4_add(acc[c], v4_mul(av, q4_elem(x[c], t, bits)));
    }
    v4 as = v4_load(asum + (size_t)ch * 4);
    for (int c = 0; c < NC; c++) {
      float sv[4], zv[4];
      for (int l = 0; l < 4; l++) {
        int32_t blk = ch * (4 / lpb) + l / lpb;
        int in = blk < p->s.kb;
        sv[l] = in ? p->scales[(size_t)cols[c] * (size_t)p->s.kb + (size_t)blk] : 0.0f;
        zv[l] = in ? zp_at(p, cols[c], blk) : 0.0f;
      }
      tot[c] = v4_add(tot[c], v4_mul(v4_sub(acc[c], v4_mul(v4_load(zv), as)), v4_load(sv)));
    }
  }
  for (int c = 0; c < NC; c++) out[c] = v4_hsum(tot[c]);
}

/* columns [j0, j1) of row i (j0 a multiple of NC; ap/asum: the row's prep_row) */
static Q4_INLINE void gemv_cols(const struct q4run *p, const float *ap, const float *asum, int32_t i, int32_t j0,
                                int32_t j1, int bits) {
  float *yi = p->y + (size_t)i * (size_t)p->s.n;
  for (int32_t j = j0; j < j1; j += NC) {
    int32_t cols[NC];
    float out[NC];
    for (int c = 0; c < NC; c++) cols[c] = j + c < p->s.n ? j + c : p->s.n - 1; /* repeats: dropped */
    if (p->s.bs >= 4 * (32 / bits))
      gemv4_big(p, ap, asum, j, cols, out, bits);
    else
      gemv4_small(p, ap, asum, cols, out, bits);
    for (int c = 0; c < NC && j + c < p->s.n; c++) yi[j + c] = out[c] + (p->bias ? p->bias[j + c] : 0.0f);
  }
}

/* one function per width, so that each inner loop is unrolled for its constant element count */
static void gemv_cols_4(const struct q4run *p, const float *ap, const float *asum, int32_t i, int32_t j0, int32_t j1) {
  gemv_cols(p, ap, asum, i, j0, j1, 4);
}
static void gemv_cols_8(const struct q4run *p, const float *ap, const float *asum, int32_t i, int32_t j0, int32_t j1) {
  gemv_cols(p, ap, asum, i, j0, j1, 8);
}
static void gemv_cols_2(const struct q4run *p, const float *ap, const float *asum, int32_t i, int32_t j0, int32_t j1) {
  gemv_cols(p, ap, asum, i, j0, j1, 2);
}

/* Threads (threads/split.h): a row's columns in tiles of groups of NC, each column's sum computed
 * by the same code whoever runs its group (A's copy is made once per row, before the job): N
 * threads give the bits of one. */
struct gemv_job {
  const struct q4run *p;
  const float *ap, *asum;
  int32_t i;
};

static void gemv_task(void *ctx, int32_t start, int32_t count, int32_t worker) {
  const struct gemv_job *j = ctx;
  const struct q4run *p = j->p;
  int32_t j0 = start * NC, j1 = (start + count) * NC < p->s.n ? (start + count) * NC : p->s.n;
  (void)worker;
  if (p->s.bits == 4) gemv_cols_4(p, j->ap, j->asum, j->i, j0, j1);
  else if (p->s.bits == 8) gemv_cols_8(p, j->ap, j->asum, j->i, j0, j1);
  else gemv_cols_2(p, j->ap, j->asum, j->i, j0, j1);
}

static void gemv(const struct q4run *p, float *ap, float *asum) {
  int32_t groups = (p->s.n + NC - 1) / NC;
  int32_t threads = nnw_split_threads((uint64_t)p->s.n * (uint64_t)p->s.k, NNW_SPLIT_MIN_FLOPS, groups);
  for (int32_t i = 0; i < p->s.m; i++) {
    prep_row(&p->s, p->a + (size_t)i * (size_t)p->s.k, ap, asum);
    struct gemv_job job = {p, ap, asum, i};
    nnw_parallel_for(groups, threads > 1 ? nnw_split_tile(groups, threads) : groups, gemv_task, &job);
  }
}

/* ---- GEMM: m > 4, gemm_packed on dequantized panels -------------------------------------------- */

/* columns j0..j0+w-1 of the weight, dequantized into gemm_packed's panels of 8: pan[(c/8)*8k +
 * kk*8 + c%8] = (q - z) * s, columns w..ceil(w/8)*8-1 zero */
static void dequant_panel(const struct q4run *p, int32_t j0, int32_t w, float *pan) {
  const int32_t k = p->s.k, bits = p->s.bits, bs = p->s.bs;
  const uint32_t mask = (1u << bits) - 1u;
  const size_t colbytes = (size_t)p->s.kb * (size_t)p->s.blob;
  int32_t wp = (w + 7) / 8 * 8;
  for (int32_t c = 0; c < wp; c++) {
    float *dst = pan + (size_t)(c / 8) * 8 * (size_t)k + (size_t)(c % 8);
    if (c >= w) {
      for (int32_t kk = 0; kk < k; kk++) dst[(size_t)kk * 8] = 0.0f;
      continue;
    }
    int32_t j = j0 + c;
    const uint8_t *col = p->b + (size_t)j * colbytes;
    for (int32_t blk = 0; blk < p->s.kb; blk++) {
      float s = p->scales[(size_t)j * (size_t)p->s.kb + (size_t)blk], z = zp_at(p, j, blk);
      int32_t k0 = blk * bs, k1 = k0 + bs < k ? k0 + bs : k;
      const uint8_t *q = col + (size_t)blk * (size_t)p->s.blob;
      int32_t kk = k0;
      if (bits == 4) /* two weights a byte, the common case */
        for (const uint8_t *qb = q; kk + 2 <= k1; kk += 2, qb++) {
          dst[(size_t)kk * 8] = ((float)(*qb & 0x0F) - z) * s;
          dst[(size_t)kk * 8 + 8] = ((float)(*qb >> 4) - z) * s;
        }
      for (int32_t bit = (kk - k0) * bits; kk < k1; kk++, bit += bits) { /* shifts: no division */
        uint32_t v = (uint32_t)(q[bit >> 3] >> (bit & 7)) & mask;
        dst[(size_t)kk * 8] = ((float)v - z) * s;
      }
    }
  }
}

static void gemm(const struct q4run *p, uint8_t *arena, int32_t a_off, int32_t scratch_off) {
  const int32_t m = p->s.m, n = p->s.n, k = p->s.k;
  float *pan = nnw_f32_at(arena, scratch_off);
  int32_t tmp_off = scratch_off + NP * 4 * k;
  float *tmp = nnw_f32_at(arena, tmp_off);
  const float inf = INFINITY, ninf = -INFINITY;
  int32_t lo, hi;
  memcpy(&lo, &ninf, 4);
  memcpy(&hi, &inf, 4);
  for (int32_t j0 = 0; j0 < n; j0 += NP) {
    int32_t w = n - j0 < NP ? n - j0 : NP;
    dequant_panel(p, j0, w, pan);
    const int32_t args[NNW_GEMM_PACKED_NARGS] = {a_off, scratch_off, -1, -1, tmp_off, m, w, k, 0, lo, hi};
    nnw_run_gemm_packed(args, arena);
    for (int32_t i = 0; i < m; i++) {
      float *yi = p->y + (size_t)i * (size_t)n + (size_t)j0;
      const float *ti = tmp + (size_t)i * (size_t)w;
      for (int32_t c = 0; c < w; c++) yi[c] = ti[c] + (p->bias ? p->bias[j0 + c] : 0.0f);
    }
  }
}

void nnw_run_q4_matmul(const int32_t *args, uint8_t *arena) {
  struct q4mm_args v;
  memcpy(&v, args, sizeof v);
  struct q4run p;
  shape_of(&v, &p.s); /* validated at load */
  p.a = nnw_f32_at(arena, v.a);
  p.b = arena + v.b;
  p.scales = nnw_f32_at(arena, v.scales);
  p.zpf = p.s.zk == 2 ? nnw_f32_at(arena, v.zp) : NULL;
  p.zpb = p.s.zk == 1 ? arena + v.zp : NULL;
  p.bias = nnw_f32_at(arena, v.bias);
  p.y = nnw_f32_at(arena, v.y);
  if (p.s.i8) {
    const struct nnw_q4i8 q = {p.a, p.scales, p.bias, p.b, p.zpb, p.y, p.s.m, p.s.n, p.s.k, p.s.bits, p.s.bs};
    nnw_q4i8_run(&q, arena + v.scratch);
    return;
  }
  if (p.s.m > GEMV_MAX_M) {
    gemm(&p, arena, v.a, v.scratch);
    return;
  }
  float *ap = nnw_f32_at(arena, v.scratch);
  float *asum = ap + (size_t)p.s.nc * (size_t)p.s.ce;
  gemv(&p, ap, asum);
}

/* ---- q4_gather: GatherBlockQuantized on uint8 rows ---------------------------------------------- */

struct q4g_args {
  int32_t data, idx, scales, zp, y, idx_dtype, rows, cols, n_idx, bits, bs;
};
typedef char q4g_args_match_ops_def[sizeof(struct q4g_args) == 4 * NNW_Q4_GATHER_NARGS ? 1 : -1];

int nnw_validate_q4_gather(const int32_t *args, uint32_t arena_bytes) {
  struct q4g_args v;
  memcpy(&v, args, sizeof v);
  int32_t pos[] = {v.rows, v.cols, v.n_idx};
  NNW_TRY(nnw_check_positive(pos, 3));
  if ((v.bits != 4 && v.bits != 8) || v.bs < 16 || v.bs > (1 << 20) || (v.bs & (v.bs - 1))) return NNW_BAD_ARGS;
  if (v.idx_dtype != NNW_I32 && v.idx_dtype != NNW_I64) return NNW_BAD_ARGS;
  if ((uint64_t)v.cols * (uint64_t)v.bits % 8) return NNW_BAD_ARGS;
  uint64_t rows = (uint64_t)v.rows, nb = ((uint64_t)v.cols + (uint64_t)v.bs - 1) / (uint64_t)v.bs;
  uint64_t d_bytes = nnw_mul(rows, (uint64_t)v.cols * (uint64_t)v.bits / 8);
  uint64_t s_bytes = nnw_mul(nnw_mul(rows, nb), 4);
  uint64_t z_bytes = (nnw_mul(nnw_mul(rows, nb), (uint64_t)v.bits) + 7) / 8;
  uint64_t y_bytes = nnw_mul(nnw_mul((uint64_t)v.n_idx, (uint64_t)v.cols), 4);
  uint64_t i_bytes = nnw_mul((uint64_t)v.n_idx, (uint64_t)nnw_dtype_size(v.idx_dtype));
  NNW_TRY(nnw_check_tensor(v.data, d_bytes, arena_bytes, 0, 0));
  NNW_TRY(nnw_check_typed(v.idx, (uint64_t)v.n_idx, v.idx_dtype, arena_bytes, 0));
  NNW_TRY(nnw_check_tensor(v.scales, s_bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(v.zp, z_bytes, arena_bytes, 1, 0));
  NNW_TRY(nnw_check_tensor(v.y, y_bytes, arena_bytes, 0, 1));
  const int32_t in[] = {v.data, v.idx, v.scales, v.zp};
  const uint64_t in_bytes[] = {d_bytes, i_bytes, s_bytes, z_bytes};
  for (int i = 0; i < 4; i++) NNW_TRY(nnw_check_apart(in[i], in_bytes[i], v.y, y_bytes, 0));
  return NNW_OK;
}

static int64_t q4_index(const uint8_t *idx, int32_t dtype, size_t i, int32_t rows) {
  int64_t r;
  if (dtype == NNW_I32) {
    int32_t t;
    memcpy(&t, idx + 4 * i, 4);
    r = t;
  } else {
    memcpy(&r, idx + 8 * i, 8);
  }
  if (r < 0) r += rows;
  return r >= 0 && r < rows ? r : -1;
}

void nnw_run_q4_gather(const int32_t *args, uint8_t *arena) {
  struct q4g_args v;
  memcpy(&v, args, sizeof v);
  const uint8_t *idx = arena + v.idx, *data = arena + v.data, *zp = v.zp < 0 ? NULL : arena + v.zp;
  const float *scales = nnw_f32_at(arena, v.scales);
  float *y = nnw_f32_at(arena, v.y);
  const int32_t nb = (v.cols + v.bs - 1) / v.bs, bits = v.bits;
  const uint32_t mask = (1u << bits) - 1u;
  const size_t row_bytes = (size_t)v.cols * (size_t)bits / 8;
  for (int32_t i = 0; i < v.n_idx; i++) { /* every index checked before y is written */
    if (q4_index(idx, v.idx_dtype, (size_t)i, v.rows) < 0) {
      nnw_run_fail(NNW_BAD_INDEX);
      return;
    }
  }
  for (int32_t i = 0; i < v.n_idx; i++) {
    int64_t r = q4_index(idx, v.idx_dtype, (size_t)i, v.rows);
    const uint8_t *q = data + (size_t)r * row_bytes;
    float *yi = y + (size_t)i * (size_t)v.cols;
    for (int32_t blk = 0; blk < nb; blk++) {
      size_t at = (size_t)r * (size_t)nb + (size_t)blk;
      float s = scales[at], z = (float)(1 << (bits - 1));
      if (zp != NULL) z = (float)((zp[at * (size_t)bits / 8] >> ((at * (size_t)bits) % 8)) & mask);
      int32_t c1 = (blk + 1) * v.bs < v.cols ? (blk + 1) * v.bs : v.cols;
      for (int32_t c = blk * v.bs; c < c1; c++) {
        int64_t bit = (int64_t)c * bits;
        yi[c] = ((float)((q[bit >> 3] >> (bit & 7)) & mask) - z) * s;
      }
    }
  }
}
