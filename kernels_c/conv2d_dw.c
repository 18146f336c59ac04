/* Depthwise conv2d (group == c, m = c * mult), direct.
 *
 * Each input channel is first copied into scratch as a zero-padded plane whose rows are split
 * into sw column phases (phase q holds padded columns q, q+sw, q+2sw, ...). Output column ox,
 * tap kx then reads phase (kx*dw) % sw at index ox + (kx*dw) / sw: consecutive outputs read
 * consecutive floats at any stride, so the inner loop is plain v128 loads with no border tests.
 * Rows are padded to a multiple of 4 outputs plus the kernel reach, so vector loads never leave
 * the scratch. 3x3, 5x5 and 7x7 get their loops unrolled (EfficientNet, MobileNets). */
#include "conv2d.h"
#include "simd.h"

#if defined(__GNUC__)
#define NNW_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define NNW_ALWAYS_INLINE inline
#endif

#define MAX_TAPS 16   /* kernel widths whose tap offsets are precomputed */

struct dw_geom {
  int32_t pw;       /* floats in one phase of a padded row */
  int32_t row;      /* floats in one padded row (sw phases) */
  int32_t ky_step;  /* floats between kernel rows: dh padded rows */
  int32_t oy_step;  /* floats between output rows: sh padded rows */
  int32_t tap[MAX_TAPS];
};

/* first index i >= 0 with i*step >= num (num may be negative) */
static int32_t first_at_least(int32_t num, int32_t step) {
  return num <= 0 ? 0 : (num + step - 1) / step;
}

/* an inline loop: these rows are a few floats long, less than a memcpy call is worth in wasm */
static NNW_ALWAYS_INLINE void copy_floats(float *d, const float *s, int32_t n) {
  int32_t i = 0;
  for (; i + 4 <= n; i += 4) v4_store(d + i, v4_load(s + i));
  for (; i < n; i++) d[i] = s[i];
}

/* Copies one input plane into the inside of the padded, phase-split plane (whose padding is
 * zeroed once per conv: it sits in the same places for every channel). */
static void fill_plane(const struct nnw_conv2d *p, const struct dw_geom *g, int32_t span_h,
                       const float *x, float *dst) {
  int32_t sw = p->sw;
  /* padded rows r in [r0, r1) hold input rows r - pt */
  int32_t r0 = p->pt < span_h ? p->pt : span_h;
  int32_t r1 = p->pt + p->h < span_h ? p->pt + p->h : span_h;
  for (int32_t ph = 0; ph < sw; ph++) {
    /* d[i] is input column i*sw + ph - pl: inside the image for i in [lo, hi) */
    int32_t lo = first_at_least(p->pl - ph, sw), hi = first_at_least(p->w + p->pl - ph, sw);
    if (hi > g->pw) hi = g->pw;
    if (lo > hi) lo = hi;
    int32_t start = lo * sw + ph - p->pl;
    for (int32_t r = r0; r < r1; r++) {
      float *d = dst + (size_t)r * g->row + ph * g->pw;
      const float *src = x + (size_t)(r - p->pt) * p->w;
      int32_t i = lo, at = start;
      if (sw == 1) {
        copy_floats(d + lo, src + at, hi - lo);
        i = hi;
      } else if (sw == 2) {
        for (; i + 4 <= hi && at + 8 <= p->w; i += 4, at += 8)
          v4_store(d + i, v4_even(v4_load(src + at), v4_load(src + at + 4)));
      }
      for (; i < hi; i++, at += sw) d[i] = src[at];
    }
  }
}

static NNW_ALWAYS_INLINE int32_t tap_offset(const struct nnw_conv2d *p, const struct dw_geom *g,
                                            int32_t kx) {
  int32_t reach = kx * p->dw;
  return (reach % p->sw) * g->pw + reach / p->sw;
}

/* nv vectors of outputs from src (the padded rows of output row oy, at column ox). The weights
 * are splatted as they are used: a load32_splat costs what reloading a hoisted splat would. */
static NNW_ALWAYS_INLINE void dw_tile(int nv, int32_t kh, int32_t kw, const struct nnw_conv2d *p,
                                      const struct dw_geom *g, const float *src, const float *w,
                                      v4 bias, v4 *out) {
  v4 acc0 = bias, acc1 = bias;
  for (int32_t ky = 0; ky < kh; ky++, src += g->ky_step, w += kw) {
    for (int32_t kx = 0; kx < kw; kx++) {
      const float *s = src + (kw <= MAX_TAPS ? g->tap[kx] : tap_offset(p, g, kx));
      v4 wv = v4_load1(w + kx);
      acc0 = v4_madd(acc0, wv, v4_load(s));
      if (nv > 1) acc1 = v4_madd(acc1, wv, v4_load(s + 4));
    }
  }
  out[0] = acc0;
  if (nv > 1) out[1] = acc1;
}

/* one output plane; kh and kw are constants after inlining for the common kernels */
static NNW_ALWAYS_INLINE void dw_plane(int32_t kh, int32_t kw, const struct nnw_conv2d *p,
                                       const struct dw_geom *g, const float *padded,
                                       const float *w, float bias, float *y) {
  v4 vb = v4_set1(bias), lo = v4_set1(p->lo), hi = v4_set1(p->hi), out[2];
  int32_t ow = p->ow;
  for (int32_t oy = 0; oy < p->oh; oy++, padded += g->oy_step, y += ow) {
    int32_t ox = 0;
    for (; ox + 8 <= ow; ox += 8) {
      dw_tile(2, kh, kw, p, g, padded + ox, w, vb, out);
      v4_store(y + ox, v4_clamp(out[0], lo, hi));
      v4_store(y + ox + 4, v4_clamp(out[1], lo, hi));
    }
    if (ox + 4 <= ow) {
      dw_tile(1, kh, kw, p, g, padded + ox, w, vb, out);
      v4_store(y + ox, v4_clamp(out[0], lo, hi));
      ox += 4;
    }
    if (ox < ow && ow >= 4) {
      /* recompute the last 4 outputs (same values) rather than mask */
      dw_tile(1, kh, kw, p, g, padded + ow - 4, w, vb, out);
      v4_store(y + ow - 4, v4_clamp(out[0], lo, hi));
    } else if (ox < ow) {
      dw_tile(1, kh, kw, p, g, padded, w, vb, out);
      float tmp[4];
      v4_store(tmp, v4_clamp(out[0], lo, hi));
      for (int32_t i = 0; i < ow; i++) y[i] = tmp[i];
    }
  }
}

void nnw_conv2d_dw(const struct nnw_conv2d *p, const float *x, const float *wt, const float *bias,
                   float *y, float *scratch) {
  struct dw_geom g;
  g.row = (int32_t)nnw_conv2d_dw_row_floats(p->ow, p->kw, p->sw, p->dw);
  g.pw = g.row / p->sw;
  g.ky_step = p->dh * g.row;
  g.oy_step = p->sh * g.row;
  for (int32_t kx = 0; kx < p->kw && kx < MAX_TAPS; kx++) g.tap[kx] = tap_offset(p, &g, kx);
  int32_t span_h = (p->oh - 1) * p->sh + (p->kh - 1) * p->dh + 1;
  int32_t mult = p->m / p->c, taps = p->kh * p->kw;
  size_t hw = (size_t)p->h * p->w, ohw = (size_t)p->oh * p->ow;
  /* the padding is the same for every channel: zeroed once, then only the inside is copied */
  memset(scratch, 0, (size_t)span_h * g.row * sizeof(float));
  for (int32_t pi = 0; pi < p->n * p->c; pi++) {
    fill_plane(p, &g, span_h, x + (size_t)pi * hw, scratch);
    int32_t ni = pi / p->c, ci = pi % p->c;
    for (int32_t j = 0; j < mult; j++) {
      int32_t o = ci * mult + j;
      const float *w = wt + (size_t)o * taps;
      float b = bias ? bias[o] : 0.0f;
      float *yo = y + ((size_t)ni * p->m + o) * ohw;
      if (p->kh == 3 && p->kw == 3) {
        dw_plane(3, 3, p, &g, scratch, w, b, yo);
      } else if (p->kh == 5 && p->kw == 5) {
        dw_plane(5, 5, p, &g, scratch, w, b, yo);
      } else if (p->kh == 7 && p->kw == 7) {
        dw_plane(7, 7, p, &g, scratch, w, b, yo);
      } else {
        dw_plane(p->kh, p->kw, p, &g, scratch, w, b, yo);
      }
    }
  }
}
