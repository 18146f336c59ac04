/* conv2d_winograd_weights (the init op) and conv2d_winograd against a direct double-precision
 * reference: the transform run once at plan load, then the convolution on many shapes (tiles cut
 * by the image's edge, pads and crops, batch 2, no bias, clamps), and hostile arguments. The case
 * runner serves test_conv_winograd_s2.c's stride-2 op too (winograd_cases.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "tests.h"
#include "winograd_cases.h"

static void ref(const struct wg_case *t, int stride, int oh, int ow, const float *x, const float *wt,
                const float *b, double *y, double *mag) {
  for (int ni = 0; ni < t->n; ni++)
    for (int o = 0; o < t->m; o++)
      for (int oy = 0; oy < oh; oy++)
        for (int ox = 0; ox < ow; ox++) {
          double s = t->bias ? b[o] : 0.0, a = fabs(s);
          for (int ci = 0; ci < t->c; ci++)
            for (int ky = 0; ky < 3; ky++)
              for (int kx = 0; kx < 3; kx++) {
                int iy = stride * oy - t->pt + ky, ix = stride * ox - t->pl + kx;
                if (iy < 0 || iy >= t->h || ix < 0 || ix >= t->w) continue;
                double v = (double)x[((ni * t->c + ci) * t->h + iy) * t->w + ix] *
                           wt[((o * t->c + ci) * 3 + ky) * 3 + kx];
                s += v;
                a += fabs(v);
              }
          s = s < t->lo ? t->lo : s > t->hi ? t->hi : s;
          size_t i = ((size_t)(ni * t->m + o) * oh + oy) * ow + ox;
          y[i] = s;
          mag[i] = a;
        }
}

/* Offsets of x, weight, b, u, y, scratch; the init op runs at load from the plan's weights
 * (x, weight, b copied into the arena by nnw_plan_load), the conv as the run op. */
void wg_run_case(const struct wg_case *t, int stride) {
  int oh = (t->h + t->pt + t->pb - 3) / stride + 1, ow = (t->w + t->pl + t->pr - 3) / stride + 1;
  int s2 = stride == 2, points = s2 ? 16 : 36;
  int op = s2 ? NNW_OP_CONV2D_WINOGRAD_S2 : NNW_OP_CONV2D_WINOGRAD;
  int init_op = s2 ? NNW_OP_CONV2D_WINOGRAD_S2_WEIGHTS : NNW_OP_CONV2D_WINOGRAD_WEIGHTS;
  int32_t scratch = s2 ? nnw_conv2d_winograd_s2_scratch_bytes(t->c, t->m, oh, ow)
                       : nnw_conv2d_winograd_scratch_bytes(t->c, t->m, oh, ow);
  char name[160];
  snprintf(name, sizeof name, "conv2d_winograd%s n%d c%d %dx%d m%d pad%d,%d,%d,%d bias%d [%g,%g]",
           s2 ? "_s2" : "", t->n, t->c, t->h, t->w, t->m, t->pt, t->pl, t->pb, t->pr, t->bias, t->lo, t->hi);
  if (!expect(scratch > 0, "%s: scratch query %d", name, scratch)) return;
  size_t xn = (size_t)t->n * t->c * t->h * t->w, wn = (size_t)t->m * t->c * 9;
  size_t un = (size_t)points * t->c * t->m, yn = (size_t)t->n * t->m * oh * ow;
  size_t xb = (4 * xn + 15) / 16 * 16, wb = (4 * wn + 15) / 16 * 16, bb = (4 * (size_t)t->m + 15) / 16 * 16;
  uint32_t weights_bytes = (uint32_t)(xb + wb + bb);
  uint8_t *weights = calloc(1, weights_bytes);
  float *x = (float *)(void *)weights, *wt = (float *)(void *)(weights + xb);
  float *b = (float *)(void *)(weights + xb + wb);
  fill_random(x, xn, -1, 1);
  fill_random(wt, wn, -1, 1);
  fill_random(b, (size_t)t->m, -1, 1);
  double *want = malloc(8 * yn), *mag = malloc(8 * yn);
  ref(t, stride, oh, ow, x, wt, b, want, mag);
  int32_t u_at = (int32_t)weights_bytes, y_at = u_at + (int32_t)(4 * un);
  int32_t s_at = y_at + (int32_t)(4 * yn);
  uint32_t arena_bytes = (uint32_t)s_at + (uint32_t)scratch; /* the scratch flush with the end */
  int32_t init_args[] = {(int32_t)xb, u_at, t->c, t->m};
  int32_t args[] = {0, u_at, t->bias ? (int32_t)(xb + wb) : -1, y_at, s_at, t->n, t->c, t->h, t->w,
                    t->m, oh, ow, t->pt, t->pl, f32_bits(t->lo), f32_bits(t->hi)};
  int32_t init[8], run[24];
  int ni = op_words(init, init_op, init_args, NNW_CONV2D_WINOGRAD_WEIGHTS_NARGS);
  int nr = op_words(run, op, args, NNW_CONV2D_WINOGRAD_NARGS);
  struct plan p = plan_build(init, (uint32_t)ni, run, (uint32_t)nr, arena_bytes, weights, weights_bytes);
  uint8_t *arena = arena_new(arena_bytes);
  int status = nnw_plan_load(p.bytes, p.size, arena, arena_bytes, NULL);
  if (status == NNW_OK) status = nnw_plan_run(p.bytes, arena);
  if (expect(status == NNW_OK, "%s: status %d", name, status))
    check_close(name, at(arena, y_at), want, mag, yn, 1e-6, 2e-5); /* as conv2d's Winograd */
  free(arena);
  plan_free(&p);
  free(weights);
  free(want);
  free(mag);
}

void wg_run_random_cases(int stride) {
  const float I = INFINITY;
  for (int r = 0; r < 20; r++) {
    struct wg_case t = {1 + (int)(rng_u32() % 2), 4 * (1 + (int)(rng_u32() % 4)),
                        1 + (int)(rng_u32() % 15), 1 + (int)(rng_u32() % 15),
                        4 * (1 + (int)(rng_u32() % 4)), (int)(rng_u32() % 3), (int)(rng_u32() % 3),
                        (int)(rng_u32() % 3), (int)(rng_u32() % 3), (int)(rng_u32() % 2),
                        rng_u32() % 2 ? 0.0f : -I, rng_u32() % 2 ? 1.0f : I};
    if (t.h + t.pt + t.pb < 3 || t.w + t.pl + t.pr < 3) continue;
    wg_run_case(&t, stride);
  }
}

/* The validators both Winograd ops share (conv2d_winograd.c: nnw_conv2d_winograd_check and
 * _check_weights), through op and its weights' init op, whose arguments stand in the same order:
 * what they refuse (channels not in fours, sizes <= 0, pads < 0, overlaps, too little arena for u or
 * the scratch). points: U's C x M matrices; an h x w input (7x7 output), its scratch bytes. */
_Static_assert((int)NNW_CONV2D_WINOGRAD_S2_NARGS == (int)NNW_CONV2D_WINOGRAD_NARGS &&
               (int)NNW_CONV2D_WINOGRAD_S2_C == (int)NNW_CONV2D_WINOGRAD_C &&
               (int)NNW_CONV2D_WINOGRAD_S2_OW == (int)NNW_CONV2D_WINOGRAD_OW &&
               (int)NNW_CONV2D_WINOGRAD_S2_ACT_MAX == (int)NNW_CONV2D_WINOGRAD_ACT_MAX &&
               (int)NNW_CONV2D_WINOGRAD_S2_WEIGHTS_M == (int)NNW_CONV2D_WINOGRAD_WEIGHTS_M,
               "conv2d_winograd and conv2d_winograd_s2 take their arguments in the same order");

void wg_check_validators(int op, int weights_op, int points, int32_t h, int32_t w, int32_t scratch,
                         const char *name) {
  int32_t c = 8, m = 4;
  int32_t x = 0, u = (c * h * w * 4 + 4095) / 4096 * 4096, y = u + points * c * m * 4, s = y + m * 49 * 4;
  uint32_t bytes = (uint32_t)(s + scratch);
  int32_t ok[] = {x, u, -1, y, s, 1, c, h, w, m, 7, 7, 1, 1, f32_bits(0.0f), f32_bits(INFINITY)};
  expect(load_status(op, ok, NNW_CONV2D_WINOGRAD_NARGS, bytes) == NNW_OK, "%s: valid args load", name);
  const struct { int arg; int32_t value; const char *what; } bad[] = {
      {NNW_CONV2D_WINOGRAD_C, 6, "c not in fours"}, {NNW_CONV2D_WINOGRAD_M, 0, "m 0"},
      {NNW_CONV2D_WINOGRAD_N, 0, "n 0"},          {NNW_CONV2D_WINOGRAD_H, -1, "h < 0"},
      {NNW_CONV2D_WINOGRAD_PT, -1, "pt < 0"},     {NNW_CONV2D_WINOGRAD_PL, 1 << 30, "pl huge"},
      {NNW_CONV2D_WINOGRAD_OW, 9, "ow past the scratch"}, {NNW_CONV2D_WINOGRAD_Y, u + 4, "y over u"},
      {NNW_CONV2D_WINOGRAD_SCRATCH, 8, "scratch over x"}, {NNW_CONV2D_WINOGRAD_U, -1, "u absent"},
      {NNW_CONV2D_WINOGRAD_SCRATCH, -1, "scratch absent"},
      {NNW_CONV2D_WINOGRAD_ACT_MIN, 0x7fc00000, "act_min NaN"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int32_t a[NNW_CONV2D_WINOGRAD_NARGS];
    memcpy(a, ok, sizeof a);
    a[bad[i].arg] = bad[i].value;
    expect(load_status(op, a, NNW_CONV2D_WINOGRAD_NARGS, bytes) != NNW_OK, "%s refuses %s", name, bad[i].what);
  }
  int32_t wok[] = {0, 4096, c, m};
  uint32_t wbytes = 4096 + (uint32_t)(points * c * m) * 4;
  expect(load_status(weights_op, wok, 4, wbytes) == NNW_OK, "%s weights: valid", name);
  expect(load_status(weights_op, wok, 4, wbytes - 4) != NNW_OK, "%s weights: u past the arena", name);
  int32_t overlap[] = {0, 64, c, m}, odd[] = {0, 4096, 3, m}, neg[] = {0, 4096, c, -4};
  expect(load_status(weights_op, overlap, 4, wbytes) != NNW_OK, "%s weights: u over the weights", name);
  expect(load_status(weights_op, odd, 4, wbytes) != NNW_OK, "%s weights: c not in fours", name);
  expect(load_status(weights_op, neg, 4, wbytes) != NNW_OK, "%s weights: m < 0", name);
}

/* The scratch query and the choice table refuse what the kernel does not take. */
static void wg_hostile(void) {
  int32_t scratch = nnw_conv2d_winograd_scratch_bytes(8, 4, 7, 7);
  expect(scratch > 0, "winograd scratch query");
  expect(nnw_conv2d_winograd_scratch_bytes(6, 4, 7, 7) == -1, "winograd c % 4 refused");
  expect(nnw_conv2d_winograd_scratch_bytes(4, 4, 0, 7) == -1, "winograd oh 0 refused");
  expect(nnw_conv2d_winograd_scratch_bytes(4, 4, 7, 1 << 30) == -1, "winograd ow huge refused");
  expect(nnw_conv2d_winograd_pays(6, 4, 56, 56) == 0, "winograd pays only where it runs");
  wg_check_validators(NNW_OP_CONV2D_WINOGRAD, NNW_OP_CONV2D_WINOGRAD_WEIGHTS, 36, 7, 7, scratch, "winograd");
}

void test_conv2d_winograd(void) {
  const float I = INFINITY;
  static const struct wg_case cases[] = {
      /* n  c   h   w   m pt pl pb pr bias lo hi */
      {1, 4, 7, 7, 4, 1, 1, 1, 1, 1, 0, I},       /* ResNet-50's 7x7: 2x2 tiles, half empty */
      {1, 16, 14, 14, 8, 1, 1, 1, 1, 1, -I, I},   /* 14x14 */
      {1, 8, 13, 13, 12, 1, 1, 1, 1, 0, 0, 6},    /* SqueezeNet's 13x13 */
      {2, 8, 9, 11, 4, 0, 0, 0, 0, 1, -I, I},     /* no pads, batch 2 */
      {1, 4, 3, 3, 4, 1, 1, 1, 1, 1, -I, I},      /* one partial tile */
      {1, 4, 1, 1, 8, 1, 1, 1, 1, 1, -I, I},      /* 1x1 image */
      {1, 4, 6, 10, 4, 2, 0, 1, 2, 1, -1, 1},     /* asymmetric pads */
      {1, 4, 10, 9, 4, 1, 1, -1, 0, 1, -I, I},    /* bottom crop */
      {1, 12, 5, 17, 16, 0, 2, 2, 0, 1, -I, I},
      {1, 64, 7, 7, 32, 1, 1, 1, 1, 1, 0, I},
      {1, 4, 30, 29, 4, 1, 1, 1, 1, 1, -I, I},    /* many tiles */
      {1, 64, 28, 28, 64, 1, 1, 1, 1, 1, 0, I},   /* tiles in 2 blocks (tile_block) */
      {2, 16, 45, 43, 20, 1, 1, 1, 1, 1, -I, I},  /* 3 blocks, edge tiles, batch 2 */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) wg_run_case(&cases[i], 1);
  wg_run_random_cases(1);
  wg_hostile();
}
