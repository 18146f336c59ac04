/* unary: clamp (Relu, Clip), sigmoid, tanh over count contiguous elements; y may equal x.
 * sigmoid and tanh go through the exp of a non-positive number only (simd.h), so nothing
 * overflows and both stay within a few ulp, tiny and huge inputs included:
 *   sigmoid(x) = (x >= 0 ? 1 : z) / (1 + z), z = exp(-|x|)
 *   tanh(x) = sign(x) * -u / (2 + u),         u = expm1(-2|x|)  (exact near 0, unlike via exp) */
#include "internal.h"
#include "simd.h"

enum { CLAMP, SIGMOID, TANH, KINDS };

int nnw_validate_unary(const int32_t *v, uint32_t arena_bytes) {
  int32_t kind = v[NNW_UNARY_KIND], count = v[NNW_UNARY_COUNT];
  float p0 = nnw_arg_f32(v[NNW_UNARY_P0]), p1 = nnw_arg_f32(v[NNW_UNARY_P1]);
  if (kind < 0 || kind >= KINDS || count <= 0) return NNW_BAD_ARGS;
  if (kind == CLAMP && !(p0 <= p1)) return NNW_BAD_ARGS;
  NNW_TRY(nnw_check_tensor(v[NNW_UNARY_X], (uint64_t)count * 4, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(v[NNW_UNARY_Y], (uint64_t)count * 4, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_apart(v[NNW_UNARY_X], (uint64_t)count * 4, v[NNW_UNARY_Y], (uint64_t)count * 4, 1));
  return NNW_OK;
}

static inline v4 sigmoid4(v4 x) {
  v4 one = v4_set1(1.0f);
  v4 z = v4_exp_nonpos(v4_sub(v4_set1(0.0f), v4_abs(x)));
  return v4_div(v4_select_nonneg(x, one, z), v4_add(one, z));
}

static inline v4 tanh4(v4 x) {
  v4 u = v4_expm1_nonpos(v4_mul(v4_set1(-2.0f), v4_abs(x)));
  return v4_copysign(v4_div(v4_sub(v4_set1(0.0f), u), v4_add(v4_set1(2.0f), u)), x);
}

static inline v4 apply(int32_t kind, v4 x, v4 p0, v4 p1) {
  switch (kind) {
    case CLAMP: return v4_clamp(x, p0, p1);
    case SIGMOID: return sigmoid4(x);
    default: return tanh4(x);
  }
}

void nnw_run_unary(const int32_t *v, uint8_t *arena) {
  int32_t kind = v[NNW_UNARY_KIND], count = v[NNW_UNARY_COUNT];
  v4 p0 = v4_set1(nnw_arg_f32(v[NNW_UNARY_P0])), p1 = v4_set1(nnw_arg_f32(v[NNW_UNARY_P1]));
  const float *x = nnw_f32_at(arena, v[NNW_UNARY_X]);
  float *y = nnw_f32_at(arena, v[NNW_UNARY_Y]);
  int32_t i = 0;
  switch (kind) {
    /* one loop per kind so the switch stays out of the loop */
    case CLAMP:
      for (; i + 4 <= count; i += 4) v4_store(y + i, v4_clamp(v4_load(x + i), p0, p1));
      break;
    case SIGMOID:
      for (; i + 4 <= count; i += 4) v4_store(y + i, sigmoid4(v4_load(x + i)));
      break;
    default:
      for (; i + 4 <= count; i += 4) v4_store(y + i, tanh4(v4_load(x + i)));
      break;
  }
  if (i < count) {
    float t[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    memcpy(t, x + i, sizeof(float) * (size_t)(count - i));
    v4_store(t, apply(kind, v4_load(t), p0, p1));
    memcpy(y + i, t, sizeof(float) * (size_t)(count - i));
  }
}
