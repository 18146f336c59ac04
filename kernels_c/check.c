/* Argument checks shared by the op validators. */
#include "internal.h"

int nnw_check_tensor(int32_t t, uint64_t bytes, uint32_t arena_bytes, int optional, int f32) {
  if (t == -1 && optional) return NNW_OK;
  if (t < 0) return NNW_OUT_OF_BOUNDS;
  if (f32 && t % 4 != 0) return NNW_BAD_ARGS;
  if (nnw_add((uint64_t)t, bytes) > arena_bytes) return NNW_OUT_OF_BOUNDS;
  return NNW_OK;
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
