/* The elementwise ops beyond add/sub/mul/div and clamp/sigmoid/tanh: unary's math kinds,
 * binary's pow/max/min/prelu/fmod, binary_int, compare, unary_bool, cast and where, against
 * references in double or plain C, tensors flush against either end of the arena; and each
 * validator's refusals of hostile arguments. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"
#include "tests.h"

/* offsets 8-aligned (int64 tensors) with gaps, order 1 = last tensor first; returns the arena
 * size, which ends exactly at the end of the tensor placed last */
static uint32_t layout8(const uint64_t *bytes, int count, int order, int32_t *off) {
  uint64_t at = 0, end = 0;
  for (int k = 0; k < count; k++) {
    int i = order ? count - 1 - k : k;
    at = (at + 7) / 8 * 8 + 8 * (rng_u32() % 2);
    off[i] = (int32_t)at;
    at += bytes[i];
    end = at;
  }
  return (uint32_t)end;
}

#define REFUSED(opcode, ok, n, arena, field, value, status)                                   \
  do {                                                                                       \
    int32_t a_[64];                                                                          \
    memcpy(a_, ok, sizeof(int32_t) * (n));                                                   \
    a_[field] = value;                                                                       \
    int got_ = load_status(opcode, a_, n, arena);                                            \
    expect(got_ == (status), "%s: %s = %d gave %d", #opcode, #field, (int)(value), got_);    \
  } while (0)

/* like check_close, but NaN where NaN is wanted passes */
static void close_nan(const char *what, const float *got, const double *want, const double *mag,
                      size_t n, double atol, double rtol) {
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    if (isnan(want[i]) && isnan(got[i])) continue;
    double m = mag ? mag[i] : fabs(want[i]), err = fabs((double)got[i] - want[i]);
    if (err <= atol + rtol * m || (isinf(want[i]) && got[i] == want[i])) continue;
    if (bad++ < 5) printf("  %s[%zu]: got %.9g want %.9g\n", what, i, (double)got[i], want[i]);
  }
  expect(bad == 0, "%s: %zu of %zu elements off", what, bad, n);
}

/* ---- unary math kinds ------------------------------------------------------------------ */

enum { EXP = 3, LOG, SQRT, RECIPROCAL, NEG, ABS, ERF, GELU, GELU_TANH, HARD_SIGMOID, HARD_SWISH,
       LEAKY_RELU, ELU, SOFTPLUS, SELU, SOFTSIGN, SIGN, FLOOR, CEIL, ROUND, SIN, COS, MISH, LAST_KIND };

static double unary_ref(int kind, double x, double p0, double p1) {
  switch (kind) {
    case EXP: return exp(x);
    case LOG: return log(x);
    case SQRT: return sqrt(x);
    case RECIPROCAL: return 1 / x;
    case NEG: return -x;
    case ABS: return fabs(x);
    case ERF: return erf(x);
    case GELU: return 0.5 * x * (1 + erf(x / sqrt(2.0)));
    case GELU_TANH: return 0.5 * x * (1 + tanh(sqrt(2 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
    case HARD_SIGMOID: return isnan(x) ? x : fmax(0, fmin(1, p0 * x + p1)); /* nan kept, as numpy's clip */
    case HARD_SWISH: return isnan(x) ? x : x * fmax(0, fmin(1, x / 6 + 0.5));
    case LEAKY_RELU: return x < 0 ? p0 * x : x;
    case ELU: return x < 0 ? p0 * expm1(x) : x;
    case SOFTPLUS: return x > 30 ? x : log1p(exp(x));
    case SELU: return p1 * (x < 0 ? p0 * expm1(x) : x);
    case SOFTSIGN: return x / (1 + fabs(x));
    case SIGN: return x > 0 ? 1 : x < 0 ? -1 : x;
    case FLOOR: return floor(x);
    case CEIL: return ceil(x);
    case ROUND: return nearbyint(x);
    case SIN: return sin(x);
    case MISH: return x * tanh(x > 30 ? x : log1p(exp(x)));
    default: return cos(x);
  }
}

static void unary_math_case(int kind, const float *x, int count, float p0, float p1) {
  double *want = malloc(8 * (size_t)count), *mag = malloc(8 * (size_t)count);
  for (int i = 0; i < count; i++) {
    want[i] = (float)unary_ref(kind, x[i], p0, p1); /* overflows as float does */
    mag[i] = fabs(want[i]);
    if (kind == GELU || kind == GELU_TANH || kind == HARD_SIGMOID || kind == HARD_SWISH)
      mag[i] = fabs((double)x[i]) + 1; /* 1 + erf and alpha x + beta cancel */
    if (kind == SIN || kind == COS) mag[i] = 1;
  }
  double rtol = kind == GELU || kind == GELU_TANH ? 1e-6 : 2e-6;
  double atol = kind == MISH ? 1e-38 : 3e-45; /* mish = x n/(n+2) rounds n/(n+2) when subnormal */
  char name[48];
  snprintf(name, sizeof name, "unary kind%d count%d", kind, count);
  for (int order = 0; order < 2; order++) {
    uint64_t bytes[2] = {4 * (uint64_t)count, 4 * (uint64_t)count};
    int32_t off[2];
    uint32_t arena_bytes = layout8(bytes, 2, order, off);
    uint8_t *arena = arena_new(arena_bytes);
    memcpy(at(arena, off[0]), x, 4 * (size_t)count);
    int32_t args[NNW_UNARY_NARGS] = {kind, off[0], off[1], count, f32_bits(p0), f32_bits(p1)};
    if (run_op(NNW_OP_UNARY, args, NNW_UNARY_NARGS, arena, arena_bytes) == NNW_OK)
      close_nan(name, at(arena, off[1]), want, mag, (size_t)count, atol, rtol);
    args[NNW_UNARY_Y] = off[0]; /* in place */
    if (run_op(NNW_OP_UNARY, args, NNW_UNARY_NARGS, arena, arena_bytes) == NNW_OK)
      close_nan(name, at(arena, off[0]), want, mag, (size_t)count, atol, rtol);
    free(arena);
  }
  free(want);
  free(mag);
}

void test_unary_math(void) {
  enum { N = 2411 };
  static float x[N];
  for (int i = 0; i < 1600; i++) x[i] = -12.0f + 24.0f * (float)i / 1600.0f;
  for (int i = 1600; i < 2000; i++) x[i] = ldexpf(rng_float(-1, 1), -(int)(rng_u32() % 140));
  for (int i = 2000; i < N; i++) x[i] = rng_float(-120, 120);
  static const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-40f, -1e-40f, 88.7f,
                                  88.73f, 89.5f, -87.4f, -103.5f, -110.0f, 2.5f, -2.5f, 0.5f,
                                  -0.5f, 3.5f, 1.5f, 8388609.0f, 3.99f, -4.01f, 1e30f, -1e30f};
  memcpy(x, special, sizeof special);
  for (int kind = EXP; kind < LAST_KIND; kind++) {
    float p0 = kind == HARD_SIGMOID ? 0.3f : kind == LEAKY_RELU ? 0.1f : kind == ELU ? 1.5f
             : kind == SELU ? 1.6732632f : 0.0f;
    float p1 = kind == HARD_SIGMOID ? 0.6f : kind == SELU ? 1.050701f : 0.0f;
    for (int count = 1; count <= 6; count++) unary_math_case(kind, x + 30, count, p0, p1);
    unary_math_case(kind, x, N, p0, p1);
  }
}

/* ---- binary: pow, max, min, prelu, fmod ---------------------------------------------------- */

static double binary_ref(int kind, double a, double b) {
  switch (kind) {
    case 4: return pow(a, b);
    case 5: return isnan(a) || isnan(b) ? NAN : fmax(a, b);
    case 6: return isnan(a) || isnan(b) ? NAN : fmin(a, b);
    case 7: return a < 0 ? a * b : a;
    default: return fmod(a, b);
  }
}

static void binary_math_case(int kind, int rank, const int *d, const int *as, const int *bs) {
  size_t count = 1, a_n = 1, b_n = 1;
  for (int i = 0; i < rank; i++) {
    count *= (size_t)d[i];
    a_n += (size_t)(d[i] - 1) * as[i];
    b_n += (size_t)(d[i] - 1) * bs[i];
  }
  float *a = malloc(4 * a_n), *b = malloc(4 * b_n);
  double *want = malloc(8 * count);
  fill_random(a, a_n, -3, 3);
  fill_random(b, b_n, -3, 3);
  if (kind == 4) /* pow: integral exponents too (negative bases) */
    for (size_t i = 0; i < b_n; i += 2) b[i] = (float)((int)b[i]);
  if (a_n > 3) a[3] = NAN;
  if (b_n > 2) b[2] = NAN;
  for (size_t e = 0; e < count; e++) {
    size_t rem = e, ao = 0, bo = 0;
    for (int i = rank - 1; i >= 0; i--) {
      size_t ix = rem % (size_t)d[i];
      rem /= (size_t)d[i];
      ao += ix * as[i];
      bo += ix * bs[i];
    }
    want[e] = (float)binary_ref(kind, a[ao], b[bo]);
  }
  char name[48];
  snprintf(name, sizeof name, "binary kind%d rank%d", kind, rank);
  for (int order = 0; order < 2; order++) {
    uint64_t bytes[3] = {4 * a_n, 4 * b_n, 4 * count};
    int32_t off[3];
    uint32_t arena_bytes = layout8(bytes, 3, order, off);
    uint8_t *arena = arena_new(arena_bytes);
    memcpy(at(arena, off[0]), a, 4 * a_n);
    memcpy(at(arena, off[1]), b, 4 * b_n);
    int32_t args[NNW_BINARY_NARGS] = {kind, off[0], off[1], off[2], rank};
    for (int i = 0; i < 6; i++) {
      args[NNW_BINARY_D0 + i] = i < rank ? d[i] : 1;
      args[NNW_BINARY_AS0 + i] = i < rank ? as[i] : 0;
      args[NNW_BINARY_BS0 + i] = i < rank ? bs[i] : 0;
    }
    if (run_op(NNW_OP_BINARY, args, NNW_BINARY_NARGS, arena, arena_bytes) == NNW_OK)
      close_nan(name, at(arena, off[2]), want, NULL, count, 1e-30, 2e-6);
    free(arena);
  }
  free(a);
  free(b);
  free(want);
}

void test_binary_math(void) {
  static const int d1[] = {37}, s1[] = {1}, z1[] = {0};
  static const int d4[] = {2, 3, 4, 5}, s4[] = {60, 20, 5, 1}, c4[] = {0, 1, 0, 0};
  static const int d2[] = {6, 13}, s2[] = {13, 1}, r2[] = {0, 1}, t2[] = {1, 6};
  for (int kind = 4; kind <= 8; kind++) {
    binary_math_case(kind, 1, d1, s1, s1);
    binary_math_case(kind, 1, d1, s1, z1);
    binary_math_case(kind, 4, d4, s4, c4); /* prelu's per-channel slope */
    binary_math_case(kind, 2, d2, s2, r2);
    binary_math_case(kind, 2, d2, t2, s2);
  }
}

/* ---- broadcast ops on raw bytes: binary_int, compare, where --------------------------------- */

/* a broadcast case: rank, dims, and up to three operands' element strides */
struct bcase {
  int rank, d[6], s[3][6];
};

static const struct bcase bcases[] = {
    {1, {37}, {{1}, {1}, {1}}},
    {0, {0}, {{0}, {0}, {0}}},
    {2, {5, 9}, {{9, 1}, {0, 0}, {9, 1}}},
    {2, {6, 13}, {{0, 1}, {13, 1}, {1, 0}}},
    {2, {5, 6}, {{1, 5}, {6, 1}, {0, 1}}},
    {4, {2, 3, 4, 5}, {{60, 20, 5, 1}, {0, 1, 0, 0}, {0, 0, 5, 1}}},
    {6, {2, 1, 3, 2, 1, 5}, {{30, 0, 10, 5, 0, 1}, {0, 0, 2, 1, 0, 0}, {1, 0, 0, 0, 0, 2}}},
};
#define N_BCASES (sizeof bcases / sizeof bcases[0])

static size_t bcase_count(const struct bcase *c) {
  size_t n = 1;
  for (int i = 0; i < c->rank; i++) n *= (size_t)c->d[i];
  return n;
}
static size_t bcase_extent(const struct bcase *c, int k) {
  size_t n = 1;
  for (int i = 0; i < c->rank; i++) n += (size_t)(c->d[i] - 1) * c->s[k][i];
  return n;
}
/* operand k's element index of output element e */
static size_t bcase_at(const struct bcase *c, int k, size_t e) {
  size_t o = 0;
  for (int i = c->rank - 1; i >= 0; i--) {
    o += (e % (size_t)c->d[i]) * c->s[k][i];
    e /= (size_t)c->d[i];
  }
  return o;
}
/* the rank, dims and strides of c into args from `at` (the rank argument) */
static void bcase_args(const struct bcase *c, int n, int32_t *args) {
  args[0] = c->rank;
  for (int i = 0; i < 6; i++) {
    args[1 + i] = i < c->rank ? c->d[i] : 1;
    for (int k = 0; k < n; k++) args[7 + 6 * k + i] = i < c->rank ? c->s[k][i] : 0;
  }
}

static int dsize(int t);

static int64_t pick_int(int64_t lo, int64_t hi) {
  static const int64_t edge[] = {0, 1, -1, 2, -2, 7, -7, INT64_MAX, INT64_MIN, INT32_MAX, INT32_MIN};
  uint32_t r = rng_u32();
  if (r % 3 == 0) {
    int64_t v = edge[r / 3 % (sizeof edge / sizeof edge[0])];
    return v < lo ? lo : v > hi ? hi : v;
  }
  return (int64_t)(rng_u32() % 41) - 20;
}

/* the reference, in the widest types: signed values as int64, unsigned as uint64 (bits) */
static uint64_t int_ref(int kind, uint64_t ua, uint64_t ub, int is_signed, int64_t min) {
  int64_t a = (int64_t)ua, b = (int64_t)ub;
  if (!is_signed) {
    switch (kind) {
      case 0: return ua + ub;
      case 1: return ua - ub;
      case 2: return ua * ub;
      case 3: return ub == 0 ? ua : ua / ub;
      case 4: return ua > ub ? ua : ub;
      case 5: return ua < ub ? ua : ub;
      default: return ub == 0 ? 0 : ua % ub;
    }
  }
  switch (kind) {
    case 0: return ua + ub;
    case 1: return ua - ub;
    case 2: return ua * ub;
    case 3:
      if (b == 0) return ua;
      if (b == -1) return a == min ? ua : (uint64_t)-a;
      return (uint64_t)(a / b);
    case 4: return (uint64_t)(a > b ? a : b);
    case 5: return (uint64_t)(a < b ? a : b);
    default: {
      if (b == 0 || b == -1) return 0;
      int64_t q = a / b, r = a - q * b;
      if (kind == 6 && r != 0 && ((r < 0) != (b < 0))) r += b;   /* floor mod, as Python's % */
      return (uint64_t)r;
    }
  }
}

static uint64_t load_elem(const uint8_t *p, int size, int is_signed) {
  uint64_t u = 0;
  memcpy(&u, p, (size_t)size);
  if (is_signed && size < 8 && (u >> (8 * size - 1)) & 1) u |= ~(uint64_t)0 << (8 * size);
  return u;
}

static void binary_int_case(const struct bcase *c, int kind, int dtype) {
  int size = dsize(dtype), is_signed = dtype == 3 || dtype == 5 || dtype == 6 || dtype == 7;
  int64_t min = !is_signed ? 0 : size == 8 ? INT64_MIN : -((int64_t)1 << (8 * size - 1));
  int64_t max = size == 8 ? INT64_MAX : is_signed ? ((int64_t)1 << (8 * size - 1)) - 1 : ((int64_t)1 << (8 * size)) - 1;
  size_t count = bcase_count(c), na = bcase_extent(c, 0), nb = bcase_extent(c, 1);
  uint8_t *a = malloc(8 * na), *b = malloc(8 * nb), *want = malloc(8 * count);
  for (size_t i = 0; i < na; i++) { int64_t x = pick_int(min, max); memcpy(a + size * i, &x, (size_t)size); }
  for (size_t i = 0; i < nb; i++) { int64_t x = pick_int(min, max); memcpy(b + size * i, &x, (size_t)size); }
  for (size_t e = 0; e < count; e++) {
    uint64_t r = int_ref(kind, load_elem(a + size * bcase_at(c, 0, e), size, is_signed),
                         load_elem(b + size * bcase_at(c, 1, e), size, is_signed), is_signed, min);
    memcpy(want + size * e, &r, (size_t)size);
  }
  for (int order = 0; order < 2; order++) {
    uint64_t bytes[3] = {size * na, size * nb, size * count};
    int32_t off[3];
    uint32_t arena_bytes = layout8(bytes, 3, order, off);
    uint8_t *arena = arena_new(arena_bytes);
    memcpy(arena + off[0], a, size * na);
    memcpy(arena + off[1], b, size * nb);
    int32_t args[NNW_BINARY_INT_NARGS] = {kind, dtype, off[0], off[1], off[2]};
    bcase_args(c, 2, args + NNW_BINARY_INT_RANK);
    if (run_op(NNW_OP_BINARY_INT, args, NNW_BINARY_INT_NARGS, arena, arena_bytes) == NNW_OK)
      expect(memcmp(arena + off[2], want, size * count) == 0, "binary_int kind%d dtype%d rank%d", kind,
             dtype, c->rank);
    free(arena);
  }
  free(a);
  free(b);
  free(want);
}

void test_binary_int(void) {
  static const int int_types[] = {2, 3, 4, 5, 6, 7, 12, 13};
  for (size_t i = 0; i < N_BCASES; i++)
    for (int kind = 0; kind < 8; kind++)
      for (int t = 0; t < 8; t++) binary_int_case(&bcases[i], kind, int_types[t]);
}

/* compare: operands drawn from a few values per type so that ties happen */
static const int dtypes[] = {1, 2, 3, 4, 5, 6, 7, 9, 11, 12, 13};
static int dsize(int t) { return t == 1 || t == 6 || t == 12 ? 4 : t == 7 || t == 11 || t == 13 ? 8 : t == 4 || t == 5 ? 2 : 1; }

/* value v (small, or NaN for floats when nan) stored as dtype t at p */
static double store_value(int t, uint8_t *p, int v, int nan) {
  double d = v;
  switch (t) {
    case 1: { float f = nan ? NAN : (float)v; memcpy(p, &f, 4); return f; }
    case 11: { double x = nan ? NAN : v; memcpy(p, &x, 8); return x; }
    case 9: { uint8_t x = (uint8_t)(v & 1); *p = x; return x; }
    case 2: { uint8_t x = (uint8_t)(v + 3); *p = x; return x; }
    case 3: { int8_t x = (int8_t)v; memcpy(p, &x, 1); return x; }
    case 4: { uint16_t x = (uint16_t)(v + 3); memcpy(p, &x, 2); return x; }
    case 5: { int16_t x = (int16_t)v; memcpy(p, &x, 2); return x; }
    case 6: { int32_t x = v; memcpy(p, &x, 4); return x; }
    case 12: { uint32_t x = (uint32_t)(v + 3) * 1000000000u; memcpy(p, &x, 4); return x; }
    case 7: { int64_t x = (int64_t)v * ((int64_t)1 << 40); memcpy(p, &x, 8); return (double)x; }
    default: { uint64_t x = (uint64_t)(v + 3) << 61; memcpy(p, &x, 8); return (double)x; }
  }
  return d;
}

static int compare_ref(int kind, double a, double b) {
  switch (kind) {
    case 0: return a == b;
    case 1: return a < b;
    case 2: return a > b;
    case 3: return a <= b;
    case 4: return a >= b;
    case 5: return (a != 0) && (b != 0);
    case 6: return (a != 0) || (b != 0);
    default: return (a != 0) != (b != 0);
  }
}

static void compare_case(const struct bcase *c, int kind, int t) {
  int size = dsize(t);
  size_t count = bcase_count(c), na = bcase_extent(c, 0), nb = bcase_extent(c, 1);
  uint8_t *a = malloc(8 * na), *b = malloc(8 * nb), *want = malloc(count);
  double *av = malloc(8 * na), *bv = malloc(8 * nb);
  for (size_t i = 0; i < na; i++) av[i] = store_value(t, a + size * i, (int)(rng_u32() % 5) - 2, rng_u32() % 9 == 0);
  for (size_t i = 0; i < nb; i++) bv[i] = store_value(t, b + size * i, (int)(rng_u32() % 5) - 2, rng_u32() % 9 == 0);
  for (size_t e = 0; e < count; e++) want[e] = (uint8_t)compare_ref(kind, av[bcase_at(c, 0, e)], bv[bcase_at(c, 1, e)]);
  for (int order = 0; order < 2; order++) {
    uint64_t bytes[3] = {size * na, size * nb, count};
    int32_t off[3];
    uint32_t arena_bytes = layout8(bytes, 3, order, off);
    uint8_t *arena = arena_new(arena_bytes);
    memcpy(arena + off[0], a, size * na);
    memcpy(arena + off[1], b, size * nb);
    int32_t args[NNW_COMPARE_NARGS] = {kind, t, off[0], off[1], off[2]};
    bcase_args(c, 2, args + NNW_COMPARE_RANK);
    if (run_op(NNW_OP_COMPARE, args, NNW_COMPARE_NARGS, arena, arena_bytes) == NNW_OK)
      expect(memcmp(arena + off[2], want, count) == 0, "compare kind%d dtype%d rank%d", kind, t, c->rank);
    free(arena);
  }
  free(a);
  free(b);
  free(want);
  free(av);
  free(bv);
}

void test_compare(void) {
  for (size_t i = 0; i < N_BCASES; i++)
    for (int kind = 0; kind < 8; kind++)
      for (size_t t = 0; t < sizeof dtypes / sizeof dtypes[0]; t++) compare_case(&bcases[i], kind, dtypes[t]);
  /* int64 and uint64 beyond double's 53 bits: neighbours must not compare equal */
  int64_t big[2] = {((int64_t)1 << 60) + 1, (int64_t)1 << 60};
  uint8_t *arena = arena_new(24);
  memcpy(arena, big, 16);
  int32_t args[NNW_COMPARE_NARGS] = {0, 7, 0, 8, 16, 1, 1, 1, 1, 1, 1, 1};
  if (run_op(NNW_OP_COMPARE, args, NNW_COMPARE_NARGS, arena, 24) == NNW_OK)
    expect(arena[16] == 0, "compare: int64 2^60+1 == 2^60");
  args[1] = 13;
  args[0] = 2;
  if (run_op(NNW_OP_COMPARE, args, NNW_COMPARE_NARGS, arena, 24) == NNW_OK)
    expect(arena[16] == 1, "compare: uint64 2^60+1 > 2^60");
  free(arena);
}

void test_unary_bool(void) {
  static const float x[] = {0.0f, -0.0f, 1.0f, -1.0f, INFINITY, -INFINITY, NAN, -NAN, 3e38f, 1e-45f, 2.0f};
  enum { N = sizeof x / sizeof x[0] };
  for (int kind = 0; kind < 5; kind++) {
    uint8_t want[N], in_bool[N];
    for (int i = 0; i < N; i++) {
      in_bool[i] = (uint8_t)(i % 3 == 0);
      want[i] = kind == 0 ? !in_bool[i] : kind == 1 ? (uint8_t)isnan(x[i])
              : kind == 2 ? (uint8_t)(isinf(x[i]) != 0) : kind == 3 ? x[i] == INFINITY : x[i] == -INFINITY;
    }
    uint64_t bytes[2] = {kind == 0 ? N : 4 * N, N};
    for (int order = 0; order < 2; order++) {
      int32_t off[2];
      uint32_t arena_bytes = layout8(bytes, 2, order, off);
      uint8_t *arena = arena_new(arena_bytes);
      memcpy(arena + off[0], kind == 0 ? (const void *)in_bool : (const void *)x, bytes[0]);
      int32_t args[NNW_UNARY_BOOL_NARGS] = {kind, off[0], off[1], N};
      if (run_op(NNW_OP_UNARY_BOOL, args, NNW_UNARY_BOOL_NARGS, arena, arena_bytes) == NNW_OK)
        expect(memcmp(arena + off[1], want, N) == 0, "unary_bool kind%d", kind);
      free(arena);
    }
  }
}

/* ---- where ------------------------------------------------------------------------------- */

static void where_case(const struct bcase *c, int esize) {
  size_t count = bcase_count(c), n[3] = {bcase_extent(c, 0), bcase_extent(c, 1), bcase_extent(c, 2)};
  uint8_t *cond = malloc(n[0]), *x = malloc(esize * n[1]), *y = malloc(esize * n[2]), *want = malloc(esize * count);
  for (size_t i = 0; i < n[0]; i++) cond[i] = (uint8_t)(rng_u32() % 2);
  for (size_t i = 0; i < esize * n[1]; i++) x[i] = (uint8_t)rng_u32();
  for (size_t i = 0; i < esize * n[2]; i++) y[i] = (uint8_t)rng_u32();
  for (size_t e = 0; e < count; e++) {
    int take_x = cond[bcase_at(c, 0, e)];
    const uint8_t *src = take_x ? x + esize * bcase_at(c, 1, e) : y + esize * bcase_at(c, 2, e);
    memcpy(want + esize * e, src, (size_t)esize);
  }
  for (int order = 0; order < 2; order++) {
    uint64_t bytes[4] = {n[0], esize * n[1], esize * n[2], esize * count};
    int32_t off[4];
    uint32_t arena_bytes = layout8(bytes, 4, order, off);
    uint8_t *arena = arena_new(arena_bytes);
    memcpy(arena + off[0], cond, n[0]);
    memcpy(arena + off[1], x, esize * n[1]);
    memcpy(arena + off[2], y, esize * n[2]);
    int32_t args[NNW_WHERE_NARGS] = {esize, off[0], off[1], off[2], off[3]};
    bcase_args(c, 3, args + NNW_WHERE_RANK);
    if (run_op(NNW_OP_WHERE, args, NNW_WHERE_NARGS, arena, arena_bytes) == NNW_OK)
      expect(memcmp(arena + off[3], want, esize * count) == 0, "where esize%d rank%d", esize, c->rank);
    free(arena);
  }
  free(cond);
  free(x);
  free(y);
  free(want);
}

void test_where(void) {
  for (size_t i = 0; i < N_BCASES; i++)
    for (int esize = 1; esize <= 8; esize *= 2) where_case(&bcases[i], esize);
}

/* ---- cast ------------------------------------------------------------------------------- */

/* runs cast from -> to over count elements of in; out gets count * size(to) bytes */
static void run_cast(int from, int to, const void *in, int count, void *out) {
  uint64_t bytes[2] = {(uint64_t)count * dsize(from == 10 ? 4 : from), (uint64_t)count * dsize(to == 10 ? 4 : to)};
  if (from == 10) bytes[0] = 2 * (uint64_t)count;
  if (to == 10) bytes[1] = 2 * (uint64_t)count;
  int32_t off[2];
  uint32_t arena_bytes = layout8(bytes, 2, rng_u32() % 2, off);
  uint8_t *arena = arena_new(arena_bytes);
  memcpy(arena + off[0], in, bytes[0]);
  memset(out, 0xAB, bytes[1]);
  int32_t args[NNW_CAST_NARGS] = {from, to, off[0], off[1], count};
  if (run_op(NNW_OP_CAST, args, NNW_CAST_NARGS, arena, arena_bytes) == NNW_OK)
    memcpy(out, arena + off[1], bytes[1]);
  free(arena);
}

static double half_value(uint16_t h) {
  int e = (h >> 10) & 31, m = h & 1023;
  double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
  return h & 0x8000 ? -v : v;
}

static void test_cast_half(void) {
  enum { H = 65536 };
  uint16_t *h = malloc(2 * H), *back = malloc(2 * H);
  float *f = malloc(4 * H);
  for (int i = 0; i < H; i++) h[i] = (uint16_t)i;
  run_cast(10, 1, h, H, f);
  size_t bad = 0;
  for (int i = 0; i < H; i++) {
    double want = half_value((uint16_t)i);
    int ok = isnan(want) ? isnan(f[i]) : (f[i] == want && !signbit(f[i]) == !signbit(want));
    if (!ok && bad++ < 3) printf("  half 0x%04x: got %.9g want %.9g\n", i, (double)f[i], want);
  }
  expect(bad == 0, "cast float16 -> float32: %zu of 65536 wrong", bad);
  run_cast(1, 10, f, H, back); /* and back, exactly (nan stays nan) */
  bad = 0;
  for (int i = 0; i < H; i++) {
    int is_nan = (i & 0x7C00) == 0x7C00 && (i & 0x3FF);
    bad += is_nan ? !((back[i] & 0x7C00) == 0x7C00 && (back[i] & 0x3FF)) : back[i] != i;
  }
  expect(bad == 0, "cast float32 -> float16 round trip: %zu of 65536 wrong", bad);
  /* between neighbours: the midpoint goes to the even one, a hair either side to the nearer */
  enum { M = 0x7C00 };
  float *mid = malloc(4 * 3 * M);
  double *mid64 = malloc(8 * 4 * M);
  uint16_t *want = malloc(2 * 4 * M), *got = malloc(2 * 4 * M);
  for (int i = 0; i < M; i++) {
    double lo = half_value((uint16_t)i), hi = i + 1 == M ? 65536.0 : half_value((uint16_t)(i + 1));
    double m = (lo + hi) / 2, hair = (hi - lo) / 64;
    mid[3 * i] = (float)m;
    mid[3 * i + 1] = (float)(m - hair);
    mid[3 * i + 2] = (float)(m + hair);
    want[3 * i] = (uint16_t)(i % 2 ? i + 1 : i);
    want[3 * i + 1] = (uint16_t)i;
    want[3 * i + 2] = (uint16_t)(i + 1);
  }
  run_cast(1, 10, mid, 3 * M, got);
  expect(memcmp(got, want, 2 * 3 * M) == 0, "cast float32 -> float16 rounding");
  /* from float64: no double rounding (m + m*2^-40 rounds up, though as a float it is m) */
  for (int i = 0; i < M; i++) {
    double lo = half_value((uint16_t)i), hi = i + 1 == M ? 65536.0 : half_value((uint16_t)(i + 1));
    double m = (lo + hi) / 2;
    mid64[4 * i] = m;
    mid64[4 * i + 1] = m + ldexp(m, -40);
    mid64[4 * i + 2] = -(m - ldexp(m, -40));
    mid64[4 * i + 3] = lo;
    want[4 * i] = (uint16_t)(i % 2 ? i + 1 : i);
    want[4 * i + 1] = (uint16_t)(i + 1);
    want[4 * i + 2] = (uint16_t)(0x8000 | i);
    want[4 * i + 3] = (uint16_t)i;
  }
  run_cast(11, 10, mid64, 4 * M, got);
  expect(memcmp(got, want, 2 * 4 * M) == 0, "cast float64 -> float16 rounding");
  free(h);
  free(back);
  free(f);
  free(mid);
  free(mid64);
  free(want);
  free(got);
}

/* one value of each type, in and out, as bytes */
struct cast_expect {
  int from, to;
  uint64_t in, want; /* little-endian bytes, low ones used */
};

static uint64_t fbits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static uint64_t dbits(double d) {
  uint64_t u;
  memcpy(&u, &d, 8);
  return u;
}

static int tsize(int t) { return t == 10 ? 2 : dsize(t); }

void test_cast(void) {
  test_cast_half();
  const struct cast_expect table[] = {
      {1, 6, fbits(-2.7f), (uint32_t)-2},
      {1, 6, fbits(2.7f), 2},
      {1, 2, fbits(300.0f), 44},              /* wraps like int -> int, as on x86 */
      {1, 3, fbits(-129.0f), 127},
      {1, 6, fbits(NAN), 0},
      {1, 7, fbits(1e20f), (uint64_t)INT64_MAX},
      {1, 7, fbits(-1e20f), (uint64_t)INT64_MIN},
      {1, 13, fbits(-1.0f), UINT64_MAX},
      {1, 13, fbits(1.8e19f), (uint64_t)1.8e19f},
      {1, 13, fbits(1e20f), UINT64_MAX},
      {7, 2, (uint64_t)-1, 255},
      {13, 1, UINT64_MAX, fbits(18446744073709551616.0f)},
      {7, 1, ((uint64_t)1 << 53) + 1, fbits(9007199254740992.0f)},
      {7, 1, ((uint64_t)1 << 25) + 3, fbits(33554436.0f)},   /* one rounding: tie to even */
      {7, 11, (uint64_t)-5, dbits(-5.0)},
      {6, 10, 70000, 0x7C00},
      {6, 10, (uint32_t)-3, 0xC200},
      {3, 7, 0x80, (uint64_t)-128},
      {2, 5, 0x80, 128},
      {5, 2, 0x8001, 1},
      {12, 7, 0xFFFFFFFFu, 0xFFFFFFFFu},
      {6, 12, (uint32_t)-1, 0xFFFFFFFFu},
      {1, 9, fbits(NAN), 1},
      {1, 9, fbits(-0.0f), 0},
      {1, 9, fbits(1e-45f), 1},
      {7, 9, (uint64_t)1 << 40, 1},
      {9, 1, 1, fbits(1.0f)},
      {9, 7, 1, 1},
      {11, 1, dbits(1e300), fbits(INFINITY)},
      {11, 1, dbits(1.0000000596046448), fbits(1.0f)},        /* the tie below 1 + 2^-23 */
      {11, 6, dbits(-2147483648.9), (uint32_t)INT32_MIN},
      {10, 6, 0xC500, (uint32_t)-5},                          /* -5.0 */
      {10, 9, 0x8000, 0},
      {10, 11, 0x3555, dbits(half_value(0x3555))},
  };
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
    const struct cast_expect *t = &table[i];
    uint64_t got = 0, in = t->in;
    run_cast(t->from, t->to, &in, 1, &got);
    int n = tsize(t->to);
    uint64_t mask = n == 8 ? UINT64_MAX : ((uint64_t)1 << (8 * n)) - 1;
    expect((got & mask) == t->want, "cast %d -> %d of 0x%llx: got 0x%llx want 0x%llx", t->from,
           t->to, (unsigned long long)t->in, (unsigned long long)(got & mask), (unsigned long long)t->want);
  }
  /* every pair, on values every type holds exactly */
  static const int all[] = {1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13};
  static const int vals[] = {0, 1, 2, 3, 100, 127, 1, 0, 5};
  enum { V = sizeof vals / sizeof vals[0] };
  for (int a = 0; a < 12; a++)
    for (int b = 0; b < 12; b++) {
      int from = all[a], to = all[b];
      uint8_t in[8 * V], out[8 * V];
      for (int i = 0; i < V; i++) {
        int v = from == 9 ? vals[i] != 0 : vals[i];
        if (from == 10) {
          uint16_t hh = 0;
          for (uint32_t k = 0; k < 0x7C00; k++)
            if (half_value((uint16_t)k) == v) { hh = (uint16_t)k; break; }
          memcpy(in + 2 * i, &hh, 2);
        } else {
          store_value(from == 2 || from == 4 ? 3 : from == 12 || from == 13 ? 6 : from, in + tsize(from) * i, v, 0);
          if (from == 13) { uint64_t x = (uint64_t)v; memcpy(in + 8 * i, &x, 8); }
          if (from == 7) { int64_t x = v; memcpy(in + 8 * i, &x, 8); }
          if (from == 12) { uint32_t x = (uint32_t)v; memcpy(in + 4 * i, &x, 4); }
          if (from == 4) { uint16_t x = (uint16_t)v; memcpy(in + 2 * i, &x, 2); }
          if (from == 2) in[i] = (uint8_t)v;
        }
      }
      run_cast(from, to, in, V, out);
      size_t bad = 0;
      for (int i = 0; i < V; i++) {
        double want = to == 9 ? vals[i] != 0 : from == 9 ? vals[i] != 0 : vals[i], got;
        const uint8_t *p = out + tsize(to) * i;
        switch (to) {
          case 1: { float x; memcpy(&x, p, 4); got = x; break; }
          case 11: { double x; memcpy(&x, p, 8); got = x; break; }
          case 10: { uint16_t x; memcpy(&x, p, 2); got = half_value(x); break; }
          case 3: { int8_t x; memcpy(&x, p, 1); got = x; break; }
          case 4: { uint16_t x; memcpy(&x, p, 2); got = x; break; }
          case 5: { int16_t x; memcpy(&x, p, 2); got = x; break; }
          case 6: { int32_t x; memcpy(&x, p, 4); got = x; break; }
          case 12: { uint32_t x; memcpy(&x, p, 4); got = x; break; }
          case 7: { int64_t x; memcpy(&x, p, 8); got = (double)x; break; }
          case 13: { uint64_t x; memcpy(&x, p, 8); got = (double)x; break; }
          default: got = *p; break; /* u8, bool */
        }
        bad += got != want;
      }
      expect(bad == 0, "cast %d -> %d: %zu of %d wrong", from, to, bad, V);
    }
}

/* ---- hostile arguments ------------------------------------------------------------------- */

void test_logic_refusals(void) {
  /* binary_int: int64 a at 0 (3), b at 24 (3), y at 48 (3); arena 72 */
  int32_t bi[NNW_BINARY_INT_NARGS] = {0, 7, 0, 24, 48, 1, 3, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0};
  expect(load_status(NNW_OP_BINARY_INT, bi, NNW_BINARY_INT_NARGS, 72) == NNW_OK, "binary_int: valid refused");
  REFUSED(NNW_OP_BINARY_INT, bi, NNW_BINARY_INT_NARGS, 72, NNW_BINARY_INT_KIND, 8, NNW_BAD_ARGS);
  REFUSED(NNW_OP_BINARY_INT, bi, NNW_BINARY_INT_NARGS, 72, NNW_BINARY_INT_DTYPE, 9, NNW_BAD_ARGS);
  REFUSED(NNW_OP_BINARY_INT, bi, NNW_BINARY_INT_NARGS, 72, NNW_BINARY_INT_DTYPE, 11, NNW_BAD_ARGS);
  REFUSED(NNW_OP_BINARY_INT, bi, NNW_BINARY_INT_NARGS, 72, NNW_BINARY_INT_DTYPE, 1, NNW_BAD_ARGS);
  REFUSED(NNW_OP_BINARY_INT, bi, NNW_BINARY_INT_NARGS, 72, NNW_BINARY_INT_RANK, 7, NNW_BAD_ARGS);
  REFUSED(NNW_OP_BINARY_INT, bi, NNW_BINARY_INT_NARGS, 72, NNW_BINARY_INT_D0, 0, NNW_BAD_ARGS);
  REFUSED(NNW_OP_BINARY_INT, bi, NNW_BINARY_INT_NARGS, 72, NNW_BINARY_INT_AS0, -1, NNW_BAD_ARGS);
  REFUSED(NNW_OP_BINARY_INT, bi, NNW_BINARY_INT_NARGS, 72, NNW_BINARY_INT_A, 4, NNW_BAD_ARGS);   /* misaligned */
  REFUSED(NNW_OP_BINARY_INT, bi, NNW_BINARY_INT_NARGS, 72, NNW_BINARY_INT_Y, 64, NNW_OUT_OF_BOUNDS);
  REFUSED(NNW_OP_BINARY_INT, bi, NNW_BINARY_INT_NARGS, 72, NNW_BINARY_INT_Y, 8, NNW_BAD_ARGS);   /* overlaps a */
  REFUSED(NNW_OP_BINARY_INT, bi, NNW_BINARY_INT_NARGS, 72, NNW_BINARY_INT_BS0, 1 << 30, NNW_OUT_OF_BOUNDS);
  REFUSED(NNW_OP_BINARY_INT, bi, NNW_BINARY_INT_NARGS, 72, NNW_BINARY_INT_D0, 1 << 30, NNW_OUT_OF_BOUNDS);
  REFUSED(NNW_OP_BINARY_INT, bi, NNW_BINARY_INT_NARGS, 72, NNW_BINARY_INT_A, -8, NNW_OUT_OF_BOUNDS);
  /* compare: float a at 0 (3), b at 12 (3), bool y at 24 (3); arena 27 */
  int32_t cm[NNW_COMPARE_NARGS] = {1, 1, 0, 12, 24, 1, 3, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0};
  expect(load_status(NNW_OP_COMPARE, cm, NNW_COMPARE_NARGS, 27) == NNW_OK, "compare: valid refused");
  REFUSED(NNW_OP_COMPARE, cm, NNW_COMPARE_NARGS, 27, NNW_COMPARE_KIND, 8, NNW_BAD_ARGS);
  REFUSED(NNW_OP_COMPARE, cm, NNW_COMPARE_NARGS, 27, NNW_COMPARE_KIND, -1, NNW_BAD_ARGS);
  REFUSED(NNW_OP_COMPARE, cm, NNW_COMPARE_NARGS, 27, NNW_COMPARE_DTYPE, 10, NNW_BAD_ARGS);
  REFUSED(NNW_OP_COMPARE, cm, NNW_COMPARE_NARGS, 27, NNW_COMPARE_DTYPE, 8, NNW_BAD_ARGS);
  REFUSED(NNW_OP_COMPARE, cm, NNW_COMPARE_NARGS, 27, NNW_COMPARE_DTYPE, 7, NNW_BAD_ARGS); /* b misaligned */
  REFUSED(NNW_OP_COMPARE, cm, NNW_COMPARE_NARGS, 27, NNW_COMPARE_DTYPE, 11, NNW_BAD_ARGS);
  REFUSED(NNW_OP_COMPARE, cm, NNW_COMPARE_NARGS, 27, NNW_COMPARE_AS0, 3, NNW_OUT_OF_BOUNDS);
  REFUSED(NNW_OP_COMPARE, cm, NNW_COMPARE_NARGS, 27, NNW_COMPARE_B, 13, NNW_BAD_ARGS);
  REFUSED(NNW_OP_COMPARE, cm, NNW_COMPARE_NARGS, 27, NNW_COMPARE_Y, 25, NNW_OUT_OF_BOUNDS);
  REFUSED(NNW_OP_COMPARE, cm, NNW_COMPARE_NARGS, 27, NNW_COMPARE_Y, 10, NNW_BAD_ARGS);
  REFUSED(NNW_OP_COMPARE, cm, NNW_COMPARE_NARGS, 27, NNW_COMPARE_RANK, -1, NNW_BAD_ARGS);
  /* unary_bool: isnan of float x at 0 (4) into y at 16; arena 20 */
  int32_t ub[NNW_UNARY_BOOL_NARGS] = {1, 0, 16, 4};
  expect(load_status(NNW_OP_UNARY_BOOL, ub, NNW_UNARY_BOOL_NARGS, 20) == NNW_OK, "unary_bool: valid refused");
  REFUSED(NNW_OP_UNARY_BOOL, ub, NNW_UNARY_BOOL_NARGS, 20, NNW_UNARY_BOOL_KIND, 5, NNW_BAD_ARGS);
  REFUSED(NNW_OP_UNARY_BOOL, ub, NNW_UNARY_BOOL_NARGS, 20, NNW_UNARY_BOOL_COUNT, 0, NNW_BAD_ARGS);
  REFUSED(NNW_OP_UNARY_BOOL, ub, NNW_UNARY_BOOL_NARGS, 20, NNW_UNARY_BOOL_COUNT, 5, NNW_OUT_OF_BOUNDS);
  REFUSED(NNW_OP_UNARY_BOOL, ub, NNW_UNARY_BOOL_NARGS, 20, NNW_UNARY_BOOL_X, 2, NNW_BAD_ARGS);
  REFUSED(NNW_OP_UNARY_BOOL, ub, NNW_UNARY_BOOL_NARGS, 20, NNW_UNARY_BOOL_Y, 12, NNW_BAD_ARGS);
  REFUSED(NNW_OP_UNARY_BOOL, ub, NNW_UNARY_BOOL_NARGS, 20, NNW_UNARY_BOOL_Y, 0, NNW_BAD_ARGS); /* isnan in place */
  /* cast: float32 x at 0 (4) to int64 y at 16; arena 48 */
  int32_t ca[NNW_CAST_NARGS] = {1, 7, 0, 16, 4};
  expect(load_status(NNW_OP_CAST, ca, NNW_CAST_NARGS, 48) == NNW_OK, "cast: valid refused");
  REFUSED(NNW_OP_CAST, ca, NNW_CAST_NARGS, 48, NNW_CAST_FROM, 8, NNW_BAD_ARGS);
  REFUSED(NNW_OP_CAST, ca, NNW_CAST_NARGS, 48, NNW_CAST_TO, 14, NNW_BAD_ARGS);
  REFUSED(NNW_OP_CAST, ca, NNW_CAST_NARGS, 48, NNW_CAST_TO, 0, NNW_BAD_ARGS);
  REFUSED(NNW_OP_CAST, ca, NNW_CAST_NARGS, 48, NNW_CAST_Y, 20, NNW_BAD_ARGS);        /* misaligned */
  REFUSED(NNW_OP_CAST, ca, NNW_CAST_NARGS, 48, NNW_CAST_Y, 8, NNW_BAD_ARGS);         /* overlaps x */
  REFUSED(NNW_OP_CAST, ca, NNW_CAST_NARGS, 48, NNW_CAST_COUNT, 5, NNW_OUT_OF_BOUNDS);
  REFUSED(NNW_OP_CAST, ca, NNW_CAST_NARGS, 48, NNW_CAST_COUNT, -4, NNW_BAD_ARGS);
  REFUSED(NNW_OP_CAST, ca, NNW_CAST_NARGS, 48, NNW_CAST_COUNT, 0x7FFFFFFF, NNW_OUT_OF_BOUNDS);
  /* where: cond at 0 (4), int64 x at 8 (4), y at 40 (1), out at 48 (4); arena 80 */
  int32_t wh[NNW_WHERE_NARGS] = {8, 0, 8, 40, 48, 1, 4, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0,
                                 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  expect(load_status(NNW_OP_WHERE, wh, NNW_WHERE_NARGS, 80) == NNW_OK, "where: valid refused");
  REFUSED(NNW_OP_WHERE, wh, NNW_WHERE_NARGS, 80, NNW_WHERE_ESIZE, 3, NNW_BAD_ARGS);
  REFUSED(NNW_OP_WHERE, wh, NNW_WHERE_NARGS, 80, NNW_WHERE_ESIZE, 16, NNW_BAD_ARGS);
  REFUSED(NNW_OP_WHERE, wh, NNW_WHERE_NARGS, 80, NNW_WHERE_X, 12, NNW_BAD_ARGS);
  REFUSED(NNW_OP_WHERE, wh, NNW_WHERE_NARGS, 80, NNW_WHERE_OUT, 56, NNW_OUT_OF_BOUNDS);
  REFUSED(NNW_OP_WHERE, wh, NNW_WHERE_NARGS, 80, NNW_WHERE_OUT, 40, NNW_BAD_ARGS);   /* overlaps y */
  REFUSED(NNW_OP_WHERE, wh, NNW_WHERE_NARGS, 80, NNW_WHERE_COND, 48, NNW_BAD_ARGS);  /* overlaps out */
  REFUSED(NNW_OP_WHERE, wh, NNW_WHERE_NARGS, 80, NNW_WHERE_YS0, 1 << 29, NNW_OUT_OF_BOUNDS);
  REFUSED(NNW_OP_WHERE, wh, NNW_WHERE_NARGS, 80, NNW_WHERE_CS0, -1, NNW_BAD_ARGS);
  REFUSED(NNW_OP_WHERE, wh, NNW_WHERE_NARGS, 80, NNW_WHERE_RANK, 7, NNW_BAD_ARGS);
  {
    int32_t big[NNW_WHERE_NARGS];
    memcpy(big, wh, sizeof big);
    big[NNW_WHERE_RANK] = 6;
    for (int i = 0; i < 6; i++) {
      big[NNW_WHERE_D0 + i] = 1 << 16;
      big[NNW_WHERE_CS0 + i] = big[NNW_WHERE_XS0 + i] = big[NNW_WHERE_YS0 + i] = 0;
    }
    expect(load_status(NNW_OP_WHERE, big, NNW_WHERE_NARGS, 80) == NNW_OUT_OF_BOUNDS, "where: 2^96 elements");
  }
  /* unary and binary's new kinds stay in range */
  int32_t un[NNW_UNARY_NARGS] = {24, 0, 16, 4, 0, 0};
  expect(load_status(NNW_OP_UNARY, un, NNW_UNARY_NARGS, 32) == NNW_OK, "unary cos refused");
  REFUSED(NNW_OP_UNARY, un, NNW_UNARY_NARGS, 32, NNW_UNARY_KIND, 26, NNW_BAD_ARGS);
}

/* random mutations of each op's valid arguments: whatever loads must also run cleanly (the
 * sanitizers and the arena's exact size catch any access outside it) */
void test_logic_fuzz(void) {
  enum { ARENA_BYTES = 96, ROUNDS = 1500 };
  static const int32_t specials[] = {0, -1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 16, 24, 25,
                                     64, 88, 95, 96, 1 << 16, 1 << 30, INT32_MAX, INT32_MIN, -8};
  struct {
    int opcode, n;
    int32_t args[32];
  } ops[] = {
      {NNW_OP_BINARY_INT, NNW_BINARY_INT_NARGS, {3, 7, 0, 24, 48, 1, 3, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0}},
      {NNW_OP_COMPARE, NNW_COMPARE_NARGS, {1, 1, 0, 12, 24, 2, 3, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0}},
      {NNW_OP_UNARY_BOOL, NNW_UNARY_BOOL_NARGS, {2, 0, 16, 4}},
      {NNW_OP_CAST, NNW_CAST_NARGS, {1, 10, 0, 16, 4}},
      {NNW_OP_WHERE, NNW_WHERE_NARGS, {8, 0, 8, 40, 48, 1, 4, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0,
                                       1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
      {NNW_OP_UNARY, NNW_UNARY_NARGS, {9, 0, 16, 4, 0, 0}},
      {NNW_OP_BINARY, NNW_BINARY_NARGS, {7, 0, 16, 32, 2, 2, 2, 1, 1, 1, 1, 2, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0}},
  };
  for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
    expect(load_status(ops[k].opcode, ops[k].args, ops[k].n, ARENA_BYTES) == NNW_OK, "fuzz base %zu refused", k);
    unsigned loaded = 0;
    for (int r = 0; r < ROUNDS; r++) {
      int32_t a[32];
      memcpy(a, ops[k].args, sizeof a);
      int edits = 1 + (int)(rng_u32() % 3);
      for (int e = 0; e < edits; e++) {
        int i = (int)(rng_u32() % (uint32_t)ops[k].n);
        switch (rng_u32() % 3) {
          case 0: a[i] = specials[rng_u32() % (sizeof specials / sizeof specials[0])]; break;
          case 1: a[i] = (int32_t)((uint32_t)a[i] + (rng_u32() % 9) - 4u); break;
          default: a[i] = (int32_t)rng_u32(); break;
        }
      }
      int32_t words[64];
      int n = op_words(words, ops[k].opcode, a, ops[k].n);
      struct plan p = plan_build(NULL, 0, words, (uint32_t)n, ARENA_BYTES, NULL, 0);
      uint8_t *arena = arena_new(ARENA_BYTES);
      for (int i = 0; i < ARENA_BYTES; i++) arena[i] = (uint8_t)rng_u32();
      int status = nnw_plan_load(p.bytes, p.size, arena, ARENA_BYTES, NULL);
      if (status == NNW_OK) {
        loaded++;
        nnw_plan_run(p.bytes, arena);
      } else if (status != NNW_BAD_ARGS && status != NNW_OUT_OF_BOUNDS) {
        expect(0, "fuzz op %d: status %d", ops[k].opcode, status);
      }
      free(arena);
      plan_free(&p);
    }
    expect(loaded > 0 && loaded < ROUNDS, "fuzz op %d: %u of %d loaded", ops[k].opcode, loaded, ROUNDS);
  }
}
