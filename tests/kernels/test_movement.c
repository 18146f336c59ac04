/* gather_axes, gather, gather_elements and resize_linear against reference loops (every element
 * size, tensors flush against the arena's end); their run-time index checks (NNW_BAD_INDEX stops
 * the plan at the failing op, leaves its output unwritten, and the next run starts afresh); and
 * the validators' refusals of hostile arguments. */
#include <stdlib.h>

#include "harness.h"
#include "tests.h"

/* loads a plan of the given op words and runs it; returns the load status, or the run status */
static int load_run(const int32_t *words, uint32_t n_words, uint8_t *arena, uint32_t arena_bytes) {
  struct plan p = plan_build(NULL, 0, words, n_words, arena_bytes, NULL, 0);
  int status = nnw_plan_load(p.bytes, p.size, arena, arena_bytes, NULL);
  if (status == NNW_OK) status = nnw_plan_run(p.bytes, arena);
  plan_free(&p);
  return status;
}

static int one_op(int opcode, const int32_t *args, int n_args, uint8_t *arena, uint32_t arena_bytes) {
  int32_t words[64];
  int n = op_words(words, opcode, args, n_args);
  return load_run(words, (uint32_t)n, arena, arena_bytes);
}

/* like harness layout(), but 8-aligned for every element size: the last tensor ends the arena */
static uint32_t layout8(const uint64_t *bytes, int count, int order, int32_t *offsets) {
  uint64_t at = 0;
  for (int k = 0; k < count; k++) {
    int i = order ? count - 1 - k : k;
    at = (at + 7) / 8 * 8 + 8 * (rng_u32() % 2);
    offsets[i] = (int32_t)at;
    at += bytes[i];
  }
  return (uint32_t)at;
}

static void fill_bytes(uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++) p[i] = (uint8_t)rng_u32();
}

/* ---- gather_axes --------------------------------------------------------------------------- */

/* x of x_count elements, y of dims d (rank r) through random tables; pads: whether tables hold -1 */
static void gather_axes_case(int rank, const int32_t *d, int esize, int pads, int order) {
  int32_t x_count = 1 + (int32_t)(rng_u32() % 60), entries = 0, count = 1;
  for (int i = 0; i < rank; i++) entries += d[i], count *= d[i];
  /* each axis may reach at most x_count / rank - 1, so every sum stays inside x */
  int32_t span = x_count / rank > 0 ? x_count / rank : 1;
  uint64_t bytes[4] = {(uint64_t)x_count * esize, (uint64_t)count * esize, (uint64_t)entries * 4,
                       (uint64_t)esize};
  int32_t off[4];
  uint32_t arena_bytes = layout8(bytes, 4, order, off);
  uint8_t *arena = arena_new(arena_bytes);
  int32_t *table = (int32_t *)(void *)(arena + off[2]);
  for (int i = 0, at = 0; i < rank; i++)
    for (int32_t j = 0; j < d[i]; j++, at++)
      table[at] = pads && rng_u32() % 4 == 0 ? -1 : (int32_t)(rng_u32() % (uint32_t)span);
  if (rank == 1 && d[0] <= x_count)   /* a contiguous last axis (between pads): the row-copy path */
    for (int32_t j = 0; j < d[0]; j++) table[j] = pads && (j == 0 || j >= d[0] - 2) ? -1 : j;
  fill_bytes(arena + off[0], bytes[0]);
  fill_bytes(arena + off[3], bytes[3]);
  uint8_t *want = malloc(bytes[1]);
  for (int32_t o = 0; o < count; o++) {
    int32_t rest = o, src = 0, pad = 0, base = entries;
    for (int i = rank - 1; i >= 0; i--) {
      base -= d[i];
      int32_t t = table[base + rest % d[i]];
      rest /= d[i];
      if (t < 0) pad = 1;
      src += t;
    }
    memcpy(want + (size_t)o * esize, pad ? arena + off[3] : arena + off[0] + (size_t)src * esize, (size_t)esize);
  }
  int32_t args[NNW_GATHER_AXES_NARGS] = {off[0], off[1], off[2], pads ? off[3] : -1, esize, x_count, rank,
                                         1, 1, 1, 1, 1, 1};
  for (int i = 0; i < rank; i++) args[NNW_GATHER_AXES_D0 + i] = d[i];
  int status = one_op(NNW_OP_GATHER_AXES, args, NNW_GATHER_AXES_NARGS, arena, arena_bytes);
  expect(status == NNW_OK && memcmp(arena + off[1], want, bytes[1]) == 0,
         "gather_axes rank %d esize %d pads %d: status %d or wrong bytes", rank, esize, pads, status);
  free(want);
  free(arena);
}

static void gather_axes_refusals(void) {
  /* x: 8 f32 at 0; y: 6 at 32; table: 2 + 3 entries at 64; value at 96 */
  int32_t ok[NNW_GATHER_AXES_NARGS] = {0, 32, 64, 96, 4, 8, 2, 2, 3, 1, 1, 1, 1};
  expect(load_status(NNW_OP_GATHER_AXES, ok, NNW_GATHER_AXES_NARGS, 128) == NNW_OK, "gather_axes: valid refused");
  int32_t a[NNW_GATHER_AXES_NARGS];
#define REFUSED(field, value, status)                                                              \
  memcpy(a, ok, sizeof a);                                                                        \
  a[field] = value;                                                                               \
  expect(load_status(NNW_OP_GATHER_AXES, a, NNW_GATHER_AXES_NARGS, 128) == (status),                \
         "gather_axes: %s = %d not refused", #field, value)
  REFUSED(NNW_GATHER_AXES_ESIZE, 3, NNW_BAD_ARGS);
  REFUSED(NNW_GATHER_AXES_RANK, 0, NNW_BAD_ARGS);
  REFUSED(NNW_GATHER_AXES_RANK, 7, NNW_BAD_ARGS);
  REFUSED(NNW_GATHER_AXES_X_COUNT, 0, NNW_BAD_ARGS);
  REFUSED(NNW_GATHER_AXES_X_COUNT, 1 << 30, NNW_OUT_OF_BOUNDS);
  REFUSED(NNW_GATHER_AXES_D0, 0, NNW_BAD_ARGS);
  REFUSED(NNW_GATHER_AXES_D1, -3, NNW_BAD_ARGS);
  REFUSED(NNW_GATHER_AXES_D1, 1 << 30, NNW_OUT_OF_BOUNDS);
  REFUSED(NNW_GATHER_AXES_X, 2, NNW_BAD_ARGS);          /* not a multiple of esize */
  REFUSED(NNW_GATHER_AXES_TABLE, 66, NNW_BAD_ARGS);     /* int32 table misaligned */
  REFUSED(NNW_GATHER_AXES_Y, 16, NNW_BAD_ARGS);         /* overlaps x */
  REFUSED(NNW_GATHER_AXES_TABLE, 40, NNW_BAD_ARGS);     /* overlaps y */
  REFUSED(NNW_GATHER_AXES_VALUE, 44, NNW_BAD_ARGS);     /* inside y */
  REFUSED(NNW_GATHER_AXES_VALUE, 128, NNW_OUT_OF_BOUNDS);
  REFUSED(NNW_GATHER_AXES_VALUE, -2, NNW_OUT_OF_BOUNDS);
  REFUSED(NNW_GATHER_AXES_Y, 112, NNW_OUT_OF_BOUNDS);
#undef REFUSED
}

/* run-time failures: a table entry past x, below -1, or -1 without a value; a two-op plan stops at
 * the failing op, and the next run (with the data fixed) succeeds */
static void gather_axes_run_errors(void) {
  enum { X = 0, Y = 32, TABLE = 64, Y2 = 96, ARENA_BYTES = 128 };
  static const int32_t good[5] = {0, 4, 0, 1, 2};   /* reaches 4 + 2 = 6 < 8 */
  int32_t op[2 + NNW_GATHER_AXES_NARGS] = {NNW_OP_GATHER_AXES, NNW_GATHER_AXES_NARGS, X, Y, TABLE, -1, 4, 8, 2,
                                           2, 3, 1, 1, 1, 1};
  int32_t copy[2 + NNW_COPY2D_NARGS] = {NNW_OP_COPY2D, NNW_COPY2D_NARGS, Y, Y2, 1, 24, 24, 24};
  int32_t first[2 + NNW_COPY2D_NARGS] = {NNW_OP_COPY2D, NNW_COPY2D_NARGS, X, 124, 1, 4, 4, 4};
  int32_t words[64];
  uint32_t n = 0;
  memcpy(words + n, first, sizeof first), n += sizeof first / 4;   /* op 0: runs */
  memcpy(words + n, op, sizeof op), n += sizeof op / 4;         /* op 1: may fail */
  memcpy(words + n, copy, sizeof copy), n += sizeof copy / 4;   /* op 2: must not run after a failure */
  static const int32_t bad[][5] = {{0, 6, 0, 1, 2}, {0, 4, 0, -2, 2}, {-1, 4, 0, 1, 2}};
  for (int k = 0; k < 3; k++) {
    uint8_t *arena = arena_new(ARENA_BYTES);
    memcpy(arena + TABLE, bad[k], sizeof bad[k]);
    for (int i = 0; i < 8; i++) *at(arena, X + 4 * i) = (float)i;
    struct plan p = plan_build(NULL, 0, words, n, ARENA_BYTES, NULL, 0);
    int status = nnw_plan_load(p.bytes, p.size, arena, ARENA_BYTES, NULL);
    memset(arena + Y2, 0x7F, 24);
    memcpy(arena + TABLE, bad[k], sizeof bad[k]);
    memset(arena + Y, 0x55, 24);
    if (status == NNW_OK) status = nnw_plan_run(p.bytes, arena);
    uint8_t marks[24];
    memset(marks, 0x55, 24);
    expect(status == NNW_BAD_INDEX && nnw_plan_failed_op() == 1, "gather_axes bad table %d: status %d op %d", k,
           status, nnw_plan_failed_op());
    expect(memcmp(arena + Y, marks, 24) == 0, "gather_axes bad table %d: y written", k);
    memset(marks, 0x7F, 24);
    expect(memcmp(arena + Y2, marks, 24) == 0, "gather_axes bad table %d: the op after it ran", k);
    memcpy(arena + TABLE, good, sizeof good);
    status = nnw_plan_run(p.bytes, arena);
    expect(status == NNW_OK && nnw_plan_failed_op() == -1 && *at(arena, Y2 + 4 * 5) == 6.0f,
           "gather_axes: the run after a failure gave %d", status);
    plan_free(&p);
    free(arena);
  }
}

void test_gather_axes(void) {
  static const int32_t dims[6][6] = {{7}, {3, 5}, {2, 3, 4}, {2, 1, 3, 2}, {1, 2, 2, 3, 2}, {2, 1, 2, 2, 1, 3}};
  static const int32_t one[1] = {1}, two[1] = {2};
  static const int sizes[] = {1, 2, 4, 8};
  for (int k = 0; k < 4; k++)
    for (int r = 1; r <= 6; r++)
      for (int order = 0; order < 2; order++) {
        gather_axes_case(r, dims[r - 1], sizes[k], 0, order);
        gather_axes_case(r, dims[r - 1], sizes[k], 1, order);
      }
  for (int k = 0; k < 4; k++) {   /* one-element rows: all pad, or all a run */
    gather_axes_case(1, one, sizes[k], 1, 0);
    gather_axes_case(1, two, sizes[k], 0, 1);
  }
  gather_axes_refusals();
  gather_axes_run_errors();
}

/* ---- gather ---------------------------------------------------------------------------------- */

static void gather_case(int32_t outer, int32_t n, int32_t n_idx, int32_t inner, int esize, int32_t dtype, int order) {
  int isz = dtype == 7 ? 8 : 4;
  uint64_t row = (uint64_t)inner * esize;
  uint64_t bytes[3] = {outer * n * row, (uint64_t)n_idx * isz, outer * n_idx * row};
  int32_t off[3];
  uint32_t arena_bytes = layout8(bytes, 3, order, off);
  uint8_t *arena = arena_new(arena_bytes);
  fill_bytes(arena + off[0], bytes[0]);
  int64_t *ids = malloc(sizeof(int64_t) * (size_t)n_idx);
  for (int32_t j = 0; j < n_idx; j++) {
    ids[j] = (int64_t)(rng_u32() % (uint32_t)(2 * n)) - n;   /* [-n, n) */
    if (dtype == 7) memcpy(arena + off[1] + 8 * j, &ids[j], 8);
    else { int32_t v = (int32_t)ids[j]; memcpy(arena + off[1] + 4 * j, &v, 4); }
  }
  uint8_t *want = malloc(bytes[2]);
  for (int32_t o = 0; o < outer; o++)
    for (int32_t j = 0; j < n_idx; j++)
      memcpy(want + (o * n_idx + j) * row, arena + off[0] + (o * n + (ids[j] < 0 ? ids[j] + n : ids[j])) * row, row);
  int32_t args[NNW_GATHER_NARGS] = {off[0], off[1], off[2], esize, dtype, outer, n, n_idx, inner};
  int status = one_op(NNW_OP_GATHER, args, NNW_GATHER_NARGS, arena, arena_bytes);
  expect(status == NNW_OK && memcmp(arena + off[2], want, bytes[2]) == 0, "gather %dx%dx%d esize %d dtype %d: %d",
         outer, n, inner, esize, dtype, status);
  /* one index out of range (n, or -n - 1): the run stops before y is written */
  int64_t big = rng_u32() % 2 ? n : -(int64_t)n - 1;
  if (dtype == 7) memcpy(arena + off[1] + 8 * (n_idx - 1), &big, 8);
  else { int32_t v = (int32_t)big; memcpy(arena + off[1] + 4 * (n_idx - 1), &v, 4); }
  memset(arena + off[2], 0x55, bytes[2]);
  memset(want, 0x55, bytes[2]);
  status = one_op(NNW_OP_GATHER, args, NNW_GATHER_NARGS, arena, arena_bytes);
  expect(status == NNW_BAD_INDEX && memcmp(arena + off[2], want, bytes[2]) == 0,
         "gather index %lld of %d: status %d or y written", (long long)big, n, status);
  free(want);
  free(ids);
  free(arena);
}

static void gather_refusals(void) {
  /* x: [2, 4, 3] f32 at 0 (96 bytes); idx: 2 int64 at 96; y: [2, 2, 3] at 112 (48 bytes) */
  int32_t ok[NNW_GATHER_NARGS] = {0, 96, 112, 4, 7, 2, 4, 2, 3};
  expect(load_status(NNW_OP_GATHER, ok, NNW_GATHER_NARGS, 160) == NNW_OK, "gather: valid refused");
  int32_t a[NNW_GATHER_NARGS];
#define REFUSED(field, value, status)                                                              \
  memcpy(a, ok, sizeof a);                                                                        \
  a[field] = value;                                                                               \
  expect(load_status(NNW_OP_GATHER, a, NNW_GATHER_NARGS, 160) == (status), "gather: %s = %d not refused", \
         #field, value)
  REFUSED(NNW_GATHER_ESIZE, 5, NNW_BAD_ARGS);
  REFUSED(NNW_GATHER_IDX_DTYPE, 1, NNW_BAD_ARGS);
  REFUSED(NNW_GATHER_OUTER, 0, NNW_BAD_ARGS);
  REFUSED(NNW_GATHER_AXIS_DIM, -1, NNW_BAD_ARGS);
  REFUSED(NNW_GATHER_N_IDX, 0, NNW_BAD_ARGS);
  REFUSED(NNW_GATHER_INNER, 1 << 30, NNW_OUT_OF_BOUNDS);
  REFUSED(NNW_GATHER_AXIS_DIM, 5, NNW_BAD_ARGS);        /* x now overlaps idx... and y */
  REFUSED(NNW_GATHER_IDX, 100, NNW_BAD_ARGS);           /* int64 misaligned */
  REFUSED(NNW_GATHER_IDX, 120, NNW_BAD_ARGS);           /* overlaps y */
  REFUSED(NNW_GATHER_Y, 88, NNW_BAD_ARGS);              /* overlaps x */
  REFUSED(NNW_GATHER_Y, 120, NNW_OUT_OF_BOUNDS);
  REFUSED(NNW_GATHER_X, -4, NNW_OUT_OF_BOUNDS);
#undef REFUSED
}

void test_gather(void) {
  static const int sizes[] = {1, 2, 4, 8};
  for (int k = 0; k < 4; k++)
    for (int order = 0; order < 2; order++) {
      gather_case(1, 10, 4, 3, sizes[k], 7, order);
      gather_case(3, 5, 7, 1, sizes[k], 6, order);
      gather_case(2, 1, 3, 5, sizes[k], 7, order);
      gather_case(4, 6, 1, 2, sizes[k], 6, order);
    }
  gather_refusals();
}

/* ---- gather_elements ------------------------------------------------------------------------ */

/* x [3, 5, 4] f32, idx/y [2, 3, 4]-ish along axis; indices random in [-n, n) then one made bad */
static void gather_elements_case(int axis, int32_t dtype, int order) {
  static const int32_t xd[3] = {3, 5, 4};
  int32_t d[3] = {2, 3, 4}, s[3] = {20, 4, 1};
  d[axis] = 6;   /* longer than x along the axis: indices repeat */
  int32_t count = d[0] * d[1] * d[2], n = xd[axis], isz = dtype == 7 ? 8 : 4;
  uint64_t bytes[3] = {60 * 4, (uint64_t)count * isz, (uint64_t)count * 4};
  int32_t off[3];
  uint32_t arena_bytes = layout8(bytes, 3, order, off);
  uint8_t *arena = arena_new(arena_bytes);
  fill_random(at(arena, off[0]), 60, -1, 1);
  float *want = malloc(bytes[2]);
  for (int32_t i = 0, k = 0; i < d[0]; i++)
    for (int32_t j = 0; j < d[1]; j++)
      for (int32_t l = 0; l < d[2]; l++, k++) {
        int64_t v = (int64_t)(rng_u32() % (uint32_t)(2 * n)) - n;
        if (dtype == 7) memcpy(arena + off[1] + 8 * k, &v, 8);
        else { int32_t w = (int32_t)v; memcpy(arena + off[1] + 4 * k, &w, 4); }
        int32_t c[3] = {i, j, l};
        c[axis] = (int32_t)(v < 0 ? v + n : v);
        want[k] = *at(arena, off[0] + 4 * (c[0] * s[0] + c[1] * s[1] + c[2] * s[2]));
      }
  int32_t args[NNW_GATHER_ELEMENTS_NARGS] = {off[0], off[1], off[2], 4, dtype, 3, axis, n, d[0], d[1], d[2], 1, 1, 1,
                                             s[0], s[1], s[2], 0, 0, 0};
  int status = one_op(NNW_OP_GATHER_ELEMENTS, args, NNW_GATHER_ELEMENTS_NARGS, arena, arena_bytes);
  expect(status == NNW_OK && memcmp(at(arena, off[2]), want, bytes[2]) == 0, "gather_elements axis %d dtype %d: %d",
         axis, dtype, status);
  int64_t big = n;
  if (dtype == 7) memcpy(arena + off[1] + 8 * (count / 2), &big, 8);
  else { int32_t w = n; memcpy(arena + off[1] + 4 * (count / 2), &w, 4); }
  status = one_op(NNW_OP_GATHER_ELEMENTS, args, NNW_GATHER_ELEMENTS_NARGS, arena, arena_bytes);
  expect(status == NNW_BAD_INDEX, "gather_elements index %d of %d: status %d", n, n, status);
  free(want);
  free(arena);
}

void test_gather_elements(void) {
  for (int axis = 0; axis < 3; axis++)
    for (int order = 0; order < 2; order++) {
      gather_elements_case(axis, 7, order);
      gather_elements_case(axis, 6, order);
    }
  /* x [3, 4] f32 at 0 (48 bytes), idx [3, 2] int32 at 48, y [3, 2] at 80 */
  int32_t ok[NNW_GATHER_ELEMENTS_NARGS] = {0, 48, 80, 4, 6, 2, 1, 4, 3, 2, 1, 1, 1, 1, 4, 1, 0, 0, 0, 0};
  expect(load_status(NNW_OP_GATHER_ELEMENTS, ok, NNW_GATHER_ELEMENTS_NARGS, 128) == NNW_OK,
         "gather_elements: valid refused");
  int32_t a[NNW_GATHER_ELEMENTS_NARGS];
#define REFUSED(field, value, status)                                                              \
  memcpy(a, ok, sizeof a);                                                                        \
  a[field] = value;                                                                               \
  expect(load_status(NNW_OP_GATHER_ELEMENTS, a, NNW_GATHER_ELEMENTS_NARGS, 128) == (status),        \
         "gather_elements: %s = %d not refused", #field, value)
  REFUSED(NNW_GATHER_ELEMENTS_RANK, 7, NNW_BAD_ARGS);
  REFUSED(NNW_GATHER_ELEMENTS_AXIS, 2, NNW_BAD_ARGS);
  REFUSED(NNW_GATHER_ELEMENTS_AXIS, -1, NNW_BAD_ARGS);
  REFUSED(NNW_GATHER_ELEMENTS_AXIS_DIM, 0, NNW_BAD_ARGS);
  REFUSED(NNW_GATHER_ELEMENTS_AXIS_DIM, 13, NNW_BAD_ARGS);    /* x reaches into y */
  REFUSED(NNW_GATHER_ELEMENTS_AXIS_DIM, 1 << 30, NNW_OUT_OF_BOUNDS);
  REFUSED(NNW_GATHER_ELEMENTS_S0, -4, NNW_BAD_ARGS);
  REFUSED(NNW_GATHER_ELEMENTS_IDX_DTYPE, 9, NNW_BAD_ARGS);
  REFUSED(NNW_GATHER_ELEMENTS_D1, 0, NNW_BAD_ARGS);
  REFUSED(NNW_GATHER_ELEMENTS_Y, 108, NNW_OUT_OF_BOUNDS);
  REFUSED(NNW_GATHER_ELEMENTS_Y, 40, NNW_BAD_ARGS);
#undef REFUSED
}

/* ---- resize_linear ---------------------------------------------------------------------------- */

static void resize_linear_case(const int32_t *dm, int order) {
  enum { OUTER, H_IN, W_IN, MID, INNER, H_OUT, W_OUT };
  int32_t plane = dm[OUTER] * dm[MID] * dm[INNER];
  uint64_t x_n = (uint64_t)plane * dm[H_IN] * dm[W_IN], y_n = (uint64_t)plane * dm[H_OUT] * dm[W_OUT];
  uint64_t bytes[6] = {x_n * 4, y_n * 4, 8 * (uint64_t)dm[H_OUT], 8 * (uint64_t)dm[H_OUT], 8 * (uint64_t)dm[W_OUT],
                       8 * (uint64_t)dm[W_OUT]};
  int32_t off[6];
  uint32_t arena_bytes = layout(bytes, 6, order, off);
  uint8_t *arena = arena_new(arena_bytes);
  fill_random(at(arena, off[0]), x_n, -1, 1);
  int32_t *hi = (int32_t *)(void *)(arena + off[2]), *wi = (int32_t *)(void *)(arena + off[4]);
  float *hw = at(arena, off[3]), *ww = at(arena, off[5]);
  for (int32_t i = 0; i < 2 * dm[H_OUT]; i++) hi[i] = (int32_t)(rng_u32() % (uint32_t)dm[H_IN]), hw[i] = rng_float(0, 1);
  for (int32_t i = 0; i < 2 * dm[W_OUT]; i++) wi[i] = (int32_t)(rng_u32() % (uint32_t)dm[W_IN]), ww[i] = rng_float(0, 1);
  double *want = malloc(sizeof(double) * y_n);
  const float *x = at(arena, off[0]);
  size_t k = 0;
  for (int32_t o = 0; o < dm[OUTER]; o++)
    for (int32_t i = 0; i < dm[H_OUT]; i++)
      for (int32_t m = 0; m < dm[MID]; m++)
        for (int32_t j = 0; j < dm[W_OUT]; j++)
          for (int32_t c = 0; c < dm[INNER]; c++, k++) {
            double acc = 0;
            for (int a = 0; a < 2; a++)
              for (int b = 0; b < 2; b++)
                acc += (double)hw[2 * i + a] * ww[2 * j + b] *
                       x[(((size_t)o * dm[H_IN] + hi[2 * i + a]) * dm[MID] + m) * dm[W_IN] * dm[INNER] +
                         (size_t)wi[2 * j + b] * dm[INNER] + c];
            want[k] = acc;
          }
  int32_t args[NNW_RESIZE_LINEAR_NARGS] = {off[0], off[1], off[2], off[3], off[4], off[5], dm[OUTER], dm[H_IN],
                                           dm[W_IN], dm[MID], dm[INNER], dm[H_OUT], dm[W_OUT]};
  if (one_op(NNW_OP_RESIZE_LINEAR, args, NNW_RESIZE_LINEAR_NARGS, arena, arena_bytes) == NNW_OK)
    check_close("resize_linear", at(arena, off[1]), want, NULL, y_n, 1e-6, 1e-5);
  else
    expect(0, "resize_linear refused valid arguments");
  wi[2 * dm[W_OUT] - 1] = dm[W_IN];   /* one index past the axis */
  expect(one_op(NNW_OP_RESIZE_LINEAR, args, NNW_RESIZE_LINEAR_NARGS, arena, arena_bytes) == NNW_BAD_INDEX,
         "resize_linear: an index past w_in ran");
  wi[2 * dm[W_OUT] - 1] = 0;
  hi[0] = -1;
  expect(one_op(NNW_OP_RESIZE_LINEAR, args, NNW_RESIZE_LINEAR_NARGS, arena, arena_bytes) == NNW_BAD_INDEX,
         "resize_linear: a negative index ran");
  free(want);
  free(arena);
}

void test_resize_linear(void) {
  static const int32_t cases[][7] = {
      {2, 4, 5, 1, 1, 8, 10},   /* NCHW upsample */
      {1, 6, 8, 1, 1, 3, 5},    /* downsample */
      {1, 3, 4, 1, 3, 6, 8},    /* NHWC: channels inner */
      {2, 1, 7, 1, 1, 1, 11},   /* 1-D */
      {1, 3, 4, 2, 2, 5, 2},    /* axes apart, with mid and inner */
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    for (int order = 0; order < 2; order++) resize_linear_case(cases[c], order);
  /* x [1,2,2] at 0 (16 bytes), y [1,2,2] at 16; tables of 4 entries at 32, 48, 64, 80 */
  int32_t ok[NNW_RESIZE_LINEAR_NARGS] = {0, 16, 32, 48, 64, 80, 1, 2, 2, 1, 1, 2, 2};
  expect(load_status(NNW_OP_RESIZE_LINEAR, ok, NNW_RESIZE_LINEAR_NARGS, 96) == NNW_OK, "resize_linear: valid refused");
  int32_t a[NNW_RESIZE_LINEAR_NARGS];
#define REFUSED(field, value, status)                                                              \
  memcpy(a, ok, sizeof a);                                                                        \
  a[field] = value;                                                                               \
  expect(load_status(NNW_OP_RESIZE_LINEAR, a, NNW_RESIZE_LINEAR_NARGS, 96) == (status),              \
         "resize_linear: %s = %d not refused", #field, value)
  REFUSED(NNW_RESIZE_LINEAR_OUTER, 0, NNW_BAD_ARGS);
  REFUSED(NNW_RESIZE_LINEAR_W_OUT, -2, NNW_BAD_ARGS);
  REFUSED(NNW_RESIZE_LINEAR_MID, 1 << 30, NNW_OUT_OF_BOUNDS);
  REFUSED(NNW_RESIZE_LINEAR_X, 2, NNW_BAD_ARGS);
  REFUSED(NNW_RESIZE_LINEAR_Y, 8, NNW_BAD_ARGS);         /* overlaps x */
  REFUSED(NNW_RESIZE_LINEAR_H_IDX, 20, NNW_BAD_ARGS);    /* overlaps y */
  REFUSED(NNW_RESIZE_LINEAR_W_WT, 90, NNW_BAD_ARGS);     /* misaligned */
  REFUSED(NNW_RESIZE_LINEAR_W_WT, 88, NNW_OUT_OF_BOUNDS);
  REFUSED(NNW_RESIZE_LINEAR_H_OUT, 3, NNW_BAD_ARGS);     /* y [1,3,2] reaches the tables */
#undef REFUSED
}
