/* q8_gemm_pk (kernels_c/q8/gemm_pk.c): B packed here as the plan compiler packs it
 * (lower/quant.py: pack_q8_b), then the same tensors through q8_gemm_ep, whose bits it must
 * give, and a double reference; tensors flush against either end of the arena; hostile args. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "tests.h"

enum { U8 = 2, I8 = 3, F32 = 1 };

static int32_t kp8(int k) { return (k + 7) / 8 * 8; }
static int32_t pk_scratch(int m, int k) { return 2 * m * kp8(k); }
static int32_t ep_scratch(int m, int k) { return 4 * m * ((k + 1) / 2) + 32 * ((k + 1) / 2); }
static int32_t bp_count(int n, int k) { return (n + 3) / 4 * 4 * kp8(k); }

/* bp[(j/4)*4kp + (kk/8)*32 + (j%4)*8 + kk%8] = b[kk][j] - zp[j] (int8 b), zero past k and n */
static void pack(const uint8_t *b, const uint8_t *zp, int zp_cs, int k, int n, int16_t *bp) {
  int kp = kp8(k);
  memset(bp, 0, 2 * (size_t)bp_count(n, k));
  for (int kk = 0; kk < k; kk++)
    for (int j = 0; j < n; j++)
      bp[(size_t)(j / 4) * 4 * kp + (size_t)(kk / 8) * 32 + (j % 4) * 8 + kk % 8] =
          (int16_t)((int8_t)b[(size_t)kk * n + j] - (int8_t)zp[zp_cs ? j : 0]);
}

static void fill_bytes(uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++) p[i] = (uint8_t)rng_u32();
}

static void pk_case(int m, int n, int k, int a_dt, int scale_s, int has_zp, int has_fbias, int has_r, int act) {
  size_t a_n = (size_t)m * k, b_n = (size_t)k * n, y_n = (size_t)m * n, bp_n = (size_t)bp_count(n, k);
  uint8_t *a = malloc(a_n), *b = malloc(b_n), azp[1], *bzp = malloc((size_t)n);
  float *scale = malloc(4 * (size_t)n), *fbias = malloc(4 * (size_t)n), *r = malloc(4 * y_n);
  int16_t *bp = malloc(2 * bp_n);
  fill_bytes(a, a_n);
  fill_bytes(b, b_n);
  fill_bytes(azp, 1);
  fill_bytes(bzp, (size_t)n);
  fill_random(fbias, (size_t)n, -1, 1);
  fill_random(r, y_n, -1, 1);
  for (int j = 0; j < n; j++) scale[j] = rng_float(1e-5f, 1e-4f);
  pack(b, bzp, 1, k, n, bp);
  double *want = malloc(8 * y_n), *mag = malloc(8 * y_n);
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) {
      int64_t acc = 0;
      int32_t z = has_zp ? (a_dt == I8 ? (int8_t)azp[0] : azp[0]) : 0;
      for (int kk = 0; kk < k; kk++) {
        int32_t av = a_dt == I8 ? (int8_t)a[(size_t)i * k + kk] : a[(size_t)i * k + kk];
        acc += (int64_t)(av - z) * ((int8_t)b[(size_t)kk * n + j] - (int8_t)bzp[j]);
      }
      size_t at = (size_t)i * n + j;
      double v = (double)((float)acc * scale[scale_s ? j : 0]);
      if (has_fbias) v += fbias[j];
      if (has_r) v += r[at];
      if (act) v = 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
      want[at] = v;
      mag[at] = fabs(v) + 1;
    }
  char name[112];
  snprintf(name, sizeof name, "q8_gemm_pk m%d n%d k%d a_dt%d scale_s%d zp%d fbias%d r%d act%d", m, n, k, a_dt,
           scale_s, has_zp, has_fbias, has_r, act);
  for (int order = 0; order < 2; order++) {
    /* a, bp, azp, scale, fbias, r, y, scratch; then q8_gemm_ep's b, b_zp, y, scratch */
    uint64_t bytes[12] = {a_n, 2 * bp_n, 1, 4 * (uint64_t)n, 4 * (uint64_t)n, 4 * y_n, 4 * y_n,
                          (uint64_t)pk_scratch(m, k), b_n, (uint64_t)n, 4 * y_n, (uint64_t)ep_scratch(m, k)};
    int32_t off[12];
    uint32_t arena_bytes = layout(bytes, 12, order, off);
    uint8_t *arena = arena_new(arena_bytes);
    memcpy(arena + off[0], a, a_n);
    memcpy(arena + off[1], bp, 2 * bp_n);
    memcpy(arena + off[2], azp, 1);
    memcpy(arena + off[3], scale, 4 * (size_t)n);
    memcpy(arena + off[4], fbias, 4 * (size_t)n);
    memcpy(arena + off[5], r, 4 * y_n);
    memcpy(arena + off[8], b, b_n);
    memcpy(arena + off[9], bzp, (size_t)n);
    int32_t args[NNW_Q8_GEMM_PK_NARGS] = {
        off[0], off[1], has_zp ? off[2] : -1, off[3], has_fbias ? off[4] : -1, has_r ? off[5] : -1, off[6],
        off[7], a_dt, m, n, k, scale_s, act};
    int32_t ep[NNW_Q8_GEMM_EP_NARGS] = {
        off[0], off[8], has_zp ? off[2] : -1, off[9], -1, off[3], off[10], off[11], a_dt, I8, F32, 1, m, n, k,
        0, 0, 0, 1, 0, 0, scale_s, 0, 0, 0, has_fbias ? off[4] : -1, has_r ? off[5] : -1, act};
    if (run_op(NNW_OP_Q8_GEMM_PK, args, NNW_Q8_GEMM_PK_NARGS, arena, arena_bytes) == NNW_OK &&
        run_op(NNW_OP_Q8_GEMM_EP, ep, NNW_Q8_GEMM_EP_NARGS, arena, arena_bytes) == NNW_OK) {
      check_close(name, (const float *)(const void *)(arena + off[6]), want, mag, y_n, 1e-6, 1e-6);
      expect(memcmp(arena + off[6], arena + off[10], 4 * y_n) == 0, "%s: not q8_gemm_ep's bits", name);
    }
    free(arena);
  }
  free(a);
  free(b);
  free(bzp);
  free(scale);
  free(fbias);
  free(r);
  free(bp);
  free(want);
  free(mag);
}

static void patched(const char *what, const int32_t *base, int i, int32_t v, uint32_t arena_bytes, int want) {
  load_patched(what, NNW_OP_Q8_GEMM_PK, base, NNW_Q8_GEMM_PK_NARGS, i, v, arena_bytes, want);
}

void test_q8_gemm_pk(void) {
  pk_case(2, 4, 8, U8, 0, 1, 1, 0, 1);
  pk_case(1, 1, 1, U8, 0, 0, 0, 0, 0);
  pk_case(9, 24, 33, U8, 1, 1, 1, 1, 0);
  pk_case(5, 13, 7, I8, 1, 1, 0, 1, 1);
  pk_case(6, 17, 64, U8, 0, 1, 1, 0, 1);
  pk_case(3, 6, 250, I8, 0, 0, 1, 1, 0);
  pk_case(128, 32, 256, U8, 1, 1, 1, 1, 1);
  /* hostile: m 2, n 8, k 4 (kp 8: bp 8 * 8 int16) */
  enum { A = 0, BP = 16, AZ = 144, SC = 160, FB = 192, R = 224, Y = 288, SCR = 352, ARENA = 384 };
  const int32_t g[NNW_Q8_GEMM_PK_NARGS] = {A, BP, AZ, SC, FB, R, Y, SCR, U8, 2, 8, 4, 1, 1};
  patched("valid", g, -1, 0, ARENA, NNW_OK);
  patched("no zp, fbias, r", g, NNW_Q8_GEMM_PK_A_ZP, -1, ARENA, NNW_OK);
  patched("a int32", g, NNW_Q8_GEMM_PK_A_DTYPE, 6, ARENA, NNW_BAD_ARGS);
  patched("m 0", g, NNW_Q8_GEMM_PK_M, 0, ARENA, NNW_BAD_ARGS);
  patched("k -1", g, NNW_Q8_GEMM_PK_K, -1, ARENA, NNW_BAD_ARGS);
  patched("scale_s 2", g, NNW_Q8_GEMM_PK_SCALE_S, 2, ARENA, NNW_BAD_ARGS);
  patched("act 2", g, NNW_Q8_GEMM_PK_ACT, 2, ARENA, NNW_BAD_ARGS);
  patched("k 9: scratch past the arena", g, NNW_Q8_GEMM_PK_K, 9, ARENA, NNW_OUT_OF_BOUNDS);
  patched("n huge", g, NNW_Q8_GEMM_PK_N, 1 << 30, ARENA, NNW_OUT_OF_BOUNDS);
  patched("m huge", g, NNW_Q8_GEMM_PK_M, 1 << 30, ARENA, NNW_OUT_OF_BOUNDS);
  patched("bp past the arena", g, NNW_Q8_GEMM_PK_BP, ARENA - 64, ARENA, NNW_OUT_OF_BOUNDS);
  patched("bp misaligned", g, NNW_Q8_GEMM_PK_BP, BP + 2, ARENA, NNW_BAD_ARGS);
  patched("scratch past the arena", g, NNW_Q8_GEMM_PK_SCRATCH, ARENA - 16, ARENA, NNW_OUT_OF_BOUNDS);
  patched("y misaligned", g, NNW_Q8_GEMM_PK_Y, Y + 1, ARENA, NNW_BAD_ARGS);
  patched("r is y", g, NNW_Q8_GEMM_PK_R, Y, ARENA, NNW_BAD_ARGS);
  patched("y over bp", g, NNW_Q8_GEMM_PK_Y, BP + 32, ARENA, NNW_BAD_ARGS);
  patched("scratch over a", g, NNW_Q8_GEMM_PK_SCRATCH, A, ARENA, NNW_BAD_ARGS);
  patched("fbias past the arena", g, NNW_Q8_GEMM_PK_FBIAS, ARENA - 16, ARENA, NNW_OUT_OF_BOUNDS);
  patched("a past the arena", g, NNW_Q8_GEMM_PK_A, ARENA - 4, ARENA, NNW_OUT_OF_BOUNDS);
}

/* q8_gemm_pkq against q8_gemm on the same tensors (y uint8/int8): the same bytes, and each byte
 * within one of a double reference (round half to even of the float product) */
static void pkq_case(int m, int n, int k, int a_dt, int y_dt, int bias_s, int scale_s, int has_bias, int has_zp) {
  size_t a_n = (size_t)m * k, b_n = (size_t)k * n, y_n = (size_t)m * n, bp_n = (size_t)bp_count(n, k);
  uint8_t *a = malloc(a_n), *b = malloc(b_n), azp[1], *bzp = malloc((size_t)n);
  float *scale = malloc(4 * (size_t)n);
  int32_t *bias = malloc(4 * (size_t)n);
  int16_t *bp = malloc(2 * bp_n);
  fill_bytes(a, a_n);
  fill_bytes(b, b_n);
  fill_bytes(azp, 1);
  fill_bytes(bzp, (size_t)n);
  for (int j = 0; j < n; j++) {
    scale[j] = rng_float(1e-5f, 4e-4f);
    bias[j] = (int32_t)(rng_u32() % 200001) - 100000;
  }
  pack(b, bzp, 1, k, n, bp);
  int32_t lo = y_dt == U8 ? 0 : -128, hi = y_dt == U8 ? 255 : 127, yzp = y_dt == U8 ? 131 : -3;
  char name[128];
  snprintf(name, sizeof name, "q8_gemm_pkq m%d n%d k%d a_dt%d y_dt%d bias_s%d scale_s%d bias%d zp%d", m, n, k,
           a_dt, y_dt, bias_s, scale_s, has_bias, has_zp);
  for (int order = 0; order < 2; order++) {
    /* a, bp, azp, bias, scale, y, scratch; then q8_gemm's b, b_zp, y, scratch */
    uint64_t bytes[11] = {a_n, 2 * bp_n, 1, 4 * (uint64_t)n, 4 * (uint64_t)n, y_n, (uint64_t)pk_scratch(m, k),
                          b_n, (uint64_t)n, y_n, (uint64_t)ep_scratch(m, k)};
    int32_t off[11];
    uint32_t arena_bytes = layout(bytes, 11, order, off);
    uint8_t *arena = arena_new(arena_bytes);
    memcpy(arena + off[0], a, a_n);
    memcpy(arena + off[1], bp, 2 * bp_n);
    memcpy(arena + off[2], azp, 1);
    memcpy(arena + off[3], bias, 4 * (size_t)n);
    memcpy(arena + off[4], scale, 4 * (size_t)n);
    memcpy(arena + off[7], b, b_n);
    memcpy(arena + off[8], bzp, (size_t)n);
    int32_t args[NNW_Q8_GEMM_PKQ_NARGS] = {
        off[0], off[1], has_zp ? off[2] : -1, has_bias ? off[3] : -1, off[4], off[5], off[6], a_dt, y_dt, m, n,
        k, bias_s, scale_s, yzp, lo, hi};
    int32_t g[NNW_Q8_GEMM_NARGS] = {
        off[0], off[7], has_zp ? off[2] : -1, off[8], has_bias ? off[3] : -1, off[4], off[9], off[10], a_dt, I8,
        y_dt, 1, m, n, k, 0, 0, 0, 1, 0, bias_s, scale_s, yzp, lo, hi};
    if (run_op(NNW_OP_Q8_GEMM_PKQ, args, NNW_Q8_GEMM_PKQ_NARGS, arena, arena_bytes) == NNW_OK &&
        run_op(NNW_OP_Q8_GEMM, g, NNW_Q8_GEMM_NARGS, arena, arena_bytes) == NNW_OK) {
      expect(memcmp(arena + off[5], arena + off[9], y_n) == 0, "%s: not q8_gemm's bytes", name);
      int bad = 0;
      for (int i = 0; i < m && !bad; i++)
        for (int j = 0; j < n && !bad; j++) {
          int64_t acc = has_bias ? bias[bias_s ? j : 0] : 0;
          int32_t z = has_zp ? (a_dt == I8 ? (int8_t)azp[0] : azp[0]) : 0;
          for (int kk = 0; kk < k; kk++) {
            int32_t av = a_dt == I8 ? (int8_t)a[(size_t)i * k + kk] : a[(size_t)i * k + kk];
            acc += (int64_t)(av - z) * ((int8_t)b[(size_t)kk * n + j] - (int8_t)bzp[j]);
          }
          double v = nearbyint((double)acc * scale[scale_s ? j : 0]) + yzp;
          v = v < lo ? lo : v > hi ? hi : v;
          uint8_t got = arena[off[5] + (size_t)i * n + j];
          int gv = y_dt == U8 ? got : (int8_t)got;
          if (!expect(fabs(gv - v) <= 1, "%s: y[%d][%d] = %d, reference %g", name, i, j, gv, v)) bad = 1;
        }
    }
    free(arena);
  }
  free(a);
  free(b);
  free(bzp);
  free(scale);
  free(bias);
  free(bp);
}

static void patched_q(const char *what, const int32_t *base, int i, int32_t v, uint32_t arena_bytes, int want) {
  load_patched(what, NNW_OP_Q8_GEMM_PKQ, base, NNW_Q8_GEMM_PKQ_NARGS, i, v, arena_bytes, want);
}

/* q8_pack_b (the init op) against pack() above, byte for byte, b flush against the arena's end */
static void pack_b_case(int k, int n, int dt, int zp_cs, int has_zp) {
  size_t b_n = (size_t)k * n, bp_n = (size_t)bp_count(n, k);
  uint8_t *b = malloc(b_n), zp[64];
  int16_t *want = malloc(2 * bp_n);
  fill_bytes(b, b_n);
  fill_bytes(zp, 64);
  if (dt == U8) /* pack() reads int8: make uint8 values and zero points that agree */
    for (size_t i = 0; i < b_n; i++) b[i] &= 0x7F;
  if (dt == U8)
    for (int i = 0; i < 64; i++) zp[i] &= 0x7F;
  uint8_t z[64];
  for (int j = 0; j < 64; j++) z[j] = has_zp ? zp[zp_cs ? j : 0] : 0;
  pack(b, z, 1, k, n, want);
  uint32_t bytes = (uint32_t)(2 * bp_n + 64 + ((b_n + 15) / 16 * 16));
  int32_t bp = 0, zo = (int32_t)(2 * bp_n), bo = (int32_t)(bytes - b_n);
  uint8_t *arena = arena_new(bytes);
  memcpy(arena + zo, zp, 64);
  memcpy(arena + bo, b, b_n);
  int32_t args[NNW_Q8_PACK_B_NARGS] = {bo, has_zp ? zo : -1, bp, dt, k, n, zp_cs};
  if (run_op(NNW_OP_Q8_PACK_B, args, NNW_Q8_PACK_B_NARGS, arena, bytes) == NNW_OK)
    expect(memcmp(arena + bp, want, 2 * bp_n) == 0, "q8_pack_b k%d n%d dt%d zp_cs%d zp%d: not pack_q8_b's layout", k,
           n, dt, zp_cs, has_zp);
  free(arena);
  free(b);
  free(want);
}

void test_q8_gemm_pkq(void) {
  pack_b_case(1, 1, I8, 0, 0);
  pack_b_case(13, 7, I8, 1, 1);
  pack_b_case(64, 24, U8, 1, 1);
  pack_b_case(33, 61, I8, 0, 1);
  pack_b_case(250, 6, U8, 0, 0);
  {
    const int32_t pb[NNW_Q8_PACK_B_NARGS] = {0, 64, 128, I8, 16, 8, 1}; /* bp: 2 * 16 * 8 = 256 bytes */
    struct { const char *what; int i; int32_t v; uint32_t arena; int want; } h[] = {
        {"valid", -1, 0, 384, NNW_OK}, {"no zp", NNW_Q8_PACK_B_B_ZP, -1, 384, NNW_OK},
        {"k 0", NNW_Q8_PACK_B_K, 0, 384, NNW_BAD_ARGS}, {"n -1", NNW_Q8_PACK_B_N, -1, 384, NNW_BAD_ARGS},
        {"dtype i32", NNW_Q8_PACK_B_B_DTYPE, 6, 384, NNW_BAD_ARGS},
        {"zp_cs 2", NNW_Q8_PACK_B_B_ZP_CS, 2, 384, NNW_BAD_ARGS},
        {"bp past the arena", -1, 0, 383, NNW_OUT_OF_BOUNDS},
        {"bp misaligned", NNW_Q8_PACK_B_BP, 130, 400, NNW_BAD_ARGS},
        {"bp over b", NNW_Q8_PACK_B_BP, 32, 384, NNW_BAD_ARGS},
        {"n huge", NNW_Q8_PACK_B_N, 1 << 30, 384, NNW_OUT_OF_BOUNDS},
        {"k huge", NNW_Q8_PACK_B_K, INT32_MAX, 384, NNW_OUT_OF_BOUNDS}};
    for (size_t t = 0; t < sizeof h / sizeof h[0]; t++) {
      int32_t args[NNW_Q8_PACK_B_NARGS];
      memcpy(args, pb, sizeof args);
      if (h[t].i >= 0) args[h[t].i] = h[t].v;
      int got = load_status(NNW_OP_Q8_PACK_B, args, NNW_Q8_PACK_B_NARGS, h[t].arena);
      expect(got == h[t].want, "q8_pack_b: %s gives %d, want %d", h[t].what, got, h[t].want);
    }
  }
  pkq_case(1, 1000, 1280, U8, U8, 1, 1, 1, 1); /* MobileNetV2's classifier */
  pkq_case(1, 1, 1, U8, U8, 0, 0, 0, 0);
  pkq_case(1, 13, 7, I8, I8, 1, 0, 1, 1);
  pkq_case(2, 8, 16, U8, I8, 0, 1, 1, 0);
  pkq_case(5, 17, 33, I8, U8, 1, 1, 1, 1);
  pkq_case(3, 6, 250, U8, U8, 1, 1, 0, 1);
  pkq_case(9, 24, 64, U8, U8, 1, 1, 1, 1);
  /* hostile: m 2, n 8, k 4 (kp 8: bp 8 * 8 int16) */
  enum { A = 0, BP = 16, AZ = 144, BI = 160, SC = 192, Y = 224, SCR = 256, ARENA = 288 };
  const int32_t g[NNW_Q8_GEMM_PKQ_NARGS] = {A, BP, AZ, BI, SC, Y, SCR, U8, U8, 2, 8, 4, 1, 1, 10, 0, 255};
  patched_q("valid", g, -1, 0, ARENA, NNW_OK);
  patched_q("no zp", g, NNW_Q8_GEMM_PKQ_A_ZP, -1, ARENA, NNW_OK);
  patched_q("no bias", g, NNW_Q8_GEMM_PKQ_BIAS, -1, ARENA, NNW_OK);
  patched_q("a int32", g, NNW_Q8_GEMM_PKQ_A_DTYPE, 6, ARENA, NNW_BAD_ARGS);
  patched_q("y float", g, NNW_Q8_GEMM_PKQ_Y_DTYPE, 1, ARENA, NNW_BAD_ARGS);
  patched_q("y_zp 300", g, NNW_Q8_GEMM_PKQ_Y_ZP, 300, ARENA, NNW_BAD_ARGS);
  patched_q("y_min > y_max", g, NNW_Q8_GEMM_PKQ_Y_MIN, 256, ARENA, NNW_BAD_ARGS);
  patched_q("m 0", g, NNW_Q8_GEMM_PKQ_M, 0, ARENA, NNW_BAD_ARGS);
  patched_q("k -1", g, NNW_Q8_GEMM_PKQ_K, -1, ARENA, NNW_BAD_ARGS);
  patched_q("bias_s 2", g, NNW_Q8_GEMM_PKQ_BIAS_S, 2, ARENA, NNW_BAD_ARGS);
  patched_q("scale_s -1", g, NNW_Q8_GEMM_PKQ_SCALE_S, -1, ARENA, NNW_BAD_ARGS);
  patched_q("k 9: scratch past the arena", g, NNW_Q8_GEMM_PKQ_K, 9, ARENA, NNW_OUT_OF_BOUNDS);
  patched_q("n huge", g, NNW_Q8_GEMM_PKQ_N, 1 << 30, ARENA, NNW_OUT_OF_BOUNDS);
  patched_q("m huge", g, NNW_Q8_GEMM_PKQ_M, 1 << 30, ARENA, NNW_OUT_OF_BOUNDS);
  patched_q("bp past the arena", g, NNW_Q8_GEMM_PKQ_BP, ARENA - 64, ARENA, NNW_OUT_OF_BOUNDS);
  patched_q("bp misaligned", g, NNW_Q8_GEMM_PKQ_BP, BP + 2, ARENA, NNW_BAD_ARGS);
  patched_q("bias misaligned", g, NNW_Q8_GEMM_PKQ_BIAS, BI + 2, ARENA, NNW_BAD_ARGS);
  patched_q("scratch past the arena", g, NNW_Q8_GEMM_PKQ_SCRATCH, ARENA - 16, ARENA, NNW_OUT_OF_BOUNDS);
  patched_q("y over bp", g, NNW_Q8_GEMM_PKQ_Y, BP + 32, ARENA, NNW_BAD_ARGS);
  patched_q("scratch over y", g, NNW_Q8_GEMM_PKQ_SCRATCH, Y, ARENA, NNW_BAD_ARGS);
  patched_q("a past the arena", g, NNW_Q8_GEMM_PKQ_A, ARENA - 4, ARENA, NNW_OUT_OF_BOUNDS);
}
