/* q4_matmul's int8 path: MatMulNBits as onnxruntime's CPU kernel computes it at accuracy_level 4
 * (MLAS's CompInt8; py_runtime/nnwasm/ops/quant_blocks_int8.py is the reference, bit for bit).
 *
 * Each row of A is quantized once per block: sa = max|a| / 127, q = round_even(a * (127 / max|a|)),
 * kept as int16 in scratch with its block sums. A block's dot product is then integer work only,
 * llama.cpp's q4_0 x q8_0 idea without relaxed SIMD: 16 bytes of a column are read as eight
 * uint16 lanes x, element t of every lane at k = P*lane + t (P = 16/bits elements a lane). A's
 * copy holds each 16-byte chunk's elements in that order (t-major), and not a_t itself but
 * b_t = a_t - 2^bits a_(t-1): then x >> (bits t), with no mask, dotted with b_t and summed over t
 * gives sum n_t a_t (the higher elements a shift leaves in a lane cancel), so a lane costs one
 * shift an element (t = 0: the whole lane with its top bit flipped, to be signed; the block's
 * offset puts the 32768 sum b_0 back). i32x4.dot_i16x8 sums pairs in int32, modulo 2^32 like every
 * integer step here: the block's true dot fits, so it comes out exact. Four columns share each load of A; at the end of a block their four
 * int32 vectors are folded into one (lane c: column c), the zero point comes off in integers
 * (d = dot - z * sum q), and one float step per block and column follows, four columns at once:
 * y += f32(d) * (sa * scale). Blocks are summed in order, bias last: the reference's order, so
 * numpy, wasmtime, V8 and the native builds give the same bits.
 *
 * Decode (one row) takes four columns at a time; prefill four rows and two columns (each decoded
 * vector serves four rows), the rows past a multiple of 4 as decode. Every output is the same
 * sequence of float steps whatever the tile, so a row gives the same bits alone or in a batch.
 * Blocks smaller than a chunk (4 bits / 16, 2 bits / 32) are half a chunk: the dot's lanes 0-1
 * are one block and 2-3 the next. */
#include <math.h>

#include "../internal.h"
#include "../threads/split.h"
#include "nbits_int8.h"
#include "qi.h"

#if defined(__GNUC__)
#define Q4I8_INLINE inline __attribute__((always_inline))
#else
#define Q4I8_INLINE inline
#endif

enum { NC = 4, MAX_BS = 4096 };

struct geo {
  int32_t kb, e, half, nch, zrow; /* blocks a column, elements a chunk, bs = e/2, chunks a column */
  size_t colbytes, arow;          /* bytes of a column of B, int16 values of a row's copy of A */
};

static struct geo geo_of(int32_t k, int32_t bits, int32_t bs) {
  struct geo g;
  g.kb = (k + bs - 1) / bs;
  g.e = 128 / bits;
  g.half = bs < g.e;
  g.nch = (int32_t)(((int64_t)g.kb * bs + g.e - 1) / g.e);
  g.zrow = (g.kb * bits + 7) / 8;
  g.colbytes = (size_t)g.kb * (size_t)bs * (size_t)bits / 8;
  g.arow = (size_t)g.nch * (size_t)g.e;
  return g;
}

int nnw_q4i8_supported(int32_t bits, int32_t bs) {
  if (bits != 2 && bits != 4 && bits != 8) return 0;
  /* at least half a 16-byte chunk a block; at most MAX_BS, so that a block's int32 sums (|q| <=
   * 255, |qa| <= 127, twice over with the zero point) can't overflow */
  return bs >= 64 / bits && bs <= MAX_BS && (bs & (bs - 1)) == 0;
}

uint64_t nnw_q4i8_scratch(int32_t m, int32_t k, int32_t bits, int32_t bs) {
  struct geo g = geo_of(k, bits, bs);
  return nnw_mul((uint64_t)m, nnw_add(nnw_mul(g.arow, 2), nnw_mul((uint64_t)g.kb, 12)));
}

/* A's rows: a16 [m][arow] (chunk c's elements at c*e + t*8 + lane, zeros past k), sa [kb][m], qs
 * [kb][m] (block-major: a 4-row tile loads its rows' four with one load).
 * Quantized in K's order first, then each chunk put in lane order (no division per element: this
 * runs for every row of A, and a division an element cost as much as a decode GEMV's dots). */
static void quantize_rows(const struct nnw_q4i8 *p, const struct geo *g, int16_t *a16, float *sa, int32_t *qs,
                          int32_t *qo) {
  const int32_t bs = p->bs, pl = 16 / p->bits, e = g->e; /* pl: elements an int16 lane */
  for (int32_t i = 0; i < p->m; i++) {
    const float *a = p->a + (size_t)i * (size_t)p->k;
    int16_t *row = a16 + (size_t)i * g->arow;
    for (int32_t blk = 0; blk < g->kb; blk++) {
      int32_t k0 = blk * bs, k1 = k0 + bs < p->k ? k0 + bs : p->k, kk = k0;
      float amax = 0.0f;
      int finite = 1;
      for (int32_t x = k0; x < k1; x++) {
        float v = fabsf(a[x]);
        finite &= isfinite(v) != 0;
        amax = v > amax ? v : amax;
      }
      /* 127 / max, not 1 / (max / 127): onnxruntime's multiplier, which can differ in its last bit */
      float inv = finite && amax > 0.0f ? 127.0f / amax : 0.0f;
      sa[(size_t)blk * (size_t)p->m + (size_t)i] = finite ? amax / 127.0f : NAN;
      int32_t sum = 0;
      for (; kk < k1 && finite; kk++) {
        float r = nearbyintf(a[kk] * inv);
        int32_t q = r > 127.0f ? 127 : r < -127.0f ? -127 : (int32_t)r;
        row[kk] = (int16_t)q;
        sum += q;
      }
      for (; kk < k0 + bs; kk++) row[kk] = 0;
      /* the shift form (elem()): b_t = a_t - 2^bits a_(t-1) in each lane's group of pl elements, and
       * the offset of the block's dot: 32768 times its t = 0 elements (lane 0's xor), the default zero
       * point's z * sum q folded in; modulo 2^32 (the dots wrap alike, the true dot fits) */
      uint32_t s0 = 0;
      for (int32_t x = k0 + bs - 1; x >= k0; x--) {
        if ((x - k0) % pl) row[x] = (int16_t)(row[x] - row[x - 1] * (1 << p->bits));
        else s0 += (uint32_t)row[x];
      }
      size_t at = (size_t)blk * (size_t)p->m + (size_t)i;
      qs[at] = sum;
      uint32_t zq = p->zp ? 0u : (uint32_t)sum << (p->bits - 1);
      qo[at] = (int32_t)(zq - (s0 << 15));
    }
    for (size_t x = (size_t)g->kb * (size_t)bs; x < g->arow; x++) row[x] = 0;
    for (int32_t ch = 0; ch < g->nch; ch++) {
      int16_t tmp[64], *c = row + (size_t)ch * (size_t)e;
      memcpy(tmp, c, 2 * (size_t)e);
      for (int32_t t = 0; t < pl; t++)
        for (int32_t j = 0; j < 8; j++) c[t * 8 + j] = tmp[j * pl + t];
    }
  }
}

struct rows {
  const int16_t *a16;
  const float *sa;
  const int32_t *qs, *qo;
};

/* the shift form: lane x >> (bits t), no mask: its elements u >= t weighted 2^(bits (u-t)), which A's
 * b_t = a_t - 2^bits a_(t-1) (quantize_rows) undo, so sum_t dot(x >> bits t, b_t) = sum_u n_u a_u;
 * t = 0 is the whole lane, made signed by flipping its top bit (x - 32768, the block's offset qo
 * adds the 32768 sum b_0 back). Two operations a lane fewer than shift and mask at 4 bits. */
static Q4I8_INLINE qi elem(qi x, int t, int bits, qi flip) {
  return t == 0 ? qi_xor(x, flip) : qi_shr16(x, bits * t);
}

/* tot += f32(d - qo - z * qs) * (sa * scale), lane by lane: one block's float step; z, scale of the
 * lanes' columns, qs, qo, sa of their rows (qo holds the default zero point's z * qs: has_zp 0) */
static Q4I8_INLINE v4 block_step(v4 tot, qi d, qi z, v4 s, qi qs, qi qo, v4 sa, int has_zp) {
  qi dd = qi_sub32(d, qo);
  if (has_zp) dd = qi_sub32(dd, qi_mul32(z, qs));
  return v4_add(tot, v4_mul(qi_to_f32(dd), v4_mul(sa, s)));
}

/* a column's zero point of block blk: zr its row of packed zero points (has_zp, a constant), else 2^(bits-1) */
static Q4I8_INLINE int32_t zero_at(const uint8_t *zr, int32_t blk, int bits, int has_zp) {
  if (!has_zp) return 1 << (bits - 1);
  int32_t bit = blk * bits;
  return (zr[bit >> 3] >> (bit & 7)) & ((1 << bits) - 1);
}

/* the columns' rows of scales and of packed zero points */
static Q4I8_INLINE void col_rows(const struct nnw_q4i8 *p, const struct geo *g, const int32_t *cols, int nc,
                                 const float **sc, const uint8_t **zr) {
  for (int c = 0; c < nc; c++) {
    sc[c] = p->scales + (size_t)cols[c] * (size_t)g->kb;
    zr[c] = p->zp ? p->zp + (size_t)cols[c] * (size_t)g->zrow : NULL;
  }
}

/* decode: one row, four columns (lane c of the result: column c). Each chunk of A is loaded once
 * for the four columns: 4 A vectors and 4 sums stay in registers. */
static Q4I8_INLINE v4 tile1x4(const struct nnw_q4i8 *p, const struct geo *g, const struct rows *A, int32_t i,
                              const int32_t *cols, int bits, int half, int has_zp) {
  const int pl = 16 / bits, e = 128 / bits;
  const float *sc[NC];
  const uint8_t *zr[NC];
  col_rows(p, g, cols, NC, sc, zr);
  const qi flip = qi_splat16(0x8000);
  const uint8_t *col[NC];
  for (int c = 0; c < NC; c++) col[c] = p->b + (size_t)cols[c] * g->colbytes;
  const int16_t *ar = A->a16 + (size_t)i * g->arow;
  v4 tot = v4_set1(0.0f);
  const int32_t cpb = half ? 1 : p->bs / e; /* chunks a block (a chunk holds two blocks when half) */
  const int32_t steps = half ? g->nch : g->kb;
  for (int32_t st = 0; st < steps; st++) {
    qi acc[NC];
    for (int c = 0; c < NC; c++) acc[c] = qi_splat32(0);
    for (int32_t ch = st * cpb; ch < (st + 1) * cpb; ch++) {
      size_t off = (size_t)ch * 16;
      int whole = !half || off + 16 <= g->colbytes;
      for (int c = 0; c < NC; c++) {
        qi x = whole ? qi_load(col[c] + off) : qi_load8(col[c] + off);
        for (int t = 0; t < pl; t++)
          acc[c] = qi_add32(acc[c], qi_dot16(elem(x, t, bits, flip), qi_load(ar + (size_t)ch * (size_t)e + (size_t)t * 8)));
      }
    }
    qi d[2];
    if (half)
      qi_sum2(acc[0], acc[1], acc[2], acc[3], &d[0], &d[1]);
    else
      d[0] = qi_sum4(acc[0], acc[1], acc[2], acc[3]);
    for (int h = 0; h < 1 + half; h++) {
      int32_t blk = half ? 2 * st + h : st;
      if (blk >= g->kb) break;
      qi z = qi_make32(zero_at(zr[0], blk, bits, has_zp), zero_at(zr[1], blk, bits, has_zp),
                       zero_at(zr[2], blk, bits, has_zp), zero_at(zr[3], blk, bits, has_zp));
      v4 s = q4_make4(sc[0][blk], sc[1][blk], sc[2][blk], sc[3][blk]);
      size_t at = (size_t)blk * (size_t)p->m + (size_t)i;
      tot = block_step(tot, d[h], z, s, qi_splat32(A->qs[at]), qi_splat32(A->qo[at]), v4_set1(A->sa[at]), has_zp);
    }
  }
  return tot;
}

/* prefill: four rows, two columns: each decoded element vector serves four rows, each A vector two
 * columns; 8 sums, 2 B and 2 decoded vectors and one of A live (V8 has 15 vector registers).
 * tot[h] lanes: (row 2h, col 0), (2h, 1), (2h+1, 0), (2h+1, 1). */
static Q4I8_INLINE void tile4x2(const struct nnw_q4i8 *p, const struct geo *g, const struct rows *A, int32_t i0,
                                const int32_t *cols, int bits, int half, int has_zp, v4 tot[2]) {
  const int pl = 16 / bits, e = 128 / bits;
  const float *sc[2];
  const uint8_t *zr[2];
  col_rows(p, g, cols, 2, sc, zr);
  const qi flip = qi_splat16(0x8000);
  const uint8_t *c0 = p->b + (size_t)cols[0] * g->colbytes, *c1 = p->b + (size_t)cols[1] * g->colbytes;
  const int16_t *ar = A->a16 + (size_t)i0 * g->arow;
  tot[0] = tot[1] = v4_set1(0.0f);
  const int32_t cpb = half ? 1 : p->bs / e;
  const int32_t steps = half ? g->nch : g->kb;
  for (int32_t st = 0; st < steps; st++) {
    qi acc[4][2];
    for (int r = 0; r < 4; r++) acc[r][0] = acc[r][1] = qi_splat32(0);
    for (int32_t ch = st * cpb; ch < (st + 1) * cpb; ch++) {
      size_t off = (size_t)ch * 16;
      int whole = !half || off + 16 <= g->colbytes;
      qi x0 = whole ? qi_load(c0 + off) : qi_load8(c0 + off), x1 = whole ? qi_load(c1 + off) : qi_load8(c1 + off);
      for (int t = 0; t < pl; t++) {
        qi e0 = elem(x0, t, bits, flip), e1 = elem(x1, t, bits, flip);
        for (int r = 0; r < 4; r++) {
          qi a = qi_load(ar + (size_t)r * g->arow + (size_t)ch * (size_t)e + (size_t)t * 8);
          acc[r][0] = qi_add32(acc[r][0], qi_dot16(e0, a));
          acc[r][1] = qi_add32(acc[r][1], qi_dot16(e1, a));
        }
      }
    }
    qi d[2][2]; /* [block of the step][row pair] */
    for (int h = 0; h < 2; h++) {
      if (half)
        qi_sum2(acc[2 * h][0], acc[2 * h][1], acc[2 * h + 1][0], acc[2 * h + 1][1], &d[0][h], &d[1][h]);
      else
        d[0][h] = qi_sum4(acc[2 * h][0], acc[2 * h][1], acc[2 * h + 1][0], acc[2 * h + 1][1]);
    }
    for (int b = 0; b < 1 + half; b++) {
      int32_t blk = half ? 2 * st + b : st;
      if (blk >= g->kb) break;
      int32_t z0 = zero_at(zr[0], blk, bits, has_zp), z1 = zero_at(zr[1], blk, bits, has_zp);
      float s0 = sc[0][blk], s1 = sc[1][blk];
      qi z = qi_make32(z0, z1, z0, z1);
      v4 s = q4_make4(s0, s1, s0, s1);
      size_t at = (size_t)blk * (size_t)p->m + (size_t)i0;
      qi qs = qi_load(A->qs + at), qo = qi_load(A->qo + at);
      v4 sa = v4_load(A->sa + at);
      tot[0] = block_step(tot[0], d[b][0], z, s, qi_dup01(qs), qi_dup01(qo), v4_unpacklo(sa, sa), has_zp);
      tot[1] = block_step(tot[1], d[b][1], z, s, qi_dup23(qs), qi_dup23(qo), v4_unpackhi(sa, sa), has_zp);
    }
  }
}

/* columns [j0, j1) of every row (j0 a multiple of NC: the column pairs and quads one thread takes) */
static Q4I8_INLINE void run_bits(const struct nnw_q4i8 *p, const struct geo *g, const struct rows *A, int bits, int half,
                                 int has_zp, int32_t j0, int32_t j1) {
  const float *bias = p->bias;
  int32_t i = 0;
  for (; i + 4 <= p->m; i += 4) {
    for (int32_t j = j0; j < j1; j += 2) {
      int32_t cols[2] = {j, j + 1 < p->n ? j + 1 : j}; /* a repeat: dropped */
      v4 tot[2];
      tile4x2(p, g, A, i, cols, bits, half, has_zp, tot);
      for (int h = 0; h < 2; h++) {
        float out[4];
        v4_store(out, tot[h]);
        for (int r = 0; r < 2; r++) {
          float *yi = p->y + (size_t)(i + 2 * h + r) * (size_t)p->n;
          yi[j] = out[2 * r] + (bias ? bias[j] : 0.0f);
          if (j + 1 < p->n) yi[j + 1] = out[2 * r + 1] + (bias ? bias[j + 1] : 0.0f);
        }
      }
    }
  }
  for (; i < p->m; i++) {
    float *yi = p->y + (size_t)i * (size_t)p->n;
    for (int32_t j = j0; j < j1; j += NC) {
      int32_t cols[NC];
      for (int c = 0; c < NC; c++) cols[c] = j + c < p->n ? j + c : p->n - 1; /* repeats: dropped */
      float out[4];
      v4_store(out, tile1x4(p, g, A, i, cols, bits, half, has_zp));
      for (int c = 0; c < NC && j + c < p->n; c++) yi[j + c] = out[c] + (bias ? bias[j + c] : 0.0f);
    }
  }
}

/* one function per width, block form and zero-point form, so that each inner loop is unrolled
 * for its constants and the block steps have no branch */
#define Q4I8_RUN(name, bits, half, zp)                                                                \
  static void name(const struct nnw_q4i8 *p, const struct geo *g, const struct rows *A, int32_t j0, int32_t j1) { \
    run_bits(p, g, A, bits, half, zp, j0, j1);                                                        \
  }
Q4I8_RUN(run_4, 4, 0, 0)
Q4I8_RUN(run_4z, 4, 0, 1)
Q4I8_RUN(run_4h, 4, 1, 0)
Q4I8_RUN(run_4hz, 4, 1, 1)
Q4I8_RUN(run_8, 8, 0, 0)
Q4I8_RUN(run_8z, 8, 0, 1)
Q4I8_RUN(run_2, 2, 0, 0)
Q4I8_RUN(run_2z, 2, 0, 1)
Q4I8_RUN(run_2h, 2, 1, 0)
Q4I8_RUN(run_2hz, 2, 1, 1)

typedef void (*run_fn)(const struct nnw_q4i8 *, const struct geo *, const struct rows *, int32_t, int32_t);

/* Threads (threads/split.h): A is quantized once, before the job; the columns then go in tiles of
 * groups of NC (whole pairs and quads, as on one thread), each output the same sequence of steps
 * whoever runs it: N threads give the bits of one. */
struct q4i8_job {
  const struct nnw_q4i8 *p;
  const struct geo *g;
  const struct rows *A;
  run_fn fn;
};

static void q4i8_task(void *ctx, int32_t start, int32_t count, int32_t worker) {
  const struct q4i8_job *j = ctx;
  int32_t n = j->p->n, j0 = start * NC, j1 = (start + count) * NC < n ? (start + count) * NC : n;
  (void)worker;
  j->fn(j->p, j->g, j->A, j0, j1);
}

void nnw_q4i8_run(const struct nnw_q4i8 *p, uint8_t *scratch) {
  struct geo g = geo_of(p->k, p->bits, p->bs);
  int16_t *a16 = (int16_t *)(void *)scratch;
  float *sa = (float *)(void *)(scratch + (size_t)p->m * g.arow * 2);
  int32_t *qs = (int32_t *)(void *)(sa + (size_t)p->m * (size_t)g.kb);
  int32_t *qo = qs + (size_t)p->m * (size_t)g.kb;
  quantize_rows(p, &g, a16, sa, qs, qo);
  struct rows A = {a16, sa, qs, qo};
  static const run_fn by_form[3][2][2] = {{{run_2, run_2z}, {run_2h, run_2hz}},
                                          {{run_4, run_4z}, {run_4h, run_4hz}},
                                          {{run_8, run_8z}, {run_8, run_8z}}}; /* 8 bits: never half */
  struct q4i8_job job = {p, &g, &A, by_form[p->bits / 4][g.half][p->zp != NULL]};
  int32_t groups = (p->n + NC - 1) / NC;
  int32_t threads = nnw_split_threads((uint64_t)p->m * (uint64_t)p->n * (uint64_t)p->k, NNW_SPLIT_MIN_FLOPS, groups);
  nnw_parallel_for(groups, threads > 1 ? nnw_split_tile(groups, threads) : groups, q4i8_task, &job);
}
