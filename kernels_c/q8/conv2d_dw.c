/* q8_conv2d's depthwise path (group == c == m). Per channel, an int16 copy of its plane in
 * scratch (zero point subtracted, zero padding, DW_SLACK columns of slack), so every tap is a
 * full-width load with no bounds; padded taps add nothing, as the zero-point padding does in the
 * GEMM path, and the int32 sums wrap like the GEMM's, so the outputs are the same bits.
 *
 * Quantized outputs at horizontal stride 1 or 2 without horizontal dilation (MobileNets) take
 * dw_pairs: i32x4.dot_i16x8 of two neighbouring input columns with two neighbouring taps' weights,
 * 8 MACs per instruction (pmaddwd) where extmul took 3 instructions for 4. Everything else takes
 * dw_rows: one tap at a time over 8 columns (extmul), or scalar. */
#include "conv2d.h"
#include "linalg/pack_a.h"
#include "threads/split.h"

/* dw_pairs reads up to 2 np + 7 - kw (stride 1) or 2 np + 14 - kw (stride 2) columns past the
 * span: DW_PAIR_SLACK, a narrower plane than dw_rows' DW_SLACK */

enum { DW_CHUNK = 64, DW_TAPS = 25, DW_PAIRS = 24, DW_PAIR_SLACK = 16 };

/* acc[i] += pl[(ox0 + i) * sw] * wv for i < nb, 8 lanes at a time (reads stay in the slack) */
static void dw_tap(int32_t sw, const int16_t *pl, int32_t ox0, int32_t nb, int32_t wv, uint32_t *acc) {
  int32_t i = 0;
#ifdef __wasm_simd128__
  v128_t vw = wasm_i16x8_splat((int16_t)wv);
  if (sw == 1 || sw == 2)
    for (; i < nb; i += 8) {
      const int16_t *s = pl + (size_t)(ox0 + i) * (size_t)sw;
      v128_t v = wasm_v128_load(s);
      if (sw == 2) v = wasm_i16x8_shuffle(v, wasm_v128_load(s + 8), 0, 2, 4, 6, 8, 10, 12, 14);
      wasm_v128_store(acc + i, wasm_i32x4_add(wasm_v128_load(acc + i), wasm_i32x4_extmul_low_i16x8(v, vw)));
      wasm_v128_store(acc + i + 4, wasm_i32x4_add(wasm_v128_load(acc + i + 4), wasm_i32x4_extmul_high_i16x8(v, vw)));
    }
#endif
  for (; i < nb; i++) acc[i] += (uint32_t)((int32_t)pl[(size_t)(ox0 + i) * (size_t)sw] * wv);
}

/* plane[r][c] = x[r - pt][c - pl] - xz inside the image: the data rows of a plane whose padding
 * (rows, columns and slack) nnw_q8_conv2d_dw zeroed once for all channels; a per-channel memset of
 * the whole plane had cost as much as the taps. Rows go 8 columns a vector while the 8 bytes lie
 * inside x (x_end); the last vector of a row writes zeros past its n (a mask), which stay inside
 * the row (cap). */
static void dw_plane(const struct q8_conv *p, const uint8_t *xc, const uint8_t *x_end, int32_t xz,
                     int32_t span_h, int32_t pw, int16_t *plane) {
  int32_t cap = pw - p->pl, n = p->wd < cap ? p->wd : cap;
#ifdef __wasm_simd128__
  v128_t vz = wasm_i16x8_splat((int16_t)xz), ramp = wasm_i16x8_make(0, 1, 2, 3, 4, 5, 6, 7);
#endif
  for (int32_t iy = 0; iy < p->h && iy + p->pt < span_h; iy++) {
    const uint8_t *src = xc + (size_t)iy * (size_t)p->wd;
    int16_t *dst = plane + (size_t)(iy + p->pt) * (size_t)pw + p->pl;
    int32_t ix = 0;
#ifdef __wasm_simd128__
    /* vectors while the 8 int16 stay in the row and the 8 bytes in x; all but the last one whole */
    int32_t lim = (n + 7) / 8 * 8, in_x = (int32_t)((size_t)(x_end - src) < (size_t)lim ? (size_t)(x_end - src) : (size_t)lim);
    if (lim > cap) lim = cap;
    if (lim > in_x) lim = in_x;
    lim = lim / 8 * 8;
    int32_t whole = lim < n ? lim : n / 8 * 8;
    if (p->x_dtype == NNW_U8)
      for (; ix < whole; ix += 8) wasm_v128_store(dst + ix, wasm_i16x8_sub(wasm_u16x8_load8x8(src + ix), vz));
    else
      for (; ix < whole; ix += 8) wasm_v128_store(dst + ix, wasm_i16x8_sub(wasm_i16x8_load8x8(src + ix), vz));
    if (ix < lim) { /* the row's last 1..7 columns, zeros past n */
      v128_t v = nnw_q8_load8_sub(src + ix, p->x_dtype, vz);
      wasm_v128_store(dst + ix, wasm_v128_and(v, wasm_i16x8_lt(ramp, wasm_i16x8_splat((int16_t)(n - ix)))));
      ix = n;
    }
#endif
    for (; ix < n; ix++) dst[ix] = (int16_t)(nnw_q8_get(src, p->x_dtype, (size_t)ix) - xz);
  }
  (void)x_end;
}

#ifdef __wasm_simd128__
/* dw_plane's common case, checked by the caller for the channel: every row's ceil8(n) columns
 * (lim8) fit in the row and in x, so each row is whole vectors and one last vector masked to its
 * last = n - (lim8 - 8) columns, with no per-row bounds arithmetic: on 7x7 and 14x14 planes that
 * arithmetic had made the plane copy cost 60 % as much as the taps. */
static void dw_plane_vec(const struct q8_conv *p, const uint8_t *xc, int32_t rows, int32_t lim8,
                         int32_t xz, int32_t last, int32_t pw, int16_t *plane) {
  /* Cranelift kept vz in a stack slot, reloaded at the top of the vector loop and stored back
   * at its back edge: a store-to-load chain of ~6 cycles an iteration (the copy of a 112x112
   * channel cost 5x V8's). Counted loops over bumped pointers let clang unroll them by 4, one
   * round trip per 4 vectors: wasmtime's large-plane depthwise 1.81 -> 1.21 ms. */
  v128_t vz = wasm_i16x8_splat((int16_t)xz);
  v128_t mask = wasm_i16x8_lt(wasm_i16x8_make(0, 1, 2, 3, 4, 5, 6, 7), wasm_i16x8_splat((int16_t)last));
  int16_t *dst = plane + (size_t)p->pt * (size_t)pw + p->pl;
  const uint8_t *src = xc;
  int32_t nv = lim8 / 8 - 1; /* whole vectors before the masked one */
  if (p->x_dtype == NNW_U8) {
    for (int32_t iy = 0; iy < rows; iy++, src += p->wd, dst += pw) {
      const uint8_t *s = src;
      int16_t *d = dst;
      for (int32_t k = 0; k < nv; k++, s += 8, d += 8) wasm_v128_store(d, wasm_i16x8_sub(wasm_u16x8_load8x8(s), vz));
      wasm_v128_store(d, wasm_v128_and(wasm_i16x8_sub(wasm_u16x8_load8x8(s), vz), mask));
    }
  } else {
    for (int32_t iy = 0; iy < rows; iy++, src += p->wd, dst += pw) {
      const uint8_t *s = src;
      int16_t *d = dst;
      for (int32_t k = 0; k < nv; k++, s += 8, d += 8) wasm_v128_store(d, wasm_i16x8_sub(wasm_i16x8_load8x8(s), vz));
      wasm_v128_store(d, wasm_v128_and(wasm_i16x8_sub(wasm_i16x8_load8x8(s), vz), mask));
    }
  }
}
#endif

/* One channel's outputs, DW_CHUNK columns of int32 sums at a time: 8 columns with all taps in
 * registers (extmul) at stride 1 or 2, else one tap at a time (dw_tap). Any output dtype. */
static void dw_rows(const struct q8_conv *p, const int16_t *plane, int32_t pw, const uint8_t *wc,
                    int32_t wz, uint32_t bv, float sv, uint8_t *yc) {
  uint32_t acc[DW_CHUNK];
#ifdef __wasm_simd128__
  int32_t taps = p->kh * p->kw;
  v128_t wv[DW_TAPS];
  for (int32_t t = 0; t < taps && t < DW_TAPS; t++)
    wv[t] = wasm_i16x8_splat((int16_t)(nnw_q8_get(wc, p->w_dtype, (size_t)t) - wz));
#endif
  for (int32_t oy = 0; oy < p->oh; oy++)
    for (int32_t ox0 = 0; ox0 < p->ow; ox0 += DW_CHUNK) {
      int32_t nb = p->ow - ox0 < DW_CHUNK ? p->ow - ox0 : DW_CHUNK;
      memset(acc, 0, sizeof acc);
#ifdef __wasm_simd128__
      if ((p->sw == 1 || p->sw == 2) && taps <= DW_TAPS) { /* 8 columns, all taps in registers */
        for (int32_t i = 0; i < nb; i += 8) {
          v128_t a0 = wasm_i32x4_splat(0), a1 = a0;
          for (int32_t ky = 0, t = 0; ky < p->kh; ky++) {
            const int16_t *s = plane + (size_t)(oy * p->sh + ky * p->dh) * (size_t)pw +
                               (size_t)(ox0 + i) * (size_t)p->sw;
            for (int32_t kx = 0; kx < p->kw; kx++, t++, s += p->dw) {
              v128_t v = wasm_v128_load(s);
              if (p->sw == 2) v = wasm_i16x8_shuffle(v, wasm_v128_load(s + 8), 0, 2, 4, 6, 8, 10, 12, 14);
              a0 = wasm_i32x4_add(a0, wasm_i32x4_extmul_low_i16x8(v, wv[t]));
              a1 = wasm_i32x4_add(a1, wasm_i32x4_extmul_high_i16x8(v, wv[t]));
            }
          }
          wasm_v128_store(acc + i, a0);
          wasm_v128_store(acc + i + 4, a1);
        }
      } else
#endif
      for (int32_t ky = 0; ky < p->kh; ky++) {
        const int16_t *prow = plane + (size_t)(oy * p->sh + ky * p->dh) * (size_t)pw;
        for (int32_t kx = 0; kx < p->kw; kx++) {
          int32_t wv = nnw_q8_get(wc, p->w_dtype, (size_t)(ky * p->kw + kx)) - wz;
          dw_tap(p->sw, prow + kx * p->dw, ox0, nb, wv, acc);
        }
      }
      size_t at = (size_t)oy * (size_t)p->ow + (size_t)ox0;
      int32_t i = 0;
#ifdef __wasm_simd128__
      if (nnw_q8_is_q(p->y_dtype)) { /* nnw_q8_round_sat 8 lanes at a time, as the GEMM's tiles */
        v128_t vb = wasm_i32x4_splat((int32_t)bv);
        v128_t vs = wasm_f32x4_splat(sv), zp = wasm_f32x4_splat((float)p->y_zp);
        v128_t vlo = wasm_f32x4_splat((float)p->y_min), vhi = wasm_f32x4_splat((float)p->y_max);
        for (; i + 8 <= nb; i += 8) {
          v128_t f0 = wasm_f32x4_mul(wasm_f32x4_convert_i32x4(wasm_i32x4_add(wasm_v128_load(acc + i), vb)), vs);
          v128_t f1 = wasm_f32x4_mul(wasm_f32x4_convert_i32x4(wasm_i32x4_add(wasm_v128_load(acc + i + 4), vb)), vs);
          f0 = wasm_f32x4_pmin(wasm_f32x4_pmax(vlo, wasm_f32x4_add(wasm_f32x4_nearest(f0), zp)), vhi);
          f1 = wasm_f32x4_pmin(wasm_f32x4_pmax(vlo, wasm_f32x4_add(wasm_f32x4_nearest(f1), zp)), vhi);
          v128_t q = wasm_i16x8_narrow_i32x4(wasm_i32x4_trunc_sat_f32x4(f0), wasm_i32x4_trunc_sat_f32x4(f1));
          q = p->y_dtype == NNW_U8 ? wasm_u8x16_narrow_i16x8(q, q) : wasm_i8x16_narrow_i16x8(q, q);
          wasm_v128_store64_lane(yc + at + (size_t)i, q, 0);
        }
      }
#endif
      for (; i < nb; i++) { /* q8 GEMM store()'s rule */
        int32_t a = (int32_t)(acc[i] + bv);
        if (p->y_dtype == NNW_I32) {
          memcpy(yc + 4 * (at + (size_t)i), &a, 4);
          continue;
        }
        float v = (float)a * sv;
        if (p->y_dtype == NNW_F32)
          memcpy(yc + 4 * (at + (size_t)i), &v, 4);
        else
          yc[at + (size_t)i] = (uint8_t)nnw_q8_round_sat(v, p->y_zp, p->y_min, p->y_max);
      }
    }
}

#ifdef __wasm_simd128__
/* One channel's quantized outputs, 8 columns at a time in two vectors of int32 sums A and B, all
 * taps' weights in registers as pairs wp[ky*np + j] = (w[ky][2j], w[ky][2j+1]) (0 past kw). A
 * dot of the 8 int16 at column c with a pair adds, per lane i, the taps 2j, 2j+1 at columns
 * c + 2i, c + 2i + 1: at stride 2, A holds outputs ox0..ox0+3 (c = 2 ox0), B ox0+4..ox0+7
 * (c + 8); at stride 1, A the even outputs (c = ox0) and B the odd ones (c + 1), interleaved
 * back by one shuffle after the requantization. The 8 bytes are stored whole while they stay
 * inside y (the columns past the row are the next row's, written later). KH, NP: constants for
 * the 3x3 case, so the tap loops unroll. */
static inline __attribute__((always_inline)) void dw_pairs_body(
    const struct q8_conv *p, const int16_t *plane, int32_t pw, const v128_t *wp, int32_t KH,
    int32_t NP, int s2, int rolled, v128_t vb, v128_t vs, const struct nnw_q8_rq *rq, uint8_t *yc,
    const uint8_t *y_end) {
  int u8 = p->y_dtype == NNW_U8;
  ptrdiff_t step = (ptrdiff_t)p->dh * pw, b_off = s2 ? 8 : 1;
  for (int32_t oy = 0; oy < p->oh; oy++) {
    const int16_t *row = plane + (size_t)(oy * p->sh) * (size_t)pw;
    uint8_t *yr = yc + (size_t)oy * (size_t)p->ow;
    for (int32_t ox0 = 0; ox0 < p->ow; ox0 += 8) {
      const int16_t *a = row + (s2 ? 2 * ox0 : ox0);
      v128_t sa = vb, sb = vb;
      if (rolled) {
        NNW_ROLLED /* one block per kernel row (internal.h): the 3x3 taps unrolled loaded 12 vectors at once */
        for (int32_t ky = 0; ky < KH; ky++, a += step)
          for (int32_t j = 0; j < NP; j++) {
            sa = wasm_i32x4_add(sa, wasm_i32x4_dot_i16x8(wasm_v128_load(a + 2 * j), wp[ky * NP + j]));
            sb = wasm_i32x4_add(sb, wasm_i32x4_dot_i16x8(wasm_v128_load(a + b_off + 2 * j), wp[ky * NP + j]));
          }
      } else {
        for (int32_t ky = 0; ky < KH; ky++, a += step)
          for (int32_t j = 0; j < NP; j++) {
            sa = wasm_i32x4_add(sa, wasm_i32x4_dot_i16x8(wasm_v128_load(a + 2 * j), wp[ky * NP + j]));
            sb = wasm_i32x4_add(sb, wasm_i32x4_dot_i16x8(wasm_v128_load(a + b_off + 2 * j), wp[ky * NP + j]));
          }
      }
      v128_t q = nnw_q8_rq_pack(nnw_q8_rq4(rq, sa, vs), nnw_q8_rq4(rq, sb, vs), u8);
      if (!s2) q = wasm_i8x16_shuffle(q, q, 0, 4, 1, 5, 2, 6, 3, 7, 8, 9, 10, 11, 12, 13, 14, 15);
      if ((size_t)(y_end - (yr + ox0)) >= 8) {
        wasm_v128_store64_lane(yr + ox0, q, 0);
      } else {
        uint8_t tmp[16];
        wasm_v128_store(tmp, q);
        memcpy(yr + ox0, tmp, (size_t)(p->ow - ox0));
      }
    }
  }
}

static void dw_pairs(const struct q8_conv *p, const int16_t *plane, int32_t pw, const uint8_t *wc,
                     int32_t wz, uint32_t bv, float sv, uint8_t *yc, const uint8_t *y_end) {
  int32_t np = (p->kw + 1) / 2;
  v128_t wp[DW_PAIRS];
  if (p->kh == 3 && p->kw == 3) { /* the 9 taps as int16 by vector: (w0,w1) (w2,0) (w3,w4) (w5,0) (w6,w7) (w8,0) */
    v128_t b = wasm_v128_load64_zero(wc), vz = wasm_i16x8_splat((int16_t)wz);
    v128_t w = wasm_i16x8_sub(p->w_dtype == NNW_U8 ? wasm_u16x8_extend_low_u8x16(b) : wasm_i16x8_extend_low_i8x16(b), vz);
    v128_t w8 = wasm_i16x8_replace_lane(wasm_i16x8_splat(0), 0, (int16_t)(nnw_q8_get(wc, p->w_dtype, 8) - wz));
    v128_t t = wasm_i16x8_shuffle(w, w8, 0, 1, 2, 9, 3, 4, 5, 9), u = wasm_i16x8_shuffle(w, w8, 6, 7, 8, 9, 9, 9, 9, 9);
    wp[0] = wasm_i32x4_shuffle(t, t, 0, 0, 0, 0), wp[1] = wasm_i32x4_shuffle(t, t, 1, 1, 1, 1);
    wp[2] = wasm_i32x4_shuffle(t, t, 2, 2, 2, 2), wp[3] = wasm_i32x4_shuffle(t, t, 3, 3, 3, 3);
    wp[4] = wasm_i32x4_shuffle(u, u, 0, 0, 0, 0), wp[5] = wasm_i32x4_shuffle(u, u, 1, 1, 1, 1);
  } else
  for (int32_t ky = 0; ky < p->kh; ky++)
    for (int32_t j = 0; j < np; j++) {
      const uint8_t *w = wc + (size_t)ky * (size_t)p->kw;
      uint16_t lo = (uint16_t)(nnw_q8_get(w, p->w_dtype, (size_t)(2 * j)) - wz);
      uint16_t hi = 2 * j + 1 < p->kw ? (uint16_t)(nnw_q8_get(w, p->w_dtype, (size_t)(2 * j + 1)) - wz) : 0;
      wp[ky * np + j] = wasm_i32x4_splat((int32_t)((uint32_t)lo | (uint32_t)hi << 16));
    }
  struct nnw_q8_rq rq = nnw_q8_rq_init(p->y_zp, p->y_min, p->y_max);
  v128_t vb = wasm_i32x4_splat((int32_t)bv), vs = wasm_f32x4_splat(sv);
  int rolled = (nnw_host_hints & NNW_HINT_SPLAT_BY_SHUFFLE) != 0;
  if (p->kh == 3 && np == 2 && !rolled)
    dw_pairs_body(p, plane, pw, wp, 3, 2, p->sw == 2, 0, vb, vs, &rq, yc, y_end);
  else if (p->kh == 3 && np == 2 && p->sw == 2)
    dw_pairs_body(p, plane, pw, wp, 3, 2, 1, 1, vb, vs, &rq, yc, y_end);
  else if (p->kh == 3 && np == 2)
    dw_pairs_body(p, plane, pw, wp, 3, 2, 0, 1, vb, vs, &rq, yc, y_end);
  else
    dw_pairs_body(p, plane, pw, wp, p->kh, np, p->sw == 2, 0, vb, vs, &rq, yc, y_end);
}
#endif

/* dw_pairs' cases: quantized y, stride 1 or 2 and no dilation along the width, at most
 * DW_PAIRS weight pairs (kw <= 8) */
static int pairs_ok(const struct q8_conv *p) {
#ifdef __wasm_simd128__
  return nnw_q8_is_q(p->y_dtype) && (p->sw == 1 || p->sw == 2) && p->dw == 1 && p->kw <= 8 &&
         p->kh * ((p->kw + 1) / 2) <= DW_PAIRS;
#else
  (void)p;
  return 0;
#endif
}

/* Threads (threads/split.h): the (image, channel) planes split in tiles, each padded into a plane
 * buffer of the worker's own (the op's scratch for the caller, its pack buffer for a helper, when
 * the plane fits there); every output computed as on one thread. */
struct dw_job {
  const struct q8_conv *p;
  uint8_t *arena;
  int32_t span_h, pw, pairs, rows, lim8, n_cols, vec_ok;
};

static void dw_task(void *ctx, int32_t start, int32_t count, int32_t worker) {
  const struct dw_job *j = ctx;
  const struct q8_conv *p = j->p;
  uint8_t *arena = j->arena;
  const uint8_t *x_zp = nnw_q8_at(arena, p->x_zp), *w_zp = nnw_q8_at(arena, p->w_zp);
  const float *scale = nnw_f32_at(arena, p->scale);
  const int32_t *bias = p->bias < 0 ? NULL : (const int32_t *)(const void *)(arena + p->bias);
  int32_t xz = nnw_q8_get(x_zp, p->x_dtype, 0), taps = p->kh * p->kw;
  size_t out_plane = (size_t)p->oh * (size_t)p->ow, in_plane = (size_t)p->h * (size_t)p->wd;
  int32_t span_h = j->span_h, pw = j->pw, pairs = j->pairs, rows = j->rows, lim8 = j->lim8;
  int16_t *plane = worker == 0 ? (int16_t *)(void *)(arena + p->scratch) : (int16_t *)(void *)nnw_pool_pack_buf(worker);
  int ysize = nnw_dtype_size(p->y_dtype);
  const uint8_t *x_end = arena + p->x + (size_t)p->n * (size_t)p->c * in_plane;
  /* dw_pairs stores 8 bytes past a row while they stay before y_end: into the next plane, which
   * one thread writes later. A tile's last plane is followed by another tile's: y_end is its end. */
  const uint8_t *y_end = arena + p->y + (size_t)(start + count) * out_plane * (size_t)ysize;
  memset(plane, 0, 2 * (size_t)span_h * (size_t)pw);
  for (int32_t u = start; u < start + count; u++) {
    int32_t b = u / p->c, ch = u % p->c;
    size_t bc = (size_t)b * (size_t)p->c + (size_t)ch;
    const uint8_t *wc = arena + p->w + (size_t)ch * (size_t)taps;
    int32_t wz = nnw_q8_get(w_zp, p->w_dtype, (size_t)ch * (size_t)p->w_zp_s);
    uint32_t bv = bias ? (uint32_t)bias[ch] : 0;
    float sv = scale ? scale[(size_t)ch * (size_t)p->scale_s] : 0.0f;
    uint8_t *yc = arena + p->y + bc * out_plane * (size_t)ysize;
    const uint8_t *xc = arena + p->x + bc * in_plane;
#ifdef __wasm_simd128__
    if (j->vec_ok && (size_t)(x_end - (xc + (size_t)(rows - 1) * (size_t)p->wd)) >= (size_t)lim8)
      dw_plane_vec(p, xc, rows, lim8, xz, j->n_cols - (lim8 - 8), pw, plane);
    else
#endif
      dw_plane(p, xc, x_end, xz, span_h, pw, plane);
#ifdef __wasm_simd128__
    if (pairs) {
      dw_pairs(p, plane, pw, wc, wz, bv, sv, yc, y_end);
      continue;
    }
#endif
    dw_rows(p, plane, pw, wc, wz, bv, sv, yc);
  }
  (void)y_end;
  (void)pairs;
  (void)rows;
  (void)lim8;
}

void nnw_q8_conv2d_dw(const struct q8_conv *p, uint8_t *arena) {
  int32_t span_h = (p->oh - 1) * p->sh + (p->kh - 1) * p->dh + 1;
  int32_t pairs = pairs_ok(p), span_w = (p->ow - 1) * p->sw + (p->kw - 1) * p->dw + 1;
  int32_t pw = span_w + (pairs ? DW_PAIR_SLACK : DW_SLACK);
  /* dw_plane_vec's case: rows (of the image inside the span) of n columns, ceil8(n) inside a row */
  int32_t rows = p->h < span_h - p->pt ? p->h : span_h - p->pt, cap = pw - p->pl;
  int32_t n_cols = p->wd < cap ? p->wd : cap, lim8 = (n_cols + 7) / 8 * 8;
  int vec_ok = rows > 0 && n_cols > 0 && lim8 <= cap;
  struct dw_job job = {p, arena, span_h, pw, pairs, rows, lim8, n_cols, vec_ok};
  int32_t planes = p->n * p->c;
  uint64_t macs = (uint64_t)planes * p->oh * p->ow * p->kh * p->kw;
  int32_t threads = 2 * (uint64_t)span_h * (uint64_t)pw <= NNW_PACK_A_FLOATS * 4
                        ? nnw_split_threads(macs, NNW_SPLIT_MIN_FLOPS, planes) : 1;
  nnw_parallel_for(planes, threads > 1 ? nnw_split_tile(planes, threads) : planes, dw_task, &job);
}
