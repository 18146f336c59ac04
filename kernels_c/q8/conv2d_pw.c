/* q8_conv2d's GEMM for group 1 and a quantized output, over the image itself (1x1, stride 1, no
 * pads) or its im2col columns: y[o][j] = requant(sum_c (w[o][c] - wz_o) (x[c][j] - xz) + bias[o]),
 * the q8 GEMM's arithmetic
 * (gemm.c) with the output stage fused into a register tile. As there, the weights are packed
 * once a run into int16 pairs (k, k+1) per row and the image into panels of 8 pixels, the pairs
 * of each pixel interleaved, so a 4x8 tile is 8 i32x4.dot_i16x8 per pair of channels. Here the
 * sums start from the bias, stay in registers, and go out through nnw_q8_rq4 (clamp, magic
 * rounding) 8 bytes a row: MobileNetV2's expand convs have k = 16..32, where gemm.c's tile store,
 * reload and nearest/trunc_sat epilogue cost about as much as the multiply-adds. */
#include "conv2d.h"
#include "linalg/pack_a.h"
#include "threads/split.h"

#ifdef __wasm_simd128__
enum { MR = 4, NR = 8 };

/* The weights as int16 pairs: w16(i, q) = (w[i][2q] - wz_i) | (w[i][2q+1] - wz_i) << 16, 0 past k,
 * row after row (apack[i*kp + q]); blocked (for tile4_shuffle): rows in blocks of MR interleaved
 * pair by pair, apack[(i/MR*kp + q)*MR + i%MR], then the last m % MR rows as before, so a tile's MR
 * pairs of step q are one v128. */
void nnw_q8_pw_pack(const struct q8_conv *p, const uint8_t *w, const uint8_t *w_zp, int32_t k,
                    int32_t kp, int blocked, uint32_t *apack) {
  int32_t m4 = blocked ? p->m / MR * MR : 0;
  for (int32_t i = 0; i < p->m; i++) {
    const uint8_t *row = w + (size_t)i * (size_t)k;
    int32_t zp = nnw_q8_get(w_zp, p->w_dtype, (size_t)i * (size_t)p->w_zp_s), q = 0;
    size_t at = i < m4 ? (size_t)(i / MR) * (size_t)kp * MR + (size_t)(i % MR) : (size_t)i * (size_t)kp;
    size_t step = i < m4 ? MR : 1;
    uint32_t *out = apack + at;
    v128_t vz = wasm_i16x8_splat((int16_t)zp);
    for (; 2 * q + 8 <= k; q += 4) {
      v128_t v = nnw_q8_load8_sub(row + 2 * q, p->w_dtype, vz);
      if (step == 1) {
        wasm_v128_store(out + q, v);
      } else {
        wasm_v128_store32_lane(out + (size_t)q * MR, v, 0);
        wasm_v128_store32_lane(out + (size_t)(q + 1) * MR, v, 1);
        wasm_v128_store32_lane(out + (size_t)(q + 2) * MR, v, 2);
        wasm_v128_store32_lane(out + (size_t)(q + 3) * MR, v, 3);
      }
    }
    for (; q < kp; q++) {
      uint16_t lo = (uint16_t)(nnw_q8_get(row, p->w_dtype, (size_t)(2 * q)) - zp);
      uint16_t hi = 2 * q + 1 < k ? (uint16_t)(nnw_q8_get(row, p->w_dtype, (size_t)(2 * q + 1)) - zp) : 0;
      out[(size_t)q * step] = (uint32_t)lo | (uint32_t)hi << 16;
    }
  }
}

/* panel[q*16 + 2c + h] = x[2q + h][j0 + c] - xz for c < nb, 0 past k or nb */
static void pack_x(const struct q8_conv *p, const uint8_t *x, size_t n, int32_t j0, int32_t nb,
                   int32_t k, int32_t kp, int32_t xz, int16_t *panel) {
  v128_t vz = wasm_i16x8_splat((int16_t)xz);
  for (int32_t q = 0; q < kp; q++) {
    int16_t *out = panel + (size_t)q * 2 * NR;
    const uint8_t *r0 = x + (size_t)(2 * q) * n + j0, *r1 = 2 * q + 1 < k ? r0 + n : NULL;
    if (nb == NR) {
      nnw_q8_pair_row8(out, r0, r1, p->x_dtype, vz);
      continue;
    }
    for (int32_t c = 0; c < NR; c++) {
      out[2 * c] = c < nb ? (int16_t)(nnw_q8_get(r0, p->x_dtype, (size_t)c) - xz) : 0;
      out[2 * c + 1] = c < nb && r1 ? (int16_t)(nnw_q8_get(r1, p->x_dtype, (size_t)c) - xz) : 0;
    }
  }
}

/* rows i0..i0+MR-1 (all present) of the 8 columns of one panel. (A half tile for a last panel
 * of 1..4 pixels, as 7x7 images have, saved 3% there and cost 10% on the k = 16 layers.) */
static void tile4(const uint32_t *a, int32_t kp, const int16_t *panel, const v128_t *bias,
                  const v128_t *scale, const struct nnw_q8_rq *rq, int u8, uint8_t *y, size_t n,
                  int32_t nb) {
  const uint32_t *a0 = a, *a1 = a0 + kp, *a2 = a1 + kp, *a3 = a2 + kp;
  v128_t c00 = bias[0], c01 = c00, c10 = bias[1], c11 = c10, c20 = bias[2], c21 = c20;
  v128_t c30 = bias[3], c31 = c30;
  for (int32_t q = 0; q < kp; q++, panel += 2 * NR) {
    v128_t bl = wasm_v128_load(panel), bh = wasm_v128_load(panel + 8);
    v128_t v0 = wasm_v128_load32_splat(a0 + q), v1 = wasm_v128_load32_splat(a1 + q);
    v128_t v2 = wasm_v128_load32_splat(a2 + q), v3 = wasm_v128_load32_splat(a3 + q);
    NNW_Q8_DOT_ROW(c00, c01, v0, bl, bh);
    NNW_Q8_DOT_ROW(c10, c11, v1, bl, bh);
    NNW_Q8_DOT_ROW(c20, c21, v2, bl, bh);
    NNW_Q8_DOT_ROW(c30, c31, v3, bl, bh);
  }
  nnw_q8_put8(y, nb, nnw_q8_rq_pack(nnw_q8_rq4(rq, c00, scale[0]), nnw_q8_rq4(rq, c01, scale[0]), u8));
  nnw_q8_put8(y + n, nb, nnw_q8_rq_pack(nnw_q8_rq4(rq, c10, scale[1]), nnw_q8_rq4(rq, c11, scale[1]), u8));
  nnw_q8_put8(y + 2 * n, nb, nnw_q8_rq_pack(nnw_q8_rq4(rq, c20, scale[2]), nnw_q8_rq4(rq, c21, scale[2]), u8));
  nnw_q8_put8(y + 3 * n, nb, nnw_q8_rq_pack(nnw_q8_rq4(rq, c30, scale[3]), nnw_q8_rq4(rq, c31, scale[3]), u8));
}

/* tile4 under NNW_HINT_SPLAT_BY_SHUFFLE (wasmtime), on the blocked weights: one v128 load and
 * four i32x4 shuffles a step (Cranelift: pshufd, where its load-splat is a scalar load, a movd and
 * a broadcast), the sums from zero with the bias added after the loop, and the output stage's
 * constants loaded only then: with tile4's shape (bias-initialised sums, the constants held in
 * registers from the caller) Cranelift spilled and reloaded three to six sums every k step, which
 * made MobileNetV2's pointwise convs 2x V8's time. The same int32 sums (they wrap: any order
 * gives the same bits) and the same output stage: the same bytes as tile4. */
static void tile4_shuffle(
    const uint32_t *a, int32_t kp, const int16_t *panel, const int32_t *bias, const float *scale,
    size_t scale_s, const struct nnw_q8_rq *rq, int u8, uint8_t *y, size_t n, int32_t nb) {
  v128_t c00 = wasm_i32x4_splat(0), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
  v128_t c30 = c00, c31 = c00;
  for (int32_t q = 0; q < kp; q++, panel += 2 * NR, a += MR) {
    v128_t bl = wasm_v128_load(panel), bh = wasm_v128_load(panel + 8), v = wasm_v128_load(a);
    v128_t v0 = wasm_i32x4_shuffle(v, v, 0, 0, 0, 0), v1 = wasm_i32x4_shuffle(v, v, 1, 1, 1, 1);
    v128_t v2 = wasm_i32x4_shuffle(v, v, 2, 2, 2, 2), v3 = wasm_i32x4_shuffle(v, v, 3, 3, 3, 3);
    NNW_Q8_DOT_ROW(c00, c01, v0, bl, bh);
    NNW_Q8_DOT_ROW(c10, c11, v1, bl, bh);
    NNW_Q8_DOT_ROW(c20, c21, v2, bl, bh);
    NNW_Q8_DOT_ROW(c30, c31, v3, bl, bh);
  }
  /* the output stage's constants loaded here, after the loop, not held across it; the bias too
   * (int32 sums wrap: the same sums in any order) */
  if (bias) { /* the four rows' biases as one load and shuffles (a splat is 3 instructions here) */
    v128_t bv = wasm_v128_load(bias);
    v128_t b0 = wasm_i32x4_shuffle(bv, bv, 0, 0, 0, 0), b1 = wasm_i32x4_shuffle(bv, bv, 1, 1, 1, 1);
    v128_t b2 = wasm_i32x4_shuffle(bv, bv, 2, 2, 2, 2), b3 = wasm_i32x4_shuffle(bv, bv, 3, 3, 3, 3);
    c00 = wasm_i32x4_add(c00, b0), c01 = wasm_i32x4_add(c01, b0), c10 = wasm_i32x4_add(c10, b1);
    c11 = wasm_i32x4_add(c11, b1), c20 = wasm_i32x4_add(c20, b2), c21 = wasm_i32x4_add(c21, b2);
    c30 = wasm_i32x4_add(c30, b3), c31 = wasm_i32x4_add(c31, b3);
  }
  v128_t sv = scale_s ? wasm_v128_load(scale) : wasm_f32x4_splat(scale[0]);
  v128_t s0 = wasm_i32x4_shuffle(sv, sv, 0, 0, 0, 0), s1 = wasm_i32x4_shuffle(sv, sv, 1, 1, 1, 1);
  v128_t s2 = wasm_i32x4_shuffle(sv, sv, 2, 2, 2, 2), s3 = wasm_i32x4_shuffle(sv, sv, 3, 3, 3, 3);
  nnw_q8_put8(y, nb, nnw_q8_rq_pack(nnw_q8_rq4(rq, c00, s0), nnw_q8_rq4(rq, c01, s0), u8));
  nnw_q8_put8(y + n, nb, nnw_q8_rq_pack(nnw_q8_rq4(rq, c10, s1), nnw_q8_rq4(rq, c11, s1), u8));
  nnw_q8_put8(y + 2 * n, nb, nnw_q8_rq_pack(nnw_q8_rq4(rq, c20, s2), nnw_q8_rq4(rq, c21, s2), u8));
  nnw_q8_put8(y + 3 * n, nb, nnw_q8_rq_pack(nnw_q8_rq4(rq, c30, s3), nnw_q8_rq4(rq, c31, s3), u8));
}

/* one row (the rows past the last multiple of MR) */
static void tile1(const uint32_t *a, int32_t kp, const int16_t *panel, v128_t bias, v128_t scale,
                  const struct nnw_q8_rq *rq, int u8, uint8_t *y, int32_t nb) {
  v128_t cl = bias, ch = bias;
  for (int32_t q = 0; q < kp; q++, panel += 2 * NR) {
    v128_t v = wasm_v128_load32_splat(a + q);
    cl = wasm_i32x4_add(cl, wasm_i32x4_dot_i16x8(v, wasm_v128_load(panel)));
    ch = wasm_i32x4_add(ch, wasm_i32x4_dot_i16x8(v, wasm_v128_load(panel + 8)));
  }
  nnw_q8_put8(y, nb, nnw_q8_rq_pack(nnw_q8_rq4(rq, cl, scale), nnw_q8_rq4(rq, ch, scale), u8));
}

/* Threads (threads/split.h): the pixels in tiles of whole 8-pixel panels, each packed into a
 * panel buffer of the worker's own (the op's scratch for the caller, its pack buffer for a helper,
 * when a panel fits there); integer sums, and every output's epilogue as on one thread. */
struct mm_job {
  const struct q8_conv *p;
  const uint8_t *x;
  uint8_t *y;
  const uint32_t *apack;
  int16_t *panel;
  const int32_t *bias;
  const float *scale;
  size_t n;
  int32_t k, kp, xz, u8, shuffle;
};

static void mm_panels(void *ctx, int32_t start, int32_t count, int32_t worker) {
  const struct mm_job *j = ctx;
  const struct q8_conv *p = j->p;
  const uint32_t *apack = j->apack;
  const int32_t *bias = j->bias;
  const float *scale = j->scale;
  int16_t *panel = worker == 0 ? j->panel : (int16_t *)(void *)nnw_pool_pack_buf(worker);
  int32_t kp = j->kp, u8 = j->u8;
  size_t n = j->n;
  uint8_t *y = j->y;
  struct nnw_q8_rq rq = nnw_q8_rq_init(p->y_zp, p->y_min, p->y_max);
  for (size_t j0 = (size_t)start * NR; j0 < n && j0 < (size_t)(start + count) * NR; j0 += NR) {
    int32_t nb = n - j0 < NR ? (int32_t)(n - j0) : NR;
    pack_x(p, j->x, n, (int32_t)j0, nb, j->k, kp, j->xz, panel);
    int32_t i0 = 0;
    for (; i0 + MR <= p->m; i0 += MR) {
      const uint32_t *a = apack + (size_t)i0 * (size_t)kp;
      uint8_t *y4 = y + (size_t)i0 * n + j0;
      if (j->shuffle) {
        tile4_shuffle(a, kp, panel, bias ? bias + i0 : NULL, scale + (size_t)i0 * (size_t)p->scale_s,
                      (size_t)p->scale_s, &rq, u8, y4, n, nb);
        continue;
      }
      v128_t vb[MR], vs[MR];
      for (int r = 0; r < MR; r++) {
        vb[r] = wasm_i32x4_splat(bias ? bias[i0 + r] : 0);
        vs[r] = wasm_f32x4_splat(scale[(size_t)(i0 + r) * (size_t)p->scale_s]);
      }
      tile4(a, kp, panel, vb, vs, &rq, u8, y4, n, nb);
    }
    for (; i0 < p->m; i0++)
      tile1(apack + (size_t)i0 * (size_t)kp, kp, panel, wasm_i32x4_splat(bias ? bias[i0] : 0),
            wasm_f32x4_splat(scale[(size_t)i0 * (size_t)p->scale_s]), &rq, u8, y + (size_t)i0 * n + j0, nb);
  }
}

void nnw_q8_conv2d_mm(const struct q8_conv *p, uint8_t *arena, const uint8_t *x, int32_t k,
                      uint8_t *y, uint8_t *scratch, const uint32_t *packed, int blocked) {
  int32_t kp = (k + 1) / 2, u8 = p->y_dtype == NNW_U8;
  size_t n = (size_t)p->oh * (size_t)p->ow;
  const uint8_t *x_zp = nnw_q8_at(arena, p->x_zp), *w_zp = nnw_q8_at(arena, p->w_zp);
  const float *scale = nnw_f32_at(arena, p->scale);
  const int32_t *bias = p->bias < 0 ? NULL : (const int32_t *)(const void *)(arena + p->bias);
  int32_t xz = nnw_q8_get(x_zp, p->x_dtype, 0);
  uint32_t *apack = (uint32_t *)(void *)scratch;
  int16_t *panel = (int16_t *)(void *)(apack + (size_t)p->m * (size_t)kp);
  int shuffle = packed ? blocked : (nnw_host_hints & NNW_HINT_SPLAT_BY_SHUFFLE) != 0;
  if (packed) /* q8_conv2d_pk: packed once at plan load (q8_conv2d_pack_w) */
    apack = (uint32_t *)(uintptr_t)packed;
  else
    nnw_q8_pw_pack(p, arena + p->w, w_zp, k, kp, shuffle, apack);
  struct mm_job job = {p, x, y, apack, panel, bias, scale, n, k, kp, xz, u8, shuffle};
  int32_t panels = (int32_t)((n + NR - 1) / NR);
  int32_t threads = (uint64_t)kp * NR * 2 * 2 <= NNW_PACK_A_FLOATS * 4
                        ? nnw_split_threads((uint64_t)n * p->m * k, NNW_SPLIT_MIN_FLOPS, panels) : 1;
  nnw_parallel_for(panels, threads > 1 ? nnw_split_tile(panels, threads) : panels, mm_panels, &job);
}
#endif
