/* pack_a.h's buffer and packing: four rows at a time, by 4x4 transposes of v128 loads where A's
 * rows are contiguous (every MatMul and conv weight), element by element otherwise. */
#include "pack_a.h"

#include "simd.h"

float nnw_pack_a_buf[NNW_PACK_A_FLOATS] __attribute__((aligned(16)));

void nnw_pack_a(int32_t rows, int32_t k, const float *a, ptrdiff_t a_rs, ptrdiff_t a_cs, int32_t i) {
  nnw_pack_a_into(nnw_pack_a_buf, rows, k, a, a_rs, a_cs, i);
}

void nnw_pack_a_into(float *dst, int32_t rows, int32_t k, const float *a, ptrdiff_t a_rs, ptrdiff_t a_cs, int32_t i) {
  for (int32_t r0 = 0; r0 < rows; r0 += 4, dst += (size_t)4 * k) {
    const float *a0 = a + (i + r0) * a_rs, *a1 = a0 + a_rs, *a2 = a1 + a_rs, *a3 = a2 + a_rs;
    int32_t kk = 0;
    if (a_cs == 1) {
      for (; kk + 4 <= k; kk += 4) {
        v4 x0 = v4_load(a0 + kk), x1 = v4_load(a1 + kk), x2 = v4_load(a2 + kk), x3 = v4_load(a3 + kk);
        v4 t0 = v4_unpacklo(x0, x1), t1 = v4_unpackhi(x0, x1); /* a0 b0 a1 b1, a2 b2 a3 b3 */
        v4 t2 = v4_unpacklo(x2, x3), t3 = v4_unpackhi(x2, x3);
        v4_store(dst + 4 * kk, v4_unpacklo64(t0, t2));
        v4_store(dst + 4 * kk + 4, v4_unpackhi64(t0, t2));
        v4_store(dst + 4 * kk + 8, v4_unpacklo64(t1, t3));
        v4_store(dst + 4 * kk + 12, v4_unpackhi64(t1, t3));
      }
    }
    for (; kk < k; kk++) {
      dst[4 * kk] = a0[kk * a_cs];
      dst[4 * kk + 1] = a1[kk * a_cs];
      dst[4 * kk + 2] = a2[kk * a_cs];
      dst[4 * kk + 3] = a3[kk * a_cs];
    }
  }
}
