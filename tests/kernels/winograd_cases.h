/* What the two Winograd ops' tests share (test_conv_winograd.c defines it): a case and its run
 * against a direct double-precision reference, through the op's plan init op and the op itself,
 * and the hostile arguments of their shared validators. The ops take their arguments in the same
 * order (a static assert in test_conv_winograd.c). */
#ifndef NNW_WINOGRAD_CASES_H
#define NNW_WINOGRAD_CASES_H
#include <stdint.h>

struct wg_case {
  int n, c, h, w, m, pt, pl, pb, pr, bias;
  float lo, hi;
};

/* stride 1: conv2d_winograd (36 points of U); stride 2: conv2d_winograd_s2 (16) */
void wg_run_case(const struct wg_case *t, int stride);
/* 20 random shapes of either op */
void wg_run_random_cases(int stride);
void wg_check_validators(int op, int weights_op, int points, int32_t h, int32_t w, int32_t scratch,
                         const char *name);

#endif
