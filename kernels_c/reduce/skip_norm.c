/* skip_norm: a transformer block's residual add and its LayerNorm or RMSNorm in one pass over each
 * row (com.microsoft SkipLayerNormalization / SkipSimplifiedLayerNormalization, ai.onnx
 * SimplifiedLayerNormalization / RMSNormalization, EmbedLayerNormalization's norm). A decoder runs
 * two per layer per token: the sum is written once (to y, or to `sum` when it is an output) and
 * read back from there while it is still in cache, instead of an Add op's full round trip.
 * Statistics are two-pass in float32 as norm.c's: the mean, then the mean of squared deviations
 * (RMS: the mean of squares), each summed in two 4-lane accumulators then lanes, in a fixed order. */
#include <math.h>

#include "internal.h"
#include "simd.h"
#include "threads/split.h"
#include "reduce/row_stats.h"

struct skip_norm {
  int32_t x, skip, bias, gamma, beta, y, sum, mean, inv_std, rows, hidden, skip_rows, rms;
  float eps;
};

static void decode(const int32_t *v, struct skip_norm *p) {
  p->x = v[NNW_SKIP_NORM_X];
  p->skip = v[NNW_SKIP_NORM_SKIP];
  p->bias = v[NNW_SKIP_NORM_BIAS];
  p->gamma = v[NNW_SKIP_NORM_GAMMA];
  p->beta = v[NNW_SKIP_NORM_BETA];
  p->y = v[NNW_SKIP_NORM_Y];
  p->sum = v[NNW_SKIP_NORM_SUM];
  p->mean = v[NNW_SKIP_NORM_MEAN];
  p->inv_std = v[NNW_SKIP_NORM_INV_STD];
  p->rows = v[NNW_SKIP_NORM_ROWS];
  p->hidden = v[NNW_SKIP_NORM_HIDDEN];
  p->skip_rows = v[NNW_SKIP_NORM_SKIP_ROWS];
  p->rms = v[NNW_SKIP_NORM_RMS];
  p->eps = nnw_arg_f32(v[NNW_SKIP_NORM_EPSILON]);
}

int nnw_validate_skip_norm(const int32_t *v, uint32_t arena_bytes) {
  struct skip_norm p;
  decode(v, &p);
  int32_t dims[] = {p.rows, p.hidden, p.skip_rows};
  NNW_TRY(nnw_check_positive(dims, 3));
  if (p.rms & ~1 || p.skip_rows > p.rows) return NNW_BAD_ARGS;
  uint64_t row = nnw_mul((uint64_t)p.hidden, 4), x_bytes = nnw_mul(row, (uint64_t)p.rows);
  uint64_t skip_bytes = nnw_mul(row, (uint64_t)p.skip_rows), stats = nnw_mul((uint64_t)p.rows, 4);
  NNW_TRY(nnw_check_tensor(p.x, x_bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(p.y, x_bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(p.skip, skip_bytes, arena_bytes, 1, 1));
  NNW_TRY(nnw_check_tensor(p.bias, row, arena_bytes, 1, 1));
  NNW_TRY(nnw_check_tensor(p.gamma, row, arena_bytes, 1, 1));
  NNW_TRY(nnw_check_tensor(p.beta, row, arena_bytes, 1, 1));
  NNW_TRY(nnw_check_tensor(p.sum, x_bytes, arena_bytes, 1, 1));
  NNW_TRY(nnw_check_tensor(p.mean, stats, arena_bytes, 1, 1));
  NNW_TRY(nnw_check_tensor(p.inv_std, stats, arena_bytes, 1, 1));
  NNW_TRY(nnw_check_apart(p.x, x_bytes, p.y, x_bytes, 1));   /* y may be x */
  const int32_t read[] = {p.x, p.skip, p.bias, p.gamma, p.beta};
  const uint64_t read_bytes[] = {x_bytes, skip_bytes, row, row, row};
  const int32_t written[] = {p.y, p.sum, p.mean, p.inv_std};
  const uint64_t written_bytes[] = {x_bytes, x_bytes, stats, stats};
  for (int w = 0; w < 4; w++) {
    for (int r = w == 0 ? 1 : 0; r < 5; r++)
      NNW_TRY(nnw_check_apart(read[r], read_bytes[r], written[w], written_bytes[w], 0));
    for (int o = w + 1; o < 4; o++)
      NNW_TRY(nnw_check_apart(written[o], written_bytes[o], written[w], written_bytes[w], 0));
  }
  return NNW_OK;
}

/* s = x + skip + bias (left to right, as onnxruntime adds them); skip and bias may be NULL */
static void add_row(const float *x, const float *skip, const float *bias, float *s, int32_t n) {
  int32_t i = 0;
  for (; i + 4 <= n; i += 4) {
    v4 t = v4_load(x + i);
    if (skip) t = v4_add(t, v4_load(skip + i));
    if (bias) t = v4_add(t, v4_load(bias + i));
    v4_store(s + i, t);
  }
  for (; i < n; i++) s[i] = x[i] + (skip ? skip[i] : 0.0f) + (bias ? bias[i] : 0.0f);
}

/* y = (s - mean) * inv * gamma + beta */
static void apply(const float *s, float *y, int32_t n, float mean, float inv, const float *gamma, const float *beta) {
  v4 vm = v4_set1(mean), vi = v4_set1(inv);
  int32_t i = 0;
  for (; i + 4 <= n; i += 4) {
    v4 t = v4_mul(v4_sub(v4_load(s + i), vm), vi);
    if (gamma) t = v4_mul(t, v4_load(gamma + i));
    if (beta) t = v4_add(t, v4_load(beta + i));
    v4_store(y + i, t);
  }
  for (; i < n; i++) {
    float t = (s[i] - mean) * inv;
    if (gamma) t *= gamma[i];
    if (beta) t += beta[i];
    y[i] = t;
  }
}

/* rows [r0, r1). Threads (threads/split.h): rows in tiles, each row computed whole by this code:
 * N threads give the bits of one. */
static void skip_norm_rows(const void *pp, uint8_t *arena, int32_t r0, int32_t r1) {
  const struct skip_norm p = *(const struct skip_norm *)pp;
  const float *x = nnw_f32_at(arena, p.x), *skip = nnw_f32_at(arena, p.skip);
  const float *bias = nnw_f32_at(arena, p.bias), *gamma = nnw_f32_at(arena, p.gamma);
  const float *beta = nnw_f32_at(arena, p.beta);
  float *y = nnw_f32_at(arena, p.y), *sum = nnw_f32_at(arena, p.sum);
  float *mean_out = nnw_f32_at(arena, p.mean), *inv_out = nnw_f32_at(arena, p.inv_std);
  size_t n = (size_t)p.hidden;
  for (int32_t r = r0; r < r1; r++) {
    float *yr = y + (size_t)r * n;
    const float *s = x + (size_t)r * n;   /* without a skip, bias or sum output: x itself */
    const float *sk = skip ? skip + (size_t)(r % p.skip_rows) * n : NULL;
    if (sk || bias || sum) {
      float *t = sum ? sum + (size_t)r * n : yr;
      add_row(s, sk, bias, t, p.hidden);
      s = t;
    }
    float mean = p.rms ? 0.0f : nnw_row_mean(s, (size_t)p.hidden);
    float inv = 1.0f / sqrtf(nnw_row_mean_sq(s, (size_t)p.hidden, mean) + p.eps);
    if (mean_out) mean_out[r] = mean;
    if (inv_out) inv_out[r] = inv;
    apply(s, yr, p.hidden, mean, inv, gamma, beta);
  }
}

void nnw_run_skip_norm(const int32_t *v, uint8_t *arena) {
  struct skip_norm p;
  decode(v, &p);
  /* four passes over each element (add, mean, variance, apply) */
  uint64_t work = 4 * (uint64_t)p.rows * (uint64_t)p.hidden;
  nnw_split_rows(p.rows, work, NNW_SPLIT_MIN_ELEMS, skip_norm_rows, &p, arena);
}
