/* q8_conv2d_pk's GEMM in the `relaxed` flavour (docs/int8.md, "Relaxed SIMD"): 7-bit weights
 * against 8-bit activations by i16x8.relaxed_dot_i8x16_i7x16_s, exact, so the same int32 sums and
 * the same bytes as conv2d_pw.c's int16 tile, on every engine.
 *
 * The relaxed dot is deterministic only with its i7 operand in 0..127 (V8 on x86 runs it as
 * pmaddubsw, whose i16 pair sums saturate otherwise; ARM's sdot reads 128 as -128). Weights
 * quantized with reduce_range (onnxruntime's int8 QDQ: w - zp in -64..64) fit once each row is
 * given a sign s_r (-1 for a row that reaches +64 but not -64, else +1): u = s_r (w - zp) + 64 is
 * the i7 operand, stored as 127 where it is 128 (a row reaching both ends: an "exception", whose
 * activations are added apart), and the activations, uint8 x as x - 128 (int8 x as they are), the
 * i8 one. With off = 128 (uint8 x) or 0, xz x's zero point and W_r = sum_k (w - zp):
 *   sum_k (w - zp)(x - xz) = s_r (sum_k u (x - off) - 64 sum_k (x - off)) + (off - xz) W_r,
 * so the sums start from s_r (bias_r + (off - xz) W_r) - 64 colsum_j + the exceptions' x - off,
 * and are multiplied by s_r after the k loop (integer ring operations: wrapping as the int16
 * tile's sums do, the same int32).
 * Each step is 4 k of 8 pixels: one 16-byte relaxed dot (pmaddubsw) whose 8 pair sums (within
 * +-32512: no saturation) i32x4.dot_i16x8 by ones adds into the int32 sums. 2 multiplies per 16
 * products, as dot_i16x8's 2 per 16, but half the instructions and half the panel bytes
 * (i32x4.relaxed_dot_i8x16_i7x16_add would be one op; V8 14 compiles it 2.7x slower than these two).
 *
 * The packed buffer (q8_conv2d_pack_w, layout word 2, same size as the int16 layout's): the 16-byte
 * header, u as m x kq quads (kq = ceil(k/4), zero past k) with rows blocked four at a time
 * ([i/4][q][i%4][4 bytes]) and the last m % 4 rows row after row, then W [m] and s_r as a mask
 * [m] (0 or -1), int32, then per row a uint16 count and slots(k) uint16 exception indices: the
 * room the int16 layout leaves (16 <= k < 65536). */
#include "conv2d.h"
#include "linalg/pack_a.h"
#include "threads/split.h"

#if defined(__wasm_simd128__) && defined(__wasm_relaxed_simd__)
enum { MR = 4, NR = 8 };

static size_t quads(int32_t k) { return ((size_t)k + 3) / 4; }

/* byte offset of W in the packed data (after the header) */
static size_t sums_at(int32_t m, int32_t k) { return (size_t)m * quads(k) * 4; }

/* exception slots (uint16) a row has after its count (uint16), in the room the int16 layout leaves */
static size_t slots(int32_t k) { return (size_t)(2 * (((size_t)k + 1) / 2 - quads(k) - 2)) - 1; }

int nnw_q8_pw_pack_relaxed(int32_t m, int32_t k, int32_t w_dtype, const uint8_t *w, const uint8_t *w_zp,
                           int32_t w_zp_s, uint8_t *out) {
  /* below k = 64 the row and column corrections and the sign cost what the dots save (V8, the
   * bench's MobileNetV2: k 16..32 1.01-1.13x the int16 tile's time, k 64 0.95, k 96..960 0.81-0.9) */
  if (k < 64 || k > 65535) return 0;
  int32_t m4 = m / MR * MR;
  size_t kq = quads(k), ns = slots(k);
  int32_t *wsum = (int32_t *)(void *)(out + sums_at(m, k)), *mask = wsum + m;
  uint16_t *exc = (uint16_t *)(void *)(mask + m);
  /* each row's sign (-1 for a row reaching 64 but not -64); the elements still at 64 after it are
   * exceptions: stored as 127, their activations added apart. A row past -64..64 or with more
   * exceptions than its slots keeps the int16 layout for the layer. */
  for (int32_t i = 0; i < m; i++) {
    int32_t zp = nnw_q8_get(w_zp, w_dtype, (size_t)i * (size_t)w_zp_s), lo = 0, hi = 0, sum = 0;
    const uint8_t *row = w + (size_t)i * (size_t)k;
    for (int32_t kk = 0; kk < k; kk++) {
      int32_t v = nnw_q8_get(row, w_dtype, (size_t)kk) - zp;
      lo = v < lo ? v : lo, hi = v > hi ? v : hi, sum += v;
    }
    if (lo < -64 || hi > 64) return 0;
    wsum[i] = sum;
    mask[i] = hi == 64 && lo > -64 ? -1 : 0;
    uint16_t *e = exc + (size_t)i * (ns + 1), n = 0;
    for (int32_t kk = 0; kk < k; kk++) {
      int32_t v = nnw_q8_get(row, w_dtype, (size_t)kk) - zp;
      if ((mask[i] ? -v : v) != 64) continue;
      if (n == ns) return 0;
      e[1 + n++] = (uint16_t)kk;
    }
    e[0] = n;
  }
  for (int32_t i = 0; i < m; i++) {
    int32_t zp = nnw_q8_get(w_zp, w_dtype, (size_t)i * (size_t)w_zp_s), neg = mask[i] != 0;
    const uint8_t *row = w + (size_t)i * (size_t)k;
    uint8_t *dst = i < m4 ? out + ((size_t)(i / MR) * kq * MR + (size_t)(i % MR)) * 4 : out + (size_t)i * kq * 4;
    size_t step = i < m4 ? MR * 4 : 4;
    for (size_t q = 0; q < kq; q++)
      for (int32_t t = 0; t < 4; t++) {
        size_t kk = 4 * q + (size_t)t;
        int32_t v = kk < (size_t)k ? nnw_q8_get(row, w_dtype, kk) - zp : 0, u = (neg ? -v : v) + 64;
        dst[q * step + (size_t)t] = kk < (size_t)k ? (uint8_t)(u > 127 ? 127 : u) : 0;
      }
  }
  return 1;
}

/* panel[q*32 + 4c + t] = x[4q + t][j0 + c] - off for c < nb, 0 past k or nb; colsum[c] (8 int32,
 * two vectors) = the sum over k of the same */
static void pack_x(const uint8_t *x, int32_t dtype, size_t n, size_t j0, int32_t nb, int32_t k, size_t kq,
                   int8_t *panel, v128_t colsum[2]) {
  v128_t flip = wasm_i8x16_splat(dtype == NNW_U8 ? (int8_t)0x80 : 0), s0 = wasm_i32x4_splat(0), s1 = s0;
  for (size_t q = 0; q < kq; q++) {
    int8_t *out = panel + q * 32;
    const uint8_t *r = x + 4 * q * n + j0;
    v128_t lo, hi;
    if (nb == NR && 4 * q + 4 <= (size_t)k) {
      v128_t v01 = wasm_v128_load64_lane(r + n, wasm_v128_load64_zero(r), 1);
      v128_t v23 = wasm_v128_load64_lane(r + 3 * n, wasm_v128_load64_zero(r + 2 * n), 1);
      lo = wasm_v128_xor(wasm_i8x16_shuffle(v01, v23, 0, 8, 16, 24, 1, 9, 17, 25, 2, 10, 18, 26, 3, 11, 19, 27), flip);
      hi = wasm_v128_xor(wasm_i8x16_shuffle(v01, v23, 4, 12, 20, 28, 5, 13, 21, 29, 6, 14, 22, 30, 7, 15, 23, 31), flip);
    } else {
      int8_t t[32];
      for (int32_t c = 0; c < NR; c++)
        for (int32_t u = 0; u < 4; u++) {
          size_t kk = 4 * q + (size_t)u;
          t[4 * c + u] = c < nb && kk < (size_t)k
                             ? (int8_t)(nnw_q8_get(x + kk * n + j0, dtype, (size_t)c) - (dtype == NNW_U8 ? 128 : 0))
                             : 0;
        }
      lo = wasm_v128_load(t), hi = wasm_v128_load(t + 16);
    }
    wasm_v128_store(out, lo);
    wasm_v128_store(out + 16, hi);
    s0 = wasm_i32x4_add(s0, wasm_i32x4_extadd_pairwise_i16x8(wasm_i16x8_extadd_pairwise_i8x16(lo)));
    s1 = wasm_i32x4_add(s1, wasm_i32x4_extadd_pairwise_i16x8(wasm_i16x8_extadd_pairwise_i8x16(hi)));
  }
  colsum[0] = s0, colsum[1] = s1;
}

/* one step of one row: c += the 4 pixels' dots of the row's quad v with panel half b */
#define RDOT(c, b, v) ((c) = wasm_i32x4_add((c), wasm_i32x4_dot_i16x8(wasm_i16x8_relaxed_dot_i8x16_i7x16((b), (v)), ones)))

/* x ^ mask - mask: x, or -x for mask -1 (wrapping) */
static inline v128_t sign(v128_t x, v128_t mask) { return wasm_i32x4_sub(wasm_v128_xor(x, mask), mask); }

/* rows i0..i0+3 of the 8 columns of one panel: a the block's quads, init[2r + h] the sums' start */
static void tile4(const uint8_t *a, size_t kq, const int8_t *panel, const v128_t init[2 * MR], const v128_t mask[MR],
                  const v128_t scale[MR], const struct nnw_q8_rq *rq, int u8, uint8_t *y, size_t n, int32_t nb) {
  v128_t c00 = init[0], c01 = init[1], c10 = init[2], c11 = init[3], c20 = init[4], c21 = init[5];
  v128_t c30 = init[6], c31 = init[7], ones = wasm_i16x8_splat(1);
  for (size_t q = 0; q < kq; q++, panel += 32, a += 16) {
    v128_t bl = wasm_v128_load(panel), bh = wasm_v128_load(panel + 16);
    v128_t v0 = wasm_v128_load32_splat(a), v1 = wasm_v128_load32_splat(a + 4);
    v128_t v2 = wasm_v128_load32_splat(a + 8), v3 = wasm_v128_load32_splat(a + 12);
    RDOT(c00, bl, v0), RDOT(c01, bh, v0), RDOT(c10, bl, v1), RDOT(c11, bh, v1);
    RDOT(c20, bl, v2), RDOT(c21, bh, v2), RDOT(c30, bl, v3), RDOT(c31, bh, v3);
  }
  c00 = sign(c00, mask[0]), c01 = sign(c01, mask[0]), c10 = sign(c10, mask[1]), c11 = sign(c11, mask[1]);
  c20 = sign(c20, mask[2]), c21 = sign(c21, mask[2]), c30 = sign(c30, mask[3]), c31 = sign(c31, mask[3]);
  nnw_q8_put8(y, nb, nnw_q8_rq_pack(nnw_q8_rq4(rq, c00, scale[0]), nnw_q8_rq4(rq, c01, scale[0]), u8));
  nnw_q8_put8(y + n, nb, nnw_q8_rq_pack(nnw_q8_rq4(rq, c10, scale[1]), nnw_q8_rq4(rq, c11, scale[1]), u8));
  nnw_q8_put8(y + 2 * n, nb, nnw_q8_rq_pack(nnw_q8_rq4(rq, c20, scale[2]), nnw_q8_rq4(rq, c21, scale[2]), u8));
  nnw_q8_put8(y + 3 * n, nb, nnw_q8_rq_pack(nnw_q8_rq4(rq, c30, scale[3]), nnw_q8_rq4(rq, c31, scale[3]), u8));
}

/* one row (past the last multiple of MR), its quads one after the other */
static void tile1(const uint8_t *a, size_t kq, const int8_t *panel, v128_t i0, v128_t i1, v128_t mask,
                  v128_t scale, const struct nnw_q8_rq *rq, int u8, uint8_t *y, int32_t nb) {
  v128_t cl = i0, ch = i1, ones = wasm_i16x8_splat(1);
  for (size_t q = 0; q < kq; q++, panel += 32, a += 4) {
    v128_t v = wasm_v128_load32_splat(a);
    RDOT(cl, wasm_v128_load(panel), v);
    RDOT(ch, wasm_v128_load(panel + 16), v);
  }
  nnw_q8_put8(y, nb, nnw_q8_rq_pack(nnw_q8_rq4(rq, sign(cl, mask), scale), nnw_q8_rq4(rq, sign(ch, mask), scale), u8));
}

struct job {
  const struct q8_conv *p;
  const uint8_t *x, *wq;
  uint8_t *y;
  int8_t *panel;
  const int32_t *rowc, *mask;
  const uint16_t *exc;
  const float *scale;
  size_t n, kq, ns;
  int32_t k, u8;
};

/* row i's exceptions (weights stored as 127 for 128): the sums of their activations for the 8
 * pixels, into t; counts past the slots and indices past the panel (a hostile buffer) are left out.
 * Out of line: the tiles' sums stay in registers. */
static __attribute__((noinline)) void exceptions(const struct job *j, const int8_t *panel, int32_t i, int32_t t[NR]) {
  const uint16_t *e = j->exc + (size_t)i * (j->ns + 1);
  size_t n = e[0] < j->ns ? e[0] : j->ns;
  for (int32_t c = 0; c < NR; c++) t[c] = 0;
  for (size_t x = 1; x <= n; x++) {
    size_t kk = e[x];
    if (kk >= 4 * j->kq) continue;
    const int8_t *at = panel + kk / 4 * 32 + kk % 4;
    for (int32_t c = 0; c < NR; c++) t[c] += at[4 * c];
  }
}

/* the start of row i's sums for the panel: rowc + cc[h], plus its exceptions' activations */
static inline v128_t row_start(const struct job *j, const int8_t *panel, int32_t i, v128_t cc, int h, const int32_t *t) {
  (void)panel;
  v128_t v = wasm_i32x4_add(wasm_i32x4_splat(j->rowc[i]), cc);
  return t ? wasm_i32x4_add(v, wasm_v128_load(t + 4 * h)) : v;
}

static void panels(void *ctx, int32_t start, int32_t count, int32_t worker) {
  const struct job *j = ctx;
  const struct q8_conv *p = j->p;
  int8_t *panel = worker == 0 ? j->panel : (int8_t *)(void *)nnw_pool_pack_buf(worker);
  size_t n = j->n, kq = j->kq;
  struct nnw_q8_rq rq = nnw_q8_rq_init(p->y_zp, p->y_min, p->y_max);
  v128_t cs[2];
  for (size_t j0 = (size_t)start * NR; j0 < n && j0 < (size_t)(start + count) * NR; j0 += NR) {
    int32_t nb = n - j0 < NR ? (int32_t)(n - j0) : NR;
    pack_x(j->x, p->x_dtype, n, j0, nb, j->k, kq, panel, cs);
    v128_t c0 = wasm_i32x4_shl(wasm_i32x4_neg(cs[0]), 6), c1 = wasm_i32x4_shl(wasm_i32x4_neg(cs[1]), 6);
    int32_t i0 = 0;
    for (; i0 + MR <= p->m; i0 += MR) {
      v128_t init[2 * MR], mask[MR], vs[MR];
      for (int r = 0; r < MR; r++) {
        int32_t t[NR], *te = NULL;
        if (j->exc[(size_t)(i0 + r) * (j->ns + 1)]) exceptions(j, panel, i0 + r, te = t);
        init[2 * r] = row_start(j, panel, i0 + r, c0, 0, te), init[2 * r + 1] = row_start(j, panel, i0 + r, c1, 1, te);
        mask[r] = wasm_i32x4_splat(j->mask[i0 + r]);
        vs[r] = wasm_f32x4_splat(j->scale[(size_t)(i0 + r) * (size_t)p->scale_s]);
      }
      tile4(j->wq + (size_t)i0 * kq * 4, kq, panel, init, mask, vs, &rq, j->u8, j->y + (size_t)i0 * n + j0, n, nb);
    }
    for (; i0 < p->m; i0++) {
      int32_t t[NR], *te = NULL;
      if (j->exc[(size_t)i0 * (j->ns + 1)]) exceptions(j, panel, i0, te = t);
      tile1(j->wq + (size_t)i0 * kq * 4, kq, panel, row_start(j, panel, i0, c0, 0, te), row_start(j, panel, i0, c1, 1, te),
            wasm_i32x4_splat(j->mask[i0]), wasm_f32x4_splat(j->scale[(size_t)i0 * (size_t)p->scale_s]), &rq, j->u8,
            j->y + (size_t)i0 * n + j0, nb);
    }
  }
}

/* q8_conv2d_pk on layout 2 (packed: the data after the header; k >= 16); scratch as nnw_q8_conv2d_mm's */
void nnw_q8_conv2d_mm_relaxed(const struct q8_conv *p, uint8_t *arena, const uint8_t *x, int32_t k, uint8_t *y,
                              uint8_t *scratch, const uint8_t *packed) {
  size_t n = (size_t)p->oh * (size_t)p->ow, kq = quads(k);
  const int32_t *wsum = (const int32_t *)(const void *)(packed + sums_at(p->m, k)), *mask = wsum + p->m;
  const int32_t *bias = p->bias < 0 ? NULL : (const int32_t *)(const void *)(arena + p->bias);
  int32_t xz = nnw_q8_get(nnw_q8_at(arena, p->x_zp), p->x_dtype, 0), off = p->x_dtype == NNW_U8 ? 128 : 0;
  /* the scratch's weight area (unused: the weights are packed) holds each row's start
   * s_r (bias_r + (off - xz) W_r), then the panel (32 kq bytes, within the int16 panel's) */
  int32_t *rowc = (int32_t *)(void *)scratch;
  for (int32_t i = 0; i < p->m; i++) {
    uint32_t v = (bias ? (uint32_t)bias[i] : 0u) + (uint32_t)(off - xz) * (uint32_t)wsum[i];
    rowc[i] = (int32_t)(mask[i] ? 0u - v : v);
  }
  int8_t *panel = (int8_t *)(void *)(scratch + (size_t)p->m * (((size_t)k + 1) / 2) * 4);
  struct job job = {p, x, packed, y, panel, rowc, mask, (const uint16_t *)(const void *)(mask + p->m),
                    nnw_f32_at(arena, p->scale), n, kq, slots(k), k, p->y_dtype == NNW_U8};
  int32_t np = (int32_t)((n + NR - 1) / NR);
  int32_t threads = kq * 32 <= NNW_PACK_A_FLOATS * 4 ? nnw_split_threads((uint64_t)n * p->m * k, NNW_SPLIT_MIN_FLOPS, np) : 1;
  nnw_parallel_for(np, threads > 1 ? nnw_split_tile(np, threads) : np, panels, &job);
}
#endif
