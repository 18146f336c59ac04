/* q8_pack_b8 + q8_gemm_pk8 (kernels_c/q8/gemm_pk8.c): B packed by the init op, then the same
 * tensors through q8_pack_b + q8_gemm_pk, whose bits it must give (m 1-5 and 128, every k tail,
 * uint8/int8 A and B, zero points or none, bias/residual/gelu epilogues); the int8 panels against
 * a packer written here (the layout lower/quant_pk8.py makes); hostile args. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "tests.h"

enum { U8 = 2, I8 = 3 };

static int32_t kp8(int k) { return (k + 7) / 8 * 8; }
static int32_t n4(int n) { return (n + 3) / 4 * 4; }
static uint64_t bp8_bytes(int n, int k) { return (uint64_t)n4(n) * kp8(k) + 4 * (uint64_t)n4(n); }
static uint64_t bp16_bytes(int n, int k) { return 2 * (uint64_t)n4(n) * kp8(k); }

static void fill_bytes(uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++) p[i] = (uint8_t)rng_u32();
}

/* the int8 panels and zc as ops.def's q8_pack_b8 describes them */
static void pack8(const uint8_t *b, const uint8_t *zp, int zp_cs, int dt, int k, int n, uint8_t *bp) {
  int kp = kp8(k);
  memset(bp, 0, (size_t)bp8_bytes(n, k));
  for (int j = 0; j < n; j++) {
    int off = dt == I8 ? (j % 2 ? 0 : 128) : (j % 2 ? -128 : 0);
    for (int kk = 0; kk < k; kk++) {
      int v = dt == U8 ? b[(size_t)kk * n + j] : (int8_t)b[(size_t)kk * n + j];
      bp[(size_t)(j / 4) * 4 * kp + (size_t)(kk / 8) * 32 + (j % 4 / 2) * 16 + (kk % 8) * 2 + j % 2] = (uint8_t)(v + off);
    }
    int z = zp == NULL ? 0 : dt == U8 ? zp[zp_cs ? j : 0] : (int8_t)zp[zp_cs ? j : 0];
    int32_t zc = z + off;
    memcpy(bp + (size_t)n4(n) * kp + 4 * (size_t)j, &zc, 4);
  }
}

static void pk8_case(int m, int n, int k, int a_dt, int b_dt, int scale_s, int has_azp, int has_bzp, int zp_cs,
                     int has_fbias, int has_r, int act) {
  size_t a_n = (size_t)m * k, b_n = (size_t)k * n, y_n = (size_t)m * n;
  uint8_t *a = malloc(a_n), *b = malloc(b_n), azp[1], *bzp = malloc((size_t)n);
  float *scale = malloc(4 * (size_t)n), *fbias = malloc(4 * (size_t)n), *r = malloc(4 * y_n);
  uint8_t *want_bp = malloc((size_t)bp8_bytes(n, k));
  fill_bytes(a, a_n);
  fill_bytes(b, b_n);
  fill_bytes(azp, 1);
  fill_bytes(bzp, (size_t)n);
  fill_random(fbias, (size_t)n, -1, 1);
  fill_random(r, y_n, -1, 1);
  for (int j = 0; j < n; j++) scale[j] = rng_float(1e-5f, 1e-4f);
  pack8(b, has_bzp ? bzp : NULL, zp_cs, b_dt, k, n, want_bp);
  char name[160];
  snprintf(name, sizeof name, "q8_gemm_pk8 m%d n%d k%d a_dt%d b_dt%d scale_s%d azp%d bzp%d zp_cs%d fbias%d r%d act%d",
           m, n, k, a_dt, b_dt, scale_s, has_azp, has_bzp, zp_cs, has_fbias, has_r, act);
  for (int order = 0; order < 2; order++) {
    /* a, bp8, azp, scale, fbias, r, y8, scratch8, b, b_zp, bp16, y16, scratch16 */
    uint64_t bytes[13] = {a_n, bp8_bytes(n, k), 1, 4 * (uint64_t)n, 4 * (uint64_t)n, 4 * y_n, 4 * y_n,
                          (uint64_t)m * (2 * kp8(k) + 4), b_n, (uint64_t)n, bp16_bytes(n, k), 4 * y_n,
                          2 * (uint64_t)m * kp8(k)};
    int32_t off[13];
    uint32_t arena_bytes = layout(bytes, 13, order, off);
    uint8_t *arena = arena_new(arena_bytes);
    memcpy(arena + off[0], a, a_n);
    memcpy(arena + off[2], azp, 1);
    memcpy(arena + off[3], scale, 4 * (size_t)n);
    memcpy(arena + off[4], fbias, 4 * (size_t)n);
    memcpy(arena + off[5], r, 4 * y_n);
    memcpy(arena + off[8], b, b_n);
    memcpy(arena + off[9], bzp, (size_t)n);
    int32_t pack_b8[NNW_Q8_PACK_B8_NARGS] = {off[8], has_bzp ? off[9] : -1, off[1], b_dt, k, n, zp_cs};
    int32_t pack_b[NNW_Q8_PACK_B_NARGS] = {off[8], has_bzp ? off[9] : -1, off[10], b_dt, k, n, zp_cs};
    int32_t args8[NNW_Q8_GEMM_PK8_NARGS] = {
        off[0], off[1], has_azp ? off[2] : -1, off[3], has_fbias ? off[4] : -1, has_r ? off[5] : -1, off[6],
        off[7], a_dt, m, n, k, scale_s, act};
    int32_t args16[NNW_Q8_GEMM_PK_NARGS] = {
        off[0], off[10], has_azp ? off[2] : -1, off[3], has_fbias ? off[4] : -1, has_r ? off[5] : -1, off[11],
        off[12], a_dt, m, n, k, scale_s, act};
    if (run_op(NNW_OP_Q8_PACK_B8, pack_b8, NNW_Q8_PACK_B8_NARGS, arena, arena_bytes) == NNW_OK &&
        run_op(NNW_OP_Q8_PACK_B, pack_b, NNW_Q8_PACK_B_NARGS, arena, arena_bytes) == NNW_OK) {
      expect(memcmp(arena + off[1], want_bp, (size_t)bp8_bytes(n, k)) == 0, "%s: q8_pack_b8 not the layout", name);
      if (run_op(NNW_OP_Q8_GEMM_PK8, args8, NNW_Q8_GEMM_PK8_NARGS, arena, arena_bytes) == NNW_OK &&
          run_op(NNW_OP_Q8_GEMM_PK, args16, NNW_Q8_GEMM_PK_NARGS, arena, arena_bytes) == NNW_OK)
        expect(memcmp(arena + off[6], arena + off[11], 4 * y_n) == 0, "%s: not q8_gemm_pk's bits", name);
    }
    free(arena);
  }
  free(a);
  free(b);
  free(bzp);
  free(scale);
  free(fbias);
  free(r);
  free(want_bp);
}

void test_q8_gemm_pk8(void) {
  static const int ms[] = {1, 2, 3, 4, 5};
  for (int mi = 0; mi < 5; mi++)
    for (int k = 1; k <= 17; k++) { /* every k tail, both dtypes, every epilogue in turn */
      int e = (mi * 17 + k) % 8;
      pk8_case(ms[mi], 9 + k % 4, k, k % 2 ? U8 : I8, k % 3 ? I8 : U8, e & 1, k % 5 != 0, k % 4 != 0, (k / 2) % 2,
               e & 2 ? 1 : 0, e & 4 ? 1 : 0, (k + mi) % 3 == 0);
    }
  for (int mi = 0; mi < 5; mi++) /* whole panels, two side by side and one alone, realistic k */
    for (int t = 0; t < 8; t++)
      pk8_case(ms[mi], 8 * t + 12 + mi % 2, 768 + t, U8, t % 2 ? U8 : I8, t & 1, 1, t != 3, t % 2, t & 2 ? 1 : 0,
               t & 4 ? 1 : 0, t % 3 == 1);
  pk8_case(128, 36, 256, U8, I8, 1, 1, 0, 0, 1, 1, 1);
  pk8_case(128, 13, 771, I8, U8, 0, 0, 1, 1, 1, 0, 0);
  pk8_case(127, 20, 64, U8, U8, 1, 1, 1, 1, 0, 1, 1);
  pk8_case(2, 8, 16389, U8, I8, 1, 1, 1, 1, 1, 0, 0); /* kp over the pack buffer: rows on the int8 panels */
  pk8_case(1, 1, 1, U8, U8, 0, 0, 0, 0, 0, 0, 0);
  /* hostile q8_gemm_pk8: m 2, n 8, k 4 (kp 8: bp 8 * 8 bytes + 8 int32 = 96) */
  enum { A = 0, BP = 16, AZ = 112, SC = 128, FB = 160, R = 192, Y = 256, SCR = 320, ARENA = 360 };
  const int32_t g[NNW_Q8_GEMM_PK8_NARGS] = {A, BP, AZ, SC, FB, R, Y, SCR, U8, 2, 8, 4, 1, 1};
  const struct arg_patch rows[] = {
      {"valid", -1, 0, NNW_OK},
      {"no zp", NNW_Q8_GEMM_PK8_A_ZP, -1, NNW_OK},
      {"no fbias", NNW_Q8_GEMM_PK8_FBIAS, -1, NNW_OK},
      {"a int32", NNW_Q8_GEMM_PK8_A_DTYPE, 6, NNW_BAD_ARGS},
      {"m 0", NNW_Q8_GEMM_PK8_M, 0, NNW_BAD_ARGS},
      {"n 0", NNW_Q8_GEMM_PK8_N, 0, NNW_BAD_ARGS},
      {"k -1", NNW_Q8_GEMM_PK8_K, -1, NNW_BAD_ARGS},
      {"scale_s 2", NNW_Q8_GEMM_PK8_SCALE_S, 2, NNW_BAD_ARGS},
      {"act 2", NNW_Q8_GEMM_PK8_ACT, 2, NNW_BAD_ARGS},
      {"k 9: scratch past the arena", NNW_Q8_GEMM_PK8_K, 9, NNW_OUT_OF_BOUNDS},
      {"n huge", NNW_Q8_GEMM_PK8_N, 1 << 30, NNW_OUT_OF_BOUNDS},
      {"m huge", NNW_Q8_GEMM_PK8_M, 1 << 30, NNW_OUT_OF_BOUNDS},
      {"k huge", NNW_Q8_GEMM_PK8_K, INT32_MAX, NNW_OUT_OF_BOUNDS},
      {"bp past the arena", NNW_Q8_GEMM_PK8_BP, ARENA - 64, NNW_OUT_OF_BOUNDS},
      {"bp misaligned", NNW_Q8_GEMM_PK8_BP, BP + 2, NNW_BAD_ARGS},
      {"scratch past the arena", NNW_Q8_GEMM_PK8_SCRATCH, ARENA - 16, NNW_OUT_OF_BOUNDS},
      {"y misaligned", NNW_Q8_GEMM_PK8_Y, Y + 1, NNW_BAD_ARGS},
      {"r is y", NNW_Q8_GEMM_PK8_R, Y, NNW_BAD_ARGS},
      {"y over bp", NNW_Q8_GEMM_PK8_Y, BP + 32, NNW_BAD_ARGS},
      {"scratch over a", NNW_Q8_GEMM_PK8_SCRATCH, A, NNW_BAD_ARGS},
      {"scratch over y", NNW_Q8_GEMM_PK8_SCRATCH, Y + 8, NNW_BAD_ARGS},
      {"fbias past the arena", NNW_Q8_GEMM_PK8_FBIAS, ARENA - 16, NNW_OUT_OF_BOUNDS},
      {"a past the arena", NNW_Q8_GEMM_PK8_A, ARENA - 4, NNW_OUT_OF_BOUNDS},
      {"a_zp past the arena", NNW_Q8_GEMM_PK8_A_ZP, ARENA, NNW_OUT_OF_BOUNDS},
  };
  load_patches(NNW_OP_Q8_GEMM_PK8, g, NNW_Q8_GEMM_PK8_NARGS, ARENA, rows, sizeof rows / sizeof rows[0]);
  /* hostile q8_pack_b8: k 16, n 8: bp 8 * 16 + 4 * 8 = 160 bytes */
  const int32_t pb[NNW_Q8_PACK_B8_NARGS] = {0, 128, 192, I8, 16, 8, 1};
  const struct arg_patch prows[] = {
      {"valid", -1, 0, NNW_OK},
      {"no zp", NNW_Q8_PACK_B8_B_ZP, -1, NNW_OK},
      {"k 0", NNW_Q8_PACK_B8_K, 0, NNW_BAD_ARGS},
      {"n -1", NNW_Q8_PACK_B8_N, -1, NNW_BAD_ARGS},
      {"dtype f32", NNW_Q8_PACK_B8_B_DTYPE, 1, NNW_BAD_ARGS},
      {"zp_cs 2", NNW_Q8_PACK_B8_B_ZP_CS, 2, NNW_BAD_ARGS},
      {"bp past the arena", NNW_Q8_PACK_B8_BP, 240, NNW_OUT_OF_BOUNDS},
      {"bp misaligned", NNW_Q8_PACK_B8_BP, 190, NNW_BAD_ARGS},
      {"bp over b", NNW_Q8_PACK_B8_BP, 64, NNW_BAD_ARGS},
      {"bp over b_zp", NNW_Q8_PACK_B8_B_ZP, 200, NNW_BAD_ARGS},
      {"n huge", NNW_Q8_PACK_B8_N, 1 << 30, NNW_OUT_OF_BOUNDS},
      {"k huge", NNW_Q8_PACK_B8_K, INT32_MAX, NNW_OUT_OF_BOUNDS},
  };
  load_patches(NNW_OP_Q8_PACK_B8, pb, NNW_Q8_PACK_B8_NARGS, 352, prows, sizeof prows / sizeof prows[0]);
}
