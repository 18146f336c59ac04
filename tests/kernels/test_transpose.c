/* transpose against a reference gather: every rank, element sizes 1/2/4/8, permutations,
 * broadcast (stride 0) axes, tensors flush against the arena's end; and the validator's refusals. */
#include <stdlib.h>

#include "harness.h"
#include "tests.h"

/* x of x_dims (rank r) permuted by perm into y; returns nothing, checks bytes */
static void transpose_case(int rank, const int32_t *x_dims, const int *perm, int esize, int y_first) {
  int32_t x_strides[6], d[6] = {1, 1, 1, 1, 1, 1}, s[6] = {0};
  uint64_t count = 1;
  for (int i = rank - 1, acc = 1; i >= 0; i--) {
    x_strides[i] = acc;
    acc *= x_dims[i];
  }
  for (int i = 0; i < rank; i++) {
    d[i] = x_dims[perm[i]];
    s[i] = x_strides[perm[i]];
    count *= (uint64_t)d[i];
  }
  uint64_t bytes[2] = {count * (uint64_t)esize, count * (uint64_t)esize};
  int32_t off[2];
  uint32_t arena_bytes = layout(bytes, 2, y_first, off);
  int32_t x = off[0] - off[0] % esize, y = off[1] - off[1] % esize;
  uint8_t *arena = arena_new(arena_bytes);
  for (uint64_t i = 0; i < bytes[0]; i++) arena[x + i] = (uint8_t)rng_u32();
  uint8_t *want = malloc(bytes[1]);
  for (uint64_t o = 0; o < count; o++) {   /* output index o -> coordinates -> input offset */
    uint64_t rest = o, in = 0;
    for (int i = rank - 1; i >= 0; i--) {
      in += (rest % (uint64_t)d[i]) * (uint64_t)s[i];
      rest /= (uint64_t)d[i];
    }
    memcpy(want + o * esize, arena + x + in * esize, (size_t)esize);
  }
  int32_t args[NNW_TRANSPOSE_NARGS] = {x, y, esize, rank, d[0], d[1], d[2], d[3], d[4], d[5],
                                       s[0], s[1], s[2], s[3], s[4], s[5]};
  if (run_op(NNW_OP_TRANSPOSE, args, NNW_TRANSPOSE_NARGS, arena, arena_bytes) == NNW_OK)
    expect(memcmp(arena + y, want, bytes[1]) == 0, "transpose rank %d esize %d perm %d%d%d...", rank,
           esize, perm[0], rank > 1 ? perm[1] : 0, rank > 2 ? perm[2] : 0);
  free(want);
  free(arena);
}

static int transpose_status(const int32_t *args, uint32_t arena_bytes) {
  return load_status(NNW_OP_TRANSPOSE, args, NNW_TRANSPOSE_NARGS, arena_bytes);
}

void test_transpose(void) {
  static const int32_t d2[] = {5, 7}, d3[] = {2, 3, 5}, d4[] = {1, 4, 3, 6}, d5[] = {2, 3, 1, 4, 5},
                       d6[] = {2, 1, 3, 2, 2, 3}, d1[] = {9};
  static const int p1[] = {0}, p2[] = {1, 0}, p3a[] = {2, 0, 1}, p3b[] = {0, 2, 1}, p4[] = {0, 2, 3, 1},
                   p4b[] = {3, 1, 0, 2}, p5[] = {4, 2, 0, 3, 1}, p6[] = {5, 3, 1, 0, 4, 2}, id4[] = {0, 1, 2, 3};
  static const int sizes[] = {1, 2, 4, 8};
  for (int k = 0; k < 4; k++) {
    for (int first = 0; first < 2; first++) {
      transpose_case(1, d1, p1, sizes[k], first);
      transpose_case(2, d2, p2, sizes[k], first);
      transpose_case(3, d3, p3a, sizes[k], first);
      transpose_case(3, d3, p3b, sizes[k], first);
      transpose_case(4, d4, p4, sizes[k], first);   /* NCHW -> NHWC */
      transpose_case(4, d4, p4b, sizes[k], first);
      transpose_case(4, d4, id4, sizes[k], first);  /* identity: memcpy rows */
      transpose_case(5, d5, p5, sizes[k], first);
      transpose_case(6, d6, p6, sizes[k], first);
    }
  }
  /* refusals: bad element size, rank, dims, strides, misalignment, overlap, reach past the arena */
  int32_t ok[NNW_TRANSPOSE_NARGS] = {0, 64, 4, 2, 3, 4, 1, 1, 1, 1, 1, 3, 0, 0, 0, 0};
  expect(transpose_status(ok, 128) == NNW_OK, "transpose: valid args refused");
  int32_t a[NNW_TRANSPOSE_NARGS];
#define REFUSED(field, value, status)                                                         \
  memcpy(a, ok, sizeof a);                                                                   \
  a[field] = value;                                                                          \
  expect(transpose_status(a, 128) == (status), "transpose: %s = %d gave %d", #field, value, transpose_status(a, 128))
  REFUSED(NNW_TRANSPOSE_ESIZE, 3, NNW_BAD_ARGS);
  REFUSED(NNW_TRANSPOSE_RANK, 0, NNW_BAD_ARGS);
  REFUSED(NNW_TRANSPOSE_RANK, 7, NNW_BAD_ARGS);
  REFUSED(NNW_TRANSPOSE_D0, 0, NNW_BAD_ARGS);
  REFUSED(NNW_TRANSPOSE_S1, -1, NNW_BAD_ARGS);
  REFUSED(NNW_TRANSPOSE_X, 2, NNW_BAD_ARGS);              /* not a multiple of esize */
  REFUSED(NNW_TRANSPOSE_Y, 16, NNW_BAD_ARGS);             /* overlaps x (48 bytes at 0) */
  REFUSED(NNW_TRANSPOSE_S0, 1000, NNW_OUT_OF_BOUNDS);     /* reads past the arena */
  REFUSED(NNW_TRANSPOSE_Y, 120, NNW_OUT_OF_BOUNDS);       /* writes past the arena */
  REFUSED(NNW_TRANSPOSE_D1, 1 << 30, NNW_OUT_OF_BOUNDS);
#undef REFUSED
}
