/* reduce (ReduceSum, ReduceMean, ReduceMax, ... over x viewed as [outer, len, inner]), argreduce
 * (ArgMax, ArgMin, Hardmax) and lp_normalize (LpNormalization). The lowering merges neighbouring axes (and transposes first when the
 * reduced axes are not neighbours), so this one view covers any set of axes.
 * A row (inner == 1) is reduced with vector accumulators; with inner > 1 the output row is the
 * accumulator, updated slab by slab, so x is read once, in order. */
#include <math.h>

#include "internal.h"
#include "simd.h"

enum { SUM, MEAN, MAX, MIN, PROD, L1, L2, SUM_SQUARE, LOG_SUM, LOG_SUM_EXP, KINDS };

static int reduce_dtype_ok(int32_t kind, int32_t dtype) {
  if (dtype == NNW_F32) return 1;
  return (dtype == NNW_I32 || dtype == NNW_I64) && (kind == MAX || kind == MIN || kind == SUM);
}

int nnw_validate_reduce(const int32_t *v, uint32_t arena_bytes) {
  int32_t kind = v[NNW_REDUCE_KIND], dtype = v[NNW_REDUCE_DTYPE];
  int32_t dims[] = {v[NNW_REDUCE_OUTER], v[NNW_REDUCE_LEN], v[NNW_REDUCE_INNER]};
  NNW_TRY(nnw_check_positive(dims, 3));
  if (kind < 0 || kind >= KINDS || !reduce_dtype_ok(kind, dtype)) return NNW_BAD_ARGS;
  uint64_t y_count = nnw_mul((uint64_t)dims[0], (uint64_t)dims[2]);
  uint64_t x_count = nnw_mul(y_count, (uint64_t)dims[1]), size = (uint64_t)nnw_dtype_size(dtype);
  NNW_TRY(nnw_check_typed(v[NNW_REDUCE_X], x_count, dtype, arena_bytes, 0));
  NNW_TRY(nnw_check_typed(v[NNW_REDUCE_Y], y_count, dtype, arena_bytes, 0));
  NNW_TRY(nnw_check_apart(v[NNW_REDUCE_X], nnw_mul(x_count, size), v[NNW_REDUCE_Y],
                          nnw_mul(y_count, size), 0));
  return NNW_OK;
}

/* max and min propagate NaN (as numpy and the ONNX reference do). The scalar forms do it
 * directly; the vector forms add x*0, which turns the accumulator NaN on a NaN but also on an
 * inf, so a NaN result is checked again by exact_extreme (only rows or columns with a NaN or an
 * inf pay for that). */
static inline float max1(float acc, float x) { return acc != acc || acc >= x ? acc : x; }
static inline float min1(float acc, float x) { return acc != acc || acc <= x ? acc : x; }
static inline v4 max4(v4 acc, v4 x) { return v4_add(v4_max(acc, x), v4_mul(x, v4_set1(0.0f))); }
static inline v4 min4(v4 acc, v4 x) { return v4_add(v4_min(acc, x), v4_mul(x, v4_set1(0.0f))); }

static float exact_extreme(int is_max, const float *x, int32_t len, ptrdiff_t stride) {
  float acc = is_max ? -INFINITY : INFINITY;
  for (int32_t a = 0; a < len; a++) acc = is_max ? max1(acc, x[a * stride]) : min1(acc, x[a * stride]);
  return acc;
}
#define ID(v) (v)
#define SQ4(v) v4_mul(v, v)
#define SQ1(v) ((v) * (v))
#define ADD1(a, b) ((a) + (b))
#define MUL1(a, b) ((a) * (b))

/* A row reducer and a column reducer per (transform, combine) pair, so no inner loop switches on
 * the kind. Rows use two vector accumulators; columns accumulate into y slab by slab. */
#define REDUCERS(NAME, T4, T1, C4, C1, INIT)                                                 \
  static float row_##NAME(const float *x, int32_t len) {                                     \
    v4 acc0 = v4_set1(INIT), acc1 = acc0;                                                    \
    int32_t i = 0;                                                                           \
    for (; i + 8 <= len; i += 8) {                                                           \
      v4 x0 = v4_load(x + i), x1 = v4_load(x + i + 4);                                       \
      acc0 = C4(acc0, T4(x0));                                                               \
      acc1 = C4(acc1, T4(x1));                                                               \
    }                                                                                        \
    float lanes[8], acc = INIT;                                                              \
    v4_store(lanes, acc0);                                                                   \
    v4_store(lanes + 4, acc1);                                                               \
    for (int l = 0; l < 8; l++) acc = C1(acc, lanes[l]);                                     \
    for (; i < len; i++) acc = C1(acc, T1(x[i]));                                            \
    return acc;                                                                              \
  }                                                                                          \
  static void cols_##NAME(const float *x, float *y, int32_t len, int32_t inner) {            \
    int32_t j = 0;                                                                           \
    for (; j + 4 <= inner; j += 4) {                                                         \
      v4 x0 = v4_load(x + j);                                                                \
      v4_store(y + j, T4(x0));                                                               \
    }                                                                                        \
    for (; j < inner; j++) y[j] = T1(x[j]);                                                  \
    for (int32_t a = 1; a < len; a++) {                                                      \
      const float *xa = x + (size_t)a * inner;                                               \
      for (j = 0; j + 4 <= inner; j += 4) {                                                  \
        v4 x0 = v4_load(xa + j);                                                             \
        v4_store(y + j, C4(v4_load(y + j), T4(x0)));                                         \
      }                                                                                      \
      for (; j < inner; j++) y[j] = C1(y[j], T1(xa[j]));                                     \
    }                                                                                        \
  }
REDUCERS(sum, ID, ID, v4_add, ADD1, 0.0f)
REDUCERS(abs, v4_abs, fabsf, v4_add, ADD1, 0.0f)
REDUCERS(sq, SQ4, SQ1, v4_add, ADD1, 0.0f)
REDUCERS(prod, ID, ID, v4_mul, MUL1, 1.0f)
REDUCERS(max, ID, ID, max4, max1, -INFINITY)
REDUCERS(min, ID, ID, min4, min1, INFINITY)

static float finish(int kind, float acc, int32_t len) {
  switch (kind) {
    case MEAN: return acc / (float)len;
    case L2: return sqrtf(acc);
    case LOG_SUM: return logf(acc);
    default: return acc;
  }
}

static float exp_nonpos(float x) { return v4_lane0(v4_exp_nonpos(v4_set1(x))); }

/* log(sum(exp(x))) of `len` values `stride` apart, shifted by their max so exp never overflows */
static float log_sum_exp(const float *x, int32_t len, ptrdiff_t stride) {
  float mx = stride == 1 ? row_max(x, len) : -INFINITY, sum = 0.0f;
  if (stride == 1 && mx != mx) mx = exact_extreme(1, x, len, 1);
  for (int32_t a = 0; stride != 1 && a < len; a++) mx = max1(mx, x[a * stride]);
  if (isinf(mx) || isnan(mx)) return mx; /* all -inf, or an inf / NaN that decides the result */
  int32_t a = 0;
  if (stride == 1) {
    v4 vm = v4_set1(mx), s = v4_set1(0.0f);
    for (; a + 4 <= len; a += 4) s = v4_add(s, v4_exp_nonpos(v4_sub(v4_load(x + a), vm)));
    sum = v4_hsum(s);
  }
  for (; a < len; a++) sum += exp_nonpos(x[a * stride] - mx);
  return mx + logf(sum);
}

static float reduce_row(int kind, const float *x, int32_t len) {
  switch (kind) {
    case LOG_SUM_EXP: return log_sum_exp(x, len, 1);
    case MAX: case MIN: {
      float r = kind == MAX ? row_max(x, len) : row_min(x, len);
      return r == r ? r : exact_extreme(kind == MAX, x, len, 1);
    }
    case PROD: return row_prod(x, len);
    case L1: return row_abs(x, len);
    case L2: case SUM_SQUARE: return finish(kind, row_sq(x, len), len);
    default: return finish(kind, row_sum(x, len), len);
  }
}

/* y[0:inner] = reduction over a < len of x[a*inner + 0:inner] */
static void reduce_cols(int kind, const float *x, float *y, int32_t len, int32_t inner) {
  switch (kind) {
    case LOG_SUM_EXP:
      for (int32_t j = 0; j < inner; j++) y[j] = log_sum_exp(x + j, len, inner);
      return;
    case MAX: case MIN:
      if (kind == MAX) cols_max(x, y, len, inner);
      else cols_min(x, y, len, inner);
      for (int32_t j = 0; j < inner; j++)
        if (y[j] != y[j]) y[j] = exact_extreme(kind == MAX, x + j, len, inner);
      return;
    case PROD: cols_prod(x, y, len, inner); return;
    case L1: cols_abs(x, y, len, inner); return;
    case L2: case SUM_SQUARE: cols_sq(x, y, len, inner); break;
    default: cols_sum(x, y, len, inner); break;
  }
  for (int32_t j = 0; j < inner; j++) y[j] = finish(kind, y[j], len);
}

/* Integer Max, Min and Sum (the sum wraps in two's complement, as onnxruntime's does in practice) */
#define REDUCE_INT(T, U)                                                                   \
  static void reduce_##T(int kind, const T *x, T *y, int32_t outer, int32_t len,          \
                         int32_t inner) {                                                  \
    for (int32_t o = 0; o < outer; o++, x += (size_t)len * inner, y += inner) {            \
      for (int32_t j = 0; j < inner; j++) y[j] = x[j];                                     \
      for (int32_t a = 1; a < len; a++)                                                    \
        for (int32_t j = 0; j < inner; j++) {                                              \
          T v = x[(size_t)a * inner + j];                                                  \
          if (kind == SUM)                                                                 \
            y[j] = (T)((U)y[j] + (U)v);                                                    \
          else if (kind == MAX ? v > y[j] : v < y[j])                                      \
            y[j] = v;                                                                      \
        }                                                                                  \
    }                                                                                      \
  }
REDUCE_INT(int32_t, uint32_t)
REDUCE_INT(int64_t, uint64_t)

void nnw_run_reduce(const int32_t *v, uint8_t *arena) {
  int kind = v[NNW_REDUCE_KIND];
  int32_t outer = v[NNW_REDUCE_OUTER], len = v[NNW_REDUCE_LEN], inner = v[NNW_REDUCE_INNER];
  void *xp = arena + v[NNW_REDUCE_X], *yp = arena + v[NNW_REDUCE_Y];
  switch (v[NNW_REDUCE_DTYPE]) {
    case NNW_I32: reduce_int32_t(kind, xp, yp, outer, len, inner); return;
    case NNW_I64: reduce_int64_t(kind, xp, yp, outer, len, inner); return;
    default: break;
  }
  const float *x = xp;
  float *y = yp;
  for (int32_t o = 0; o < outer; o++, x += (size_t)len * inner) {
    if (inner == 1)
      y[o] = reduce_row(kind, x, len);
    else
      reduce_cols(kind, x, y + (size_t)o * inner, len, inner);
  }
}

/* ---- argreduce ------------------------------------------------------------------------- */

enum { ARGMAX, ARGMIN, HARDMAX, ARG_KINDS };

int nnw_validate_argreduce(const int32_t *v, uint32_t arena_bytes) {
  int32_t kind = v[NNW_ARGREDUCE_KIND], dtype = v[NNW_ARGREDUCE_DTYPE];
  int32_t dims[] = {v[NNW_ARGREDUCE_OUTER], v[NNW_ARGREDUCE_LEN], v[NNW_ARGREDUCE_INNER]};
  NNW_TRY(nnw_check_positive(dims, 3));
  if (kind < 0 || kind >= ARG_KINDS || v[NNW_ARGREDUCE_SELECT_LAST] & ~1) return NNW_BAD_ARGS;
  if (dtype != NNW_F32 && (kind == HARDMAX || (dtype != NNW_I32 && dtype != NNW_I64)))
    return NNW_BAD_ARGS;
  uint64_t x_count = nnw_mul(nnw_mul((uint64_t)dims[0], (uint64_t)dims[1]), (uint64_t)dims[2]);
  uint64_t y_count = kind == HARDMAX ? x_count : nnw_mul((uint64_t)dims[0], (uint64_t)dims[2]);
  int32_t y_dtype = kind == HARDMAX ? NNW_F32 : NNW_I64;
  NNW_TRY(nnw_check_typed(v[NNW_ARGREDUCE_X], x_count, dtype, arena_bytes, 0));
  NNW_TRY(nnw_check_typed(v[NNW_ARGREDUCE_Y], y_count, y_dtype, arena_bytes, 0));
  NNW_TRY(nnw_check_apart(v[NNW_ARGREDUCE_X], nnw_mul(x_count, (uint64_t)nnw_dtype_size(dtype)),
                          v[NNW_ARGREDUCE_Y], nnw_mul(y_count, (uint64_t)nnw_dtype_size(y_dtype)),
                          0));
  return NNW_OK;
}

#define CHUNK 64

/* idx[j] = index a < len of the extreme of x[a*inner + j], for j < cols (cols <= CHUNK).
 * Plain comparisons against the best so far, as onnxruntime's ArgMax/ArgMin: a NaN never
 * replaces the best, and a NaN that comes first stays the answer. */
#define ARG_CHUNK(T)                                                                        \
  static void arg_chunk_##T(int is_max, int last, const T *x, int32_t len, int32_t inner,   \
                            int32_t cols, int32_t *idx) {                                   \
    T best[CHUNK];                                                                          \
    for (int32_t j = 0; j < cols; j++) best[j] = x[j], idx[j] = 0;                          \
    for (int32_t a = 1; a < len; a++) {                                                     \
      const T *xa = x + (size_t)a * inner;                                                  \
      for (int32_t j = 0; j < cols; j++) {                                                  \
        T v = xa[j], b = best[j];                                                           \
        if ((is_max ? v > b : v < b) || (last && v == b)) best[j] = v, idx[j] = a;         \
      }                                                                                     \
    }                                                                                       \
  }
ARG_CHUNK(float)
ARG_CHUNK(int32_t)
ARG_CHUNK(int64_t)

static int32_t arg_row(const float *x, int32_t len, int is_max, int last) {
  int32_t best = 0;
  float b = x[0];
  for (int32_t a = 1; a < len; a++) {
    float v = x[a];
    if ((is_max ? v > b : v < b) || (last && v == b)) b = v, best = a;
  }
  return best;
}

void nnw_run_argreduce(const int32_t *v, uint8_t *arena) {
  int kind = v[NNW_ARGREDUCE_KIND], last = v[NNW_ARGREDUCE_SELECT_LAST];
  int32_t dtype = v[NNW_ARGREDUCE_DTYPE], esize = nnw_dtype_size(dtype);
  int32_t outer = v[NNW_ARGREDUCE_OUTER], len = v[NNW_ARGREDUCE_LEN];
  int32_t inner = v[NNW_ARGREDUCE_INNER];
  const uint8_t *x = arena + v[NNW_ARGREDUCE_X];
  int32_t idx[CHUNK];
  if (inner == 1 && kind != HARDMAX && dtype == NNW_F32) { /* ArgMax over classes: one row each */
    int64_t *y = (int64_t *)(void *)(arena + v[NNW_ARGREDUCE_Y]);
    for (int32_t o = 0; o < outer; o++) y[o] = arg_row((const float *)(const void *)x + (size_t)o * len,
                                                       len, kind == ARGMAX, last);
    return;
  }
  for (int32_t o = 0; o < outer; o++) {
    for (int32_t j0 = 0; j0 < inner; j0 += CHUNK) {
      int32_t cols = inner - j0 < CHUNK ? inner - j0 : CHUNK;
      const uint8_t *xs = x + ((size_t)o * len * inner + j0) * esize;
      if (dtype == NNW_I32)
        arg_chunk_int32_t(kind == ARGMAX, last, (const void *)xs, len, inner, cols, idx);
      else if (dtype == NNW_I64)
        arg_chunk_int64_t(kind == ARGMAX, last, (const void *)xs, len, inner, cols, idx);
      else
        arg_chunk_float(kind != ARGMIN, kind != HARDMAX && last, (const void *)xs, len, inner,
                        cols, idx);
      if (kind == HARDMAX) {
        float *y = nnw_f32_at(arena, v[NNW_ARGREDUCE_Y]) + (size_t)o * len * inner + j0;
        for (int32_t a = 0; a < len; a++)
          for (int32_t j = 0; j < cols; j++) y[(size_t)a * inner + j] = idx[j] == a ? 1.0f : 0.0f;
      } else {
        int64_t *y = (int64_t *)(void *)(arena + v[NNW_ARGREDUCE_Y]) + (size_t)o * inner + j0;
        for (int32_t j = 0; j < cols; j++) y[j] = idx[j];
      }
    }
  }
}

/* ---- lp_normalize ---------------------------------------------------------------------- */

int nnw_validate_lp_normalize(const int32_t *v, uint32_t arena_bytes) {
  int32_t dims[] = {v[NNW_LP_NORMALIZE_OUTER], v[NNW_LP_NORMALIZE_LEN], v[NNW_LP_NORMALIZE_INNER]};
  NNW_TRY(nnw_check_positive(dims, 3));
  if (v[NNW_LP_NORMALIZE_P] != 1 && v[NNW_LP_NORMALIZE_P] != 2) return NNW_BAD_ARGS;
  uint64_t bytes = nnw_mul(nnw_mul((uint64_t)dims[0] * 4, (uint64_t)dims[1]), (uint64_t)dims[2]);
  NNW_TRY(nnw_check_tensor(v[NNW_LP_NORMALIZE_X], bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(v[NNW_LP_NORMALIZE_Y], bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_apart(v[NNW_LP_NORMALIZE_X], bytes, v[NNW_LP_NORMALIZE_Y], bytes, 1));
  return NNW_OK;
}

void nnw_run_lp_normalize(const int32_t *v, uint8_t *arena) {
  int32_t outer = v[NNW_LP_NORMALIZE_OUTER], len = v[NNW_LP_NORMALIZE_LEN];
  int32_t inner = v[NNW_LP_NORMALIZE_INNER], p = v[NNW_LP_NORMALIZE_P];
  const float *x = nnw_f32_at(arena, v[NNW_LP_NORMALIZE_X]);
  float *y = nnw_f32_at(arena, v[NNW_LP_NORMALIZE_Y]);
  float norm[CHUNK];
  size_t slab = (size_t)len * inner;
  for (int32_t o = 0; o < outer; o++, x += slab, y += slab) {
    if (inner == 1) {
      norm[0] = p == 1 ? row_abs(x, len) : sqrtf(row_sq(x, len));
      for (int32_t a = 0; a < len; a++) y[a] = norm[0] == 0.0f ? 0.0f : x[a] / norm[0];
      continue;
    }
    for (int32_t j0 = 0; j0 < inner; j0 += CHUNK) {
      int32_t cols = inner - j0 < CHUNK ? inner - j0 : CHUNK;
      for (int32_t j = 0; j < cols; j++) norm[j] = 0.0f;
      for (int32_t a = 0; a < len; a++)
        for (int32_t j = 0; j < cols; j++) {
          float t = x[(size_t)a * inner + j0 + j];
          norm[j] += p == 1 ? fabsf(t) : t * t;
        }
      if (p == 2)
        for (int32_t j = 0; j < cols; j++) norm[j] = sqrtf(norm[j]);
      for (int32_t a = 0; a < len; a++)
        for (int32_t j = 0; j < cols; j++) {
          size_t e = (size_t)a * inner + j0 + j;
          y[e] = norm[j] == 0.0f ? 0.0f : x[e] / norm[j];
        }
    }
  }
}
