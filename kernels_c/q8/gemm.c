/* q8_gemm and the integer GEMM under q8_conv2d, in the style of XNNPACK's qs8/qu8 GEMMs: the
 * zero points are subtracted while packing to int16, so the inner loop is pure multiply-add:
 * a's rows are packed as int16 pairs (k, k+1) in one int32 word, b as panels of 8 columns whose
 * 16 int16 per k pair interleave (k, k+1) per column. One i32x4.dot_i16x8 of a broadcast a pair
 * with half a panel row adds 2 k-steps into 4 columns; a 4x8 tile keeps 8 accumulators.
 * (u8 - zp) fits int16 and a pair of products fits int32, so nothing saturates; the int32 sums
 * wrap on overflow, as onnxruntime's do. */
#include "q8.h"
#include "simd.h"
#include "vmath.h"

#ifdef __wasm_simd128__
#include <wasm_simd128.h>
#endif

enum { MR = 4, NR = 8 };

uint64_t nnw_q8_gemm_scratch(uint64_t m, uint64_t k) {
  uint64_t kp = (k + 1) / 2;
  return nnw_add(nnw_mul(nnw_mul(m, kp), 4), nnw_mul(kp, 2 * 2 * NR));
}

/* apack[i*kp + p] = (a[i][2p] - zp_i) | (a[i][2p+1] - zp_i) << 16, 0 past k */
static void pack_a(const struct nnw_q8_gemm *g, int32_t kp, uint32_t *apack) {
  for (int32_t i = 0; i < g->m; i++) {
    const uint8_t *row = g->a + (size_t)i * (size_t)g->lda;
    int32_t zp = nnw_q8_get(g->a_zp, g->a_dtype, (size_t)i * (size_t)g->a_zp_rs);
    uint32_t *out = apack + (size_t)i * (size_t)kp;
    int32_t p = 0;
#ifdef __wasm_simd128__
    /* 8 bytes widen to the 8 int16 of 4 pairs, which little-endian are the 4 packed words */
    if (g->a_dtype == NNW_U8 || g->a_dtype == NNW_I8) {
      v128_t vz = wasm_i16x8_splat((int16_t)zp);
      for (; 2 * p + 8 <= g->k; p += 4) wasm_v128_store(out + p, nnw_q8_load8_sub(row + 2 * p, g->a_dtype, vz));
    }
#endif
    for (; p < kp; p++) {
      int32_t k0 = 2 * p, k1 = 2 * p + 1;
      uint16_t lo = (uint16_t)(nnw_q8_get(row, g->a_dtype, (size_t)k0) - zp);
      uint16_t hi = k1 < g->k ? (uint16_t)(nnw_q8_get(row, g->a_dtype, (size_t)k1) - zp) : 0;
      out[p] = (uint32_t)lo | (uint32_t)hi << 16;
    }
  }
}

/* panel[p*16 + 2c + h] = b[2p + h][j0 + c] - zp_(j0+c), 0 past k or past n */
static void pack_panel(const struct nnw_q8_gemm *g, int32_t j0, int32_t nb, int32_t kp,
                       int16_t *panel) {
  int32_t zp[NR];
  for (int32_t c = 0; c < NR; c++)
    zp[c] = c < nb ? nnw_q8_get(g->b_zp, g->b_dtype, (size_t)(j0 + c) * (size_t)g->b_zp_cs) : 0;
  for (int32_t p = 0; p < kp; p++) {
    int16_t *out = panel + (size_t)p * 2 * NR;
    const uint8_t *r0 = g->b + (size_t)(2 * p) * (size_t)g->ldb + j0;
    const uint8_t *r1 = 2 * p + 1 < g->k ? r0 + g->ldb : NULL;
#ifdef __wasm_simd128__
    if (nb == NR) {
      v128_t vz = wasm_i16x8_narrow_i32x4(wasm_v128_load(zp), wasm_v128_load(zp + 4));
      nnw_q8_pair_row8(out, r0, r1, g->b_dtype, vz);
      continue;
    }
#endif
    for (int32_t c = 0; c < NR; c++) {
      out[2 * c] = c < nb ? (int16_t)(nnw_q8_get(r0, g->b_dtype, (size_t)c) - zp[c]) : 0;
      out[2 * c + 1] = c < nb && r1 ? (int16_t)(nnw_q8_get(r1, g->b_dtype, (size_t)c) - zp[c]) : 0;
    }
  }
}

/* acc[r][c] = sum_p dot(apack row r, panel) for rows r < mr (mr <= MR) */
static void tile(const uint32_t *apack, int32_t kp, int32_t mr, const int16_t *panel,
                 int32_t acc[MR][NR]) {
#ifdef __wasm_simd128__
  if (mr == MR) {
    const uint32_t *a0 = apack, *a1 = a0 + kp, *a2 = a1 + kp, *a3 = a2 + kp;
    v128_t c00 = wasm_i32x4_splat(0), c01 = c00, c10 = c00, c11 = c00;
    v128_t c20 = c00, c21 = c00, c30 = c00, c31 = c00;
    for (int32_t p = 0; p < kp; p++, panel += 2 * NR) {
      v128_t bl = wasm_v128_load(panel), bh = wasm_v128_load(panel + 8);
      v128_t v0 = wasm_v128_load32_splat(a0 + p), v1 = wasm_v128_load32_splat(a1 + p);
      v128_t v2 = wasm_v128_load32_splat(a2 + p), v3 = wasm_v128_load32_splat(a3 + p);
      NNW_Q8_DOT_ROW(c00, c01, v0, bl, bh);
      NNW_Q8_DOT_ROW(c10, c11, v1, bl, bh);
      NNW_Q8_DOT_ROW(c20, c21, v2, bl, bh);
      NNW_Q8_DOT_ROW(c30, c31, v3, bl, bh);
    }
    wasm_v128_store(acc[0], c00);
    wasm_v128_store(acc[0] + 4, c01);
    wasm_v128_store(acc[1], c10);
    wasm_v128_store(acc[1] + 4, c11);
    wasm_v128_store(acc[2], c20);
    wasm_v128_store(acc[2] + 4, c21);
    wasm_v128_store(acc[3], c30);
    wasm_v128_store(acc[3] + 4, c31);
    return;
  }
  for (int32_t r = 0; r < mr; r++) {
    const uint32_t *ar = apack + (size_t)r * (size_t)kp;
    v128_t cl = wasm_i32x4_splat(0), ch = cl;
    for (int32_t p = 0; p < kp; p++) {
      v128_t v = wasm_v128_load32_splat(ar + p);
      cl = wasm_i32x4_add(cl, wasm_i32x4_dot_i16x8(v, wasm_v128_load(panel + p * 2 * NR)));
      ch = wasm_i32x4_add(ch, wasm_i32x4_dot_i16x8(v, wasm_v128_load(panel + p * 2 * NR + 8)));
    }
    wasm_v128_store(acc[r], cl);
    wasm_v128_store(acc[r] + 4, ch);
  }
#else
  /* the same packed layouts, one lane at a time; uint32 sums wrap like the SIMD lanes */
  for (int32_t r = 0; r < mr; r++) {
    uint32_t s[NR] = {0};
    const uint32_t *ar = apack + (size_t)r * (size_t)kp;
    for (int32_t p = 0; p < kp; p++) {
      int32_t lo = (int16_t)(uint16_t)(ar[p] & 0xFFFFu), hi = (int16_t)(uint16_t)(ar[p] >> 16);
      const int16_t *b = panel + (size_t)p * 2 * NR;
      for (int c = 0; c < NR; c++) s[c] += (uint32_t)(lo * b[2 * c] + hi * b[2 * c + 1]);
    }
    for (int c = 0; c < NR; c++) memcpy(&acc[r][c], &s[c], 4);
  }
#endif
}

static void store(const struct nnw_q8_gemm *g, int32_t i, int32_t j, int32_t acc) {
  int32_t ch = g->per_row ? i : j;
  if (g->bias) acc = (int32_t)((uint32_t)acc + (uint32_t)g->bias[ch * g->bias_s]);
  size_t at = (size_t)i * (size_t)g->ldy + (size_t)j;
  if (g->y_dtype == NNW_I32) {
    memcpy(g->y + 4 * at, &acc, 4);
    return;
  }
  float v = (float)acc * g->scale[ch * g->scale_s];
  if (g->fbias) v += g->fbias[j];
  if (g->r) v += g->r[at];
  if (g->act) v = v4_lane0(v4_gelu(v4_set1(v)));
  if (g->y_dtype == NNW_F32)
    memcpy(g->y + 4 * at, &v, 4);
  else
    g->y[at] = (uint8_t)nnw_q8_round_sat(v, g->y_zp, g->y_min, g->y_max);
}

#ifdef __wasm_simd128__
/* store() of a whole 4x8 tile into float32, uint8 or int8, 4 lanes at a time: the same
 * wrapping bias add, conversion, product and rounding, so the same bits */
static v128_t load_i32(const int32_t *p, ptrdiff_t s) {
  return s ? wasm_v128_load(p) : wasm_i32x4_splat(*p);
}
static v128_t load_f32(const float *p, ptrdiff_t s) {
  return s ? wasm_v128_load(p) : wasm_f32x4_splat(*p);
}

static void store_f32(const struct nnw_q8_gemm *g, int32_t i0, int32_t j0, int32_t mr,
                      int32_t acc[MR][NR]) {
  v128_t zero = wasm_i32x4_splat(0), b0 = zero, b1 = zero, s0, s1;
  if (!g->per_row) {
    if (g->bias) {
      b0 = load_i32(g->bias + j0 * g->bias_s, g->bias_s);
      b1 = load_i32(g->bias + (j0 + 4) * g->bias_s, g->bias_s);
    }
    s0 = load_f32(g->scale + j0 * g->scale_s, g->scale_s);
    s1 = load_f32(g->scale + (j0 + 4) * g->scale_s, g->scale_s);
  }
  for (int32_t r = 0; r < mr; r++) {
    int32_t i = i0 + r;
    if (g->per_row) {
      b0 = b1 = g->bias ? wasm_i32x4_splat(g->bias[i * g->bias_s]) : zero;
      s0 = s1 = wasm_f32x4_splat(g->scale[i * g->scale_s]);
    }
    size_t at = (size_t)i * (size_t)g->ldy + (size_t)j0;
    v128_t a0 = wasm_i32x4_add(wasm_v128_load(acc[r]), b0), a1 = wasm_i32x4_add(wasm_v128_load(acc[r] + 4), b1);
    v4 v0 = wasm_f32x4_mul(wasm_f32x4_convert_i32x4(a0), s0), v1 = wasm_f32x4_mul(wasm_f32x4_convert_i32x4(a1), s1);
    if (g->fbias) {
      v0 = v4_add(v0, v4_load(g->fbias + j0));
      v1 = v4_add(v1, v4_load(g->fbias + j0 + 4));
    }
    if (g->r) {
      v0 = v4_add(v0, v4_load(g->r + at));
      v1 = v4_add(v1, v4_load(g->r + at + 4));
    }
    if (g->act) {
      v0 = v4_gelu(v0);
      v1 = v4_gelu(v1);
    }
    if (g->y_dtype == NNW_F32) {
      wasm_v128_store(g->y + 4 * at, v0);
      wasm_v128_store(g->y + 4 * at + 16, v1);
      continue;
    }
    /* nnw_q8_round_sat: round half to even, + zp in float, NaN or below to lo, above to hi */
    v4 zp = wasm_f32x4_splat((float)g->y_zp), lo = wasm_f32x4_splat((float)g->y_min);
    v4 hi = wasm_f32x4_splat((float)g->y_max);
    v0 = wasm_f32x4_pmin(wasm_f32x4_pmax(lo, wasm_f32x4_add(wasm_f32x4_nearest(v0), zp)), hi);
    v1 = wasm_f32x4_pmin(wasm_f32x4_pmax(lo, wasm_f32x4_add(wasm_f32x4_nearest(v1), zp)), hi);
    v128_t q = wasm_i16x8_narrow_i32x4(wasm_i32x4_trunc_sat_f32x4(v0), wasm_i32x4_trunc_sat_f32x4(v1));
    q = g->y_dtype == NNW_U8 ? wasm_u8x16_narrow_i16x8(q, q) : wasm_i8x16_narrow_i16x8(q, q);
    wasm_v128_store64_lane(g->y + at, q, 0);
  }
}
#endif

void nnw_q8_gemm_run(const struct nnw_q8_gemm *g) {
  int32_t kp = (g->k + 1) / 2;
  uint32_t *apack = g->scratch;
  int16_t *panel = (int16_t *)(void *)(apack + (size_t)g->m * (size_t)kp);
  int32_t acc[MR][NR];
  pack_a(g, kp, apack);
  for (int32_t j0 = 0; j0 < g->n; j0 += NR) {
    int32_t nb = g->n - j0 < NR ? g->n - j0 : NR;
    pack_panel(g, j0, nb, kp, panel);
    for (int32_t i0 = 0; i0 < g->m; i0 += MR) {
      int32_t mr = g->m - i0 < MR ? g->m - i0 : MR;
      tile(apack + (size_t)i0 * (size_t)kp, kp, mr, panel, acc);
#ifdef __wasm_simd128__
      if (nb == NR && g->y_dtype != NNW_I32) {
        store_f32(g, i0, j0, mr, acc);
        continue;
      }
#endif
      for (int32_t r = 0; r < mr; r++)
        for (int32_t c = 0; c < nb; c++) store(g, i0 + r, j0 + c, acc[r][c]);
    }
  }
}

int nnw_q8_check_out(int32_t y_dtype, int32_t y_zp, int32_t y_min, int32_t y_max) {
  if (!nnw_q8_is_q(y_dtype)) return NNW_OK;
  int32_t lo = nnw_q8_min(y_dtype), hi = nnw_q8_max(y_dtype);
  if (y_zp < lo || y_zp > hi || y_min < lo || y_max > hi || y_min > y_max) return NNW_BAD_ARGS;
  return NNW_OK;
}

struct q8_gemm_args {
  int32_t a, b, a_zp, b_zp, bias, scale, y, scratch, a_dtype, b_dtype, y_dtype, batch, m, n, k,
      a_bs, b_bs, a_zp_rs, b_zp_cs, per_row, bias_s, scale_s, y_zp, y_min, y_max;
};

static struct q8_gemm_args decode(const int32_t *v) {
  struct q8_gemm_args p;
  memcpy(&p, v, sizeof p); /* the field order is ops.def's */
  return p;
}
typedef char q8_gemm_args_match_ops_def[sizeof(struct q8_gemm_args) == 4 * NNW_Q8_GEMM_NARGS ? 1 : -1];

static int is01(int32_t v) { return v == 0 || v == 1; }

int nnw_validate_q8_gemm(const int32_t *args, uint32_t arena_bytes) {
  struct q8_gemm_args p = decode(args);
  if (!nnw_q8_is_q(p.a_dtype) || !nnw_q8_is_q(p.b_dtype)) return NNW_BAD_ARGS;
  if (!nnw_q8_is_q(p.y_dtype) && p.y_dtype != NNW_I32 && p.y_dtype != NNW_F32) return NNW_BAD_ARGS;
  int32_t pos[] = {p.batch, p.m, p.n, p.k};
  NNW_TRY(nnw_check_positive(pos, 4));
  if (p.a_bs < 0 || p.b_bs < 0 || !is01(p.a_zp_rs) || !is01(p.b_zp_cs) || !is01(p.per_row) ||
      !is01(p.bias_s) || !is01(p.scale_s))
    return NNW_BAD_ARGS;
  NNW_TRY(nnw_q8_check_out(p.y_dtype, p.y_zp, p.y_min, p.y_max));
  uint64_t m = (uint64_t)p.m, n = (uint64_t)p.n, k = (uint64_t)p.k, last = (uint64_t)p.batch - 1;
  uint64_t ch = p.per_row ? m : n;
  uint64_t a_n = nnw_add(nnw_mul(last, (uint64_t)p.a_bs), nnw_mul(m, k));
  uint64_t b_n = nnw_add(nnw_mul(last, (uint64_t)p.b_bs), nnw_mul(k, n));
  uint64_t y_n = nnw_mul((uint64_t)p.batch, nnw_mul(m, n));
  uint64_t azp_n = p.a_zp_rs ? m : 1, bzp_n = p.b_zp_cs ? n : 1;
  uint64_t bias_n = p.bias_s ? ch : 1, scale_n = p.scale_s ? ch : 1;
  uint64_t scratch = nnw_q8_gemm_scratch(m, k);
  NNW_TRY(nnw_check_typed(p.a, a_n, p.a_dtype, arena_bytes, 0));
  NNW_TRY(nnw_check_typed(p.b, b_n, p.b_dtype, arena_bytes, 0));
  NNW_TRY(nnw_check_typed(p.a_zp, azp_n, p.a_dtype, arena_bytes, 1));
  NNW_TRY(nnw_check_typed(p.b_zp, bzp_n, p.b_dtype, arena_bytes, 1));
  NNW_TRY(nnw_check_typed(p.bias, bias_n, NNW_I32, arena_bytes, 1));
  NNW_TRY(nnw_check_typed(p.scale, scale_n, NNW_F32, arena_bytes, p.y_dtype == NNW_I32));
  NNW_TRY(nnw_check_typed(p.y, y_n, p.y_dtype, arena_bytes, 0));
  NNW_TRY(nnw_check_typed(p.scratch, scratch / 4, NNW_I32, arena_bytes, 0));
  const int32_t at[] = {p.a, p.b, p.a_zp, p.b_zp, p.bias, p.scale, p.y, p.scratch};
  const uint64_t size[] = {a_n, b_n, azp_n, bzp_n, 4 * bias_n, 4 * scale_n,
                           nnw_mul(y_n, (uint64_t)nnw_dtype_size(p.y_dtype)), scratch};
  for (int i = 0; i < 8; i++)      /* the output and the scratch apart from everything else */
    for (int j = i + 1; j < 8; j++)
      if (j >= 6) NNW_TRY(nnw_check_apart(at[i], size[i], at[j], size[j], 0));
  return NNW_OK;
}

void nnw_run_q8_gemm(const int32_t *args, uint8_t *arena) {
  struct q8_gemm_args p = decode(args);
  int ysize = nnw_dtype_size(p.y_dtype);
  struct nnw_q8_gemm g = {
      .m = p.m, .n = p.n, .k = p.k, .a_dtype = p.a_dtype, .b_dtype = p.b_dtype,
      .y_dtype = p.y_dtype, .a_zp = nnw_q8_at(arena, p.a_zp), .b_zp = nnw_q8_at(arena, p.b_zp),
      .lda = p.k, .ldb = p.n, .a_zp_rs = p.a_zp_rs, .b_zp_cs = p.b_zp_cs,
      .bias = p.bias < 0 ? NULL : (const int32_t *)(const void *)(arena + p.bias),
      .scale = nnw_f32_at(arena, p.scale), .bias_s = p.bias_s, .scale_s = p.scale_s,
      .per_row = p.per_row, .y_zp = p.y_zp, .y_min = p.y_min, .y_max = p.y_max, .ldy = p.n,
      .scratch = arena + p.scratch};
  for (int32_t bt = 0; bt < p.batch; bt++) {
    g.a = arena + p.a + (size_t)bt * (size_t)p.a_bs;
    g.b = arena + p.b + (size_t)bt * (size_t)p.b_bs;
    g.y = arena + p.y + (size_t)bt * (size_t)p.m * (size_t)p.n * (size_t)ysize;
    nnw_q8_gemm_run(&g);
  }
}

/* scratch bytes q8_gemm needs for an [m, k] a (what the plan compiler asks), -1 if too large */
NNW_EXPORT int32_t nnw_q8_gemm_scratch_bytes(int32_t m, int32_t k) {
  if (m <= 0 || k <= 0) return -1;
  uint64_t bytes = nnw_q8_gemm_scratch((uint64_t)m, (uint64_t)k);
  return bytes > INT32_MAX ? -1 : (int32_t)bytes;
}

/* q8_gemm_ep: q8_gemm's arguments, then fbias, r, act (ops.def) */
int nnw_validate_q8_gemm_ep(const int32_t *args, uint32_t arena_bytes) {
  NNW_TRY(nnw_validate_q8_gemm(args, arena_bytes));
  struct q8_gemm_args p = decode(args);
  int32_t fbias = args[NNW_Q8_GEMM_EP_FBIAS], r = args[NNW_Q8_GEMM_EP_R], act = args[NNW_Q8_GEMM_EP_ACT];
  if (p.y_dtype != NNW_F32 || p.per_row || (act & ~1)) return NNW_BAD_ARGS;
  uint64_t n = (uint64_t)p.n, y_bytes = nnw_mul(nnw_mul((uint64_t)p.batch * 4, (uint64_t)p.m), n);
  NNW_TRY(nnw_check_tensor(fbias, n * 4, arena_bytes, 1, 1));
  NNW_TRY(nnw_check_tensor(r, y_bytes, arena_bytes, 1, 1));
  NNW_TRY(nnw_check_apart(fbias, n * 4, p.y, y_bytes, 0));
  NNW_TRY(nnw_check_apart(r, y_bytes, p.y, y_bytes, 0));
  return NNW_OK;
}

void nnw_run_q8_gemm_ep(const int32_t *args, uint8_t *arena) {
  struct q8_gemm_args p = decode(args);
  struct nnw_q8_gemm g = {
      .m = p.m, .n = p.n, .k = p.k, .a_dtype = p.a_dtype, .b_dtype = p.b_dtype,
      .y_dtype = p.y_dtype, .a_zp = nnw_q8_at(arena, p.a_zp), .b_zp = nnw_q8_at(arena, p.b_zp),
      .lda = p.k, .ldb = p.n, .a_zp_rs = p.a_zp_rs, .b_zp_cs = p.b_zp_cs,
      .bias = p.bias < 0 ? NULL : (const int32_t *)(const void *)(arena + p.bias),
      .scale = nnw_f32_at(arena, p.scale), .bias_s = p.bias_s, .scale_s = p.scale_s,
      .per_row = 0, .ldy = p.n, .scratch = arena + p.scratch,
      .fbias = nnw_f32_at(arena, args[NNW_Q8_GEMM_EP_FBIAS]), .act = args[NNW_Q8_GEMM_EP_ACT]};
  const float *r = nnw_f32_at(arena, args[NNW_Q8_GEMM_EP_R]);
  for (int32_t bt = 0; bt < p.batch; bt++) {
    size_t y_off = (size_t)bt * (size_t)p.m * (size_t)p.n;
    g.a = arena + p.a + (size_t)bt * (size_t)p.a_bs;
    g.b = arena + p.b + (size_t)bt * (size_t)p.b_bs;
    g.y = arena + p.y + 4 * y_off;
    g.r = r != NULL ? r + y_off : NULL;
    nnw_q8_gemm_run(&g);
  }
}
