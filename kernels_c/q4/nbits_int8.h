/* q4_matmul's int8 path (nbits_int8.c): MatMulNBits at onnxruntime's accuracy_level 4, A quantized
 * to int8 per block and integer dot products with the packed weights (py_runtime/nnwasm/ops/
 * quant_blocks_int8.py is the numpy reference: the same bits). */
#ifndef NNW_Q4_NBITS_INT8_H
#define NNW_Q4_NBITS_INT8_H
#include <stdint.h>

struct nnw_q4i8 {
  const float *a, *scales, *bias; /* a [m][k], scales [n][kb], bias [n] or NULL */
  const uint8_t *b, *zp;          /* b [n][kb][bs*bits/8]; zp packed [n][ceil(kb*bits/8)] or NULL (2^(bits-1)) */
  float *y;                       /* [m][n] */
  int32_t m, n, k, bits, bs;
};

/* whether the int8 path takes this width and block size (bits 2, 4, 8; 16*8/bits/2 <= bs <= 4096) */
int nnw_q4i8_supported(int32_t bits, int32_t bs);
/* scratch bytes for m rows (A's int16 copy, its scales and sums); the caller checks the bounds */
uint64_t nnw_q4i8_scratch(int32_t m, int32_t k, int32_t bits, int32_t bs);
void nnw_q4i8_run(const struct nnw_q4i8 *p, uint8_t *scratch);
#endif
