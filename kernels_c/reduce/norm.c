/* norm: LayerNormalization, InstanceNormalization and GroupNormalization as one kernel over x
 * viewed as [outer, groups, cpg, inner]. Statistics are two-pass in float32 (the mean, then the
 * mean of squared deviations), which stays accurate when |mean| >> std, unlike E[x^2] - E[x]^2.
 * y may equal x: each block's statistics are taken before it is written. */
#include <math.h>

#include "internal.h"
#include "simd.h"
#include "threads/split.h"
#include "reduce/row_stats.h"

struct norm {
  int32_t x, scale, bias, y, mean, inv_std, outer, groups, cpg, inner, pg, pc, pi;
  float eps;
};

static void norm_decode(const int32_t *v, struct norm *p) {
  p->x = v[NNW_NORM_X];
  p->scale = v[NNW_NORM_SCALE];
  p->bias = v[NNW_NORM_BIAS];
  p->y = v[NNW_NORM_Y];
  p->mean = v[NNW_NORM_MEAN];
  p->inv_std = v[NNW_NORM_INV_STD];
  p->outer = v[NNW_NORM_OUTER];
  p->groups = v[NNW_NORM_GROUPS];
  p->cpg = v[NNW_NORM_CPG];
  p->inner = v[NNW_NORM_INNER];
  p->pg = v[NNW_NORM_PG];
  p->pc = v[NNW_NORM_PC];
  p->pi = v[NNW_NORM_PI];
  p->eps = nnw_arg_f32(v[NNW_NORM_EPSILON]);
}

int nnw_validate_norm(const int32_t *args, uint32_t arena_bytes) {
  struct norm p;
  norm_decode(args, &p);
  int32_t dims[] = {p.outer, p.groups, p.cpg, p.inner};
  NNW_TRY(nnw_check_positive(dims, 4));
  if (p.pg < 0 || p.pc < 0 || p.pi & ~1) return NNW_BAD_ARGS;
  uint64_t stats = nnw_mul((uint64_t)p.outer, (uint64_t)p.groups) * 4;
  uint64_t x_bytes = nnw_mul(nnw_mul(stats, (uint64_t)p.cpg), (uint64_t)p.inner);
  uint64_t param_last = nnw_add(nnw_add(nnw_mul((uint64_t)p.groups - 1, (uint64_t)p.pg),
                                        nnw_mul((uint64_t)p.cpg - 1, (uint64_t)p.pc)),
                                (uint64_t)(p.inner - 1) * (uint64_t)p.pi);
  uint64_t param_bytes = nnw_mul(param_last + 1, 4);
  NNW_TRY(nnw_check_tensor(p.x, x_bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(p.y, x_bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(p.scale, param_bytes, arena_bytes, 1, 1));
  NNW_TRY(nnw_check_tensor(p.bias, param_bytes, arena_bytes, 1, 1));
  NNW_TRY(nnw_check_tensor(p.mean, stats, arena_bytes, 1, 1));
  NNW_TRY(nnw_check_tensor(p.inv_std, stats, arena_bytes, 1, 1));
  NNW_TRY(nnw_check_apart(p.x, x_bytes, p.y, x_bytes, 1));
  const int32_t read[] = {p.x, p.scale, p.bias};
  const uint64_t read_bytes[] = {x_bytes, param_bytes, param_bytes};
  const int32_t written[] = {p.y, p.mean, p.inv_std};
  const uint64_t written_bytes[] = {x_bytes, stats, stats};
  for (int w = 0; w < 3; w++) {
    for (int r = w == 0 ? 1 : 0; r < 3; r++)
      NNW_TRY(nnw_check_apart(read[r], read_bytes[r], written[w], written_bytes[w], 0));
    for (int o = w + 1; o < 3; o++)
      NNW_TRY(nnw_check_apart(written[o], written_bytes[o], written[w], written_bytes[w], 0));
  }
  return NNW_OK;
}

/* y = (x - mean) * inv * scale[i] + bias[i] along a row of parameters (LayerNormalization) */
static void apply_row(const float *x, float *y, int32_t n, float mean, float inv,
                      const float *scale, const float *bias) {
  v4 vm = v4_set1(mean), vi = v4_set1(inv), one = v4_set1(1.0f), zero = v4_set1(0.0f);
  int32_t i = 0;
  for (; i + 4 <= n; i += 4) {
    v4 t = v4_mul(v4_sub(v4_load(x + i), vm), vi);
    t = v4_mul(t, scale ? v4_load(scale + i) : one);
    v4_store(y + i, v4_add(t, bias ? v4_load(bias + i) : zero));
  }
  for (; i < n; i++)
    y[i] = (x[i] - mean) * inv * (scale ? scale[i] : 1.0f) + (bias ? bias[i] : 0.0f);
}

/* y = (x - mean) * a + b with one a and b for the whole run (a channel) */
static void apply_const(const float *x, float *y, int32_t n, float mean, float a, float b) {
  v4 vm = v4_set1(mean), va = v4_set1(a), vb = v4_set1(b);
  int32_t i = 0;
  for (; i + 4 <= n; i += 4) v4_store(y + i, v4_madd(vb, v4_sub(v4_load(x + i), vm), va));
  for (; i < n; i++) y[i] = (x[i] - mean) * a + b;
}

/* slabs [s0, s1) of outer * groups. Threads (threads/split.h): the slabs in tiles, each slab's
 * statistics and outputs computed whole by this code: N threads give the bits of one. */
static void norm_slabs(const void *pp, uint8_t *arena, int32_t s0, int32_t s1) {
  const struct norm p = *(const struct norm *)pp;
  const float *x = nnw_f32_at(arena, p.x), *scale = nnw_f32_at(arena, p.scale);
  const float *bias = nnw_f32_at(arena, p.bias);
  float *y = nnw_f32_at(arena, p.y), *mean_out = nnw_f32_at(arena, p.mean);
  float *inv_out = nnw_f32_at(arena, p.inv_std);
  size_t block = (size_t)p.cpg * p.inner;
  x += (size_t)s0 * block;
  y += (size_t)s0 * block;
  for (int32_t s = s0; s < s1; s++, x += block, y += block) {
    int32_t g = s % p.groups;
    float mean = nnw_row_mean(x, block);
    float inv = 1.0f / sqrtf(nnw_row_mean_sq(x, block, mean) + p.eps);
    if (mean_out) mean_out[s] = mean;
    if (inv_out) inv_out[s] = inv;
    for (int32_t c = 0; c < p.cpg; c++) {
      size_t at = (size_t)g * p.pg + (size_t)c * p.pc;
      const float *xc = x + (size_t)c * p.inner;
      float *yc = y + (size_t)c * p.inner;
      if (p.pi)
        apply_row(xc, yc, p.inner, mean, inv, scale ? scale + at : NULL, bias ? bias + at : NULL);
      else
        apply_const(xc, yc, p.inner, mean, inv * (scale ? scale[at] : 1.0f), bias ? bias[at] : 0.0f);
    }
  }
}

void nnw_run_norm(const int32_t *args, uint8_t *arena) {
  struct norm p;
  norm_decode(args, &p);
  /* validated: outer * groups * cpg * inner floats fit in the arena, so slabs < 2^30 */
  int32_t slabs = p.outer * p.groups;
  /* three passes over each element (mean, variance, apply) */
  uint64_t work = 3 * (uint64_t)slabs * (uint64_t)p.cpg * (uint64_t)p.inner;
  nnw_split_rows(slabs, work, NNW_SPLIT_MIN_ELEMS, norm_slabs, &p, arena);
}
