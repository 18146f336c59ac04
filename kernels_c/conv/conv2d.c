/* conv2d: NCHW f32, groups, strides, dilations, pads, optional bias, fused clamp.
 * The kernel picks its algorithm (conv2d_algo) and says how much scratch it needs:
 *   depthwise  group == c, m a multiple of c: direct, SIMD across four channels
 *              (conv2d_dw_c4.c: 3x3 and 5x5 kernels, mostly) or along the output width (conv2d_dw.c)
 *   pointwise  1x1, stride 1, no pad: one GEMM per group straight over the input
 *   winograd   3x3 stride 1, channels in fours, outputs 27x27 and up: F(4x4, 3x3) (conv2d_winograd.c)
 *   im2col     anything else: columns into scratch, then the GEMM (in bands of output rows for
 *              stems: band_rows)
 * (3x3 stride 2 convs on constant weights may run as the plan op conv2d_winograd_s2 instead:
 * conv2d_winograd_s2.c.) */
#include <math.h>

#include "conv2d.h"
#include "simd.h"
#include "threads/split.h"

void nnw_conv2d_decode(const int32_t *a, struct nnw_conv2d *p) {
  p->x = a[NNW_CONV2D_X];
  p->wt = a[NNW_CONV2D_WEIGHT];
  p->b = a[NNW_CONV2D_B];
  p->y = a[NNW_CONV2D_Y];
  p->scratch = a[NNW_CONV2D_SCRATCH];
  p->n = a[NNW_CONV2D_N];
  p->c = a[NNW_CONV2D_C];
  p->h = a[NNW_CONV2D_H];
  p->w = a[NNW_CONV2D_W];
  p->m = a[NNW_CONV2D_M];
  p->oh = a[NNW_CONV2D_OH];
  p->ow = a[NNW_CONV2D_OW];
  p->kh = a[NNW_CONV2D_KH];
  p->kw = a[NNW_CONV2D_KW];
  p->sh = a[NNW_CONV2D_SH];
  p->sw = a[NNW_CONV2D_SW];
  p->dh = a[NNW_CONV2D_DH];
  p->dw = a[NNW_CONV2D_DW];
  p->pt = a[NNW_CONV2D_PT];
  p->pl = a[NNW_CONV2D_PL];
  p->group = a[NNW_CONV2D_GROUP];
  p->lo = nnw_arg_f32(a[NNW_CONV2D_ACT_MIN]);
  p->hi = nnw_arg_f32(a[NNW_CONV2D_ACT_MAX]);
}

enum nnw_conv2d_algo nnw_conv2d_algo(int32_t c, int32_t m, int32_t group, int32_t kh, int32_t kw,
                                     int32_t oh, int32_t ow, int32_t sh, int32_t sw, int32_t dh,
                                     int32_t dw, int32_t pt, int32_t pl, int32_t h, int32_t w) {
  if (group == c && m % c == 0) return NNW_CONV2D_DEPTHWISE;
  if (nnw_conv2d_winograd_fits(c, m, group, kh, kw, oh, ow, sh, sw, dh, dw))
    return NNW_CONV2D_WINOGRAD;
  if (kh == 1 && kw == 1 && sh == 1 && sw == 1 && pt == 0 && pl == 0 && oh == h && ow == w)
    return NNW_CONV2D_POINTWISE;
  return NNW_CONV2D_IM2COL;
}

/* The GEMM of a conv with a large weight matrix A (mg x k) and few output pixels n (deep layers:
 * ResNet-50's 7x7 ones, im2col only) runs in chunks of kc along k, so that gemm_nn's column block (128 KB of
 * B) spans all n columns and A is read once instead of once per 8 columns; the partial sums
 * alternate between y and a scratch of mg x n floats (gemm_nn's epilogue adds C, which must not
 * be y itself). Returns kc, or k when not chunked. */
static int32_t gemm_chunk(int32_t mg, int32_t n, int32_t k) {
  int64_t n8 = ((int64_t)n + 7) / 8 * 8, kc = 32768 / n8;
  if ((int64_t)mg * k * 4 <= 512 * 1024 || (int64_t)k * n8 <= 32768 || kc < 64) return k;
  return (int32_t)kc;
}

/* Output rows per band of an im2col conv not chunked along k. Where the columns of the whole
 * image would not fit L2 (over 1 MB), im2col and the GEMM go band by band, each band's columns
 * about 128 KB, so the GEMM reads them from L2 instead of memory. V8, per-op medians in ResNet-50:
 * conv1 (7x7/2, k = 147, 7.4 MB of columns) 5.96 -> 5.00 ms; layer2's 1x1/2 downsample (0.8 MB,
 * 512 KB of weights re-read per band) lost in bands (4.18 -> 4.43), hence the 1 MB, and weights
 * of 128 KB at most (the 3x3/2 128 @56, 590 KB: 4.90 -> 5.01 in bands of one row). */
static int32_t band_rows(int32_t mg, int32_t k, int32_t ow, int32_t oh) {
  if ((int64_t)k * ow * oh * 4 <= 1024 * 1024 || (int64_t)mg * k * 4 > 128 * 1024) return oh;
  int64_t rows = 32768 / ((int64_t)k * ow);
  return rows < 1 ? 1 : rows > oh ? oh : (int32_t)rows;
}

/* The largest coordinate a kernel computes: checked so that int32 index arithmetic is exact. */
#define COORD_LIMIT ((int64_t)1 << 30)

int64_t nnw_conv2d_scratch_bytes64(int32_t c, int32_t m, int32_t group, int32_t kh, int32_t kw,
                                   int32_t oh, int32_t ow, int32_t sh, int32_t sw, int32_t dh,
                                   int32_t dw, int32_t pt, int32_t pl, int32_t h, int32_t w) {
  int32_t pos[] = {c, m, group, kh, kw, oh, ow, sh, sw, dh, dw, h, w};
  if (nnw_check_positive(pos, (int)(sizeof pos / sizeof pos[0])) || pt < 0 || pl < 0) return -1;
  if (c % group != 0 || m % group != 0) return -1;
  int64_t span_h = (int64_t)(oh - 1) * sh + (int64_t)(kh - 1) * dh + 1;
  int64_t span_w = (int64_t)(ow - 1) * sw + (int64_t)(kw - 1) * dw + 1;
  if (span_h + pt + h > COORD_LIMIT || span_w + pl + w > COORD_LIMIT) return -1;
  uint64_t floats;
  switch (nnw_conv2d_algo(c, m, group, kh, kw, oh, ow, sh, sw, dh, dw, pt, pl, h, w)) {
    case NNW_CONV2D_DEPTHWISE:
      if (nnw_conv2d_dw_c4_fits(c, m, kh, kw, ow, sh, sw, dh, dw))
        floats = nnw_mul(nnw_mul((uint64_t)span_h, (uint64_t)span_w), 4);
      else
        floats = nnw_mul((uint64_t)span_h, nnw_conv2d_dw_row_floats(ow, kw, sw, dw));
      break;
    case NNW_CONV2D_POINTWISE:
      floats = 0;
      break;
    case NNW_CONV2D_WINOGRAD:
      floats = nnw_conv2d_winograd_floats(c, m, oh, ow);
      break;
    default:
      floats = nnw_mul(nnw_mul(nnw_mul((uint64_t)(c / group), (uint64_t)kh), (uint64_t)kw),
                       nnw_mul((uint64_t)oh, (uint64_t)ow));
      break;
  }
  if (floats * 4 > INT32_MAX) return -1;
  enum nnw_conv2d_algo algo = nnw_conv2d_algo(c, m, group, kh, kw, oh, ow, sh, sw, dh, dw, pt, pl, h, w);
  if (algo == NNW_CONV2D_IM2COL) { /* pointwise (k <= 2048 in the nets measured) did not gain */
    int64_t k = (int64_t)(c / group) * kh * kw, n = (int64_t)oh * ow;
    if (k <= INT32_MAX && n <= INT32_MAX && gemm_chunk(m / group, (int32_t)n, (int32_t)k) < k)
      floats = nnw_add(floats, nnw_mul((uint64_t)(m / group), (uint64_t)n));
  }
  return floats * 4 > INT32_MAX ? -1 : (int64_t)(floats * 4);
}

NNW_EXPORT int32_t nnw_conv2d_scratch_bytes(int32_t c, int32_t m, int32_t group, int32_t kh,
                                            int32_t kw, int32_t oh, int32_t ow, int32_t sh,
                                            int32_t sw, int32_t dh, int32_t dw, int32_t pt,
                                            int32_t pl, int32_t h, int32_t w) {
  return (int32_t)nnw_conv2d_scratch_bytes64(c, m, group, kh, kw, oh, ow, sh, sw, dh, dw, pt, pl,
                                             h, w);
}

int nnw_validate_conv2d(const int32_t *args, uint32_t arena_bytes) {
  struct nnw_conv2d p;
  nnw_conv2d_decode(args, &p);
  if (p.n <= 0 || !(p.lo <= p.hi)) return NNW_BAD_ARGS;
  int64_t scratch = nnw_conv2d_scratch_bytes64(p.c, p.m, p.group, p.kh, p.kw, p.oh, p.ow, p.sh,
                                               p.sw, p.dh, p.dw, p.pt, p.pl, p.h, p.w);
  if (scratch < 0) return NNW_BAD_ARGS;
  uint64_t n = (uint64_t)p.n, m = (uint64_t)p.m;
  uint64_t x_bytes = nnw_mul(nnw_mul(n * 4, (uint64_t)p.c), nnw_mul((uint64_t)p.h, (uint64_t)p.w));
  uint64_t w_bytes = nnw_mul(nnw_mul(m * 4, (uint64_t)(p.c / p.group)),
                             nnw_mul((uint64_t)p.kh, (uint64_t)p.kw));
  uint64_t y_bytes = nnw_mul(nnw_mul(n * 4, m), nnw_mul((uint64_t)p.oh, (uint64_t)p.ow));
  NNW_TRY(nnw_check_tensor(p.x, x_bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(p.wt, w_bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(p.b, m * 4, arena_bytes, 1, 1));
  NNW_TRY(nnw_check_tensor(p.y, y_bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(p.scratch, (uint64_t)scratch, arena_bytes, scratch == 0, 1));
  const int32_t at[] = {p.x, p.wt, p.b, p.y, p.scratch};
  const uint64_t size[] = {x_bytes, w_bytes, m * 4, y_bytes, (uint64_t)scratch};
  for (int i = 0; i < 5; i++)      /* the output and the scratch apart from everything else */
    for (int j = i + 1; j < 5; j++)
      if (j >= 3) NNW_TRY(nnw_check_apart(at[i], size[i], at[j], size[j], 0));
  return NNW_OK;
}

/* col[(ci*kh + ky)*kw + kx][(oy - oy0)*ow + ox] = x[ci][oy*sh - pt + ky*dh][ox*sw - pl + kx*dw]
 * for output rows oy0 <= oy < oy1, 0 outside the image */
static void im2col(const struct nnw_conv2d *p, const float *x, int32_t channels, int32_t oy0,
                   int32_t oy1, float *col) {
  for (int32_t ci = 0; ci < channels; ci++) {
    const float *xc = x + (size_t)ci * p->h * p->w;
    for (int32_t ky = 0; ky < p->kh; ky++) {
      for (int32_t kx = 0; kx < p->kw; kx++) {
        /* output columns whose tap lands inside the image: ox in [lo, hi) */
        int32_t off = kx * p->dw - p->pl;
        int32_t lo = off >= 0 ? 0 : (-off + p->sw - 1) / p->sw;
        int32_t hi = off >= p->w ? 0 : (p->w - off + p->sw - 1) / p->sw;
        if (hi > p->ow) hi = p->ow;
        if (lo > hi) lo = hi;
        for (int32_t oy = oy0; oy < oy1; oy++, col += p->ow) {
          int32_t iy = oy * p->sh - p->pt + ky * p->dh;
          if (iy < 0 || iy >= p->h) {
            memset(col, 0, sizeof(float) * (size_t)p->ow);
            continue;
          }
          const float *row = xc + (size_t)iy * p->w;
          memset(col, 0, sizeof(float) * (size_t)lo);
          if (hi <= lo) {
            /* no tap inside the image on this row */
          } else if (p->sw == 1) {
            memcpy(col + lo, row + lo + off, sizeof(float) * (size_t)(hi - lo));
          } else {
            int32_t ox = lo;
            if (p->sw == 2) /* the stem's 3x3/2: 6% faster so than column by column */
              for (; ox + 4 <= hi && 2 * ox + off + 8 <= p->w; ox += 4) {
                v4 e, o;
                v4_deinterleave(v4_load(row + 2 * ox + off), v4_load(row + 2 * ox + off + 4), &e, &o);
                v4_store(col + ox, e);
              }
            for (; ox < hi; ox++) col[ox] = row[ox * p->sw + off];
          }
          memset(col + hi, 0, sizeof(float) * (size_t)(p->ow - hi));
        }
      }
    }
  }
}

/* Threads (threads/split.h): a conv's GEMM (pointwise, or an im2col band or chunk) split by
 * output channels in blocks of four rows of A; each row takes the path one thread gives it (whole
 * blocks of four, then the last tile's tail rows; the column blocking depends on n and k only):
 * N threads give the bits of one. im2col itself stays on the caller (its columns feed every tile). */
static void gemm_rows(int32_t m, int32_t n, int32_t k, const float *a, ptrdiff_t lda, const float *b,
                      ptrdiff_t ldb, float *y, ptrdiff_t ldy, const struct nnw_epilogue *ep) {
  nnw_gemm_nn_split(m, n, k, a, lda, 1, b, ldb, y, ldy, ep);
}

void nnw_run_conv2d(const int32_t *args, uint8_t *arena) {
  struct nnw_conv2d p;
  nnw_conv2d_decode(args, &p);
  const float *x = nnw_f32_at(arena, p.x), *wt = nnw_f32_at(arena, p.wt);
  const float *bias = nnw_f32_at(arena, p.b);
  float *y = nnw_f32_at(arena, p.y), *scratch = nnw_f32_at(arena, p.scratch);
  enum nnw_conv2d_algo algo =
      nnw_conv2d_algo(p.c, p.m, p.group, p.kh, p.kw, p.oh, p.ow, p.sh, p.sw, p.dh, p.dw, p.pt,
                      p.pl, p.h, p.w);
  if (algo == NNW_CONV2D_WINOGRAD) {
    nnw_conv2d_winograd(&p, x, wt, bias, y, scratch);
    return;
  }
  if (algo == NNW_CONV2D_DEPTHWISE) {
    /* Through a pointer: wasm-opt (emcc's link step) would otherwise inline both depthwise
     * kernels, each called once, into this function, and V8 allocates registers in that merged
     * function worse: dw 3x3 @112 measured 20 GFLOP/s so, 29 through the pointer. */
    void (*dw)(const struct nnw_conv2d *, const float *, const float *, const float *, float *,
               float *) = nnw_conv2d_dw_c4_fits(p.c, p.m, p.kh, p.kw, p.ow, p.sh, p.sw, p.dh, p.dw)
                              ? nnw_conv2d_dw_c4
                              : nnw_conv2d_dw;
    dw(&p, x, wt, bias, y, scratch);
    return;
  }
  int32_t cg = p.c / p.group, mg = p.m / p.group, k = cg * p.kh * p.kw, ohw = p.oh * p.ow;
  size_t hw = (size_t)p.h * p.w;
  for (int32_t ni = 0; ni < p.n; ni++) {
    for (int32_t g = 0; g < p.group; g++) {
      const float *xg = x + ((size_t)ni * p.c + (size_t)g * cg) * hw;
      float *yg = y + ((size_t)ni * p.m + (size_t)g * mg) * ohw;
      struct nnw_epilogue ep = {1.0f, 1.0f, p.lo, p.hi, bias ? bias + g * mg : NULL, 1, 0};
      const float *a = wt + (size_t)g * mg * k;
      if (algo == NNW_CONV2D_POINTWISE) {
        gemm_rows(mg, ohw, k, a, k, xg, ohw, yg, ohw, &ep);
        continue;
      }
      int32_t kc = gemm_chunk(mg, ohw, k);
      if (kc == k) {
        /* bands of output rows whose columns stay in L2 between im2col and the GEMM */
        int32_t rows = band_rows(mg, k, p.ow, p.oh);
        for (int32_t oy0 = 0; oy0 < p.oh; oy0 += rows) {
          int32_t oy1 = p.oh - oy0 < rows ? p.oh : oy0 + rows, cols = (oy1 - oy0) * p.ow;
          im2col(&p, xg, cg, oy0, oy1, scratch);
          gemm_rows(mg, cols, k, a, k, scratch, cols, yg + (size_t)oy0 * p.ow, ohw, &ep);
        }
        continue;
      }
      im2col(&p, xg, cg, 0, p.oh, scratch);
      const float *b = scratch;
      float *tmp = scratch + (size_t)k * ohw;
      int32_t chunks = (k + kc - 1) / kc;
      const float *src = NULL;
      for (int32_t i = 0; i < chunks; i++) {
        int32_t k0 = i * kc, kn = k - k0 < kc ? k - k0 : kc;
        float *dst = (chunks - 1 - i) % 2 == 0 ? yg : tmp;
        struct nnw_epilogue e = {1.0f, 1.0f, i == chunks - 1 ? p.lo : -INFINITY,
                                 i == chunks - 1 ? p.hi : INFINITY, src, ohw, 1};
        if (i == 0) e = (struct nnw_epilogue){1.0f, 1.0f, e.lo, e.hi, ep.c, 1, 0};
        gemm_rows(mg, ohw, kn, a + k0, k, b + (size_t)k0 * ohw, ohw, dst, ohw, &e);
        src = dst;
      }
    }
  }
}
