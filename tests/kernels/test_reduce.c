/* reduce, argreduce, lp_normalize, norm and bmatmul against double-precision references, and their validators
 * against hostile arguments. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"
#include "tests.h"

enum { F32 = 1, I32 = 6, I64 = 7 };

/* as layout(), with offsets 8-aligned (int64 tensors) */
static uint32_t layout8(const uint64_t *bytes, int count, int order, int32_t *offsets) {
  uint64_t at = 0;
  for (int k = 0; k < count; k++) {
    int i = order ? count - 1 - k : k;
    at += 8 * (rng_u32() % 2);
    offsets[i] = (int32_t)at;
    at += (bytes[i] + 7) / 8 * 8;
  }
  return (uint32_t)at;
}

/* ---- reduce ---------------------------------------------------------------------------- */

static double ref_reduce(int kind, const float *x, int len, int inner, double *mag) {
  double acc = kind == 2 ? -INFINITY : kind == 3 ? INFINITY : kind == 4 ? 1 : 0, g = 0, mx = -INFINITY;
  for (int a = 0; a < len; a++) mx = fmax(mx, x[a * inner]);
  for (int a = 0; a < len; a++) {
    double v = x[a * inner];
    switch (kind) {
      case 2: acc = fmax(acc, v); break;
      case 3: acc = fmin(acc, v); break;
      case 4: acc *= v; break;
      case 5: acc += fabs(v); break;
      case 6: case 7: acc += v * v; break;
      case 9: acc += exp(v - mx); break;
      default: acc += v;
    }
    g += kind == 6 || kind == 7 ? v * v : fabs(v);
  }
  *mag = g;
  switch (kind) {
    case 1: *mag = g / len; return acc / len;
    case 6: *mag = sqrt(g); return sqrt(acc);
    case 8: *mag = 1; return log(acc);
    case 9: *mag = fabs(mx) + 1; return mx + log(acc);
    case 4: *mag = fabs(acc); return acc;
    default: return acc;
  }
}

static void reduce_case(int kind, int outer, int len, int inner) {
  size_t xn = (size_t)outer * len * inner, yn = (size_t)outer * inner;
  float *x = malloc(4 * xn);
  double *want = malloc(8 * yn), *mag = malloc(8 * yn);
  /* positive values for log_sum, values near 1 for prod */
  fill_random(x, xn, kind == 8 ? 0.1f : kind == 4 ? 0.8f : -3, kind == 4 ? 1.2f : 3);
  for (int o = 0; o < outer; o++)
    for (int j = 0; j < inner; j++)
      want[o * inner + j] = ref_reduce(kind, x + (size_t)o * len * inner + j, len, inner, &mag[o * inner + j]);
  char name[96];
  snprintf(name, sizeof name, "reduce kind%d outer%d len%d inner%d", kind, outer, len, inner);
  for (int order = 0; order < 2; order++) {
    uint64_t bytes[2] = {4 * xn, 4 * yn};
    int32_t off[2];
    uint32_t arena_bytes = layout(bytes, 2, order, off);
    uint8_t *arena = arena_new(arena_bytes);
    memcpy(at(arena, off[0]), x, 4 * xn);
    int32_t args[NNW_REDUCE_NARGS] = {kind, F32, off[0], off[1], outer, len, inner};
    if (run_op(NNW_OP_REDUCE, args, NNW_REDUCE_NARGS, arena, arena_bytes) == NNW_OK)
      check_close(name, at(arena, off[1]), want, mag, yn, 1e-6, 2e-6);
    free(arena);
  }
  free(x);
  free(want);
  free(mag);
}

/* kind: 0 sum (no wrap with these values), 2 max, 3 min */
static void reduce_int_case(int dtype, int kind, int outer, int len, int inner) {
  size_t xn = (size_t)outer * len * inner, yn = (size_t)outer * inner, es = dtype == I64 ? 8 : 4;
  int64_t *x = malloc(8 * xn), *want = malloc(8 * yn);
  for (size_t i = 0; i < xn; i++) x[i] = (int64_t)(rng_u32() % 2001) - 1000 + (dtype == I64 ? ((int64_t)1 << 40) : 0);
  for (int o = 0; o < outer; o++)
    for (int j = 0; j < inner; j++) {
      int64_t m = x[(size_t)o * len * inner + j];
      for (int a = 1; a < len; a++) {
        int64_t v = x[((size_t)o * len + a) * inner + j];
        if (kind == 0) m += v;
        else if (kind == 2 ? v > m : v < m) m = v;
      }
      want[o * inner + j] = m;
    }
  for (int order = 0; order < 2; order++) {
    uint64_t bytes[2] = {es * xn, es * yn};
    int32_t off[2];
    uint32_t arena_bytes = layout8(bytes, 2, order, off);
    uint8_t *arena = arena_new(arena_bytes);
    for (size_t i = 0; i < xn; i++) {
      if (dtype == I64) memcpy(arena + off[0] + 8 * i, &x[i], 8);
      else { int32_t v = (int32_t)x[i]; memcpy(arena + off[0] + 4 * i, &v, 4); }
    }
    int32_t args[NNW_REDUCE_NARGS] = {kind, dtype, off[0], off[1], outer, len, inner};
    size_t bad = 0;
    if (run_op(NNW_OP_REDUCE, args, NNW_REDUCE_NARGS, arena, arena_bytes) == NNW_OK)
      for (size_t i = 0; i < yn; i++) {
        int64_t got;
        if (dtype == I64) memcpy(&got, arena + off[1] + 8 * i, 8);
        else { int32_t v; memcpy(&v, arena + off[1] + 4 * i, 4); got = v; }
        bad += got != want[i];
      }
    expect(bad == 0, "reduce int dtype%d kind%d outer%d len%d inner%d: %zu wrong", dtype, kind, outer,
           len, inner, bad);
    free(arena);
  }
  free(x);
  free(want);
}

/* max/min with NaN and inf planted in the vector body and the tail, rows and columns: NaN wins */
static void reduce_special_case(int kind, int inner, int plant_nan, int pos) {
  int outer = 2, len = 13;
  size_t xn = (size_t)outer * len * inner, yn = (size_t)outer * inner;
  float *x = malloc(4 * xn);
  double *want = malloc(8 * yn);
  fill_random(x, xn, -3, 3);
  x[(size_t)pos * inner] = INFINITY;                    /* an inf in every case, column 0 of row 0 */
  x[(size_t)(len - 1 - pos) * inner] = -INFINITY;
  if (plant_nan) x[(size_t)(len + pos) * inner + (size_t)(inner - 1)] = NAN;   /* row 1, last column */
  for (int o = 0; o < outer; o++)
    for (int j = 0; j < inner; j++) {
      double acc = kind == 2 ? -INFINITY : INFINITY;
      int nan = 0;
      for (int a = 0; a < len; a++) {
        double v = x[((size_t)o * len + a) * inner + j];
        nan |= v != v;
        acc = kind == 2 ? fmax(acc, v) : fmin(acc, v);
      }
      want[o * inner + j] = nan ? NAN : acc;
    }
  uint64_t bytes[2] = {4 * xn, 4 * yn};
  int32_t off[2];
  uint32_t arena_bytes = layout(bytes, 2, 0, off);
  uint8_t *arena = arena_new(arena_bytes);
  memcpy(at(arena, off[0]), x, 4 * xn);
  int32_t args[NNW_REDUCE_NARGS] = {kind, F32, off[0], off[1], outer, len, inner};
  size_t bad = 0;
  if (run_op(NNW_OP_REDUCE, args, NNW_REDUCE_NARGS, arena, arena_bytes) == NNW_OK)
    for (size_t i = 0; i < yn; i++) {
      double got = at(arena, off[1])[i];
      bad += want[i] != want[i] ? got == got : got != want[i];
    }
  expect(bad == 0, "reduce kind%d inner%d nan%d pos%d with infs: %zu wrong", kind, inner, plant_nan, pos, bad);
  free(arena);
  free(x);
  free(want);
}

void test_reduce(void) {
  for (int kind = 2; kind <= 3; kind++)
    for (int inner = 1; inner <= 6; inner += 5)
      for (int nan = 0; nan < 2; nan++)
        for (int pos = 0; pos < 12; pos += 5) reduce_special_case(kind, inner, nan, pos);
  static const int shapes[][3] = {{1, 1, 1}, {3, 7, 1}, {2, 33, 1}, {1, 1000, 1}, {2, 5, 4},
                                  {3, 6, 7}, {1, 4, 130}, {4, 1, 3}, {2, 9, 2}};
  for (int kind = 0; kind < 10; kind++)
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
      reduce_case(kind, shapes[s][0], shapes[s][1], shapes[s][2]);
  for (int r = 0; r < 20; r++)
    reduce_case((int)(rng_u32() % 10), 1 + (int)(rng_u32() % 5), 1 + (int)(rng_u32() % 40),
                1 + (int)(rng_u32() % 20));
  for (int kind = 0; kind < 4; kind++) {
    if (kind == 1) continue;   /* mean: float32 only */
    reduce_int_case(I32, kind, 3, 7, 1);
    reduce_int_case(I64, kind, 2, 5, 6);
    reduce_int_case(I32, kind, 1, 1, 9);
  }
  /* hostile: arena of 64 bytes, x at 0 (8 floats), y at 32 */
  int32_t ok[NNW_REDUCE_NARGS] = {1, F32, 0, 32, 2, 4, 1};   /* mean */
  load_patched("reduce valid", NNW_OP_REDUCE, ok, NNW_REDUCE_NARGS, -1, 0, 64, NNW_OK);
  static const struct arg_patch bad[] = {
      {"reduce kind -1", NNW_REDUCE_KIND, -1, NNW_BAD_ARGS},
      {"reduce kind 10", NNW_REDUCE_KIND, 10, NNW_BAD_ARGS},
      {"reduce mean of int32", NNW_REDUCE_DTYPE, I32, NNW_BAD_ARGS},
      {"reduce dtype 0", NNW_REDUCE_DTYPE, 0, NNW_BAD_ARGS},
      {"reduce dtype huge", NNW_REDUCE_DTYPE, 0x7FFFFFFF, NNW_BAD_ARGS},
      {"reduce outer 0", NNW_REDUCE_OUTER, 0, NNW_BAD_ARGS},
      {"reduce len -1", NNW_REDUCE_LEN, -1, NNW_BAD_ARGS},
      {"reduce inner huge", NNW_REDUCE_INNER, 0x7FFFFFFF, NNW_OUT_OF_BOUNDS},
      {"reduce len past the arena", NNW_REDUCE_LEN, 5, NNW_BAD_ARGS},  /* x then overlaps y */
      {"reduce x misaligned", NNW_REDUCE_X, 2, NNW_BAD_ARGS},
      {"reduce x absent", NNW_REDUCE_X, -1, NNW_OUT_OF_BOUNDS},
      {"reduce y past the arena", NNW_REDUCE_Y, 60, NNW_OUT_OF_BOUNDS},
      {"reduce y INT32_MIN", NNW_REDUCE_Y, INT32_MIN, NNW_OUT_OF_BOUNDS},
      {"reduce y overlaps x", NNW_REDUCE_Y, 24, NNW_BAD_ARGS},
  };
  load_patches(NNW_OP_REDUCE, ok, NNW_REDUCE_NARGS, 64, bad, sizeof bad / sizeof bad[0]);
  int32_t imax[NNW_REDUCE_NARGS] = {2, I64, 0, 36, 1, 4, 1};
  load_patched("reduce int64 y misaligned", NNW_OP_REDUCE, imax, NNW_REDUCE_NARGS, -1, 0, 64, NNW_BAD_ARGS);
  imax[NNW_REDUCE_Y] = 40;
  load_patched("reduce int64 y past the arena", NNW_OP_REDUCE, imax, NNW_REDUCE_NARGS, -1, 0, 44, NNW_OUT_OF_BOUNDS);
}

/* ---- argreduce ------------------------------------------------------------------------- */

static void argreduce_case(int kind, int last, int outer, int len, int inner, int ties) {
  size_t xn = (size_t)outer * len * inner, yn = kind == 2 ? xn : (size_t)outer * inner;
  float *x = malloc(4 * xn);
  double *want = malloc(8 * yn);
  for (size_t i = 0; i < xn; i++) x[i] = ties ? (float)(rng_u32() % 3) : rng_float(-2, 2);
  if (kind == 2)
    for (size_t i = 0; i < yn; i++) want[i] = 0;
  for (int o = 0; o < outer; o++)
    for (int j = 0; j < inner; j++) {
      const float *xs = x + (size_t)o * len * inner + j;
      int best = 0;
      for (int a = 1; a < len; a++) {
        float v = xs[a * inner], b = xs[best * inner];
        if ((kind == 1 ? v < b : v > b) || (last && kind != 2 && v == b)) best = a;
      }
      if (kind == 2) want[((size_t)o * len + best) * inner + j] = 1;
      else want[o * inner + j] = best;
    }
  for (int order = 0; order < 2; order++) {
    uint64_t bytes[2] = {4 * xn, (kind == 2 ? 4 : 8) * yn};
    int32_t off[2];
    uint32_t arena_bytes = layout8(bytes, 2, order, off);
    uint8_t *arena = arena_new(arena_bytes);
    memcpy(at(arena, off[0]), x, 4 * xn);
    int32_t args[NNW_ARGREDUCE_NARGS] = {kind, F32, off[0], off[1], outer, len, inner, last};
    size_t bad = 0;
    if (run_op(NNW_OP_ARGREDUCE, args, NNW_ARGREDUCE_NARGS, arena, arena_bytes) == NNW_OK)
      for (size_t i = 0; i < yn; i++) {
        double got;
        if (kind == 2) got = at(arena, off[1])[i];
        else { int64_t v; memcpy(&v, arena + off[1] + 8 * i, 8); got = (double)v; }
        bad += got != want[i];
      }
    expect(bad == 0, "argreduce kind%d last%d outer%d len%d inner%d ties%d: %zu wrong", kind, last,
           outer, len, inner, ties, bad);
    free(arena);
  }
  free(x);
  free(want);
}

void test_argreduce(void) {
  static const int shapes[][3] = {{1, 1, 1}, {3, 7, 1}, {2, 5, 4}, {1, 9, 70}, {2, 1, 3}, {1, 1000, 1}};
  for (int kind = 0; kind < 3; kind++)
    for (int last = 0; last < 2; last++)
      for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int ties = 0; ties < 2; ties++)
          argreduce_case(kind, last, shapes[s][0], shapes[s][1], shapes[s][2], ties);
  /* int32 argmin with a tie: the first index */
  uint8_t *arena = arena_new(48);
  int32_t xi[4] = {5, -2, 7, -2};
  memcpy(arena, xi, 16);
  int32_t args[NNW_ARGREDUCE_NARGS] = {1, I32, 0, 16, 1, 4, 1, 0};
  int64_t got = -1;
  if (run_op(NNW_OP_ARGREDUCE, args, NNW_ARGREDUCE_NARGS, arena, 48) == NNW_OK) memcpy(&got, arena + 16, 8);
  expect(got == 1, "argmin int32 tie: %lld", (long long)got);
  args[NNW_ARGREDUCE_SELECT_LAST] = 1;
  if (run_op(NNW_OP_ARGREDUCE, args, NNW_ARGREDUCE_NARGS, arena, 48) == NNW_OK) memcpy(&got, arena + 16, 8);
  expect(got == 3, "argmin int32 tie, select_last: %lld", (long long)got);
  free(arena);
  /* hostile: x 4 floats at 0, y 2 int64 at 16, arena 32 */
  int32_t ok[NNW_ARGREDUCE_NARGS] = {0, F32, 0, 16, 2, 2, 1, 0};
  load_patched("argreduce valid", NNW_OP_ARGREDUCE, ok, NNW_ARGREDUCE_NARGS, -1, 0, 32, NNW_OK);
  static const struct arg_patch bad[] = {
      {"argreduce kind 3", NNW_ARGREDUCE_KIND, 3, NNW_BAD_ARGS},
      {"argreduce select_last 2", NNW_ARGREDUCE_SELECT_LAST, 2, NNW_BAD_ARGS},
      {"argreduce dtype int8", NNW_ARGREDUCE_DTYPE, 3, NNW_BAD_ARGS},
      {"argreduce y misaligned for int64", NNW_ARGREDUCE_Y, 20, NNW_BAD_ARGS},
      {"argreduce y past the arena", NNW_ARGREDUCE_Y, 24, NNW_OUT_OF_BOUNDS},
      {"argreduce y overlaps x", NNW_ARGREDUCE_Y, 8, NNW_BAD_ARGS},
      {"argreduce inner 0", NNW_ARGREDUCE_INNER, 0, NNW_BAD_ARGS},
      {"argreduce outer huge", NNW_ARGREDUCE_OUTER, 0x40000000, NNW_OUT_OF_BOUNDS},
  };
  load_patches(NNW_OP_ARGREDUCE, ok, NNW_ARGREDUCE_NARGS, 32, bad, sizeof bad / sizeof bad[0]);
  int32_t hard[NNW_ARGREDUCE_NARGS] = {2, I32, 0, 16, 1, 4, 1, 0};
  load_patched("hardmax of int32", NNW_OP_ARGREDUCE, hard, NNW_ARGREDUCE_NARGS, -1, 0, 32, NNW_BAD_ARGS);
  hard[NNW_ARGREDUCE_DTYPE] = F32;
  load_patched("hardmax y (4 floats) fits", NNW_OP_ARGREDUCE, hard, NNW_ARGREDUCE_NARGS, -1, 0, 32, NNW_OK);
  hard[NNW_ARGREDUCE_Y] = 20;
  load_patched("hardmax y past the arena", NNW_OP_ARGREDUCE, hard, NNW_ARGREDUCE_NARGS, -1, 0, 32, NNW_OUT_OF_BOUNDS);
}

/* ---- lp_normalize ---------------------------------------------------------------------- */

static void lp_case(int p, int outer, int len, int inner, int zero_col, int in_place) {
  size_t n = (size_t)outer * len * inner;
  float *x = malloc(4 * n);
  double *want = malloc(8 * n);
  fill_random(x, n, -2, 2);
  if (zero_col)
    for (int a = 0; a < len; a++) x[(size_t)a * inner] = 0.0f;   /* a zero vector stays zero */
  for (int o = 0; o < outer; o++)
    for (int j = 0; j < inner; j++) {
      const float *xs = x + (size_t)o * len * inner + j;
      double s = 0;
      for (int a = 0; a < len; a++) s += p == 1 ? fabs(xs[a * inner]) : (double)xs[a * inner] * xs[a * inner];
      if (p == 2) s = sqrt(s);
      for (int a = 0; a < len; a++) want[(size_t)o * len * inner + (size_t)a * inner + j] = s == 0 ? 0 : xs[a * inner] / s;
    }
  char name[80];
  snprintf(name, sizeof name, "lp_normalize p%d %dx%dx%d zero%d inplace%d", p, outer, len, inner, zero_col, in_place);
  for (int order = 0; order < 2; order++) {
    uint64_t bytes[2] = {4 * n, 4 * n};
    int32_t off[2];
    uint32_t arena_bytes = layout(bytes, 2, order, off);
    uint8_t *arena = arena_new(arena_bytes);
    memcpy(at(arena, off[0]), x, 4 * n);
    int32_t y = in_place ? off[0] : off[1];
    int32_t args[NNW_LP_NORMALIZE_NARGS] = {off[0], y, outer, len, inner, p};
    if (run_op(NNW_OP_LP_NORMALIZE, args, NNW_LP_NORMALIZE_NARGS, arena, arena_bytes) == NNW_OK)
      check_close(name, at(arena, y), want, NULL, n, 1e-6, 2e-6);
    free(arena);
  }
  free(x);
  free(want);
}

void test_lp_normalize(void) {
  static const int shapes[][3] = {{1, 1, 1}, {3, 7, 1}, {2, 33, 1}, {2, 5, 4}, {1, 3, 70}, {2, 1, 130}};
  for (int p = 1; p <= 2; p++)
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
      for (int z = 0; z < 2; z++) lp_case(p, shapes[s][0], shapes[s][1], shapes[s][2], z, (int)(s % 2));
  int32_t ok[NNW_LP_NORMALIZE_NARGS] = {0, 32, 2, 4, 1, 2};
  load_patched("lp_normalize valid", NNW_OP_LP_NORMALIZE, ok, NNW_LP_NORMALIZE_NARGS, -1, 0, 64, NNW_OK);
  static const struct arg_patch bad[] = {
      {"lp_normalize p 3", NNW_LP_NORMALIZE_P, 3, NNW_BAD_ARGS},
      {"lp_normalize p 0", NNW_LP_NORMALIZE_P, 0, NNW_BAD_ARGS},
      {"lp_normalize y partly over x", NNW_LP_NORMALIZE_Y, 16, NNW_BAD_ARGS},
      {"lp_normalize y past the arena", NNW_LP_NORMALIZE_Y, 36, NNW_OUT_OF_BOUNDS},
      {"lp_normalize len huge", NNW_LP_NORMALIZE_LEN, 0x7FFFFFFF, NNW_OUT_OF_BOUNDS},
      {"lp_normalize outer 0", NNW_LP_NORMALIZE_OUTER, 0, NNW_BAD_ARGS},
      {"lp_normalize x misaligned", NNW_LP_NORMALIZE_X, 1, NNW_BAD_ARGS},
      {"lp_normalize in place", NNW_LP_NORMALIZE_Y, 0, NNW_OK},
  };
  load_patches(NNW_OP_LP_NORMALIZE, ok, NNW_LP_NORMALIZE_NARGS, 64, bad, sizeof bad / sizeof bad[0]);
}

/* ---- norm ------------------------------------------------------------------------------ */

struct norm_case {
  int outer, groups, cpg, inner, pg, pc, pi, has_scale, has_bias, stats, in_place;
  float offset; /* added to x: a large mean tests the two-pass variance */
};

static void norm_case(const struct norm_case *t) {
  size_t block = (size_t)t->cpg * t->inner, xn = (size_t)t->outer * t->groups * block;
  size_t sn = (size_t)t->outer * t->groups;
  size_t pn = (size_t)(t->groups - 1) * t->pg + (size_t)(t->cpg - 1) * t->pc + (size_t)(t->inner - 1) * t->pi + 1;
  float *x = malloc(4 * xn), *scale = malloc(4 * pn), *bias = malloc(4 * pn);
  double *want = malloc(8 * xn), *wmean = malloc(8 * sn), *winv = malloc(8 * sn), *mag = malloc(8 * xn);
  fill_random(x, xn, -2, 2);
  for (size_t i = 0; i < xn; i++) x[i] += t->offset;
  fill_random(scale, pn, -1.5f, 1.5f);
  fill_random(bias, pn, -1, 1);
  for (size_t s = 0; s < sn; s++) {
    const float *xs = x + s * block;
    double mean = 0, var = 0;
    for (size_t i = 0; i < block; i++) mean += xs[i];
    mean /= (double)block;
    for (size_t i = 0; i < block; i++) var += (xs[i] - mean) * (xs[i] - mean);
    var /= (double)block;
    double inv = 1 / sqrt(var + 1e-5);
    wmean[s] = mean;
    winv[s] = inv;
    int g = (int)(s % (size_t)t->groups);
    for (int c = 0; c < t->cpg; c++)
      for (int i = 0; i < t->inner; i++) {
        size_t p = (size_t)g * t->pg + (size_t)c * t->pc + (size_t)i * t->pi, e = s * block + (size_t)c * t->inner + i;
        double sc = t->has_scale ? scale[p] : 1, z = (x[e] - mean) * inv;
        want[e] = z * sc + (t->has_bias ? bias[p] : 0);
        mag[e] = (fabs(z) + (fabs(t->offset) + 2) * inv) * fabs(sc) + 1;
      }
  }
  char name[128];
  snprintf(name, sizeof name, "norm %dx%dx%dx%d p%d,%d,%d scale%d bias%d stats%d inplace%d off%g", t->outer,
           t->groups, t->cpg, t->inner, t->pg, t->pc, t->pi, t->has_scale, t->has_bias, t->stats, t->in_place,
           t->offset);
  for (int order = 0; order < 2; order++) {
    uint64_t bytes[6] = {4 * xn, 4 * pn, 4 * pn, 4 * xn, 4 * sn, 4 * sn};
    int32_t off[6];
    uint32_t arena_bytes = layout(bytes, 6, order, off);
    uint8_t *arena = arena_new(arena_bytes);
    memcpy(at(arena, off[0]), x, 4 * xn);
    memcpy(at(arena, off[1]), scale, 4 * pn);
    memcpy(at(arena, off[2]), bias, 4 * pn);
    int32_t y = t->in_place ? off[0] : off[3];
    int32_t args[NNW_NORM_NARGS] = {off[0], t->has_scale ? off[1] : -1, t->has_bias ? off[2] : -1, y,
                                    t->stats ? off[4] : -1, t->stats ? off[5] : -1, t->outer, t->groups,
                                    t->cpg, t->inner, t->pg, t->pc, t->pi, f32_bits(1e-5f)};
    if (run_op(NNW_OP_NORM, args, NNW_NORM_NARGS, arena, arena_bytes) == NNW_OK) {
      check_close(name, at(arena, y), want, mag, xn, 1e-6, 2e-6);
      if (t->stats) {
        check_close(name, at(arena, off[4]), wmean, NULL, sn, 1e-6, 1e-6);
        check_close(name, at(arena, off[5]), winv, NULL, sn, 1e-6, 1e-5);
      }
    }
    free(arena);
  }
  free(x);
  free(scale);
  free(bias);
  free(want);
  free(wmean);
  free(winv);
  free(mag);
}

void test_norm(void) {
  static const struct norm_case cases[] = {
      /* outer groups cpg inner pg pc pi scale bias stats inplace offset */
      {4, 1, 1, 768, 0, 0, 1, 1, 1, 0, 0, 0},     /* LayerNormalization, BERT width */
      {3, 1, 1, 7, 0, 0, 1, 1, 0, 1, 0, 0},
      {2, 1, 1, 13, 0, 0, 1, 0, 0, 1, 1, 0},
      {6, 1, 1, 64, 0, 0, 1, 1, 1, 0, 0, 1000},   /* |mean| >> std */
      {2, 5, 1, 49, 1, 0, 0, 1, 1, 0, 0, 0},      /* InstanceNormalization */
      {1, 3, 1, 1, 1, 0, 0, 1, 1, 1, 0, 0},
      {2, 4, 3, 10, 3, 1, 0, 1, 1, 0, 0, 0},      /* GroupNormalization, per channel */
      {1, 2, 8, 9, 3, 1, 0, 1, 1, 1, 1, 50},
      {2, 4, 3, 10, 1, 0, 0, 1, 1, 0, 0, 0},      /* per group */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) norm_case(&cases[i]);
  for (int r = 0; r < 15; r++) {
    int cpg = 1 + (int)(rng_u32() % 4), groups = 1 + (int)(rng_u32() % 4), pi = (int)(rng_u32() % 2);
    struct norm_case t = {1 + (int)(rng_u32() % 3), groups, cpg, 1 + (int)(rng_u32() % 30), pi ? 0 : cpg,
                          pi ? 0 : 1, pi, (int)(rng_u32() % 2), (int)(rng_u32() % 2), (int)(rng_u32() % 2),
                          (int)(rng_u32() % 2), 0};
    norm_case(&t);
  }
  /* hostile: x 8 floats at 0, scale/bias 4 at 32/48, y at 64, mean/inv_std 2 at 96/104; arena 112 */
  int32_t ok[NNW_NORM_NARGS] = {0, 32, 48, 64, 96, 104, 2, 1, 1, 4, 0, 0, 1, f32_bits(1e-5f)};
  load_patched("norm valid", NNW_OP_NORM, ok, NNW_NORM_NARGS, -1, 0, 112, NNW_OK);
  static const struct arg_patch bad[] = {
      {"norm pi 2", NNW_NORM_PI, 2, NNW_BAD_ARGS},
      {"norm pg -1", NNW_NORM_PG, -1, NNW_BAD_ARGS},
      {"norm groups 0", NNW_NORM_GROUPS, 0, NNW_BAD_ARGS},
      {"norm pc reaches past the arena", NNW_NORM_PC, 0x7FFFFFFF, NNW_OK},   /* cpg 1: pc unused */
      {"norm scale reaches past the arena", NNW_NORM_SCALE, 100, NNW_OUT_OF_BOUNDS},
      {"norm bias misaligned", NNW_NORM_BIAS, 49, NNW_BAD_ARGS},
      {"norm y overlaps x partly", NNW_NORM_Y, 4, NNW_BAD_ARGS},
      {"norm y over scale", NNW_NORM_Y, 32, NNW_BAD_ARGS},
      {"norm mean over y", NNW_NORM_MEAN, 64, NNW_BAD_ARGS},
      {"norm inv_std over mean", NNW_NORM_INV_STD, 96, NNW_BAD_ARGS},
      {"norm mean over bias", NNW_NORM_MEAN, 48, NNW_BAD_ARGS},
      {"norm inv_std past the arena", NNW_NORM_INV_STD, 108, NNW_OUT_OF_BOUNDS},
      {"norm x absent", NNW_NORM_X, -1, NNW_OUT_OF_BOUNDS},
      {"norm inner huge", NNW_NORM_INNER, 0x7FFFFFFF, NNW_OUT_OF_BOUNDS},
      {"norm y in place", NNW_NORM_Y, 0, NNW_OK},
  };
  load_patches(NNW_OP_NORM, ok, NNW_NORM_NARGS, 112, bad, sizeof bad / sizeof bad[0]);
  int32_t grp[NNW_NORM_NARGS] = {0, 32, 48, 64, -1, -1, 1, 2, 2, 2, 2, 1, 0, f32_bits(1e-5f)};
  load_patched("norm group params fit", NNW_OP_NORM, grp, NNW_NORM_NARGS, -1, 0, 112, NNW_OK);
  grp[NNW_NORM_PC] = 0x40000000;
  load_patched("norm pc past the arena", NNW_OP_NORM, grp, NNW_NORM_NARGS, -1, 0, 112, NNW_OUT_OF_BOUNDS);
}

/* ---- bmatmul --------------------------------------------------------------------------- */

static void bmatmul_case(int b0, int b1, int m, int n, int k, int a_mode, int b_mode) {
  /* mode: 0 full [b0, b1], 1 broadcast over b0 ([1, b1]), 2 over b1 ([b0, 1]), 3 over both */
  int as1 = a_mode & 2 ? 0 : m * k, as0 = a_mode & 1 ? 0 : (a_mode & 2 ? 1 : b1) * m * k;
  int bs1 = b_mode & 2 ? 0 : k * n, bs0 = b_mode & 1 ? 0 : (b_mode & 2 ? 1 : b1) * k * n;
  size_t an = (size_t)(b0 - 1) * as0 + (size_t)(b1 - 1) * as1 + (size_t)m * k;
  size_t bn = (size_t)(b0 - 1) * bs0 + (size_t)(b1 - 1) * bs1 + (size_t)k * n, yn = (size_t)b0 * b1 * m * n;
  float *a = malloc(4 * an), *b = malloc(4 * bn);
  double *want = malloc(8 * yn), *mag = malloc(8 * yn);
  fill_random(a, an, -1, 1);
  fill_random(b, bn, -1, 1);
  for (int i0 = 0; i0 < b0; i0++)
    for (int i1 = 0; i1 < b1; i1++)
      for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
          double s = 0, g = 0;
          for (int kk = 0; kk < k; kk++) {
            double v = (double)a[i0 * as0 + i1 * as1 + i * k + kk] * b[i0 * bs0 + i1 * bs1 + kk * n + j];
            s += v;
            g += fabs(v);
          }
          size_t e = (((size_t)i0 * b1 + i1) * m + i) * n + j;
          want[e] = s;
          mag[e] = g;
        }
  char name[96];
  snprintf(name, sizeof name, "bmatmul %dx%d m%d n%d k%d a%d b%d", b0, b1, m, n, k, a_mode, b_mode);
  for (int order = 0; order < 2; order++) {
    uint64_t bytes[3] = {4 * an, 4 * bn, 4 * yn};
    int32_t off[3];
    uint32_t arena_bytes = layout(bytes, 3, order, off);
    uint8_t *arena = arena_new(arena_bytes);
    memcpy(at(arena, off[0]), a, 4 * an);
    memcpy(at(arena, off[1]), b, 4 * bn);
    int32_t args[NNW_BMATMUL_NARGS] = {off[0], off[1], off[2], b0, b1, m, n, k, as0, as1, bs0, bs1};
    if (run_op(NNW_OP_BMATMUL, args, NNW_BMATMUL_NARGS, arena, arena_bytes) == NNW_OK)
      check_close(name, at(arena, off[2]), want, mag, yn, 1e-6, 1e-6);
    free(arena);
  }
  free(a);
  free(b);
  free(want);
  free(mag);
}

void test_bmatmul(void) {
  bmatmul_case(2, 3, 5, 5, 4, 0, 0);     /* [B,H,S,D] @ [B,H,D,S] */
  bmatmul_case(2, 3, 4, 6, 8, 1, 0);     /* [1,H,S,D] @ [B,H,D,S] */
  bmatmul_case(3, 2, 7, 3, 5, 0, 2);
  bmatmul_case(2, 2, 1, 9, 17, 3, 0);
  bmatmul_case(1, 1, 12, 13, 14, 0, 0);
  for (int r = 0; r < 20; r++)
    bmatmul_case(1 + (int)(rng_u32() % 3), 1 + (int)(rng_u32() % 3), 1 + (int)(rng_u32() % 9),
                 1 + (int)(rng_u32() % 9), 1 + (int)(rng_u32() % 9), (int)(rng_u32() % 4), (int)(rng_u32() % 4));
  /* hostile: a [2,2,2] at 0 (32 B), b [2,2] broadcast at 32 (16 B), y [2,2,2] at 48; arena 80 */
  int32_t ok[NNW_BMATMUL_NARGS] = {0, 32, 48, 1, 2, 2, 2, 2, 0, 4, 0, 0};
  load_patched("bmatmul valid", NNW_OP_BMATMUL, ok, NNW_BMATMUL_NARGS, -1, 0, 80, NNW_OK);
  static const struct arg_patch bad[] = {
      {"bmatmul as1 reaches y", NNW_BMATMUL_AS1, 9, NNW_BAD_ARGS},
      {"bmatmul bs1 past the arena", NNW_BMATMUL_BS1, 40, NNW_OUT_OF_BOUNDS},
      {"bmatmul negative stride", NNW_BMATMUL_AS0, -4, NNW_BAD_ARGS},
      {"bmatmul b0 0", NNW_BMATMUL_B0, 0, NNW_BAD_ARGS},
      {"bmatmul b0 huge", NNW_BMATMUL_B0, 0x7FFFFFFF, NNW_OUT_OF_BOUNDS},
      {"bmatmul y overlaps b", NNW_BMATMUL_Y, 44, NNW_BAD_ARGS},
      {"bmatmul y misaligned", NNW_BMATMUL_Y, 50, NNW_BAD_ARGS},
      {"bmatmul k huge", NNW_BMATMUL_K, 0x7FFFFFFF, NNW_OUT_OF_BOUNDS},
  };
  load_patches(NNW_OP_BMATMUL, ok, NNW_BMATMUL_NARGS, 80, bad, sizeof bad / sizeof bad[0]);
}
