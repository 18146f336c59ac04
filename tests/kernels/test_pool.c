/* pool2d (max, average with and without count_include_pad) against a direct reference. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"
#include "tests.h"

struct pool_case {
  int kind, n, c, h, w, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr, cip;
};

static void pool_case(const struct pool_case *t) {
  int ekh = (t->kh - 1) * t->dh + 1, ekw = (t->kw - 1) * t->dw + 1;
  int oh = (t->h + t->pt + t->pb - ekh) / t->sh + 1, ow = (t->w + t->pl + t->pr - ekw) / t->sw + 1;
  size_t xn = (size_t)t->n * t->c * t->h * t->w, yn = (size_t)t->n * t->c * oh * ow;
  float *x = malloc(4 * xn);
  double *want = malloc(8 * yn);
  fill_random(x, xn, -4, 4);
  for (int p = 0; p < t->n * t->c; p++)
    for (int oy = 0; oy < oh; oy++)
      for (int ox = 0; ox < ow; ox++) {
        double acc = t->kind == 0 ? -INFINITY : 0;
        int count = 0;
        for (int ky = 0; ky < t->kh; ky++)
          for (int kx = 0; kx < t->kw; kx++) {
            int iy = oy * t->sh - t->pt + ky * t->dh, ix = ox * t->sw - t->pl + kx * t->dw;
            if (iy < 0 || iy >= t->h || ix < 0 || ix >= t->w) continue;
            double v = x[((size_t)p * t->h + iy) * t->w + ix];
            acc = t->kind == 0 ? fmax(acc, v) : acc + v;
            count++;
          }
        if (t->kind == 1) acc /= t->cip ? t->kh * t->kw : count;
        want[((size_t)p * oh + oy) * ow + ox] = acc;
      }
  char name[128];
  snprintf(name, sizeof name, "pool2d kind%d %dx%d k%dx%d s%d,%d d%d,%d pad%d,%d,%d,%d cip%d",
           t->kind, t->h, t->w, t->kh, t->kw, t->sh, t->sw, t->dh, t->dw, t->pt, t->pl, t->pb,
           t->pr, t->cip);
  for (int order = 0; order < 2; order++) {
    uint64_t bytes[2] = {4 * xn, 4 * yn};
    int32_t off[2];
    uint32_t arena_bytes = layout(bytes, 2, order, off);
    uint8_t *arena = arena_new(arena_bytes);
    memcpy(at(arena, off[0]), x, 4 * xn);
    int32_t args[NNW_POOL2D_NARGS] = {t->kind, off[0], off[1], t->n, t->c, t->h, t->w, oh, ow,
                                      t->kh, t->kw, t->sh, t->sw, t->dh, t->dw, t->pt, t->pl,
                                      t->cip};
    if (run_op(NNW_OP_POOL2D, args, NNW_POOL2D_NARGS, arena, arena_bytes) == NNW_OK)
      check_close(name, at(arena, off[1]), want, NULL, yn, 1e-6, 1e-6);
    free(arena);
  }
  free(x);
  free(want);
}

void test_pool2d(void) {
  static const struct pool_case cases[] = {
      /* kind n c h w kh kw sh sw dh dw pt pl pb pr cip */
      {0, 1, 2, 8, 8, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0, 0},
      {0, 2, 3, 9, 7, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0},
      {0, 1, 2, 10, 11, 3, 2, 1, 2, 2, 3, 2, 1, 2, 3, 0},
      {1, 1, 2, 9, 7, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0},
      {1, 1, 2, 9, 7, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1},
      {1, 2, 1, 7, 7, 7, 7, 1, 1, 1, 1, 0, 0, 0, 0, 0},
      {1, 1, 3, 6, 5, 2, 3, 1, 1, 1, 1, 1, 2, 0, 1, 0},
      {1, 1, 3, 6, 5, 2, 3, 1, 1, 1, 1, 1, 2, 0, 1, 1},
      {0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0},
      {1, 1, 2, 5, 5, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 0},
      /* SqueezeNet's 3x3/2 with ceil_mode (the last window hangs over), ResNet's padded one */
      {0, 1, 3, 111, 111, 3, 3, 2, 2, 1, 1, 0, 0, 1, 1, 0},
      {0, 1, 2, 112, 112, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0},
      {0, 1, 2, 5, 37, 3, 5, 1, 3, 1, 2, 1, 4, 2, 3, 0},
      /* rows too wide for max_plane's buffer: the generic path */
      {0, 1, 1, 2, 2100, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) pool_case(&cases[i]);
  for (int r = 0; r < 40; r++) {
    struct pool_case t;
    t.kind = (int)(rng_u32() % 2);
    t.n = 1 + (int)(rng_u32() % 2);
    t.c = 1 + (int)(rng_u32() % 3);
    t.kh = 1 + (int)(rng_u32() % 4);
    t.kw = 1 + (int)(rng_u32() % 4);
    t.sh = 1 + (int)(rng_u32() % 3);
    t.sw = 1 + (int)(rng_u32() % 3);
    t.dh = t.kind == 0 ? 1 + (int)(rng_u32() % 2) : 1;
    t.dw = t.kind == 0 ? 1 + (int)(rng_u32() % 2) : 1;
    t.pt = (int)(rng_u32() % (unsigned)t.kh);
    t.pl = (int)(rng_u32() % (unsigned)t.kw);
    t.pb = (int)(rng_u32() % (unsigned)t.kh);
    t.pr = (int)(rng_u32() % (unsigned)t.kw);
    t.h = (t.kh - 1) * t.dh + 1 + (int)(rng_u32() % 9);
    t.w = (t.kw - 1) * t.dw + 1 + (int)(rng_u32() % 9);
    t.cip = (int)(rng_u32() % 2);
    pool_case(&t);
  }
}
