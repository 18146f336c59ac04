/* Vector exp and erf over the whole float range, for unary.c (simd.h has the exp of x <= 0 that
 * sigmoid, tanh and softmax need). Both stay within a few ulp; inf, -inf and nan map as libm's. */
#ifndef NNW_VMATH_H
#define NNW_VMATH_H
#include "simd.h"

/* exp(x) = 2^n1 * (1 + p) * 2^n2: nnw_exp_parts' reduction, but with x up to 89 (past
 * FLT_MAX's log, so large x give inf, never nan) and the scale split so that neither factor
 * overflows before the last, correctly rounded, product. */
static inline v4 v4_exp(v4 x) {
  const v4 magic = v4_set1(12582912.0f); /* 0x1.8p23 */
  v4 n, p = nnw_exp_reduce(v4_clamp(x, v4_set1(-104.0f), v4_set1(89.0f)), &n);
  v4 n1 = v4_clamp(n, v4_set1(-125.0f), v4_set1(127.0f));
  v4 n2 = v4_sub(n, n1); /* in [-25, 1] */
  v4 s1 = v4_pow2_from_magic(v4_add(n1, magic)), s2 = v4_pow2_from_magic(v4_add(n2, magic));
  return v4_mul(v4_madd(s1, s1, p), s2);
}

/* erf(x) = x P(x^2) / Q(x^2) on [-4, 4] (erf is +-1 in float beyond): the rational minimax of
 * Eigen and XLA, relative error under 5e-7 (measured against math.erf over [-5, 5]). */
static inline v4 v4_erf(v4 x) {
  x = v4_clamp(x, v4_set1(-4.0f), v4_set1(4.0f));
  v4 x2 = v4_mul(x, x);
  v4 p = v4_set1(-2.72614225801306e-10f);
  p = v4_madd(v4_set1(2.77068142495902e-08f), p, x2);
  p = v4_madd(v4_set1(-2.10102402082508e-06f), p, x2);
  p = v4_madd(v4_set1(-5.69250639462346e-05f), p, x2);
  p = v4_madd(v4_set1(-7.34990630326855e-04f), p, x2);
  p = v4_madd(v4_set1(-2.95459980854025e-03f), p, x2);
  p = v4_madd(v4_set1(-1.60960333262415e-02f), p, x2);
  v4 q = v4_set1(-1.45660718464996e-05f);
  q = v4_madd(v4_set1(-2.13374055278905e-04f), q, x2);
  q = v4_madd(v4_set1(-1.68282697438203e-03f), q, x2);
  q = v4_madd(v4_set1(-7.37332916720468e-03f), q, x2);
  q = v4_madd(v4_set1(-1.42647390514189e-02f), q, x2);
  return v4_mul(x, v4_div(p, q)); /* not (x p) / q, which loses bits for subnormal x */
}

/* gelu(x) = x (1 + erf(x / sqrt 2)) / 2 (unary.c, gemm_packed.c, q8/gemm.c: the same bits) */
static inline v4 v4_gelu(v4 x) {
  v4 e = v4_erf(v4_mul(x, v4_set1(0.707106781186547524f)));
  return v4_mul(v4_mul(v4_set1(0.5f), x), v4_add(v4_set1(1.0f), e));
}

#endif
