/* QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear over an [outer, axis, inner] view
 * (per-tensor: axis = 1). The arithmetic is onnxruntime's (MLAS): quantize divides by the scale,
 * rounds half to even and saturates; dequantize is (x - zp) * scale in float. */
#include <math.h>

#include "q8.h"
#include "../simd.h"
#include "../linalg/pack_a.h"
#include "../threads/split.h"

struct q8_axis {
  int32_t x, scale, zp, y, dtype, outer, axis, inner;
};

static int validate_axis(const int32_t *v, uint32_t arena_bytes, int quantize) {
  struct q8_axis p = {v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]};
  if (p.outer <= 0 || p.axis <= 0 || p.inner <= 0) return NNW_BAD_ARGS;
  if (quantize ? !nnw_q8_is_q(p.dtype) : !(nnw_q8_is_q(p.dtype) || p.dtype == NNW_I32))
    return NNW_BAD_ARGS;
  uint64_t count = nnw_mul(nnw_mul((uint64_t)p.outer, (uint64_t)p.axis), (uint64_t)p.inner);
  int32_t x_dt = quantize ? NNW_F32 : p.dtype, y_dt = quantize ? p.dtype : NNW_F32;
  NNW_TRY(nnw_check_typed(p.x, count, x_dt, arena_bytes, 0));
  NNW_TRY(nnw_check_typed(p.y, count, y_dt, arena_bytes, 0));
  NNW_TRY(nnw_check_typed(p.scale, (uint64_t)p.axis, NNW_F32, arena_bytes, 0));
  NNW_TRY(nnw_check_typed(p.zp, (uint64_t)p.axis, p.dtype, arena_bytes, 1));
  uint64_t y_bytes = nnw_mul(count, (uint64_t)nnw_dtype_size(y_dt));
  uint64_t x_bytes = nnw_mul(count, (uint64_t)nnw_dtype_size(x_dt));
  NNW_TRY(nnw_check_apart(p.x, x_bytes, p.y, y_bytes, 0));
  NNW_TRY(nnw_check_apart(p.scale, 4 * (uint64_t)p.axis, p.y, y_bytes, 0));
  NNW_TRY(nnw_check_apart(p.zp, (uint64_t)p.axis * (uint64_t)nnw_dtype_size(p.dtype), p.y, y_bytes, 0));
  return NNW_OK;
}

int nnw_validate_q8_quantize(const int32_t *args, uint32_t arena_bytes) {
  return validate_axis(args, arena_bytes, 1);
}

int nnw_validate_q8_dequantize(const int32_t *args, uint32_t arena_bytes) {
  return validate_axis(args, arena_bytes, 0);
}

#ifdef __wasm_simd128__
/* x / scale, rounded half to even, clamped to [lo - zp, hi - zp] (integers, so clamping before
 * rounding is the same as after); pmax(lo, v) also sends NaN to lo, as the scalar rule does */
static v128_t round_clamp(v128_t q, v128_t vlo, v128_t vhi) {
  return wasm_f32x4_pmin(wasm_f32x4_pmax(vlo, wasm_f32x4_nearest(q)), vhi);
}

/* any lane of t whose distance to the nearest integer is within 2^-12 of one half: there
 * t = x * (1 / scale) may round otherwise than x / scale (see quantize_row) */
static v128_t near_half(v128_t t) {
  v128_t off = wasm_f32x4_abs(wasm_f32x4_sub(t, wasm_f32x4_nearest(t)));
  return wasm_f32x4_gt(off, wasm_f32x4_splat(0.5f - 0x1p-12f));
}
#endif

/* n values of x to y, one scale and zero point. The quotient is onnxruntime's x / scale, rounded
 * half to even; the SIMD loop gets it from x * (1 / scale), which is within 2^-23 |x / scale| of
 * it (two roundings of 2^-24), so both round to the same integer unless that product lies within
 * 2^-12 of a half (for |x / scale| <= 257 the error is under 2^-14): only then (about one vector
 * in 250) are its 8 values divided. Past 257 both clamp to the same bound. Integers come
 * from the clamped floats by the 0x1.8p23 trick (exact below 2^22), which V8 compiles to two
 * instructions where i32x4.trunc_sat_f32x4_s takes five. BERT-mini int8's 16
 * DynamicQuantizeLinear ops (with the four min/max chains below): 0.80 -> 0.46 ms in V8, 0.98 -> 0.59
 * ms in wasmtime (per-op medians, bench/ab/ab_kernels.py, a loaded machine); 0.42 -> 0.30 ms in a
 * quieter V8 profile. */
static void quantize_row(const float *x, uint8_t *y, size_t n, float scale, int32_t zp,
                         int32_t dtype) {
  int32_t lo = nnw_q8_min(dtype), hi = nnw_q8_max(dtype);
  size_t i = 0;
#ifdef __wasm_simd128__
  float inv = 1.0f / scale;
  int fast = isfinite(inv) && fabsf(inv) >= 0x1p-126f; /* a normal reciprocal: the error bound holds */
  v128_t vs = wasm_f32x4_splat(scale), vr = wasm_f32x4_splat(inv);
  v128_t vlo = wasm_f32x4_splat((float)(lo - zp)), vhi = wasm_f32x4_splat((float)(hi - zp));
  v128_t magic = wasm_f32x4_splat(0x1.8p23f), bias = wasm_i32x4_splat(0x4B400000 - zp);
  for (; i + 8 <= n; i += 8) {
    v128_t xa = wasm_v128_load(x + i), xb = wasm_v128_load(x + i + 4), a, b;
    if (fast) {
      a = wasm_f32x4_mul(xa, vr);
      b = wasm_f32x4_mul(xb, vr);
      if (wasm_v128_any_true(wasm_v128_or(near_half(a), near_half(b)))) {
        a = wasm_f32x4_div(xa, vs);
        b = wasm_f32x4_div(xb, vs);
      }
    } else {
      a = wasm_f32x4_div(xa, vs);
      b = wasm_f32x4_div(xb, vs);
    }
    a = wasm_f32x4_add(round_clamp(a, vlo, vhi), magic);
    b = wasm_f32x4_add(round_clamp(b, vlo, vhi), magic);
    v128_t h = wasm_i16x8_narrow_i32x4(wasm_i32x4_sub(a, bias), wasm_i32x4_sub(b, bias));
    v128_t q = dtype == NNW_U8 ? wasm_u8x16_narrow_i16x8(h, h) : wasm_i8x16_narrow_i16x8(h, h);
    wasm_v128_store64_lane(y + i, q, 0);
  }
#endif
  for (; i < n; i++) y[i] = (uint8_t)nnw_q8_round_sat(x[i] / scale, zp, lo, hi);
}

/* one scale (axis 1, as the compiler gives per-tensor parameters: [count, 1, 1]): one row of
 * outer * inner values, so the SIMD loops run over all of it, not over rows of one value */
static struct q8_axis flat(struct q8_axis p) {
  if (p.axis == 1) {
    p.inner = p.outer * p.inner; /* validated: their product is an element count in the arena */
    p.outer = 1;
  }
  return p;
}

void nnw_run_q8_quantize(const int32_t *args, uint8_t *arena) {
  struct q8_axis p = flat((struct q8_axis){args[0], args[1], args[2], args[3], args[4], args[5], args[6], args[7]});
  const float *x = nnw_f32_at(arena, p.x), *scale = nnw_f32_at(arena, p.scale);
  const uint8_t *zp = nnw_q8_at(arena, p.zp);
  uint8_t *y = arena + p.y;
  for (int32_t o = 0; o < p.outer; o++)
    for (int32_t a = 0; a < p.axis; a++) {
      size_t at = ((size_t)o * (size_t)p.axis + (size_t)a) * (size_t)p.inner;
      quantize_row(x + at, y + at, (size_t)p.inner, scale[a], nnw_q8_get(zp, p.dtype, (size_t)a),
                   p.dtype);
    }
}

void nnw_run_q8_dequantize(const int32_t *args, uint8_t *arena) {
  struct q8_axis p = flat((struct q8_axis){args[0], args[1], args[2], args[3], args[4], args[5], args[6], args[7]});
  const uint8_t *x = arena + p.x, *zp = nnw_q8_at(arena, p.zp);
  const float *scale = nnw_f32_at(arena, p.scale);
  float *y = nnw_f32_at(arena, p.y);
  for (int32_t o = 0; o < p.outer; o++)
    for (int32_t a = 0; a < p.axis; a++) {
      size_t at = ((size_t)o * (size_t)p.axis + (size_t)a) * (size_t)p.inner;
      int32_t z = nnw_q8_get(zp, p.dtype, (size_t)a);
      float s = scale[a];
      size_t i = at, end = at + (size_t)p.inner;
#ifdef __wasm_simd128__
      v128_t vz = wasm_i32x4_splat(z), vs = wasm_f32x4_splat(s);
      for (; p.dtype != NNW_I32 && i + 8 <= end; i += 8) {
        v128_t h = p.dtype == NNW_U8 ? wasm_u16x8_load8x8(x + i) : wasm_i16x8_load8x8(x + i);
        v128_t lo = wasm_i32x4_sub(wasm_i32x4_extend_low_i16x8(h), vz);
        v128_t hi = wasm_i32x4_sub(wasm_i32x4_extend_high_i16x8(h), vz);
        wasm_v128_store(y + i, wasm_f32x4_mul(wasm_f32x4_convert_i32x4(lo), vs));
        wasm_v128_store(y + i + 4, wasm_f32x4_mul(wasm_f32x4_convert_i32x4(hi), vs));
      }
#endif
      for (; i < end; i++)
        y[i] = (float)(int32_t)((uint32_t)nnw_q8_get(x, p.dtype, i) - (uint32_t)z) * s;
    }
}

int nnw_validate_q8_dyn_quantize(const int32_t *args, uint32_t arena_bytes) {
  int32_t x = args[NNW_Q8_DYN_QUANTIZE_X], y = args[NNW_Q8_DYN_QUANTIZE_Y];
  int32_t scale = args[NNW_Q8_DYN_QUANTIZE_SCALE], zp = args[NNW_Q8_DYN_QUANTIZE_ZERO_POINT];
  int32_t count = args[NNW_Q8_DYN_QUANTIZE_COUNT];
  if (count <= 0) return NNW_BAD_ARGS;
  uint64_t n = (uint64_t)count;
  NNW_TRY(nnw_check_typed(x, n, NNW_F32, arena_bytes, 0));
  NNW_TRY(nnw_check_typed(y, n, NNW_U8, arena_bytes, 0));
  NNW_TRY(nnw_check_typed(scale, 1, NNW_F32, arena_bytes, 0));
  NNW_TRY(nnw_check_typed(zp, 1, NNW_U8, arena_bytes, 0));
  const int32_t at[] = {x, y, scale, zp};
  const uint64_t size[] = {4 * n, n, 4, 1};
  for (int i = 0; i < 4; i++)
    for (int j = i + 1; j < 4; j++) NNW_TRY(nnw_check_apart(at[i], size[i], at[j], size[j], 0));
  return NNW_OK;
}

/* Threads (threads/split.h): both passes over the tensor in chunks of CHUNK values (a multiple of
 * 16: the min/max loop meets the same groups as on one thread). The range: each chunk keeps its
 * four chains' minima and maxima as vectors (in the caller's pack buffer), which the caller folds
 * in chunk order, as the one-thread loop would meet them, before the one-thread code's remaining
 * steps. On numbers that is the same minimum and maximum (only a zero's sign may differ, which no
 * output depends on: the range always holds 0); v4_min/v4_max (pmin/pmax) drop what came before a
 * NaN, so a chunk that meets a NaN or an infinity (its check lane turns NaN) makes the caller redo
 * the range on one thread. The quantization: each value alone. */
enum { CHUNK = 16384 };

struct dyn_job {
  const float *x;
  uint8_t *y;
  size_t n;
  float scale;
  int32_t zp;
  v4 *parts; /* three vectors a chunk: min, max, check */
};

/* the range of x's whole groups of 16 in four independent min and max chains (one chain ran at the
 * latency of pmin, a third of the operator's time after the quotients got cheaper). check (or
 * NULL): a NaN in a lane when the groups hold a NaN or an infinity (or sum to one) */
static inline void minmax16(const float *x, size_t n, v4 *lo_out, v4 *hi_out, v4 *check) {
  v4 vlo = v4_set1(0.0f), vhi = v4_set1(0.0f), vlo1 = vlo, vhi1 = vhi, vlo2 = vlo, vhi2 = vhi, vlo3 = vlo, vhi3 = vhi;
  v4 chk = vlo;
  for (size_t i = 0; i + 16 <= n; i += 16) {
    v4 v0 = v4_load(x + i), v1 = v4_load(x + i + 4), v2 = v4_load(x + i + 8), v3 = v4_load(x + i + 12);
    vlo = v4_min(v0, vlo);
    vhi = v4_max(v0, vhi);
    vlo1 = v4_min(v1, vlo1);
    vhi1 = v4_max(v1, vhi1);
    vlo2 = v4_min(v2, vlo2);
    vhi2 = v4_max(v2, vhi2);
    vlo3 = v4_min(v3, vlo3);
    vhi3 = v4_max(v3, vhi3);
    if (check) {
      v4 z = v4_add(v4_add(v0, v1), v4_add(v2, v3));
      chk = v4_add(chk, v4_sub(z, z));
    }
  }
  *lo_out = v4_min(v4_min(vlo, vlo1), v4_min(vlo2, vlo3));
  *hi_out = v4_max(v4_max(vhi, vhi1), v4_max(vhi2, vhi3));
  if (check) *check = chk;
}

static void range_task(void *ctx, int32_t start, int32_t count, int32_t worker) {
  const struct dyn_job *j = ctx;
  size_t whole = j->n / 16 * 16;
  (void)worker;
  for (int32_t c = start; c < start + count; c++) {
    size_t i0 = (size_t)c * CHUNK, len = whole - i0 < CHUNK ? whole - i0 : CHUNK;
    minmax16(j->x + i0, len, &j->parts[3 * c], &j->parts[3 * c + 1], &j->parts[3 * c + 2]);
  }
}

static void quantize_task(void *ctx, int32_t start, int32_t count, int32_t worker) {
  const struct dyn_job *j = ctx;
  size_t i0 = (size_t)start * CHUNK, len = j->n - i0 < (size_t)count * CHUNK ? j->n - i0 : (size_t)count * CHUNK;
  (void)worker;
  quantize_row(j->x + i0, j->y + i0, len, j->scale, j->zp, NNW_U8);
}

void nnw_run_q8_dyn_quantize(const int32_t *args, uint8_t *arena) {
  const float *x = nnw_f32_at(arena, args[NNW_Q8_DYN_QUANTIZE_X]);
  size_t n = (size_t)args[NNW_Q8_DYN_QUANTIZE_COUNT];
  /* the range always includes 0, so that 0 is exact */
  float lo = 0.0f, hi = 0.0f;
  size_t i = 0;
  struct dyn_job job = {x, arena + args[NNW_Q8_DYN_QUANTIZE_Y], n, 1.0f, 0, NULL};
  int32_t chunks = (int32_t)((n / 16 * 16 + CHUNK - 1) / CHUNK), all = (int32_t)((n + CHUNK - 1) / CHUNK);
  /* two passes: a min/max and a quantization worth about 4 adds a value */
  int32_t threads = nnw_split_threads(5 * (uint64_t)n, NNW_SPLIT_MIN_ELEMS, chunks);
  v4 vlo, vhi;
  int split = threads > 1 && (size_t)chunks * 3 * sizeof(v4) <= (size_t)NNW_PACK_A_FLOATS * 4;
  if (split) {
    job.parts = (v4 *)(void *)nnw_pool_pack_buf(0);
    nnw_parallel_for(chunks, nnw_split_tile(chunks, threads), range_task, &job);
    vlo = job.parts[0];
    vhi = job.parts[1];
    v4 chk = job.parts[2];
    for (int32_t c = 1; c < chunks; c++) {
      vlo = v4_min(job.parts[3 * c], vlo);
      vhi = v4_max(job.parts[3 * c + 1], vhi);
      chk = v4_add(chk, job.parts[3 * c + 2]);
    }
    float t[4];
    v4_store(t, chk);
    split = t[0] == t[0] && t[1] == t[1] && t[2] == t[2] && t[3] == t[3];
    i = n / 16 * 16;
  }
  if (!split) {
    minmax16(x, n, &vlo, &vhi, NULL);
    i = n / 16 * 16;
  }
  for (; i + 4 <= n; i += 4) {
    v4 v = v4_load(x + i);
    vlo = v4_min(v, vlo);
    vhi = v4_max(v, vhi);
  }
  lo = -v4_hmax(v4_sub(v4_set1(0.0f), vlo));
  hi = v4_hmax(vhi);
  for (; i < n; i++) {
    lo = x[i] < lo ? x[i] : lo;
    hi = x[i] > hi ? x[i] : hi;
  }
  float scale = hi == lo ? 1.0f : (hi - lo) / 255.0f;
  float zp_f = 0.0f - lo / scale;
  zp_f = !(zp_f > 0.0f) ? 0.0f : zp_f > 255.0f ? 255.0f : zp_f; /* NaN (inf input) -> 0 */
  int32_t zp = (int32_t)nearbyintf(zp_f);
  memcpy(arena + args[NNW_Q8_DYN_QUANTIZE_SCALE], &scale, 4);
  arena[args[NNW_Q8_DYN_QUANTIZE_ZERO_POINT]] = (uint8_t)zp;
  job.scale = scale;
  job.zp = zp;
  if (threads > 1 && all > 1) {
    nnw_parallel_for(all, nnw_split_tile(all, threads), quantize_task, &job);
    return;
  }
  quantize_row(x, job.y, n, scale, zp, NNW_U8);
}
