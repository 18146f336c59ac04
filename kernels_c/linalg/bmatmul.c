/* bmatmul: MatMul with batch broadcasting in two levels of batch strides, as attention uses
 * ([B,H,S,D] @ [B,H,D,S], [1,H,S,D] @ [B,H,D,S]); the lowering merges batch dims down to two
 * and emits one op per block of any further levels. Each matrix runs on gemm_nn.c's core. */
#include <math.h>

#include "internal.h"

struct bmatmul {
  int32_t a, b, y, b0, b1, m, n, k, as0, as1, bs0, bs1;
};

static void bmatmul_decode(const int32_t *v, struct bmatmul *p) {
  p->a = v[NNW_BMATMUL_A];
  p->b = v[NNW_BMATMUL_B];
  p->y = v[NNW_BMATMUL_Y];
  p->b0 = v[NNW_BMATMUL_B0];
  p->b1 = v[NNW_BMATMUL_B1];
  p->m = v[NNW_BMATMUL_M];
  p->n = v[NNW_BMATMUL_N];
  p->k = v[NNW_BMATMUL_K];
  p->as0 = v[NNW_BMATMUL_AS0];
  p->as1 = v[NNW_BMATMUL_AS1];
  p->bs0 = v[NNW_BMATMUL_BS0];
  p->bs1 = v[NNW_BMATMUL_BS1];
}

/* elements from the first to one past the last that a batched operand reads */
static uint64_t extent(int32_t b0, int32_t b1, int32_t s0, int32_t s1, uint64_t matrix) {
  return nnw_add(nnw_add(nnw_mul((uint64_t)b0 - 1, (uint64_t)s0), nnw_mul((uint64_t)b1 - 1, (uint64_t)s1)),
                 matrix);
}

int nnw_validate_bmatmul(const int32_t *args, uint32_t arena_bytes) {
  struct bmatmul p;
  bmatmul_decode(args, &p);
  int32_t dims[] = {p.b0, p.b1, p.m, p.n, p.k};
  NNW_TRY(nnw_check_positive(dims, 5));
  if (p.as0 < 0 || p.as1 < 0 || p.bs0 < 0 || p.bs1 < 0) return NNW_BAD_ARGS;
  uint64_t m = (uint64_t)p.m, n = (uint64_t)p.n, k = (uint64_t)p.k;
  uint64_t a_bytes = nnw_mul(extent(p.b0, p.b1, p.as0, p.as1, nnw_mul(m, k)), 4);
  uint64_t b_bytes = nnw_mul(extent(p.b0, p.b1, p.bs0, p.bs1, nnw_mul(k, n)), 4);
  uint64_t y_bytes = nnw_mul(nnw_mul(nnw_mul((uint64_t)p.b0, (uint64_t)p.b1), nnw_mul(m, n)), 4);
  NNW_TRY(nnw_check_tensor(p.a, a_bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(p.b, b_bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(p.y, y_bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_apart(p.a, a_bytes, p.y, y_bytes, 0));
  NNW_TRY(nnw_check_apart(p.b, b_bytes, p.y, y_bytes, 0));
  return NNW_OK;
}

void nnw_run_bmatmul(const int32_t *args, uint8_t *arena) {
  struct bmatmul p;
  bmatmul_decode(args, &p);
  const float *a = nnw_f32_at(arena, p.a), *b = nnw_f32_at(arena, p.b);
  float *y = nnw_f32_at(arena, p.y);
  struct nnw_epilogue ep = {1.0f, 0.0f, -INFINITY, INFINITY, NULL, 0, 0};
  size_t mn = (size_t)p.m * p.n;
  for (int32_t i0 = 0; i0 < p.b0; i0++)
    for (int32_t i1 = 0; i1 < p.b1; i1++, y += mn)
      nnw_gemm_nn(p.m, p.n, p.k, a + (size_t)i0 * p.as0 + (size_t)i1 * p.as1, p.k, 1,
                  b + (size_t)i0 * p.bs0 + (size_t)i1 * p.bs1, p.n, y, p.n, &ep);
}
