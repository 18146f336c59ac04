/* binary, unary, softmax, mean_rows and copy2d against references. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"
#include "tests.h"

/* ---- binary ---------------------------------------------------------------------------- */

struct binary_case {
  const char *what;
  int rank, d[6], as[6], bs[6];
};

static double op(int kind, double a, double b) {
  return kind == 0 ? a + b : kind == 1 ? a - b : kind == 2 ? a * b : a / b;
}

static void binary_case(const struct binary_case *t, int kind) {
  size_t count = 1, a_n = 1, b_n = 1;
  for (int i = 0; i < t->rank; i++) {
    count *= (size_t)t->d[i];
    a_n += (size_t)(t->d[i] - 1) * t->as[i];
    b_n += (size_t)(t->d[i] - 1) * t->bs[i];
  }
  float *a = malloc(4 * a_n), *b = malloc(4 * b_n);
  double *want = malloc(8 * count);
  fill_random(a, a_n, -2, 2);
  fill_random(b, b_n, 0.5f, 2); /* away from 0 for div */
  for (size_t e = 0; e < count; e++) {
    size_t rem = e, ao = 0, bo = 0;
    for (int i = t->rank - 1; i >= 0; i--) {
      size_t ix = rem % (size_t)t->d[i];
      rem /= (size_t)t->d[i];
      ao += ix * t->as[i];
      bo += ix * t->bs[i];
    }
    want[e] = (float)op(kind, a[ao], b[bo]);
  }
  char name[96];
  snprintf(name, sizeof name, "binary %s kind%d", t->what, kind);
  for (int order = 0; order < 2; order++) {
    uint64_t bytes[3] = {4 * a_n, 4 * b_n, 4 * count};
    int32_t off[3];
    uint32_t arena_bytes = layout(bytes, 3, order, off);
    uint8_t *arena = arena_new(arena_bytes);
    memcpy(at(arena, off[0]), a, 4 * a_n);
    memcpy(at(arena, off[1]), b, 4 * b_n);
    int32_t args[NNW_BINARY_NARGS] = {kind, off[0], off[1], off[2], t->rank};
    for (int i = 0; i < 6; i++) {
      args[NNW_BINARY_D0 + i] = i < t->rank ? t->d[i] : 1;
      args[NNW_BINARY_AS0 + i] = i < t->rank ? t->as[i] : 0;
      args[NNW_BINARY_BS0 + i] = i < t->rank ? t->bs[i] : 0;
    }
    if (run_op(NNW_OP_BINARY, args, NNW_BINARY_NARGS, arena, arena_bytes) == NNW_OK)
      check_close(name, at(arena, off[2]), want, NULL, count, 0, 1e-7);
    free(arena);
  }
  free(a);
  free(b);
  free(want);
}

void test_binary(void) {
  static const struct binary_case cases[] = {
      {"same shape", 1, {37}, {1}, {1}},
      {"same shape 4d", 4, {2, 3, 5, 7}, {105, 35, 7, 1}, {105, 35, 7, 1}},
      {"scalar b", 2, {5, 9}, {9, 1}, {0, 0}},
      {"scalar a", 1, {11}, {0}, {1}},
      {"bias [N,C,H,W]+[C,1,1]", 4, {2, 3, 4, 5}, {60, 20, 5, 1}, {0, 1, 0, 0}},
      {"row [M,N]+[N]", 2, {6, 13}, {13, 1}, {0, 1}},
      {"column [M,N]+[M,1]", 2, {6, 13}, {13, 1}, {1, 0}},
      {"outer [M,1]+[1,N]", 2, {7, 6}, {1, 0}, {0, 1}},
      {"transposed a", 2, {5, 6}, {1, 5}, {6, 1}},
      {"rank 0", 0, {0}, {0}, {0}},
      {"rank 6", 6, {2, 1, 3, 2, 1, 5}, {30, 0, 10, 5, 0, 1}, {0, 0, 2, 1, 0, 0}},
      {"se scale [N,C,H,W]*[N,C,1,1]", 4, {2, 4, 3, 3}, {36, 9, 3, 1}, {4, 1, 0, 0}},
      {"size-1 dims", 3, {1, 9, 1}, {9, 1, 1}, {0, 1, 0}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (int kind = 0; kind < 4; kind++) binary_case(&cases[i], kind);
}

/* ---- unary ----------------------------------------------------------------------------- */

static double sigmoid(double x) { return x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x)); }

static void unary_case(int kind, const float *x, int count, float p0, float p1, double rtol) {
  double *want = malloc(8 * (size_t)count);
  for (int i = 0; i < count; i++) {
    double v = x[i];
    want[i] = kind == 0 ? (v < p0 ? p0 : v > p1 ? p1 : v) : kind == 1 ? sigmoid(v) : tanh(v);
  }
  char name[64];
  snprintf(name, sizeof name, "unary kind%d count%d", kind, count);
  for (int order = 0; order < 2; order++) {
    uint64_t bytes[2] = {4 * (uint64_t)count, 4 * (uint64_t)count};
    int32_t off[2];
    uint32_t arena_bytes = layout(bytes, 2, order, off);
    uint8_t *arena = arena_new(arena_bytes);
    memcpy(at(arena, off[0]), x, 4 * (size_t)count);
    int32_t args[NNW_UNARY_NARGS] = {kind, off[0], off[1], count, f32_bits(p0), f32_bits(p1)};
    if (run_op(NNW_OP_UNARY, args, NNW_UNARY_NARGS, arena, arena_bytes) == NNW_OK)
      check_close(name, at(arena, off[1]), want, NULL, (size_t)count, 1e-45, rtol);
    /* in place */
    args[NNW_UNARY_Y] = off[0];
    if (run_op(NNW_OP_UNARY, args, NNW_UNARY_NARGS, arena, arena_bytes) == NNW_OK)
      check_close(name, at(arena, off[0]), want, NULL, (size_t)count, 1e-45, rtol);
    free(arena);
  }
  free(want);
}

void test_unary(void) {
  enum { N = 4003 };
  static float x[N];
  /* a sweep over [-30, 30], then tiny, huge and special values */
  for (int i = 0; i < 3000; i++) x[i] = -30.0f + 60.0f * (float)i / 3000.0f;
  for (int i = 3000; i < 3900; i++) x[i] = ldexpf(rng_float(-1, 1), -(int)(rng_u32() % 140));
  for (int i = 3900; i < N; i++) x[i] = rng_float(-120, 120);
  x[0] = 0.0f;
  x[1] = -0.0f;
  x[2] = INFINITY;
  x[3] = -INFINITY;
  x[4] = 1e-40f;
  x[5] = -1e-40f;
  x[6] = -103.0f;
  x[7] = 89.0f;
  for (int count = 1; count <= 9; count++) {
    unary_case(0, x + 8, count, 0.0f, 6.0f, 0);
    unary_case(1, x + 100, count, 0, 0, 3e-7);
  }
  unary_case(0, x, N, 0.0f, INFINITY, 0);
  unary_case(0, x, N, -1.5f, 2.5f, 0);
  unary_case(1, x, N, 0, 0, 3e-7);
  unary_case(2, x, N, 0, 0, 3e-7);
}

/* ---- softmax, mean_rows ---------------------------------------------------------------- */

static void softmax_case(int outer, int axis, int inner, int log_, float spread) {
  size_t n = (size_t)outer * axis * inner;
  float *x = malloc(4 * n);
  double *want = malloc(8 * n), *mag = malloc(8 * n);
  fill_random(x, n, -spread, spread);
  for (int o = 0; o < outer; o++)
    for (int j = 0; j < inner; j++) {
      const float *xs = x + (size_t)o * axis * inner + j;
      double mx = -INFINITY, sum = 0;
      for (int a = 0; a < axis; a++) mx = fmax(mx, xs[a * inner]);
      for (int a = 0; a < axis; a++) sum += exp(xs[a * inner] - mx);
      for (int a = 0; a < axis; a++) {
        size_t i = (size_t)o * axis * inner + (size_t)a * inner + j;
        want[i] = log_ ? xs[a * inner] - mx - log(sum) : exp(xs[a * inner] - mx) / sum;
        mag[i] = log_ ? fabs(xs[a * inner]) + fabs(mx) + 1 : fabs(want[i]);
      }
    }
  char name[80];
  snprintf(name, sizeof name, "softmax outer%d axis%d inner%d log%d", outer, axis, inner, log_);
  for (int order = 0; order < 2; order++) {
    uint64_t bytes[2] = {4 * n, 4 * n};
    int32_t off[2];
    uint32_t arena_bytes = layout(bytes, 2, order, off);
    uint8_t *arena = arena_new(arena_bytes);
    memcpy(at(arena, off[0]), x, 4 * n);
    int32_t args[NNW_SOFTMAX_NARGS] = {off[0], off[1], outer, axis, inner, log_};
    if (run_op(NNW_OP_SOFTMAX, args, NNW_SOFTMAX_NARGS, arena, arena_bytes) == NNW_OK)
      check_close(name, at(arena, off[1]), want, mag, n, 1e-30, 4e-6);
    args[NNW_SOFTMAX_Y] = off[0];
    if (run_op(NNW_OP_SOFTMAX, args, NNW_SOFTMAX_NARGS, arena, arena_bytes) == NNW_OK)
      check_close(name, at(arena, off[0]), want, mag, n, 1e-30, 4e-6);
    free(arena);
  }
  free(x);
  free(want);
  free(mag);
}

void test_softmax(void) {
  for (int log_ = 0; log_ < 2; log_++) {
    softmax_case(1, 1000, 1, log_, 10);
    softmax_case(3, 7, 1, log_, 5);
    softmax_case(2, 5, 4, log_, 5);
    softmax_case(2, 6, 7, log_, 5);
    softmax_case(1, 3, 3, log_, 5);
    softmax_case(4, 1, 1, log_, 5);
    softmax_case(2, 9, 1, log_, 200);
  }
}

void test_mean_rows(void) {
  static const int shapes[][2] = {{1, 49}, {1280, 49}, {3, 1}, {5, 7}, {2, 17}, {7, 3}};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    int rows = shapes[s][0], inner = shapes[s][1];
    size_t n = (size_t)rows * inner;
    float *x = malloc(4 * n);
    double *want = malloc(8 * (size_t)rows), *mag = malloc(8 * (size_t)rows);
    fill_random(x, n, -1, 1);
    for (int r = 0; r < rows; r++) {
      double sum = 0, g = 0;
      for (int i = 0; i < inner; i++) {
        sum += x[(size_t)r * inner + i];
        g += fabs(x[(size_t)r * inner + i]);
      }
      want[r] = sum / inner;
      mag[r] = g / inner;
    }
    char name[48];
    snprintf(name, sizeof name, "mean_rows %dx%d", rows, inner);
    for (int order = 0; order < 2; order++) {
      uint64_t bytes[2] = {4 * n, 4 * (uint64_t)rows};
      int32_t off[2];
      uint32_t arena_bytes = layout(bytes, 2, order, off);
      uint8_t *arena = arena_new(arena_bytes);
      memcpy(at(arena, off[0]), x, 4 * n);
      int32_t args[NNW_MEAN_ROWS_NARGS] = {off[0], off[1], rows, inner};
      if (run_op(NNW_OP_MEAN_ROWS, args, NNW_MEAN_ROWS_NARGS, arena, arena_bytes) == NNW_OK)
        check_close(name, at(arena, off[1]), want, mag, (size_t)rows, 1e-7, 1e-6);
      free(arena);
    }
    free(x);
    free(want);
    free(mag);
  }
}

/* ---- copy2d ---------------------------------------------------------------------------- */

static void copy2d_case(int rows, int row_bytes, int src_stride, int dst_stride, int src_at,
                        int dst_at, uint32_t arena_bytes) {
  uint8_t *arena = arena_new(arena_bytes);
  for (uint32_t i = 0; i < arena_bytes; i++) arena[i] = (uint8_t)rng_u32();
  uint8_t *want = malloc(arena_bytes);
  memcpy(want, arena, arena_bytes);
  for (int r = 0; r < rows; r++)
    memmove(want + dst_at + r * dst_stride, want + src_at + r * src_stride, (size_t)row_bytes);
  int32_t args[NNW_COPY2D_NARGS] = {src_at, dst_at, rows, row_bytes, src_stride, dst_stride};
  if (run_op(NNW_OP_COPY2D, args, NNW_COPY2D_NARGS, arena, arena_bytes) == NNW_OK)
    expect(memcmp(arena, want, arena_bytes) == 0, "copy2d rows%d bytes%d strides %d,%d at %d,%d",
           rows, row_bytes, src_stride, dst_stride, src_at, dst_at);
  free(arena);
  free(want);
}

void test_copy2d(void) {
  copy2d_case(1, 37, 37, 37, 1, 50, 87);            /* reshape-like, odd offsets, flush at end */
  copy2d_case(4, 12, 12, 30, 0, 48, 48 + 3 * 30 + 12); /* concat along the inner axis */
  copy2d_case(3, 5, 9, 5, 3, 40, 55);               /* slice of rows */
  copy2d_case(5, 8, 8, 8, 0, 4, 48);                /* overlapping, contiguous */
  copy2d_case(3, 6, 10, 7, 2, 3, 40);               /* overlapping rows */
  copy2d_case(2, 3, 0, 3, 0, 8, 14);                /* broadcast one row */
}
