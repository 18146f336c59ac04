/* cast: count elements from one ONNX type to another, any fixed-size types. Each element goes
 * through a double (float sources, exact for all three) or a 64-bit integer (integer and bool
 * sources), then to the destination:
 *   float -> float16: round to nearest even, from the double directly (no double rounding),
 *     subnormals, inf and nan kept; float -> float32: C's conversion (nearest even).
 *   float -> integer: truncate toward zero to int64 (NaN -> 0; beyond the int64 range saturate,
 *     up to 2^64 for uint64), then wrap to the width like integer -> integer. This is what
 *     onnxruntime and numpy give on x86 for every value that fits int32; they leave the rest
 *     undefined, C too, which is why it is spelled out here.
 *   integer -> integer: two's complement wrap; anything -> bool: x != 0 (NaN -> 1). */
#include <math.h>

#include "internal.h"

int nnw_validate_cast(const int32_t *v, uint32_t arena_bytes) {
  int32_t from = v[NNW_CAST_FROM], to = v[NNW_CAST_TO], count = v[NNW_CAST_COUNT];
  if (count <= 0) return NNW_BAD_ARGS;
  NNW_TRY(nnw_check_typed(v[NNW_CAST_X], (uint64_t)count, from, arena_bytes, 0));
  NNW_TRY(nnw_check_typed(v[NNW_CAST_Y], (uint64_t)count, to, arena_bytes, 0));
  int fs = nnw_dtype_size(from), ts = nnw_dtype_size(to);
  NNW_TRY(nnw_check_apart(v[NNW_CAST_X], (uint64_t)count * (uint64_t)fs, v[NNW_CAST_Y],
                          (uint64_t)count * (uint64_t)ts, fs == ts));
  return NNW_OK;
}

static float half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1Fu, m = h & 0x3FFu, bits;
  if (e == 0) {
    float f = (float)m * 0x1p-24f; /* subnormal or zero: exact */
    return sign ? -f : f;
  }
  bits = sign | (e == 31 ? 0x7F800000u : (e + 112) << 23) | (m << 13);
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

/* float32 -> float16 in float arithmetic (Marat Dukhan's FP16 library): scaling by 2^112 then
 * 2^-110 rounds to half precision in the default mode (nearest even), subnormals included, and
 * adding 2^(e+...) moves the rounded significand into the low bits. */
static uint16_t half_from_float(float f) {
  float base = (fabsf(f) * 0x1p112f) * 0x1p-110f;
  uint32_t w, bits;
  memcpy(&w, &f, 4);
  uint32_t shl1_w = w + w, sign = w & 0x80000000u, bias = shl1_w & 0xFF000000u;
  if (bias < 0x71000000u) bias = 0x71000000u;
  uint32_t bias_bits = (bias >> 1) + 0x07800000u;
  float b;
  memcpy(&b, &bias_bits, 4);
  base = b + base;
  memcpy(&bits, &base, 4);
  uint32_t nonsign = ((bits >> 13) & 0x7C00u) + (bits & 0x0FFFu);
  return (uint16_t)((sign >> 16) | (shl1_w > 0xFF000000u ? 0x7E00u : nonsign));
}

static uint16_t half_from_double(double d) {
  uint64_t b;
  memcpy(&b, &d, 8);
  uint16_t sign = (uint16_t)((b >> 48) & 0x8000u);
  b &= 0x7FFFFFFFFFFFFFFFull;
  if (b >= 0x7FF0000000000000ull) return sign | (b > 0x7FF0000000000000ull ? 0x7E00 : 0x7C00);
  double a;
  memcpy(&a, &b, 8);
  if (a >= 65520.0) return sign | 0x7C00; /* halfway above the largest half, 65504: inf */
  if (a < 0x1p-14) return sign | (uint16_t)rint(a * 0x1p24); /* subnormal: units of 2^-24 */
  /* a = 2^e * 1.f: the 11-bit significand rounded, an overflow to 2048 carrying into e */
  int e = (int)(b >> 52) - 1023;
  uint64_t scale_bits = (uint64_t)(1023 + 10 - e) << 52;
  double scale;
  memcpy(&scale, &scale_bits, 8);
  return sign | (uint16_t)(((uint32_t)(e + 14) << 10) + (uint32_t)rint(a * scale));
}

enum { FLOAT, SIGNED, UNSIGNED };

static int type_class(int32_t t) {
  switch (t) {
    case NNW_F32: case NNW_F64: case NNW_F16: return FLOAT;
    case NNW_I8: case NNW_I16: case NNW_I32: case NNW_I64: return SIGNED;
    default: return UNSIGNED;
  }
}

static double load_float(int32_t t, const uint8_t *p) {
  if (t == NNW_F32) {
    float f;
    memcpy(&f, p, 4);
    return f;
  }
  if (t == NNW_F16) {
    uint16_t h;
    memcpy(&h, p, 2);
    return half_to_float(h);
  }
  double d;
  memcpy(&d, p, 8);
  return d;
}

/* the bits of an integer element as uint64: sign-extended for signed types */
static uint64_t load_int(int32_t t, const uint8_t *p) {
  switch (t) {
    case NNW_I8: { int8_t x; memcpy(&x, p, 1); return (uint64_t)(int64_t)x; }
    case NNW_I16: { int16_t x; memcpy(&x, p, 2); return (uint64_t)(int64_t)x; }
    case NNW_I32: { int32_t x; memcpy(&x, p, 4); return (uint64_t)(int64_t)x; }
    case NNW_U16: { uint16_t x; memcpy(&x, p, 2); return x; }
    case NNW_U32: { uint32_t x; memcpy(&x, p, 4); return x; }
    case NNW_I64: case NNW_U64: { uint64_t x; memcpy(&x, p, 8); return x; }
    default: return *p; /* U8, BOOL */
  }
}

/* the low bytes of w (little-endian, as wasm and the native targets are) */
static void store_int(int size, uint8_t *p, uint64_t w) {
  switch (size) {
    case 1: { uint8_t x = (uint8_t)w; memcpy(p, &x, 1); break; }
    case 2: { uint16_t x = (uint16_t)w; memcpy(p, &x, 2); break; }
    case 4: { uint32_t x = (uint32_t)w; memcpy(p, &x, 4); break; }
    default: memcpy(p, &w, 8); break;
  }
}

static uint64_t float_to_int(double d, int32_t to) {
  if (d != d) return 0;
  if (d >= 0x1p63) {
    if (to == NNW_U64) return d < 0x1p64 ? (uint64_t)d : UINT64_MAX;
    return (uint64_t)INT64_MAX;
  }
  if (d < -0x1p63) return (uint64_t)INT64_MIN;
  return (uint64_t)(int64_t)d;
}

static void store_float(int32_t to, uint8_t *p, double d) {
  if (to == NNW_F32) {
    float f = (float)d;
    memcpy(p, &f, 4);
  } else if (to == NNW_F16) {
    uint16_t h = half_from_double(d);
    memcpy(p, &h, 2);
  } else {
    memcpy(p, &d, 8);
  }
}

/* an integer source's value as a double or float: converted once, from the right signedness */
static double int_to_double(int cls, uint64_t w) { return cls == SIGNED ? (double)(int64_t)w : (double)w; }
static float int_to_float(int cls, uint64_t w) { return cls == SIGNED ? (float)(int64_t)w : (float)w; }

void nnw_run_cast(const int32_t *v, uint8_t *arena) {
  int32_t from = v[NNW_CAST_FROM], to = v[NNW_CAST_TO], count = v[NNW_CAST_COUNT];
  const uint8_t *x = arena + v[NNW_CAST_X];
  uint8_t *y = arena + v[NNW_CAST_Y];
  int fs = nnw_dtype_size(from), ts = nnw_dtype_size(to);
  int fc = type_class(from), tc = type_class(to);
  if (from == NNW_F16 && to == NNW_F32) { /* the fp16 models' casts: direct loops */
    for (int32_t i = 0; i < count; i++) {
      uint16_t h;
      memcpy(&h, x + 2 * i, 2);
      float f = half_to_float(h);
      memcpy(y + 4 * i, &f, 4);
    }
    return;
  }
  if (from == NNW_F32 && to == NNW_F16) {
    for (int32_t i = 0; i < count; i++) {
      float f;
      memcpy(&f, x + 4 * i, 4);
      uint16_t h = half_from_float(f);
      memcpy(y + 2 * i, &h, 2);
    }
    return;
  }
  for (int32_t i = 0; i < count; i++) {
    const uint8_t *p = x + (size_t)i * (size_t)fs;
    uint8_t *q = y + (size_t)i * (size_t)ts;
    if (to == NNW_BOOL) {
      *q = fc == FLOAT ? load_float(from, p) != 0 : load_int(from, p) != 0;
    } else if (fc == FLOAT) {
      double d = load_float(from, p);
      if (tc == FLOAT)
        store_float(to, q, d);
      else
        store_int(ts, q, float_to_int(d, to));
    } else {
      uint64_t w = load_int(from, p);
      if (to == NNW_F32) {
        float f = int_to_float(fc, w); /* rounded once, not via double */
        memcpy(q, &f, 4);
      } else if (tc == FLOAT) {
        store_float(to, q, int_to_double(fc, w));
      } else {
        store_int(ts, q, w);
      }
    }
  }
}
