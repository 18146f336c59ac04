/* q8_add (QLinearAdd): both inputs rescaled to the output's scale in float, summed, rounded half
 * to even and saturated, with binary's broadcasting (merged dims, strides 0 where broadcast). */
#include "q8.h"

#define MAX_RANK 6

struct q8_add {
  int32_t a, b, y, dtype, a_mult, b_mult, a_zp, b_zp, y_zp, y_min, y_max, rank;
  int32_t d[MAX_RANK], as[MAX_RANK], bs[MAX_RANK];
};
typedef char q8_add_args_match_ops_def[sizeof(struct q8_add) == 4 * NNW_Q8_ADD_NARGS ? 1 : -1];

static struct q8_add decode(const int32_t *v) {
  struct q8_add p;
  memcpy(&p, v, sizeof p); /* the field order is ops.def's */
  return p;
}

int nnw_validate_q8_add(const int32_t *args, uint32_t arena_bytes) {
  struct q8_add p = decode(args);
  if (!nnw_q8_is_q(p.dtype) || p.rank < 0 || p.rank > MAX_RANK) return NNW_BAD_ARGS;
  int32_t lo = nnw_q8_min(p.dtype), hi = nnw_q8_max(p.dtype);
  if (p.a_zp < lo || p.a_zp > hi || p.b_zp < lo || p.b_zp > hi) return NNW_BAD_ARGS;
  NNW_TRY(nnw_q8_check_out(p.dtype, p.y_zp, p.y_min, p.y_max));
  uint64_t count = 1, a_last = 0, b_last = 0;
  for (int i = 0; i < p.rank; i++) {
    if (p.d[i] <= 0 || p.as[i] < 0 || p.bs[i] < 0) return NNW_BAD_ARGS;
    uint64_t steps = (uint64_t)p.d[i] - 1;
    count = nnw_mul(count, (uint64_t)p.d[i]);
    a_last = nnw_add(a_last, nnw_mul(steps, (uint64_t)p.as[i]));
    b_last = nnw_add(b_last, nnw_mul(steps, (uint64_t)p.bs[i]));
  }
  NNW_TRY(nnw_check_typed(p.a, a_last + 1, p.dtype, arena_bytes, 0));
  NNW_TRY(nnw_check_typed(p.b, b_last + 1, p.dtype, arena_bytes, 0));
  NNW_TRY(nnw_check_typed(p.y, count, p.dtype, arena_bytes, 0));
  NNW_TRY(nnw_check_apart(p.a, a_last + 1, p.y, count, 1));
  NNW_TRY(nnw_check_apart(p.b, b_last + 1, p.y, count, 1));
  return NNW_OK;
}

void nnw_run_q8_add(const int32_t *args, uint8_t *arena) {
  struct q8_add p = decode(args);
  float am = nnw_arg_f32(p.a_mult), bm = nnw_arg_f32(p.b_mult);
  int32_t d[MAX_RANK] = {1}, idx[MAX_RANK] = {0};
  ptrdiff_t as[MAX_RANK] = {0}, bs[MAX_RANK] = {0};
  int r = 0;
  for (int i = p.rank - 1; i >= 0; i--) { /* merged dims, innermost first */
    if (p.d[i] == 1) continue;
    if (r > 0 && p.as[i] == as[r - 1] * d[r - 1] && p.bs[i] == bs[r - 1] * d[r - 1]) {
      d[r - 1] *= p.d[i];
      continue;
    }
    d[r] = p.d[i];
    as[r] = p.as[i];
    bs[r] = p.bs[i];
    r++;
  }
  if (r == 0) r = 1;
  const uint8_t *a = arena + p.a, *b = arena + p.b;
  uint8_t *y = arena + p.y;
  size_t rows = 1;
  for (int i = 1; i < r; i++) rows *= (size_t)d[i];
  for (size_t row = 0; row < rows; row++) {
    ptrdiff_t ao = 0, bo = 0;
    for (int i = 1; i < r; i++) {
      ao += idx[i] * as[i];
      bo += idx[i] * bs[i];
    }
    for (int32_t e = 0; e < d[0]; e++) {
      float v = am * (float)(nnw_q8_get(a, p.dtype, (size_t)(ao + e * as[0])) - p.a_zp) +
                bm * (float)(nnw_q8_get(b, p.dtype, (size_t)(bo + e * bs[0])) - p.b_zp);
      *y++ = (uint8_t)nnw_q8_round_sat(v, p.y_zp, p.y_min, p.y_max);
    }
    for (int i = 1; i < r && ++idx[i] == d[i]; i++) idx[i] = 0;
  }
}
