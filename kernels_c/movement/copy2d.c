/* copy2d: rows of bytes between strided places (Reshape, Flatten, Concat, Slice of rows).
 * Any dtype and alignment. Rows are copied in order, each as a memmove, so overlapping copies
 * behave as that loop would (the one-memcpy fast path only runs when the ranges are apart). */
#include "internal.h"

int nnw_validate_copy2d(const int32_t *v, uint32_t arena_bytes) {
  int32_t rows = v[NNW_COPY2D_ROWS], row_bytes = v[NNW_COPY2D_ROW_BYTES];
  int32_t src_stride = v[NNW_COPY2D_SRC_STRIDE], dst_stride = v[NNW_COPY2D_DST_STRIDE];
  if (rows <= 0 || row_bytes <= 0 || src_stride < 0 || dst_stride < 0) return NNW_BAD_ARGS;
  uint64_t last = (uint64_t)rows - 1;
  NNW_TRY(nnw_check_tensor(v[NNW_COPY2D_SRC], nnw_add(nnw_mul(last, (uint64_t)src_stride),
                                                      (uint64_t)row_bytes), arena_bytes, 0, 0));
  NNW_TRY(nnw_check_tensor(v[NNW_COPY2D_DST], nnw_add(nnw_mul(last, (uint64_t)dst_stride),
                                                      (uint64_t)row_bytes), arena_bytes, 0, 0));
  return NNW_OK;
}

void nnw_run_copy2d(const int32_t *v, uint8_t *arena) {
  int32_t rows = v[NNW_COPY2D_ROWS];
  size_t row_bytes = (size_t)v[NNW_COPY2D_ROW_BYTES];
  size_t src_stride = (size_t)v[NNW_COPY2D_SRC_STRIDE], dst_stride = (size_t)v[NNW_COPY2D_DST_STRIDE];
  const uint8_t *src = arena + v[NNW_COPY2D_SRC];
  uint8_t *dst = arena + v[NNW_COPY2D_DST];
  size_t total = row_bytes * (size_t)rows;
  int apart = dst + total <= src || src + total <= dst;
  if (src_stride == row_bytes && dst_stride == row_bytes && apart) {
    memcpy(dst, src, total);
    return;
  }
  for (int32_t r = 0; r < rows; r++) memmove(dst + r * dst_stride, src + r * src_stride, row_bytes);
}
