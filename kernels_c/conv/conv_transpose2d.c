/* conv_transpose2d: NCHW f32, groups, strides, dilations, pads (negative too), optional bias,
 * fused clamp. Per image and group one GEMM makes every tap's contribution of every input pixel,
 * col[(o*kh + ky)*kw + kx][iy*w + ix] = sum_ci weight[ci][o][ky][kx] * x[ci][iy][ix],
 * then col2im adds each tap's plane into the output at its stride, over the bias. The GEMM is
 * almost all of the work (its k is the input channels, and U-Net's up-convolutions have many).
 * Its A is the weight transposed to [mg*kh*kw, cg] per group, in scratch: read in place, down
 * a power-of-two stride, it thrashed L1 and ran 3x slower (5 GFLOP/s against 18 for Conv). */
#include <math.h>

#include "internal.h"
#include "simd.h"

struct ct {
  int32_t x, wt, b, y, scratch;
  int32_t n, c, h, w, m, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl, group;
  float lo, hi;
};

static void decode(const int32_t *a, struct ct *p) {
  p->x = a[NNW_CONV_TRANSPOSE2D_X];
  p->wt = a[NNW_CONV_TRANSPOSE2D_WEIGHT];
  p->b = a[NNW_CONV_TRANSPOSE2D_B];
  p->y = a[NNW_CONV_TRANSPOSE2D_Y];
  p->scratch = a[NNW_CONV_TRANSPOSE2D_SCRATCH];
  p->n = a[NNW_CONV_TRANSPOSE2D_N];
  p->c = a[NNW_CONV_TRANSPOSE2D_C];
  p->h = a[NNW_CONV_TRANSPOSE2D_H];
  p->w = a[NNW_CONV_TRANSPOSE2D_W];
  p->m = a[NNW_CONV_TRANSPOSE2D_M];
  p->oh = a[NNW_CONV_TRANSPOSE2D_OH];
  p->ow = a[NNW_CONV_TRANSPOSE2D_OW];
  p->kh = a[NNW_CONV_TRANSPOSE2D_KH];
  p->kw = a[NNW_CONV_TRANSPOSE2D_KW];
  p->sh = a[NNW_CONV_TRANSPOSE2D_SH];
  p->sw = a[NNW_CONV_TRANSPOSE2D_SW];
  p->dh = a[NNW_CONV_TRANSPOSE2D_DH];
  p->dw = a[NNW_CONV_TRANSPOSE2D_DW];
  p->pt = a[NNW_CONV_TRANSPOSE2D_PT];
  p->pl = a[NNW_CONV_TRANSPOSE2D_PL];
  p->group = a[NNW_CONV_TRANSPOSE2D_GROUP];
  p->lo = nnw_arg_f32(a[NNW_CONV_TRANSPOSE2D_ACT_MIN]);
  p->hi = nnw_arg_f32(a[NNW_CONV_TRANSPOSE2D_ACT_MAX]);
}

/* Every coordinate the kernel computes stays below this, so int32 index arithmetic is exact. */
#define COORD_LIMIT ((int64_t)1 << 30)

static int64_t scratch_bytes(int32_t c, int32_t m, int32_t group, int32_t kh, int32_t kw,
                             int32_t h, int32_t w) {
  int32_t pos[] = {c, m, group, kh, kw, h, w};
  if (nnw_check_positive(pos, (int)(sizeof pos / sizeof pos[0]))) return -1;
  if (c % group != 0 || m % group != 0) return -1;
  uint64_t rows = nnw_mul((uint64_t)(m / group), nnw_mul((uint64_t)kh, (uint64_t)kw));
  uint64_t floats = nnw_add(nnw_mul(rows, nnw_mul((uint64_t)h, (uint64_t)w)), /* columns */
                            nnw_mul(rows, (uint64_t)c));                       /* weight^T */
  return floats * 4 > INT32_MAX ? -1 : (int64_t)(floats * 4);
}

NNW_EXPORT int32_t nnw_conv_transpose2d_scratch_bytes(int32_t c, int32_t m, int32_t group,
                                                      int32_t kh, int32_t kw, int32_t h,
                                                      int32_t w) {
  return (int32_t)scratch_bytes(c, m, group, kh, kw, h, w);
}

int nnw_validate_conv_transpose2d(const int32_t *args, uint32_t arena_bytes) {
  struct ct p;
  decode(args, &p);
  int32_t pos[] = {p.n, p.oh, p.ow, p.sh, p.sw, p.dh, p.dw};
  if (nnw_check_positive(pos, (int)(sizeof pos / sizeof pos[0])) || !(p.lo <= p.hi))
    return NNW_BAD_ARGS;
  int64_t scratch = scratch_bytes(p.c, p.m, p.group, p.kh, p.kw, p.h, p.w);
  if (scratch < 0) return NNW_BAD_ARGS;
  int64_t reach_h = (int64_t)(p.h - 1) * p.sh + (int64_t)(p.kh - 1) * p.dh + 1;
  int64_t reach_w = (int64_t)(p.w - 1) * p.sw + (int64_t)(p.kw - 1) * p.dw + 1;
  int64_t pt = p.pt < 0 ? -(int64_t)p.pt : p.pt, pl = p.pl < 0 ? -(int64_t)p.pl : p.pl;
  if (reach_h + pt + p.oh > COORD_LIMIT || reach_w + pl + p.ow > COORD_LIMIT) return NNW_BAD_ARGS;
  uint64_t n = (uint64_t)p.n, m = (uint64_t)p.m;
  uint64_t x_bytes = nnw_mul(nnw_mul(n * 4, (uint64_t)p.c), nnw_mul((uint64_t)p.h, (uint64_t)p.w));
  uint64_t w_bytes = nnw_mul(nnw_mul((uint64_t)p.c * 4, (uint64_t)(p.m / p.group)),
                             nnw_mul((uint64_t)p.kh, (uint64_t)p.kw));
  uint64_t y_bytes = nnw_mul(nnw_mul(n * 4, m), nnw_mul((uint64_t)p.oh, (uint64_t)p.ow));
  NNW_TRY(nnw_check_tensor(p.x, x_bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(p.wt, w_bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(p.b, m * 4, arena_bytes, 1, 1));
  NNW_TRY(nnw_check_tensor(p.y, y_bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(p.scratch, (uint64_t)scratch, arena_bytes, 0, 1));
  const int32_t at[] = {p.x, p.wt, p.b, p.y, p.scratch};
  const uint64_t size[] = {x_bytes, w_bytes, m * 4, y_bytes, (uint64_t)scratch};
  for (int i = 0; i < 5; i++) /* the output and the scratch apart from everything else */
    for (int j = i + 1; j < 5; j++)
      if (j >= 3) NNW_TRY(nnw_check_apart(at[i], size[i], at[j], size[j], 0));
  return NNW_OK;
}

/* Input indices i in [*lo, *hi) whose tap lands inside [0, out): 0 <= i*s + off < out. */
static void tap_range(int32_t off, int32_t s, int32_t in, int32_t out, int32_t *lo, int32_t *hi) {
  int32_t a = off >= 0 ? 0 : (-off + s - 1) / s;
  int32_t b = off >= out ? 0 : (out - off + s - 1) / s;
  if (b > in) b = in;
  if (a > b) a = b;
  *lo = a;
  *hi = b;
}

/* y[o] += col planes of channel o, one (ky, kx) tap at a time */
static void col2im(const struct ct *p, int32_t mg, const float *col, float *y) {
  size_t hw = (size_t)p->h * p->w, ohw = (size_t)p->oh * p->ow;
  for (int32_t o = 0; o < mg; o++, y += ohw) {
    for (int32_t ky = 0; ky < p->kh; ky++) {
      int32_t offy = ky * p->dh - p->pt, iy0, iy1;
      tap_range(offy, p->sh, p->h, p->oh, &iy0, &iy1);
      for (int32_t kx = 0; kx < p->kw; kx++, col += hw) {
        int32_t offx = kx * p->dw - p->pl, ix0, ix1;
        tap_range(offx, p->sw, p->w, p->ow, &ix0, &ix1);
        for (int32_t iy = iy0; iy < iy1; iy++) {
          const float *src = col + (size_t)iy * p->w;
          float *row = y + (size_t)(iy * p->sh + offy) * p->ow;
          int32_t ix = ix0;
          if (p->sw == 1) {
            float *dst = row + ix0 + offx; /* in the row: ix0 + offx >= 0 */
            for (; ix + 4 <= ix1; ix += 4, dst += 4) v4_store(dst, v4_add(v4_load(dst), v4_load(src + ix)));
            for (; ix < ix1; ix++, dst++) *dst += src[ix];
          } else {
            for (; ix < ix1; ix++) row[ix * p->sw + offx] += src[ix];
          }
        }
      }
    }
  }
}

void nnw_run_conv_transpose2d(const int32_t *args, uint8_t *arena) {
  struct ct p;
  decode(args, &p);
  const float *x = nnw_f32_at(arena, p.x), *wt = nnw_f32_at(arena, p.wt);
  const float *bias = nnw_f32_at(arena, p.b);
  float *y = nnw_f32_at(arena, p.y), *col = nnw_f32_at(arena, p.scratch);
  int32_t cg = p.c / p.group, mg = p.m / p.group, rows = mg * p.kh * p.kw, hw = p.h * p.w;
  size_t ohw = (size_t)p.oh * p.ow;
  float *wt_t = col + (size_t)rows * hw; /* [group][rows][cg] */
  for (int32_t g = 0; g < p.group; g++)
    for (int32_t ci = 0; ci < cg; ci++) {
      const float *src = wt + ((size_t)g * cg + ci) * rows;
      float *dst = wt_t + (size_t)g * rows * cg + ci;
      for (int32_t r = 0; r < rows; r++) dst[(size_t)r * cg] = src[r];
    }
  struct nnw_epilogue ep = {1.0f, 0.0f, -INFINITY, INFINITY, NULL, 0, 0};
  for (int32_t ni = 0; ni < p.n; ni++) {
    float *yn = y + (size_t)ni * p.m * ohw;
    for (int32_t o = 0; o < p.m; o++) {
      float v = bias ? bias[o] : 0.0f;
      for (size_t i = 0; i < ohw; i++) yn[o * ohw + i] = v;
    }
    for (int32_t g = 0; g < p.group; g++) {
      const float *xg = x + ((size_t)ni * p.c + (size_t)g * cg) * hw;
      nnw_gemm_nn(rows, hw, cg, wt_t + (size_t)g * rows * cg, cg, 1, xg, hw, col, hw, &ep);
      col2im(&p, mg, col, yn + (size_t)g * mg * ohw);
    }
    if (p.lo > -INFINITY || p.hi < INFINITY) {
      v4 lo = v4_set1(p.lo), hi = v4_set1(p.hi);
      size_t count = (size_t)p.m * ohw, i = 0;
      for (; i + 4 <= count; i += 4) v4_store(yn + i, v4_clamp(v4_load(yn + i), lo, hi));
      for (; i < count; i++) yn[i] = yn[i] < p.lo ? p.lo : p.hi < yn[i] ? p.hi : yn[i];
    }
  }
}
