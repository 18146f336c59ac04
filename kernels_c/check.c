/* Argument checks shared by the op validators. */
#include "internal.h"

int nnw_check_tensor(int32_t t, uint64_t bytes, uint32_t arena_bytes, int optional, int f32) {
  if (t == -1 && optional) return NNW_OK;
  if (t < 0) return NNW_OUT_OF_BOUNDS;
  if (f32 && t % 4 != 0) return NNW_BAD_ARGS;
  if (nnw_add((uint64_t)t, bytes) > arena_bytes) return NNW_OUT_OF_BOUNDS;
  return NNW_OK;
}

int nnw_check_positive(const int32_t *v, int count) {
  for (int i = 0; i < count; i++)
    if (v[i] <= 0) return NNW_BAD_ARGS;
  return NNW_OK;
}
