/* kv_append_rows: kv_append (attention_kv.c) on a key/value cache whose blocks hold more rows than
 * their tensors (a row capacity, wasm/region.py), so that GroupQueryAttention's present can be its
 * past's own block with the new rows written after the past's, as for a Concat present. Where the
 * new rows go is data (n_b from seqlens_k): the lengths are checked against the tensors' rows (p,
 * t), not the blocks' (p_rows, t_rows), so a seqlens_k that contradicts the past stops the run
 * instead of reading rows of the block no tensor holds. In place with t > p the host chose the
 * past's block because every n_b is p: checked here too, so a wrong guess is an error, never a
 * past overwritten. */
#include "internal.h"

/* elements spanned by x's [batch, s, heads, d] rows at strides bs, rs, hs (d contiguous) */
static uint64_t x_span(int32_t batch, int32_t bs, int32_t s, int32_t rs, int32_t heads, int32_t hs, int32_t d) {
  return nnw_add(nnw_add(nnw_add(nnw_mul((uint64_t)batch - 1, (uint64_t)bs), nnw_mul((uint64_t)s - 1, (uint64_t)rs)),
                         nnw_mul((uint64_t)heads - 1, (uint64_t)hs)), (uint64_t)d);
}

static uint64_t block_bytes(int32_t batch, int32_t heads, int32_t rows, int32_t d) {
  return nnw_mul(nnw_mul(nnw_mul(nnw_mul((uint64_t)batch, (uint64_t)heads), (uint64_t)rows), (uint64_t)d), 4);
}

int nnw_validate_kv_append_rows(const int32_t *v, uint32_t arena_bytes) {
  int32_t batch = v[NNW_KV_APPEND_ROWS_BATCH], heads = v[NNW_KV_APPEND_ROWS_HEADS], p = v[NNW_KV_APPEND_ROWS_P];
  int32_t t = v[NNW_KV_APPEND_ROWS_T], p_rows = v[NNW_KV_APPEND_ROWS_P_ROWS], t_rows = v[NNW_KV_APPEND_ROWS_T_ROWS];
  int32_t s = v[NNW_KV_APPEND_ROWS_S], d = v[NNW_KV_APPEND_ROWS_D];
  int32_t past = v[NNW_KV_APPEND_ROWS_PAST], x = v[NNW_KV_APPEND_ROWS_X], lens = v[NNW_KV_APPEND_ROWS_LENS];
  int32_t y = v[NNW_KV_APPEND_ROWS_Y];
  if (batch <= 0 || heads <= 0 || t <= 0 || s <= 0 || d <= 0 || p < 0 || s > t || p > p_rows || t > t_rows)
    return NNW_BAD_ARGS;
  if ((p == 0) != (past < 0) || v[NNW_KV_APPEND_ROWS_X_BS] < 0 || v[NNW_KV_APPEND_ROWS_X_RS] < 0 ||
      v[NNW_KV_APPEND_ROWS_X_HS] < 0)
    return NNW_BAD_ARGS;
  uint64_t p_bytes = block_bytes(batch, heads, p_rows, d), y_bytes = block_bytes(batch, heads, t_rows, d);
  uint64_t x_bytes = nnw_mul(x_span(batch, v[NNW_KV_APPEND_ROWS_X_BS], s, v[NNW_KV_APPEND_ROWS_X_RS], heads,
                                    v[NNW_KV_APPEND_ROWS_X_HS], d), 4);
  NNW_TRY(nnw_check_tensor(past, p_bytes, arena_bytes, 1, 1));
  NNW_TRY(nnw_check_tensor(x, x_bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_typed(lens, (uint64_t)batch, NNW_I32, arena_bytes, 1));
  NNW_TRY(nnw_check_tensor(y, y_bytes, arena_bytes, 0, 1));
  /* the same block (same offset and rows) is the in-place case; any other overlap is refused */
  NNW_TRY(nnw_check_apart(past, p_bytes, y, y_bytes, p_rows == t_rows && p <= t));
  NNW_TRY(nnw_check_apart(x, x_bytes, y, y_bytes, 0));
  return nnw_check_apart(lens, nnw_mul((uint64_t)batch, 4), y, y_bytes, 0);
}

static int64_t rows_kept(const int32_t *v, const uint8_t *arena, int32_t b) {
  int32_t lens = v[NNW_KV_APPEND_ROWS_LENS], n;
  if (lens < 0) return v[NNW_KV_APPEND_ROWS_P];
  memcpy(&n, arena + lens + 4 * (size_t)b, 4);
  return (int64_t)n + v[NNW_KV_APPEND_ROWS_LENS_ADD];
}

void nnw_run_kv_append_rows(const int32_t *v, uint8_t *arena) {
  int32_t batch = v[NNW_KV_APPEND_ROWS_BATCH], heads = v[NNW_KV_APPEND_ROWS_HEADS], p = v[NNW_KV_APPEND_ROWS_P];
  int32_t t = v[NNW_KV_APPEND_ROWS_T], s = v[NNW_KV_APPEND_ROWS_S], d = v[NNW_KV_APPEND_ROWS_D];
  size_t p_rows = (size_t)v[NNW_KV_APPEND_ROWS_P_ROWS], t_rows = (size_t)v[NNW_KV_APPEND_ROWS_T_ROWS];
  ptrdiff_t x_bs = v[NNW_KV_APPEND_ROWS_X_BS], x_rs = v[NNW_KV_APPEND_ROWS_X_RS], x_hs = v[NNW_KV_APPEND_ROWS_X_HS];
  const float *past = nnw_f32_at(arena, v[NNW_KV_APPEND_ROWS_PAST]), *x = nnw_f32_at(arena, v[NNW_KV_APPEND_ROWS_X]);
  float *y = nnw_f32_at(arena, v[NNW_KV_APPEND_ROWS_Y]);
  int same = past == y, grown = same && t > p;   /* grown: the past's block, rows appended after p */
  for (int32_t b = 0; b < batch; b++) {   /* every length checked before y is written */
    int64_t n = rows_kept(v, arena, b);
    if (n < 0 || n > p || n + s > t || (grown && n != p)) {
      nnw_run_fail(NNW_BAD_INDEX);
      return;
    }
  }
  size_t row = (size_t)d * sizeof(float);
  for (int32_t b = 0; b < batch; b++) {
    size_t n = (size_t)rows_kept(v, arena, b);
    for (int32_t h = 0; h < heads; h++) {
      size_t k = (size_t)b * heads + h;
      float *dst = y + k * t_rows * d;
      if (n && !same) memcpy(dst, past + k * p_rows * d, n * row);
      for (int32_t i = 0; i < s; i++) memcpy(dst + (n + i) * d, x + b * x_bs + i * x_rs + h * x_hs, row);
      if (!same || grown) memset(dst + (n + s) * d, 0, ((size_t)t - n - s) * row);
    }
  }
}
