/* conv_transpose2d and recurrent against direct double-precision references, and both under
 * hostile arguments: single patched words that must be refused, then random mutations that
 * must either be refused or run inside the arena (ASan watches). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "tests.h"

/* status of loading (and, if it loads, running) a one-op plan; no expectation recorded */
static int try_op(int opcode, const int32_t *args, int n_args, uint32_t arena_bytes) {
  int32_t words[128];
  int n = op_words(words, opcode, args, n_args);
  struct plan p = plan_build(NULL, 0, words, (uint32_t)n, arena_bytes, NULL, 0);
  uint8_t *arena = arena_new(arena_bytes);
  int32_t bad_op;
  int status = nnw_plan_load(p.bytes, p.size, arena, arena_bytes, &bad_op);
  if (status == NNW_OK) nnw_plan_run(p.bytes, arena);
  free(arena);
  plan_free(&p);
  return status;
}

/* every patch must give `want`; then random mutations of one to three words must load or be
 * refused with a known status, and run in bounds when they load */
struct patch {
  const char *what;
  int index;
  int32_t value;
  int want;
};

static void hostile(const char *op, int opcode, const int32_t *args, int n_args,
                    uint32_t arena_bytes, const struct patch *patches, int n_patches) {
  int32_t a[64];
  expect(try_op(opcode, args, n_args, arena_bytes) == NNW_OK, "%s: the valid op loads", op);
  for (int i = 0; i < n_patches; i++) {
    memcpy(a, args, 4 * (size_t)n_args);
    a[patches[i].index] = patches[i].value;
    int status = try_op(opcode, a, n_args, arena_bytes);
    expect(status == patches[i].want, "%s, %s: status %d, want %d", op, patches[i].what, status,
           patches[i].want);
  }
  static const int32_t specials[] = {0, -1, 1, 2, 3, 4, 5, 7, 64, 1 << 20, 1 << 30, INT32_MAX,
                                     INT32_MIN, -4, 0x7F800000 /* inf */};
  int loaded = 0;
  for (int r = 0; r < 600; r++) {
    memcpy(a, args, 4 * (size_t)n_args);
    for (int e = 1 + (int)(rng_u32() % 3); e > 0; e--) {
      int i = (int)(rng_u32() % (uint32_t)n_args);
      switch (rng_u32() % 3) {
        case 0: a[i] = specials[rng_u32() % (sizeof specials / sizeof specials[0])]; break;
        case 1: a[i] = (int32_t)((uint32_t)a[i] + (rng_u32() % 9) - 4u); break;
        default: a[i] = (int32_t)rng_u32(); break;
      }
    }
    int status = try_op(opcode, a, n_args, arena_bytes);
    if (status == NNW_OK) loaded++;
    if (status != NNW_OK && status != NNW_BAD_ARGS && status != NNW_OUT_OF_BOUNDS)
      expect(0, "%s fuzz round %d: status %d", op, r, status);
  }
  expect(loaded > 0 && loaded < 600, "%s fuzz: %d of 600 mutated ops loaded", op, loaded);
}

/* ---- conv_transpose2d ---------------------------------------------------------------- */

struct ct_case {
  int n, c, h, w, m, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow, group, bias;
  float lo, hi;
};

static void ref_ct(const struct ct_case *t, const float *x, const float *wt, const float *b,
                   double *y, double *mag) {
  int cg = t->c / t->group, mg = t->m / t->group;
  size_t yn = (size_t)t->n * t->m * t->oh * t->ow;
  for (size_t i = 0; i < yn; i++) y[i] = mag[i] = 0.0;
  for (int ni = 0; ni < t->n; ni++)
    for (int ci = 0; ci < t->c; ci++) {
      int g = ci / cg;
      for (int o = 0; o < mg; o++)
        for (int iy = 0; iy < t->h; iy++)
          for (int ix = 0; ix < t->w; ix++)
            for (int ky = 0; ky < t->kh; ky++)
              for (int kx = 0; kx < t->kw; kx++) {
                int oy = iy * t->sh - t->pt + ky * t->dh, ox = ix * t->sw - t->pl + kx * t->dw;
                if (oy < 0 || oy >= t->oh || ox < 0 || ox >= t->ow) continue;
                double v = (double)x[((ni * t->c + ci) * t->h + iy) * t->w + ix] *
                           wt[((ci * mg + o) * t->kh + ky) * t->kw + kx];
                size_t i = (((size_t)ni * t->m + g * mg + o) * t->oh + oy) * t->ow + ox;
                y[i] += v;
                mag[i] += fabs(v);
              }
    }
  for (int ni = 0; ni < t->n; ni++)
    for (int o = 0; o < t->m; o++)
      for (int k = 0; k < t->oh * t->ow; k++) {
        size_t i = ((size_t)ni * t->m + o) * t->oh * t->ow + k;
        double s = y[i] + (t->bias ? b[o] : 0.0);
        mag[i] += t->bias ? fabs(b[o]) : 0.0;
        y[i] = s < t->lo ? t->lo : s > t->hi ? t->hi : s;
      }
}

static void ct_case(const struct ct_case *t) {
  int32_t scratch = nnw_conv_transpose2d_scratch_bytes(t->c, t->m, t->group, t->kh, t->kw, t->h, t->w);
  char name[200];
  snprintf(name, sizeof name,
           "conv_transpose2d n%d c%d %dx%d m%d k%dx%d s%d,%d d%d,%d pad%d,%d out%dx%d g%d bias%d [%g,%g]",
           t->n, t->c, t->h, t->w, t->m, t->kh, t->kw, t->sh, t->sw, t->dh, t->dw, t->pt, t->pl,
           t->oh, t->ow, t->group, t->bias, t->lo, t->hi);
  if (!expect(scratch > 0, "%s: scratch query %d", name, scratch)) return;
  size_t xn = (size_t)t->n * t->c * t->h * t->w;
  size_t wn = (size_t)t->c * (t->m / t->group) * t->kh * t->kw;
  size_t yn = (size_t)t->n * t->m * t->oh * t->ow;
  float *x = malloc(4 * xn), *wt = malloc(4 * wn), *b = malloc(4 * (size_t)t->m);
  double *want = malloc(8 * yn), *mag = malloc(8 * yn);
  fill_random(x, xn, -1, 1);
  fill_random(wt, wn, -1, 1);
  fill_random(b, (size_t)t->m, -1, 1);
  ref_ct(t, x, wt, b, want, mag);
  for (int order = 0; order < 2; order++) {
    uint64_t bytes[5] = {4 * xn, 4 * wn, 4 * (uint64_t)t->m, 4 * yn, (uint64_t)scratch};
    int32_t off[5];
    uint32_t arena_bytes = layout(bytes, 5, order, off);
    uint8_t *arena = arena_new(arena_bytes);
    memcpy(at(arena, off[0]), x, 4 * xn);
    memcpy(at(arena, off[1]), wt, 4 * wn);
    memcpy(at(arena, off[2]), b, 4 * (size_t)t->m);
    int32_t args[NNW_CONV_TRANSPOSE2D_NARGS] = {
        off[0], off[1], t->bias ? off[2] : -1, off[3], off[4], t->n, t->c, t->h, t->w, t->m,
        t->oh, t->ow, t->kh, t->kw, t->sh, t->sw, t->dh, t->dw, t->pt, t->pl, t->group,
        f32_bits(t->lo), f32_bits(t->hi)};
    if (run_op(NNW_OP_CONV_TRANSPOSE2D, args, NNW_CONV_TRANSPOSE2D_NARGS, arena, arena_bytes) == NNW_OK)
      check_close(name, at(arena, off[3]), want, mag, yn, 1e-6, 1e-6);
    free(arena);
  }
  free(x);
  free(wt);
  free(b);
  free(want);
  free(mag);
}

static void ct_hostile(void) {
  /* n1 c4 5x5 m6 k3x3 s2 d1 pad1 -> 9x9, group 2: x 400, w 432, b 24, y 1944, scratch 3132 bytes */
  enum { X = 0, W = 400, B = 832, Y = 864, S = 2816, ARENA = 5948 };
  const int32_t args[NNW_CONV_TRANSPOSE2D_NARGS] = {
      X, W, B, Y, S, 1, 4, 5, 5, 6, 9, 9, 3, 3, 2, 2, 1, 1, 1, 1, 2, f32_bits(0), f32_bits(INFINITY)};
  expect(nnw_conv_transpose2d_scratch_bytes(4, 6, 2, 3, 3, 5, 5) == 3132, "conv_transpose2d scratch");
  const struct patch patches[] = {
      {"x past the arena", NNW_CONV_TRANSPOSE2D_X, ARENA - 8, NNW_OUT_OF_BOUNDS},
      {"x absent", NNW_CONV_TRANSPOSE2D_X, -1, NNW_OUT_OF_BOUNDS},
      {"x misaligned", NNW_CONV_TRANSPOSE2D_X, 2, NNW_BAD_ARGS},
      {"weight past the arena", NNW_CONV_TRANSPOSE2D_WEIGHT, ARENA - 100, NNW_OUT_OF_BOUNDS},
      {"bias past the arena", NNW_CONV_TRANSPOSE2D_B, ARENA - 8, NNW_OUT_OF_BOUNDS},
      {"y past the arena", NNW_CONV_TRANSPOSE2D_Y, ARENA - 1000, NNW_OUT_OF_BOUNDS},
      {"scratch absent", NNW_CONV_TRANSPOSE2D_SCRATCH, -1, NNW_OUT_OF_BOUNDS},
      {"scratch too small", NNW_CONV_TRANSPOSE2D_SCRATCH, ARENA - 3128, NNW_OUT_OF_BOUNDS},
      {"y over x", NNW_CONV_TRANSPOSE2D_Y, X + 16, NNW_BAD_ARGS},
      {"scratch over y", NNW_CONV_TRANSPOSE2D_SCRATCH, Y + 4, NNW_BAD_ARGS},
      {"scratch over the weight", NNW_CONV_TRANSPOSE2D_SCRATCH, W, NNW_BAD_ARGS},
      {"group not dividing c", NNW_CONV_TRANSPOSE2D_GROUP, 3, NNW_BAD_ARGS},
      {"group 0", NNW_CONV_TRANSPOSE2D_GROUP, 0, NNW_BAD_ARGS},
      {"n 0", NNW_CONV_TRANSPOSE2D_N, 0, NNW_BAD_ARGS},
      {"c negative", NNW_CONV_TRANSPOSE2D_C, -4, NNW_BAD_ARGS},
      {"stride 0", NNW_CONV_TRANSPOSE2D_SH, 0, NNW_BAD_ARGS},
      {"dilation negative", NNW_CONV_TRANSPOSE2D_DW, -1, NNW_BAD_ARGS},
      {"oh 0", NNW_CONV_TRANSPOSE2D_OH, 0, NNW_BAD_ARGS},
      {"huge oh", NNW_CONV_TRANSPOSE2D_OH, INT32_MAX, NNW_BAD_ARGS},
      {"huge pad", NNW_CONV_TRANSPOSE2D_PT, INT32_MAX, NNW_BAD_ARGS},
      {"most negative pad", NNW_CONV_TRANSPOSE2D_PL, INT32_MIN, NNW_BAD_ARGS},
      {"huge stride", NNW_CONV_TRANSPOSE2D_SW, 1 << 30, NNW_BAD_ARGS},
      {"huge m", NNW_CONV_TRANSPOSE2D_M, 1 << 30, NNW_BAD_ARGS},
      {"act_min NaN", NNW_CONV_TRANSPOSE2D_ACT_MIN, 0x7FC00000, NNW_BAD_ARGS},
      {"act_min above act_max", NNW_CONV_TRANSPOSE2D_ACT_MAX, f32_bits(-1.0f), NNW_BAD_ARGS},
  };
  hostile("conv_transpose2d", NNW_OP_CONV_TRANSPOSE2D, args, NNW_CONV_TRANSPOSE2D_NARGS, ARENA,
          patches, (int)(sizeof patches / sizeof patches[0]));
}

void test_conv_transpose2d(void) {
  const float I = INFINITY;
  static const struct ct_case cases[] = {
      /* n  c  h  w  m kh kw sh sw dh dw pt pl oh ow  g bias lo hi */
      {1, 8, 6, 7, 4, 2, 2, 2, 2, 1, 1, 0, 0, 12, 14, 1, 1, -I, I}, /* U-Net up, k2 s2 */
      {1, 6, 5, 5, 3, 4, 4, 2, 2, 1, 1, 1, 1, 10, 10, 1, 1, 0, I},  /* k4 s2 p1 */
      {2, 3, 5, 6, 4, 3, 3, 1, 1, 1, 1, 1, 1, 5, 6, 1, 0, -I, I},
      {1, 4, 5, 5, 6, 3, 3, 2, 2, 1, 1, 0, 0, 11, 11, 2, 1, -1, 1}, /* groups */
      {1, 3, 4, 5, 3, 3, 3, 2, 1, 1, 1, 0, 0, 9, 7, 3, 1, -I, I},   /* depthwise */
      {1, 2, 5, 4, 3, 3, 2, 1, 1, 2, 3, 1, 0, 7, 7, 1, 1, -I, I},   /* dilations */
      {1, 3, 4, 5, 2, 3, 3, 2, 3, 1, 1, 0, 0, 10, 15, 1, 1, -I, I}, /* output_padding */
      {1, 2, 4, 4, 3, 3, 3, 2, 2, 1, 1, -1, -2, 12, 13, 1, 1, -I, I}, /* output past the taps */
      {1, 2, 3, 3, 2, 3, 3, 3, 3, 1, 1, 4, 5, 3, 2, 1, 1, -I, I},   /* a window inside */
      {1, 4, 1, 10, 3, 1, 3, 1, 2, 1, 1, 0, 1, 1, 20, 1, 1, -I, I}, /* 1-D */
      {1, 5, 3, 3, 7, 1, 1, 1, 1, 1, 1, 0, 0, 3, 3, 1, 0, -I, I},   /* 1x1 */
      {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, -I, I},
      {1, 32, 9, 9, 16, 2, 2, 2, 2, 1, 1, 0, 0, 18, 18, 1, 1, 0, 6}, /* many channels */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) ct_case(&cases[i]);
  for (int r = 0; r < 40; r++) {
    struct ct_case t;
    t.n = 1 + (int)(rng_u32() % 2);
    t.group = 1 + (int)(rng_u32() % 3);
    t.c = t.group * (1 + (int)(rng_u32() % 3));
    t.m = t.group * (1 + (int)(rng_u32() % 3));
    t.h = 1 + (int)(rng_u32() % 6);
    t.w = 1 + (int)(rng_u32() % 6);
    t.kh = 1 + (int)(rng_u32() % 4);
    t.kw = 1 + (int)(rng_u32() % 4);
    t.sh = 1 + (int)(rng_u32() % 3);
    t.sw = 1 + (int)(rng_u32() % 3);
    t.dh = 1 + (int)(rng_u32() % 2);
    t.dw = 1 + (int)(rng_u32() % 2);
    t.pt = (int)(rng_u32() % 5) - 2;
    t.pl = (int)(rng_u32() % 5) - 2;
    t.oh = 1 + (int)(rng_u32() % 16);
    t.ow = 1 + (int)(rng_u32() % 16);
    t.bias = (int)(rng_u32() % 2);
    t.lo = rng_u32() % 2 ? 0.0f : -INFINITY;
    t.hi = rng_u32() % 2 ? 1.0f : INFINITY;
    ct_case(&t);
  }
  ct_hostile();
}

/* ---- recurrent ------------------------------------------------------------------------- */

enum { RNN, GRU, GRU_LBR, LSTM, LSTM_COUPLED };

struct rec_case {
  int kind, seq, batch, input, hidden, reverse, batchwise, bias, peep, init, clip_on;
};

static double sig(double v) { return 1.0 / (1.0 + exp(-v)); }

/* y[t][bt][u], yh/yc[bt][u] in double; x given as [t][bt][i] dense */
static void ref_rec(const struct rec_case *t, const float *x, const float *w, const float *r,
                    const float *b, const float *p, const float *h0, const float *c0, double clip,
                    double *y, double *yh, double *yc) {
  int hid = t->hidden, g = t->kind == RNN ? 1 : t->kind <= GRU_LBR ? 3 : 4, gh = g * hid;
  double *h = calloc((size_t)t->batch * hid, 8), *c = calloc((size_t)t->batch * hid, 8);
  double *a = malloc(8 * (size_t)gh), *hr = malloc(8 * (size_t)gh), *hn = malloc(8 * (size_t)hid);
  for (int i = 0; i < t->batch * hid; i++) {
    h[i] = h0 ? h0[i] : 0.0;
    c[i] = c0 ? c0[i] : 0.0;
  }
#define CLIP(v) ((v) < -clip ? -clip : (v) > clip ? clip : (v))
  for (int s = 0; s < t->seq; s++) {
    int tt = t->reverse ? t->seq - 1 - s : s;
    for (int bt = 0; bt < t->batch; bt++) {
      const float *xr = x + ((size_t)tt * t->batch + bt) * t->input;
      double *hb = h + (size_t)bt * hid, *cb = c + (size_t)bt * hid;
      for (int j = 0; j < gh; j++) {
        double sx = b ? b[j] : 0.0, sh = b ? b[gh + j] : 0.0;
        for (int k = 0; k < t->input; k++) sx += (double)w[(size_t)j * t->input + k] * xr[k];
        for (int k = 0; k < hid; k++) sh += (double)r[(size_t)j * hid + k] * hb[k];
        a[j] = sx;
        hr[j] = sh;
      }
      for (int u = 0; u < hid; u++) {
        if (t->kind == RNN) {
          hn[u] = tanh(CLIP(a[u] + hr[u]));
        } else if (t->kind == GRU || t->kind == GRU_LBR) {
          double z = sig(CLIP(a[u] + hr[u])), rr = sig(CLIP(a[hid + u] + hr[hid + u])), pre;
          if (t->kind == GRU_LBR) {
            pre = a[2 * hid + u] + rr * hr[2 * hid + u];
          } else {
            pre = a[2 * hid + u] + (b ? b[gh + 2 * hid + u] : 0.0);
            for (int k = 0; k < hid; k++) {
              double rk = sig(CLIP(a[hid + k] + hr[hid + k]));
              pre += (double)r[(size_t)(2 * hid + u) * hid + k] * rk * hb[k];
            }
          }
          double hh = tanh(CLIP(pre));
          hn[u] = (1 - z) * hh + z * hb[u];
        } else {
          double pi = p ? p[u] : 0, po = p ? p[hid + u] : 0, pf = p ? p[2 * hid + u] : 0;
          double i = sig(CLIP(a[u] + hr[u] + pi * cb[u]));
          double f = t->kind == LSTM_COUPLED ? 1 - i : sig(CLIP(a[2 * hid + u] + hr[2 * hid + u] + pf * cb[u]));
          double cn = f * cb[u] + i * tanh(CLIP(a[3 * hid + u] + hr[3 * hid + u]));
          double o = sig(CLIP(a[hid + u] + hr[hid + u] + po * cn));
          cb[u] = cn;
          hn[u] = o * tanh(cn);
        }
      }
      memcpy(hb, hn, 8 * (size_t)hid);
      for (int u = 0; u < hid; u++) y[((size_t)tt * t->batch + bt) * hid + u] = hb[u];
    }
  }
#undef CLIP
  memcpy(yh, h, 8 * (size_t)t->batch * hid);
  memcpy(yc, c, 8 * (size_t)t->batch * hid);
  free(h);
  free(c);
  free(a);
  free(hr);
  free(hn);
}

static void rec_case(const struct rec_case *t) {
  int g = t->kind == RNN ? 1 : t->kind <= GRU_LBR ? 3 : 4, hid = t->hidden, lstm = t->kind >= LSTM;
  int32_t scratch = nnw_recurrent_scratch_bytes(t->kind, t->seq, t->batch, t->input, hid);
  char name[200];
  snprintf(name, sizeof name, "recurrent kind%d seq%d batch%d in%d hid%d rev%d batchwise%d bias%d peep%d init%d clip%d",
           t->kind, t->seq, t->batch, t->input, hid, t->reverse, t->batchwise, t->bias, t->peep,
           t->init, t->clip_on);
  if (!expect(scratch > 0, "%s: scratch query %d", name, scratch)) return;
  size_t xn = (size_t)t->seq * t->batch * t->input, wn = (size_t)g * hid * t->input;
  size_t rn = (size_t)g * hid * hid, bn = 2 * (size_t)g * hid, pn = 3 * (size_t)hid;
  size_t sn = (size_t)t->batch * hid, yn = (size_t)t->seq * sn;
  float *x = malloc(4 * xn), *w = malloc(4 * wn), *r = malloc(4 * rn), *b = malloc(4 * bn);
  float *p = malloc(4 * pn), *h0 = malloc(4 * sn), *c0 = malloc(4 * sn);
  double *y = malloc(8 * yn), *yh = malloc(8 * sn), *yc = malloc(8 * sn);
  fill_random(x, xn, -1, 1);
  fill_random(w, wn, -0.7f, 0.7f);
  fill_random(r, rn, -0.7f, 0.7f);
  fill_random(b, bn, -0.5f, 0.5f);
  fill_random(p, pn, -0.5f, 0.5f);
  fill_random(h0, sn, -1, 1);
  fill_random(c0, sn, -1, 1);
  double clip = t->clip_on ? 0.6 : INFINITY;
  ref_rec(t, x, w, r, t->bias ? b : NULL, t->peep && lstm ? p : NULL, t->init ? h0 : NULL,
          t->init && lstm ? c0 : NULL, clip, y, yh, yc);
  /* batchwise: x [batch][seq][in], y [batch][seq][hid], states [batch][hid] (one direction) */
  int32_t x_ts = t->batchwise ? t->input : t->batch * t->input;
  int32_t x_bs = t->batchwise ? t->seq * t->input : t->input;
  int32_t y_ts = t->batchwise ? hid : t->batch * hid, y_bs = t->batchwise ? t->seq * hid : hid;
  float *xl = malloc(4 * xn);
  for (int tt = 0; tt < t->seq; tt++)
    for (int bt = 0; bt < t->batch; bt++)
      memcpy(xl + (size_t)tt * x_ts + (size_t)bt * x_bs, x + ((size_t)tt * t->batch + bt) * t->input,
             4 * (size_t)t->input);
  double *yl = malloc(8 * yn);
  for (int tt = 0; tt < t->seq; tt++)
    for (int bt = 0; bt < t->batch; bt++)
      memcpy(yl + (size_t)tt * y_ts + (size_t)bt * y_bs, y + ((size_t)tt * t->batch + bt) * hid,
             8 * (size_t)hid);
  for (int order = 0; order < 2; order++) {
    uint64_t bytes[11] = {4 * xn, 4 * wn, 4 * rn, 4 * bn, 4 * pn, 4 * sn, 4 * sn,
                          4 * yn, 4 * sn, 4 * sn, (uint64_t)scratch};
    int32_t off[11];
    uint32_t arena_bytes = layout(bytes, 11, order, off);
    uint8_t *arena = arena_new(arena_bytes);
    memcpy(at(arena, off[0]), xl, 4 * xn);
    memcpy(at(arena, off[1]), w, 4 * wn);
    memcpy(at(arena, off[2]), r, 4 * rn);
    memcpy(at(arena, off[3]), b, 4 * bn);
    memcpy(at(arena, off[4]), p, 4 * pn);
    memcpy(at(arena, off[5]), h0, 4 * sn);
    memcpy(at(arena, off[6]), c0, 4 * sn);
    int32_t args[NNW_RECURRENT_NARGS] = {
        t->kind, off[0], off[1], off[2], t->bias ? off[3] : -1, t->peep && lstm ? off[4] : -1,
        t->init ? off[5] : -1, t->init && lstm ? off[6] : -1, off[7], off[8], lstm ? off[9] : -1,
        off[10], t->seq, t->batch, t->input, hid, t->reverse, x_ts, x_bs, y_ts, y_bs, hid,
        f32_bits((float)clip)};
    if (run_op(NNW_OP_RECURRENT, args, NNW_RECURRENT_NARGS, arena, arena_bytes) == NNW_OK) {
      check_close(name, at(arena, off[7]), yl, NULL, yn, 2e-6, 2e-5);
      check_close(name, at(arena, off[8]), yh, NULL, sn, 2e-6, 2e-5);
      if (lstm) check_close(name, at(arena, off[9]), yc, NULL, sn, 2e-6, 2e-5);
    }
    free(arena);
  }
  free(x);
  free(xl);
  free(w);
  free(r);
  free(b);
  free(p);
  free(h0);
  free(c0);
  free(y);
  free(yl);
  free(yh);
  free(yc);
}

static void rec_hostile(void) {
  /* LSTM seq3 batch2 in5 hid6: x 120, w 480, r 576, b 192, p 72, h0/c0 48, y 144, yh/yc 48 bytes */
  int32_t scratch = nnw_recurrent_scratch_bytes(LSTM, 3, 2, 5, 6);
  enum { X = 0, W = 128, R = 608, B = 1184, P = 1376, H0 = 1456, C0 = 1504, Y = 1552, YH = 1696,
         YC = 1744, S = 1792 };
  uint32_t arena = S + (uint32_t)scratch;
  const int32_t args[NNW_RECURRENT_NARGS] = {LSTM, X, W, R, B, P, H0, C0, Y, YH, YC, S, 3, 2, 5, 6,
                                             0, 10, 5, 12, 6, 6, f32_bits(INFINITY)};
  expect(scratch > 0 && nnw_recurrent_scratch_bytes(5, 3, 2, 5, 6) == -1 &&
             nnw_recurrent_scratch_bytes(LSTM, 3, 2, 5, 0) == -1 &&
             nnw_recurrent_scratch_bytes(LSTM, 1 << 30, 1 << 30, 5, 6) == -1,
         "recurrent scratch query");
  const struct patch patches[] = {
      {"kind 5", NNW_RECURRENT_KIND, 5, NNW_BAD_ARGS},
      {"kind -1", NNW_RECURRENT_KIND, -1, NNW_BAD_ARGS},
      {"GRU with peepholes and cell state", NNW_RECURRENT_KIND, GRU, NNW_BAD_ARGS},
      {"x absent", NNW_RECURRENT_X, -1, NNW_OUT_OF_BOUNDS},
      {"x misaligned", NNW_RECURRENT_X, 2, NNW_BAD_ARGS},
      {"w absent", NNW_RECURRENT_W, -1, NNW_OUT_OF_BOUNDS},
      {"r past the arena", NNW_RECURRENT_R, (int32_t)arena - 8, NNW_OUT_OF_BOUNDS},
      {"b past the arena", NNW_RECURRENT_B, (int32_t)arena - 8, NNW_OUT_OF_BOUNDS},
      {"p past the arena", NNW_RECURRENT_P, (int32_t)arena - 8, NNW_OUT_OF_BOUNDS},
      {"y past the arena", NNW_RECURRENT_Y, (int32_t)arena - 8, NNW_OUT_OF_BOUNDS},
      {"scratch absent", NNW_RECURRENT_SCRATCH, -1, NNW_OUT_OF_BOUNDS},
      {"scratch too small", NNW_RECURRENT_SCRATCH, S + 4, NNW_OUT_OF_BOUNDS},
      {"y over x", NNW_RECURRENT_Y, X, NNW_BAD_ARGS},
      {"yh over h0", NNW_RECURRENT_YH, H0, NNW_BAD_ARGS},
      {"yc over yh", NNW_RECURRENT_YC, YH + 8, NNW_BAD_ARGS},
      {"scratch over y", NNW_RECURRENT_SCRATCH, Y, NNW_BAD_ARGS},
      {"seq 0", NNW_RECURRENT_SEQ, 0, NNW_BAD_ARGS},
      {"hidden negative", NNW_RECURRENT_HIDDEN, -6, NNW_BAD_ARGS},
      {"huge batch", NNW_RECURRENT_BATCH, 1 << 30, NNW_BAD_ARGS},
      {"reverse 2", NNW_RECURRENT_REVERSE, 2, NNW_BAD_ARGS},
      {"x time stride past the arena", NNW_RECURRENT_X_TS, 1 << 20, NNW_OUT_OF_BOUNDS},
      {"x batch stride negative", NNW_RECURRENT_X_BS, -5, NNW_BAD_ARGS},
      {"y time stride huge", NNW_RECURRENT_Y_TS, INT32_MAX, NNW_OUT_OF_BOUNDS},
      {"state stride huge", NNW_RECURRENT_H_BS, INT32_MAX, NNW_OUT_OF_BOUNDS},
      {"clip 0", NNW_RECURRENT_CLIP, f32_bits(0.0f), NNW_BAD_ARGS},
      {"clip NaN", NNW_RECURRENT_CLIP, 0x7FC00000, NNW_BAD_ARGS},
  };
  hostile("recurrent", NNW_OP_RECURRENT, args, NNW_RECURRENT_NARGS, arena, patches,
          (int)(sizeof patches / sizeof patches[0]));
}

void test_recurrent(void) {
  static const struct rec_case cases[] = {
      /* kind seq batch in hid rev batchwise bias peep init clip */
      {RNN, 4, 3, 5, 6, 0, 0, 1, 0, 1, 0},
      {RNN, 3, 1, 2, 1, 1, 1, 0, 0, 0, 1},
      {GRU, 5, 2, 4, 7, 0, 0, 1, 0, 1, 0},
      {GRU, 4, 3, 3, 4, 1, 1, 0, 0, 0, 1},
      {GRU_LBR, 5, 2, 4, 5, 0, 1, 1, 0, 1, 0},
      {GRU_LBR, 2, 1, 6, 8, 1, 0, 1, 0, 0, 1},
      {LSTM, 5, 3, 4, 6, 0, 0, 1, 1, 1, 0},
      {LSTM, 4, 2, 3, 5, 1, 1, 0, 0, 0, 0},
      {LSTM, 6, 1, 9, 12, 0, 0, 1, 0, 1, 1},
      {LSTM_COUPLED, 3, 2, 4, 3, 0, 0, 1, 1, 1, 0},
      {LSTM_COUPLED, 3, 4, 2, 9, 1, 1, 1, 0, 0, 1},
      {LSTM, 3, 5, 17, 33, 0, 1, 1, 1, 1, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) rec_case(&cases[i]);
  rec_hostile();
}
