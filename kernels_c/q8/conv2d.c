/* q8_conv2d: ConvInteger and QLinearConv as im2col into uint8/int8 columns (padding with the
 * input's zero point, so padded taps add nothing once it is subtracted) and the q8 GEMM with the
 * weights as a (one zero point per output channel) and the columns as b. A 1x1, stride-1,
 * unpadded conv multiplies the image itself. */
#include "conv2d.h"

static int pointwise(const struct q8_conv *p) {
  return p->kh == 1 && p->kw == 1 && p->sh == 1 && p->sw == 1 && p->pt == 0 && p->pl == 0 &&
         p->oh == p->h && p->ow == p->wd;
}

/* scratch bytes (im2col columns, then the GEMM's packing), or -1 for parameters it refuses */
static int64_t scratch_bytes(const struct q8_conv *p) {
  int32_t pos[] = {p->c, p->m, p->group, p->kh, p->kw, p->oh, p->ow, p->sh, p->sw, p->dh, p->dw,
                   p->h, p->wd};
  if (nnw_check_positive(pos, (int)(sizeof pos / sizeof pos[0])) || p->pt < 0 || p->pl < 0)
    return -1;
  if (p->c % p->group != 0 || p->m % p->group != 0) return -1;
  int64_t span_h = (int64_t)(p->oh - 1) * p->sh + (int64_t)(p->kh - 1) * p->dh + 1;
  int64_t span_w = (int64_t)(p->ow - 1) * p->sw + (int64_t)(p->kw - 1) * p->dw + 1;
  if (span_h + p->pt + p->h > COORD_LIMIT || span_w + p->pl + p->wd > COORD_LIMIT) return -1;
  if (nnw_q8_conv_depthwise(p)) /* one channel's int16 padded plane, DW_SLACK columns past its span */
    return nnw_mul(2, nnw_mul((uint64_t)span_h, (uint64_t)span_w + DW_SLACK));
  uint64_t ck = nnw_mul(nnw_mul((uint64_t)(p->c / p->group), (uint64_t)p->kh), (uint64_t)p->kw);
  uint64_t cols = pointwise(p) ? 0 : nnw_mul(ck, nnw_mul((uint64_t)p->oh, (uint64_t)p->ow));
  uint64_t bytes = nnw_add((cols + 3) / 4 * 4, nnw_q8_gemm_scratch((uint64_t)(p->m / p->group), ck));
  return bytes > INT32_MAX ? -1 : (int64_t)bytes;
}

NNW_EXPORT int32_t nnw_q8_conv2d_scratch_bytes(int32_t c, int32_t m, int32_t group, int32_t kh,
                                               int32_t kw, int32_t oh, int32_t ow, int32_t sh,
                                               int32_t sw, int32_t dh, int32_t dw, int32_t pt,
                                               int32_t pl, int32_t h, int32_t w) {
  struct q8_conv p = {.c = c, .group = group, .kh = kh, .kw = kw, .oh = oh, .ow = ow, .m = m,
                      .sh = sh, .sw = sw, .dh = dh, .dw = dw, .pt = pt, .pl = pl, .h = h, .wd = w};
  return (int32_t)scratch_bytes(&p);
}

/* q8_conv2d_pack_w's bytes for m rows of k: the header, then m*ceil(k/2) words */
static uint64_t packed_bytes(int32_t m, int32_t k) {
  return nnw_add(16, nnw_mul(nnw_mul((uint64_t)m, ((uint64_t)k + 1) / 2), 4));
}

/* q8_conv2d's checks; packed (q8_conv2d_pk): the weight is q8_conv2d_pack_w's buffer */
static int validate(const int32_t *args, uint32_t arena_bytes, int packed) {
  struct q8_conv p = nnw_q8_conv_decode(args);
  if (p.n <= 0 || !nnw_q8_is_q(p.x_dtype) || !nnw_q8_is_q(p.w_dtype)) return NNW_BAD_ARGS;
  if (packed && (p.group != 1 || !nnw_q8_is_q(p.y_dtype))) return NNW_BAD_ARGS;
  if (!nnw_q8_is_q(p.y_dtype) && p.y_dtype != NNW_I32 && p.y_dtype != NNW_F32) return NNW_BAD_ARGS;
  if ((p.w_zp_s != 0 && p.w_zp_s != 1) || (p.scale_s != 0 && p.scale_s != 1)) return NNW_BAD_ARGS;
  NNW_TRY(nnw_q8_check_out(p.y_dtype, p.y_zp, p.y_min, p.y_max));
  int64_t scratch = scratch_bytes(&p);
  if (scratch < 0) return NNW_BAD_ARGS;
  uint64_t n = (uint64_t)p.n, m = (uint64_t)p.m;
  uint64_t x_n = nnw_mul(nnw_mul(n, (uint64_t)p.c), nnw_mul((uint64_t)p.h, (uint64_t)p.wd));
  uint64_t w_n = nnw_mul(nnw_mul(m, (uint64_t)(p.c / p.group)), nnw_mul((uint64_t)p.kh, (uint64_t)p.kw));
  if (packed) w_n = packed_bytes(p.m, p.c * p.kh * p.kw); /* bytes; c*kh*kw fits: scratch_bytes passed */
  uint64_t y_n = nnw_mul(nnw_mul(n, m), nnw_mul((uint64_t)p.oh, (uint64_t)p.ow));
  uint64_t wzp_n = p.w_zp_s ? m : 1, scale_n = p.scale_s ? m : 1;
  NNW_TRY(nnw_check_typed(p.x, x_n, p.x_dtype, arena_bytes, 0));
  if (packed)
    NNW_TRY(nnw_check_tensor(p.w, w_n, arena_bytes, 0, 1));
  else
    NNW_TRY(nnw_check_typed(p.w, w_n, p.w_dtype, arena_bytes, 0));
  NNW_TRY(nnw_check_typed(p.x_zp, 1, p.x_dtype, arena_bytes, 1));
  NNW_TRY(nnw_check_typed(p.w_zp, wzp_n, p.w_dtype, arena_bytes, 1));
  NNW_TRY(nnw_check_typed(p.bias, m, NNW_I32, arena_bytes, 1));
  NNW_TRY(nnw_check_typed(p.scale, scale_n, NNW_F32, arena_bytes, p.y_dtype == NNW_I32));
  NNW_TRY(nnw_check_typed(p.y, y_n, p.y_dtype, arena_bytes, 0));
  NNW_TRY(nnw_check_typed(p.scratch, (uint64_t)scratch / 4, NNW_I32, arena_bytes, 0));
  const int32_t at[] = {p.x, p.w, p.x_zp, p.w_zp, p.bias, p.scale, p.y, p.scratch};
  const uint64_t size[] = {x_n, w_n, 1, wzp_n, 4 * m, 4 * scale_n,
                           nnw_mul(y_n, (uint64_t)nnw_dtype_size(p.y_dtype)), (uint64_t)scratch};
  for (int i = 0; i < 8; i++)      /* the output and the scratch apart from everything else */
    for (int j = i + 1; j < 8; j++)
      if (j >= 6) NNW_TRY(nnw_check_apart(at[i], size[i], at[j], size[j], 0));
  return NNW_OK;
}

int nnw_validate_q8_conv2d(const int32_t *args, uint32_t arena_bytes) { return validate(args, arena_bytes, 0); }
int nnw_validate_q8_conv2d_pk(const int32_t *args, uint32_t arena_bytes) { return validate(args, arena_bytes, 1); }

struct pack_args {
  int32_t w, w_zp, wp, w_dtype, m, k, w_zp_s;
};
typedef char pack_args_match_ops_def[sizeof(struct pack_args) == 4 * NNW_Q8_CONV2D_PACK_W_NARGS ? 1 : -1];

static struct pack_args decode_pack(const int32_t *v) {
  struct pack_args p;
  memcpy(&p, v, sizeof p); /* the field order is ops.def's */
  return p;
}

int nnw_validate_q8_conv2d_pack_w(const int32_t *args, uint32_t arena_bytes) {
  struct pack_args p = decode_pack(args);
  int32_t pos[] = {p.m, p.k};
  NNW_TRY(nnw_check_positive(pos, 2));
  if (!nnw_q8_is_q(p.w_dtype) || (p.w_zp_s & ~1)) return NNW_BAD_ARGS;
  uint64_t w_n = nnw_mul((uint64_t)p.m, (uint64_t)p.k), wp_n = packed_bytes(p.m, p.k);
  if (wp_n > INT32_MAX) return NNW_OUT_OF_BOUNDS;
  NNW_TRY(nnw_check_typed(p.w, w_n, p.w_dtype, arena_bytes, 0));
  NNW_TRY(nnw_check_typed(p.w_zp, p.w_zp_s ? (uint64_t)p.m : 1, p.w_dtype, arena_bytes, 1));
  NNW_TRY(nnw_check_tensor(p.wp, wp_n, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_apart(p.w, w_n, p.wp, wp_n, 0));
  NNW_TRY(nnw_check_apart(p.w_zp, p.w_zp_s ? (uint64_t)p.m : 1, p.wp, wp_n, 0));
  return NNW_OK;
}

#ifndef __wasm_simd128__
/* word (row i, pair q) of the packed weights: rows blocked four at a time, then the last m % 4
 * rows one after the other (blocked), or row after row */
static size_t pw_at(int32_t i, int32_t q, int32_t m, int32_t kp, int blocked) {
  int32_t m4 = blocked ? m / 4 * 4 : 0;
  return i < m4 ? ((size_t)(i / 4) * (size_t)kp + (size_t)q) * 4 + (size_t)(i % 4)
                : (size_t)i * (size_t)kp + (size_t)q;
}
#endif

void nnw_run_q8_conv2d_pack_w(const int32_t *args, uint8_t *arena) {
  struct pack_args a = decode_pack(args);
  int32_t blocked = (nnw_host_hints & NNW_HINT_SPLAT_BY_SHUFFLE) != 0, kp = (a.k + 1) / 2;
  uint8_t *wp = arena + a.wp;
  const uint8_t *w = arena + a.w, *w_zp = nnw_q8_at(arena, a.w_zp);
  memset(wp, 0, 16);
#if defined(__wasm_simd128__) && defined(__wasm_relaxed_simd__)
  if (nnw_q8_pw_pack_relaxed(a.m, a.k, a.w_dtype, w, w_zp, a.w_zp_s, wp + 16)) {
    int32_t layout = 2; /* 7-bit weights for the relaxed dot (conv2d_pw_relaxed.c) */
    memcpy(wp, &layout, 4);
    return;
  }
#endif
  memcpy(wp, &blocked, 4);
  uint32_t *out = (uint32_t *)(void *)(wp + 16);
#ifdef __wasm_simd128__
  struct q8_conv p = {.m = a.m, .w_dtype = a.w_dtype, .w_zp_s = a.w_zp_s};
  nnw_q8_pw_pack(&p, w, w_zp, a.k, kp, blocked, out);
#else
  for (int32_t i = 0; i < a.m; i++) {
    int32_t zp = nnw_q8_get(w_zp, a.w_dtype, (size_t)i * (size_t)a.w_zp_s);
    const uint8_t *row = w + (size_t)i * (size_t)a.k;
    for (int32_t q = 0; q < kp; q++) {
      uint16_t lo = (uint16_t)(nnw_q8_get(row, a.w_dtype, (size_t)(2 * q)) - zp);
      uint16_t hi = 2 * q + 1 < a.k ? (uint16_t)(nnw_q8_get(row, a.w_dtype, (size_t)(2 * q + 1)) - zp) : 0;
      out[pw_at(i, q, a.m, kp, blocked)] = (uint32_t)lo | (uint32_t)hi << 16;
    }
  }
#endif
}

/* col[(ci*kh + ky)*kw + kx][oy*ow + ox] = x[ci][oy*sh - pt + ky*dh][ox*sw - pl + kx*dw], pad outside */
static void im2col(const struct q8_conv *p, const uint8_t *x, int32_t channels, uint8_t pad,
                   uint8_t *col) {
  for (int32_t ci = 0; ci < channels; ci++) {
    const uint8_t *xc = x + (size_t)ci * (size_t)p->h * (size_t)p->wd;
    for (int32_t ky = 0; ky < p->kh; ky++)
      for (int32_t kx = 0; kx < p->kw; kx++)
        for (int32_t oy = 0; oy < p->oh; oy++, col += p->ow) {
          int32_t iy = oy * p->sh - p->pt + ky * p->dh;
          if (iy < 0 || iy >= p->h) {
            memset(col, pad, (size_t)p->ow);
            continue;
          }
          const uint8_t *row = xc + (size_t)iy * (size_t)p->wd;
          /* output columns whose tap lands inside the image: ox in [lo, hi) */
          int32_t off = kx * p->dw - p->pl;
          int32_t lo = off >= 0 ? 0 : (-off + p->sw - 1) / p->sw;
          int32_t hi = off >= p->wd ? 0 : (p->wd - off + p->sw - 1) / p->sw;
          if (hi > p->ow) hi = p->ow;
          if (lo > hi) lo = hi;
          memset(col, pad, (size_t)lo);
          if (p->sw == 1) {
            memcpy(col + lo, row + lo + off, (size_t)(hi - lo));
          } else {
            int32_t ox = lo;
#ifdef __wasm_simd128__
            /* stride 2 (the first conv of the MobileNets): 16 outputs from 32 bytes of the row
             * while those lie inside it */
            if (p->sw == 2)
              for (; ox + 16 <= hi && 2 * ox + off + 32 <= p->wd; ox += 16) {
                const uint8_t *s = row + 2 * ox + off;
                wasm_v128_store(col + ox, wasm_i8x16_shuffle(wasm_v128_load(s), wasm_v128_load(s + 16), 0, 2, 4, 6, 8, 10,
                                                             12, 14, 16, 18, 20, 22, 24, 26, 28, 30));
              }
#endif
            for (; ox < hi; ox++) col[ox] = row[ox * p->sw + off];
          }
          memset(col + hi, pad, (size_t)(p->ow - hi));
        }
  }
}

void nnw_run_q8_conv2d(const int32_t *args, uint8_t *arena) {
  struct q8_conv p = nnw_q8_conv_decode(args);
  if (nnw_q8_conv_depthwise(&p)) {
    nnw_q8_conv2d_dw(&p, arena);
    return;
  }
  int32_t cg = p.c / p.group, mg = p.m / p.group;
  size_t plane = (size_t)p.oh * (size_t)p.ow, ck = (size_t)cg * (size_t)p.kh * (size_t)p.kw;
  int ysize = nnw_dtype_size(p.y_dtype);
  const uint8_t *x_zp = nnw_q8_at(arena, p.x_zp);
  uint8_t pad = x_zp ? x_zp[0] : 0;
  int is_pw = pointwise(&p);
  uint8_t *col = arena + p.scratch;
  size_t col_bytes = is_pw ? 0 : (ck * plane + 3) / 4 * 4;
  const float *scale = nnw_f32_at(arena, p.scale);
  const int32_t *bias = p.bias < 0 ? NULL : (const int32_t *)(const void *)(arena + p.bias);
  const uint8_t *w_zp = nnw_q8_at(arena, p.w_zp);
#ifdef __wasm_simd128__
  if (p.group == 1 && nnw_q8_is_q(p.y_dtype)) { /* conv2d_pw.c */
    for (int32_t b = 0; b < p.n; b++) {
      const uint8_t *x = arena + p.x + (size_t)b * (size_t)p.c * (size_t)p.h * (size_t)p.wd;
      if (!is_pw) im2col(&p, x, p.c, pad, col);
      nnw_q8_conv2d_mm(&p, arena, is_pw ? x : col, (int32_t)ck, arena + p.y + (size_t)b * (size_t)p.m * plane,
                       col + col_bytes, NULL, 0);
    }
    return;
  }
#endif
  for (int32_t b = 0; b < p.n; b++)
    for (int32_t gr = 0; gr < p.group; gr++) {
      const uint8_t *x = arena + p.x + ((size_t)b * (size_t)p.c + (size_t)gr * (size_t)cg) *
                                           (size_t)p.h * (size_t)p.wd;
      if (!is_pw) im2col(&p, x, cg, pad, col);
      size_t o0 = (size_t)gr * (size_t)mg;
      struct nnw_q8_gemm g = {
          .m = mg, .n = (int32_t)plane, .k = (int32_t)ck, .a_dtype = p.w_dtype,
          .b_dtype = p.x_dtype, .y_dtype = p.y_dtype,
          .a = arena + p.w + o0 * ck, .b = is_pw ? x : col,
          .a_zp = w_zp ? w_zp + o0 * (size_t)p.w_zp_s : NULL, .b_zp = x_zp,
          .lda = (ptrdiff_t)ck, .ldb = (ptrdiff_t)plane, .a_zp_rs = p.w_zp_s, .b_zp_cs = 0,
          .bias = bias ? bias + o0 : NULL, .scale = scale ? scale + o0 * (size_t)p.scale_s : NULL,
          .bias_s = 1, .scale_s = p.scale_s, .per_row = 1, .y_zp = p.y_zp, .y_min = p.y_min,
          .y_max = p.y_max,
          .y = arena + p.y + (((size_t)b * (size_t)p.m + o0) * plane) * (size_t)ysize,
          .ldy = (ptrdiff_t)plane, .scratch = col + col_bytes};
      nnw_q8_gemm_run(&g);
    }
}

/* q8_conv2d_pk: the group-1 path above on weights packed at plan load */
void nnw_run_q8_conv2d_pk(const int32_t *args, uint8_t *arena) {
  struct q8_conv p = nnw_q8_conv_decode(args);
  size_t plane = (size_t)p.oh * (size_t)p.ow, ck = (size_t)p.c * (size_t)p.kh * (size_t)p.kw;
  const uint8_t *x_zp = nnw_q8_at(arena, p.x_zp);
  uint8_t pad = x_zp ? x_zp[0] : 0;
  int is_pw = pointwise(&p);
  uint8_t *col = arena + p.scratch;
  int32_t blocked;
  memcpy(&blocked, arena + p.w, 4);
  const uint32_t *wp = (const uint32_t *)(const void *)(arena + p.w + 16);
  for (int32_t b = 0; b < p.n; b++) {
    const uint8_t *x = arena + p.x + (size_t)b * (size_t)p.c * (size_t)p.h * (size_t)p.wd;
    uint8_t *y = arena + p.y + (size_t)b * (size_t)p.m * plane;
    if (!is_pw) im2col(&p, x, p.c, pad, col);
#ifdef __wasm_simd128__
    size_t col_bytes = is_pw ? 0 : (ck * plane + 3) / 4 * 4;
#ifdef __wasm_relaxed_simd__
    if (blocked == 2 && ck >= 16) { /* packed for the relaxed dot (layout 2; its room needs k >= 16) */
      nnw_q8_conv2d_mm_relaxed(&p, arena, is_pw ? x : col, (int32_t)ck, y, col + col_bytes, arena + p.w + 16);
      continue;
    }
#endif
    nnw_q8_conv2d_mm(&p, arena, is_pw ? x : col, (int32_t)ck, y, col + col_bytes, wp, blocked);
#else
    /* the same sums (uint32, wrapping) and q8_gemm's output rule, one output at a time */
    const uint8_t *xs = is_pw ? x : col;
    const float *scale = nnw_f32_at(arena, p.scale);
    const int32_t *bias = p.bias < 0 ? NULL : (const int32_t *)(const void *)(arena + p.bias);
    int32_t xz = nnw_q8_get(x_zp, p.x_dtype, 0), kp = (int32_t)(ck + 1) / 2;
    for (int32_t o = 0; o < p.m; o++)
      for (size_t j = 0; j < plane; j++) {
        uint32_t acc = bias ? (uint32_t)bias[o] : 0;
        for (int32_t q = 0; q < kp; q++) {
          uint32_t wq = wp[pw_at(o, q, p.m, kp, blocked)];
          int32_t lo = (int16_t)(uint16_t)(wq & 0xFFFFu), hi = (int16_t)(uint16_t)(wq >> 16);
          int32_t x0 = nnw_q8_get(xs, p.x_dtype, (size_t)(2 * q) * plane + j) - xz;
          int32_t x1 = (size_t)(2 * q + 1) < ck ? nnw_q8_get(xs, p.x_dtype, (size_t)(2 * q + 1) * plane + j) - xz : 0;
          acc += (uint32_t)(lo * x0) + (uint32_t)(hi * x1);
        }
        y[(size_t)o * plane + j] = (uint8_t)nnw_q8_round_sat((float)(int32_t)acc * scale[(size_t)o * (size_t)p.scale_s],
                                                             p.y_zp, p.y_min, p.y_max);
      }
#endif
  }
}
