/* The packed GEMM's core, shared by gemm_packed (float32 panels) and gemm_packed_f16 (float16
 * panels widened into float32 scratch a block at a time). */
#ifndef NNW_GEMM_PACKED_H
#define NNW_GEMM_PACKED_H
#include <stdint.h>

/* y[i, j] (row stride ldy) = act(a[m,k] @ B + bias[j] + r[i*ldy + j]) for the `cols` columns of
 * the float32 panels at bp (ops.def's gemm_packed layout), bias and r optional (NULL), clamped to
 * [lo, hi]. bias, r and y point at the first of those columns. */
void nnw_gemm_packed_cols(int32_t m, int32_t cols, int32_t ldy, int32_t k, const float *a, const float *bp,
                          const float *bias, const float *r, float *y, int32_t act, float lo, float hi);

/* the same with the A-packing buffer given (a pool worker's: threads/pool.h's nnw_pool_pack_buf) */
void nnw_gemm_packed_cols_buf(int32_t m, int32_t cols, int32_t ldy, int32_t k, const float *a, const float *bp,
                              const float *bias, const float *r, float *y, int32_t act, float lo, float hi, float *pbuf);

#endif
