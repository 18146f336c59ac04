/* binary_int: y = a OP b on any integer type with broadcasting (bcast.h), for index and mask
 * arithmetic. Elements are widened to int64 (signed types) or uint64 (unsigned), combined, and
 * narrowed back by dropping the high bits, so add, sub and mul wrap around at the type's width
 * without overflow in C. Nothing traps: x / 0 = x (the numpy provider's rule: dividing by 1),
 * MIN / -1 = MIN (the wrapped negation), x mod 0 = 0 and MIN mod -1 = 0. */
#include "bcast.h"

enum { ADD, SUB, MUL, DIV, MAX, MIN, MOD, FMOD, KINDS };

static int int_dtype(int32_t t) {
  switch (t) {
    case NNW_I8: case NNW_I16: case NNW_I32: case NNW_I64:
    case NNW_U8: case NNW_U16: case NNW_U32: case NNW_U64: return 1;
    default: return 0;
  }
}

int nnw_validate_binary_int(const int32_t *v, uint32_t arena_bytes) {
  int32_t kind = v[NNW_BINARY_INT_KIND], dtype = v[NNW_BINARY_INT_DTYPE];
  if (kind < 0 || kind >= KINDS || !int_dtype(dtype)) return NNW_BAD_ARGS;
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

/* min: the type's minimum, widened (MIN / -1 and MIN mod -1 are the only signed overflows) */
static int64_t signed_op(int kind, int64_t a, int64_t b, int64_t min) {
  switch (kind) {
    case ADD: return (int64_t)((uint64_t)a + (uint64_t)b);
    case SUB: return (int64_t)((uint64_t)a - (uint64_t)b);
    case MUL: return (int64_t)((uint64_t)a * (uint64_t)b);
    case DIV: return b == 0 ? a : b == -1 ? (a == min ? a : -a) : a / b;
    case MAX: return a < b ? b : a;
    case MIN: return b < a ? b : a;
    default: {
      if (b == 0 || b == -1) return 0;
      int64_t r = a % b;
      if (kind == MOD && r != 0 && (r < 0) != (b < 0)) r += b; /* the sign of the divisor */
      return r;
    }
  }
}

static uint64_t unsigned_op(int kind, uint64_t a, uint64_t b) {
  switch (kind) {
    case ADD: return a + b;
    case SUB: return a - b;
    case MUL: return a * b;
    case DIV: return b == 0 ? a : a / b;
    case MAX: return a < b ? b : a;
    case MIN: return b < a ? b : a;
    default: return b == 0 ? 0 : a % b;
  }
}

/* W: the widened type and its op; T: the element type. (T)w of an out-of-range signed value
 * keeps the low bits in every compiler nnwasm targets (gcc and clang define it so). */
#define BINARY_INT(name, T, W, OP)                                                          \
  static void name(int kind, const int32_t *v, uint8_t *arena) {                            \
    const T *a = (const T *)(const void *)(arena + v[NNW_BINARY_INT_A]);                    \
    const T *b = (const T *)(const void *)(arena + v[NNW_BINARY_INT_B]);                    \
    T *y = (T *)(void *)(arena + v[NNW_BINARY_INT_Y]);                                      \
    struct nnw_bcast it;                                                                    \
    nnw_bcast_init(&it, v + NNW_BINARY_INT_RANK, 2);                                        \
    ptrdiff_t as = it.s[0][0], bs = it.s[1][0], off[2];                                     \
    for (size_t r = 0; r < it.rows; r++) {                                                  \
      nnw_bcast_row(&it, off);                                                              \
      const T *ar = a + off[0], *br = b + off[1];                                           \
      for (int32_t i = 0; i < it.d[0]; i++) y[i] = (T)OP(kind, (W)ar[i * as], (W)br[i * bs]); \
      y += it.d[0];                                                                         \
    }                                                                                       \
  }
#define S_OP(min) (int kind_, int64_t a_, int64_t b_) { return signed_op(kind_, a_, b_, min); }
static int64_t op_i8 S_OP(INT8_MIN)
static int64_t op_i16 S_OP(INT16_MIN)
static int64_t op_i32 S_OP(INT32_MIN)
static int64_t op_i64 S_OP(INT64_MIN)
#undef S_OP
BINARY_INT(run_i8, int8_t, int64_t, op_i8)
BINARY_INT(run_i16, int16_t, int64_t, op_i16)
BINARY_INT(run_i32, int32_t, int64_t, op_i32)
BINARY_INT(run_i64, int64_t, int64_t, op_i64)
BINARY_INT(run_u8, uint8_t, uint64_t, unsigned_op)
BINARY_INT(run_u16, uint16_t, uint64_t, unsigned_op)
BINARY_INT(run_u32, uint32_t, uint64_t, unsigned_op)
BINARY_INT(run_u64, uint64_t, uint64_t, unsigned_op)
#undef BINARY_INT

void nnw_run_binary_int(const int32_t *v, uint8_t *arena) {
  int kind = v[NNW_BINARY_INT_KIND];
  switch (v[NNW_BINARY_INT_DTYPE]) {
    case NNW_I8: run_i8(kind, v, arena); break;
    case NNW_I16: run_i16(kind, v, arena); break;
    case NNW_I32: run_i32(kind, v, arena); break;
    case NNW_I64: run_i64(kind, v, arena); break;
    case NNW_U8: run_u8(kind, v, arena); break;
    case NNW_U16: run_u16(kind, v, arena); break;
    case NNW_U32: run_u32(kind, v, arena); break;
    default: run_u64(kind, v, arena); break;
  }
}
