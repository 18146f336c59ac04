/* binary: y = a OP b (add, sub, mul, div, pow, max, min, prelu, fmod) with NumPy broadcasting over up to 6 dims, given as
 * element strides of a and b (0 where broadcast); y is contiguous, d0 outermost.
 * Dims are first merged wherever both operands stay linear across them (and size-1 dims
 * dropped), so a same-shape op becomes one row, a bias-like add [N,C,H,W] + [C,1,1] becomes
 * rows of H*W with a scalar b, and only truly strided operands fall back to scalar loops. */
#include <math.h>

#include "internal.h"
#include "simd.h"

#define MAX_RANK 6

enum { ADD, SUB, MUL, DIV, POW, MAX, MIN, PRELU, FMOD, KINDS };

struct binary {
  int32_t kind, a, b, y, rank;
  int32_t d[MAX_RANK], as[MAX_RANK], bs[MAX_RANK];
};

static void binary_decode(const int32_t *v, struct binary *p) {
  p->kind = v[NNW_BINARY_KIND];
  p->a = v[NNW_BINARY_A];
  p->b = v[NNW_BINARY_B];
  p->y = v[NNW_BINARY_Y];
  p->rank = v[NNW_BINARY_RANK];
  for (int i = 0; i < MAX_RANK; i++) {
    p->d[i] = v[NNW_BINARY_D0 + i];
    p->as[i] = v[NNW_BINARY_AS0 + i];
    p->bs[i] = v[NNW_BINARY_BS0 + i];
  }
}

int nnw_validate_binary(const int32_t *args, uint32_t arena_bytes) {
  struct binary p;
  binary_decode(args, &p);
  if (p.kind < 0 || p.kind >= KINDS || p.rank < 0 || p.rank > MAX_RANK) return NNW_BAD_ARGS;
  uint64_t count = 1, a_last = 0, b_last = 0; /* elements of y, last element index of a and b */
  for (int i = 0; i < p.rank; i++) {
    if (p.d[i] <= 0 || p.as[i] < 0 || p.bs[i] < 0) return NNW_BAD_ARGS;
    uint64_t steps = (uint64_t)p.d[i] - 1;
    count = nnw_mul(count, (uint64_t)p.d[i]);
    a_last = nnw_add(a_last, nnw_mul(steps, (uint64_t)p.as[i]));
    b_last = nnw_add(b_last, nnw_mul(steps, (uint64_t)p.bs[i]));
  }
  NNW_TRY(nnw_check_tensor(p.a, nnw_mul(a_last + 1, 4), arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(p.b, nnw_mul(b_last + 1, 4), arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(p.y, nnw_mul(count, 4), arena_bytes, 0, 1));
  NNW_TRY(nnw_check_apart(p.a, nnw_mul(a_last + 1, 4), p.y, nnw_mul(count, 4), 1));
  NNW_TRY(nnw_check_apart(p.b, nnw_mul(b_last + 1, 4), p.y, nnw_mul(count, 4), 1));
  return NNW_OK;
}

static inline v4 op4(int kind, v4 x, v4 y) {
  switch (kind) {
    case ADD: return v4_add(x, y);
    case SUB: return v4_sub(x, y);
    case MUL: return v4_mul(x, y);
    case DIV: return v4_div(x, y);
    default: return v4_select_nonneg(x, x, v4_mul(x, y)); /* PRELU */
  }
}

/* Max and Min propagate a NaN in either operand (numpy, onnxruntime) */
static inline int either_nan(float x, float y) { return x != x || y != y; }

static inline float op1(int kind, float x, float y) {
  switch (kind) {
    case ADD: return x + y;
    case SUB: return x - y;
    case MUL: return x * y;
    case DIV: return x / y;
    case POW: return powf(x, y);
    case MAX: return either_nan(x, y) ? x + y : x < y ? y : x;
    case MIN: return either_nan(x, y) ? x + y : y < x ? y : x;
    case PRELU: return x < 0 ? x * y : x;
    default: return fmodf(x, y);
  }
}

/* one row of len outputs; as/bs are the row's element strides */
static void row(int kind, const float *a, ptrdiff_t as, const float *b, ptrdiff_t bs, float *y,
                int32_t len) {
  int32_t i = 0;
  if (kind == POW || kind == MAX || kind == MIN || kind == FMOD) {
    /* libm or NaN-aware: plain loops (the compiler vectorises what it can) */
  } else if (as == 1 && bs == 1) {
    for (; i + 4 <= len; i += 4) v4_store(y + i, op4(kind, v4_load(a + i), v4_load(b + i)));
  } else if (as == 1 && bs == 0) {
    v4 bv = v4_load1(b);
    for (; i + 4 <= len; i += 4) v4_store(y + i, op4(kind, v4_load(a + i), bv));
  } else if (as == 0 && bs == 1) {
    v4 av = v4_load1(a);
    for (; i + 4 <= len; i += 4) v4_store(y + i, op4(kind, av, v4_load(b + i)));
  }
  for (; i < len; i++) y[i] = op1(kind, a[i * as], b[i * bs]);
}

void nnw_run_binary(const int32_t *args, uint8_t *arena) {
  struct binary p;
  binary_decode(args, &p);
  /* merged dims, innermost first */
  int32_t d[MAX_RANK];
  ptrdiff_t as[MAX_RANK], bs[MAX_RANK];
  int r = 0;
  for (int i = p.rank - 1; i >= 0; i--) {
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
  if (r == 0) {
    d[0] = 1;
    as[0] = bs[0] = 0;
    r = 1;
  }
  const float *a = nnw_f32_at(arena, p.a), *b = nnw_f32_at(arena, p.b);
  float *y = nnw_f32_at(arena, p.y);
  /* odometer over the outer dims 1..r-1 */
  int32_t idx[MAX_RANK] = {0};
  size_t rows = 1;
  for (int i = 1; i < r; i++) rows *= (size_t)d[i];
  for (size_t n = 0; n < rows; n++) {
    ptrdiff_t ao = 0, bo = 0;
    for (int i = 1; i < r; i++) {
      ao += idx[i] * as[i];
      bo += idx[i] * bs[i];
    }
    row(p.kind, a + ao, as[0], b + bo, bs[0], y, d[0]);
    y += d[0];
    for (int i = 1; i < r && ++idx[i] == d[i]; i++) idx[i] = 0;
  }
}
