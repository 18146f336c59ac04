/* q8_add (QLinearAdd): both inputs rescaled to the output's scale in float, summed, rounded half
 * to even and saturated, with elementwise/bcast.h's broadcasting (merged dims, strides 0 where broadcast). */
#include "elementwise/bcast.h"
#include "q8.h"

struct q8_add {
  int32_t a, b, y, dtype, a_mult, b_mult, a_zp, b_zp, y_zp, y_min, y_max, rank;
  int32_t d[NNW_BCAST_MAX_RANK], as[NNW_BCAST_MAX_RANK], bs[NNW_BCAST_MAX_RANK];
};
typedef char q8_add_args_match_ops_def[sizeof(struct q8_add) == 4 * NNW_Q8_ADD_NARGS ? 1 : -1];

static struct q8_add decode(const int32_t *v) {
  struct q8_add p;
  memcpy(&p, v, sizeof p); /* the field order is ops.def's */
  return p;
}

int nnw_validate_q8_add(const int32_t *args, uint32_t arena_bytes) {
  struct q8_add p = decode(args);
  if (!nnw_q8_is_q(p.dtype) || p.rank < 0 || p.rank > NNW_BCAST_MAX_RANK) return NNW_BAD_ARGS;
  int32_t lo = nnw_q8_min(p.dtype), hi = nnw_q8_max(p.dtype);
  if (p.a_zp < lo || p.a_zp > hi || p.b_zp < lo || p.b_zp > hi) return NNW_BAD_ARGS;
  NNW_TRY(nnw_q8_check_out(p.dtype, p.y_zp, p.y_min, p.y_max));
  uint64_t count, ext[2]; /* elements of y; elements a and b span */
  NNW_TRY(nnw_bcast_extents(args + NNW_Q8_ADD_RANK, 2, &count, ext));
  NNW_TRY(nnw_check_typed(p.a, ext[0], p.dtype, arena_bytes, 0));
  NNW_TRY(nnw_check_typed(p.b, ext[1], p.dtype, arena_bytes, 0));
  NNW_TRY(nnw_check_typed(p.y, count, p.dtype, arena_bytes, 0));
  NNW_TRY(nnw_check_apart(p.a, ext[0], p.y, count, 1));
  NNW_TRY(nnw_check_apart(p.b, ext[1], p.y, count, 1));
  return NNW_OK;
}

void nnw_run_q8_add(const int32_t *args, uint8_t *arena) {
  struct q8_add p = decode(args);
  float am = nnw_arg_f32(p.a_mult), bm = nnw_arg_f32(p.b_mult);
  struct nnw_bcast bc;
  nnw_bcast_init(&bc, args + NNW_Q8_ADD_RANK, 2);
  const uint8_t *a = arena + p.a, *b = arena + p.b;
  uint8_t *y = arena + p.y;
  for (size_t row = 0; row < bc.rows; row++) {
    ptrdiff_t off[2];
    nnw_bcast_row(&bc, off);
    for (int32_t e = 0; e < bc.d[0]; e++) {
      float v = am * (float)(nnw_q8_get(a, p.dtype, (size_t)(off[0] + e * bc.s[0][0])) - p.a_zp) +
                bm * (float)(nnw_q8_get(b, p.dtype, (size_t)(off[1] + e * bc.s[1][0])) - p.b_zp);
      *y++ = (uint8_t)nnw_q8_round_sat(v, p.y_zp, p.y_min, p.y_max);
    }
  }
}
