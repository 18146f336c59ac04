/* 3x3 stride-1 convolutions by Winograd F(4x4, 3x3) (Lavin & Gray 2015; points 0, +-1, +-2):
 * each 4x4 block of outputs ("tile") comes from a 6x6 input patch d as
 *   y = A^T [ (G g G^T) .* (B^T d B) ] A,
 * 36 multiplications per output channel and input channel instead of 144. As batched GEMMs:
 *   U[xi] (C x M) = the weights transformed, V[xi] (T x C) = the input tiles transformed,
 *   Z[xi] (T x M) = V[xi] U[xi] for each of the 36 points xi (nnw_gemm_nn, vectorized along M),
 * then the output transform adds the bias, clamps and writes NCHW. Every transform works on four
 * channels at once (one v4 per point), which is why C and M must be multiples of 4.
 * Two entry points: the conv2d op transforms the weights on every run (about 1/20 of the GEMMs'
 * work on the shapes it serves: see nnw_conv2d_winograd_fits); the plan ops conv2d_winograd_weights
 * (an init op, run once at plan load) and conv2d_winograd run on U kept in the arena, which pays
 * down to 5x5 outputs (nnw_conv2d_winograd_pays). Both compute the same sums in the same order.
 * Results differ from im2col's by rounding only (the transforms
 * have small integer and 1/6, 1/12, 1/24 coefficients): measured max error ~2e-6 relative to the
 * sum of |terms| on random data (tests/kernels/test_conv.c allows 2e-5). */
#include <math.h>

#include "conv2d.h"
#include "simd.h"
#include "winograd.h"

#define NT 36 /* points of the 6x6 transformed tile */

int nnw_conv2d_winograd_fits(int32_t c, int32_t m, int32_t group, int32_t kh, int32_t kw,
                             int32_t oh, int32_t ow, int32_t sh, int32_t sw, int32_t dh,
                             int32_t dw) {
  /* Measured in V8 (bench_kernels_native.py --net resnet50): faster than im2col from 27x27 on;
   * 13x13 and 14x14 lose to the weight transform done each run, 7x7 too. */
  return group == 1 && kh == 3 && kw == 3 && sh == 1 && sw == 1 && dh == 1 && dw == 1 &&
         c % 4 == 0 && m % 4 == 0 && (int64_t)oh * ow >= 27 * 27 && oh >= 4 && ow >= 4;
}

/* Tiles per block. Where U is small (up to 1 MB, so it stays in cache while read once per block),
 * the GEMMs and the output transform go through the tiles in blocks whose V and Z fit ~512 KB
 * (L2), of at least 16 tiles (the GEMMs' rows), all of equal size: V8, ms, one block -> blocks,
 * SqueezeNet 16->64 @55 0.687 -> 0.538, 32->128 @27 0.502 -> 0.424, ResNet-50 64 @56 2.04 ->
 * 1.73. With a larger U re-reading it costs more than Z's misses save (128 @28, U 2.4 MB:
 * 1.60 -> 1.82), so one block. */
static uint64_t tile_block(uint64_t c, uint64_t m, uint64_t t) {
  if (NT * c * m > 262144) return t;
  uint64_t tb = 131072 / (NT * (c + m));
  if (tb < 16) tb = 16;
  if (tb >= t) return t;
  uint64_t blocks = (t + tb - 1) / tb;
  return (t + blocks - 1) / blocks;
}

/* floats of scratch after U: the padded input (planes of four channels), then V and Z of one
 * block of tiles */
static uint64_t run_floats(uint64_t c, uint64_t m, int32_t oh, int32_t ow) {
  uint64_t th = ((uint64_t)oh + 3) / 4, tw = ((uint64_t)ow + 3) / 4, tb = tile_block(c, m, th * tw);
  uint64_t v = nnw_mul(NT * tb, c), z = nnw_mul(NT * tb, m);
  uint64_t planes = nnw_mul(nnw_mul(4 * th + 2, 4 * tw + 2), c);
  return nnw_add(nnw_add(v, z), planes);
}

/* floats of the conv2d op's scratch: U, then the rest */
uint64_t nnw_conv2d_winograd_floats(int32_t c, int32_t m, int32_t oh, int32_t ow) {
  return nnw_add(nnw_mul(NT * (uint64_t)c, (uint64_t)m), run_floats((uint64_t)c, (uint64_t)m, oh, ow));
}

/* one dimension of each transform, on six (or three) v4 at stride s */
static inline void bt6(v4 *d, int s) { /* B^T */
  v4 d0 = d[0], d1 = d[s], d2 = d[2 * s], d3 = d[3 * s], d4 = d[4 * s], d5 = d[5 * s];
  v4 four = v4_set1(4.0f), five = v4_set1(5.0f), two = v4_set1(2.0f);
  v4 t1 = v4_sub(d4, v4_mul(four, d2)), t2 = v4_sub(d3, v4_mul(four, d1));
  v4 t3 = v4_sub(d4, d2), t4 = v4_mul(two, v4_sub(d3, d1));
  d[0] = v4_add(v4_sub(v4_mul(four, d0), v4_mul(five, d2)), d4);
  d[s] = v4_add(t1, t2);
  d[2 * s] = v4_sub(t1, t2);
  d[3 * s] = v4_add(t3, t4);
  d[4 * s] = v4_sub(t3, t4);
  d[5 * s] = v4_add(v4_sub(v4_mul(four, d1), v4_mul(five, d3)), d5);
}

static inline void g3(const v4 *g, int gs, v4 *u, int us) { /* G */
  v4 g0 = g[0], g1 = g[gs], g2 = g[2 * gs];
  v4 a = v4_add(g0, g2), neg_sixth = v4_set1(-1.0f / 6.0f);
  v4 e = v4_add(v4_mul(g0, v4_set1(1.0f / 24.0f)), v4_mul(g2, v4_set1(1.0f / 6.0f)));
  v4 f = v4_mul(g1, v4_set1(1.0f / 12.0f));
  u[0] = v4_mul(g0, v4_set1(0.25f));
  u[us] = v4_mul(v4_add(a, g1), neg_sixth);
  u[2 * us] = v4_mul(v4_sub(a, g1), neg_sixth);
  u[3 * us] = v4_add(e, f);
  u[4 * us] = v4_sub(e, f);
  u[5 * us] = g2;
}

static inline void at6(v4 *m, int s) { /* A^T: six in, four out (in place, first four) */
  v4 m0 = m[0], m1 = m[s], m2 = m[2 * s], m3 = m[3 * s], m4 = m[4 * s], m5 = m[5 * s];
  v4 a = v4_add(m1, m2), b = v4_sub(m1, m2), c = v4_add(m3, m4), d = v4_sub(m3, m4);
  m[0] = v4_add(v4_add(m0, a), c);
  m[s] = v4_add(b, v4_mul(v4_set1(2.0f), d));
  m[2 * s] = v4_add(a, v4_mul(v4_set1(4.0f), c));
  m[3 * s] = v4_add(v4_add(b, v4_mul(v4_set1(8.0f), d)), m5);
}

/* U[xi][ci][o] for o in a block of four output channels */
static void transform_weights(const float *wt, int32_t c, int32_t m, float *u) {
  for (int32_t o = 0; o < m; o += 4) {
    for (int32_t ci = 0; ci < c; ci++) {
      v4 g[9], t[18], r[NT];
      for (int k = 0; k < 9; k++) {
        float f[4];
        for (int l = 0; l < 4; l++) f[l] = wt[((size_t)(o + l) * c + ci) * 9 + k];
        g[k] = v4_load(f);
      }
      for (int kx = 0; kx < 3; kx++) g3(g + kx, 3, t + kx, 3);   /* columns: t[6][3] */
      for (int i = 0; i < 6; i++) g3(t + 3 * i, 1, r + 6 * i, 1); /* rows: r[6][6] */
      for (int xi = 0; xi < NT; xi++) v4_store(u + (size_t)xi * c * m + nnw_wg_u_at(c, m, ci, o), r[xi]);
    }
  }
}

/* V[xi][t - t0][ci..ci+3] for tiles t0 .. t0+tn-1 and the four channels of `plane` (4*th+2 rows
 * of 4*tw+2 v4 pixels) */
static void transform_input(const float *plane, int32_t tw, int32_t c, int32_t ci, size_t t0,
                            size_t tn, float *v) {
  size_t pw = 4 * (size_t)tw + 2;
  for (size_t t = t0; t < t0 + tn; t++) {
    size_t ty = t / (size_t)tw, tx = t % (size_t)tw;
    v4 d[NT];
    const float *p = plane + (ty * 4 * pw + tx * 4) * 4;
    for (int i = 0; i < 6; i++)
      for (int j = 0; j < 6; j++) d[6 * i + j] = v4_load(p + ((size_t)i * pw + j) * 4);
    for (int j = 0; j < 6; j++) bt6(d + j, 6); /* columns */
    for (int i = 0; i < 6; i++) bt6(d + 6 * i, 1); /* rows */
    for (int xi = 0; xi < NT; xi++) v4_store(v + ((size_t)xi * tn + (t - t0)) * c + ci, d[xi]);
  }
}

/* the four channels ci.. of x as a zero-padded plane of v4 pixels: pixel (py, px) = x[py-pt][px-pl]
 * (also conv2d_winograd_s2.c's) */
void nnw_conv2d_winograd_pad_plane(const struct nnw_conv2d *p, const float *x, int32_t ci,
                                   int32_t ph, int32_t pw, float *plane) {
  memset(plane, 0, sizeof(float) * 4 * (size_t)ph * pw);
  size_t hw = (size_t)p->h * p->w;
  for (int32_t iy = 0; iy < p->h; iy++) {
    int32_t py = iy + p->pt;
    if (py >= ph) break;
    const float *r0 = x + (size_t)ci * hw + (size_t)iy * p->w;
    float *dst = plane + ((size_t)py * pw + p->pl) * 4;
    int32_t n = p->w < pw - p->pl ? p->w : pw - p->pl;
    if (n <= 0) break;
    int32_t ix = 0;
    for (; ix + 4 <= n; ix += 4) {
      v4 a = v4_load(r0 + ix), b = v4_load(r0 + hw + ix), c = v4_load(r0 + 2 * hw + ix),
         d = v4_load(r0 + 3 * hw + ix);
      v4 ab0 = v4_unpacklo(a, b), ab1 = v4_unpackhi(a, b), cd0 = v4_unpacklo(c, d),
         cd1 = v4_unpackhi(c, d);
      v4_store(dst + 4 * ix, v4_unpacklo64(ab0, cd0));
      v4_store(dst + 4 * ix + 4, v4_unpackhi64(ab0, cd0));
      v4_store(dst + 4 * ix + 8, v4_unpacklo64(ab1, cd1));
      v4_store(dst + 4 * ix + 12, v4_unpackhi64(ab1, cd1));
    }
    for (; ix < n; ix++)
      for (int l = 0; l < 4; l++) dst[4 * ix + l] = r0[l * hw + ix];
  }
}

/* y[o..o+3][oy..][ox..] of tiles t0 .. t0+tn-1 from Z[xi][t - t0][o..o+3], with bias and clamp */
static void transform_output(const struct nnw_conv2d *p, const float *z, int32_t tw, size_t t0,
                             size_t tn, const float *bias, float *y, int32_t o0, int32_t o1) {
  size_t ohw = (size_t)p->oh * p->ow;
  int32_t m = p->m;
  v4 lo = v4_set1(p->lo), hi = v4_set1(p->hi);
  for (int32_t o = o0; o < o1; o += 4) {
    v4 b = bias ? v4_load(bias + o) : v4_set1(0.0f);
    for (size_t t = t0; t < t0 + tn; t++) {
      int32_t ty = (int32_t)(t / (size_t)tw), tx = (int32_t)(t % (size_t)tw);
      {
        v4 r[NT];
        for (int xi = 0; xi < NT; xi++) r[xi] = v4_load(z + ((size_t)xi * tn + (t - t0)) * m + o);
        for (int j = 0; j < 6; j++) at6(r + j, 6);     /* columns: rows 0..3 valid */
        for (int i = 0; i < 4; i++) at6(r + 6 * i, 1); /* rows: r[i][0..3] */
        int32_t oy0 = 4 * ty, ox0 = 4 * tx;
        int32_t rows = p->oh - oy0 < 4 ? p->oh - oy0 : 4, cols = p->ow - ox0 < 4 ? p->ow - ox0 : 4;
        for (int i = 0; i < rows; i++) {
          /* r[i][j] holds channels o..o+3 of pixel j: transpose to rows of four pixels */
          v4 a = v4_clamp(v4_add(r[6 * i], b), lo, hi), bb = v4_clamp(v4_add(r[6 * i + 1], b), lo, hi),
             c = v4_clamp(v4_add(r[6 * i + 2], b), lo, hi), d = v4_clamp(v4_add(r[6 * i + 3], b), lo, hi);
          v4 ab0 = v4_unpacklo(a, bb), ab1 = v4_unpackhi(a, bb), cd0 = v4_unpacklo(c, d),
             cd1 = v4_unpackhi(c, d);
          v4 ch[4] = {v4_unpacklo64(ab0, cd0), v4_unpackhi64(ab0, cd0), v4_unpacklo64(ab1, cd1),
                      v4_unpackhi64(ab1, cd1)};
          for (int l = 0; l < 4; l++) {
            float *dst = y + (size_t)(o + l) * ohw + (size_t)(oy0 + i) * p->ow + ox0;
            if (cols == 4) {
              v4_store(dst, ch[l]);
            } else {
              float f[4];
              v4_store(f, ch[l]);
              for (int j = 0; j < cols; j++) dst[j] = f[j];
            }
          }
        }
      }
    }
  }
}

/* Threads (threads/split.h): each phase of a tile block split on its own, every output of a
 * phase computed whole by one tile as on one thread: the padded planes and V by blocks of four
 * input channels, the GEMMs by (point, panel) (winograd.h), y by blocks of four output channels. */
enum { WG_PAD, WG_INPUT, WG_OUTPUT };

struct wg_job {
  const struct nnw_conv2d *p;
  const float *xn, *bias;
  float *planes, *v, *z, *yn;
  int32_t tw, ph, pw, phase;
  size_t plane, t0, tn;
};

static void wg_task(void *ctx, int32_t start, int32_t count, int32_t worker) {
  const struct wg_job *j = ctx;
  (void)worker;
  for (int32_t ci = 4 * start; ci < 4 * (start + count); ci += 4) {
    if (j->phase == WG_PAD) nnw_conv2d_winograd_pad_plane(j->p, j->xn, ci, j->ph, j->pw, j->planes + j->plane * ci);
    else if (j->phase == WG_INPUT) transform_input(j->planes + j->plane * ci, j->tw, j->p->c, ci, j->t0, j->tn, j->v);
    else transform_output(j->p, j->z, j->tw, j->t0, j->tn, j->bias, j->yn, ci, ci + 4);
  }
}

static void wg_phase(struct wg_job *j, int phase, int32_t channels, int32_t threads) {
  j->phase = phase;
  int32_t blocks = channels / 4;
  nnw_parallel_for(blocks, threads > 1 ? nnw_split_tile(blocks, threads) : blocks, wg_task, j);
}

/* the convolution on transformed weights u; scratch holds the padded input, V and Z */
static void winograd_run(const struct nnw_conv2d *p, const float *x, const float *u,
                         const float *bias, float *y, float *scratch) {
  int32_t c = p->c, m = p->m, th = (p->oh + 3) / 4, tw = (p->ow + 3) / 4;
  size_t t_count = (size_t)th * tw, tb = tile_block((uint64_t)c, (uint64_t)m, t_count);
  int32_t ph = 4 * th + 2, pw = 4 * tw + 2;
  size_t plane = (size_t)ph * pw; /* pixels of one padded plane */
  float *planes = scratch, *v = planes + plane * c, *z = v + NT * tb * c;
  int32_t threads = nnw_split_threads((uint64_t)t_count * c * m * NT, NNW_SPLIT_MIN_FLOPS, c / 4);
  static const int first[NT + 1] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12,
                                    13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25,
                                    26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36};
  for (int32_t ni = 0; ni < p->n; ni++) {
    struct wg_job job = {p, x + (size_t)ni * c * p->h * p->w, bias, planes, v, z,
                         y + (size_t)ni * m * p->oh * p->ow, tw, ph, pw, WG_PAD, plane, 0, 0};
    wg_phase(&job, WG_PAD, c, threads);
    for (size_t t0 = 0; t0 < t_count; t0 += tb) {
      size_t tn = t_count - t0 < tb ? t_count - t0 : tb;
      job.t0 = t0;
      job.tn = tn;
      wg_phase(&job, WG_INPUT, c, threads);
      if (threads > 1) {
        struct nnw_wg_gemms g = {(int32_t)tn, c, m, (m + NNW_WG_PANEL - 1) / NNW_WG_PANEL, first, v, u, z};
        nnw_wg_gemms(&g, NT, threads);
      } else {
        for (int xi = 0; xi < NT; xi++)
          nnw_wg_gemm((int32_t)tn, c, m, v + (size_t)xi * tn * c, u + (size_t)xi * c * m,
                      z + (size_t)xi * tn * m);
      }
      wg_phase(&job, WG_OUTPUT, m, threads);
    }
  }
}

void nnw_conv2d_winograd(const struct nnw_conv2d *p, const float *x, const float *wt,
                         const float *bias, float *y, float *scratch) {
  transform_weights(wt, p->c, p->m, scratch);
  winograd_run(p, x, scratch, bias, y, scratch + (size_t)NT * p->c * p->m);
}

/* ---- the plan ops: conv2d_winograd_weights (init) and conv2d_winograd --------------------- */

/* The largest pad or size the index arithmetic above meets (int32, exact) */
#define WINOGRAD_LIMIT ((int32_t)1 << 24)

/* Scratch bytes of conv2d_winograd, or -1 for parameters it refuses. */
static int64_t scratch_bytes(int32_t c, int32_t m, int32_t oh, int32_t ow) {
  int32_t pos[] = {c, m, oh, ow};
  if (nnw_check_positive(pos, 4) || c % 4 || m % 4 || oh > WINOGRAD_LIMIT || ow > WINOGRAD_LIMIT)
    return -1;
  uint64_t bytes = nnw_mul(run_floats((uint64_t)c, (uint64_t)m, oh, ow), 4);
  return bytes > INT32_MAX ? -1 : (int64_t)bytes;
}

NNW_EXPORT int32_t nnw_conv2d_winograd_scratch_bytes(int32_t c, int32_t m, int32_t oh, int32_t ow) {
  return (int32_t)scratch_bytes(c, m, oh, ow);
}

/* The choice table (NNPACK's way: by shape, measured): 1 where conv2d_winograd on transformed
 * weights beats conv2d (im2col + GEMM, or its own Winograd) in V8. The GEMMs have one row per
 * tile: with 4 tiles and more (outputs 5x5 and up) Winograd won on every shape measured
 * (bench/speed/bench_kernels_native.py --net resnet50 --winograd, ms, conv2d -> conv2d_winograd):
 *   ResNet-50 3x3 64 @56 1.93 -> 1.80, 128 @28 2.47 -> 1.48, 256 @14 4.89 -> 2.54,
 *   512 @7 5.71 -> 3.14; SqueezeNet 16->64 @55 0.71 -> 0.65, 32->128 @27 0.69 -> 0.48,
 *   48->192 @13 0.61 -> 0.34, 64->256 @13 1.04 -> 0.52; 8 @28 0.022 (wt) vs 0.04, 128 @7 0.42 -> 0.13,
 *   256 @5 0.75 -> 0.47, 1024 @7 42 -> 17.
 * With one tile the GEMMs are matrix-vector products streaming U (4x the weights): 512 @4
 * 2.60 -> 3.15 (loses), 256 @3 0.35 -> 0.31 (even). */
NNW_EXPORT int32_t nnw_conv2d_winograd_pays(int32_t c, int32_t m, int32_t oh, int32_t ow) {
  if (scratch_bytes(c, m, oh, ow) < 0) return 0;
  return ((int64_t)oh + 3) / 4 * (((int64_t)ow + 3) / 4) >= 4;
}

static void decode(const int32_t *a, struct nnw_conv2d *p) {
  *p = (struct nnw_conv2d){a[NNW_CONV2D_WINOGRAD_X], a[NNW_CONV2D_WINOGRAD_U],
                           a[NNW_CONV2D_WINOGRAD_B], a[NNW_CONV2D_WINOGRAD_Y],
                           a[NNW_CONV2D_WINOGRAD_SCRATCH], a[NNW_CONV2D_WINOGRAD_N],
                           a[NNW_CONV2D_WINOGRAD_C], a[NNW_CONV2D_WINOGRAD_H],
                           a[NNW_CONV2D_WINOGRAD_W], a[NNW_CONV2D_WINOGRAD_M],
                           a[NNW_CONV2D_WINOGRAD_OH], a[NNW_CONV2D_WINOGRAD_OW], 3, 3, 1, 1, 1, 1,
                           a[NNW_CONV2D_WINOGRAD_PT], a[NNW_CONV2D_WINOGRAD_PL], 1,
                           nnw_arg_f32(a[NNW_CONV2D_WINOGRAD_ACT_MIN]),
                           nnw_arg_f32(a[NNW_CONV2D_WINOGRAD_ACT_MAX])};
}

/* Shared by conv2d_winograd.c and conv2d_winograd_s2.c (conv2d.h): the init op's weight [m, c, 3, 3]
 * and its U of `points` C x M matrices, where scratch_ok says c and m are ones the kernel takes. */
int nnw_conv2d_winograd_check_weights(int32_t c, int32_t m, int32_t wt, int32_t u, int points, int scratch_ok,
                                      uint32_t arena_bytes) {
  if (!scratch_ok) return NNW_BAD_ARGS;
  uint64_t w_bytes = nnw_mul(nnw_mul((uint64_t)c, (uint64_t)m), 9 * 4);
  uint64_t u_bytes = nnw_mul(nnw_mul((uint64_t)c, (uint64_t)m), (uint64_t)points * 4);
  NNW_TRY(nnw_check_tensor(wt, w_bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(u, u_bytes, arena_bytes, 0, 1));
  return nnw_check_apart(wt, w_bytes, u, u_bytes, 0);
}

/* ... and the conv op's tensors, on U of `points` matrices, with its scratch (-1: refused) and the
 * largest pad it takes. */
int nnw_conv2d_winograd_check(const struct nnw_conv2d *p, int points, int64_t scratch, int32_t limit,
                              uint32_t arena_bytes) {
  int32_t pos[] = {p->n, p->h, p->w};
  if (nnw_check_positive(pos, 3) || !(p->lo <= p->hi)) return NNW_BAD_ARGS;
  if (p->pt < 0 || p->pl < 0 || p->pt > limit || p->pl > limit || scratch < 0) return NNW_BAD_ARGS;
  uint64_t n = (uint64_t)p->n, m = (uint64_t)p->m;
  uint64_t x_bytes = nnw_mul(nnw_mul(n * 4, (uint64_t)p->c), nnw_mul((uint64_t)p->h, (uint64_t)p->w));
  uint64_t u_bytes = nnw_mul(nnw_mul((uint64_t)p->c, m), (uint64_t)points * 4);
  uint64_t y_bytes = nnw_mul(nnw_mul(n * 4, m), nnw_mul((uint64_t)p->oh, (uint64_t)p->ow));
  NNW_TRY(nnw_check_tensor(p->x, x_bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(p->wt, u_bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(p->b, m * 4, arena_bytes, 1, 1));
  NNW_TRY(nnw_check_tensor(p->y, y_bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(p->scratch, (uint64_t)scratch, arena_bytes, 0, 1));
  const int32_t at[] = {p->x, p->wt, p->b, p->y, p->scratch};
  const uint64_t size[] = {x_bytes, u_bytes, m * 4, y_bytes, (uint64_t)scratch};
  for (int i = 0; i < 5; i++)      /* the output and the scratch apart from everything else */
    for (int j = i + 1; j < 5; j++)
      if (j >= 3) NNW_TRY(nnw_check_apart(at[i], size[i], at[j], size[j], 0));
  return NNW_OK;
}

int nnw_validate_conv2d_winograd_weights(const int32_t *args, uint32_t arena_bytes) {
  int32_t c = args[NNW_CONV2D_WINOGRAD_WEIGHTS_C], m = args[NNW_CONV2D_WINOGRAD_WEIGHTS_M];
  return nnw_conv2d_winograd_check_weights(c, m, args[NNW_CONV2D_WINOGRAD_WEIGHTS_WEIGHT],
                                           args[NNW_CONV2D_WINOGRAD_WEIGHTS_U], NT,
                                           scratch_bytes(c, m, 1, 1) >= 0, arena_bytes);
}

void nnw_run_conv2d_winograd_weights(const int32_t *args, uint8_t *arena) {
  transform_weights(nnw_f32_at(arena, args[NNW_CONV2D_WINOGRAD_WEIGHTS_WEIGHT]),
                    args[NNW_CONV2D_WINOGRAD_WEIGHTS_C], args[NNW_CONV2D_WINOGRAD_WEIGHTS_M],
                    nnw_f32_at(arena, args[NNW_CONV2D_WINOGRAD_WEIGHTS_U]));
}

int nnw_validate_conv2d_winograd(const int32_t *args, uint32_t arena_bytes) {
  struct nnw_conv2d p;
  decode(args, &p);
  return nnw_conv2d_winograd_check(&p, NT, scratch_bytes(p.c, p.m, p.oh, p.ow), WINOGRAD_LIMIT, arena_bytes);
}

void nnw_run_conv2d_winograd(const int32_t *args, uint8_t *arena) {
  struct nnw_conv2d p;
  decode(args, &p);
  winograd_run(&p, nnw_f32_at(arena, p.x), nnw_f32_at(arena, p.wt), nnw_f32_at(arena, p.b),
               nnw_f32_at(arena, p.y), nnw_f32_at(arena, p.scratch));
}
