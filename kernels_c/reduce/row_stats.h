/* A row's float32 statistics, shared by norm.c (LayerNormalization, Instance- and
 * GroupNormalization) and skip_norm.c (the fused residual norms): two passes, the mean, then the
 * mean of squared differences from c (0 for RMS), each over two v4 accumulators in a fixed order,
 * so the kernels that share them give the same bits. */
#ifndef NNW_ROW_STATS_H
#define NNW_ROW_STATS_H
#include <stddef.h>
#include "simd.h"

static inline float nnw_row_mean(const float *x, size_t n) {
  v4 s0 = v4_set1(0.0f), s1 = s0;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    s0 = v4_add(s0, v4_load(x + i));
    s1 = v4_add(s1, v4_load(x + i + 4));
  }
  float s = v4_hsum(v4_add(s0, s1));
  for (; i < n; i++) s += x[i];
  return s / (float)n;
}

/* the mean of (x - c)^2 over n */
static inline float nnw_row_mean_sq(const float *x, size_t n, float c) {
  v4 m = v4_set1(c), s0 = v4_set1(0.0f), s1 = s0;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    v4 d0 = v4_sub(v4_load(x + i), m), d1 = v4_sub(v4_load(x + i + 4), m);
    s0 = v4_madd(s0, d0, d0);
    s1 = v4_madd(s1, d1, d1);
  }
  float s = v4_hsum(v4_add(s0, s1));
  for (; i < n; i++) s += (x[i] - c) * (x[i] - c);
  return s / (float)n;
}
#endif
