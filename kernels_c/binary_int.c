/* binary_int: y = a OP b on int32 or int64 with broadcasting (bcast.h), for index and mask
 * arithmetic. Add, sub and mul wrap around (computed unsigned: no overflow in C); div truncates
 * toward zero and never traps: x / 0 = x (the numpy provider's rule, dividing by 1) and
 * MIN / -1 = MIN (the wrapped negation). */
#include "bcast.h"

enum { ADD, SUB, MUL, DIV, MAX, MIN, KINDS };

int nnw_validate_binary_int(const int32_t *v, uint32_t arena_bytes) {
  int32_t kind = v[NNW_BINARY_INT_KIND], dtype = v[NNW_BINARY_INT_DTYPE];
  if (kind < 0 || kind >= KINDS || (dtype != NNW_I32 && dtype != NNW_I64)) return NNW_BAD_ARGS;
  uint64_t count, ext[2];
  NNW_TRY(nnw_bcast_extents(v + NNW_BINARY_INT_RANK, 2, &count, ext));
  uint64_t size = (uint64_t)nnw_dtype_size(dtype);
  NNW_TRY(nnw_check_typed(v[NNW_BINARY_INT_A], ext[0], dtype, arena_bytes, 0));
  NNW_TRY(nnw_check_typed(v[NNW_BINARY_INT_B], ext[1], dtype, arena_bytes, 0));
  NNW_TRY(nnw_check_typed(v[NNW_BINARY_INT_Y], count, dtype, arena_bytes, 0));
  uint64_t y_bytes = nnw_mul(count, size);
  NNW_TRY(nnw_check_apart(v[NNW_BINARY_INT_A], nnw_mul(ext[0], size), v[NNW_BINARY_INT_Y], y_bytes, 1));
  NNW_TRY(nnw_check_apart(v[NNW_BINARY_INT_B], nnw_mul(ext[1], size), v[NNW_BINARY_INT_Y], y_bytes, 1));
  return NNW_OK;
}

/* one function per type: T signed, U its unsigned twin */
#define BINARY_INT(name, T, U, T_MIN)                                                       \
  static T name##_op(int kind, T a, T b) {                                                  \
    switch (kind) {                                                                         \
      case ADD: return (T)((U)a + (U)b);                                                    \
      case SUB: return (T)((U)a - (U)b);                                                    \
      case MUL: return (T)((U)a * (U)b);                                                    \
      case DIV: return b == 0 ? a : b == -1 ? (a == T_MIN ? a : -a) : a / b;              \
      case MAX: return a < b ? b : a;                                                       \
      default: return b < a ? b : a;                                                        \
    }                                                                                       \
  }                                                                                         \
  static void name##_run(int kind, const int32_t *v, uint8_t *arena) {                      \
    const T *a = (const T *)(const void *)(arena + v[NNW_BINARY_INT_A]);                    \
    const T *b = (const T *)(const void *)(arena + v[NNW_BINARY_INT_B]);                    \
    T *y = (T *)(void *)(arena + v[NNW_BINARY_INT_Y]);                                      \
    struct nnw_bcast it;                                                                    \
    nnw_bcast_init(&it, v + NNW_BINARY_INT_RANK, 2);                                        \
    ptrdiff_t as = it.s[0][0], bs = it.s[1][0], off[2];                                     \
    for (size_t r = 0; r < it.rows; r++) {                                                  \
      nnw_bcast_row(&it, off);                                                              \
      const T *ar = a + off[0], *br = b + off[1];                                           \
      for (int32_t i = 0; i < it.d[0]; i++) y[i] = name##_op(kind, ar[i * as], br[i * bs]); \
      y += it.d[0];                                                                         \
    }                                                                                       \
  }
BINARY_INT(i32, int32_t, uint32_t, INT32_MIN)
BINARY_INT(i64, int64_t, uint64_t, INT64_MIN)
#undef BINARY_INT

void nnw_run_binary_int(const int32_t *v, uint8_t *arena) {
  if (v[NNW_BINARY_INT_DTYPE] == NNW_I32)
    i32_run(v[NNW_BINARY_INT_KIND], v, arena);
  else
    i64_run(v[NNW_BINARY_INT_KIND], v, arena);
}
