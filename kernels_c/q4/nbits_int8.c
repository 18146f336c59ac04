/* q4_matmul's int8 path: MatMulNBits as onnxruntime's CPU kernel computes it at accuracy_level 4
 * (MLAS's CompInt8; py_runtime/nnwasm/ops/quant_blocks_int8.py is the reference, bit for bit).
 *
 * Each row of A is quantized once per block: sa = max|a| / 127, q = round_even(a * (127 / max|a|)),
 * kept as int16 in scratch with its block sums. A block's dot product is then integer work only,
 * llama.cpp's q4_0 x q8_0 idea without relaxed SIMD: 16 bytes of a column are read as eight
 * uint16 lanes, and element t of every lane (k = P*lane + t, P = 16/bits elements a lane) comes
 * out of one shift and one AND, already an int16 lane: no widening step. A's copy holds each
 * 16-byte chunk's elements in that order (t-major), so i32x4.dot_i16x8 meets its elements and sums
 * pairs exactly in int32. Four columns share each load of A; at the end of a block their four
 * int32 vectors are folded into one (lane c: column c), the zero point comes off in integers
 * (d = dot - z * sum q), and one float step per block and column follows, four columns at once:
 * y += f32(d) * (sa * scale). Blocks are summed in order, bias last: the reference's order, so
 * numpy, wasmtime, V8 and the native builds give the same bits.
 *
 * Rows go two at a time (each decoded 16 bytes serves both), the odd one alone: decode (m = 1) and
 * prefill (m rows) are the same loop. Blocks smaller than a chunk (4 bits / 16, 2 bits / 32) are
 * half a chunk: the dot's lanes 0-1 are one block and 2-3 the next. */
#include <math.h>

#include "../internal.h"
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
  return nnw_mul((uint64_t)m, nnw_add(nnw_mul(g.arow, 2), nnw_mul((uint64_t)g.kb, 8)));
}

/* A's rows: a16 [m][arow] (chunk c's elements at c*e + t*8 + lane, zeros past k), sa [m][kb], qs [m][kb] */
static void quantize_rows(const struct nnw_q4i8 *p, const struct geo *g, int16_t *a16, float *sa, int32_t *qs) {
  const int32_t bs = p->bs, pl = 16 / p->bits; /* pl: elements an int16 lane */
  for (int32_t i = 0; i < p->m; i++) {
    const float *a = p->a + (size_t)i * (size_t)p->k;
    int16_t *row = a16 + (size_t)i * g->arow;
    memset(row, 0, g->arow * 2);
    for (int32_t blk = 0; blk < g->kb; blk++) {
      int32_t k0 = blk * bs, k1 = k0 + bs < p->k ? k0 + bs : p->k;
      float amax = 0.0f;
      int finite = 1;
      for (int32_t kk = k0; kk < k1; kk++) {
        float v = fabsf(a[kk]);
        finite &= isfinite(v) != 0;
        amax = v > amax ? v : amax;
      }
      /* 127 / max, not 1 / (max / 127): onnxruntime's multiplier, which can differ in its last bit */
      float inv = finite && amax > 0.0f ? 127.0f / amax : 0.0f;
      sa[(size_t)i * (size_t)g->kb + (size_t)blk] = finite ? amax / 127.0f : NAN;
      int32_t sum = 0;
      for (int32_t kk = k0; kk < k1 && finite; kk++) {
        float r = nearbyintf(a[kk] * inv);
        int32_t q = r > 127.0f ? 127 : r < -127.0f ? -127 : (int32_t)r;
        int32_t l = kk % g->e;
        row[(size_t)(kk - l) + (size_t)((l % pl) * 8 + l / pl)] = (int16_t)q;
        sum += q;
      }
      qs[(size_t)i * (size_t)g->kb + (size_t)blk] = sum;
    }
  }
}

struct rows {
  const int16_t *a16;
  const float *sa;
  const int32_t *qs;
};

/* element t of every int16 lane of x, as int16 lanes */
static Q4I8_INLINE qi elem(qi x, int t, int bits, qi mask) {
  if (t == 16 / bits - 1) return qi_shr16(x, 16 - bits);
  return qi_and(t == 0 ? x : qi_shr16(x, bits * t), mask);
}

/* the four columns' zero points of block blk, as int32 lanes */
static Q4I8_INLINE qi zeros4(const struct nnw_q4i8 *p, const struct geo *g, const int32_t *cols, int32_t blk, int bits) {
  if (p->zp == NULL) return qi_splat32(1 << (bits - 1));
  int32_t z[NC], bit = blk * bits;
  for (int c = 0; c < NC; c++)
    z[c] = (p->zp[(size_t)cols[c] * (size_t)g->zrow + (size_t)(bit >> 3)] >> (bit & 7)) & ((1 << bits) - 1);
  return qi_make32(z[0], z[1], z[2], z[3]);
}

/* tot[r] += f32(sum4(acc[r]) - z * qs) * (sa * scales): one block's float step for rows i0.. */
static Q4I8_INLINE void block_step(const struct nnw_q4i8 *p, const struct geo *g, const struct rows *A, int32_t i0, int nr,
                                   const int32_t *cols, int32_t blk, qi d[2], int bits, v4 tot[2]) {
  qi z = zeros4(p, g, cols, blk, bits);
  size_t kb = (size_t)g->kb;
  v4 s = q4_make4(p->scales[(size_t)cols[0] * kb + (size_t)blk], p->scales[(size_t)cols[1] * kb + (size_t)blk],
                  p->scales[(size_t)cols[2] * kb + (size_t)blk], p->scales[(size_t)cols[3] * kb + (size_t)blk]);
  for (int r = 0; r < nr; r++) {
    size_t at = (size_t)(i0 + r) * kb + (size_t)blk;
    qi dz = qi_sub32(d[r], qi_mul32(z, qi_splat32(A->qs[at])));
    tot[r] = v4_add(tot[r], v4_mul(qi_to_f32(dz), v4_mul(v4_set1(A->sa[at]), s)));
  }
}

/* y[i0 .. i0+nr-1][cols] of nr (1 or 2) rows and four columns */
static Q4I8_INLINE void tile(const struct nnw_q4i8 *p, const struct geo *g, const struct rows *A, int32_t i0, int nr,
                             const int32_t *cols, int bits, int half, v4 tot[2]) {
  const int pl = 16 / bits, e = 128 / bits;
  const qi mask = qi_splat16((1 << bits) - 1);
  const uint8_t *col[NC];
  for (int c = 0; c < NC; c++) col[c] = p->b + (size_t)cols[c] * g->colbytes;
  const int16_t *ar[2] = {A->a16 + (size_t)i0 * g->arow, A->a16 + (size_t)(i0 + nr - 1) * g->arow};
  tot[0] = tot[1] = v4_set1(0.0f);
  const int32_t cpb = half ? 1 : p->bs / e; /* chunks a block (a chunk holds two blocks when half) */
  const int32_t steps = half ? g->nch : g->kb;
  for (int32_t st = 0; st < steps; st++) {
    qi acc[2][NC];
    for (int r = 0; r < 2; r++)
      for (int c = 0; c < NC; c++) acc[r][c] = qi_splat32(0);
    for (int32_t ch = st * cpb; ch < (st + 1) * cpb; ch++) {
      size_t off = (size_t)ch * 16;
      int whole = !half || off + 16 <= g->colbytes;
      for (int c = 0; c < NC; c++) {
        qi x = whole ? qi_load(col[c] + off) : qi_load8(col[c] + off);
        for (int t = 0; t < pl; t++) {
          qi el = elem(x, t, bits, mask);
          for (int r = 0; r < nr; r++)
            acc[r][c] = qi_add32(acc[r][c], qi_dot16(el, qi_load(ar[r] + (size_t)ch * (size_t)e + (size_t)t * 8)));
        }
      }
    }
    qi d[2], hi[2];
    for (int r = 0; r < nr; r++) {
      if (half)
        qi_sum2(acc[r][0], acc[r][1], acc[r][2], acc[r][3], &d[r], &hi[r]);
      else
        d[r] = qi_sum4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]);
    }
    int32_t blk = half ? 2 * st : st;
    block_step(p, g, A, i0, nr, cols, blk, d, bits, tot);
    if (half && blk + 1 < g->kb) block_step(p, g, A, i0, nr, cols, blk + 1, hi, bits, tot);
  }
}

static Q4I8_INLINE void run_bits(const struct nnw_q4i8 *p, const struct geo *g, const struct rows *A, int bits, int half) {
  for (int32_t i = 0; i < p->m; i += 2) {
    int nr = p->m - i >= 2 ? 2 : 1;
    for (int32_t j = 0; j < p->n; j += NC) {
      int32_t cols[NC];
      for (int c = 0; c < NC; c++) cols[c] = j + c < p->n ? j + c : p->n - 1; /* repeats: dropped */
      v4 tot[2];
      if (nr == 2)
        tile(p, g, A, i, 2, cols, bits, half, tot);
      else
        tile(p, g, A, i, 1, cols, bits, half, tot);
      for (int r = 0; r < nr; r++) {
        float out[4];
        v4_store(out, tot[r]);
        float *yi = p->y + (size_t)(i + r) * (size_t)p->n;
        for (int c = 0; c < NC && j + c < p->n; c++) yi[j + c] = out[c] + (p->bias ? p->bias[j + c] : 0.0f);
      }
    }
  }
}

/* one function per width and block form, so that each inner loop is unrolled for its constants */
static void run_4(const struct nnw_q4i8 *p, const struct geo *g, const struct rows *A) { run_bits(p, g, A, 4, 0); }
static void run_4h(const struct nnw_q4i8 *p, const struct geo *g, const struct rows *A) { run_bits(p, g, A, 4, 1); }
static void run_8(const struct nnw_q4i8 *p, const struct geo *g, const struct rows *A) { run_bits(p, g, A, 8, 0); }
static void run_2(const struct nnw_q4i8 *p, const struct geo *g, const struct rows *A) { run_bits(p, g, A, 2, 0); }
static void run_2h(const struct nnw_q4i8 *p, const struct geo *g, const struct rows *A) { run_bits(p, g, A, 2, 1); }

void nnw_q4i8_run(const struct nnw_q4i8 *p, uint8_t *scratch) {
  struct geo g = geo_of(p->k, p->bits, p->bs);
  int16_t *a16 = (int16_t *)(void *)scratch;
  float *sa = (float *)(void *)(scratch + (size_t)p->m * g.arow * 2);
  int32_t *qs = (int32_t *)(void *)(sa + (size_t)p->m * (size_t)g.kb);
  quantize_rows(p, &g, a16, sa, qs);
  struct rows A = {a16, sa, qs};
  if (p->bits == 4)
    (g.half ? run_4h : run_4)(p, &g, &A);
  else if (p->bits == 8)
    run_8(p, &g, &A);
  else
    (g.half ? run_2h : run_2)(p, &g, &A);
}
