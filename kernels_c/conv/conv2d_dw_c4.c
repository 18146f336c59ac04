/* Depthwise conv2d four channels at a time: v4 lanes are channels, not columns.
 *
 * The four channels' planes are interleaved into one zero-padded plane of v4 pixels in scratch
 * (4x4 transposes); an output pixel is then a sum of k*k vector products at fixed offsets, and
 * four neighbouring output pixels are transposed back into the four output planes. No lane is
 * idle on 7- or 14-wide rows and there is no column phase split for stride 2, which is where
 * the per-row kernel of conv2d_dw.c is weakest. 3x3 and 5x5 kernels, strides 1 and 2. */
#include "conv2d.h"
#include "simd.h"
#include "linalg/pack_a.h"
#include "threads/split.h"

#if defined(__GNUC__)
#define NNW_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define NNW_ALWAYS_INLINE inline
#endif

/* NNW_ROLLED (internal.h) on block4's kernel rows: unrolled, its 3x3 loop held 27 loaded pixels
 * at once in Cranelift and spilled most of them. One block per kernel row: depthwise layers
 * 0.81x the time in wasmtime, unchanged in V8 (bench/ab/ab_kernels.py). */
/* Measured in V8 against conv2d_dw.c (GFLOP/s, EfficientNet-Lite0's layers): this wins on rows
 * of 16 or fewer outputs (dw 5x5 @7: 16 -> 31, dw 3x3 @7: 12 -> 23), on 5x5 kernels (5x5 @28:
 * 28 -> 37) and on stride 2 (3x3/2 @112: 12.6 -> 13.4); the per-row kernel keeps 3x3 stride 1 on
 * wide rows (3x3 @56: 31 against 28 here), where it needs no transposes. */
int nnw_conv2d_dw_c4_fits(int32_t c, int32_t m, int32_t kh, int32_t kw, int32_t ow, int32_t sh,
                          int32_t sw, int32_t dh, int32_t dw) {
  if (m != c || c % 4 != 0 || kh != kw || (kh != 3 && kh != 5) || sh != sw || (sh != 1 && sh != 2) ||
      dh != 1 || dw != 1)
    return 0;
  return kh == 5 || sh == 2 || ow <= 16;
}

/* 4x4 transpose: r[i] lane j becomes r[j] lane i */
static NNW_ALWAYS_INLINE void transpose4(v4 *r) {
  v4 t0 = v4_unpacklo(r[0], r[1]), t1 = v4_unpacklo(r[2], r[3]);
  v4 t2 = v4_unpackhi(r[0], r[1]), t3 = v4_unpackhi(r[2], r[3]);
  r[0] = v4_unpacklo64(t0, t1);
  r[1] = v4_unpackhi64(t0, t1);
  r[2] = v4_unpacklo64(t2, t3);
  r[3] = v4_unpackhi64(t2, t3);
}

/* Interleaves the planes x, x + hw, x + 2hw, x + 3hw into the inside of the padded plane t
 * (span_w v4 pixels a row). Only input rows and columns the conv reads are copied. */
static void fill_c4(const struct nnw_conv2d *p, int32_t span_h, int32_t span_w, const float *x,
                    float *t) {
  size_t hw = (size_t)p->h * p->w;
  int32_t rows = span_h - p->pt < p->h ? span_h - p->pt : p->h;
  int32_t cols = span_w - p->pl < p->w ? span_w - p->pl : p->w;
  for (int32_t iy = 0; iy < rows; iy++) {
    float *d = t + ((size_t)(iy + p->pt) * span_w + p->pl) * 4;
    const float *s = x + (size_t)iy * p->w;
    for (int32_t ix = 0; ix < cols; ix += 4) {
      if (cols < 4) {
        for (int32_t i = 0; i < 4; i++)
          for (int32_t j = 0; j < cols; j++) d[4 * j + i] = s[i * hw + j];
        break;
      }
      int32_t at = ix + 4 <= cols ? ix : cols - 4; /* the last four overlap: same values */
      v4 r[4];
      for (int i = 0; i < 4; i++) r[i] = v4_load(s + i * hw + at);
      transpose4(r);
      for (int i = 0; i < 4; i++) v4_store(d + 4 * (at + i), r[i]);
    }
  }
}

/* Four output pixels, s apart in the padded plane from src: acc[q] = pixel q's four channels.
 * Each loaded input pixel feeds every output pixel whose window covers it. */
static NNW_ALWAYS_INLINE void block4(int k, int s, const float *src, int32_t row, const v4 *wv,
                                     v4 bias, v4 *acc) {
  for (int q = 0; q < 4; q++) acc[q] = bias;
  NNW_ROLLED /* one block per kernel row: see NNW_ROLLED */
  for (int ky = 0; ky < k; ky++, src += row) {
    v4 x[3 * 2 + 5];
    for (int col = 0; col < 3 * s + k; col++) x[col] = v4_load(src + 4 * col);
    for (int kx = 0; kx < k; kx++) {
      v4 w = wv[ky * k + kx];
      for (int q = 0; q < 4; q++) acc[q] = v4_fmadd(acc[q], w, x[q * s + kx]);
    }
  }
}

static NNW_ALWAYS_INLINE void pixel(int k, const float *src, int32_t row, const v4 *wv, v4 *acc) {
  for (int ky = 0; ky < k; ky++, src += row)
    for (int kx = 0; kx < k; kx++) *acc = v4_fmadd(*acc, wv[ky * k + kx], v4_load(src + 4 * kx));
}

/* four output planes (y, y + ohw, ...) from the padded plane t */
static NNW_ALWAYS_INLINE void planes_c4(int k, int s, const struct nnw_conv2d *p, int32_t span_w,
                                        const float *t, const v4 *wv, v4 bias, float *y) {
  v4 lo = v4_set1(p->lo), hi = v4_set1(p->hi);
  int32_t ow = p->ow, row = span_w * 4;
  size_t ohw = (size_t)p->oh * ow;
  for (int32_t oy = 0; oy < p->oh; oy++, y += ow) {
    const float *src = t + (size_t)oy * s * row;
    if (ow < 4) {
      for (int32_t ox = 0; ox < ow; ox++) {
        float tmp[4];
        v4 acc = bias;
        pixel(k, src + 4 * s * ox, row, wv, &acc);
        v4_store(tmp, v4_clamp(acc, lo, hi));
        for (int i = 0; i < 4; i++) y[i * ohw + ox] = tmp[i];
      }
      continue;
    }
    for (int32_t ox = 0; ox < ow; ox += 4) {
      int32_t at = ox + 4 <= ow ? ox : ow - 4; /* the last four overlap: same values */
      v4 acc[4];
      block4(k, s, src + 4 * s * at, row, wv, bias, acc);
      transpose4(acc);
      for (int i = 0; i < 4; i++) v4_store(y + i * ohw + at, v4_clamp(acc[i], lo, hi));
    }
  }
}

/* Threads (threads/split.h): groups of four channels (of every image) split in tiles; each tile
 * interleaves its groups into a scratch of its own (the op's for the caller, a helper's pack buffer
 * when the plane fits there, else the op stays on the caller); every output computed as on one
 * thread. */
struct c4_job {
  const struct nnw_conv2d *p;
  const float *x, *wt, *bias;
  float *y, *scratch;
  int32_t span_h, span_w;
};

static void c4_task(void *ctx, int32_t start, int32_t count, int32_t worker) {
  const struct c4_job *j = ctx;
  const struct nnw_conv2d *p = j->p;
  const float *wt = j->wt, *bias = j->bias;
  float *scratch = worker == 0 ? j->scratch : nnw_pool_pack_buf(worker);
  int32_t k = p->kh, s = p->sh, taps = k * k, span_h = j->span_h, span_w = j->span_w, groups = p->c / 4;
  size_t hw = (size_t)p->h * p->w, ohw = (size_t)p->oh * p->ow;
  /* the padding sits in the same places for every group: zeroed once */
  memset(scratch, 0, (size_t)span_h * span_w * 4 * sizeof(float));
  for (int32_t gi = start; gi < start + count; gi++) {
    int32_t ni = gi / groups, c = gi % groups * 4;
    fill_c4(p, span_h, span_w, j->x + ((size_t)ni * p->c + c) * hw, scratch);
    /* wv[tap] = the four channels' weights of tap, by transposes (building them from
     * scalar stores stalled on store forwarding: 17% of a 5x5 @7 layer's time in perf) */
    v4 wv[25];
    for (int32_t tap = 0; tap < taps; tap += 4) {
      int32_t at = tap + 4 <= taps ? tap : taps - 4; /* taps >= 9: the last four overlap */
      v4 r[4];
      for (int i = 0; i < 4; i++) r[i] = v4_load(wt + (size_t)(c + i) * taps + at);
      transpose4(r);
      for (int i = 0; i < 4; i++) wv[at + i] = r[i];
    }
    v4 vb = bias ? v4_load(bias + c) : v4_set1(0.0f);
    float *yc = j->y + ((size_t)ni * p->m + c) * ohw;
    if (k == 3 && s == 1) planes_c4(3, 1, p, span_w, scratch, wv, vb, yc);
    else if (k == 3) planes_c4(3, 2, p, span_w, scratch, wv, vb, yc);
    else if (s == 1) planes_c4(5, 1, p, span_w, scratch, wv, vb, yc);
    else planes_c4(5, 2, p, span_w, scratch, wv, vb, yc);
  }
}

void nnw_conv2d_dw_c4(const struct nnw_conv2d *p, const float *x, const float *wt,
                      const float *bias, float *y, float *scratch) {
  int32_t k = p->kh, s = p->sh;
  int32_t span_h = (p->oh - 1) * s + k, span_w = (p->ow - 1) * s + k, groups = p->n * (p->c / 4);
  struct c4_job job = {p, x, wt, bias, y, scratch, span_h, span_w};
  uint64_t macs = (uint64_t)p->n * p->m * p->oh * p->ow * k * k;
  int32_t threads = (uint64_t)span_h * span_w * 4 <= NNW_PACK_A_FLOATS
                        ? nnw_split_threads(macs, NNW_SPLIT_MIN_FLOPS, groups) : 1;
  nnw_parallel_for(groups, threads > 1 ? nnw_split_tile(groups, threads) : groups, c4_task, &job);
}
