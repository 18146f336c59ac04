/* v4: four f32 lanes. WASM SIMD128 under __wasm_simd128__; natively gcc/clang vector extensions,
 * or with -DNNW_PORTABLE_C (or another compiler) a plain struct of four floats.
 *
 * The kernels are written once against v4 so that the native (gcc + sanitizers) build runs the
 * very loops, tiles, tails and over-read guards that ship in kernels.wasm; only the lane maths
 * below differs. min/max are the "pseudo" pmin/pmax (one x86 instruction each in V8 and
 * Cranelift, where f32x4.min/max need NaN fix-ups): pmax(a, b) = a < b ? b : a, so a NaN in the
 * first operand survives a clamp, as in onnxruntime.
 */
#ifndef NNW_SIMD_H
#define NNW_SIMD_H
#include <math.h>
#include <stdint.h>
#include <string.h>

#ifdef __wasm_simd128__
#include <wasm_simd128.h>

typedef v128_t v4;

static inline v4 v4_load(const float *p) { return wasm_v128_load(p); }
static inline void v4_store(float *p, v4 v) { wasm_v128_store(p, v); }
static inline v4 v4_set1(float x) { return wasm_f32x4_splat(x); }
static inline v4 v4_load1(const float *p) { return wasm_v128_load32_splat(p); }
/* lane L of a in every lane (L a constant): one pshufd in V8 and in Cranelift */
#define v4_dup(a, L) wasm_i32x4_shuffle((a), (a), (L), (L), (L), (L))
static inline v4 v4_add(v4 a, v4 b) { return wasm_f32x4_add(a, b); }
static inline v4 v4_sub(v4 a, v4 b) { return wasm_f32x4_sub(a, b); }
static inline v4 v4_mul(v4 a, v4 b) { return wasm_f32x4_mul(a, b); }
static inline v4 v4_div(v4 a, v4 b) { return wasm_f32x4_div(a, b); }
static inline v4 v4_max(v4 a, v4 b) { return wasm_f32x4_pmax(a, b); }
static inline v4 v4_min(v4 a, v4 b) { return wasm_f32x4_pmin(a, b); }
static inline v4 v4_abs(v4 a) { return wasm_f32x4_abs(a); }
static inline float v4_lane0(v4 a) { return wasm_f32x4_extract_lane(a, 0); }
/* x >= 0 ? a : b, per lane */
static inline v4 v4_select_nonneg(v4 x, v4 a, v4 b) {
  return wasm_v128_bitselect(a, b, wasm_f32x4_ge(x, wasm_f32x4_splat(0.0f)));
}
/* |m| with the sign of s */
static inline v4 v4_copysign(v4 m, v4 s) {
  const v4 sign = wasm_i32x4_splat((int32_t)0x80000000);
  return wasm_v128_bitselect(s, m, sign);
}
/* 2^v for v integral in [-126, 127], given t = v + 0x1.8p23 (the rounding trick leaves v in
 * the low mantissa bits of t; shifting them into the exponent field needs no conversion). */
static inline v4 v4_pow2_from_magic(v4 t) {
  return wasm_i32x4_add(wasm_i32x4_shl(t, 23), wasm_i32x4_splat(0x3F800000));
}
static inline float v4_hsum(v4 a) {
  v4 s = wasm_f32x4_add(a, wasm_i32x4_shuffle(a, a, 2, 3, 0, 1));
  s = wasm_f32x4_add(s, wasm_i32x4_shuffle(s, s, 1, 0, 3, 2));
  return wasm_f32x4_extract_lane(s, 0);
}
static inline float v4_hmax(v4 a) {
  v4 s = wasm_f32x4_pmax(a, wasm_i32x4_shuffle(a, a, 2, 3, 0, 1));
  s = wasm_f32x4_pmax(s, wasm_i32x4_shuffle(s, s, 1, 0, 3, 2));
  return wasm_f32x4_extract_lane(s, 0);
}
/* lanes 0 and 2 of a, then of b: the even columns of eight */
static inline v4 v4_even(v4 a, v4 b) { return wasm_i32x4_shuffle(a, b, 0, 2, 4, 6); }
/* interleaves of lanes (a0 b0 a1 b1), (a2 b2 a3 b3) and of halves (a0 a1 b0 b1), (a2 a3 b2 b3):
 * shuffles V8 matches to a single unpck instruction each */
static inline v4 v4_unpacklo(v4 a, v4 b) { return wasm_i32x4_shuffle(a, b, 0, 4, 1, 5); }
static inline v4 v4_unpackhi(v4 a, v4 b) { return wasm_i32x4_shuffle(a, b, 2, 6, 3, 7); }
static inline v4 v4_unpacklo64(v4 a, v4 b) { return wasm_i64x2_shuffle(a, b, 0, 2); }
static inline v4 v4_unpackhi64(v4 a, v4 b) { return wasm_i64x2_shuffle(a, b, 1, 3); }

#elif defined(__GNUC__) && !defined(NNW_PORTABLE_C)
/* gcc/clang vector extensions: the native build gets 128-bit SSE/NEON code with the same lane
 * semantics (and compiles fast under the sanitizers, unlike the struct below) */

typedef float v4 __attribute__((vector_size(16)));
typedef uint32_t nnw_v4u __attribute__((vector_size(16)));
typedef int32_t nnw_v4i __attribute__((vector_size(16)));

static inline v4 v4_load(const float *p) {
  v4 r;
  memcpy(&r, p, sizeof r);
  return r;
}
static inline void v4_store(float *p, v4 v) { memcpy(p, &v, sizeof v); }
static inline v4 v4_set1(float x) { return (v4){x, x, x, x}; }
static inline v4 v4_load1(const float *p) { return v4_set1(*p); }
#define v4_dup(a, L) v4_set1((a)[(L)])
static inline v4 v4_add(v4 a, v4 b) { return a + b; }
static inline v4 v4_sub(v4 a, v4 b) { return a - b; }
static inline v4 v4_mul(v4 a, v4 b) { return a * b; }
static inline v4 v4_div(v4 a, v4 b) { return a / b; }
/* m ? a : b per lane, m all-ones or zero */
static inline v4 nnw_v4_blend(nnw_v4i m, v4 a, v4 b) {
  return (v4)((m & (nnw_v4i)a) | (~m & (nnw_v4i)b));
}
static inline v4 v4_max(v4 a, v4 b) { return nnw_v4_blend(a < b, b, a); }
static inline v4 v4_min(v4 a, v4 b) { return nnw_v4_blend(b < a, b, a); }
static inline v4 v4_abs(v4 a) { return (v4)((nnw_v4u)a & 0x7FFFFFFFu); }
static inline float v4_lane0(v4 a) { return a[0]; }
static inline v4 v4_select_nonneg(v4 x, v4 a, v4 b) {
  return nnw_v4_blend(x >= v4_set1(0.0f), a, b);
}
static inline v4 v4_copysign(v4 m, v4 s) {
  return (v4)(((nnw_v4u)m & 0x7FFFFFFFu) | ((nnw_v4u)s & 0x80000000u));
}
static inline v4 v4_pow2_from_magic(v4 t) { return (v4)(((nnw_v4u)t << 23) + 0x3F800000u); }
static inline float v4_hsum(v4 a) { return (a[0] + a[2]) + (a[1] + a[3]); }
static inline float v4_hmax(v4 a) {
  float x = a[0] < a[2] ? a[2] : a[0], y = a[1] < a[3] ? a[3] : a[1];
  return x < y ? y : x;
}
static inline v4 v4_even(v4 a, v4 b) { return (v4){a[0], a[2], b[0], b[2]}; }
static inline v4 v4_unpacklo(v4 a, v4 b) { return (v4){a[0], b[0], a[1], b[1]}; }
static inline v4 v4_unpackhi(v4 a, v4 b) { return (v4){a[2], b[2], a[3], b[3]}; }
static inline v4 v4_unpacklo64(v4 a, v4 b) { return (v4){a[0], a[1], b[0], b[1]}; }
static inline v4 v4_unpackhi64(v4 a, v4 b) { return (v4){a[2], a[3], b[2], b[3]}; }

#else /* portable C: the same operations lane by lane */

typedef struct {
  float f[4];
} v4;

static inline v4 v4_load(const float *p) {
  v4 r;
  memcpy(r.f, p, sizeof r.f);
  return r;
}
static inline void v4_store(float *p, v4 v) { memcpy(p, v.f, sizeof v.f); }
static inline v4 v4_set1(float x) {
  v4 r = {{x, x, x, x}};
  return r;
}
static inline v4 v4_load1(const float *p) { return v4_set1(*p); }
#define v4_dup(a, L) v4_set1((a).f[(L)])

#define NNW_V4_LANEWISE(name, expr)             \
  static inline v4 name(v4 a, v4 b) {           \
    v4 r;                                       \
    for (int i = 0; i < 4; i++) {               \
      float x = a.f[i], y = b.f[i];             \
      r.f[i] = (expr);                          \
    }                                           \
    return r;                                   \
  }
NNW_V4_LANEWISE(v4_add, x + y)
NNW_V4_LANEWISE(v4_sub, x - y)
NNW_V4_LANEWISE(v4_mul, x * y)
NNW_V4_LANEWISE(v4_div, x / y)
NNW_V4_LANEWISE(v4_max, x < y ? y : x)
NNW_V4_LANEWISE(v4_min, y < x ? y : x)
#undef NNW_V4_LANEWISE

static inline uint32_t nnw_bits(float x) {
  uint32_t u;
  memcpy(&u, &x, 4);
  return u;
}
static inline float nnw_from_bits(uint32_t u) {
  float x;
  memcpy(&x, &u, 4);
  return x;
}
static inline v4 v4_abs(v4 a) {
  for (int i = 0; i < 4; i++) a.f[i] = nnw_from_bits(nnw_bits(a.f[i]) & 0x7FFFFFFFu);
  return a;
}
static inline float v4_lane0(v4 a) { return a.f[0]; }
static inline v4 v4_select_nonneg(v4 x, v4 a, v4 b) {
  for (int i = 0; i < 4; i++) a.f[i] = x.f[i] >= 0.0f ? a.f[i] : b.f[i];
  return a;
}
static inline v4 v4_copysign(v4 m, v4 s) {
  for (int i = 0; i < 4; i++)
    m.f[i] = nnw_from_bits((nnw_bits(m.f[i]) & 0x7FFFFFFFu) | (nnw_bits(s.f[i]) & 0x80000000u));
  return m;
}
static inline v4 v4_pow2_from_magic(v4 t) {
  for (int i = 0; i < 4; i++) t.f[i] = nnw_from_bits((nnw_bits(t.f[i]) << 23) + 0x3F800000u);
  return t;
}
static inline float v4_hsum(v4 a) { return (a.f[0] + a.f[2]) + (a.f[1] + a.f[3]); }
static inline float v4_hmax(v4 a) {
  float x = a.f[0] < a.f[2] ? a.f[2] : a.f[0], y = a.f[1] < a.f[3] ? a.f[3] : a.f[1];
  return x < y ? y : x;
}
static inline v4 v4_even(v4 a, v4 b) {
  v4 r = {{a.f[0], a.f[2], b.f[0], b.f[2]}};
  return r;
}
static inline v4 nnw_v4_of(float a, float b, float c, float d) {
  v4 r = {{a, b, c, d}};
  return r;
}
static inline v4 v4_unpacklo(v4 a, v4 b) { return nnw_v4_of(a.f[0], b.f[0], a.f[1], b.f[1]); }
static inline v4 v4_unpackhi(v4 a, v4 b) { return nnw_v4_of(a.f[2], b.f[2], a.f[3], b.f[3]); }
static inline v4 v4_unpacklo64(v4 a, v4 b) { return nnw_v4_of(a.f[0], a.f[1], b.f[0], b.f[1]); }
static inline v4 v4_unpackhi64(v4 a, v4 b) { return nnw_v4_of(a.f[2], a.f[3], b.f[2], b.f[3]); }
#endif

static inline v4 v4_madd(v4 acc, v4 a, v4 b) { return v4_add(acc, v4_mul(a, b)); }
/* acc + a*b in the float GEMM/conv microkernels' accumulations only: in the `relaxed` flavour
 * (-mrelaxed-simd, docs/architecture.md "Kernel flavours") f32x4.relaxed_madd, which the engine
 * may fuse (one rounding, x86 FMA / ARM fmla) or not; everywhere else exactly v4_madd, so the
 * `simd` flavour and the native builds keep their bits. */
#if defined(__wasm_relaxed_simd__)
static inline v4 v4_fmadd(v4 acc, v4 a, v4 b) { return wasm_f32x4_relaxed_madd(a, b, acc); }
#else
static inline v4 v4_fmadd(v4 acc, v4 a, v4 b) { return v4_madd(acc, a, b); }
#endif
static inline v4 v4_clamp(v4 x, v4 lo, v4 hi) { return v4_min(v4_max(x, lo), hi); }
/* the largest of x[0..len) (-inf for len 0): softmax's row max (reduce/softmax.c, linalg/attention.c) */
static inline float nnw_row_max(const float *x, int32_t len) {
  int32_t i = 0;
  v4 mv = v4_set1(-INFINITY);
  for (; i + 4 <= len; i += 4) mv = v4_max(mv, v4_load(x + i));
  float mx = v4_hmax(mv);
  for (; i < len; i++) mx = mx < x[i] ? x[i] : mx;
  return mx;
}
/* the even and the odd lanes of a then b: columns 0 2 4 6 and 1 3 5 7 of eight */
static inline void v4_deinterleave(v4 a, v4 b, v4 *even, v4 *odd) {
  v4 lo = v4_unpacklo(a, b), hi = v4_unpackhi(a, b); /* a0 b0 a1 b1, a2 b2 a3 b3 */
  *even = v4_unpacklo(lo, hi);
  *odd = v4_unpackhi(lo, hi);
}

/* exp(x) - 1 = s*p + (s - 1) and exp(x) = s*(1 + p) for x <= 0 (the only range the kernels
 * need: sigmoid, tanh and softmax all reduce to it), with s = 2^n, n = round(x/ln2) and
 * p = expm1(r), r = x - n*ln2 in [-ln2/2, ln2/2]. ln2 is split (Cody-Waite) so n*LN2_HI is exact
 * for |n| <= 150; Taylor to degree 7 leaves a 5e-9 truncation error, under half an ulp. s is
 * built as 2^n1 * 2^n2 with n1 >= -125, so results down to the denormals stay right. */
/* expm1(r) for r = x - n*ln2, with n = round(x/ln2) returned in *n (as a float): the reduction
 * and polynomial nnw_exp_parts and vmath.h's v4_exp share. */
static inline v4 nnw_exp_reduce(v4 x, v4 *n) {
  const v4 magic = v4_set1(12582912.0f); /* 0x1.8p23 */
  v4 t = v4_add(v4_mul(x, v4_set1(1.44269504088896341f)), magic);
  *n = v4_sub(t, magic);
  v4 r = v4_sub(x, v4_mul(*n, v4_set1(0.693145751953125f)));
  r = v4_sub(r, v4_mul(*n, v4_set1(1.428606765330187045e-6f)));
  v4 q = v4_set1(1.0f / 5040.0f);
  q = v4_madd(v4_set1(1.0f / 720.0f), q, r);
  q = v4_madd(v4_set1(1.0f / 120.0f), q, r);
  q = v4_madd(v4_set1(1.0f / 24.0f), q, r);
  q = v4_madd(v4_set1(1.0f / 6.0f), q, r);
  q = v4_madd(v4_set1(0.5f), q, r);
  q = v4_madd(v4_set1(1.0f), q, r);
  return v4_mul(q, r);
}

static inline void nnw_exp_parts(v4 x, v4 *s, v4 *p) {
  const v4 magic = v4_set1(12582912.0f);
  v4 n;
  *p = nnw_exp_reduce(v4_max(x, v4_set1(-104.0f)), &n); /* exp(-104) is below the smallest denormal */
  v4 n1 = v4_max(n, v4_set1(-125.0f));
  v4 n2 = v4_sub(n, n1);
  *s = v4_mul(v4_pow2_from_magic(v4_add(n1, magic)), v4_pow2_from_magic(v4_add(n2, magic)));
}

static inline v4 v4_exp_nonpos(v4 x) {
  v4 s, p;
  nnw_exp_parts(x, &s, &p);
  return v4_add(v4_mul(s, p), s);
}

static inline v4 v4_expm1_nonpos(v4 x) {
  v4 s, p;
  nnw_exp_parts(x, &s, &p);
  return v4_add(v4_mul(s, p), v4_sub(s, v4_set1(1.0f)));
}

#endif
