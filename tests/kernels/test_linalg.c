/* gemm and matmul against double-precision references. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"
#include "internal.h"
#include "tests.h"

struct gemm_case {
  int m, n, k, ta, tb, c_mode; /* c_mode: 0 none, 1 full, 2 row [N], 3 column [M,1], 4 scalar */
  float alpha, beta, lo, hi;
};

static void gemm_case(const struct gemm_case *t) {
  static const int c_rs[5][2] = {{0, 0}, {1, 1}, {0, 1}, {1, 0}, {0, 0}};
  int crs = c_rs[t->c_mode][0] ? t->n : 0, ccs = c_rs[t->c_mode][1];
  if (t->c_mode == 3) crs = 1;
  size_t an = (size_t)t->m * t->k, bn = (size_t)t->k * t->n, yn = (size_t)t->m * t->n;
  size_t cn = t->c_mode ? (size_t)(t->m - 1) * crs + (size_t)(t->n - 1) * ccs + 1 : 1;
  float *a = malloc(4 * an), *b = malloc(4 * bn), *c = malloc(4 * cn);
  double *want = malloc(8 * yn), *mag = malloc(8 * yn);
  fill_random(a, an, -1, 1);
  fill_random(b, bn, -1, 1);
  fill_random(c, cn, -1, 1);
  for (int i = 0; i < t->m; i++)
    for (int j = 0; j < t->n; j++) {
      double s = 0, g = 0;
      for (int kk = 0; kk < t->k; kk++) {
        double v = (double)(t->ta ? a[kk * t->m + i] : a[i * t->k + kk]) *
                   (t->tb ? b[j * t->k + kk] : b[kk * t->n + j]);
        s += v;
        g += fabs(v);
      }
      s *= t->alpha;
      g *= fabs(t->alpha);
      if (t->c_mode) {
        double cv = (double)t->beta * c[i * crs + j * ccs];
        s += cv;
        g += fabs(cv);
      }
      want[i * t->n + j] = s < t->lo ? t->lo : s > t->hi ? t->hi : s;
      mag[i * t->n + j] = g;
    }
  char name[128];
  snprintf(name, sizeof name, "gemm m%d n%d k%d ta%d tb%d c%d alpha%g beta%g [%g,%g]", t->m, t->n,
           t->k, t->ta, t->tb, t->c_mode, t->alpha, t->beta, t->lo, t->hi);
  for (int order = 0; order < 2; order++) {
    uint64_t bytes[4] = {4 * an, 4 * bn, 4 * cn, 4 * yn};
    int32_t off[4];
    uint32_t arena_bytes = layout(bytes, 4, order, off);
    uint8_t *arena = arena_new(arena_bytes);
    memcpy(at(arena, off[0]), a, 4 * an);
    memcpy(at(arena, off[1]), b, 4 * bn);
    memcpy(at(arena, off[2]), c, 4 * cn);
    int32_t args[NNW_GEMM_NARGS] = {off[0], off[1], t->c_mode ? off[2] : -1, off[3], t->m, t->n,
                                    t->k, t->ta, t->tb, f32_bits(t->alpha), f32_bits(t->beta),
                                    crs, ccs, f32_bits(t->lo), f32_bits(t->hi)};
    if (run_op(NNW_OP_GEMM, args, NNW_GEMM_NARGS, arena, arena_bytes) == NNW_OK)
      check_close(name, at(arena, off[3]), want, mag, yn, 1e-6, 1e-6);
    /* wasmtime's variant (host hint, gemm_nn.c): the very same bits */
    float *first = malloc(4 * yn);
    memcpy(first, at(arena, off[3]), 4 * yn);
    nnw_host_hints = NNW_HINT_SPLAT_BY_SHUFFLE;
    if (run_op(NNW_OP_GEMM, args, NNW_GEMM_NARGS, arena, arena_bytes) == NNW_OK)
      expect(memcmp(first, at(arena, off[3]), 4 * yn) == 0, "%s: host hint changed the result", name);
    nnw_host_hints = 0;
    free(first);
    free(arena);
  }
  free(a);
  free(b);
  free(c);
  free(want);
  free(mag);
}

void test_gemm(void) {
  const float I = INFINITY;
  static const struct gemm_case cases[] = {
      {1, 1000, 1280, 0, 1, 2, 1, 1, -I, I}, /* the classifier Linear */
      {1, 13, 37, 0, 1, 2, 1, 1, -I, I},
      {3, 7, 5, 0, 1, 1, 0.5f, 2, -I, I},
      {5, 17, 9, 0, 0, 2, 1, 1, 0, I},
      {4, 8, 16, 0, 0, 0, 1, 0, -I, I},
      {7, 3, 4, 0, 0, 3, 1, 1, -I, I},
      {6, 9, 11, 1, 0, 4, 2, -1, -I, I},
      {2, 5, 3, 1, 1, 1, 1, 1, -0.5f, 0.5f},
      {9, 12, 1, 0, 1, 3, 1, 0.5f, -I, I},
      {1, 1, 1, 0, 0, 4, 1, 1, -I, I},
      {33, 70, 65, 0, 0, 1, 1, 1, -I, I},
      {10, 21, 19, 1, 1, 2, -1, 1, -I, I},
      {8, 37, 1024, 0, 0, 2, 1, 1, -I, I}, /* the packed variant (one block: B <= 512 KiB) */
      {8, 45, 1025, 0, 0, 1, 1, 1, -I, I},
      {6, 53, 8192, 0, 0, 1, 1, 1, -I, I}, /* its largest k (pack_a.h's buffer) */
      {5, 40, 8193, 0, 0, 1, 1, 1, -I, I}, /* and one past it */
      {9, 300, 40, 0, 0, 1, 1, 1, -I, I},  /* packed, 2x16 tiles, one column block (B <= 512 KiB) */
      {9, 1100, 130, 0, 0, 1, 1, 1, -I, I}, /* several column blocks, packed */
      /* packed, n = 1 mod 4: the last column as a vector down four rows, every C mode */
      {8, 49, 33, 0, 0, 1, 2, -1, -1, 1},
      {7, 41, 20, 1, 0, 2, 0.5f, 1.5f, -I, I},
      {5, 37, 64, 0, 1, 3, 1, 1, 0, I},
      {4, 33, 9, 0, 0, 4, -1, 2, -I, I},
      {6, 40, 24, 0, 0, 3, 1.5f, -0.5f, -2, 2}, /* 2x16 tiles with a bias column (a conv's) */
      {7, 61, 33, 1, 0, 1, 1, 1, -I, I},   /* packed from a transposed A (strided rows) */
      {12, 4, 7, 0, 0, 0, 1, 0, -I, I},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) gemm_case(&cases[i]);
  for (int r = 0; r < 30; r++) {
    struct gemm_case t = {1 + (int)(rng_u32() % 12), 1 + (int)(rng_u32() % 20),
                          1 + (int)(rng_u32() % 20), (int)(rng_u32() % 2), (int)(rng_u32() % 2),
                          (int)(rng_u32() % 5), rng_float(-2, 2), rng_float(-2, 2),
                          rng_u32() % 2 ? -I : -0.5f, rng_u32() % 2 ? I : 0.5f};
    gemm_case(&t);
  }
}

static void matmul_case(int batch, int m, int n, int k, int a_bcast, int b_bcast) {
  int a_bs = a_bcast ? 0 : m * k, b_bs = b_bcast ? 0 : k * n;
  size_t an = (size_t)(batch - 1) * a_bs + (size_t)m * k, bn = (size_t)(batch - 1) * b_bs + (size_t)k * n;
  size_t yn = (size_t)batch * m * n;
  float *a = malloc(4 * an), *b = malloc(4 * bn);
  double *want = malloc(8 * yn), *mag = malloc(8 * yn);
  fill_random(a, an, -1, 1);
  fill_random(b, bn, -1, 1);
  for (int bt = 0; bt < batch; bt++)
    for (int i = 0; i < m; i++)
      for (int j = 0; j < n; j++) {
        double s = 0, g = 0;
        for (int kk = 0; kk < k; kk++) {
          double v = (double)a[bt * a_bs + i * k + kk] * b[bt * b_bs + kk * n + j];
          s += v;
          g += fabs(v);
        }
        want[((size_t)bt * m + i) * n + j] = s;
        mag[((size_t)bt * m + i) * n + j] = g;
      }
  char name[96];
  snprintf(name, sizeof name, "matmul batch%d m%d n%d k%d a_bs%d b_bs%d", batch, m, n, k, a_bs, b_bs);
  for (int order = 0; order < 2; order++) {
    uint64_t bytes[3] = {4 * an, 4 * bn, 4 * yn};
    int32_t off[3];
    uint32_t arena_bytes = layout(bytes, 3, order, off);
    uint8_t *arena = arena_new(arena_bytes);
    memcpy(at(arena, off[0]), a, 4 * an);
    memcpy(at(arena, off[1]), b, 4 * bn);
    int32_t args[NNW_MATMUL_NARGS] = {off[0], off[1], off[2], batch, m, n, k, a_bs, b_bs};
    if (run_op(NNW_OP_MATMUL, args, NNW_MATMUL_NARGS, arena, arena_bytes) == NNW_OK)
      check_close(name, at(arena, off[2]), want, mag, yn, 1e-6, 1e-6);
    free(arena);
  }
  free(a);
  free(b);
  free(want);
  free(mag);
}

void test_matmul(void) {
  matmul_case(1, 4, 8, 16, 0, 0);
  matmul_case(3, 5, 7, 9, 0, 0);
  matmul_case(4, 6, 3, 5, 1, 0);
  matmul_case(2, 9, 13, 4, 0, 1);
  matmul_case(2, 1, 1, 1, 1, 1);
  matmul_case(1, 1, 50, 33, 0, 0);
  matmul_case(2, 17, 2, 6, 0, 0);
  for (int r = 0; r < 20; r++)
    matmul_case(1 + (int)(rng_u32() % 3), 1 + (int)(rng_u32() % 10), 1 + (int)(rng_u32() % 20),
                1 + (int)(rng_u32() % 12), (int)(rng_u32() % 2), (int)(rng_u32() % 2));
}

/* conv2d, matmul and attention (all on nnw_gemm_nn) again with wasmtime's host hints set */
void test_host_hints(void) {
  nnw_host_hints = NNW_HINT_SPLAT_BY_SHUFFLE | NNW_HINT_HOISTS_LOADS;
  test_conv2d();
  test_matmul();
  test_attention();
  nnw_host_hints = 0;
}
