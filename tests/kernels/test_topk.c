/* topk against a reference that sorts (value, index) pairs by insertion (ties by index, NaN
 * first when largest and last when smallest), for each dtype, and its validator against hostile
 * arguments. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"
#include "tests.h"

enum { F32 = 1, I32 = 6, I64 = 7 };

static double get(const void *x, int dtype, size_t i) {
  if (dtype == I32) return ((const int32_t *)x)[i];
  if (dtype == I64) return (double)((const int64_t *)x)[i];
  return ((const float *)x)[i];
}

/* a ranks ahead of b: the kernel's order, written plainly */
static int ahead(double va, int a, double vb, int b, int largest) {
  int na = isnan(va), nb = isnan(vb);
  if (na || nb) return na && nb ? a < b : largest ? na : nb;
  return va != vb ? (largest ? va > vb : va < vb) : a < b;
}

static void topk_case(int dtype, int largest, int outer, int len, int inner, int k, int ties, int nans) {
  size_t esize = dtype == I64 ? 8 : 4, xn = (size_t)outer * len * inner, yn = (size_t)outer * k * inner;
  uint8_t *x = malloc(esize * xn);
  for (size_t i = 0; i < xn; i++) {
    float f = ties ? (float)(rng_u32() % 4) : rng_float(-3, 3);
    if (nans && rng_u32() % 5 == 0) f = NAN;
    if (dtype == I32) ((int32_t *)x)[i] = (int32_t)(ties ? f : f * 1000);
    else if (dtype == I64) ((int64_t *)x)[i] = (int64_t)(ties ? f : f * 1e6) * 3000000000LL;
    else ((float *)x)[i] = f;
  }
  uint32_t arena_bytes = (uint32_t)(esize * xn + esize * yn + 8 * yn + 4 * k + 64);
  uint8_t *arena = arena_new(arena_bytes);
  int32_t ox = 0, ov = (int32_t)((esize * xn + 7) / 8 * 8), oi = (int32_t)(ov + (esize * yn + 7) / 8 * 8);
  int32_t os = (int32_t)(oi + 8 * yn);
  memcpy(arena + ox, x, esize * xn);
  int32_t args[NNW_TOPK_NARGS] = {ox, ov, oi, os, dtype, outer, len, inner, k, largest};
  size_t bad = 0;
  int *order = malloc(sizeof(int) * len);
  if (run_op(NNW_OP_TOPK, args, NNW_TOPK_NARGS, arena, arena_bytes) == NNW_OK) {
    for (int o = 0; o < outer; o++)
      for (int j = 0; j < inner; j++) {
        size_t base = (size_t)o * len * inner + j;
        for (int a = 0; a < len; a++) { /* insertion sort of the indices */
          int b = a;
          while (b > 0 && ahead(get(x, dtype, base + (size_t)a * inner), a,
                                get(x, dtype, base + (size_t)order[b - 1] * inner), order[b - 1], largest))
            order[b] = order[b - 1], b--;
          order[b] = a;
        }
        for (int r = 0; r < k; r++) {
          size_t yi = ((size_t)o * k + r) * inner + j;
          int64_t idx;
          memcpy(&idx, arena + oi + 8 * yi, 8);
          double want = get(x, dtype, base + (size_t)order[r] * inner), got = get(arena + ov, dtype, yi);
          bad += idx != order[r] || !(got == want || (isnan(got) && isnan(want)));
        }
      }
  } else {
    bad = 1;
  }
  expect(bad == 0, "topk dtype%d largest%d outer%d len%d inner%d k%d ties%d nans%d: %zu wrong", dtype,
         largest, outer, len, inner, k, ties, nans, bad);
  free(order);
  free(arena);
  free(x);
}

void test_topk(void) {
  static const int shapes[][4] = {{1, 1, 1, 1}, {2, 10, 1, 3}, {1, 10, 1, 10}, {3, 7, 4, 2},
                                  {1, 1000, 1, 5}, {2, 257, 3, 257}, {1, 50, 6, 17}};
  static const int dtypes[] = {F32, I32, I64};
  for (int d = 0; d < 3; d++)
    for (int largest = 0; largest < 2; largest++)
      for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int ties = 0; ties < 2; ties++)
          topk_case(dtypes[d], largest, shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3], ties,
                    dtypes[d] == F32 && ties);
  /* hostile: x 4 floats at 0, values 2 at 16, indices 2 int64 at 24, scratch 2 int32 at 40; 48 bytes */
  int32_t ok[NNW_TOPK_NARGS] = {0, 16, 24, 40, F32, 1, 4, 1, 2, 1};
  load_patched("topk valid", NNW_OP_TOPK, ok, NNW_TOPK_NARGS, -1, 0, 48, NNW_OK);
  static const struct arg_patch bad[] = {
      {"topk k 0", NNW_TOPK_K, 0, NNW_BAD_ARGS},
      {"topk k > len", NNW_TOPK_K, 5, NNW_BAD_ARGS},
      {"topk largest 2", NNW_TOPK_LARGEST, 2, NNW_BAD_ARGS},
      {"topk dtype int8", NNW_TOPK_DTYPE, 3, NNW_BAD_ARGS},
      {"topk indices misaligned", NNW_TOPK_INDICES, 28, NNW_BAD_ARGS},
      {"topk indices overlap values", NNW_TOPK_INDICES, 16, NNW_BAD_ARGS},
      {"topk scratch past the arena", NNW_TOPK_SCRATCH, 44, NNW_OUT_OF_BOUNDS},
      {"topk scratch overlaps x", NNW_TOPK_SCRATCH, 8, NNW_BAD_ARGS},
      {"topk len 0", NNW_TOPK_LEN, 0, NNW_BAD_ARGS},
      {"topk outer huge", NNW_TOPK_OUTER, 0x40000000, NNW_OUT_OF_BOUNDS},
      {"topk x negative", NNW_TOPK_X, -8, NNW_OUT_OF_BOUNDS},
  };
  load_patches(NNW_OP_TOPK, ok, NNW_TOPK_NARGS, 48, bad, sizeof bad / sizeof bad[0]);
}
