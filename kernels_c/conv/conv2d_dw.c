/* Depthwise conv2d (group == c, m = c * mult), direct.
 *
 * Each input channel is first copied into scratch as a zero-padded plane whose rows are split
 * into sw column phases (phase q holds padded columns q, q+sw, q+2sw, ...). Output column ox,
 * tap kx then reads phase (kx*dw) % sw at index ox + (kx*dw) / sw: consecutive outputs read
 * consecutive floats at any stride, so the inner loop is plain v128 loads with no border tests.
 * Rows are padded to a multiple of 4 outputs plus the kernel reach, so vector loads never leave
 * the scratch. 3x3 and 5x5 at stride 1 or 2 get a kernel of their own (dw_plane_k), 7x7 its
 * loops unrolled. conv2d_dw_c4.c takes most of these shapes when the channels come in fours. */
#include "conv2d.h"
#include "simd.h"
#include "linalg/pack_a.h"
#include "threads/split.h"

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

/* Stride 2 in one pass over the input: its columns 2j and 2j+1 land in phases pl%2 and
 * (pl+1)%2 at index j + pl/2 and j + (pl+1)/2 (indices past the phase are never read). */
static void fill_rows_s2(const struct nnw_conv2d *p, const struct dw_geom *g, int32_t r0,
                         int32_t r1, const float *x, float *dst) {
  int32_t pe = p->pl / 2, po = (p->pl + 1) / 2, pw = g->pw;
  int32_t ne = (p->w + 1) / 2, no = p->w / 2; /* even and odd input columns */
  if (ne > pw - pe) ne = pw - pe;
  if (no > pw - po) no = pw - po;
  for (int32_t r = r0; r < r1; r++) {
    float *de = dst + (size_t)r * g->row + (p->pl % 2) * pw + pe;
    float *dd = dst + (size_t)r * g->row + ((p->pl + 1) % 2) * pw + po;
    const float *src = x + (size_t)(r - p->pt) * p->w;
    int32_t j = 0;
    for (; j + 4 <= no && j + 4 <= ne; j += 4) {
      v4 e, o;
      v4_deinterleave(v4_load(src + 2 * j), v4_load(src + 2 * j + 4), &e, &o);
      v4_store(de + j, e);
      v4_store(dd + j, o);
    }
    for (int32_t i = j; i < ne; i++) de[i] = src[2 * i];
    for (int32_t i = j; i < no; i++) dd[i] = src[2 * i + 1];
  }
}

/* Copies one input plane into the inside of the padded, phase-split plane (whose padding is
 * zeroed once per conv: it sits in the same places for every channel). */
static void fill_plane(const struct nnw_conv2d *p, const struct dw_geom *g, int32_t span_h,
                       const float *x, float *dst) {
  int32_t sw = p->sw;
  /* padded rows r in [r0, r1) hold input rows r - pt */
  int32_t r0 = p->pt < span_h ? p->pt : span_h;
  int32_t r1 = p->pt + p->h < span_h ? p->pt + p->h : span_h;
  if (sw == 2) {
    fill_rows_s2(p, g, r0, r1, x, dst);
    return;
  }
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
      acc0 = v4_fmadd(acc0, wv, v4_load(s));
      if (nv > 1) acc1 = v4_fmadd(acc1, wv, v4_load(s + 4));
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

/* acc += 4 outputs of a k x k (3 or 5), stride-s (1 or 2), dilation-1 kernel from pre-splatted
 * weights (row: floats between padded rows, pw: between column phases).
 * Measured in V8 against the generic tile above: splatting the weights once per plane instead of
 * a load32_splat per tap, and one vector per tile instead of two, is 1.4-2x faster (dw 3x3 @112:
 * 15 -> 30 GFLOP/s); tiles of two or four output rows (reusing loaded input rows) or with two
 * accumulators measured 5-30% slower, as V8 then spills. The order of the sum matters too: when
 * clang emitted it as p8 + (p7 + (... + (p0 + bias))), all nine products were live at once and
 * the layer ran 1.3x slower; updating acc in place keeps (((bias + p0) + p1) + ...). */
static NNW_ALWAYS_INLINE void dw_vec(int k, int s, int32_t row, int32_t pw, const float *src,
                                     const v4 *wv, v4 *acc) {
  for (int ky = 0; ky < k; ky++, src += row)
    for (int kx = 0; kx < k; kx++)
      *acc = v4_fmadd(*acc, wv[ky * k + kx], v4_load(src + (kx % s) * pw + kx / s));
}

static NNW_ALWAYS_INLINE void dw_plane_k(int k, int s, const struct nnw_conv2d *p,
                                         const struct dw_geom *g, const float *padded,
                                         const float *w, float bias, float *y) {
  v4 wv[25], vb = v4_set1(bias), lo = v4_set1(p->lo), hi = v4_set1(p->hi);
  for (int i = 0; i < k * k; i++) wv[i] = v4_set1(w[i]);
  int32_t ow = p->ow, row = g->row, pw = g->pw;
  for (int32_t oy = 0; oy < p->oh; oy++) {
    const float *src = padded + (size_t)oy * g->oy_step;
    float *yr = y + (size_t)oy * ow;
    int32_t ox = 0;
    for (; ox + 4 <= ow; ox += 4) {
      v4 acc = vb;
      dw_vec(k, s, row, pw, src + ox, wv, &acc);
      v4_store(yr + ox, v4_clamp(acc, lo, hi));
    }
    if (ox < ow) {
      /* ow >= 4: the last 4 outputs again (same values) rather than masked */
      int32_t at = ow >= 4 ? ow - 4 : 0;
      v4 acc = vb;
      float tmp[4];
      dw_vec(k, s, row, pw, src + at, wv, &acc);
      v4_store(tmp, v4_clamp(acc, lo, hi));
      for (int32_t i = ox; i < ow; i++) yr[i] = tmp[i - at];
    }
  }
}

/* The Cranelift variant of dw_plane_k (NNW_HINT_HOISTS_LOADS). Cranelift emits a basic block's
 * loads first, in program order, and the arithmetic where its results are used (the stores), so
 * dw_vec's unrolled 3x3 held its nine input vectors at once beside nine splatted weights, bias and
 * the clamp bounds: it spilled, reloaded the weights from the stack and stored seven of them back
 * every 4 outputs (3x3 stride-1 layers 1.75x V8's time). Here each kernel row is one pass of a
 * loop clang keeps rolled (NNW_ROLLED: a block of its own for Cranelift), with the weights read
 * from memory and three output vectors per pass, so that each weight load serves twelve outputs
 * (two: 1.35x V8's time, three: 1.29x). The same products summed in the same order as dw_vec:
 * the same bits (tests/kernels compares them). 3x3 stride-1 layers of MobileNetV2 in wasmtime
 * (per-op minima): 1.68x V8's time -> 1.19-1.29x. */
static NNW_ALWAYS_INLINE void dw_rows(int nv, int k, int s, int32_t row, int32_t pw,
                                      const float *src, const v4 *wv, v4 *acc) {
  NNW_ROLLED
  for (int ky = 0; ky < k; ky++, src += row, wv += k)
    for (int kx = 0; kx < k; kx++) {
      const float *q = src + (kx % s) * pw + kx / s;
      acc[0] = v4_fmadd(acc[0], wv[kx], v4_load(q));
      if (nv > 1) acc[1] = v4_fmadd(acc[1], wv[kx], v4_load(q + 4));
      if (nv > 2) acc[2] = v4_fmadd(acc[2], wv[kx], v4_load(q + 8));
    }
}

static NNW_ALWAYS_INLINE void dw_plane_k_rolled(int k, int s, const struct nnw_conv2d *p,
                                                const struct dw_geom *g, const float *padded,
                                                const float *w, float bias, float *y) {
  v4 wv[25], vb = v4_set1(bias), lo = v4_set1(p->lo), hi = v4_set1(p->hi);
  for (int i = 0; i < k * k; i++) wv[i] = v4_set1(w[i]);
  int32_t ow = p->ow, row = g->row, pw = g->pw;
  for (int32_t oy = 0; oy < p->oh; oy++) {
    const float *src = padded + (size_t)oy * g->oy_step;
    float *yr = y + (size_t)oy * ow;
    int32_t ox = 0;
    for (; ox + 12 <= ow; ox += 12) {
      v4 acc[3] = {vb, vb, vb};
      dw_rows(3, k, s, row, pw, src + ox, wv, acc);
      v4_store(yr + ox, v4_clamp(acc[0], lo, hi));
      v4_store(yr + ox + 4, v4_clamp(acc[1], lo, hi));
      v4_store(yr + ox + 8, v4_clamp(acc[2], lo, hi));
    }
    for (; ox + 8 <= ow; ox += 8) {
      v4 acc[2] = {vb, vb};
      dw_rows(2, k, s, row, pw, src + ox, wv, acc);
      v4_store(yr + ox, v4_clamp(acc[0], lo, hi));
      v4_store(yr + ox + 4, v4_clamp(acc[1], lo, hi));
    }
    for (; ox + 4 <= ow; ox += 4) {
      v4 acc[1] = {vb};
      dw_rows(1, k, s, row, pw, src + ox, wv, acc);
      v4_store(yr + ox, v4_clamp(acc[0], lo, hi));
    }
    if (ox < ow) {
      int32_t at = ow >= 4 ? ow - 4 : 0; /* as in dw_plane_k */
      v4 acc[1] = {vb};
      float tmp[4];
      dw_rows(1, k, s, row, pw, src + at, wv, acc);
      v4_store(tmp, v4_clamp(acc[0], lo, hi));
      for (int32_t i = ox; i < ow; i++) yr[i] = tmp[i - at];
    }
  }
}

/* Each plane kernel is its own function, called through a pointer so that wasm-opt cannot merge
 * them back (see nnw_run_conv2d). */
typedef void (*dw_plane_fn)(const struct nnw_conv2d *p, const struct dw_geom *g,
                            const float *padded, const float *w, float b, float *y);
#define DW_PLANE(name, body)                                                                 \
  static void name(const struct nnw_conv2d *p, const struct dw_geom *g, const float *padded, \
                   const float *w, float b, float *y) {                                      \
    body;                                                                                    \
  }
DW_PLANE(plane_k3s1, dw_plane_k(3, 1, p, g, padded, w, b, y))
DW_PLANE(plane_k3s2, dw_plane_k(3, 2, p, g, padded, w, b, y))
DW_PLANE(plane_k5s1, dw_plane_k(5, 1, p, g, padded, w, b, y))
DW_PLANE(plane_k5s2, dw_plane_k(5, 2, p, g, padded, w, b, y))
DW_PLANE(plane_k3s1_rolled, dw_plane_k_rolled(3, 1, p, g, padded, w, b, y))
DW_PLANE(plane_k3s2_rolled, dw_plane_k_rolled(3, 2, p, g, padded, w, b, y))
DW_PLANE(plane_k5s1_rolled, dw_plane_k_rolled(5, 1, p, g, padded, w, b, y))
DW_PLANE(plane_k5s2_rolled, dw_plane_k_rolled(5, 2, p, g, padded, w, b, y))
DW_PLANE(plane_3x3, dw_plane(3, 3, p, g, padded, w, b, y))
DW_PLANE(plane_5x5, dw_plane(5, 5, p, g, padded, w, b, y))
DW_PLANE(plane_7x7, dw_plane(7, 7, p, g, padded, w, b, y))
DW_PLANE(plane_any, dw_plane(p->kh, p->kw, p, g, padded, w, b, y))

static dw_plane_fn pick_plane(const struct nnw_conv2d *p) {
  /* dw_plane_k: 3x3 and 5x5, the same stride (1 or 2) both ways, dilation 1 */
  if (p->kh == p->kw && (p->kh == 3 || p->kh == 5) && p->sh == p->sw &&
      (p->sh == 1 || p->sh == 2) && p->dh == 1 && p->dw == 1) {
    if (nnw_host_hints & NNW_HINT_HOISTS_LOADS) {
      if (p->kh == 3) return p->sh == 1 ? plane_k3s1_rolled : plane_k3s2_rolled;
      return p->sh == 1 ? plane_k5s1_rolled : plane_k5s2_rolled;
    }
    if (p->kh == 3) return p->sh == 1 ? plane_k3s1 : plane_k3s2;
    return p->sh == 1 ? plane_k5s1 : plane_k5s2;
  }
  if (p->kh == 3 && p->kw == 3) return plane_3x3;
  if (p->kh == 5 && p->kw == 5) return plane_5x5;
  if (p->kh == 7 && p->kw == 7) return plane_7x7;
  return plane_any;
}

/* Threads (threads/split.h): planes (image x channel) split in tiles; each tile pads its planes
 * into a scratch of its own (the op's for the caller, a helper's pack buffer when the plane fits
 * there, else the op stays on the caller), every output plane computed whole as on one thread. */
struct dw_job {
  const struct nnw_conv2d *p;
  const struct dw_geom *g;
  dw_plane_fn plane;
  const float *x, *wt, *bias;
  float *y, *scratch;
  int32_t span_h;
};

static void dw_task(void *ctx, int32_t start, int32_t count, int32_t worker) {
  const struct dw_job *j = ctx;
  const struct nnw_conv2d *p = j->p;
  float *scratch = worker == 0 ? j->scratch : nnw_pool_pack_buf(worker);
  int32_t mult = p->m / p->c, taps = p->kh * p->kw;
  size_t hw = (size_t)p->h * p->w, ohw = (size_t)p->oh * p->ow;
  /* the padding is the same for every channel: zeroed once, then only the inside is copied */
  memset(scratch, 0, (size_t)j->span_h * j->g->row * sizeof(float));
  for (int32_t pi = start; pi < start + count; pi++) {
    fill_plane(p, j->g, j->span_h, j->x + (size_t)pi * hw, scratch);
    int32_t ni = pi / p->c, ci = pi % p->c;
    for (int32_t k = 0; k < mult; k++) {
      int32_t o = ci * mult + k;
      j->plane(p, j->g, scratch, j->wt + (size_t)o * taps, j->bias ? j->bias[o] : 0.0f,
               j->y + ((size_t)ni * p->m + o) * ohw);
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
  int32_t span_h = (p->oh - 1) * p->sh + (p->kh - 1) * p->dh + 1, planes = p->n * p->c;
  struct dw_job job = {p, &g, pick_plane(p), x, wt, bias, y, scratch, span_h};
  uint64_t macs = (uint64_t)p->n * p->m * p->oh * p->ow * p->kh * p->kw;
  int32_t threads = (uint64_t)span_h * g.row <= NNW_PACK_A_FLOATS
                        ? nnw_split_threads(macs, NNW_SPLIT_MIN_FLOPS, planes) : 1;
  nnw_parallel_for(planes, threads > 1 ? nnw_split_tile(planes, threads) : planes, dw_task, &job);
}
