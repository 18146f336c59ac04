/* Shared by q8_conv2d's files: conv2d.c (validation, im2col + the q8 GEMM), conv2d_dw.c
 * (depthwise) and conv2d_pw.c / conv2d_pw_relaxed.c (group 1 with a quantized output): the op's
 * arguments. */
#ifndef NNW_Q8_CONV2D_SHARED_H
#define NNW_Q8_CONV2D_SHARED_H
#include "requant.h"

#define COORD_LIMIT ((int64_t)1 << 30)

/* the op's arguments, in ops.def's order */
struct q8_conv {
  int32_t x, w, x_zp, w_zp, bias, scale, y, scratch, x_dtype, w_dtype, y_dtype, n, c, h, wd, m,
      oh, ow, kh, kw, sh, sw, dh, dw, pt, pl, group, w_zp_s, scale_s, y_zp, y_min, y_max;
};
typedef char q8_conv_args_match_ops_def[sizeof(struct q8_conv) == 4 * NNW_Q8_CONV2D_NARGS ? 1 : -1];

static inline struct q8_conv nnw_q8_conv_decode(const int32_t *v) {
  struct q8_conv p;
  memcpy(&p, v, sizeof p);
  return p;
}

/* columns of slack past a depthwise plane's span (vector reads past the last output) */
enum { DW_SLACK = 32 };

/* group == c == m: the depthwise path (conv2d_dw.c) */
static inline int nnw_q8_conv_depthwise(const struct q8_conv *p) {
  return p->group > 1 && p->group == p->c && p->m == p->c;
}
void nnw_q8_conv2d_dw(const struct q8_conv *p, uint8_t *arena);
#ifdef __wasm_simd128__
/* y [m, oh*ow] = requant(weights [m, k] x [k, oh*ow]) of one image, group 1, quantized y
 * (conv2d_pw.c); scratch: nnw_q8_gemm_scratch(m, k) bytes; the weights packed into the scratch,
 * or, if packed is not NULL, read from there in the layout blocked says */
void nnw_q8_conv2d_mm(const struct q8_conv *p, uint8_t *arena, const uint8_t *x, int32_t k,
                      uint8_t *y, uint8_t *scratch, const uint32_t *packed, int blocked);
/* the weights [m, k] (p->m, w_dtype, w_zp_s) as int16 pairs into apack, m*kp words, rows blocked
 * four at a time if blocked (q8_conv2d_pack_w's layout after its 16-byte header) */
void nnw_q8_pw_pack(const struct q8_conv *p, const uint8_t *w, const uint8_t *w_zp, int32_t k,
                    int32_t kp, int blocked, uint32_t *apack);
/* the pointwise GEMMs' (conv2d_pw.c, conv2d_pw_relaxed.c) store of one output row's 8-pixel panel:
 * q's 8 requantized bytes to y, or the first nb of them (a last panel) through a buffer */
static inline void nnw_q8_put8(uint8_t *y, int32_t nb, v128_t q) {
  if (nb == 8) {
    wasm_v128_store64_lane(y, q, 0);
  } else {
    uint8_t tmp[16];
    wasm_v128_store(tmp, q);
    memcpy(y, tmp, (size_t)nb);
  }
}
#endif
#if defined(__wasm_simd128__) && defined(__wasm_relaxed_simd__)
/* the `relaxed` flavour's layout 2 of q8_conv2d_pack_w (conv2d_pw_relaxed.c): 1 if the weights fit
 * (64 <= k < 65536, every w - zp in -64..64, few 64s in a row reaching -64 too), packed into out
 * (after the header) */
int nnw_q8_pw_pack_relaxed(int32_t m, int32_t k, int32_t w_dtype, const uint8_t *w, const uint8_t *w_zp,
                           int32_t w_zp_s, uint8_t *out);
/* nnw_q8_conv2d_mm on layout 2 (packed: the data after the header; k >= 16) */
void nnw_q8_conv2d_mm_relaxed(const struct q8_conv *p, uint8_t *arena, const uint8_t *x, int32_t k, uint8_t *y,
                              uint8_t *scratch, const uint8_t *packed);
#endif


#endif
