/* range: the arithmetic sequence of ONNX Range, for a plan whose n, start and delta are words
 * evaluated per run from the input dims (symbolic.py), so positions and masks derived from a
 * decoder's past length need no new plan per length. */
#include "internal.h"

static int elem_size(int32_t dtype) { return dtype == 1 ? 8 : dtype == 0 ? 4 : 0; }

int nnw_validate_range(const int32_t *v, uint32_t arena_bytes) {
  int32_t dtype = v[NNW_RANGE_DTYPE], n = v[NNW_RANGE_N];
  int size = elem_size(dtype);
  if (!size || n < 0) return NNW_BAD_ARGS;
  if (v[NNW_RANGE_Y] % size) return NNW_BAD_ARGS;
  return n ? nnw_check_tensor(v[NNW_RANGE_Y], nnw_mul((uint64_t)n, (uint64_t)size), arena_bytes, 0, 0) : NNW_OK;
}

void nnw_run_range(const int32_t *v, uint8_t *arena) {
  int32_t n = v[NNW_RANGE_N], start = v[NNW_RANGE_START], delta = v[NNW_RANGE_DELTA];
  uint8_t *y = arena + v[NNW_RANGE_Y];
  switch (v[NNW_RANGE_DTYPE]) {
    case 0: {
      int32_t *o = (int32_t *)y;
      for (int32_t i = 0; i < n; i++) o[i] = (int32_t)((uint32_t)start + (uint32_t)i * (uint32_t)delta);
      break;
    }
    default: {
      int64_t *o = (int64_t *)y;
      for (int32_t i = 0; i < n; i++) o[i] = (int64_t)start + (int64_t)i * (int64_t)delta;
    }
  }
}
