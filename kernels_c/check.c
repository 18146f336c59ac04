/* Argument checks shared by the op validators. */
#include "internal.h"

/* The extents of the validation under way (plan.c sets them around nnw_plan_load_at /
 * nnw_plan_check_at): [lo, hi) pairs, offsets from the base pointer; none otherwise. */
static const uint32_t *extents = NULL;
static int32_t n_extents = 0;

void nnw_set_extents(const uint32_t *pairs, int32_t count) {
  extents = count > 0 ? pairs : NULL;
  n_extents = count > 0 ? count : 0;
}

int nnw_check_tensor(int32_t t, uint64_t bytes, uint32_t arena_bytes, int optional, int f32) {
  if (t == -1 && optional) return NNW_OK;
  if (t < 0) return NNW_OUT_OF_BOUNDS;
  if (f32 && t % 4 != 0) return NNW_BAD_ARGS;
  uint64_t end = nnw_add((uint64_t)t, bytes);
  if (end > arena_bytes) return NNW_OUT_OF_BOUNDS;
  if (n_extents == 0) return NNW_OK;
  for (int32_t i = 0; i < n_extents; i++)   /* a tensor lies within one allocated block */
    if ((uint32_t)t >= extents[2 * i] && end <= extents[2 * i + 1]) return NNW_OK;
  return NNW_OUT_OF_BOUNDS;
}

int nnw_check_apart(int32_t a, uint64_t a_bytes, int32_t b, uint64_t b_bytes, int same_ok) {
  if (a < 0 || b < 0 || a_bytes == 0 || b_bytes == 0) return NNW_OK; /* absent */
  if (same_ok && a == b && a_bytes == b_bytes) return NNW_OK;
  uint64_t a0 = (uint64_t)a, b0 = (uint64_t)b;
  return a0 + a_bytes <= b0 || b0 + b_bytes <= a0 ? NNW_OK : NNW_BAD_ARGS;
}

int nnw_check_positive(const int32_t *v, int count) {
  for (int i = 0; i < count; i++)
    if (v[i] <= 0) return NNW_BAD_ARGS;
  return NNW_OK;
}

int nnw_dtype_size(int32_t dtype) {
  switch (dtype) {
    case NNW_U8: case NNW_I8: case NNW_BOOL: return 1;
    case NNW_U16: case NNW_I16: case NNW_F16: return 2;
    case NNW_F32: case NNW_I32: case NNW_U32: return 4;
    case NNW_I64: case NNW_U64: case NNW_F64: return 8;
    default: return 0;
  }
}

int nnw_check_typed(int32_t t, uint64_t count, int32_t dtype, uint32_t arena_bytes, int optional) {
  int size = nnw_dtype_size(dtype);
  if (size == 0) return NNW_BAD_ARGS;
  if (t >= 0 && t % size != 0) return NNW_BAD_ARGS;
  return nnw_check_tensor(t, nnw_mul(count, (uint64_t)size), arena_bytes, optional, 0);
}
