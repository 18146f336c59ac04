/* The int8 kernels (kernels_c/q8/) against scalar references in exact integer arithmetic, with
 * tensors flush against either end of the arena; then hostile arguments for each op. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"
#include "internal.h"
#include "tests.h"

enum { U8 = 2, I8 = 3, I32 = 6, F32 = 1 };

static int32_t qget(const uint8_t *p, int dt, size_t i) { return dt == I8 ? (int8_t)p[i] : p[i]; }
static void fill_q(uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++) p[i] = (uint8_t)rng_u32();
}
static int32_t qlo(int dt) { return dt == I8 ? -128 : 0; }
static int32_t qhi(int dt) { return dt == I8 ? 127 : 255; }
static int32_t round_sat(float v, int32_t zp, int32_t lo, int32_t hi) {
  float r = nearbyintf(v) + (float)zp;
  return !(r >= (float)lo) ? lo : r > (float)hi ? hi : (int32_t)r;
}

/* ---- q8_gemm ---------------------------------------------------------------------------- */

struct gemm_case {
  int batch, m, n, k, a_bs_on, b_bs_on, a_dt, b_dt, y_dt, azp_rs, bzp_cs, per_row, bias, scale_s;
};

static int32_t q8_scratch(int m, int k) { return 4 * m * ((k + 1) / 2) + 32 * ((k + 1) / 2); }

static void gemm_case(const struct gemm_case *t) {
  int ch = t->per_row ? t->m : t->n, ysz = t->y_dt == U8 || t->y_dt == I8 ? 1 : 4;
  size_t a_n = (size_t)(t->a_bs_on ? t->batch : 1) * t->m * t->k;
  size_t b_n = (size_t)(t->b_bs_on ? t->batch : 1) * t->k * t->n;
  size_t y_n = (size_t)t->batch * t->m * t->n;
  uint8_t *a = malloc(a_n), *b = malloc(b_n), azp[64], bzp[64];
  int32_t bias[64];
  float scale[64];
  fill_q(a, a_n);
  fill_q(b, b_n);
  fill_q(azp, 64);
  fill_q(bzp, 64);
  for (int i = 0; i < 64; i++) {
    bias[i] = (int32_t)(rng_u32() % 20001) - 10000;
    scale[i] = rng_float(1e-4f, 2e-3f);
  }
  int32_t yzp = t->y_dt == I8 ? -3 : 100, ymin = qlo(t->y_dt) + 2, ymax = qhi(t->y_dt) - 1;
  double *want = malloc(8 * y_n);
  for (int bt = 0; bt < t->batch; bt++)
    for (int i = 0; i < t->m; i++)
      for (int j = 0; j < t->n; j++) {
        const uint8_t *ab = a + (t->a_bs_on ? (size_t)bt * t->m * t->k : 0);
        const uint8_t *bb = b + (t->b_bs_on ? (size_t)bt * t->k * t->n : 0);
        int64_t acc = 0;
        int32_t za = qget(azp, t->a_dt, t->azp_rs ? i : 0), zb = qget(bzp, t->b_dt, t->bzp_cs ? j : 0);
        for (int kk = 0; kk < t->k; kk++)
          acc += (int64_t)(qget(ab, t->a_dt, (size_t)i * t->k + kk) - za) *
                 (qget(bb, t->b_dt, (size_t)kk * t->n + j) - zb);
        int c = t->per_row ? i : j;
        if (t->bias) acc += bias[c];
        float s = scale[t->scale_s ? c : 0];
        size_t at = ((size_t)bt * t->m + i) * t->n + j;
        want[at] = t->y_dt == I32 ? (double)acc : t->y_dt == F32 ? (double)((float)acc * s)
                                                 : round_sat((float)acc * s, yzp, ymin, ymax);
      }
  char name[128];
  snprintf(name, sizeof name, "q8_gemm b%d m%d n%d k%d dt%d%d%d", t->batch, t->m, t->n, t->k, t->a_dt,
           t->b_dt, t->y_dt);
  for (int order = 0; order < 2; order++) {
    uint64_t bytes[8] = {a_n, b_n, 64, 64, 4 * 64, 4 * 64, ysz * y_n, (uint64_t)q8_scratch(t->m, t->k)};
    int32_t off[8];
    uint32_t arena_bytes = layout(bytes, 8, order, off);
    uint8_t *arena = arena_new(arena_bytes);
    memcpy(arena + off[0], a, a_n);
    memcpy(arena + off[1], b, b_n);
    memcpy(arena + off[2], azp, 64);
    memcpy(arena + off[3], bzp, 64);
    memcpy(arena + off[4], bias, 4 * 64);
    memcpy(arena + off[5], scale, 4 * 64);
    int32_t args[NNW_Q8_GEMM_NARGS] = {
        off[0], off[1], off[2], off[3], t->bias ? off[4] : -1, t->y_dt == I32 ? -1 : off[5], off[6],
        off[7], t->a_dt, t->b_dt, t->y_dt, t->batch, t->m, t->n, t->k,
        t->a_bs_on ? t->m * t->k : 0, t->b_bs_on ? t->k * t->n : 0, t->azp_rs, t->bzp_cs, t->per_row,
        1, t->scale_s, yzp, ymin, ymax};
    if (run_op(NNW_OP_Q8_GEMM, args, NNW_Q8_GEMM_NARGS, arena, arena_bytes) == NNW_OK) {
      size_t bad = 0;
      for (size_t e = 0; e < y_n; e++) {
        double got;
        if (ysz == 1) got = qget(arena + off[6], t->y_dt, e);
        else if (t->y_dt == I32) { int32_t v; memcpy(&v, arena + off[6] + 4 * e, 4); got = v; }
        else { float v; memcpy(&v, arena + off[6] + 4 * e, 4); got = v; }
        bad += got != want[e];
      }
      expect(bad == 0, "%s order %d: %zu of %zu wrong", name, order, bad, y_n);
    }
    free(arena);
  }
  (void)ch;
  free(a);
  free(b);
  free(want);
}

void test_q8_gemm(void) {
  static const struct gemm_case cases[] = {
      {1, 1, 1, 1, 0, 0, U8, U8, I32, 0, 0, 0, 0, 0},
      {1, 4, 8, 2, 0, 0, U8, I8, I32, 0, 1, 0, 0, 0},
      {1, 5, 13, 7, 0, 0, I8, I8, U8, 1, 1, 0, 1, 1},
      {1, 9, 17, 33, 0, 0, U8, I8, I8, 0, 0, 1, 1, 1},
      {2, 3, 9, 16, 1, 0, U8, U8, F32, 0, 1, 0, 0, 1},
      {3, 6, 5, 11, 1, 1, I8, U8, U8, 1, 0, 1, 1, 0},
      {2, 4, 24, 64, 0, 1, U8, I8, I32, 0, 1, 0, 1, 0},
      {1, 37, 3, 300, 0, 0, U8, U8, U8, 0, 0, 0, 1, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) gemm_case(&cases[i]);
}

/* q8_gemm_ep: uint8 x int8 into float32, then + fbias + r and gelu, against a double reference */
static void gemm_ep_case(int batch, int m, int n, int k, int has_fbias, int has_r, int act) {
  size_t a_n = (size_t)batch * m * k, b_n = (size_t)k * n, y_n = (size_t)batch * m * n;
  uint8_t *a = malloc(a_n), *b = malloc(b_n), azp[1], bzp[64];
  int32_t bias[64];
  float scale[64], fbias[64], *r = malloc(4 * y_n);
  fill_q(a, a_n);
  fill_q(b, b_n);
  fill_q(azp, 1);
  fill_q(bzp, 64);
  fill_random(fbias, 64, -1, 1);
  fill_random(r, y_n, -1, 1);
  for (int i = 0; i < 64; i++) {
    bias[i] = (int32_t)(rng_u32() % 20001) - 10000;
    scale[i] = rng_float(1e-5f, 1e-4f);
  }
  double *want = malloc(8 * y_n), *mag = malloc(8 * y_n);
  for (int bt = 0; bt < batch; bt++)
    for (int i = 0; i < m; i++)
      for (int j = 0; j < n; j++) {
        int64_t acc = bias[j];
        for (int kk = 0; kk < k; kk++)
          acc += (int64_t)(qget(a, U8, ((size_t)bt * m + i) * k + kk) - qget(azp, U8, 0)) *
                 (qget(b, I8, (size_t)kk * n + j) - qget(bzp, I8, j));
        size_t at = ((size_t)bt * m + i) * n + j;
        double v = (double)((float)acc * scale[j]);
        if (has_fbias) v += fbias[j];
        if (has_r) v += r[at];
        if (act) v = 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
        want[at] = v;
        mag[at] = fabs(v) + 1;
      }
  char name[96];
  snprintf(name, sizeof name, "q8_gemm_ep b%d m%d n%d k%d fbias%d r%d act%d", batch, m, n, k, has_fbias, has_r, act);
  for (int order = 0; order < 2; order++) {
    uint64_t bytes[10] = {a_n, b_n, 4, 64, 4 * 64, 4 * 64, 4 * y_n, (uint64_t)q8_scratch(m, k), 4 * 64, 4 * y_n};
    int32_t off[10];
    uint32_t arena_bytes = layout(bytes, 10, order, off);
    uint8_t *arena = arena_new(arena_bytes);
    memcpy(arena + off[0], a, a_n);
    memcpy(arena + off[1], b, b_n);
    memcpy(arena + off[2], azp, 1);
    memcpy(arena + off[3], bzp, 64);
    memcpy(arena + off[4], bias, 4 * 64);
    memcpy(arena + off[5], scale, 4 * 64);
    memcpy(arena + off[8], fbias, 4 * 64);
    memcpy(arena + off[9], r, 4 * y_n);
    int32_t args[NNW_Q8_GEMM_EP_NARGS] = {
        off[0], off[1], off[2], off[3], off[4], off[5], off[6], off[7], U8, I8, F32, batch, m, n, k,
        m * k, 0, 0, 1, 0, 1, 1, 0, 0, 0, has_fbias ? off[8] : -1, has_r ? off[9] : -1, act};
    if (run_op(NNW_OP_Q8_GEMM_EP, args, NNW_Q8_GEMM_EP_NARGS, arena, arena_bytes) == NNW_OK)
      check_close(name, (const float *)(const void *)(arena + off[6]), want, mag, y_n, 1e-6, 1e-6);
    free(arena);
  }
  free(a);
  free(b);
  free(r);
  free(want);
  free(mag);
}

void test_q8_gemm_ep(void) {
  gemm_ep_case(1, 4, 8, 2, 1, 0, 1);
  gemm_ep_case(1, 9, 24, 33, 1, 1, 0);
  gemm_ep_case(2, 5, 13, 7, 0, 1, 1);
  gemm_ep_case(1, 1, 1, 1, 0, 0, 0);
  gemm_ep_case(3, 6, 17, 64, 1, 0, 1);
  /* hostile: m 2, n 8, k 4, batch 1 */
  enum { A = 0, B = 64, AZ = 128, BZ = 132, BIAS = 136, SC = 168, Y = 200, SCR = 264, FB = 400, R = 448, ARENA = 576 };
  const int32_t g[NNW_Q8_GEMM_EP_NARGS] = {A, B, AZ, BZ, BIAS, SC, Y, SCR, U8, I8, F32, 1, 2, 8, 4, 0, 0,
                                           0, 1, 0, 1, 1, 0, 0, 0, FB, R, 1};
  const int n = NNW_Q8_GEMM_EP_NARGS;
  load_patched("valid", NNW_OP_Q8_GEMM_EP, g, n, -1, 0, ARENA, NNW_OK);
  load_patched("no fbias", NNW_OP_Q8_GEMM_EP, g, n, NNW_Q8_GEMM_EP_FBIAS, -1, ARENA, NNW_OK);
  load_patched("act 2", NNW_OP_Q8_GEMM_EP, g, n, NNW_Q8_GEMM_EP_ACT, 2, ARENA, NNW_BAD_ARGS);
  load_patched("y int8", NNW_OP_Q8_GEMM_EP, g, n, NNW_Q8_GEMM_EP_Y_DTYPE, I8, ARENA, NNW_BAD_ARGS);
  load_patched("per_row", NNW_OP_Q8_GEMM_EP, g, n, NNW_Q8_GEMM_EP_PER_ROW, 1, ARENA, NNW_BAD_ARGS);
  load_patched("m 0 (q8_gemm's checks)", NNW_OP_Q8_GEMM_EP, g, n, NNW_Q8_GEMM_EP_M, 0, ARENA, NNW_BAD_ARGS);
  load_patched("fbias past the arena", NNW_OP_Q8_GEMM_EP, g, n, NNW_Q8_GEMM_EP_FBIAS, ARENA - 16, ARENA, NNW_OUT_OF_BOUNDS);
  load_patched("r past the arena", NNW_OP_Q8_GEMM_EP, g, n, NNW_Q8_GEMM_EP_R, ARENA - 32, ARENA, NNW_OUT_OF_BOUNDS);
  load_patched("r misaligned", NNW_OP_Q8_GEMM_EP, g, n, NNW_Q8_GEMM_EP_R, R + 2, ARENA, NNW_BAD_ARGS);
  load_patched("r is y", NNW_OP_Q8_GEMM_EP, g, n, NNW_Q8_GEMM_EP_R, Y, ARENA, NNW_BAD_ARGS);
  load_patched("fbias over y", NNW_OP_Q8_GEMM_EP, g, n, NNW_Q8_GEMM_EP_FBIAS, Y + 16, ARENA, NNW_BAD_ARGS);
  load_patched("batch huge", NNW_OP_Q8_GEMM_EP, g, n, NNW_Q8_GEMM_EP_BATCH, 1 << 30, ARENA, NNW_OUT_OF_BOUNDS);
}

/* ---- q8_conv2d -------------------------------------------------------------------------- */

struct conv_case {
  int n, c, h, w, m, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr, group, x_dt, w_dt, y_dt, wzp_s;
};

/* 0: any weights; 1: 7-bit weights as onnxruntime's reduce_range gives (w - zp in -64..64, rows
 * reaching 64, -64, neither or both, with one or two 64s), which the relaxed flavour packs for its
 * dot (layout 2, conv2d_pw_relaxed.c); 2: the same with one row reaching -64 and 64 in more places
 * than its exception slots (then the int16 layout) */
static int seven_bit;

/* q8_conv2d_pack_w then q8_conv2d_pk on q8_conv2d's arguments args (weights packed into a buffer
 * of their own, flush against the arena's end), exactly want; then packed under the other host
 * hint than the run's (the layout word decides, not the hint at run time); the original weights
 * overwritten before the run */
static void pk_case(const struct conv_case *t, const int32_t *args, const int32_t *off, uint32_t base_bytes,
                    const uint8_t *x,
                    size_t x_n, const uint8_t *wt, size_t w_n, const uint8_t *xzp, const uint8_t *wzp,
                    const int32_t *bias, const float *scale, size_t y_n, const double *want) {
  int32_t k = t->c * t->kh * t->kw, wp_bytes = 16 + 4 * t->m * ((k + 1) / 2);
  int32_t wp = (int32_t)(base_bytes + 15) / 16 * 16; /* past the op's tensors */
  uint32_t arena_bytes = (uint32_t)(wp + wp_bytes);
  int32_t saved = nnw_host_hints;
  for (int flip = 0; flip < 2; flip++) {
    uint8_t *arena = arena_new(arena_bytes);
    memcpy(arena + off[0], x, x_n);
    memcpy(arena + off[1], wt, w_n);
    memcpy(arena + off[2], xzp, 4);
    memcpy(arena + off[3], wzp, 64);
    memcpy(arena + off[4], bias, 4 * 64);
    memcpy(arena + off[5], scale, 4 * 64);
    int32_t pack[NNW_Q8_CONV2D_PACK_W_NARGS] = {off[1], off[3], wp, t->w_dt, t->m, k, t->wzp_s};
    int32_t run[NNW_Q8_CONV2D_PK_NARGS];
    memcpy(run, args, sizeof run);
    run[NNW_Q8_CONV2D_PK_WEIGHT] = wp;
    if (flip) nnw_host_hints = saved ^ NNW_HINT_SPLAT_BY_SHUFFLE;
    int ok = run_op(NNW_OP_Q8_CONV2D_PACK_W, pack, NNW_Q8_CONV2D_PACK_W_NARGS, arena, arena_bytes) == NNW_OK;
    nnw_host_hints = saved;
    int32_t layout;
    memcpy(&layout, arena + wp, 4);
#ifdef __wasm_relaxed_simd__
    int want_layout2 = seven_bit == 1 && k >= 64; /* conv2d_pw_relaxed.c: from k = 64 */
#else
    int want_layout2 = 0;
#endif
    expect(!ok || (layout == 2) == want_layout2, "q8_conv2d_pack_w c%d m%d k%dx%d 7-bit %d: layout %d", t->c, t->m,
           t->kh, t->kw, seven_bit, layout);
    memset(arena + off[1], 0xA5, w_n); /* the run reads only the packed copy */
    if (ok && run_op(NNW_OP_Q8_CONV2D_PK, run, NNW_Q8_CONV2D_PK_NARGS, arena, arena_bytes) == NNW_OK) {
      size_t bad = 0;
      for (size_t e = 0; e < y_n; e++) bad += qget(arena + off[6], t->y_dt, e) != want[e];
      expect(bad == 0, "q8_conv2d_pk c%d m%d k%dx%d flip %d: %zu of %zu wrong", t->c, t->m, t->kh, t->kw, flip,
             bad, y_n);
    }
    free(arena);
  }
}

static void conv_case(const struct conv_case *t) {
  int oh = (t->h + t->pt + t->pb - (t->kh - 1) * t->dh - 1) / t->sh + 1;
  int ow = (t->w + t->pl + t->pr - (t->kw - 1) * t->dw - 1) / t->sw + 1;
  int cg = t->c / t->group, mg = t->m / t->group, ysz = t->y_dt == I32 ? 4 : 1;
  size_t x_n = (size_t)t->n * t->c * t->h * t->w, w_n = (size_t)t->m * cg * t->kh * t->kw;
  size_t y_n = (size_t)t->n * t->m * oh * ow;
  uint8_t *x = malloc(x_n), *wt = malloc(w_n), xzp[4], wzp[64];
  int32_t bias[64];
  float scale[64];
  fill_q(x, x_n);
  fill_q(wt, w_n);
  fill_q(xzp, 4);
  fill_q(wzp, 64);
  for (int i = 0; i < 64; i++) {
    bias[i] = (int32_t)(rng_u32() % 4001) - 2000;
    scale[i] = rng_float(1e-4f, 1e-3f);
  }
  if (seven_bit) { /* w - zp in -64..64: zero points near the middle, row o reaching 64 (o % 3 == 0), -64 (1) or neither */
    for (int i = 0; i < 64; i++) wzp[i] = t->w_dt == I8 ? (uint8_t)(int8_t)(rng_u32() % 21 - 10) : (uint8_t)(100 + rng_u32() % 51);
    size_t per = w_n / (size_t)t->m;
    for (int o = 0; o < t->m; o++) {
      int32_t zw = qget(wzp, t->w_dt, t->wzp_s ? o : 0);
      for (size_t e = 0; e < per; e++) {
        int32_t v = (int32_t)(rng_u32() % 127) - 63;
        if (e == per / 2 && o % 4 < 3) v = o % 4 == 1 ? -64 : 64;       /* rows 0, 2 mod 4: 64; 1: -64 */
        if (o % 4 == 2 && (e == 0 || e == per - 1)) v = e ? 64 : -64;  /* both ends, two exceptions */
        if (seven_bit == 2 && o == t->m / 2) v = e % 2 ? 64 : -64;      /* past the slots */
        wt[(size_t)o * per + e] = (uint8_t)(zw + v);
      }
    }
  }
  int32_t yzp = t->y_dt == I8 ? 5 : 120;
  double *want = malloc(8 * y_n);
  for (int b = 0; b < t->n; b++)
    for (int o = 0; o < t->m; o++)
      for (int oy = 0; oy < oh; oy++)
        for (int ox = 0; ox < ow; ox++) {
          int g = o / mg;
          int64_t acc = 0;
          int32_t zx = qget(xzp, t->x_dt, 0), zw = qget(wzp, t->w_dt, t->wzp_s ? o : 0);
          for (int ci = 0; ci < cg; ci++)
            for (int ky = 0; ky < t->kh; ky++)
              for (int kx = 0; kx < t->kw; kx++) {
                int iy = oy * t->sh - t->pt + ky * t->dh, ix = ox * t->sw - t->pl + kx * t->dw;
                int32_t xv = iy < 0 || iy >= t->h || ix < 0 || ix >= t->w
                                 ? zx
                                 : qget(x, t->x_dt, (((size_t)b * t->c + g * cg + ci) * t->h + iy) * t->w + ix);
                acc += (int64_t)(xv - zx) *
                       (qget(wt, t->w_dt, (((size_t)o * cg + ci) * t->kh + ky) * t->kw + kx) - zw);
              }
          acc += bias[o];
          size_t at = (((size_t)b * t->m + o) * oh + oy) * ow + ox;
          want[at] = t->y_dt == I32 ? (double)acc
                                    : round_sat((float)acc * scale[o], yzp, qlo(t->y_dt), qhi(t->y_dt));
        }
  int32_t scratch = nnw_q8_conv2d_scratch_bytes(t->c, t->m, t->group, t->kh, t->kw, oh, ow, t->sh, t->sw,
                                                t->dh, t->dw, t->pt, t->pl, t->h, t->w);
  expect(scratch >= 0, "q8_conv2d scratch %d", scratch);
  for (int order = 0; order < 2 && scratch >= 0; order++) {
    uint64_t bytes[8] = {x_n, w_n, 4, 64, 4 * 64, 4 * 64, ysz * y_n, (uint64_t)scratch};
    int32_t off[8];
    uint32_t arena_bytes = layout(bytes, 8, order, off);
    uint8_t *arena = arena_new(arena_bytes);
    memcpy(arena + off[0], x, x_n);
    memcpy(arena + off[1], wt, w_n);
    memcpy(arena + off[2], xzp, 4);
    memcpy(arena + off[3], wzp, 64);
    memcpy(arena + off[4], bias, 4 * 64);
    memcpy(arena + off[5], scale, 4 * 64);
    int32_t args[NNW_Q8_CONV2D_NARGS] = {
        off[0], off[1], off[2], off[3], off[4], t->y_dt == I32 ? -1 : off[5], off[6], off[7],
        t->x_dt, t->w_dt, t->y_dt, t->n, t->c, t->h, t->w, t->m, oh, ow, t->kh, t->kw, t->sh, t->sw,
        t->dh, t->dw, t->pt, t->pl, t->group, t->wzp_s, 1, yzp, qlo(t->y_dt), qhi(t->y_dt)};
    if (t->y_dt == I32) args[NNW_Q8_CONV2D_Y_ZP] = args[NNW_Q8_CONV2D_Y_MIN] = args[NNW_Q8_CONV2D_Y_MAX] = 0;
    if (run_op(NNW_OP_Q8_CONV2D, args, NNW_Q8_CONV2D_NARGS, arena, arena_bytes) == NNW_OK) {
      size_t bad = 0;
      for (size_t e = 0; e < y_n; e++) {
        double got;
        if (ysz == 1) got = qget(arena + off[6], t->y_dt, e);
        else { int32_t v; memcpy(&v, arena + off[6] + 4 * e, 4); got = v; }
        bad += got != want[e];
      }
      expect(bad == 0, "q8_conv2d c%d m%d k%dx%d g%d order %d: %zu of %zu wrong", t->c, t->m, t->kh,
             t->kw, t->group, order, bad, y_n);
    }
    free(arena);
    if (t->group == 1 && t->y_dt != I32) pk_case(t, args, off, arena_bytes, x, x_n, wt, w_n, xzp, wzp, bias, scale, y_n, want);
  }
  free(x);
  free(wt);
  free(want);
}

void test_q8_conv2d(void) {
  static const struct conv_case cases[] = {
      {1, 3, 7, 9, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, U8, I8, U8, 1},
      {2, 4, 8, 6, 6, 3, 2, 2, 1, 1, 2, 0, 1, 2, 0, 2, U8, U8, I32, 0},
      {1, 8, 6, 6, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 8, I8, I8, I8, 1},
      {1, 24, 5, 5, 17, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, U8, I8, U8, 0},
      {1, 5, 11, 4, 3, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0, 1, I8, U8, I32, 1},
      /* depthwise (group == c == m): wide rows (chunks of 64, SIMD bodies and tails), stride 2,
       * dilation, uneven pads, odd channel counts, per-channel and shared weight zero points */
      {1, 7, 9, 70, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 7, U8, I8, U8, 1},
      {2, 5, 10, 37, 5, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 5, I8, I8, I8, 0},
      {1, 3, 6, 40, 3, 3, 3, 2, 2, 1, 1, 0, 0, 1, 1, 3, U8, U8, I32, 1},
      {1, 9, 7, 19, 9, 5, 3, 1, 2, 2, 1, 2, 1, 2, 0, 9, I8, U8, U8, 1},
      {1, 2, 2, 3, 2, 3, 3, 1, 1, 1, 1, 2, 2, 2, 2, 2, U8, I8, I8, 1},
      {1, 33, 1, 1, 33, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 33, I8, I8, U8, 1},
      /* conv2d_dw.c's pair dots: 7x7 planes (one partial vector a row, the last store at y's
       * end), 14 -> 7 at stride 2, kw 5 and 8 (the widest), kw 9 and horizontal dilation
       * (the row path) */
      {1, 6, 7, 7, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 6, U8, I8, U8, 1},
      {1, 4, 14, 14, 4, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 4, U8, I8, U8, 0},
      {1, 5, 9, 13, 5, 5, 5, 2, 2, 1, 1, 2, 2, 2, 2, 5, U8, U8, U8, 1},
      {1, 3, 5, 20, 3, 2, 8, 1, 1, 1, 1, 0, 3, 0, 4, 3, I8, I8, U8, 1},
      {1, 2, 3, 12, 2, 1, 9, 1, 1, 1, 1, 0, 4, 0, 4, 2, U8, I8, U8, 1},
      {1, 3, 8, 16, 3, 3, 3, 1, 1, 1, 2, 1, 2, 1, 2, 3, U8, I8, I8, 1},
      /* conv2d_pw.c: odd k, rows past a multiple of 4, partial panels, batches, uint8 weights */
      {1, 33, 4, 6, 40, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, U8, I8, I8, 1},
      {2, 16, 3, 7, 14, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, U8, U8, U8, 1},
      {1, 7, 1, 9, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, I8, I8, U8, 0},
      {1, 2, 3, 3, 4, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, U8, I8, U8, 1},
      /* conv2d.c's im2col at stride 2 by 16-byte shuffles (wide rows, both pads, an odd width) */
      {1, 3, 9, 70, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, U8, I8, U8, 1},
      {1, 2, 5, 69, 4, 3, 3, 2, 2, 1, 1, 0, 0, 1, 1, 1, I8, I8, I8, 0},
      /* q8_conv2d_pk's rows blocked by 8 under the hint (m a multiple of 8, >= 32): partial
       * chunks of 8 pixels (7 and 3 in the second half), one pixel, an im2col conv, 4 + 4 */
      {2, 19, 3, 5, 32, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, U8, I8, U8, 1},
      {1, 8, 1, 1, 48, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, I8, I8, I8, 1},
      {1, 3, 9, 70, 32, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, U8, I8, U8, 1},
      {1, 64, 2, 6, 64, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, U8, U8, I8, 0},
      {1, 40, 7, 7, 56, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, U8, I8, U8, 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) conv_case(&cases[i]);
}

/* group-1 cases with 7-bit weights (seven_bit): in the relaxed flavour q8_conv2d_pk runs them on
 * the relaxed dot (conv2d_pw_relaxed.c), bit for bit the exact reference; a row reaching both -64
 * and 64 keeps the int16 layout */
void test_q8_conv2d_7bit(void) {
  static const struct conv_case cases[] = {
      {1, 24, 5, 5, 17, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, U8, I8, U8, 0},
      {1, 33, 4, 6, 40, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, U8, I8, I8, 1},
      {2, 16, 3, 7, 14, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, U8, U8, U8, 1},
      {1, 7, 1, 9, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, I8, I8, U8, 0},
      {1, 9, 3, 3, 6, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, I8, I8, U8, 1},
      {2, 19, 3, 5, 32, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, U8, I8, U8, 1},
      {1, 3, 9, 70, 32, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, U8, I8, U8, 1},
      {1, 64, 2, 6, 64, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, U8, U8, I8, 0},
      {1, 40, 7, 7, 56, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, I8, I8, U8, 1},
      {1, 160, 2, 5, 13, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, U8, I8, U8, 1},
      /* k >= 64 (the relaxed dot): rows past a multiple of 4, partial panels, odd k, int8 x, im2col */
      {1, 96, 3, 5, 21, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, U8, I8, U8, 1},
      {1, 73, 2, 3, 8, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, U8, U8, I8, 0},
      {2, 100, 3, 3, 6, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, I8, I8, U8, 1},
      {1, 8, 9, 11, 7, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, U8, I8, U8, 1},
  };
  for (seven_bit = 1; seven_bit <= 2; seven_bit++)
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) conv_case(&cases[i]);
  seven_bit = 0;
}

/* the same cases with wasmtime's host hint (conv2d_pw.c's tile4_shuffle on blocked weights): the
 * reference is exact, so both variants give the same bits */
void test_q8_conv2d_hinted(void) {
  nnw_host_hints = NNW_HINT_SPLAT_BY_SHUFFLE;
  test_q8_conv2d();
  nnw_host_hints = 0;
}

/* ---- q8_quantize, q8_dequantize, q8_dyn_quantize, q8_add -------------------------------- */

void test_q8_quantize(void) {
  enum { OUTER = 3, AXIS = 5, INNER = 19, N = OUTER * AXIS * INNER }; /* rows of 8 (SIMD) and a tail */
  float x[N], scale[AXIS], back[N];
  uint8_t zp[AXIS];
  fill_random(x, N, -4, 4);
  x[0] = 0.5f, x[1] = 1.5f, x[2] = -2.5f, x[3] = 1e30f, x[4] = -INFINITY, x[5] = NAN;
  for (int a = 0; a < AXIS; a++) scale[a] = a == 0 ? 1.0f : rng_float(0.01f, 0.1f);
  fill_q(zp, AXIS);
  zp[0] = 0;
  for (int dt = U8; dt <= I8; dt++) {
    uint64_t bytes[5] = {4 * N, 4 * AXIS, AXIS, N, 4 * N};
    int32_t off[5];
    uint32_t arena_bytes = layout(bytes, 5, dt == I8, off);
    uint8_t *arena = arena_new(arena_bytes);
    memcpy(arena + off[0], x, sizeof x);
    memcpy(arena + off[1], scale, sizeof scale);
    memcpy(arena + off[2], zp, AXIS);
    int32_t q[] = {off[0], off[1], off[2], off[3], dt, OUTER, AXIS, INNER};
    int32_t d[] = {off[3], off[1], off[2], off[4], dt, OUTER, AXIS, INNER};
    if (run_op(NNW_OP_Q8_QUANTIZE, q, 8, arena, arena_bytes) == NNW_OK &&
        run_op(NNW_OP_Q8_DEQUANTIZE, d, 8, arena, arena_bytes) == NNW_OK) {
      size_t bad = 0;
      memcpy(back, arena + off[4], sizeof back);
      for (int i = 0; i < N; i++) {
        int a = (i / INNER) % AXIS;
        int32_t z = qget(zp, dt, (size_t)a);
        int32_t want = round_sat(x[i] / scale[a], z, qlo(dt), qhi(dt));
        bad += qget(arena + off[3], dt, (size_t)i) != want || back[i] != (float)(want - z) * scale[a];
      }
      expect(bad == 0, "q8_quantize/dequantize dt%d: %zu wrong", dt, bad);
      /* ties to even with scale 1, zero point 0 (a = 0 for i < INNER), in the SIMD part */
      expect(qget(arena + off[3], dt, 0) == 0 && qget(arena + off[3], dt, 1) == 2 &&
                 qget(arena + off[3], dt, 2) == (dt == I8 ? -2 : 0),
             "q8_quantize rounds half to even");
    }
    free(arena);
  }
  /* per-tensor as the compiler gives it, [N, 1, 1]: run as one row (SIMD and a tail) */
  for (int dt = U8; dt <= I8; dt++) {
    uint64_t bytes[5] = {4 * N, 4, 1, N, 4 * N};
    int32_t off[5];
    uint32_t arena_bytes = layout(bytes, 5, dt == U8, off);
    uint8_t *arena = arena_new(arena_bytes);
    memcpy(arena + off[0], x, sizeof x);
    memcpy(arena + off[1], &scale[1], 4);
    memcpy(arena + off[2], &zp[1], 1);
    int32_t q[] = {off[0], off[1], off[2], off[3], dt, N, 1, 1};
    int32_t d[] = {off[3], off[1], off[2], off[4], dt, N, 1, 1};
    if (run_op(NNW_OP_Q8_QUANTIZE, q, 8, arena, arena_bytes) == NNW_OK &&
        run_op(NNW_OP_Q8_DEQUANTIZE, d, 8, arena, arena_bytes) == NNW_OK) {
      size_t bad = 0;
      memcpy(back, arena + off[4], sizeof back);
      int32_t z = qget(zp, dt, 1);
      for (int i = 0; i < N; i++) {
        int32_t want = round_sat(x[i] / scale[1], z, qlo(dt), qhi(dt));
        bad += qget(arena + off[3], dt, (size_t)i) != want || back[i] != (float)(want - z) * scale[1];
      }
      expect(bad == 0, "q8_quantize/dequantize per-tensor dt%d: %zu wrong", dt, bad);
    }
    free(arena);
  }
  /* quotients at and next to halves (the SIMD loop's x * (1 / scale) must round as x / scale),
   * past the clamp bounds, and scales whose reciprocal is not a normal float */
  {
    enum { M = 8 * 400 };
    static float hx[M];
    static const float scales[] = {1.0f, 0.0371f, 3.3e-3f, 7.77f, 1e-39f, 3e38f, 0.1f};
    for (size_t si = 0; si < sizeof scales / sizeof scales[0]; si++)
      for (int dt = U8; dt <= I8; dt++) {
        float sc = scales[si];
        for (int i = 0; i < M; i++) {
          float h = ((float)(i / 8 - 200) + 0.5f) * sc * (i % 8 < 7 ? 1.0f : 1.37f);
          int ulps = i % 8 - 3; /* h moved by -3 .. 3 ulp */
          for (; ulps > 0; ulps--) h = nextafterf(h, INFINITY);
          for (; ulps < 0; ulps++) h = nextafterf(h, -INFINITY);
          hx[i] = h;
        }
        uint64_t bytes[4] = {4 * M, 4, 1, M};
        int32_t off[4];
        uint32_t arena_bytes = layout(bytes, 4, dt == I8, off);
        uint8_t *arena = arena_new(arena_bytes);
        uint8_t z = dt == I8 ? (uint8_t)(int8_t)-3 : 131;
        memcpy(arena + off[0], hx, sizeof hx);
        memcpy(arena + off[1], &sc, 4);
        arena[off[2]] = z;
        int32_t q[] = {off[0], off[1], off[2], off[3], dt, M, 1, 1};
        if (run_op(NNW_OP_Q8_QUANTIZE, q, 8, arena, arena_bytes) == NNW_OK) {
          size_t bad = 0;
          int32_t zz = qget(&z, dt, 0);
          for (int i = 0; i < M; i++)
            bad += qget(arena + off[3], dt, (size_t)i) != round_sat(hx[i] / sc, zz, qlo(dt), qhi(dt));
          expect(bad == 0, "q8_quantize near halves, scale %g dt%d: %zu wrong", sc, dt, bad);
        }
        free(arena);
      }
  }
  /* dynamic: the range [min(x,0), max(x,0)] onto [0, 255] */
  for (int sign = -1; sign <= 1; sign++) {
    float v[37];
    fill_random(v, 37, sign > 0 ? 0.5f : -3, sign < 0 ? -0.5f : 3);
    uint64_t bytes[4] = {4 * 37, 37, 4, 1};
    int32_t off[4];
    uint32_t arena_bytes = layout(bytes, 4, sign > 0, off);
    uint8_t *arena = arena_new(arena_bytes);
    memcpy(arena + off[0], v, sizeof v);
    int32_t args[] = {off[0], off[1], off[2], off[3], 37};
    if (run_op(NNW_OP_Q8_DYN_QUANTIZE, args, 5, arena, arena_bytes) == NNW_OK) {
      float lo = 0, hi = 0, s;
      for (int i = 0; i < 37; i++) lo = v[i] < lo ? v[i] : lo, hi = v[i] > hi ? v[i] : hi;
      float ws = (hi - lo) / 255.0f, zf = 0.0f - lo / ws;
      int32_t wz = (int32_t)nearbyintf(zf < 0 ? 0 : zf > 255 ? 255 : zf);
      memcpy(&s, arena + off[2], 4);
      size_t bad = 0;
      for (int i = 0; i < 37; i++) bad += arena[off[1] + i] != round_sat(v[i] / ws, wz, 0, 255);
      expect(s == ws && arena[off[3]] == wz && bad == 0, "q8_dyn_quantize sign %d: scale %g/%g zp %d/%d, %zu wrong",
             sign, s, ws, arena[off[3]], wz, bad);
    }
    free(arena);
  }
}

void test_q8_add(void) {
  /* [2,3,4] + [3,1] broadcast, int8 and uint8 */
  for (int dt = U8; dt <= I8; dt++) {
    uint8_t a[24], b[3];
    fill_q(a, 24);
    fill_q(b, 3);
    float am = 0.37f, bm = 1.9f;
    int32_t azp = dt == I8 ? -5 : 130, bzp = 7, yzp = dt == I8 ? 2 : 99;
    uint64_t bytes[3] = {24, 3, 24};
    int32_t off[3];
    uint32_t arena_bytes = layout(bytes, 3, dt == I8, off);
    uint8_t *arena = arena_new(arena_bytes);
    memcpy(arena + off[0], a, 24);
    memcpy(arena + off[1], b, 3);
    int32_t args[NNW_Q8_ADD_NARGS] = {off[0], off[1], off[2], dt, f32_bits(am), f32_bits(bm), azp, bzp, yzp,
                                      qlo(dt), qhi(dt), 3, 2, 3, 4, 1, 1, 1, 12, 4, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0};
    if (run_op(NNW_OP_Q8_ADD, args, NNW_Q8_ADD_NARGS, arena, arena_bytes) == NNW_OK) {
      size_t bad = 0;
      for (int i = 0; i < 24; i++) {
        float v = am * (float)(qget(a, dt, (size_t)i) - azp) + bm * (float)(qget(b, dt, (size_t)(i / 4) % 3) - bzp);
        bad += qget(arena + off[2], dt, (size_t)i) != round_sat(v, yzp, qlo(dt), qhi(dt));
      }
      expect(bad == 0, "q8_add dt%d: %zu wrong", dt, bad);
    }
    free(arena);
  }
}

/* ---- hostile arguments ------------------------------------------------------------------ */

void test_q8_hostile(void) {
  enum { A = 0, B = 64, AZ = 128, BZ = 132, BIAS = 136, SC = 168, Y = 200, SCR = 264, ARENA = 512 };
  /* gemm m 2, n 8, k 4 into int8 */
  const int32_t g[NNW_Q8_GEMM_NARGS] = {A, B, AZ, BZ, BIAS, SC, Y, SCR, U8, I8, I8, 1, 2, 8, 4, 0, 0,
                                        0, 1, 0, 1, 1, -3, -128, 127};
  const int n = NNW_Q8_GEMM_NARGS;
  load_patched("valid", NNW_OP_Q8_GEMM, g, n, -1, 0, ARENA, NNW_OK);
  load_patched("a dtype f32", NNW_OP_Q8_GEMM, g, n, NNW_Q8_GEMM_A_DTYPE, F32, ARENA, NNW_BAD_ARGS);
  load_patched("y dtype 99", NNW_OP_Q8_GEMM, g, n, NNW_Q8_GEMM_Y_DTYPE, 99, ARENA, NNW_BAD_ARGS);
  load_patched("m 0", NNW_OP_Q8_GEMM, g, n, NNW_Q8_GEMM_M, 0, ARENA, NNW_BAD_ARGS);
  load_patched("k negative", NNW_OP_Q8_GEMM, g, n, NNW_Q8_GEMM_K, -4, ARENA, NNW_BAD_ARGS);
  load_patched("n huge", NNW_OP_Q8_GEMM, g, n, NNW_Q8_GEMM_N, INT32_MAX, ARENA, NNW_OUT_OF_BOUNDS);
  load_patched("batch huge", NNW_OP_Q8_GEMM, g, n, NNW_Q8_GEMM_BATCH, 1 << 30, ARENA, NNW_OUT_OF_BOUNDS);
  load_patched("a_bs negative", NNW_OP_Q8_GEMM, g, n, NNW_Q8_GEMM_A_BS, -1, ARENA, NNW_BAD_ARGS);
  load_patched("zp stride 2", NNW_OP_Q8_GEMM, g, n, NNW_Q8_GEMM_B_ZP_CS, 2, ARENA, NNW_BAD_ARGS);
  load_patched("per_row -1", NNW_OP_Q8_GEMM, g, n, NNW_Q8_GEMM_PER_ROW, -1, ARENA, NNW_BAD_ARGS);
  load_patched("y_zp out of int8", NNW_OP_Q8_GEMM, g, n, NNW_Q8_GEMM_Y_ZP, 128, ARENA, NNW_BAD_ARGS);
  load_patched("y_min = y_max", NNW_OP_Q8_GEMM, g, n, NNW_Q8_GEMM_Y_MIN, 127, ARENA, NNW_OK);
  load_patched("y_max < y_min", NNW_OP_Q8_GEMM, g, n, NNW_Q8_GEMM_Y_MAX, -129, ARENA, NNW_BAD_ARGS);
  load_patched("a past the arena", NNW_OP_Q8_GEMM, g, n, NNW_Q8_GEMM_A, ARENA - 4, ARENA, NNW_OUT_OF_BOUNDS);
  load_patched("a negative", NNW_OP_Q8_GEMM, g, n, NNW_Q8_GEMM_A, -8, ARENA, NNW_OUT_OF_BOUNDS);
  load_patched("b absent", NNW_OP_Q8_GEMM, g, n, NNW_Q8_GEMM_B, -1, ARENA, NNW_OUT_OF_BOUNDS);
  load_patched("scale absent for int8 out", NNW_OP_Q8_GEMM, g, n, NNW_Q8_GEMM_SCALE, -1, ARENA, NNW_OUT_OF_BOUNDS);
  load_patched("bias misaligned", NNW_OP_Q8_GEMM, g, n, NNW_Q8_GEMM_BIAS, BIAS + 2, ARENA, NNW_BAD_ARGS);
  load_patched("scratch misaligned", NNW_OP_Q8_GEMM, g, n, NNW_Q8_GEMM_SCRATCH, SCR + 1, ARENA, NNW_BAD_ARGS);
  load_patched("scratch too small", NNW_OP_Q8_GEMM, g, n, NNW_Q8_GEMM_SCRATCH, ARENA - 8, ARENA, NNW_OUT_OF_BOUNDS);
  load_patched("y over a", NNW_OP_Q8_GEMM, g, n, NNW_Q8_GEMM_Y, A + 4, ARENA, NNW_BAD_ARGS);
  load_patched("scratch over b", NNW_OP_Q8_GEMM, g, n, NNW_Q8_GEMM_SCRATCH, B, ARENA, NNW_BAD_ARGS);
  load_patched("y over the scratch", NNW_OP_Q8_GEMM, g, n, NNW_Q8_GEMM_Y, SCR, ARENA, NNW_BAD_ARGS);

  /* conv 1x2x4x4 -> 3 channels 3x3 kernel, pads 1 */
  int32_t cs = nnw_q8_conv2d_scratch_bytes(2, 3, 1, 3, 3, 4, 4, 1, 1, 1, 1, 1, 1, 4, 4);
  expect(cs > 0 && SCR + cs <= 2048, "q8_conv2d scratch %d", cs);
  const int32_t c[NNW_Q8_CONV2D_NARGS] = {A, B, AZ, BZ, BIAS, SC, Y, SCR, U8, I8, U8, 1, 2, 4, 4, 3,
                                          4, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0, 0, 128, 0, 255};
  const int nc = NNW_Q8_CONV2D_NARGS;
  load_patched("valid", NNW_OP_Q8_CONV2D, c, nc, -1, 0, 2048, NNW_OK);
  load_patched("group 0", NNW_OP_Q8_CONV2D, c, nc, NNW_Q8_CONV2D_GROUP, 0, 2048, NNW_BAD_ARGS);
  load_patched("group not dividing c", NNW_OP_Q8_CONV2D, c, nc, NNW_Q8_CONV2D_GROUP, 3, 2048, NNW_BAD_ARGS);
  load_patched("pads negative", NNW_OP_Q8_CONV2D, c, nc, NNW_Q8_CONV2D_PT, -1, 2048, NNW_BAD_ARGS);
  load_patched("stride huge", NNW_OP_Q8_CONV2D, c, nc, NNW_Q8_CONV2D_SH, INT32_MAX, 2048, NNW_BAD_ARGS);
  load_patched("oh huge", NNW_OP_Q8_CONV2D, c, nc, NNW_Q8_CONV2D_OH, 1 << 29, 2048, NNW_BAD_ARGS);
  load_patched("n huge", NNW_OP_Q8_CONV2D, c, nc, NNW_Q8_CONV2D_N, INT32_MAX, 2048, NNW_OUT_OF_BOUNDS);
  load_patched("x dtype i32", NNW_OP_Q8_CONV2D, c, nc, NNW_Q8_CONV2D_X_DTYPE, I32, 2048, NNW_BAD_ARGS);
  load_patched("w_zp_s 5", NNW_OP_Q8_CONV2D, c, nc, NNW_Q8_CONV2D_W_ZP_S, 5, 2048, NNW_BAD_ARGS);
  load_patched("scratch short", NNW_OP_Q8_CONV2D, c, nc, NNW_Q8_CONV2D_SCRATCH, 2048 - cs + 4, 2048, NNW_OUT_OF_BOUNDS);
  load_patched("y over w", NNW_OP_Q8_CONV2D, c, nc, NNW_Q8_CONV2D_Y, B, 2048, NNW_BAD_ARGS);
  load_patched("y_zp out of uint8", NNW_OP_Q8_CONV2D, c, nc, NNW_Q8_CONV2D_Y_ZP, -1, 2048, NNW_BAD_ARGS);
  /* q8_conv2d_pk on the same conv, weights packed at 2048 (16 + 4 * 3 * 9 = 124 bytes) */
  int32_t cp[NNW_Q8_CONV2D_PK_NARGS];
  memcpy(cp, c, sizeof cp);
  cp[NNW_Q8_CONV2D_PK_WEIGHT] = 2048;
  load_patched("valid", NNW_OP_Q8_CONV2D_PK, cp, nc, -1, 0, 2176, NNW_OK);
  load_patched("packed weights past the arena", NNW_OP_Q8_CONV2D_PK, cp, nc, -1, 0, 2048 + 120, NNW_OUT_OF_BOUNDS);
  load_patched("packed weights misaligned", NNW_OP_Q8_CONV2D_PK, cp, nc, NNW_Q8_CONV2D_PK_WEIGHT, 2050, 2176, NNW_BAD_ARGS);
  load_patched("group 2", NNW_OP_Q8_CONV2D_PK, cp, nc, NNW_Q8_CONV2D_PK_GROUP, 2, 2176, NNW_BAD_ARGS);
  load_patched("y int32", NNW_OP_Q8_CONV2D_PK, cp, nc, NNW_Q8_CONV2D_PK_Y_DTYPE, I32, 2176, NNW_BAD_ARGS);
  load_patched("y over the packed weights", NNW_OP_Q8_CONV2D_PK, cp, nc, NNW_Q8_CONV2D_PK_Y, 2048, 2176, NNW_BAD_ARGS);
  load_patched("c 3 (k 27: 16 + 168 bytes)", NNW_OP_Q8_CONV2D_PK, cp, nc, NNW_Q8_CONV2D_PK_C, 3, 2176, NNW_OUT_OF_BOUNDS);
  const int32_t pw[NNW_Q8_CONV2D_PACK_W_NARGS] = {B, BZ, 2048, I8, 3, 18, 0};
  const int npw = NNW_Q8_CONV2D_PACK_W_NARGS;
  load_patched("valid", NNW_OP_Q8_CONV2D_PACK_W, pw, npw, -1, 0, 2176, NNW_OK);
  load_patched("no zero point", NNW_OP_Q8_CONV2D_PACK_W, pw, npw, NNW_Q8_CONV2D_PACK_W_W_ZP, -1, 2176, NNW_OK);
  load_patched("m 0", NNW_OP_Q8_CONV2D_PACK_W, pw, npw, NNW_Q8_CONV2D_PACK_W_M, 0, 2176, NNW_BAD_ARGS);
  load_patched("k -1", NNW_OP_Q8_CONV2D_PACK_W, pw, npw, NNW_Q8_CONV2D_PACK_W_K, -1, 2176, NNW_BAD_ARGS);
  load_patched("dtype i32", NNW_OP_Q8_CONV2D_PACK_W, pw, npw, NNW_Q8_CONV2D_PACK_W_W_DTYPE, I32, 2176, NNW_BAD_ARGS);
  load_patched("w_zp_s 2", NNW_OP_Q8_CONV2D_PACK_W, pw, npw, NNW_Q8_CONV2D_PACK_W_W_ZP_S, 2, 2176, NNW_BAD_ARGS);
  load_patched("wp past the arena", NNW_OP_Q8_CONV2D_PACK_W, pw, npw, -1, 0, 2160, NNW_OUT_OF_BOUNDS);
  load_patched("wp misaligned", NNW_OP_Q8_CONV2D_PACK_W, pw, npw, NNW_Q8_CONV2D_PACK_W_WP, 2049, 2176, NNW_BAD_ARGS);
  load_patched("wp over w", NNW_OP_Q8_CONV2D_PACK_W, pw, npw, NNW_Q8_CONV2D_PACK_W_WP, B, 2176, NNW_BAD_ARGS);
  load_patched("wp over the zero points", NNW_OP_Q8_CONV2D_PACK_W, pw, npw, NNW_Q8_CONV2D_PACK_W_WP, BZ - 64, 2176, NNW_BAD_ARGS);
  load_patched("m huge", NNW_OP_Q8_CONV2D_PACK_W, pw, npw, NNW_Q8_CONV2D_PACK_W_M, INT32_MAX, 2176, NNW_OUT_OF_BOUNDS);
  load_patched("k huge", NNW_OP_Q8_CONV2D_PACK_W, pw, npw, NNW_Q8_CONV2D_PACK_W_K, 1 << 30, 2176, NNW_OUT_OF_BOUNDS);

  const int32_t q[8] = {A, SC, AZ, Y, U8, 2, 4, 3};
  load_patched("valid", NNW_OP_Q8_QUANTIZE, q, 8, -1, 0, ARENA, NNW_OK);
  load_patched("dtype i32", NNW_OP_Q8_QUANTIZE, q, 8, 4, I32, ARENA, NNW_BAD_ARGS);
  load_patched("axis 0", NNW_OP_Q8_QUANTIZE, q, 8, 6, 0, ARENA, NNW_BAD_ARGS);
  load_patched("inner huge", NNW_OP_Q8_QUANTIZE, q, 8, 7, INT32_MAX, ARENA, NNW_OUT_OF_BOUNDS);
  load_patched("x misaligned", NNW_OP_Q8_QUANTIZE, q, 8, 0, 2, ARENA, NNW_BAD_ARGS);
  load_patched("y over x", NNW_OP_Q8_QUANTIZE, q, 8, 3, A + 8, ARENA, NNW_BAD_ARGS);
  load_patched("scale past the arena", NNW_OP_Q8_QUANTIZE, q, 8, 1, ARENA - 8, ARENA, NNW_OUT_OF_BOUNDS);
  const int32_t dq[8] = {A, SC, AZ, Y, I32, 2, 4, 3};
  load_patched("valid int32", NNW_OP_Q8_DEQUANTIZE, dq, 8, -1, 0, ARENA, NNW_OK);
  load_patched("dtype f32", NNW_OP_Q8_DEQUANTIZE, dq, 8, 4, F32, ARENA, NNW_BAD_ARGS);
  load_patched("zp misaligned", NNW_OP_Q8_DEQUANTIZE, dq, 8, 2, AZ + 1, ARENA, NNW_BAD_ARGS);
  const int32_t dyn[5] = {A, Y, SC, AZ, 16};
  load_patched("valid", NNW_OP_Q8_DYN_QUANTIZE, dyn, 5, -1, 0, ARENA, NNW_OK);
  load_patched("count 0", NNW_OP_Q8_DYN_QUANTIZE, dyn, 5, 4, 0, ARENA, NNW_BAD_ARGS);
  load_patched("scale over y", NNW_OP_Q8_DYN_QUANTIZE, dyn, 5, 2, Y + 4, ARENA, NNW_BAD_ARGS);
  load_patched("zero point over x", NNW_OP_Q8_DYN_QUANTIZE, dyn, 5, 3, A + 3, ARENA, NNW_BAD_ARGS);
  int32_t add[NNW_Q8_ADD_NARGS] = {A, B, Y, U8, f32_bits(0.5f), f32_bits(0.5f), 1, 2, 3, 0, 255, 2, 4, 8,
                                   1, 1, 1, 1, 8, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0};
  load_patched("valid", NNW_OP_Q8_ADD, add, NNW_Q8_ADD_NARGS, -1, 0, ARENA, NNW_OK);
  load_patched("rank 7", NNW_OP_Q8_ADD, add, NNW_Q8_ADD_NARGS, NNW_Q8_ADD_RANK, 7, ARENA, NNW_BAD_ARGS);
  load_patched("dim 0", NNW_OP_Q8_ADD, add, NNW_Q8_ADD_NARGS, NNW_Q8_ADD_D0, 0, ARENA, NNW_BAD_ARGS);
  load_patched("stride negative", NNW_OP_Q8_ADD, add, NNW_Q8_ADD_NARGS, NNW_Q8_ADD_AS1, -1, ARENA, NNW_BAD_ARGS);
  load_patched("a_zp out of uint8", NNW_OP_Q8_ADD, add, NNW_Q8_ADD_NARGS, NNW_Q8_ADD_A_ZP, 256, ARENA, NNW_BAD_ARGS);
  load_patched("y over b", NNW_OP_Q8_ADD, add, NNW_Q8_ADD_NARGS, NNW_Q8_ADD_Y, B + 1, ARENA, NNW_BAD_ARGS);
  load_patched("a stride huge", NNW_OP_Q8_ADD, add, NNW_Q8_ADD_NARGS, NNW_Q8_ADD_AS0, 1 << 30, ARENA, NNW_OUT_OF_BOUNDS);

  /* fuzz: random edits of the valid ops; whatever loads must run inside the arena (ASan) */
  static const int32_t specials[] = {0, -1, 1, 2, 3, 4, 6, 7, 8, 16, 255, 256, 1 << 20, INT32_MAX,
                                     INT32_MIN, ARENA, ARENA - 1, 2048};
  const struct { int opcode, n; const int32_t *args; uint32_t arena; } ops[] = {
      {NNW_OP_Q8_GEMM, n, g, ARENA}, {NNW_OP_Q8_CONV2D, nc, c, 2048}, {NNW_OP_Q8_QUANTIZE, 8, q, ARENA},
      {NNW_OP_Q8_CONV2D_PK, nc, cp, 2176}, {NNW_OP_Q8_CONV2D_PACK_W, npw, pw, 2176},
      {NNW_OP_Q8_DEQUANTIZE, 8, dq, ARENA}, {NNW_OP_Q8_DYN_QUANTIZE, 5, dyn, ARENA},
      {NNW_OP_Q8_ADD, NNW_Q8_ADD_NARGS, add, ARENA}};
  int loaded = 0, rounds = 0;
  for (int r = 0; r < 3000; r++) {
    int k = (int)(rng_u32() % (sizeof ops / sizeof ops[0]));
    int32_t args[64], words[80];
    memcpy(args, ops[k].args, 4 * (size_t)ops[k].n);
    for (int e = 1 + (int)(rng_u32() % 2); e > 0; e--) {
      int i = (int)(rng_u32() % (uint32_t)ops[k].n);
      args[i] = rng_u32() % 2 ? specials[rng_u32() % (sizeof specials / sizeof specials[0])]
                              : (int32_t)((uint32_t)args[i] + rng_u32() % 9 - 4u);
    }
    int nw = op_words(words, ops[k].opcode, args, ops[k].n);
    struct plan p = plan_build(NULL, 0, words, (uint32_t)nw, ops[k].arena, NULL, 0);
    uint8_t *arena = arena_new(ops[k].arena);
    int status = nnw_plan_load(p.bytes, p.size, arena, ops[k].arena, NULL);
    if (status == NNW_OK) {
      loaded++;
      nnw_plan_run(p.bytes, arena);
    }
    rounds++;
    if (status < NNW_OK || status > NNW_OUT_OF_MEMORY) expect(0, "q8 fuzz: unknown status %d", status);
    free(arena);
    plan_free(&p);
  }
  expect(loaded > 0 && loaded < rounds, "q8 fuzz: %d of %d loaded", loaded, rounds);
}
