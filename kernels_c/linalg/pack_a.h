/* A's rows packed k-major, four at a time, into one static buffer the GEMM cores share
 * (pack_a.c): block b holds A[4b..4b+3][kk] as four consecutive floats for every kk, so a k step
 * reads its four A values with one v128 load (Cranelift splats lanes with pshufd, cheaper there
 * than its 3-instruction load-splat) or four load-splats from one pointer at constant offsets
 * (V8: one vbroadcastss each, one address register instead of four). Callers run A in chunks of
 * nnw_pack_a_rows(k) rows; the GEMMs never nest, so one buffer serves them all. */
#ifndef NNW_PACK_A_H
#define NNW_PACK_A_H
#include <stddef.h>
#include <stdint.h>

#define NNW_PACK_A_FLOATS 32768 /* 128 KiB: 32 rows of k = 1024, all 128 of k = 256 */
extern float nnw_pack_a_buf[NNW_PACK_A_FLOATS];

/* rows per chunk for this k (a multiple of 4), 0 when not even four rows fit */
static inline int32_t nnw_pack_a_rows(int32_t k) {
  return k > 0 && k <= NNW_PACK_A_FLOATS / 4 ? NNW_PACK_A_FLOATS / k / 4 * 4 : 0;
}

/* rows [i, i + rows) of A (rows a multiple of 4, rows * k <= NNW_PACK_A_FLOATS) into the buffer */
void nnw_pack_a(int32_t rows, int32_t k, const float *a, ptrdiff_t a_rs, ptrdiff_t a_cs, int32_t i);
/* the same into another buffer of NNW_PACK_A_FLOATS (a pool helper's, threads/pool.h) */
void nnw_pack_a_into(float *dst, int32_t rows, int32_t k, const float *a, ptrdiff_t a_rs, ptrdiff_t a_cs, int32_t i);
#endif
