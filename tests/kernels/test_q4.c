/* q4_matmul and q4_gather (kernels_c/q4/): packed blocks made here as MatMulNBits ships them,
 * results against double-precision references (for a_int8, of A quantized as the kernel and
 * onnxruntime do), tensors flush against either end of the arena, hostile arguments. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "tests.h"

enum { I32 = 6, I64 = 7 };

static int32_t scratch_bytes(int m, int n, int k, int bits, int bs) {
  extern int32_t nnw_q4_matmul_scratch_bytes(int32_t, int32_t, int32_t, int32_t, int32_t);
  return nnw_q4_matmul_scratch_bytes(m, n, k, bits, bs);
}

/* layout() with 8-byte alignment: int64 indices need it */
static uint32_t layout8(const uint64_t *bytes, int count, int order, int32_t *offsets) {
  uint64_t at = 0;
  for (int k = 0; k < count; k++) {
    int i = order ? count - 1 - k : k;
    at += 8 * (rng_u32() % 3);
    offsets[i] = (int32_t)at;
    at += (bytes[i] + 7) / 8 * 8;
  }
  return (uint32_t)at;
}

static uint32_t unpack(const uint8_t *p, int64_t e, int bits) {
  return (p[e * bits / 8] >> ((e * bits) % 8)) & ((1u << bits) - 1u);
}

/* the int8 path's arithmetic (py_runtime/nnwasm/ops/quant_blocks_int8.py) one float32 step at a
 * time: A quantized per block (127 / max, round to even), d the block's exact integer sum, y = sum
 * over blocks in order of f32(d) * (sa * scale), bias last. The kernel must give these bits. */
static void ref_int8(int m, int n, int k, int bits, int bs, int zk, const float *a, const uint8_t *b, const float *scales,
                     const uint8_t *zb, const float *bias, double *want) {
  int kb = (k + bs - 1) / bs, blob = bs * bits / 8, zrow = (kb * bits + 7) / 8;
  int32_t *q = malloc(4 * (size_t)kb * bs), *qs = malloc(4 * (size_t)kb);
  float *sa = malloc(4 * (size_t)kb);
  for (int i = 0; i < m; i++) {
    const float *ai = a + (size_t)i * k;
    for (int blk = 0; blk < kb; blk++) {
      float amax = 0.0f;
      for (int e = 0; e < bs && blk * bs + e < k; e++) amax = fabsf(ai[blk * bs + e]) > amax ? fabsf(ai[blk * bs + e]) : amax;
      float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
      sa[blk] = amax / 127.0f;
      qs[blk] = 0;
      for (int e = 0; e < bs; e++) {
        q[blk * bs + e] = blk * bs + e < k ? (int32_t)nearbyintf(ai[blk * bs + e] * inv) : 0;
        qs[blk] += q[blk * bs + e];
      }
    }
    for (int j = 0; j < n; j++) {
      float y = 0.0f;
      for (int blk = 0; blk < kb; blk++) {
        int64_t z = zk == 0 ? (1 << (bits - 1)) : (int64_t)unpack(zb + (size_t)j * zrow, blk, bits), d = 0;
        const uint8_t *qb = b + ((size_t)j * kb + blk) * blob;
        for (int e = 0; e < bs; e++) d += (int64_t)q[blk * bs + e] * unpack(qb, e, bits);
        d -= z * qs[blk];
        float f = sa[blk] * scales[(size_t)j * kb + blk];
        y = y + (float)d * f;
      }
      want[(size_t)i * n + j] = bias ? y + bias[j] : y;
    }
  }
  free(q), free(qs), free(sa);
}

/* zp_kind 0 none, 1 packed uint8, 2 float */
static void mm_case(int m, int n, int k, int bits, int bs, int zk, int has_bias, int a_int8) {
  int kb = (k + bs - 1) / bs, blob = bs * bits / 8, zrow = (kb * bits + 7) / 8;
  size_t a_n = (size_t)m * k, b_n = (size_t)n * kb * blob, s_n = (size_t)n * kb, y_n = (size_t)m * n;
  size_t z_bytes = zk == 1 ? (size_t)n * zrow : zk == 2 ? 4 * s_n : 0;
  float *a = malloc(4 * a_n), *scales = malloc(4 * s_n), *bias = malloc(4 * (size_t)n), *zf = malloc(4 * s_n);
  uint8_t *b = malloc(b_n), *zb = malloc((size_t)n * zrow + 1);
  fill_random(a, a_n, -2, 2);
  if (m > 1) a[1] = 0.0f;
  fill_random(scales, s_n, 0.001f, 0.05f);
  fill_random(bias, (size_t)n, -1, 1);
  for (size_t i = 0; i < b_n; i++) b[i] = (uint8_t)rng_u32();
  for (size_t i = 0; i < (size_t)n * zrow; i++) zb[i] = (uint8_t)rng_u32();
  fill_random(zf, s_n, 0, (float)(1 << bits));
  double *want = malloc(8 * y_n), *mag = malloc(8 * y_n);
  for (int i = 0; i < m; i++) {
    const float *ai = a + (size_t)i * k;
    for (int j = 0; j < n; j++) {
      double acc = has_bias ? bias[j] : 0.0, mg = 1e-3;
      for (int blk = 0; blk < kb; blk++) {
        double z = zk == 0 ? (double)(1 << (bits - 1)) : zk == 2 ? zf[(size_t)j * kb + blk]
                                                                 : (double)unpack(zb + (size_t)j * zrow, blk, bits);
        double s = scales[(size_t)j * kb + blk];
        const uint8_t *q = b + ((size_t)j * kb + blk) * blob;
        for (int e = 0; e < bs && blk * bs + e < k; e++) {
          double w = ((double)unpack(q, e, bits) - z) * s;
          double av = ai[blk * bs + e];
          acc += av * w;
          mg += fabs(av * w);
        }
      }
      want[(size_t)i * n + j] = acc;
      mag[(size_t)i * n + j] = mg;
    }
  }
  if (a_int8) ref_int8(m, n, k, bits, bs, zk, a, b, scales, zb, has_bias ? bias : NULL, want);
  char name[128];
  snprintf(name, sizeof name, "q4_matmul m%d n%d k%d bits%d bs%d zk%d bias%d i8%d", m, n, k, bits, bs, zk, has_bias,
           a_int8);
  int32_t scr = scratch_bytes(m, n, k, bits, bs);
  expect(scr > 0, "%s: scratch %d", name, scr);
  for (int order = 0; order < 2; order++) {
    uint64_t bytes[7] = {4 * a_n, b_n, 4 * s_n, z_bytes ? z_bytes : 4, 4 * (uint64_t)n, 4 * y_n, (uint64_t)scr};
    int32_t off[7];
    uint32_t arena_bytes = layout(bytes, 7, order, off);
    uint8_t *arena = arena_new(arena_bytes);
    memcpy(arena + off[0], a, 4 * a_n);
    memcpy(arena + off[1], b, b_n);
    memcpy(arena + off[2], scales, 4 * s_n);
    if (zk == 1) memcpy(arena + off[3], zb, z_bytes);
    if (zk == 2) memcpy(arena + off[3], zf, z_bytes);
    memcpy(arena + off[4], bias, 4 * (size_t)n);
    int32_t args[NNW_Q4_MATMUL_NARGS] = {off[0], off[1], off[2], zk ? off[3] : -1, has_bias ? off[4] : -1, off[5],
                                         off[6], m, n, k, bits, bs, zk, a_int8};
    if (run_op(NNW_OP_Q4_MATMUL, args, NNW_Q4_MATMUL_NARGS, arena, arena_bytes) == NNW_OK)
      check_close(name, (const float *)(const void *)(arena + off[5]), want, mag, y_n, a_int8 ? 0 : 1e-6,
                  a_int8 ? 0 : 2e-6);
    free(arena);
  }
  free(a), free(scales), free(bias), free(zf), free(b), free(zb), free(want), free(mag);
}

static void gather_case(int rows, int cols, int bits, int bs, int has_zp, int idx_dt) {
  int nb = (cols + bs - 1) / bs, n_idx = 5;
  size_t d_n = (size_t)rows * cols * bits / 8, s_n = (size_t)rows * nb, z_n = (s_n * bits + 7) / 8;
  size_t y_n = (size_t)n_idx * cols;
  uint8_t *d = malloc(d_n), *z = malloc(z_n);
  float *s = malloc(4 * s_n);
  for (size_t i = 0; i < d_n; i++) d[i] = (uint8_t)rng_u32();
  for (size_t i = 0; i < z_n; i++) z[i] = (uint8_t)rng_u32();
  fill_random(s, s_n, 0.01f, 1);
  int64_t idx[5] = {0, rows - 1, -1, 2 % rows, -rows};
  double *want = malloc(8 * y_n);
  for (int i = 0; i < n_idx; i++) {
    int64_t r = idx[i] < 0 ? idx[i] + rows : idx[i];
    for (int c = 0; c < cols; c++) {
      size_t at = (size_t)r * nb + c / bs;
      double zz = has_zp ? (double)unpack(z, (int64_t)at, bits) : (double)(1 << (bits - 1));
      want[(size_t)i * cols + c] = (float)(((float)unpack(d + (size_t)r * cols * bits / 8, c, bits) - (float)zz) * s[at]);
    }
  }
  char name[96];
  snprintf(name, sizeof name, "q4_gather rows%d cols%d bits%d bs%d zp%d idx%d", rows, cols, bits, bs, has_zp, idx_dt);
  int isz = idx_dt == I32 ? 4 : 8;
  for (int order = 0; order < 2; order++) {
    uint64_t bytes[5] = {d_n, (uint64_t)isz * n_idx, 4 * s_n, z_n, 4 * y_n};
    int32_t off[5];
    uint32_t arena_bytes = layout8(bytes, 5, order, off);
    uint8_t *arena = arena_new(arena_bytes);
    memcpy(arena + off[0], d, d_n);
    for (int i = 0; i < n_idx; i++) {
      if (idx_dt == I32) {
        int32_t v = (int32_t)idx[i];
        memcpy(arena + off[1] + 4 * i, &v, 4);
      } else {
        memcpy(arena + off[1] + 8 * i, &idx[i], 8);
      }
    }
    memcpy(arena + off[2], s, 4 * s_n);
    memcpy(arena + off[3], z, z_n);
    int32_t args[NNW_Q4_GATHER_NARGS] = {off[0], off[1], off[2], has_zp ? off[3] : -1, off[4], idx_dt, rows, cols,
                                         n_idx, bits, bs};
    if (run_op(NNW_OP_Q4_GATHER, args, NNW_Q4_GATHER_NARGS, arena, arena_bytes) == NNW_OK)
      check_close(name, (const float *)(const void *)(arena + off[4]), want, NULL, y_n, 0, 0);
    /* an index out of range stops the run */
    int64_t bad = rows;
    if (idx_dt == I32) {
      int32_t v = rows;
      memcpy(arena + off[1] + 4, &v, 4);
    } else {
      memcpy(arena + off[1] + 8, &bad, 8);
    }
    int32_t words[64];
    int nw = op_words(words, NNW_OP_Q4_GATHER, args, NNW_Q4_GATHER_NARGS);
    struct plan p = plan_build(NULL, 0, words, (uint32_t)nw, arena_bytes, NULL, 0);
    int32_t bad_op = 0;
    int st = nnw_plan_load(p.bytes, p.size, arena, arena_bytes, &bad_op);
    if (st == NNW_OK) st = nnw_plan_run(p.bytes, arena);
    expect(st == NNW_BAD_INDEX, "%s: index %d out of range gave status %d", name, rows, st);
    plan_free(&p);
    free(arena);
  }
  free(d), free(z), free(s), free(want);
}

void test_q4(void) {
  /* GEMV (m <= 4): every width, blocks smaller and larger than a 16-byte chunk, each zero-point
   * kind, K not a multiple of the block, N not a multiple of 4 */
  mm_case(1, 5, 100, 4, 16, 1, 1, 0);
  mm_case(1, 9, 64, 4, 32, 0, 0, 0);
  mm_case(3, 13, 200, 4, 64, 2, 1, 0);
  mm_case(4, 8, 256, 4, 256, 1, 0, 0);
  mm_case(2, 7, 50, 8, 16, 1, 1, 0);
  mm_case(1, 6, 300, 8, 128, 2, 0, 0);
  mm_case(1, 5, 100, 2, 16, 1, 1, 0);
  mm_case(2, 6, 130, 2, 32, 0, 0, 0);
  mm_case(1, 4, 512, 2, 128, 2, 1, 0);
  /* a_int8 (accuracy_level 4), decode and prefill rows alike, bit for bit: every width, blocks of
   * half a chunk (4 bits / 16, 2 bits / 32) with an odd block count, K not a multiple of the block */
  mm_case(1, 9, 100, 4, 32, 1, 1, 1);
  mm_case(4, 6, 256, 4, 128, 0, 0, 1);
  mm_case(2, 17, 70, 4, 64, 1, 1, 1);
  mm_case(3, 7, 40, 4, 16, 1, 1, 1);
  mm_case(1, 5, 256, 4, 256, 0, 1, 1);
  mm_case(5, 10, 200, 8, 16, 1, 0, 1);
  mm_case(1, 5, 300, 8, 256, 0, 1, 1);
  mm_case(2, 9, 100, 2, 32, 1, 1, 1);
  mm_case(3, 6, 90, 2, 32, 0, 0, 1);
  mm_case(1, 8, 200, 2, 128, 1, 1, 1);
  /* GEMM (m > 4): gemm_packed on dequantized panels, more than one panel, a narrow last one */
  mm_case(5, 70, 100, 4, 32, 1, 1, 0);
  mm_case(9, 130, 64, 8, 16, 2, 0, 0);
  mm_case(16, 19, 300, 2, 64, 0, 1, 0);
  mm_case(8, 12, 100, 4, 32, 1, 1, 1);
  mm_case(7, 9, 64, 4, 16, 0, 1, 1);
  gather_case(7, 64, 4, 16, 1, I64);
  gather_case(5, 100, 4, 32, 0, I32);
  gather_case(3, 96, 8, 64, 1, I32);

  /* hostile: m 1, n 4, k 64, bits 4, bs 32: kb 2, blob 16, b 128 bytes, scales 32, zp 4 bytes */
  enum { A = 0, B = 256, SC = 384, ZP = 416, BI = 432, Y = 448, SCR = 464, ARENA = 1024 };
  const int32_t g[NNW_Q4_MATMUL_NARGS] = {A, B, SC, ZP, BI, Y, SCR, 1, 4, 64, 4, 32, 1, 0};
  static const struct arg_patch bad[] = {
      {"valid", -1, 0, NNW_OK},
      {"int8 A", NNW_Q4_MATMUL_A_INT8, 1, NNW_OK},
      {"a_int8 2", NNW_Q4_MATMUL_A_INT8, 2, NNW_BAD_ARGS},
      {"float zero points", NNW_Q4_MATMUL_ZP_KIND, 2, NNW_OK},
      {"bits 3", NNW_Q4_MATMUL_BITS, 3, NNW_BAD_ARGS},
      {"bits 8: b over y", NNW_Q4_MATMUL_BITS, 8, NNW_BAD_ARGS},
      {"block 48", NNW_Q4_MATMUL_BLOCK_SIZE, 48, NNW_BAD_ARGS},
      {"block 8", NNW_Q4_MATMUL_BLOCK_SIZE, 8, NNW_BAD_ARGS},
      {"block 0", NNW_Q4_MATMUL_BLOCK_SIZE, 0, NNW_BAD_ARGS},
      {"zp kind 3", NNW_Q4_MATMUL_ZP_KIND, 3, NNW_BAD_ARGS},
      {"zp kind 0 with zp", NNW_Q4_MATMUL_ZP_KIND, 0, NNW_BAD_ARGS},
      {"zp absent, kind 1", NNW_Q4_MATMUL_ZP, -1, NNW_BAD_ARGS},
      {"m 0", NNW_Q4_MATMUL_M, 0, NNW_BAD_ARGS},
      {"k -1", NNW_Q4_MATMUL_K, -1, NNW_BAD_ARGS},
      {"n huge", NNW_Q4_MATMUL_N, 1 << 30, NNW_OUT_OF_BOUNDS},
      {"k huge", NNW_Q4_MATMUL_K, 1 << 30, NNW_OUT_OF_BOUNDS},
      {"m huge", NNW_Q4_MATMUL_M, 1 << 30, NNW_OUT_OF_BOUNDS},
      {"b past the arena", NNW_Q4_MATMUL_B, ARENA - 64, NNW_OUT_OF_BOUNDS},
      {"scales misaligned", NNW_Q4_MATMUL_SCALES, SC + 2, NNW_BAD_ARGS},
      {"scratch past the arena", NNW_Q4_MATMUL_SCRATCH, ARENA - 16, NNW_OUT_OF_BOUNDS},
      {"y over b", NNW_Q4_MATMUL_Y, B + 16, NNW_BAD_ARGS},
      {"scratch over a", NNW_Q4_MATMUL_SCRATCH, A, NNW_BAD_ARGS},
      {"y is bias", NNW_Q4_MATMUL_Y, BI, NNW_BAD_ARGS},
      {"zp past the arena", NNW_Q4_MATMUL_ZP, ARENA - 2, NNW_OUT_OF_BOUNDS},
  };
  load_patches(NNW_OP_Q4_MATMUL, g, NNW_Q4_MATMUL_NARGS, ARENA, bad, sizeof bad / sizeof bad[0]);
  /* the same with a_int8: float zero points and 2-bit blocks of less than half a chunk refused */
  int32_t g8[NNW_Q4_MATMUL_NARGS];
  memcpy(g8, g, sizeof g8);
  g8[NNW_Q4_MATMUL_A_INT8] = 1;
  static const struct arg_patch bad8[] = {
      {"valid", -1, 0, NNW_OK},
      {"float zero points", NNW_Q4_MATMUL_ZP_KIND, 2, NNW_BAD_ARGS},
      {"bits 8", NNW_Q4_MATMUL_BITS, 8, NNW_BAD_ARGS}, /* b over y, as above */
      {"bits 2", NNW_Q4_MATMUL_BITS, 2, NNW_OK},
      {"block 16", NNW_Q4_MATMUL_BLOCK_SIZE, 16, NNW_OK},
      {"block 8192", NNW_Q4_MATMUL_BLOCK_SIZE, 8192, NNW_BAD_ARGS},
  };
  load_patches(NNW_OP_Q4_MATMUL, g8, NNW_Q4_MATMUL_NARGS, ARENA, bad8, sizeof bad8 / sizeof bad8[0]);
  /* q4_gather: rows 4, cols 64, bits 4, bs 32: data 128 bytes, idx 2 x int64, scales 32, zp 4 */
  enum { GD = 0, GI = 128, GS = 144, GZ = 176, GY = 192, GARENA = 704 };
  const int32_t gg[NNW_Q4_GATHER_NARGS] = {GD, GI, GS, GZ, GY, I64, 4, 64, 2, 4, 32};
  static const struct arg_patch gbad[] = {
      {"valid", -1, 0, NNW_OK},
      {"idx int16", NNW_Q4_GATHER_IDX_DTYPE, 5, NNW_BAD_ARGS},
      {"bits 2", NNW_Q4_GATHER_BITS, 2, NNW_BAD_ARGS},
      {"block 24", NNW_Q4_GATHER_BLOCK_SIZE, 24, NNW_BAD_ARGS},
      {"cols odd", NNW_Q4_GATHER_COLS, 63, NNW_BAD_ARGS},
      {"rows huge", NNW_Q4_GATHER_ROWS, 1 << 30, NNW_OUT_OF_BOUNDS},
      {"n_idx huge", NNW_Q4_GATHER_N_IDX, 1 << 30, NNW_OUT_OF_BOUNDS},
      {"y over data", NNW_Q4_GATHER_Y, GD + 4, NNW_BAD_ARGS},
      {"zp past the arena", NNW_Q4_GATHER_ZP, GARENA - 1, NNW_OUT_OF_BOUNDS},
  };
  load_patches(NNW_OP_Q4_GATHER, gg, NNW_Q4_GATHER_NARGS, GARENA, gbad, sizeof gbad / sizeof gbad[0]);
}
