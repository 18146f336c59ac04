/* compare: y = a OP b as bool bytes (0 or 1) with broadcasting (bcast.h): comparisons of any
 * numeric type but float16 (NaN compares false, as in IEEE), and and/or/xor, which read each
 * operand as x != 0 (bool inputs are 0 or 1 already). unary_bool: not, isnan, isinf. */
#include <math.h>

#include "bcast.h"

enum { EQUAL, LESS, GREATER, LESS_EQUAL, GREATER_EQUAL, AND, OR, XOR, KINDS };

int nnw_validate_compare(const int32_t *v, uint32_t arena_bytes) {
  int32_t kind = v[NNW_COMPARE_KIND], dtype = v[NNW_COMPARE_DTYPE];
  if (kind < 0 || kind >= KINDS || dtype == NNW_F16) return NNW_BAD_ARGS;
  uint64_t count, ext[2];
  NNW_TRY(nnw_bcast_extents(v + NNW_COMPARE_RANK, 2, &count, ext));
  NNW_TRY(nnw_check_typed(v[NNW_COMPARE_A], ext[0], dtype, arena_bytes, 0));
  NNW_TRY(nnw_check_typed(v[NNW_COMPARE_B], ext[1], dtype, arena_bytes, 0));
  NNW_TRY(nnw_check_typed(v[NNW_COMPARE_Y], count, NNW_BOOL, arena_bytes, 0));
  /* y is written before later rows of a and b are read */
  uint64_t size = (uint64_t)nnw_dtype_size(dtype);
  NNW_TRY(nnw_check_apart(v[NNW_COMPARE_A], nnw_mul(ext[0], size), v[NNW_COMPARE_Y], count, 0));
  NNW_TRY(nnw_check_apart(v[NNW_COMPARE_B], nnw_mul(ext[1], size), v[NNW_COMPARE_Y], count, 0));
  return NNW_OK;
}

#define COMPARE(name, T)                                                                    \
  static void name(int kind, const int32_t *v, uint8_t *arena) {                            \
    const T *a = (const T *)(const void *)(arena + v[NNW_COMPARE_A]);                       \
    const T *b = (const T *)(const void *)(arena + v[NNW_COMPARE_B]);                       \
    uint8_t *y = arena + v[NNW_COMPARE_Y];                                                  \
    struct nnw_bcast it;                                                                    \
    nnw_bcast_init(&it, v + NNW_COMPARE_RANK, 2);                                           \
    ptrdiff_t as = it.s[0][0], bs = it.s[1][0], off[2];                                     \
    int32_t len = it.d[0];                                                                  \
    for (size_t r = 0; r < it.rows; r++) {                                                  \
      nnw_bcast_row(&it, off);                                                              \
      const T *ar = a + off[0], *br = b + off[1];                                           \
      switch (kind) {                                                                       \
        case EQUAL: for (int32_t i = 0; i < len; i++) y[i] = ar[i * as] == br[i * bs]; break; \
        case LESS: for (int32_t i = 0; i < len; i++) y[i] = ar[i * as] < br[i * bs]; break;  \
        case GREATER: for (int32_t i = 0; i < len; i++) y[i] = ar[i * as] > br[i * bs]; break; \
        case LESS_EQUAL: for (int32_t i = 0; i < len; i++) y[i] = ar[i * as] <= br[i * bs]; break; \
        case GREATER_EQUAL: for (int32_t i = 0; i < len; i++) y[i] = ar[i * as] >= br[i * bs]; break; \
        case AND: for (int32_t i = 0; i < len; i++) y[i] = (ar[i * as] != 0) & (br[i * bs] != 0); break; \
        case OR: for (int32_t i = 0; i < len; i++) y[i] = (ar[i * as] != 0) | (br[i * bs] != 0); break; \
        default: for (int32_t i = 0; i < len; i++) y[i] = (ar[i * as] != 0) ^ (br[i * bs] != 0); break; \
      }                                                                                     \
      y += len;                                                                             \
    }                                                                                       \
  }
COMPARE(compare_f32, float)
COMPARE(compare_f64, double)
COMPARE(compare_u8, uint8_t)
COMPARE(compare_i8, int8_t)
COMPARE(compare_u16, uint16_t)
COMPARE(compare_i16, int16_t)
COMPARE(compare_u32, uint32_t)
COMPARE(compare_i32, int32_t)
COMPARE(compare_u64, uint64_t)
COMPARE(compare_i64, int64_t)
#undef COMPARE

void nnw_run_compare(const int32_t *v, uint8_t *arena) {
  int kind = v[NNW_COMPARE_KIND];
  switch (v[NNW_COMPARE_DTYPE]) {
    case NNW_F32: compare_f32(kind, v, arena); break;
    case NNW_F64: compare_f64(kind, v, arena); break;
    case NNW_U8: case NNW_BOOL: compare_u8(kind, v, arena); break;
    case NNW_I8: compare_i8(kind, v, arena); break;
    case NNW_U16: compare_u16(kind, v, arena); break;
    case NNW_I16: compare_i16(kind, v, arena); break;
    case NNW_U32: compare_u32(kind, v, arena); break;
    case NNW_I32: compare_i32(kind, v, arena); break;
    case NNW_U64: compare_u64(kind, v, arena); break;
    default: compare_i64(kind, v, arena); break;
  }
}

enum { NOT, ISNAN, ISINF, ISINF_POS, ISINF_NEG, BOOL_KINDS };

int nnw_validate_unary_bool(const int32_t *v, uint32_t arena_bytes) {
  int32_t kind = v[NNW_UNARY_BOOL_KIND], count = v[NNW_UNARY_BOOL_COUNT];
  if (kind < 0 || kind >= BOOL_KINDS || count <= 0) return NNW_BAD_ARGS;
  int32_t x_type = kind == NOT ? NNW_BOOL : NNW_F32;
  NNW_TRY(nnw_check_typed(v[NNW_UNARY_BOOL_X], (uint64_t)count, x_type, arena_bytes, 0));
  NNW_TRY(nnw_check_typed(v[NNW_UNARY_BOOL_Y], (uint64_t)count, NNW_BOOL, arena_bytes, 0));
  uint64_t x_bytes = (uint64_t)count * (uint64_t)nnw_dtype_size(x_type);
  /* in place is fine for not (same size); isnan/isinf must read x apart from y */
  NNW_TRY(nnw_check_apart(v[NNW_UNARY_BOOL_X], x_bytes, v[NNW_UNARY_BOOL_Y], (uint64_t)count, kind == NOT));
  return NNW_OK;
}

void nnw_run_unary_bool(const int32_t *v, uint8_t *arena) {
  int32_t kind = v[NNW_UNARY_BOOL_KIND], count = v[NNW_UNARY_BOOL_COUNT];
  const uint8_t *xb = arena + v[NNW_UNARY_BOOL_X];
  const float *x = (const float *)(const void *)xb;
  uint8_t *y = arena + v[NNW_UNARY_BOOL_Y];
  const float inf = INFINITY;
  switch (kind) {
    case NOT: for (int32_t i = 0; i < count; i++) y[i] = xb[i] == 0; break;
    case ISNAN: for (int32_t i = 0; i < count; i++) y[i] = x[i] != x[i]; break;
    case ISINF: for (int32_t i = 0; i < count; i++) y[i] = x[i] == inf || x[i] == -inf; break;
    case ISINF_POS: for (int32_t i = 0; i < count; i++) y[i] = x[i] == inf; break;
    default: for (int32_t i = 0; i < count; i++) y[i] = x[i] == -inf; break;
  }
}
