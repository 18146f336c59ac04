/* gemm_packed_f16 against gemm_packed on the widened panels (the same bits, hinted or not, every
 * block size), its widening against a reference decoding of every finite half, and its validator
 * on hostile arguments. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "internal.h"
#include "tests.h"

static double half_ref(uint16_t h) {
  int e = (h >> 10) & 31, m = h & 1023;
  double v = e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);
  return h & 0x8000 ? -v : v;
}

/* where column c (0..7) of a k step sits among its eight halves: c0 c4 c1 c5 c2 c6 c3 c7 */
static int slot(int c) { return 2 * (c % 4) + c / 4; }

static uint16_t random_half(void) {
  for (;;) { /* finite: every exponent but 31, subnormals and zeros included */
    uint16_t h = (uint16_t)rng_u32();
    if (((h >> 10) & 31) != 31) return h;
  }
}

/* runs gemm_packed_f16 on halves hp and gemm_packed on their widening; y bits must agree */
/* a_special: 1 puts 70000 in A's first row (a 2^112 would overflow: the GEMV takes the full
 * widening), 2 a float32 subnormal and an infinity (scaled path, still exact) */
static int a_special;

static void f16_case(int m, int n, int k, int has_bias, int has_r, int act, float lo, float hi, int block) {
  int panels = (n + 7) / 8;
  size_t an = (size_t)m * k, pn = (size_t)panels * 8 * k, yn = (size_t)m * n, sn = (size_t)block * 8 * k;
  float *a = malloc(4 * an), *bp = malloc(4 * pn), *bias = malloc(4 * (size_t)n), *r = malloc(4 * yn);
  uint16_t *hp = malloc(2 * pn);
  fill_random(a, an, -1, 1);
  if (a_special == 1) a[k / 2] = 70000.0f;
  if (a_special == 2) a[0] = 1e-40f, a[an - 1] = -INFINITY;
  fill_random(bias, (size_t)n, -1, 1);
  fill_random(r, yn, -1, 1);
  for (size_t e = 0; e < pn; e++) { /* hp paired as ops.def says: column c of a k step at slot(c) */
    hp[e - e % 8 + slot((int)(e % 8))] = (uint16_t)(random_half() & 0xBFFF); /* |b| < 2: sums finite */
  }
  for (size_t e = 0; e < pn; e++) bp[e] = (float)half_ref(hp[e - e % 8 + slot((int)(e % 8))]);
  char name[128];
  snprintf(name, sizeof name, "gemm_packed_f16 m%d n%d k%d bias%d r%d act%d block%d", m, n, k, has_bias, has_r, act,
           block);
  for (int hint = 0; hint < 2; hint++) {
    uint64_t bytes[7] = {4 * an, 4 * pn, 4 * (uint64_t)n, 4 * yn, 4 * yn, 2 * pn, 4 * sn};
    int32_t off[7];
    uint32_t arena_bytes = layout(bytes, 7, hint, off);
    uint8_t *arena = arena_new(arena_bytes);
    memcpy(at(arena, off[0]), a, 4 * an);
    memcpy(at(arena, off[1]), bp, 4 * pn);
    memcpy(at(arena, off[2]), bias, 4 * (size_t)n);
    memcpy(at(arena, off[3]), r, 4 * yn);
    memcpy(at(arena, off[5]), hp, 2 * pn);
    nnw_host_hints = hint ? NNW_HINT_SPLAT_BY_SHUFFLE : 0;
    int32_t args32[NNW_GEMM_PACKED_NARGS] = {off[0], off[1], has_bias ? off[2] : -1, has_r ? off[3] : -1,
                                             off[4], m, n, k, act, f32_bits(lo), f32_bits(hi)};
    float *want = malloc(4 * yn);
    if (run_op(NNW_OP_GEMM_PACKED, args32, NNW_GEMM_PACKED_NARGS, arena, arena_bytes) == NNW_OK)
      memcpy(want, at(arena, off[4]), 4 * yn);
    memset(at(arena, off[4]), 0xFF, 4 * yn);
    int32_t args[NNW_GEMM_PACKED_F16_NARGS] = {off[0], off[5], has_bias ? off[2] : -1, has_r ? off[3] : -1, off[4],
                                               off[6], m, n, k, act, f32_bits(lo), f32_bits(hi), block};
    if (run_op(NNW_OP_GEMM_PACKED_F16, args, NNW_GEMM_PACKED_F16_NARGS, arena, arena_bytes) == NNW_OK)
      expect(memcmp(want, at(arena, off[4]), 4 * yn) == 0, "%s hint%d: not gemm_packed's bits", name, hint);
    nnw_host_hints = 0;
    free(want);
    free(arena);
  }
  free(a);
  free(bp);
  free(bias);
  free(r);
  free(hp);
}

/* every finite half through y = 1 * b (m 1, k 1): the widening is exact */
static void every_half(void) {
  enum { N = 8 * 64 };
  for (int part = 0; part < 0x10000 / N; part++) {
    uint64_t bytes[4] = {4, 2 * N, 4 * N, 32};
    int32_t off[4];
    uint32_t arena_bytes = layout(bytes, 4, 0, off);
    uint8_t *arena = arena_new(arena_bytes);
    float one = 1.0f;
    memcpy(at(arena, off[0]), &one, 4);
    uint16_t *h = (uint16_t *)(void *)at(arena, off[1]);
    for (int j = 0; j < N; j++) {
      h[j] = (uint16_t)(part * N + j);
      if (((h[j] >> 10) & 31) == 31) h[j] = 0x3C00; /* inf/NaN are never stored as halves */
    }
    int32_t args[NNW_GEMM_PACKED_F16_NARGS] = {off[0], off[1], -1, -1, off[2], off[3], 1, N, 1, 0,
                                               f32_bits(-INFINITY), f32_bits(INFINITY), 1};
    /* k = 1: panel q holds columns 8q..8q+7, column c at slot(c): y[j] is that half */
    if (run_op(NNW_OP_GEMM_PACKED_F16, args, NNW_GEMM_PACKED_F16_NARGS, arena, arena_bytes) == NNW_OK) {
      const float *y = (const float *)(const void *)at(arena, off[2]);
      int bad = 0;
      for (int j = 0; j < N && !bad; j++) {
        uint16_t hj = h[j - j % 8 + slot(j % 8)];
        if ((double)y[j] != half_ref(hj))
          bad = expect(0, "half 0x%04x widened to %g, want %g", hj, y[j], half_ref(hj)) + 1;
      }
    }
    free(arena);
  }
}

static void hostile(void) {
  /* m 2, n 9 (two panels), k 3: a 24 B, bp 96 B, bias 36 B, r and y 72 B, scratch 96 B */
  enum { A = 0, BP = 32, BIAS = 128, R = 176, Y = 256, S = 336, ARENA = 512 };
  const float I = INFINITY;
  const int32_t g[NNW_GEMM_PACKED_F16_NARGS] = {A, BP, BIAS, R, Y, S, 2, 9, 3, 1, f32_bits(-I), f32_bits(I), 1};
  static const struct {
    const char *what;
    int i;
    int32_t v;
    int want;
  } cases[] = {
      {"valid", -1, 0, NNW_OK},
      {"no bias", NNW_GEMM_PACKED_F16_BIAS, -1, NNW_OK},
      {"m 0", NNW_GEMM_PACKED_F16_M, 0, NNW_BAD_ARGS},
      {"block 0", NNW_GEMM_PACKED_F16_BLOCK, 0, NNW_BAD_ARGS},
      {"block 2: scratch past the arena", NNW_GEMM_PACKED_F16_BLOCK, 2, NNW_OUT_OF_BOUNDS},
      {"k huge", NNW_GEMM_PACKED_F16_K, INT32_MAX, NNW_OUT_OF_BOUNDS},
      {"act 2", NNW_GEMM_PACKED_F16_ACT, 2, NNW_BAD_ARGS},
      {"bp odd", NNW_GEMM_PACKED_F16_BP, BP + 1, NNW_BAD_ARGS},
      {"bp past the arena", NNW_GEMM_PACKED_F16_BP, ARENA - 64, NNW_OUT_OF_BOUNDS},
      {"scratch absent", NNW_GEMM_PACKED_F16_SCRATCH, -1, NNW_OUT_OF_BOUNDS},
      {"scratch over y", NNW_GEMM_PACKED_F16_SCRATCH, Y, NNW_BAD_ARGS},
      {"scratch over bp", NNW_GEMM_PACKED_F16_SCRATCH, BP + 16, NNW_BAD_ARGS},
      {"y over a", NNW_GEMM_PACKED_F16_Y, A + 4, NNW_BAD_ARGS},
      {"act_min nan", NNW_GEMM_PACKED_F16_ACT_MIN, 0x7FC00000, NNW_BAD_ARGS},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    int32_t args[NNW_GEMM_PACKED_F16_NARGS];
    memcpy(args, g, sizeof args);
    if (cases[c].i >= 0) args[cases[c].i] = cases[c].v;
    int got = load_status(NNW_OP_GEMM_PACKED_F16, args, NNW_GEMM_PACKED_F16_NARGS, ARENA);
    expect(got == cases[c].want, "gemm_packed_f16: %s gives %d, want %d", cases[c].what, got, cases[c].want);
  }
}

void test_gemm_packed_f16(void) {
  const float I = INFINITY;
  every_half();
  f16_case(1, 768, 64, 1, 0, 0, -I, I, 4);  /* a decode step: halves widened in registers */
  f16_case(1, 77, 33, 1, 1, 0, -I, I, 4);   /* one row: four panels at a time, then one by one, a tail */
  f16_case(1, 100, 20, 0, 1, 1, -I, I, 4);
  for (a_special = 1; a_special <= 2; a_special++) {
    f16_case(2, 30, 50, 1, 1, 0, -I, I, 1); /* the GEMV: A scaled by 2^112, or not */
    f16_case(5, 30, 50, 1, 0, 0, -I, I, 2);
  }
  a_special = 0;
  f16_case(3, 21, 40, 1, 1, 1, -I, I, 1);
  f16_case(128, 64, 96, 1, 0, 0, -I, I, 3); /* widened in blocks of 3 panels into scratch */
  f16_case(9, 100, 16, 1, 0, 1, -I, I, 2);
  f16_case(70, 17, 300, 1, 1, 0, -I, I, 8);
  for (int t = 0; t < 30; t++)
    f16_case(1 + (int)(rng_u32() % 11), 1 + (int)(rng_u32() % 27), 1 + (int)(rng_u32() % 20), (int)(rng_u32() % 2),
             (int)(rng_u32() % 2), (int)(rng_u32() % 2), rng_u32() % 2 ? -I : -0.5f, rng_u32() % 2 ? I : 0.5f,
             1 + (int)(rng_u32() % 4));
  hostile();
}
