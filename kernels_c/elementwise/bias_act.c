/* bias_act: y = act(x + bias) in one pass (com.microsoft BiasGelu, FastGelu with or without its
 * bias, QuickGelu, BiasAdd's add): the optimizer fuses a MatMul's bias Add into these, and two
 * separate ops would walk the activation twice. gelu is vmath.h's (unary.c's bits); the tanh form
 * is x sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3), as unary.c's. */
#include "act4.h"
#include "internal.h"
#include "simd.h"
#include "vmath.h"

enum { GELU = 0, GELU_TANH = 1, QUICK_GELU = 2, NONE = 3 };

int nnw_validate_bias_act(const int32_t *v, uint32_t arena_bytes) {
  int32_t rows = v[NNW_BIAS_ACT_ROWS], n = v[NNW_BIAS_ACT_N], act = v[NNW_BIAS_ACT_ACT];
  int32_t dims[] = {rows, n};
  NNW_TRY(nnw_check_positive(dims, 2));
  if (act < GELU || act > NONE) return NNW_BAD_ARGS;
  uint64_t row = nnw_mul((uint64_t)n, 4), bytes = nnw_mul(row, (uint64_t)rows);
  int32_t x = v[NNW_BIAS_ACT_X], bias = v[NNW_BIAS_ACT_BIAS], y = v[NNW_BIAS_ACT_Y];
  NNW_TRY(nnw_check_tensor(x, bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(y, bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(bias, row, arena_bytes, 1, 1));
  NNW_TRY(nnw_check_apart(x, bytes, y, bytes, 1));
  return nnw_check_apart(bias, row, y, bytes, 0);
}

static inline v4 act4(int32_t act, v4 x, v4 alpha) {
  switch (act) {
    case GELU: return v4_gelu(x);
    case GELU_TANH: {
      v4 u = v4_mul(x, v4_madd(v4_set1(1.0f), v4_set1(0.044715f), v4_mul(x, x)));
      return v4_mul(x, nnw_sigmoid4(v4_mul(v4_set1(1.595769121605730711f), u)));
    }
    case QUICK_GELU: return v4_mul(x, nnw_sigmoid4(v4_mul(alpha, x)));
    default: return x;
  }
}

void nnw_run_bias_act(const int32_t *v, uint8_t *arena) {
  int32_t rows = v[NNW_BIAS_ACT_ROWS], n = v[NNW_BIAS_ACT_N], act = v[NNW_BIAS_ACT_ACT];
  const float *x = nnw_f32_at(arena, v[NNW_BIAS_ACT_X]), *bias = nnw_f32_at(arena, v[NNW_BIAS_ACT_BIAS]);
  float *y = nnw_f32_at(arena, v[NNW_BIAS_ACT_Y]);
  v4 alpha = v4_set1(nnw_arg_f32(v[NNW_BIAS_ACT_ALPHA])), zero = v4_set1(0.0f);
  float tail_in[4], tail_out[4];
  for (int32_t r = 0; r < rows; r++, x += n, y += n) {
    int32_t i = 0;
    for (; i + 4 <= n; i += 4) v4_store(y + i, act4(act, v4_add(v4_load(x + i), bias ? v4_load(bias + i) : zero), alpha));
    if (i < n) {   /* the tail through the same vector code, so every element gets the same bits */
      int32_t k = n - i;
      for (int32_t j = 0; j < 4; j++) tail_in[j] = j < k ? x[i + j] + (bias ? bias[i + j] : 0.0f) : 0.0f;
      v4_store(tail_out, act4(act, v4_load(tail_in), alpha));
      memcpy(y + i, tail_out, 4 * (size_t)k);
    }
  }
}
