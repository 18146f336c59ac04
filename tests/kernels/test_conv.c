/* conv2d against a direct double-precision reference, over every algorithm path. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../kernels_c/conv/conv2d.h"
#include "harness.h"
#include "tests.h"

struct conv_case {
  int n, c, h, w, m, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr, group, bias;
  float lo, hi;
};

static void ref_conv(const struct conv_case *t, int oh, int ow, const float *x, const float *wt,
                     const float *b, double *y, double *mag) {
  int cg = t->c / t->group, mg = t->m / t->group;
  for (int ni = 0; ni < t->n; ni++)
    for (int o = 0; o < t->m; o++) {
      int g = o / mg;
      for (int oy = 0; oy < oh; oy++)
        for (int ox = 0; ox < ow; ox++) {
          double s = t->bias ? b[o] : 0.0, a = fabs(s);
          for (int ci = 0; ci < cg; ci++)
            for (int ky = 0; ky < t->kh; ky++)
              for (int kx = 0; kx < t->kw; kx++) {
                int iy = oy * t->sh - t->pt + ky * t->dh, ix = ox * t->sw - t->pl + kx * t->dw;
                if (iy < 0 || iy >= t->h || ix < 0 || ix >= t->w) continue;
                double v = (double)x[((ni * t->c + g * cg + ci) * t->h + iy) * t->w + ix] *
                           wt[((o * cg + ci) * t->kh + ky) * t->kw + kx];
                s += v;
                a += fabs(v);
              }
          s = s < t->lo ? t->lo : s > t->hi ? t->hi : s;
          size_t i = ((size_t)(ni * t->m + o) * oh + oy) * ow + ox;
          y[i] = s;
          mag[i] = a;
        }
    }
}

static const char *algo_name(int32_t scratch, const struct conv_case *t, int oh, int ow) {
  if (t->group == t->c && t->m % t->c == 0)
    return nnw_conv2d_dw_c4_fits(t->c, t->m, t->kh, t->kw, ow, t->sh, t->sw, t->dh, t->dw)
               ? "depthwise-c4"
               : "depthwise";
  if (nnw_conv2d_winograd_fits(t->c, t->m, t->group, t->kh, t->kw, oh, ow, t->sh, t->sw, t->dh,
                               t->dw))
    return "winograd";
  return scratch == 0 ? "pointwise" : "im2col";
}

static void conv_case(const struct conv_case *t) {
  int ekh = (t->kh - 1) * t->dh + 1, ekw = (t->kw - 1) * t->dw + 1;
  int oh = (t->h + t->pt + t->pb - ekh) / t->sh + 1, ow = (t->w + t->pl + t->pr - ekw) / t->sw + 1;
  int32_t scratch = nnw_conv2d_scratch_bytes(t->c, t->m, t->group, t->kh, t->kw, oh, ow, t->sh,
                                             t->sw, t->dh, t->dw, t->pt, t->pl, t->h, t->w);
  char name[160];
  snprintf(name, sizeof name,
           "conv2d %s n%d c%d %dx%d m%d k%dx%d s%d,%d d%d,%d pad%d,%d,%d,%d g%d bias%d [%g,%g]",
           algo_name(scratch, t, oh, ow), t->n, t->c, t->h, t->w, t->m, t->kh, t->kw, t->sh, t->sw, t->dh,
           t->dw, t->pt, t->pl, t->pb, t->pr, t->group, t->bias, t->lo, t->hi);
  if (!expect(scratch >= 0, "%s: scratch query %d", name, scratch)) return;
  size_t xn = (size_t)t->n * t->c * t->h * t->w, wn = (size_t)t->m * (t->c / t->group) * t->kh * t->kw;
  size_t yn = (size_t)t->n * t->m * oh * ow;
  float *x = malloc(4 * xn), *wt = malloc(4 * wn), *b = malloc(4 * (size_t)t->m);
  double *want = malloc(8 * yn), *mag = malloc(8 * yn);
  fill_random(x, xn, -1, 1);
  fill_random(wt, wn, -1, 1);
  fill_random(b, (size_t)t->m, -1, 1);
  ref_conv(t, oh, ow, x, wt, b, want, mag);
  for (int order = 0; order < 2; order++) {
    uint64_t bytes[5] = {4 * xn, 4 * wn, 4 * (uint64_t)t->m, 4 * yn, (uint64_t)scratch};
    int32_t off[5];
    uint32_t arena_bytes = layout(bytes, 5, order, off);
    uint8_t *arena = arena_new(arena_bytes);
    memcpy(at(arena, off[0]), x, 4 * xn);
    memcpy(at(arena, off[1]), wt, 4 * wn);
    memcpy(at(arena, off[2]), b, 4 * (size_t)t->m);
    int32_t args[NNW_CONV2D_NARGS] = {
        off[0], off[1], t->bias ? off[2] : -1, off[3], scratch ? off[4] : -1,
        t->n, t->c, t->h, t->w, t->m, oh, ow, t->kh, t->kw, t->sh, t->sw, t->dh, t->dw, t->pt,
        t->pl, t->group, f32_bits(t->lo), f32_bits(t->hi)};
    if (run_op(NNW_OP_CONV2D, args, NNW_CONV2D_NARGS, arena, arena_bytes) == NNW_OK)
      /* Winograd's transforms round more: 2e-5 of the sum of |terms| (measured up to 2e-6) */
      check_close(name, at(arena, off[3]), want, mag, yn, 1e-6,
                  strcmp(algo_name(scratch, t, oh, ow), "winograd") ? 1e-6 : 2e-5);
    if (nnw_host_hints == 0) {
      /* wasmtime's variants (all host hints: depthwise rows rolled, GEMMs packed): the same bits */
      float *first = malloc(4 * yn);
      memcpy(first, at(arena, off[3]), 4 * yn);
      nnw_host_hints = NNW_HINT_SPLAT_BY_SHUFFLE | NNW_HINT_HOISTS_LOADS;
      if (run_op(NNW_OP_CONV2D, args, NNW_CONV2D_NARGS, arena, arena_bytes) == NNW_OK)
        expect(memcmp(first, at(arena, off[3]), 4 * yn) == 0, "%s: host hints changed the result", name);
      nnw_host_hints = 0;
      free(first);
    }
    free(arena);
  }
  free(x);
  free(wt);
  free(b);
  free(want);
  free(mag);
}

void test_conv2d(void) {
  const float I = INFINITY;
  static const struct conv_case cases[] = {
      /* n  c   h   w   m kh kw sh sw dh dw pt pl pb pr  g bias lo hi */
      /* pointwise: GEMM straight over the input */
      {1, 16, 7, 7, 24, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, -I, I},
      {2, 5, 3, 5, 7, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 6},
      {1, 3, 1, 3, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 0, -I, I},
      {1, 32, 12, 12, 19, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, I},
      {1, 8, 5, 9, 12, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 4, 1, -I, I},
      {1, 96, 14, 14, 24, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, -I, I},
      /* depthwise, multiplier 1 and 2, 3x3 / 5x5 / 7x7 / odd kernels, strides, dilations */
      {1, 8, 9, 9, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 8, 1, 0, 6},
      {2, 3, 10, 11, 3, 3, 3, 2, 2, 1, 1, 0, 0, 1, 1, 3, 1, -I, I},
      {1, 4, 13, 17, 4, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, 4, 1, -I, I},
      {1, 4, 14, 15, 4, 5, 5, 2, 2, 1, 1, 1, 2, 2, 1, 4, 0, 0, 6},
      {1, 2, 9, 9, 4, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 2, 1, -I, I},
      {1, 3, 11, 12, 3, 7, 7, 1, 1, 1, 1, 3, 3, 3, 3, 3, 1, -I, I},
      {1, 2, 8, 10, 2, 3, 2, 3, 2, 1, 2, 1, 0, 1, 1, 2, 1, -I, I},
      {1, 2, 5, 3, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1, -I, I},
      {1, 2, 4, 2, 2, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 2, 1, -I, I},
      {1, 1, 9, 10, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -I, I},
      {1, 3, 6, 6, 3, 3, 3, 1, 1, 1, 1, 3, 4, 3, 2, 3, 1, -I, I},
      {1, 2, 6, 9, 2, 2, 9, 1, 3, 1, 1, 0, 4, 1, 4, 2, 1, -I, I},
      {1, 2, 12, 12, 2, 9, 9, 1, 1, 1, 1, 4, 4, 4, 4, 2, 1, -I, I},   /* over 64 taps */
      {1, 2, 3, 20, 4, 1, 17, 1, 2, 1, 1, 0, 8, 0, 8, 2, 1, 0, 6},    /* over 16 columns */
      {1, 3, 17, 23, 3, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 3, 1, -I, I},   /* stride-2 rows of 8+ */
      /* depthwise four channels at a time (conv2d_dw_c4.c): c % 4 == 0, m == c, 3x3 / 5x5,
       * strides 1 and 2; rows under 4 wide, odd widths, pads on all sides and past the kernel,
       * inputs cropped by the stride, wide 5x5 rows */
      {1, 8, 7, 7, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 8, 1, 0, 6},
      {2, 4, 14, 14, 4, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, 4, 1, -I, I},
      {1, 8, 9, 13, 8, 5, 5, 2, 2, 1, 1, 1, 2, 2, 1, 8, 0, 0, 6},
      {1, 4, 11, 10, 4, 3, 3, 2, 2, 1, 1, 0, 1, 1, 0, 4, 1, -I, I},
      {1, 4, 3, 3, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 4, 1, -I, I},
      {1, 4, 2, 5, 4, 3, 3, 1, 1, 1, 1, 2, 0, 1, 2, 4, 1, -I, I},
      {1, 4, 10, 10, 4, 3, 3, 2, 2, 1, 1, 0, 0, 0, 0, 4, 1, -I, I},
      {1, 4, 6, 21, 4, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, 4, 1, -I, I},
      {1, 4, 5, 5, 4, 3, 3, 1, 1, 1, 1, 3, 4, 3, 2, 4, 1, -I, I},
      {1, 4, 4, 4, 4, 5, 5, 2, 2, 1, 1, 3, 3, 3, 3, 4, 1, -I, I},
      {1, 12, 3, 2, 12, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 12, 1, -I, I},
      /* the per-row kernels for 3x3 / 5x5 at stride 1 / 2 (dw_plane_k): wide 3x3 stride-1 rows,
       * channels not in fours, multiplier 2; odd widths, rows under 4 wide, asymmetric pads */
      {1, 4, 6, 22, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 4, 1, 0, 6},
      {1, 3, 9, 19, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 3, 1, -I, I},
      {1, 2, 9, 9, 4, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, 2, 1, -I, I},
      {1, 3, 13, 15, 3, 5, 5, 2, 2, 1, 1, 2, 1, 1, 2, 3, 0, 0, 6},
      {1, 5, 8, 3, 5, 3, 3, 2, 2, 1, 1, 1, 0, 0, 1, 5, 1, -I, I},
      {1, 6, 5, 2, 6, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, 6, 1, -I, I},
      {2, 3, 12, 17, 6, 3, 3, 2, 2, 1, 1, 1, 1, 0, 0, 3, 1, -I, I},
      /* rows of 12 and more outputs at every kernel and stride (the rolled variant's 3-vector
       * pass, then 8, 4 and the overlapping tail) */
      {1, 3, 9, 30, 3, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 3, 1, -I, I},
      {1, 2, 7, 26, 2, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, 2, 1, 0, 6},
      {1, 2, 8, 57, 4, 5, 5, 2, 2, 1, 1, 2, 2, 2, 2, 2, 1, -I, I},
      {1, 3, 5, 47, 3, 3, 3, 1, 1, 1, 1, 0, 1, 2, 0, 3, 1, -I, I},
      /* im2col: stride-2 stem, groups, dilations, asymmetric pads, 1x1 with stride or crop */
      {1, 3, 16, 16, 8, 3, 3, 2, 2, 1, 1, 0, 0, 1, 1, 1, 1, 0, 6},
      {1, 3, 23, 21, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 0, 6}, /* odd widths, vector gather */
      {2, 4, 9, 7, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1, -I, I},
      {1, 6, 10, 10, 9, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 3, 0, -I, I},
      {1, 5, 11, 8, 7, 3, 2, 2, 1, 1, 3, 1, 0, 0, 2, 1, 1, -1, 1},
      {1, 8, 9, 9, 16, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0, 1, 1, -I, I},
      {1, 4, 6, 6, 5, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -I, I},
      {1, 4, 5, 5, 6, 5, 5, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, -I, I},
      {1, 2, 3, 3, 3, 3, 3, 1, 1, 1, 1, 3, 3, 3, 3, 1, 1, -I, I},
      {1, 1, 7, 5, 1, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, -I, I},
      {1, 6, 5, 7, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1, -I, I},
      /* Winograd F(4x4, 3x3): 3x3 stride 1, c and m in fours, outputs 27x27 and up; sizes not
       * multiples of 4 (partial tiles), no pads, asymmetric pads, crops, batch 2, clamps */
      {1, 4, 27, 27, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -I, I},
      {2, 8, 30, 29, 12, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 6},
      {1, 16, 28, 31, 8, 3, 3, 1, 1, 1, 1, 2, 0, 1, 2, 1, 0, -1, 1},
      {1, 4, 40, 28, 4, 3, 3, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, -I, I},
      {1, 64, 32, 32, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, I},
      {1, 4, 30, 31, 4, 3, 3, 1, 1, 1, 1, 0, 0, -1, -2, 1, 1, -I, I},
      /* im2col's GEMM in chunks along k (a weight matrix over 512 KB, few pixels): 8 chunks, and
       * 3 with groups and stride 2; large pointwise ones (not chunked) */
      {1, 512, 7, 7, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 6},
      {2, 2048, 7, 7, 64, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, -I, I},
      {1, 1536, 5, 9, 96, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 0, 0, I},
      {1, 1024, 6, 6, 192, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 2, 1, -I, I},
      /* im2col in bands of output rows (columns over 1 MB, small weights): a 7x7/2 stem, 50
       * rows in bands of 4 and a last one of 2; batch 2 with groups, bands of 74 rows of 3 */
      {1, 3, 100, 100, 8, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3, 1, 1, 0, I},
      {2, 6, 700, 3, 4, 7, 7, 1, 1, 1, 1, 3, 3, 3, 3, 2, 1, -I, I},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) conv_case(&cases[i]);
  /* random shapes */
  for (int r = 0; r < 60; r++) {
    struct conv_case t;
    t.n = 1 + (int)(rng_u32() % 2);
    t.group = 1 + (int)(rng_u32() % 3);
    int dw = rng_u32() % 3 == 0;
    t.c = t.group * (1 + (int)(rng_u32() % 4));
    if (dw) t.group = t.c;
    t.m = t.group * (1 + (int)(rng_u32() % 5));
    t.kh = 1 + (int)(rng_u32() % 5);
    t.kw = 1 + (int)(rng_u32() % 5);
    t.sh = 1 + (int)(rng_u32() % 3);
    t.sw = 1 + (int)(rng_u32() % 3);
    t.dh = 1 + (int)(rng_u32() % 2);
    t.dw = 1 + (int)(rng_u32() % 2);
    t.pt = (int)(rng_u32() % 3);
    t.pl = (int)(rng_u32() % 3);
    t.pb = (int)(rng_u32() % 3);
    t.pr = (int)(rng_u32() % 3);
    t.h = (t.kh - 1) * t.dh + 1 + (int)(rng_u32() % 12);
    t.w = (t.kw - 1) * t.dw + 1 + (int)(rng_u32() % 12);
    t.bias = (int)(rng_u32() % 2);
    t.lo = rng_u32() % 2 ? 0.0f : -INFINITY;
    t.hi = rng_u32() % 2 ? 1.0f : INFINITY;
    conv_case(&t);
  }
}
