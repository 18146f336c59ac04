/* softmax / log-softmax over the middle axis of [outer, axis, inner], and mean_rows
 * (GlobalAveragePool). Softmax subtracts the row max first, so exp never overflows and the
 * exp argument is always <= 0 (simd.h). y may equal x. */
#include <math.h>

#include "internal.h"
#include "simd.h"
#include "threads/split.h"

int nnw_validate_softmax(const int32_t *v, uint32_t arena_bytes) {
  int32_t dims[] = {v[NNW_SOFTMAX_OUTER], v[NNW_SOFTMAX_AXIS], v[NNW_SOFTMAX_INNER]};
  NNW_TRY(nnw_check_positive(dims, 3));
  if (v[NNW_SOFTMAX_LOG] & ~1) return NNW_BAD_ARGS;
  uint64_t bytes = nnw_mul(nnw_mul((uint64_t)dims[0] * 4, (uint64_t)dims[1]), (uint64_t)dims[2]);
  NNW_TRY(nnw_check_tensor(v[NNW_SOFTMAX_X], bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(v[NNW_SOFTMAX_Y], bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_apart(v[NNW_SOFTMAX_X], bytes, v[NNW_SOFTMAX_Y], bytes, 1));
  return NNW_OK;
}

static float exp_nonpos(float x) { return v4_lane0(v4_exp_nonpos(v4_set1(x))); }

/* one contiguous row (inner == 1); y may equal x. (linalg/attention.c's scores have their own, with
 * a cheaper exp.) */
static void softmax_row(const float *x, float *y, int32_t len, int log_) {
  int32_t i;
  float mx = nnw_row_max(x, len);
  v4 vmx = v4_set1(mx), sv = v4_set1(0.0f);
  float sum = 0.0f;
  if (log_) {
    for (i = 0; i + 4 <= len; i += 4) sv = v4_add(sv, v4_exp_nonpos(v4_sub(v4_load(x + i), vmx)));
    for (sum = v4_hsum(sv); i < len; i++) sum += exp_nonpos(x[i] - mx);
    v4 shift = v4_set1(mx + logf(sum));
    for (i = 0; i + 4 <= len; i += 4) v4_store(y + i, v4_sub(v4_load(x + i), shift));
    for (float s = mx + logf(sum); i < len; i++) y[i] = x[i] - s;
    return;
  }
  for (i = 0; i + 4 <= len; i += 4) {
    v4 e = v4_exp_nonpos(v4_sub(v4_load(x + i), vmx));
    v4_store(y + i, e);
    sv = v4_add(sv, e);
  }
  for (sum = v4_hsum(sv); i < len; i++) sum += y[i] = exp_nonpos(x[i] - mx);
  v4 r = v4_set1(1.0f / sum);
  for (i = 0; i + 4 <= len; i += 4) v4_store(y + i, v4_mul(v4_load(y + i), r));
  for (; i < len; i++) y[i] *= 1.0f / sum;
}

/* four adjacent columns j..j+3 of one [axis, inner] slab, vectorized across the columns */
static void softmax_cols4(const float *x, float *y, int32_t axis, int32_t inner, int log_) {
  v4 mx = v4_set1(-INFINITY), sum = v4_set1(0.0f);
  for (int32_t a = 0; a < axis; a++) mx = v4_max(mx, v4_load(x + (size_t)a * inner));
  for (int32_t a = 0; a < axis; a++) {
    v4 e = v4_exp_nonpos(v4_sub(v4_load(x + (size_t)a * inner), mx));
    if (!log_) v4_store(y + (size_t)a * inner, e);
    sum = v4_add(sum, e);
  }
  if (log_) {
    float s[4];
    v4_store(s, sum);
    for (int i = 0; i < 4; i++) s[i] = logf(s[i]);
    v4 shift = v4_add(mx, v4_load(s));
    for (int32_t a = 0; a < axis; a++)
      v4_store(y + (size_t)a * inner, v4_sub(v4_load(x + (size_t)a * inner), shift));
    return;
  }
  v4 r = v4_div(v4_set1(1.0f), sum);
  for (int32_t a = 0; a < axis; a++)
    v4_store(y + (size_t)a * inner, v4_mul(v4_load(y + (size_t)a * inner), r));
}

/* one column of a slab (the inner % 4 leftovers) */
static void softmax_col(const float *x, float *y, int32_t axis, int32_t inner, int log_) {
  float mx = -INFINITY, sum = 0.0f;
  for (int32_t a = 0; a < axis; a++) mx = mx < x[(size_t)a * inner] ? x[(size_t)a * inner] : mx;
  for (int32_t a = 0; a < axis; a++) {
    float e = exp_nonpos(x[(size_t)a * inner] - mx);
    if (!log_) y[(size_t)a * inner] = e;
    sum += e;
  }
  float shift = mx + logf(sum), r = 1.0f / sum;
  for (int32_t a = 0; a < axis; a++)
    y[(size_t)a * inner] = log_ ? x[(size_t)a * inner] - shift : y[(size_t)a * inner] * r;
}

static void softmax_slabs(const float *x, float *y, int32_t o0, int32_t o1, int32_t axis, int32_t inner, int log_) {
  size_t slab = (size_t)axis * inner;
  x += (size_t)o0 * slab;
  y += (size_t)o0 * slab;
  for (int32_t o = o0; o < o1; o++, x += slab, y += slab) {
    if (inner == 1) {
      softmax_row(x, y, axis, log_);
      continue;
    }
    int32_t j = 0;
    for (; j + 4 <= inner; j += 4) softmax_cols4(x + j, y + j, axis, inner, log_);
    for (; j < inner; j++) softmax_col(x + j, y + j, axis, inner, log_);
  }
}

/* Threads (threads/split.h): the outer slabs (rows when inner is 1) in tiles, each computed whole
 * by the code one thread uses: N threads give the bits of one. */
struct softmax_job {
  const float *x;
  float *y;
  int32_t axis, inner, log_;
};

static void softmax_task(void *ctx, int32_t start, int32_t count, int32_t worker) {
  const struct softmax_job *j = ctx;
  (void)worker;
  softmax_slabs(j->x, j->y, start, start + count, j->axis, j->inner, j->log_);
}

void nnw_run_softmax(const int32_t *v, uint8_t *arena) {
  int32_t outer = v[NNW_SOFTMAX_OUTER];
  struct softmax_job job = {nnw_f32_at(arena, v[NNW_SOFTMAX_X]), nnw_f32_at(arena, v[NNW_SOFTMAX_Y]),
                            v[NNW_SOFTMAX_AXIS], v[NNW_SOFTMAX_INNER], v[NNW_SOFTMAX_LOG]};
  /* exp per element: worth about 8 adds */
  uint64_t work = 8 * (uint64_t)outer * (uint64_t)job.axis * (uint64_t)job.inner;
  int32_t threads = nnw_split_threads(work, NNW_SPLIT_MIN_ELEMS, outer);
  nnw_parallel_for(outer, threads > 1 ? nnw_split_tile(outer, threads) : outer, softmax_task, &job);
}

int nnw_validate_mean_rows(const int32_t *v, uint32_t arena_bytes) {
  int32_t dims[] = {v[NNW_MEAN_ROWS_ROWS], v[NNW_MEAN_ROWS_INNER]};
  NNW_TRY(nnw_check_positive(dims, 2));
  NNW_TRY(nnw_check_tensor(v[NNW_MEAN_ROWS_X], nnw_mul((uint64_t)dims[0] * 4, (uint64_t)dims[1]),
                           arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(v[NNW_MEAN_ROWS_Y], (uint64_t)dims[0] * 4, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_apart(v[NNW_MEAN_ROWS_X], nnw_mul((uint64_t)dims[0] * 4, (uint64_t)dims[1]),
                          v[NNW_MEAN_ROWS_Y], (uint64_t)dims[0] * 4, 0));
  return NNW_OK;
}

void nnw_run_mean_rows(const int32_t *v, uint8_t *arena) {
  int32_t rows = v[NNW_MEAN_ROWS_ROWS], inner = v[NNW_MEAN_ROWS_INNER];
  const float *x = nnw_f32_at(arena, v[NNW_MEAN_ROWS_X]);
  float *y = nnw_f32_at(arena, v[NNW_MEAN_ROWS_Y]);
  for (int32_t r = 0; r < rows; r++, x += inner) {
    v4 s0 = v4_set1(0.0f), s1 = s0;
    int32_t i = 0;
    for (; i + 8 <= inner; i += 8) {
      s0 = v4_add(s0, v4_load(x + i));
      s1 = v4_add(s1, v4_load(x + i + 4));
    }
    float s = v4_hsum(v4_add(s0, s1));
    for (; i < inner; i++) s += x[i];
    y[r] = s / (float)inner;
  }
}
