/* The exp of attention scores (attention.c, attention_kv.c): one definition, so both kernels'
 * softmaxes give the same bits. */
#ifndef NNW_EXP_SCORES_H
#define NNW_EXP_SCORES_H
#include "simd.h"

/* exp(x) for x <= 0 in the scores' softmax: 2^n (1 + r p(r)) with p of degree 5, fitted on
 * [-ln2/2, ln2/2] (at most 1.2 ulp from libm's exp over [-87, 0], as simd.h's degree 7 Taylor),
 * and 0 below -87.3, where 2^n would leave the normal range: simd.h's exp_nonpos gives denormals
 * there by a split scale, 7 more operations a vector. The exp is most of the softmax, and the
 * softmax a fifth of this op (Q K^T and the product with V, the rest, run at the GEMMs' rate). */
static inline v4 nnw_exp_scores(v4 x) {
  const v4 magic = v4_set1(12582912.0f); /* 0x1.8p23 */
  v4 t = v4_add(v4_mul(x, v4_set1(1.44269504088896341f)), magic);
  v4 n = v4_sub(t, magic);
  v4 r = v4_sub(x, v4_mul(n, v4_set1(0.693145751953125f)));
  r = v4_sub(r, v4_mul(n, v4_set1(1.428606765330187045e-6f)));
  v4 q = v4_set1(0x1.67f832p-10f);
  q = v4_madd(v4_set1(0x1.124b24p-7f), q, r);
  q = v4_madd(v4_set1(0x1.555c30p-5f), q, r);
  q = v4_madd(v4_set1(0x1.555460p-3f), q, r);
  q = v4_madd(v4_set1(0x1.fffff6p-2f), q, r);
  q = v4_madd(v4_set1(1.0f), q, r);
  v4 sc = v4_pow2_from_magic(t);
  v4 e = v4_madd(sc, sc, v4_mul(q, r));
  return v4_select_nonneg(v4_add(x, v4_set1(87.3f)), e, v4_set1(0.0f));
}

#endif
