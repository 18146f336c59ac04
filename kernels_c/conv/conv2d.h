/* conv2d's parameters and algorithms, shared by conv2d.c and conv2d_dw.c. */
#ifndef NNW_CONV2D_PARAMS_H
#define NNW_CONV2D_PARAMS_H
#include <math.h>

#include "internal.h"

struct nnw_conv2d {
  int32_t x, wt, b, y, scratch; /* arena offsets */
  int32_t n, c, h, w, m, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl, group;
  float lo, hi;
};

enum nnw_conv2d_algo {
  NNW_CONV2D_DEPTHWISE,
  NNW_CONV2D_POINTWISE,
  NNW_CONV2D_IM2COL,
  NNW_CONV2D_WINOGRAD
};

void nnw_conv2d_decode(const int32_t *args, struct nnw_conv2d *p);
enum nnw_conv2d_algo nnw_conv2d_algo(int32_t c, int32_t m, int32_t group, int32_t kh, int32_t kw,
                                     int32_t oh, int32_t ow, int32_t sh, int32_t sw, int32_t dh,
                                     int32_t dw, int32_t pt, int32_t pl, int32_t h, int32_t w);

/* Floats of one zero-padded input row in the depthwise scratch (sw column phases). */
static inline uint64_t nnw_conv2d_dw_row_floats(int32_t ow, int32_t kw, int32_t sw, int32_t dw) {
  return (uint64_t)sw * (((uint64_t)ow + 3) / 4 * 4 + (uint64_t)(kw - 1) * (uint64_t)dw / (uint64_t)sw);
}


void nnw_conv2d_dw(const struct nnw_conv2d *p, const float *x, const float *wt, const float *bias,
                   float *y, float *scratch);

/* Depthwise convs that conv2d_dw_c4.c serves (channels four at a time; the others go to
 * nnw_conv2d_dw): its scratch is a padded plane of v4 pixels, span_h * span_w * 4 floats. */
int nnw_conv2d_dw_c4_fits(int32_t c, int32_t m, int32_t kh, int32_t kw, int32_t ow, int32_t sh,
                          int32_t sw, int32_t dh, int32_t dw);
void nnw_conv2d_dw_c4(const struct nnw_conv2d *p, const float *x, const float *wt,
                      const float *bias, float *y, float *scratch);

/* 3x3 stride-1 convs by Winograd F(4x4, 3x3) (conv2d_winograd.c): which it serves, and its
 * scratch in floats */
int nnw_conv2d_winograd_fits(int32_t c, int32_t m, int32_t group, int32_t kh, int32_t kw,
                             int32_t oh, int32_t ow, int32_t sh, int32_t sw, int32_t dh,
                             int32_t dw);
uint64_t nnw_conv2d_winograd_floats(int32_t c, int32_t m, int32_t oh, int32_t ow);
void nnw_conv2d_winograd(const struct nnw_conv2d *p, const float *x, const float *wt,
                         const float *bias, float *y, float *scratch);
/* the validation both Winograd ops share (conv2d_winograd.c): their init op's weights and U of
 * `points` C x M matrices; their conv op's tensors, scratch (-1: refused) and largest pad */
int nnw_conv2d_winograd_check_weights(int32_t c, int32_t m, int32_t wt, int32_t u, int points, int scratch_ok,
                                      uint32_t arena_bytes);
int nnw_conv2d_winograd_check(const struct nnw_conv2d *p, int points, int64_t scratch, int32_t limit,
                              uint32_t arena_bytes);
/* the four channels ci.. of x as a zero-padded plane of ph x pw v4 pixels, pixel (py, px) =
 * x[py-pt][px-pl] (conv2d_winograd.c; conv2d_winograd_s2.c uses it too) */
void nnw_conv2d_winograd_pad_plane(const struct nnw_conv2d *p, const float *x, int32_t ci,
                                   int32_t ph, int32_t pw, float *plane);

#endif
