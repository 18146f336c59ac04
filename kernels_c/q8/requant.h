/* The int8 kernels' SIMD requantization (conv2d*.c, add.c): nnw_q8_round_sat on 4 lanes. */
#ifndef NNW_Q8_REQUANT_H
#define NNW_Q8_REQUANT_H
#include "q8.h"

#ifdef __wasm_simd128__
#include <wasm_simd128.h>

/* nnw_q8_round_sat(v, zp, lo, hi) on 4 lanes as XNNPACK's "fp32 magic" requantization:
 * clamp to [lo - zp, hi - zp] in float (the bounds are integers, so clamping before rounding is
 * clamping after; pmax sends NaN to the low bound), then adding 1.5 * 2^23 rounds half to even
 * into the low mantissa bits, and one integer subtraction removes the magic and adds zp. This
 * replaces nearest + trunc_sat (the latter several instructions on x86 in V8 and Cranelift). The
 * zero point is added as an integer after rounding: added in float before, an odd zp would move
 * the ties. */
struct nnw_q8_rq {
  v128_t lo, hi, magic, unmagic;
};
static inline struct nnw_q8_rq nnw_q8_rq_init(int32_t zp, int32_t lo, int32_t hi) {
  struct nnw_q8_rq r = {wasm_f32x4_splat((float)(lo - zp)), wasm_f32x4_splat((float)(hi - zp)),
                        wasm_f32x4_splat(12582912.0f), wasm_i32x4_splat(0x4B400000 - zp)};
  return r;
}
/* of a float value v */
static inline v128_t nnw_q8_rq4f(const struct nnw_q8_rq *r, v128_t v) {
  v128_t f = wasm_f32x4_pmin(wasm_f32x4_pmax(r->lo, v), r->hi);
  return wasm_i32x4_sub(wasm_f32x4_add(f, r->magic), r->unmagic);
}
/* of an int32 sum times a scale */
static inline v128_t nnw_q8_rq4(const struct nnw_q8_rq *r, v128_t acc, v128_t scale) {
  return nnw_q8_rq4f(r, wasm_f32x4_mul(wasm_f32x4_convert_i32x4(acc), scale));
}
/* 8 requantized int32 lanes (in range) to 8 bytes in the low half */
static inline v128_t nnw_q8_rq_pack(v128_t a, v128_t b, int u8) {
  v128_t h = wasm_i16x8_narrow_i32x4(a, b);
  return u8 ? wasm_u8x16_narrow_i16x8(h, h) : wasm_i8x16_narrow_i16x8(h, h);
}
#endif

#endif
