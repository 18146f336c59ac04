/* topk (TopK): the k largest or smallest of each column of x viewed as [outer, len, inner],
 * sorted, ties by the lower index. A column is scanned once into a heap of k indices whose root
 * is the worst kept so far (O(len log k)); the heap is then sorted in place (heapsort). The order
 * compares (value, index) pairs, a total order, so the result does not depend on the algorithm:
 * a NaN ranks above every number (and NaNs among themselves by index). */
#include "internal.h"

int nnw_validate_topk(const int32_t *v, uint32_t arena_bytes) {
  int32_t dtype = v[NNW_TOPK_DTYPE], k = v[NNW_TOPK_K];
  int32_t dims[] = {v[NNW_TOPK_OUTER], v[NNW_TOPK_LEN], v[NNW_TOPK_INNER], k};
  NNW_TRY(nnw_check_positive(dims, 4));
  if (k > dims[1] || v[NNW_TOPK_LARGEST] & ~1) return NNW_BAD_ARGS;
  if (dtype != NNW_F32 && dtype != NNW_I32 && dtype != NNW_I64) return NNW_BAD_ARGS;
  uint64_t cols = nnw_mul((uint64_t)dims[0], (uint64_t)dims[2]);
  uint64_t x_count = nnw_mul(cols, (uint64_t)dims[1]), y_count = nnw_mul(cols, (uint64_t)k);
  uint64_t size = (uint64_t)nnw_dtype_size(dtype);
  NNW_TRY(nnw_check_typed(v[NNW_TOPK_X], x_count, dtype, arena_bytes, 0));
  NNW_TRY(nnw_check_typed(v[NNW_TOPK_VALUES], y_count, dtype, arena_bytes, 0));
  NNW_TRY(nnw_check_typed(v[NNW_TOPK_INDICES], y_count, NNW_I64, arena_bytes, 0));
  NNW_TRY(nnw_check_typed(v[NNW_TOPK_SCRATCH], (uint64_t)k, NNW_I32, arena_bytes, 0));
  const int32_t t[] = {v[NNW_TOPK_X], v[NNW_TOPK_VALUES], v[NNW_TOPK_INDICES], v[NNW_TOPK_SCRATCH]};
  const uint64_t b[] = {nnw_mul(x_count, size), nnw_mul(y_count, size), nnw_mul(y_count, 8), 4 * (uint64_t)k};
  for (int i = 0; i < 4; i++)
    for (int j = i + 1; j < 4; j++) NNW_TRY(nnw_check_apart(t[i], b[i], t[j], b[j], 0));
  return NNW_OK;
}

/* before(a, b): element a ranks ahead of element b (indices along the column). */
#define TOPK_COLUMN(T, IS_NAN)                                                                     \
  static int before_##T(const T *x, int32_t inner, int largest, int32_t a, int32_t b) {          \
    T va = x[(size_t)a * inner], vb = x[(size_t)b * inner];                                      \
    int na = IS_NAN(va), nb = IS_NAN(vb);                                                        \
    if (na || nb) {                                                                              \
      if (na && nb) return a < b;                                                                \
      return largest ? na : nb; /* NaN above every number */                                     \
    }                                                                                            \
    if (va != vb) return largest ? va > vb : va < vb;                                            \
    return a < b;                                                                                \
  }                                                                                              \
  /* heap[0] is the element that ranks last among heap[0..n) */                                  \
  static void sift_##T(const T *x, int32_t inner, int largest, int32_t *heap, int32_t n,         \
                       int32_t i) {                                                              \
    for (;;) {                                                                                   \
      int32_t l = 2 * i + 1, r = l + 1, w = i;                                                   \
      if (l < n && before_##T(x, inner, largest, heap[w], heap[l])) w = l;                       \
      if (r < n && before_##T(x, inner, largest, heap[w], heap[r])) w = r;                       \
      if (w == i) return;                                                                        \
      int32_t s = heap[i];                                                                       \
      heap[i] = heap[w], heap[w] = s, i = w;                                                     \
    }                                                                                            \
  }                                                                                              \
  static void column_##T(const T *x, int32_t len, int32_t inner, int32_t k, int largest,         \
                         int32_t *heap, T *values, int64_t *indices) {                           \
    for (int32_t a = 0; a < k; a++) heap[a] = a;                                                 \
    for (int32_t i = k / 2 - 1; i >= 0; i--) sift_##T(x, inner, largest, heap, k, i);           \
    for (int32_t a = k; a < len; a++)                                                            \
      if (before_##T(x, inner, largest, a, heap[0])) heap[0] = a, sift_##T(x, inner, largest, heap, k, 0); \
    for (int32_t n = k - 1; n > 0; n--) { /* heapsort: the last-ranked goes to the end */       \
      int32_t s = heap[0];                                                                       \
      heap[0] = heap[n], heap[n] = s;                                                            \
      sift_##T(x, inner, largest, heap, n, 0);                                                   \
    }                                                                                            \
    for (int32_t j = 0; j < k; j++) {                                                            \
      values[(size_t)j * inner] = x[(size_t)heap[j] * inner];                                    \
      indices[(size_t)j * inner] = heap[j];                                                      \
    }                                                                                            \
  }
#define FLOAT_NAN(v) ((v) != (v))
#define INT_NAN(v) 0
TOPK_COLUMN(float, FLOAT_NAN)
TOPK_COLUMN(int32_t, INT_NAN)
TOPK_COLUMN(int64_t, INT_NAN)

void nnw_run_topk(const int32_t *v, uint8_t *arena) {
  int32_t dtype = v[NNW_TOPK_DTYPE], outer = v[NNW_TOPK_OUTER], len = v[NNW_TOPK_LEN];
  int32_t inner = v[NNW_TOPK_INNER], k = v[NNW_TOPK_K], largest = v[NNW_TOPK_LARGEST];
  size_t esize = (size_t)nnw_dtype_size(dtype);
  int32_t *heap = (int32_t *)(void *)(arena + v[NNW_TOPK_SCRATCH]);
  int64_t *indices = (int64_t *)(void *)(arena + v[NNW_TOPK_INDICES]);
  for (int32_t o = 0; o < outer; o++)
    for (int32_t j = 0; j < inner; j++) {
      size_t xo = ((size_t)o * len * inner + j) * esize, yo = (size_t)o * k * inner + j;
      void *x = arena + v[NNW_TOPK_X] + xo, *y = arena + v[NNW_TOPK_VALUES] + yo * esize;
      if (dtype == NNW_I32) column_int32_t(x, len, inner, k, largest, heap, y, indices + yo);
      else if (dtype == NNW_I64) column_int64_t(x, len, inner, k, largest, heap, y, indices + yo);
      else column_float(x, len, inner, k, largest, heap, y, indices + yo);
    }
}
