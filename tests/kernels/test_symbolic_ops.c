/* range and scatter_nd, the kernels symbolic plans compute dim-derived data with (symbolic.py):
 * against reference loops, tensors flush against the arena's end; scatter_nd's run-time index
 * check (NNW_BAD_INDEX, y untouched); hostile arguments refused at load. */
#include <stdlib.h>

#include "harness.h"
#include "tests.h"

static void range_case(int32_t dtype, int32_t n, int32_t start, int32_t delta) {
  int size = dtype == 1 ? 8 : 4;
  uint32_t arena_bytes = 8 + (uint32_t)(n * size);
  uint8_t *arena = calloc(arena_bytes, 1);
  int32_t args[NNW_RANGE_NARGS] = {8, dtype, n, start, delta};
  int status = run_op(NNW_OP_RANGE, args, NNW_RANGE_NARGS, arena, arena_bytes);
  int ok = status == NNW_OK;
  for (int32_t i = 0; i < n && ok; i++) {
    if (dtype == 1) {
      int64_t v;
      memcpy(&v, arena + 8 + 8 * i, 8);
      ok = v == (int64_t)start + (int64_t)i * delta;
    } else {
      int32_t v;
      memcpy(&v, arena + 8 + 4 * i, 4);
      ok = v == (int32_t)((uint32_t)start + (uint32_t)i * (uint32_t)delta);
    }
  }
  expect(ok, "range dtype %d n %d start %d delta %d: status %d", dtype, n, start, delta, status);
  free(arena);
}

/* data [4, 3, 2] f32 in y; idx [rows, k] int64; updates [rows, inner] */
static void scatter_case(int32_t k, int32_t rows, int bad) {
  static const int32_t dims[3] = {4, 3, 2};
  int32_t inner = 1, outer = 1;
  for (int j = 0; j < 3; j++) {
    if (j < k) outer *= dims[j];
    else inner *= dims[j];
  }
  (void)outer;
  uint64_t bytes[3] = {(uint64_t)rows * k * 8, (uint64_t)rows * inner * 4, 24 * 4};
  int32_t off[3];
  uint32_t arena_bytes;
  do /* layout's random gaps are 4-byte steps: idx (int64) must be 8-aligned, as the validator checks */
    arena_bytes = layout(bytes, 3, 0, off);
  while (off[0] % 8 != 0);
  uint8_t *arena = arena_new(arena_bytes);
  float *y = at(arena, off[2]), *upd = at(arena, off[1]);
  fill_random(y, 24, -1, 1);
  fill_random(upd, (size_t)rows * inner, -1, 1);
  float want[24];
  memcpy(want, y, sizeof want);
  for (int32_t r = 0; r < rows; r++) {
    int64_t flat = 0;
    for (int32_t j = 0; j < k; j++) {
      int64_t i = (int64_t)(rng_u32() % (uint32_t)(2 * dims[j])) - dims[j];   /* negatives count from the end */
      memcpy(arena + off[0] + 8 * (r * k + j), &i, 8);
      flat = flat * dims[j] + (i < 0 ? i + dims[j] : i);
    }
    memcpy(want + flat * inner, upd + r * inner, (size_t)inner * 4);   /* the last duplicate wins */
  }
  if (bad) {
    int64_t v = dims[0];
    memcpy(arena + off[0] + 8 * ((rows - 1) * k), &v, 8);
    memcpy(want, y, sizeof want);
  }
  int32_t args[NNW_SCATTER_ND_NARGS] = {off[0], off[1], off[2], 4, rows, k, inner, 1, 1, 1, 1, 1, 1};
  for (int j = 0; j < k; j++) args[NNW_SCATTER_ND_D0 + j] = dims[j];
  int status = op_status(NNW_OP_SCATTER_ND, args, NNW_SCATTER_ND_NARGS, arena, arena_bytes);
  expect(status == (bad ? NNW_BAD_INDEX : NNW_OK) && memcmp(y, want, sizeof want) == 0,
         "scatter_nd k %d rows %d bad %d: status %d", k, rows, bad, status);
  if (!bad) {
    static const struct arg_patch patches[] = {
        {"esize 3", NNW_SCATTER_ND_ESIZE, 3, NNW_BAD_ARGS},  {"k 0", NNW_SCATTER_ND_K, 0, NNW_BAD_ARGS},
        {"k 7", NNW_SCATTER_ND_K, 7, NNW_BAD_ARGS},          {"rows -1", NNW_SCATTER_ND_ROWS, -1, NNW_BAD_ARGS},
        {"inner 0", NNW_SCATTER_ND_INNER, 0, NNW_BAD_ARGS},  {"d5 2", NNW_SCATTER_ND_D5, 2, NNW_BAD_ARGS},
        {"d0 99", NNW_SCATTER_ND_D0, 99, NNW_OUT_OF_BOUNDS},    {"y past end", NNW_SCATTER_ND_Y, 1 << 20, NNW_OUT_OF_BOUNDS},
        {"rows 999", NNW_SCATTER_ND_ROWS, 999, NNW_OUT_OF_BOUNDS},
    };
    load_patches(NNW_OP_SCATTER_ND, args, NNW_SCATTER_ND_NARGS, arena_bytes, patches, sizeof patches / sizeof *patches);
  }
  free(arena);
}

void test_symbolic_ops(void) {
  for (int32_t dtype = 0; dtype < 2; dtype++) {
    range_case(dtype, 0, 3, 1);
    range_case(dtype, 7, 5, 1);
    range_case(dtype, 5, -3, 4);
    range_case(dtype, 6, 100, -7);
    range_case(dtype, 3, 2147483600, 30);   /* int32 wraps, int64 does not */
  }
  static const struct arg_patch range_patches[] = {
      {"dtype 2", NNW_RANGE_DTYPE, 2, NNW_BAD_ARGS}, {"n -1", NNW_RANGE_N, -1, NNW_BAD_ARGS},
      {"n past end", NNW_RANGE_N, 1000, NNW_OUT_OF_BOUNDS}, {"y misaligned", NNW_RANGE_Y, 6, NNW_BAD_ARGS},
  };
  int32_t args[NNW_RANGE_NARGS] = {8, 1, 4, 0, 1};
  load_patches(NNW_OP_RANGE, args, NNW_RANGE_NARGS, 40, range_patches, sizeof range_patches / sizeof *range_patches);
  for (int32_t k = 1; k <= 3; k++) {
    scatter_case(k, 1, 0);
    scatter_case(k, 5, 0);
    scatter_case(k, 3, 1);
  }
}
