/* nnw_plan_load against hostile plans: each must give its status and bad_op, leave the arena
 * untouched, and never read or write out of bounds (the sanitizers watch). Then a fuzz over
 * mutations of a valid multi-op plan, and the allocator. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"
#include "tests.h"

#define NEG_INF_BITS ((int32_t)0xFF800000)
#define POS_INF_BITS ((int32_t)0x7F800000)

/* ---- a valid plan: weights, one init op, seven run ops ---------------------------------- */

enum {
  W_CONV = 0, B_CONV = 288, WEIGHTS = 304, X = 304, B_COPY = 592, Y_CONV = 608, SCRATCH = 1184,
  Y_SIG = 3776, Y_POOL = 4352, Y_MEAN = 4496, Y_GEMM = 4512, Y_SOFT = 4544, Y_ADD = 4576,
  ARENA = 4608
};

static const int32_t init_op[] = {NNW_OP_COPY2D, 6, B_CONV, B_COPY, 1, 16, 16, 16};
static const int32_t conv_op[] = {NNW_OP_CONV2D, 23, X, W_CONV, B_COPY, Y_CONV, SCRATCH, 1, 2, 6, 6,
                                  4, 6, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, NEG_INF_BITS, POS_INF_BITS};
static const int32_t sig_op[] = {NNW_OP_UNARY, 6, 1, Y_CONV, Y_SIG, 144, 0, 0};
static const int32_t pool_op[] = {NNW_OP_POOL2D, 18, 0, Y_SIG, Y_POOL, 1, 4, 6, 6, 3, 3, 2, 2, 2, 2,
                                  1, 1, 0, 0, 0};
static const int32_t mean_op[] = {NNW_OP_MEAN_ROWS, 4, Y_POOL, Y_MEAN, 4, 9};
static const int32_t gemm_op[] = {NNW_OP_GEMM, 15, Y_MEAN, W_CONV, -1, Y_GEMM, 1, 5, 4, 0, 0,
                                  0x3F800000, 0, 0, 0, NEG_INF_BITS, POS_INF_BITS};
static const int32_t soft_op[] = {NNW_OP_SOFTMAX, 6, Y_GEMM, Y_SOFT, 1, 5, 1, 0};
static const int32_t add_op[] = {NNW_OP_BINARY, 23, 0, Y_SOFT, Y_GEMM, Y_ADD, 1, 5, 1, 1, 1, 1, 1,
                                 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0};

#define APPEND(words, n, op) (memcpy((words) + (n), op, sizeof op), (n) += sizeof op / 4)

static uint32_t valid_run_words(int32_t *w) {
  uint32_t n = 0;
  APPEND(w, n, conv_op);
  APPEND(w, n, sig_op);
  APPEND(w, n, pool_op);
  APPEND(w, n, mean_op);
  APPEND(w, n, gemm_op);
  APPEND(w, n, soft_op);
  APPEND(w, n, add_op);
  return n;
}

static float g_weights[WEIGHTS / 4];

static struct plan valid_plan(void) {
  int32_t run[256];
  uint32_t n = valid_run_words(run);
  return plan_build(init_op, sizeof init_op / 4, run, n, ARENA, g_weights, WEIGHTS);
}

/* loads plan (bytes, size) into a fresh patterned arena; checks status, bad_op, untouched arena */
static void expect_load(const char *what, const uint8_t *plan, uint32_t size, uint32_t arena_bytes,
                        int want_status, int32_t want_bad_op) {
  uint8_t *arena = arena_new(arena_bytes), *copy = malloc(arena_bytes ? arena_bytes : 1);
  for (uint32_t i = 0; i < arena_bytes; i++) arena[i] = copy[i] = (uint8_t)(i * 7 + 1);
  int32_t bad_op = 12345;
  int status = nnw_plan_load(plan, size, arena, arena_bytes, &bad_op);
  expect(status == want_status && bad_op == want_bad_op, "%s: status %d bad_op %d, want %d, %d",
         what, status, bad_op, want_status, want_bad_op);
  if (status != NNW_OK)
    expect(memcmp(arena, copy, arena_bytes) == 0, "%s: arena touched by a failed load", what);
  free(arena);
  free(copy);
}

static void set_word(struct plan *p, uint32_t index, int32_t value) {
  memcpy(p->bytes + 4 * index, &value, 4);
}

void test_plan_header(void) {
  fill_random(g_weights, WEIGHTS / 4, -1, 1);
  struct plan p = valid_plan();
  expect_load("valid plan", p.bytes, p.size, ARENA, NNW_OK, -1);
  expect_load("valid plan, larger arena", p.bytes, p.size, ARENA + 64, NNW_OK, -1);
  expect_load("arena smaller than the plan's", p.bytes, p.size, ARENA - 4, NNW_OUT_OF_BOUNDS, -1);
  expect_load("NULL plan", NULL, p.size, ARENA, NNW_BAD_ARGS, -1);
  expect_load("empty", p.bytes, 0, ARENA, NNW_TRUNCATED, -1);
  expect_load("3 bytes", p.bytes, 3, ARENA, NNW_TRUNCATED, -1);
  expect_load("header cut", p.bytes, 31, ARENA, NNW_TRUNCATED, -1);
  expect_load("op words cut", p.bytes, 64, ARENA, NNW_TRUNCATED, -1);
  expect_load("weights cut", p.bytes, p.size - 1, ARENA, NNW_TRUNCATED, -1);
  static const struct {
    const char *what;
    uint32_t word;
    int32_t value;
    int status;
  } header_cases[] = {
      {"bad magic", 0, 0x504E4E57, NNW_BAD_MAGIC},
      {"bad version", 1, 2, NNW_BAD_VERSION},
      {"reserved word set", 7, 1, NNW_BAD_ARGS},
      {"header arena beyond the arena", 2, ARENA + 4, NNW_OUT_OF_BOUNDS},
      {"negative header arena", 2, -1, NNW_OUT_OF_BOUNDS},
      {"weights larger than the arena", 3, ARENA + 16, NNW_OUT_OF_BOUNDS},
      {"weights past the plan", 3, WEIGHTS + 16, NNW_TRUNCATED},
      {"weights inside op words", 4, 32, NNW_BAD_ARGS},
      {"weights offset huge", 4, 0x7FFFFFF0, NNW_TRUNCATED},
      {"init words past the plan", 5, 0x7FFFFFFF, NNW_TRUNCATED},
      {"run words wrap 32 bits", 6, -2, NNW_TRUNCATED},
  };
  for (size_t i = 0; i < sizeof header_cases / sizeof header_cases[0]; i++) {
    struct plan q = valid_plan();
    set_word(&q, header_cases[i].word, header_cases[i].value);
    expect_load(header_cases[i].what, q.bytes, q.size, ARENA, header_cases[i].status, -1);
    plan_free(&q);
  }
  {
    struct plan q = valid_plan();
    int32_t offset;
    memcpy(&offset, q.bytes + 16, 4);
    set_word(&q, 4, offset + 4);
    expect_load("weights offset unaligned", q.bytes, q.size, ARENA, NNW_BAD_ARGS, -1);
    plan_free(&q);
  }
  /* a misaligned plan pointer */
  uint8_t *shifted = malloc(p.size + 1);
  memcpy(shifted + 1, p.bytes, p.size);
  expect_load("misaligned plan", shifted + 1, p.size, ARENA, NNW_BAD_ARGS, -1);
  free(shifted);
  plan_free(&p);
}

/* one run op (given as words) after the valid plan's first two run ops */
static void expect_op(const char *what, const int32_t *op, uint32_t n, int want_status) {
  int32_t run[256];
  uint32_t k = 0;
  APPEND(run, k, conv_op);
  APPEND(run, k, sig_op);
  memcpy(run + k, op, 4 * n);
  struct plan p = plan_build(init_op, sizeof init_op / 4, run, k + n, ARENA, g_weights, WEIGHTS);
  expect_load(what, p.bytes, p.size, ARENA, want_status, want_status == NNW_OK ? -1 : 3);
  plan_free(&p);
}

/* the op `base` with word i replaced */
static void expect_patched(const char *what, const int32_t *base, uint32_t n, uint32_t i,
                           int32_t value, int want_status) {
  int32_t op[64];
  memcpy(op, base, 4 * n);
  op[i] = value;
  expect_op(what, op, n, want_status);
}

#define PATCH(what, base, i, value, status) \
  expect_patched(what, base, sizeof base / 4, (i) + 2, value, status)

void test_plan_ops(void) {
  fill_random(g_weights, WEIGHTS / 4, -1, 1);
  /* framing */
  expect_patched("opcode 0", conv_op, 25, 0, 0, NNW_BAD_OPCODE);
  expect_patched("opcode past the table", conv_op, 25, 0, NNW_OP_COUNT, NNW_BAD_OPCODE);
  expect_patched("opcode -1", conv_op, 25, 0, -1, NNW_BAD_OPCODE);
  expect_patched("opcode huge", conv_op, 25, 0, 1 << 30, NNW_BAD_OPCODE);
  expect_patched("n_args short", conv_op, 25, 1, 22, NNW_BAD_ARGS);
  expect_patched("n_args long", conv_op, 25, 1, 24, NNW_BAD_ARGS);
  expect_patched("n_args huge", conv_op, 25, 1, 0x7FFFFFFF, NNW_BAD_ARGS);
  expect_patched("n_args negative", conv_op, 25, 1, -1, NNW_BAD_ARGS);
  expect_op("op cut by the section end", conv_op, 10, NNW_TRUNCATED);
  expect_op("lone opcode word", conv_op, 1, NNW_TRUNCATED);
  {
    /* an init op straddling into the run section */
    int32_t run[64];
    uint32_t k = 0;
    APPEND(run, k, sig_op);
    struct plan p = plan_build(init_op, 8, run, k, ARENA, g_weights, WEIGHTS);
    set_word(&p, 5, 5);
    set_word(&p, 6, (int32_t)(k + 3));
    expect_load("init op straddles the run section", p.bytes, p.size, ARENA, NNW_TRUNCATED, 0);
    plan_free(&p);
  }
  /* tensors */
  PATCH("conv x past the arena", conv_op, NNW_CONV2D_X, ARENA, NNW_OUT_OF_BOUNDS);
  PATCH("conv x ends past the arena", conv_op, NNW_CONV2D_X, ARENA - 4 * 71, NNW_OUT_OF_BOUNDS);
  PATCH("conv x negative", conv_op, NNW_CONV2D_X, -8, NNW_OUT_OF_BOUNDS);
  PATCH("conv x absent", conv_op, NNW_CONV2D_X, -1, NNW_OUT_OF_BOUNDS);
  PATCH("conv x INT32_MIN", conv_op, NNW_CONV2D_X, INT32_MIN, NNW_OUT_OF_BOUNDS);
  PATCH("conv x misaligned", conv_op, NNW_CONV2D_X, X + 2, NNW_BAD_ARGS);
  PATCH("conv weight past the arena", conv_op, NNW_CONV2D_WEIGHT, ARENA - 8, NNW_OUT_OF_BOUNDS);
  PATCH("conv bias past the arena", conv_op, NNW_CONV2D_B, ARENA - 8, NNW_OUT_OF_BOUNDS);
  PATCH("conv y past the arena", conv_op, NNW_CONV2D_Y, ARENA - 100, NNW_OUT_OF_BOUNDS);
  PATCH("conv scratch too small", conv_op, NNW_CONV2D_SCRATCH, ARENA - 2588, NNW_OUT_OF_BOUNDS);
  PATCH("conv scratch absent", conv_op, NNW_CONV2D_SCRATCH, -1, NNW_OUT_OF_BOUNDS);
  /* overlaps: outputs and scratch apart from inputs, except exact in-place elementwise ops */
  PATCH("conv y overlaps x", conv_op, NNW_CONV2D_Y, X + 16, NNW_BAD_ARGS);
  PATCH("conv scratch overlaps y", conv_op, NNW_CONV2D_SCRATCH, Y_CONV + 4, NNW_BAD_ARGS);
  PATCH("conv scratch overlaps weights", conv_op, NNW_CONV2D_SCRATCH, W_CONV, NNW_BAD_ARGS);
  PATCH("gemm y over a", gemm_op, NNW_GEMM_Y, Y_MEAN, NNW_BAD_ARGS);
  PATCH("binary y partly over a", add_op, NNW_BINARY_Y, Y_SOFT + 4, NNW_BAD_ARGS);
  PATCH("binary in place on a", add_op, NNW_BINARY_Y, Y_SOFT, NNW_OK);
  PATCH("unary y partly over x", sig_op, NNW_UNARY_Y, Y_CONV + 4, NNW_BAD_ARGS);
  PATCH("unary in place", sig_op, NNW_UNARY_Y, Y_CONV, NNW_OK);
  /* shapes and parameters */
  PATCH("conv n 0", conv_op, NNW_CONV2D_N, 0, NNW_BAD_ARGS);
  PATCH("conv c negative", conv_op, NNW_CONV2D_C, -2, NNW_BAD_ARGS);
  PATCH("conv stride 0", conv_op, NNW_CONV2D_SH, 0, NNW_BAD_ARGS);
  PATCH("conv dilation 0", conv_op, NNW_CONV2D_DW, 0, NNW_BAD_ARGS);
  PATCH("conv pad negative", conv_op, NNW_CONV2D_PT, -1, NNW_BAD_ARGS);
  PATCH("conv group does not divide c", conv_op, NNW_CONV2D_GROUP, 3, NNW_BAD_ARGS);
  {
    int32_t op[25];
    memcpy(op, conv_op, sizeof op);
    op[2 + NNW_CONV2D_GROUP] = 2;
    op[2 + NNW_CONV2D_M] = 3;
    expect_op("conv group does not divide m", op, 25, NNW_BAD_ARGS);
    memcpy(op, conv_op, sizeof op);
    op[2 + NNW_CONV2D_ACT_MIN] = f32_bits(1.0f);
    op[2 + NNW_CONV2D_ACT_MAX] = f32_bits(0.0f);
    expect_op("conv act_min > act_max", op, 25, NNW_BAD_ARGS);
  }
  PATCH("conv act NaN", conv_op, NNW_CONV2D_ACT_MAX, 0x7FC00000, NNW_BAD_ARGS);
  PATCH("conv kernel beyond coordinates", conv_op, NNW_CONV2D_KH, 1 << 30, NNW_BAD_ARGS);
  PATCH("conv n*c*h*w wraps 32 bits", conv_op, NNW_CONV2D_N, 1 << 29, NNW_OUT_OF_BOUNDS);
  {
    int32_t op[25];
    memcpy(op, conv_op, sizeof op);
    op[2 + NNW_CONV2D_N] = 65536;
    op[2 + NNW_CONV2D_C] = 65536;
    op[2 + NNW_CONV2D_M] = 65536;
    op[2 + NNW_CONV2D_H] = op[2 + NNW_CONV2D_W] = op[2 + NNW_CONV2D_OH] = op[2 + NNW_CONV2D_OW] = 1;
    op[2 + NNW_CONV2D_PT] = op[2 + NNW_CONV2D_PL] = 0;
    op[2 + NNW_CONV2D_KH] = op[2 + NNW_CONV2D_KW] = 1;
    op[2 + NNW_CONV2D_GROUP] = 65536;
    expect_op("conv dims multiply to 2^48", op, 25, NNW_OUT_OF_BOUNDS);
  }
  PATCH("unary count past the arena", sig_op, NNW_UNARY_COUNT, 0x7FFFFFFF, NNW_OUT_OF_BOUNDS);
  PATCH("unary count 0", sig_op, NNW_UNARY_COUNT, 0, NNW_BAD_ARGS);
  PATCH("unary kind 26", sig_op, NNW_UNARY_KIND, 26, NNW_BAD_ARGS);
  PATCH("unary y misaligned", sig_op, NNW_UNARY_Y, Y_SIG + 1, NNW_BAD_ARGS);
  PATCH("pool pad as large as the window", pool_op, NNW_POOL2D_PT, 2, NNW_BAD_ARGS);
  PATCH("pool last window past the image", pool_op, NNW_POOL2D_OH, 5, NNW_BAD_ARGS);
  PATCH("pool kind 2", pool_op, NNW_POOL2D_KIND, 2, NNW_BAD_ARGS);
  PATCH("pool count_include_pad 2", pool_op, NNW_POOL2D_COUNT_INCLUDE_PAD, 2, NNW_BAD_ARGS);
  PATCH("pool stride negative", pool_op, NNW_POOL2D_SW, -2, NNW_BAD_ARGS);
  PATCH("mean rows past the arena", mean_op, NNW_MEAN_ROWS_ROWS, 1 << 20, NNW_OUT_OF_BOUNDS);
  PATCH("mean inner 0", mean_op, NNW_MEAN_ROWS_INNER, 0, NNW_BAD_ARGS);
  PATCH("gemm trans_b 2", gemm_op, NNW_GEMM_TRANS_B, 2, NNW_BAD_ARGS);
  PATCH("gemm c stride negative", gemm_op, NNW_GEMM_C_CS, -1, NNW_BAD_ARGS);
  PATCH("gemm c past the arena", gemm_op, NNW_GEMM_C, ARENA, NNW_OUT_OF_BOUNDS);
  PATCH("gemm m*n*k wraps", gemm_op, NNW_GEMM_M, 1 << 30, NNW_OUT_OF_BOUNDS);
  PATCH("softmax log 2", soft_op, NNW_SOFTMAX_LOG, 2, NNW_BAD_ARGS);
  PATCH("softmax axis past the arena", soft_op, NNW_SOFTMAX_AXIS, 1 << 28, NNW_OUT_OF_BOUNDS);
  PATCH("binary kind 9", add_op, NNW_BINARY_KIND, 9, NNW_BAD_ARGS);
  PATCH("binary rank 7", add_op, NNW_BINARY_RANK, 7, NNW_BAD_ARGS);
  PATCH("binary rank negative", add_op, NNW_BINARY_RANK, -1, NNW_BAD_ARGS);
  PATCH("binary stride negative", add_op, NNW_BINARY_AS0, -1, NNW_BAD_ARGS);
  PATCH("binary dim 0", add_op, NNW_BINARY_D0, 0, NNW_BAD_ARGS);
  PATCH("binary b stride reaches past", add_op, NNW_BINARY_BS0, 1 << 20, NNW_OUT_OF_BOUNDS);
  {
    int32_t op[25];
    memcpy(op, add_op, sizeof op);
    op[2 + NNW_BINARY_RANK] = 6;
    for (int i = 0; i < 6; i++) {
      op[2 + NNW_BINARY_D0 + i] = 1 << 16;
      op[2 + NNW_BINARY_AS0 + i] = op[2 + NNW_BINARY_BS0 + i] = 0;
    }
    expect_op("binary 6 dims of 2^16", op, 25, NNW_OUT_OF_BOUNDS);
  }
  int32_t mm[] = {NNW_OP_MATMUL, 9, Y_MEAN, W_CONV, Y_GEMM, 1, 1, 5, 4, 0, 0};
  expect_op("matmul valid", mm, 11, NNW_OK);
  PATCH("matmul batch with a_bs past the arena", mm, NNW_MATMUL_BATCH, 1 << 20, NNW_OUT_OF_BOUNDS);
  PATCH("matmul negative a_bs", mm, NNW_MATMUL_A_BS, -4, NNW_BAD_ARGS);
  int32_t cp[] = {NNW_OP_COPY2D, 6, Y_SIG + 1, Y_ADD + 3, 3, 5, 7, 5};
  expect_op("copy2d valid, unaligned", cp, 8, NNW_OK);
  PATCH("copy2d rows past the arena", cp, NNW_COPY2D_ROWS, 1 << 20, NNW_OUT_OF_BOUNDS);
  PATCH("copy2d negative stride", cp, NNW_COPY2D_SRC_STRIDE, -7, NNW_BAD_ARGS);
  PATCH("copy2d dst past the arena", cp, NNW_COPY2D_DST, ARENA - 4, NNW_OUT_OF_BOUNDS);

  /* init ops run once, at load; bad_op counts init ops first */
  {
    struct plan p = valid_plan();
    uint8_t *arena = arena_new(ARENA);
    int32_t bad_op = 7;
    int status = nnw_plan_load(p.bytes, p.size, arena, ARENA, &bad_op);
    expect(status == NNW_OK && bad_op == -1, "valid plan: load %d bad_op %d", status, bad_op);
    expect(memcmp(arena, g_weights, WEIGHTS) == 0, "weights copied into the arena");
    expect(memcmp(arena + B_COPY, arena + B_CONV, 16) == 0, "init op ran at load");
    float marker = 42.0f;
    memcpy(arena + B_COPY, &marker, 4);
    fill_random(at(arena, X), 72, -1, 1);
    status = nnw_plan_run(p.bytes, arena);
    expect(status == NNW_OK, "valid plan: run %d", status);
    expect(memcmp(arena + B_COPY, &marker, 4) == 0, "init op not rerun by nnw_plan_run");
    const float *out = at(arena, Y_ADD);
    int finite = 1;
    for (int i = 0; i < 5; i++) finite &= isfinite(out[i]);
    expect(finite, "valid plan: finite outputs");
    plan_free(&p);
    free(arena);
  }
}

/* nnw_plan_run_ops: one op at a time gives nnw_plan_run's bytes; a range outside the run ops is
 * refused, runs nothing and reads nothing past the op words; failed_op stays a global index. */
static void run_ops_matches_run(void) {
  struct plan p = valid_plan();
  uint8_t *whole = arena_new(ARENA), *steps = arena_new(ARENA);
  int status = nnw_plan_load(p.bytes, p.size, whole, ARENA, NULL);
  status |= nnw_plan_load(p.bytes, p.size, steps, ARENA, NULL);
  fill_random(at(whole, X), 72, -1, 1);
  memcpy(steps + X, whole + X, 288);
  status |= nnw_plan_run(p.bytes, whole);
  for (int32_t k = 0; k < 7; k++) status |= nnw_plan_run_ops(p.bytes, steps, k, 1);
  expect(status == NNW_OK && nnw_plan_failed_op() == -1, "run_ops one by one: status %d", status);
  expect(memcmp(whole + X, steps + X, ARENA - X) == 0, "run_ops one by one differs from nnw_plan_run");
  uint8_t *ranges = arena_new(ARENA);   /* fresh, so an op that did not run leaves NaN bits */
  status = nnw_plan_load(p.bytes, p.size, ranges, ARENA, NULL);
  memcpy(ranges + X, whole + X, 288);
  status |= nnw_plan_run_ops(p.bytes, ranges, 0, 3);
  status |= nnw_plan_run_ops(p.bytes, ranges, 3, 4);
  status |= nnw_plan_run_ops(p.bytes, ranges, 7, 0);
  status |= nnw_plan_run_ops(p.bytes, ranges, 2, 0);
  expect(status == NNW_OK && memcmp(whole + X, ranges + X, ARENA - X) == 0, "run_ops in two ranges: %d", status);
  free(ranges);

  static const int32_t bad[][2] = {{-1, 1}, {0, -1}, {7, 1}, {8, 0}, {0, 8}, {6, 2}, {INT32_MAX, 1},
                                   {1, INT32_MAX}, {INT32_MIN, 1}, {0, INT32_MIN}, {INT32_MAX, INT32_MAX}};
  uint8_t *copy = malloc(ARENA);
  memcpy(copy, steps, ARENA);
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    status = nnw_plan_run_ops(p.bytes, steps, bad[i][0], bad[i][1]);
    expect(status == NNW_BAD_ARGS && nnw_plan_failed_op() == -1, "run_ops(%d, %d): status %d failed_op %d",
           bad[i][0], bad[i][1], status, nnw_plan_failed_op());
  }
  expect(memcmp(steps, copy, ARENA) == 0, "a refused run_ops range touched the arena");
  expect(nnw_plan_run_ops(NULL, steps, 0, 1) == NNW_BAD_ARGS, "run_ops on a NULL plan");
  expect(nnw_plan_run_ops(p.bytes + 2, steps, 0, 1) == NNW_BAD_ARGS, "run_ops on a misaligned plan");
  set_word(&p, 1, NNW_PLAN_VERSION + 1);
  expect(nnw_plan_run_ops(p.bytes, steps, 0, 1) == NNW_BAD_VERSION, "run_ops on another version");
  {
    /* a plan with no run ops: only the empty range at 0 */
    struct plan e = plan_build(init_op, sizeof init_op / 4, NULL, 0, ARENA, g_weights, WEIGHTS);
    uint8_t *arena = arena_new(ARENA);
    status = nnw_plan_load(e.bytes, e.size, arena, ARENA, NULL);
    expect(status == NNW_OK && nnw_plan_run_ops(e.bytes, arena, 0, 0) == NNW_OK &&
           nnw_plan_run_ops(e.bytes, arena, 0, 1) == NNW_BAD_ARGS &&
           nnw_plan_run_ops(e.bytes, arena, 1, 0) == NNW_BAD_ARGS, "run_ops on a plan without run ops");
    plan_free(&e);
    free(arena);
  }
  free(copy);
  free(whole);
  free(steps);
  plan_free(&p);
}

/* a run-time failure inside a range: its index counts from the first run op, the ops after it in
 * the range do not run, and a range that starts after it runs */
static void run_ops_failure(void) {
  enum { A = 0, Y = 32, TABLE = 64, Y2 = 96, ARENA_BYTES = 128 };
  static const int32_t bad_table[5] = {0, 6, 0, 1, 2};   /* reaches 6 + 2 = 8: past x's 8 floats */
  int32_t gather[2 + NNW_GATHER_AXES_NARGS] = {NNW_OP_GATHER_AXES, NNW_GATHER_AXES_NARGS, A, Y, TABLE, -1, 4, 8,
                                               2, 2, 3, 1, 1, 1, 1};
  int32_t head[2 + NNW_COPY2D_NARGS] = {NNW_OP_COPY2D, NNW_COPY2D_NARGS, A, 124, 1, 4, 4, 4};
  int32_t tail[2 + NNW_COPY2D_NARGS] = {NNW_OP_COPY2D, NNW_COPY2D_NARGS, A, Y2, 1, 24, 24, 24};
  int32_t words[64];
  uint32_t n = 0;
  APPEND(words, n, head);
  APPEND(words, n, head);
  APPEND(words, n, gather);   /* op 2 fails */
  APPEND(words, n, tail);
  struct plan p = plan_build(NULL, 0, words, n, ARENA_BYTES, NULL, 0);
  uint8_t *arena = arena_new(ARENA_BYTES);
  int status = nnw_plan_load(p.bytes, p.size, arena, ARENA_BYTES, NULL);
  for (int i = 0; i < 8; i++) *at(arena, A + 4 * i) = (float)i;
  memcpy(arena + TABLE, bad_table, sizeof bad_table);
  memset(arena + Y2, 0x7F, 24);
  if (status == NNW_OK) status = nnw_plan_run_ops(p.bytes, arena, 1, 3);
  uint8_t marks[24];
  memset(marks, 0x7F, 24);
  expect(status == NNW_BAD_INDEX && nnw_plan_failed_op() == 2, "run_ops failure: status %d op %d", status,
         nnw_plan_failed_op());
  expect(memcmp(arena + Y2, marks, 24) == 0, "run_ops: the op after the failing one ran");
  status = nnw_plan_run_ops(p.bytes, arena, 3, 1);
  expect(status == NNW_OK && nnw_plan_failed_op() == -1 && memcmp(arena + Y2, marks, 24) != 0,
         "run_ops after a failure: status %d", status);
  plan_free(&p);
  free(arena);
}

void test_plan_run_ops(void) {
  fill_random(g_weights, WEIGHTS / 4, -1, 1);
  run_ops_matches_run();
  run_ops_failure();
}

/* random mutations of the valid plan: loads that pass must also run cleanly */
void test_plan_fuzz(void) {
  fill_random(g_weights, WEIGHTS / 4, -1, 1);
  struct plan base = valid_plan();
  uint32_t words = base.size / 4, loaded = 0;
  static const int32_t specials[] = {0, -1, 1, 2, 3, 4, 7, 16, 65536, 1 << 20, 1 << 30, INT32_MAX,
                                     INT32_MIN, ARENA, ARENA - 4, -4};
  enum { ROUNDS = 4000 };
  for (int r = 0; r < ROUNDS; r++) {
    struct plan p = valid_plan();
    int edits = 1 + (int)(rng_u32() % 3);
    for (int e = 0; e < edits; e++) {
      uint32_t i = rng_u32() % (r % 4 == 0 ? 8 : words);
      int32_t v;
      memcpy(&v, p.bytes + 4 * i, 4);
      switch (rng_u32() % 3) {
        case 0: v = specials[rng_u32() % (sizeof specials / sizeof specials[0])]; break;
        case 1: v = (int32_t)((uint32_t)v + (rng_u32() % 9) - 4u); break; /* wraps, no UB */
        default: v = (int32_t)rng_u32(); break;
      }
      set_word(&p, i, v);
    }
    uint32_t size = rng_u32() % 8 == 0 ? rng_u32() % p.size : p.size;
    uint32_t arena_bytes = ARENA + 4 * (rng_u32() % 3);
    uint8_t *arena = arena_new(arena_bytes);
    int32_t bad_op;
    int status = nnw_plan_load(p.bytes, size, arena, arena_bytes, &bad_op);
    if (status == NNW_OK) {
      loaded++;
      nnw_plan_run(p.bytes, arena);
      int32_t first = (int32_t)(rng_u32() % 10) - 1, count = (int32_t)(rng_u32() % 10) - 1;
      status = nnw_plan_run_ops(p.bytes, arena, first, count);
      if (status != NNW_OK && status != NNW_BAD_ARGS && status != NNW_BAD_INDEX)
        expect(0, "fuzz round %d: run_ops(%d, %d) gave %d", r, first, count, status);
    }
    if (status < NNW_OK || status > NNW_OUT_OF_MEMORY)
      expect(0, "fuzz round %d: unknown status %d", r, status);
    free(arena);
    plan_free(&p);
  }
  expect(loaded > 0 && loaded < ROUNDS, "fuzz: %u of %d mutated plans loaded", loaded, ROUNDS);
  plan_free(&base);
}

void test_alloc(void) {
  for (size_t bytes = 0; bytes < 100; bytes += 33) {
    void *p = nnw_malloc(bytes);
    expect(p != NULL && (uintptr_t)p % 16 == 0, "nnw_malloc(%zu) 16-aligned", bytes);
    memset(p, 1, bytes);
    nnw_free(p);
  }
  nnw_free(NULL);
}

/* nnw_plan_load_at / nnw_plan_check_at: a plan over several allocated blocks (a session's shared
 * weights and the plan's arena) validates each tensor against the host's extents, so a tensor
 * in a gap between them (another allocation) is refused; the weights blob goes to extent 0. */
static int load_at(const struct plan *p, uint8_t *base, uint32_t span, const uint32_t *ext, int32_t n) {
  int32_t bad_op = 12345;
  return nnw_plan_load_at(p->bytes, p->size, base, span, ext, n, &bad_op);
}

void test_plan_extents(void) {
  fill_random(g_weights, WEIGHTS / 4, -1, 1);
  struct plan p = valid_plan();
  uint8_t *arena = arena_new(ARENA + 64);
  /* the blob lands at extent 0's start: X, past the weights, is in extent 0 too */
  const uint32_t whole[] = {0, ARENA};
  expect(load_at(&p, arena, ARENA, whole, 1) == NNW_OK, "extents: one extent, the whole arena");
  expect(memcmp(arena, g_weights, WEIGHTS) == 0, "extents: blob at extent 0");
  expect(nnw_plan_run(p.bytes, arena) == NNW_OK, "extents: runs");
  const uint32_t split[] = {0, X, X, ARENA};
  expect(load_at(&p, arena, ARENA, split, 2) == NNW_OK, "extents: every tensor within one of two");
  const uint32_t gap[] = {0, X, X + 16, ARENA};   /* X lies in a gap: another allocation's bytes */
  expect(load_at(&p, arena, ARENA, gap, 2) == NNW_OUT_OF_BOUNDS, "extents: a tensor in a gap refused");
  const uint32_t straddle[] = {0, X + 16, X + 16, ARENA};   /* X straddles two blocks */
  expect(load_at(&p, arena, ARENA, straddle, 2) == NNW_OUT_OF_BOUNDS, "extents: a tensor over two blocks");
  const uint32_t small0[] = {64, ARENA};   /* extent 0 can't hold the blob */
  expect(load_at(&p, arena, ARENA, small0, 1) != NNW_OK, "extents: blob larger than extent 0");
  const uint32_t backwards[] = {X, 0};
  expect(load_at(&p, arena, ARENA, backwards, 1) == NNW_BAD_ARGS, "extents: lo > hi");
  expect(load_at(&p, arena, ARENA, whole, 0) == NNW_BAD_ARGS, "extents: none");
  expect(load_at(&p, arena, ARENA, whole, NNW_MAX_EXTENTS + 1) == NNW_BAD_ARGS, "extents: too many");
  expect(load_at(&p, arena, ARENA, NULL, 1) == NNW_BAD_ARGS, "extents: NULL");
  expect(load_at(&p, arena, ARENA - 16, whole, 1) == NNW_BAD_ARGS, "extents: past the span");
  int32_t bad_op = 0;
  expect(nnw_plan_check_at(p.bytes, p.size, ARENA, split, 2, &bad_op) == NNW_OK && bad_op == -1,
         "extents: check within two");
  expect(nnw_plan_check_at(p.bytes, p.size, ARENA, gap, 2, &bad_op) == NNW_OUT_OF_BOUNDS && bad_op >= 0,
         "extents: check refuses the gap (op %d)", bad_op);
  /* the extents of one call do not stay: a plain check afterwards sees the whole arena */
  expect(nnw_plan_check(p.bytes, p.size, ARENA, &bad_op) == NNW_OK, "extents: cleared after a call");
  free(arena);
  plan_free(&p);
}

void test_alloc_counts(void) {
  uint32_t before = nnw_allocated_bytes();
  void *p = nnw_malloc(1000);
  expect(nnw_allocated_bytes() >= before + 1000, "allocated bytes count a block");
  p = nnw_realloc(p, 5000);
  expect(p != NULL && nnw_allocated_bytes() >= before + 5000 && nnw_allocated_peak() >= before + 5000,
         "allocated bytes follow realloc");
  nnw_free(p);
  expect(nnw_allocated_bytes() == before, "allocated bytes back after free (%u, %u)", nnw_allocated_bytes(), before);
}
