/* sigmoid and tanh on four lanes, through the exp of a non-positive number only (simd.h), so
 * nothing overflows and both stay within a few ulp, tiny and huge inputs included:
 *   sigmoid(x) = (x >= 0 ? 1 : z) / (1 + z), z = exp(-|x|)
 *   tanh(x) = sign(x) * -u / (2 + u),         u = expm1(-2|x|)  (exact near 0, unlike via exp)
 * unary.c and recurrent.c use them. */
#ifndef NNW_ACT4_H
#define NNW_ACT4_H
#include "simd.h"

static inline v4 nnw_sigmoid4(v4 x) {
  v4 one = v4_set1(1.0f);
  v4 z = v4_exp_nonpos(v4_sub(v4_set1(0.0f), v4_abs(x)));
  return v4_div(v4_select_nonneg(x, one, z), v4_add(one, z));
}

static inline v4 nnw_tanh4(v4 x) {
  v4 u = v4_expm1_nonpos(v4_mul(v4_set1(-2.0f), v4_abs(x)));
  return v4_copysign(v4_div(v4_sub(v4_set1(0.0f), u), v4_add(v4_set1(2.0f), u)), x);
}

#endif
