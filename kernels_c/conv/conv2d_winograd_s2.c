/* 3x3 stride-2 convolutions by a strided Winograd F(2x2, 3x3): each 2x2 block of outputs
 * ("tile") comes from a 5x5 input patch d (rows and columns 4t .. 4t+4 of the padded input).
 * Along one dimension the outputs are y0 = w0 d0 + w1 d1 + w2 d2 and y1 = w0 d2 + w1 d3 + w2 d4:
 * the even samples (d0, d2, d4) meet the two taps (w0, w2) at stride 1, F(2, 2) with three
 * products, the odd ones (d1, d3) the single tap w1, two products:
 *   points  p = (d0 - d2, d2, d4 - d2, d1, d3)     (B^T)
 *           u = (w0, w0 + w2, w2, w1, w1)           (G)
 *   y0 = m0 + m1 + m3,  y1 = m1 + m2 + m4          (A^T, m = u .* p)
 * In 2-D, 25 products per (input, output) channel pair and tile where direct needs 36 (1.44x
 * fewer), with transforms of additions only (each rounds once per dimension). The points 3 and 4
 * share their weight, so of the 25 points' U only 16 differ: U[g] (C x M) for g = (a, b), a and b
 * in {0, 1, 2, odd}, and the points of one g (1, 2 or 4 of them) are stacked as rows of one GEMM
 * Z[g] (rows x M) = V[g] (rows x C) . U[g]. U (16 C M floats, 1.8x the weights) is made once at
 * plan load by the init op conv2d_winograd_s2_weights. Channels in fours, as conv2d_winograd.c. */
#include <math.h>

#include "conv2d.h"
#include "simd.h"
#include "linalg/pack_a.h"
#include "winograd.h"

#define NP 25 /* points of the 5x5 transformed tile */
#define NG 16 /* distinct weight transforms */
#define LIMIT ((int32_t)1 << 24)

/* row block of point (a, b) in V and Z (pos), and the first row block of group g (start[g]) */
static void layout(int pos[NP], int start[NG + 1]) {
  int next = 0;
  for (int g = 0; g < NG; g++) {
    int ga = g / 4, gb = g % 4;
    start[g] = next;
    for (int a = ga; a <= (ga == 3 ? 4 : ga); a++)
      for (int b = gb; b <= (gb == 3 ? 4 : gb); b++) pos[a * 5 + b] = next++;
  }
  start[NG] = next;
}

static inline void bt5(v4 *d, int s) { /* B^T, in place */
  v4 d0 = d[0], d1 = d[s], d2 = d[2 * s], d3 = d[3 * s], d4 = d[4 * s];
  d[0] = v4_sub(d0, d2);
  d[s] = d2;
  d[2 * s] = v4_sub(d4, d2);
  d[3 * s] = d1;
  d[4 * s] = d3;
}

static inline void g4(const v4 *g, int gs, v4 *u, int us) { /* G, without the repeated point 4 */
  v4 g0 = g[0], g1 = g[gs], g2 = g[2 * gs];
  u[0] = g0;
  u[us] = v4_add(g0, g2);
  u[2 * us] = g2;
  u[3 * us] = g1;
}

static inline void at5(v4 *m, int s) { /* A^T: five in, two out (in place, first two) */
  v4 m0 = m[0], m1 = m[s], m2 = m[2 * s], m3 = m[3 * s], m4 = m[4 * s];
  m[0] = v4_add(v4_add(m0, m1), m3);
  m[s] = v4_add(v4_add(m1, m2), m4);
}

/* U[g][ci][o] for o in a block of four output channels */
static void transform_weights(const float *wt, int32_t c, int32_t m, float *u) {
  for (int32_t o = 0; o < m; o += 4) {
    for (int32_t ci = 0; ci < c; ci++) {
      v4 g[9], t[12], r[NG];
      for (int k = 0; k < 9; k++) {
        float f[4];
        for (int l = 0; l < 4; l++) f[l] = wt[((size_t)(o + l) * c + ci) * 9 + k];
        g[k] = v4_load(f);
      }
      for (int kx = 0; kx < 3; kx++) g4(g + kx, 3, t + kx, 3);   /* columns: t[4][3] */
      for (int i = 0; i < 4; i++) g4(t + 3 * i, 1, r + 4 * i, 1); /* rows: r[4][4] */
      for (int xi = 0; xi < NG; xi++) v4_store(u + (size_t)xi * c * m + nnw_wg_u_at(c, m, ci, o), r[xi]);
    }
  }
}

/* V[pos][t][ci..ci+3] for all tiles of the four channels of `plane` (4*th+1 rows of 4*tw+1 v4
 * pixels) */
static void transform_input(const float *plane, int32_t tw, size_t tn, int32_t c, int32_t ci,
                            const int *pos, float *v) {
  size_t pw = 4 * (size_t)tw + 1;
  for (size_t t = 0; t < tn; t++) {
    size_t ty = t / (size_t)tw, tx = t % (size_t)tw;
    v4 d[NP];
    const float *p = plane + (ty * 4 * pw + tx * 4) * 4;
    for (int i = 0; i < 5; i++)
      for (int j = 0; j < 5; j++) d[5 * i + j] = v4_load(p + ((size_t)i * pw + j) * 4);
    for (int j = 0; j < 5; j++) bt5(d + j, 5); /* columns */
    for (int i = 0; i < 5; i++) bt5(d + 5 * i, 1); /* rows */
    for (int xi = 0; xi < NP; xi++) v4_store(v + ((size_t)pos[xi] * tn + t) * c + ci, d[xi]);
  }
}

/* y[o..o+3] of every tile from Z[pos][t][o..o+3], with bias and clamp */
static void transform_output(const struct nnw_conv2d *p, const float *z, int32_t tw, size_t tn,
                             const int *pos, const float *bias, float *y, int32_t o0, int32_t o1) {
  size_t ohw = (size_t)p->oh * p->ow;
  int32_t m = p->m;
  v4 lo = v4_set1(p->lo), hi = v4_set1(p->hi);
  for (int32_t o = o0; o < o1; o += 4) {
    v4 b = bias ? v4_load(bias + o) : v4_set1(0.0f);
    for (size_t t = 0; t < tn; t++) {
      int32_t ty = (int32_t)(t / (size_t)tw), tx = (int32_t)(t % (size_t)tw);
      v4 r[NP];
      for (int xi = 0; xi < NP; xi++) r[xi] = v4_load(z + ((size_t)pos[xi] * tn + t) * m + o);
      for (int j = 0; j < 5; j++) at5(r + j, 5);     /* columns: rows 0, 1 valid */
      for (int i = 0; i < 2; i++) at5(r + 5 * i, 1); /* rows: r[i][0, 1] */
      int32_t oy0 = 2 * ty, ox0 = 2 * tx;
      int32_t rows = p->oh - oy0 < 2 ? 1 : 2, cols = p->ow - ox0 < 2 ? 1 : 2;
      for (int i = 0; i < rows; i++) {
        float f[2][4];
        v4_store(f[0], v4_clamp(v4_add(r[5 * i], b), lo, hi));
        v4_store(f[1], v4_clamp(v4_add(r[5 * i + 1], b), lo, hi));
        for (int l = 0; l < 4; l++) {
          float *dst = y + (size_t)(o + l) * ohw + (size_t)(oy0 + i) * p->ow + ox0;
          for (int j = 0; j < cols; j++) dst[j] = f[j][l];
        }
      }
    }
  }
}

/* floats of scratch: one padded plane of four channels, then V and Z of all tiles */
static uint64_t run_floats(uint64_t c, uint64_t m, int32_t oh, int32_t ow) {
  uint64_t th = ((uint64_t)oh + 1) / 2, tw = ((uint64_t)ow + 1) / 2, t = th * tw;
  uint64_t planes = nnw_mul(nnw_mul(4 * th + 1, 4 * tw + 1), 4);
  return nnw_add(nnw_add(nnw_mul(NP * t, c), nnw_mul(NP * t, m)), planes);
}

/* Threads (threads/split.h): V by blocks of four input channels (each worker pads its channels
 * into a plane of its own: the scratch's for the caller, its pack buffer for a helper, when the
 * plane fits there; else this phase stays on the caller), the GEMMs by (group, panel)
 * (winograd.h), y by blocks of four output channels; each output computed whole by one tile. */
struct s2_job {
  const struct nnw_conv2d *p;
  const float *xn, *bias;
  float *planes, *v, *z, *yn;
  const int *pos;
  int32_t tw, ph, pw, output;
  size_t tn;
};

static void s2_task(void *ctx, int32_t start, int32_t count, int32_t worker) {
  const struct s2_job *j = ctx;
  float *plane = worker == 0 ? j->planes : nnw_pool_pack_buf(worker);
  for (int32_t ci = 4 * start; ci < 4 * (start + count); ci += 4) {
    if (j->output) {
      transform_output(j->p, j->z, j->tw, j->tn, j->pos, j->bias, j->yn, ci, ci + 4);
    } else {
      nnw_conv2d_winograd_pad_plane(j->p, j->xn, ci, j->ph, j->pw, plane);
      transform_input(plane, j->tw, j->tn, j->p->c, ci, j->pos, j->v);
    }
  }
}

static void winograd_s2_run(const struct nnw_conv2d *p, const float *x, const float *u,
                            const float *bias, float *y, float *scratch) {
  int pos[NP], start[NG + 1];
  layout(pos, start);
  int32_t c = p->c, m = p->m, th = (p->oh + 1) / 2, tw = (p->ow + 1) / 2;
  size_t tn = (size_t)th * tw;
  int32_t ph = 4 * th + 1, pw = 4 * tw + 1;
  size_t plane = (size_t)ph * pw; /* pixels of one padded plane */
  float *planes = scratch, *v = planes + plane * 4, *z = v + NP * tn * c;
  int32_t threads = nnw_split_threads((uint64_t)tn * c * m * NP, NNW_SPLIT_MIN_FLOPS, c / 4);
  int32_t in_threads = plane * 4 <= NNW_PACK_A_FLOATS ? threads : 1;
  for (int32_t ni = 0; ni < p->n; ni++) {
    struct s2_job job = {p, x + (size_t)ni * c * p->h * p->w, bias, planes, v, z,
                         y + (size_t)ni * m * p->oh * p->ow, pos, tw, ph, pw, 0, tn};
    nnw_parallel_for(c / 4, in_threads > 1 ? nnw_split_tile(c / 4, in_threads) : c / 4, s2_task, &job);
    if (threads > 1) {
      struct nnw_wg_gemms g = {(int32_t)tn, c, m, (m + NNW_WG_PANEL - 1) / NNW_WG_PANEL, start, v, u, z};
      nnw_wg_gemms(&g, NG, threads);
    } else {
      for (int g = 0; g < NG; g++) {
        size_t r0 = (size_t)start[g] * tn, rows = (size_t)(start[g + 1] - start[g]) * tn;
        nnw_wg_gemm((int32_t)rows, c, m, v + r0 * c, u + (size_t)g * c * m, z + r0 * m);
      }
    }
    job.output = 1;
    nnw_parallel_for(m / 4, threads > 1 ? nnw_split_tile(m / 4, threads) : m / 4, s2_task, &job);
  }
}

/* Scratch bytes of conv2d_winograd_s2, or -1 for parameters it refuses. */
static int64_t scratch_bytes(int32_t c, int32_t m, int32_t oh, int32_t ow) {
  int32_t pos[] = {c, m, oh, ow};
  if (nnw_check_positive(pos, 4) || c % 4 || m % 4 || oh > LIMIT || ow > LIMIT) return -1;
  uint64_t bytes = nnw_mul(run_floats((uint64_t)c, (uint64_t)m, oh, ow), 4);
  return bytes > INT32_MAX ? -1 : (int64_t)bytes;
}

NNW_EXPORT int32_t nnw_conv2d_winograd_s2_scratch_bytes(int32_t c, int32_t m, int32_t oh, int32_t ow) {
  return (int32_t)scratch_bytes(c, m, oh, ow);
}

/* The choice table: 1 where conv2d_winograd_s2 beats conv2d (im2col + GEMM) in V8. Measured
 * in ResNet-50 (bench/ab/ab_ops.mjs, per-op medians, ms, conv2d -> conv2d_winograd_s2): 128 @28
 * out (196 tiles) 4.96 -> 3.97, 256 @14 (49 tiles) 5.06 -> 3.93, 512 @7 (16 tiles, 8x8 outputs
 * computed for 7x7, U 17 MB) 5.82 -> 6.19 (loses): from 25 tiles on. Tiles in blocks whose V and Z
 * fit L2 (conv2d_winograd.c's tile_block) did not pay: 128 @28 4.44 -> 4.51. */
NNW_EXPORT int32_t nnw_conv2d_winograd_s2_pays(int32_t c, int32_t m, int32_t oh, int32_t ow) {
  if (scratch_bytes(c, m, oh, ow) < 0) return 0;
  return ((int64_t)oh + 1) / 2 * (((int64_t)ow + 1) / 2) >= 25;
}

static void decode(const int32_t *a, struct nnw_conv2d *p) {
  *p = (struct nnw_conv2d){a[NNW_CONV2D_WINOGRAD_S2_X], a[NNW_CONV2D_WINOGRAD_S2_U],
                           a[NNW_CONV2D_WINOGRAD_S2_B], a[NNW_CONV2D_WINOGRAD_S2_Y],
                           a[NNW_CONV2D_WINOGRAD_S2_SCRATCH], a[NNW_CONV2D_WINOGRAD_S2_N],
                           a[NNW_CONV2D_WINOGRAD_S2_C], a[NNW_CONV2D_WINOGRAD_S2_H],
                           a[NNW_CONV2D_WINOGRAD_S2_W], a[NNW_CONV2D_WINOGRAD_S2_M],
                           a[NNW_CONV2D_WINOGRAD_S2_OH], a[NNW_CONV2D_WINOGRAD_S2_OW], 3, 3, 2, 2, 1, 1,
                           a[NNW_CONV2D_WINOGRAD_S2_PT], a[NNW_CONV2D_WINOGRAD_S2_PL], 1,
                           nnw_arg_f32(a[NNW_CONV2D_WINOGRAD_S2_ACT_MIN]),
                           nnw_arg_f32(a[NNW_CONV2D_WINOGRAD_S2_ACT_MAX])};
}

int nnw_validate_conv2d_winograd_s2_weights(const int32_t *args, uint32_t arena_bytes) {
  int32_t c = args[NNW_CONV2D_WINOGRAD_S2_WEIGHTS_C], m = args[NNW_CONV2D_WINOGRAD_S2_WEIGHTS_M];
  return nnw_conv2d_winograd_check_weights(c, m, args[NNW_CONV2D_WINOGRAD_S2_WEIGHTS_WEIGHT],
                                           args[NNW_CONV2D_WINOGRAD_S2_WEIGHTS_U], NG,
                                           scratch_bytes(c, m, 1, 1) >= 0, arena_bytes);
}

void nnw_run_conv2d_winograd_s2_weights(const int32_t *args, uint8_t *arena) {
  transform_weights(nnw_f32_at(arena, args[NNW_CONV2D_WINOGRAD_S2_WEIGHTS_WEIGHT]),
                    args[NNW_CONV2D_WINOGRAD_S2_WEIGHTS_C], args[NNW_CONV2D_WINOGRAD_S2_WEIGHTS_M],
                    nnw_f32_at(arena, args[NNW_CONV2D_WINOGRAD_S2_WEIGHTS_U]));
}

int nnw_validate_conv2d_winograd_s2(const int32_t *args, uint32_t arena_bytes) {
  struct nnw_conv2d p;
  decode(args, &p);
  return nnw_conv2d_winograd_check(&p, NG, scratch_bytes(p.c, p.m, p.oh, p.ow), LIMIT, arena_bytes);
}

void nnw_run_conv2d_winograd_s2(const int32_t *args, uint8_t *arena) {
  struct nnw_conv2d p;
  decode(args, &p);
  winograd_s2_run(&p, nnw_f32_at(arena, p.x), nnw_f32_at(arena, p.wt), nnw_f32_at(arena, p.b),
                  nnw_f32_at(arena, p.y), nnw_f32_at(arena, p.scratch));
}
