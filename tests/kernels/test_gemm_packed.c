/* gemm_packed against a double-precision reference (bias, residual, gelu, clamp; every tail of the
 * 4x8 tile), and its validator on hostile arguments. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "internal.h"
#include "tests.h"

static void pack(const float *b, int k, int n, float *bp) {
  int panels = (n + 7) / 8;
  for (int p = 0; p < panels; p++)
    for (int kk = 0; kk < k; kk++)
      for (int c = 0; c < 8; c++) {
        int j = 8 * p + c;
        bp[((size_t)p * k + kk) * 8 + c] = j < n ? b[(size_t)kk * n + j] : 0.0f;
      }
}

static void packed_case(int m, int n, int k, int has_bias, int has_r, int act, float lo, float hi) {
  size_t an = (size_t)m * k, bn = (size_t)k * n, pn = (size_t)((n + 7) / 8) * 8 * k, yn = (size_t)m * n;
  float *a = malloc(4 * an), *b = malloc(4 * bn), *bp = malloc(4 * pn), *bias = malloc(4 * (size_t)n),
        *r = malloc(4 * yn);
  double *want = malloc(8 * yn), *mag = malloc(8 * yn);
  fill_random(a, an, -1, 1);
  fill_random(b, bn, -1, 1);
  fill_random(bias, (size_t)n, -1, 1);
  fill_random(r, yn, -1, 1);
  pack(b, k, n, bp);
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) {
      double s = 0, g = 0;
      for (int kk = 0; kk < k; kk++) {
        double v = (double)a[i * k + kk] * b[kk * n + j];
        s += v;
        g += fabs(v);
      }
      if (has_bias) s += bias[j], g += fabs(bias[j]);
      if (has_r) s += r[i * n + j], g += fabs(r[i * n + j]);
      if (act == 1) s = 0.5 * s * (1.0 + erf(s / sqrt(2.0)));
      want[i * n + j] = s < lo ? lo : s > hi ? hi : s;
      mag[i * n + j] = g;
    }
  char name[128];
  snprintf(name, sizeof name, "gemm_packed m%d n%d k%d bias%d r%d act%d [%g,%g]", m, n, k, has_bias, has_r,
           act, lo, hi);
  for (int order = 0; order < 2; order++) {
    uint64_t bytes[5] = {4 * an, 4 * pn, 4 * (uint64_t)n, 4 * yn, 4 * yn};
    int32_t off[5];
    uint32_t arena_bytes = layout(bytes, 5, order, off);
    uint8_t *arena = arena_new(arena_bytes);
    memcpy(at(arena, off[0]), a, 4 * an);
    memcpy(at(arena, off[1]), bp, 4 * pn);
    memcpy(at(arena, off[2]), bias, 4 * (size_t)n);
    memcpy(at(arena, off[3]), r, 4 * yn);
    int32_t args[NNW_GEMM_PACKED_NARGS] = {off[0], off[1], has_bias ? off[2] : -1, has_r ? off[3] : -1,
                                           off[4], m, n, k, act, f32_bits(lo), f32_bits(hi)};
    if (run_op(NNW_OP_GEMM_PACKED, args, NNW_GEMM_PACKED_NARGS, arena, arena_bytes) == NNW_OK)
      check_close(name, at(arena, off[4]), want, mag, yn, 1e-6, 1e-6);
    /* wasmtime's variant (host hint: A packed k-major, lanes by shuffle): the very same bits */
    float *first = malloc(4 * yn);
    memcpy(first, at(arena, off[4]), 4 * yn);
    memset(at(arena, off[4]), 0xFF, 4 * yn);
    nnw_host_hints = NNW_HINT_SPLAT_BY_SHUFFLE;
    if (run_op(NNW_OP_GEMM_PACKED, args, NNW_GEMM_PACKED_NARGS, arena, arena_bytes) == NNW_OK)
      expect(memcmp(first, at(arena, off[4]), 4 * yn) == 0, "%s: host hint changed the result", name);
    nnw_host_hints = 0;
    /* the unclamped epilogues' own loops (gemm_packed.c: finish_c) against the generic one, which
     * a clamp to the finite range runs: the same bits */
    if (lo == -INFINITY && hi == INFINITY) {
      args[NNW_GEMM_PACKED_ACT_MIN] = f32_bits(-FLT_MAX);
      args[NNW_GEMM_PACKED_ACT_MAX] = f32_bits(FLT_MAX);
      memset(at(arena, off[4]), 0xFF, 4 * yn);
      if (run_op(NNW_OP_GEMM_PACKED, args, NNW_GEMM_PACKED_NARGS, arena, arena_bytes) == NNW_OK)
        expect(memcmp(first, at(arena, off[4]), 4 * yn) == 0, "%s: the generic epilogue differs", name);
    }
    free(first);
    free(arena);
  }
  free(a);
  free(b);
  free(bp);
  free(bias);
  free(r);
  free(want);
  free(mag);
}

/* y = gemm_packed(a [m, k]) into y (m * n floats), bias and r as given (NULL: absent) */
static void run_packed(int m, int n, int k, const float *a, const float *bp, const float *bias, const float *r,
                       int act, float *y) {
  size_t an = (size_t)m * k, pn = (size_t)((n + 7) / 8) * 8 * k, yn = (size_t)m * n;
  uint64_t bytes[5] = {4 * an, 4 * pn, 4 * (uint64_t)n, 4 * yn, 4 * yn};
  int32_t off[5];
  uint32_t arena_bytes = layout(bytes, 5, 0, off);
  uint8_t *arena = arena_new(arena_bytes);
  memcpy(at(arena, off[0]), a, 4 * an);
  memcpy(at(arena, off[1]), bp, 4 * pn);
  if (bias != NULL) memcpy(at(arena, off[2]), bias, 4 * (size_t)n);
  if (r != NULL) memcpy(at(arena, off[3]), r, 4 * yn);
  int32_t args[NNW_GEMM_PACKED_NARGS] = {off[0], off[1], bias != NULL ? off[2] : -1, r != NULL ? off[3] : -1,
                                         off[4], m, n, k, act, f32_bits(-INFINITY), f32_bits(INFINITY)};
  memset(y, 0xFF, 4 * yn);
  if (run_op(NNW_OP_GEMM_PACKED, args, NNW_GEMM_PACKED_NARGS, arena, arena_bytes) == NNW_OK)
    memcpy(y, at(arena, off[4]), 4 * yn);
  free(arena);
}

/* A row computed alone (the decode step's GEMV: gemm_packed.c's row_panels, several panels side
 * by side) gives the bits it gets in a tile with another row: m rows, then m + 1 rows with the
 * last one repeated, row m-1 compared (m 5 with the host hint: four packed rows, one left) */
static void one_row_case(int m, int n, int k, int has_bias, int has_r, int act, int hint) {
  size_t an = (size_t)(m + 1) * k, pn = (size_t)((n + 7) / 8) * 8 * k, yn = (size_t)(m + 1) * n;
  float *a = malloc(4 * an), *b = malloc(4 * (size_t)k * n), *bp = malloc(4 * pn), *bias = malloc(4 * (size_t)n),
        *r = malloc(4 * yn), *y1 = malloc(4 * yn), *y2 = malloc(4 * yn);
  fill_random(a, (size_t)m * k, -1, 1);
  memcpy(a + (size_t)m * k, a + (size_t)(m - 1) * k, 4 * (size_t)k);
  fill_random(b, (size_t)k * n, -1, 1);
  fill_random(bias, (size_t)n, -1, 1);
  fill_random(r, (size_t)m * n, -1, 1);
  memcpy(r + (size_t)m * n, r + (size_t)(m - 1) * n, 4 * (size_t)n);
  pack(b, k, n, bp);
  nnw_host_hints = hint ? NNW_HINT_SPLAT_BY_SHUFFLE : 0;
  run_packed(m, n, k, a, bp, has_bias ? bias : NULL, has_r ? r : NULL, act, y1);
  run_packed(m + 1, n, k, a, bp, has_bias ? bias : NULL, has_r ? r : NULL, act, y2);
  nnw_host_hints = 0;
  expect(memcmp(y1 + (size_t)(m - 1) * n, y2 + (size_t)(m - 1) * n, 4 * (size_t)n) == 0,
         "gemm_packed m%d n%d k%d bias%d r%d act%d hint%d: the last row alone differs from it in a tile", m, n, k,
         has_bias, has_r, act, hint);
  free(a);
  free(b);
  free(bp);
  free(bias);
  free(r);
  free(y1);
  free(y2);
}

static void hostile(void) {
  /* m 2, n 9 (two panels), k 3: a 24 B, bp 192 B, bias 36 B, r and y 72 B */
  enum { A = 0, BP = 32, BIAS = 224, R = 272, Y = 352, ARENA = 512 };
  const float I = INFINITY;
  const int32_t g[NNW_GEMM_PACKED_NARGS] = {A, BP, BIAS, R, Y, 2, 9, 3, 1, f32_bits(-I), f32_bits(I)};
  static const struct {
    const char *what;
    int i;
    int32_t v;
    int want;
  } cases[] = {
      {"valid", -1, 0, NNW_OK},
      {"no bias", NNW_GEMM_PACKED_BIAS, -1, NNW_OK},
      {"no residual", NNW_GEMM_PACKED_R, -1, NNW_OK},
      {"m 0", NNW_GEMM_PACKED_M, 0, NNW_BAD_ARGS},
      {"n negative", NNW_GEMM_PACKED_N, -8, NNW_BAD_ARGS},
      {"k INT32_MIN", NNW_GEMM_PACKED_K, INT32_MIN, NNW_BAD_ARGS},
      {"act 2", NNW_GEMM_PACKED_ACT, 2, NNW_BAD_ARGS},
      {"act -1", NNW_GEMM_PACKED_ACT, -1, NNW_BAD_ARGS},
      {"n huge", NNW_GEMM_PACKED_N, INT32_MAX, NNW_OUT_OF_BOUNDS},
      {"m*k wraps", NNW_GEMM_PACKED_M, 1 << 30, NNW_OUT_OF_BOUNDS},
      {"k huge", NNW_GEMM_PACKED_K, INT32_MAX, NNW_OUT_OF_BOUNDS},
      {"n 40: r past the arena", NNW_GEMM_PACKED_N, 40, NNW_OUT_OF_BOUNDS},
      {"a absent", NNW_GEMM_PACKED_A, -1, NNW_OUT_OF_BOUNDS},
      {"bp absent", NNW_GEMM_PACKED_BP, -1, NNW_OUT_OF_BOUNDS},
      {"y absent", NNW_GEMM_PACKED_Y, -1, NNW_OUT_OF_BOUNDS},
      {"bp past the arena", NNW_GEMM_PACKED_BP, ARENA - 64, NNW_OUT_OF_BOUNDS},
      {"y past the arena", NNW_GEMM_PACKED_Y, ARENA - 4, NNW_OUT_OF_BOUNDS},
      {"a negative", NNW_GEMM_PACKED_A, -8, NNW_OUT_OF_BOUNDS},
      {"bias misaligned", NNW_GEMM_PACKED_BIAS, BIAS + 2, NNW_BAD_ARGS},
      {"y over a", NNW_GEMM_PACKED_Y, A + 4, NNW_BAD_ARGS},
      {"y over bp", NNW_GEMM_PACKED_Y, BP + 64, NNW_BAD_ARGS},
      {"y over bias", NNW_GEMM_PACKED_Y, BIAS, NNW_BAD_ARGS},
      {"y is r", NNW_GEMM_PACKED_Y, R, NNW_BAD_ARGS},
      {"act_min nan", NNW_GEMM_PACKED_ACT_MIN, 0x7FC00000, NNW_BAD_ARGS},
      {"act_max nan", NNW_GEMM_PACKED_ACT_MAX, (int32_t)0xFFC00000u, NNW_BAD_ARGS},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    int32_t args[NNW_GEMM_PACKED_NARGS];
    memcpy(args, g, sizeof args);
    if (cases[c].i >= 0) args[cases[c].i] = cases[c].v;
    int got = load_status(NNW_OP_GEMM_PACKED, args, NNW_GEMM_PACKED_NARGS, ARENA);
    expect(got == cases[c].want, "gemm_packed: %s gives %d, want %d", cases[c].what, got, cases[c].want);
  }
}

void test_gemm_packed(void) {
  const float I = INFINITY;
  packed_case(128, 256, 256, 1, 0, 0, -I, I); /* a BERT-mini projection */
  packed_case(9, 1024, 16, 1, 0, 1, -I, I);   /* the FFN's first layer: Gelu */
  packed_case(7, 24, 40, 1, 1, 0, -I, I);     /* the second: a residual */
  packed_case(1, 1, 1, 0, 0, 0, -I, I);
  packed_case(5, 13, 7, 1, 1, 1, -0.25f, 0.5f);
  packed_case(3, 3, 33, 0, 1, 0, 0, I);
  packed_case(70, 17, 1024, 1, 1, 1, -I, I); /* hinted: A packed in chunks of 32 rows, 2 rows left */
  packed_case(6, 9, 8193, 1, 0, 0, -I, I);   /* k past the pack buffer: tile() even when hinted */
  for (int t = 0; t < 30; t++)
    packed_case(1 + (int)(rng_u32() % 11), 1 + (int)(rng_u32() % 27), 1 + (int)(rng_u32() % 20),
                (int)(rng_u32() % 2), (int)(rng_u32() % 2), (int)(rng_u32() % 2), rng_u32() % 2 ? -I : -0.5f,
                rng_u32() % 2 ? I : 0.5f);
  /* one row: whole groups of four panels, single panels after them, a tail panel */
  packed_case(1, 768, 64, 1, 1, 0, -I, I);
  packed_case(1, 77, 33, 1, 0, 1, -I, I);
  for (int hint = 0; hint < 2; hint++) {
    one_row_case(1, 77, 33, 1, 1, 0, hint);
    one_row_case(1, 96, 64, 0, 0, 1, hint);
    one_row_case(1, 40, 5, 1, 0, 0, hint);
    one_row_case(5, 69, 40, 1, 1, 0, hint);
  }
  hostile();
}
