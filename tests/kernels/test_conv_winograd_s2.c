/* conv2d_winograd_s2_weights (the init op) and conv2d_winograd_s2 (3x3 stride 2) against a
 * direct double-precision reference, through test_conv_winograd.c's case runner (winograd_cases.h):
 * the transform run once at plan load, then the convolution on many shapes (tiles cut by the
 * image's edge, odd and even sizes, pads and crops, batch 2, no bias, clamps), and hostile
 * arguments. */
#include <math.h>

#include "harness.h"
#include "tests.h"
#include "winograd_cases.h"

/* The scratch query and the choice table refuse what the kernel does not take; the validators
 * (shared with conv2d_winograd) are checked through this op too. */
static void s2_hostile(void) {
  int32_t c = 8, m = 4, h = 14, w = 14, scratch = nnw_conv2d_winograd_s2_scratch_bytes(c, m, 7, 7);
  expect(scratch > 0, "winograd_s2 scratch query");
  expect(nnw_conv2d_winograd_s2_scratch_bytes(6, 4, 7, 7) == -1, "winograd_s2 c % 4 refused");
  expect(nnw_conv2d_winograd_s2_scratch_bytes(4, 4, 0, 7) == -1, "winograd_s2 oh 0 refused");
  expect(nnw_conv2d_winograd_s2_scratch_bytes(4, 4, 7, 1 << 30) == -1, "winograd_s2 ow huge refused");
  expect(nnw_conv2d_winograd_s2_pays(6, 4, 56, 56) == 0, "winograd_s2 pays only where it runs");
  expect(nnw_conv2d_winograd_s2_pays(8, 8, 7, 7) == 0 && nnw_conv2d_winograd_s2_pays(8, 8, 14, 14),
         "winograd_s2 pays from 25 tiles");
  wg_check_validators(NNW_OP_CONV2D_WINOGRAD_S2, NNW_OP_CONV2D_WINOGRAD_S2_WEIGHTS, 16, h, w, scratch, "winograd_s2");
}

void test_conv2d_winograd_s2(void) {
  const float I = INFINITY;
  static const struct wg_case cases[] = {
      /* n  c   h   w   m pt pl pb pr bias lo hi */
      {1, 8, 14, 14, 4, 1, 1, 1, 1, 1, 0, I},     /* ResNet-50's layer4 shape: 7x7, edge tiles */
      {1, 16, 28, 28, 8, 1, 1, 1, 1, 1, -I, I},   /* 14x14 */
      {1, 8, 13, 13, 12, 1, 1, 1, 1, 0, 0, 6},    /* odd sizes */
      {2, 8, 9, 11, 4, 0, 0, 0, 0, 1, -I, I},     /* no pads, batch 2 */
      {1, 4, 3, 3, 4, 1, 1, 1, 1, 1, -I, I},      /* one partial tile */
      {1, 4, 1, 1, 8, 1, 1, 1, 1, 1, -I, I},      /* 1x1 image */
      {1, 4, 6, 10, 4, 2, 0, 1, 2, 1, -1, 1},     /* asymmetric pads */
      {1, 4, 10, 9, 4, 1, 1, -1, 0, 1, -I, I},    /* bottom crop */
      {1, 12, 5, 17, 16, 0, 2, 2, 0, 1, -I, I},
      {1, 64, 14, 14, 32, 1, 1, 1, 1, 1, 0, I},
      {1, 4, 60, 59, 4, 1, 1, 1, 1, 1, -I, I},    /* many tiles */
      {2, 16, 45, 43, 20, 1, 1, 1, 1, 1, -I, I},  /* edge tiles, batch 2 */
      {1, 32, 58, 58, 32, 1, 1, 1, 1, 1, 0, I},   /* many channels and tiles */
      {2, 16, 61, 57, 24, 1, 1, 0, 1, 1, -I, I},  /* edge tiles, batch 2 */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) wg_run_case(&cases[i], 2);
  wg_run_random_cases(2);
  s2_hostile();
}
