/* unary: activations and float32 math over count contiguous elements; y may equal x.
 * sigmoid and tanh are act4.h's (shared with the recurrent op); elu and selu take expm1 of min(x, 0) likewise; exp, erf, both gelus and mish are vectorised
 * (vmath.h); the rest are plain loops over libm or single instructions. */
#include <math.h>

#include "internal.h"
#include "act4.h"
#include "simd.h"
#include "threads/split.h"
#include "vmath.h"

enum {
  CLAMP, SIGMOID, TANH, EXP, LOG, SQRT, RECIPROCAL, NEG, ABS, ERF, GELU, GELU_TANH,
  HARD_SIGMOID, HARD_SWISH, LEAKY_RELU, ELU, SOFTPLUS, SELU, SOFTSIGN, SIGN, FLOOR, CEIL, ROUND,
  SIN, COS, MISH, KINDS
};

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

/* x >= 0 ? x : alpha * expm1(x) */
static inline v4 elu4(v4 x, v4 alpha) {
  v4 e = v4_expm1_nonpos(v4_min(x, v4_set1(0.0f)));
  return v4_select_nonneg(x, x, v4_mul(alpha, e));
}

static inline v4 gelu4(v4 x) { return v4_gelu(x); }

/* 0.5 x (1 + tanh(u)) = x sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3) */
static inline v4 gelu_tanh4(v4 x) {
  v4 u = v4_mul(x, v4_madd(v4_set1(1.0f), v4_set1(0.044715f), v4_mul(x, x)));
  return v4_mul(x, nnw_sigmoid4(v4_mul(v4_set1(1.595769121605730711f), u)));
}

/* x tanh(softplus(x)) = x n / (n + 2), n = e (e + 2), e = exp(x): no log, and exact in the
 * tails (n/(n+2) is 1 in float from x = 20 up; for very negative x, n ~ 2e) */
static inline v4 mish4(v4 x) {
  v4 e = v4_exp(v4_min(x, v4_set1(20.0f)));
  v4 n = v4_mul(e, v4_add(e, v4_set1(2.0f)));
  return v4_mul(x, v4_div(n, v4_add(n, v4_set1(2.0f))));
}

static inline v4 hard_sigmoid4(v4 x, v4 alpha, v4 beta) {
  return v4_clamp(v4_madd(beta, alpha, x), v4_set1(0.0f), v4_set1(1.0f));
}

static inline v4 apply(int32_t kind, v4 x, v4 p0, v4 p1) {
  switch (kind) {
    case CLAMP: return v4_clamp(x, p0, p1);
    case SIGMOID: return nnw_sigmoid4(x);
    case TANH: return nnw_tanh4(x);
    case EXP: return v4_exp(x);
    case ERF: return v4_erf(x);
    case GELU: return gelu4(x);
    case GELU_TANH: return gelu_tanh4(x);
    case HARD_SIGMOID: return hard_sigmoid4(x, p0, p1);
    case HARD_SWISH: return v4_mul(x, hard_sigmoid4(x, v4_set1(1.0f / 6.0f), v4_set1(0.5f)));
    case LEAKY_RELU: return v4_select_nonneg(x, x, v4_mul(x, p0));
    case ELU: return elu4(x, p0);
    case SELU: return v4_mul(p1, elu4(x, p0));
    case MISH: return mish4(x);
    default: return v4_div(x, v4_add(v4_set1(1.0f), v4_abs(x))); /* SOFTSIGN */
  }
}

static float softplus1(float x) { return (x > 0 ? x : 0.0f) + log1pf(expf(-fabsf(x))); }
static float sign1(float x) { return x > 0 ? 1.0f : x < 0 ? -1.0f : x; }

/* the kinds computed one element at a time; returns 0 for the vector kinds */
static int scalar_loop(int32_t kind, const float *x, float *y, int32_t count) {
#define LOOP(expr)                                           \
  for (int32_t i = 0; i < count; i++) {                      \
    float t = x[i];                                          \
    y[i] = (expr);                                           \
  }                                                          \
  return 1;
  switch (kind) {
    case LOG: LOOP(logf(t))
    case SQRT: LOOP(sqrtf(t))
    case RECIPROCAL: LOOP(1.0f / t)
    case NEG: LOOP(-t)
    case ABS: LOOP(fabsf(t))
    case SOFTPLUS: LOOP(softplus1(t))
    case SIGN: LOOP(sign1(t))
    case FLOOR: LOOP(floorf(t))
    case CEIL: LOOP(ceilf(t))
    case ROUND: LOOP(rintf(t)) /* the default rounding mode: half to even */
    case SIN: LOOP(sinf(t))
    case COS: LOOP(cosf(t))
    default: return 0;
  }
#undef LOOP
}

static void unary_run(int32_t kind, const float *x, float *y, int32_t count, v4 p0, v4 p1) {
  if (scalar_loop(kind, x, y, count)) return;
  int32_t i = 0;
  switch (kind) {
    /* one loop per kind so the switch stays out of the loop */
#define LOOP(f) for (; i + 4 <= count; i += 4) v4_store(y + i, f); break;
    case CLAMP: LOOP(v4_clamp(v4_load(x + i), p0, p1))
    case SIGMOID: LOOP(nnw_sigmoid4(v4_load(x + i)))
    case TANH: LOOP(nnw_tanh4(v4_load(x + i)))
    case EXP: LOOP(v4_exp(v4_load(x + i)))
    case ERF: LOOP(v4_erf(v4_load(x + i)))
    case GELU: LOOP(gelu4(v4_load(x + i)))
    case GELU_TANH: LOOP(gelu_tanh4(v4_load(x + i)))
    default: LOOP(apply(kind, v4_load(x + i), p0, p1))
#undef LOOP
  }
  if (i < count) {
    float t[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    memcpy(t, x + i, sizeof(float) * (size_t)(count - i));
    v4_store(t, apply(kind, v4_load(t), p0, p1));
    memcpy(y + i, t, sizeof(float) * (size_t)(count - i));
  }
}

/* Threads (threads/split.h): long runs in chunks of CHUNK elements (a multiple of 4: the vector
 * loop meets the same groups of four, the tail stays the last chunk's); each element is computed
 * alone, so N threads give the bits of one. */
enum { CHUNK = 4096 };

struct unary_job {
  int32_t kind, count;
  const float *x;
  float *y;
  v4 p0, p1;
};

static void unary_task(void *ctx, int32_t start, int32_t count, int32_t worker) {
  const struct unary_job *j = ctx;
  int32_t i0 = start * CHUNK, n = j->count - i0 < count * CHUNK ? j->count - i0 : count * CHUNK;
  (void)worker;
  unary_run(j->kind, j->x + i0, j->y + i0, n, j->p0, j->p1);
}

void nnw_run_unary(const int32_t *v, uint8_t *arena) {
  struct unary_job job = {v[NNW_UNARY_KIND], v[NNW_UNARY_COUNT], nnw_f32_at(arena, v[NNW_UNARY_X]),
                          nnw_f32_at(arena, v[NNW_UNARY_Y]), v4_set1(nnw_arg_f32(v[NNW_UNARY_P0])),
                          v4_set1(nnw_arg_f32(v[NNW_UNARY_P1]))};
  int32_t chunks = (int32_t)(((int64_t)job.count + CHUNK - 1) / CHUNK);
  int32_t threads = nnw_split_threads((uint64_t)job.count, NNW_SPLIT_MIN_ELEMS, chunks);
  if (threads > 1) {
    nnw_parallel_for(chunks, nnw_split_tile(chunks, threads), unary_task, &job);
    return;
  }
  unary_run(job.kind, job.x, job.y, job.count, job.p0, job.p1);
}
