/* transpose: a strided gather into a contiguous output (Transpose of any dtype). The output is
 * walked in order, so writes stream; reads follow the permuted strides. Dims are padded on the
 * left to six so one loop nest serves every rank. */
#include "internal.h"

#define MAX_RANK 6

struct nnw_transpose {
  int32_t x, y, esize, rank;
  int32_t d[MAX_RANK], s[MAX_RANK];   /* left-padded with d = 1, s = 0 */
};

static void decode(const int32_t *v, struct nnw_transpose *p) {
  p->x = v[NNW_TRANSPOSE_X];
  p->y = v[NNW_TRANSPOSE_Y];
  p->esize = v[NNW_TRANSPOSE_ESIZE];
  p->rank = v[NNW_TRANSPOSE_RANK];
  int32_t rank = p->rank < 0 ? 0 : p->rank > MAX_RANK ? MAX_RANK : p->rank;
  for (int i = 0; i < MAX_RANK; i++) {
    int k = i - (MAX_RANK - rank); /* index into the op's dims, or < 0 for padding */
    p->d[i] = k < 0 ? 1 : v[NNW_TRANSPOSE_D0 + k];
    p->s[i] = k < 0 ? 0 : v[NNW_TRANSPOSE_S0 + k];
  }
}

int nnw_validate_transpose(const int32_t *v, uint32_t arena_bytes) {
  struct nnw_transpose p;
  decode(v, &p);
  if (p.rank < 1 || p.rank > MAX_RANK) return NNW_BAD_ARGS;
  if (p.esize != 1 && p.esize != 2 && p.esize != 4 && p.esize != 8) return NNW_BAD_ARGS;
  uint64_t count = 1, reach = 0; /* reach: the largest element offset read in x */
  for (int i = 0; i < MAX_RANK; i++) {
    if (p.d[i] <= 0 || p.s[i] < 0) return NNW_BAD_ARGS;
    count = nnw_mul(count, (uint64_t)p.d[i]);
    reach = nnw_add(reach, nnw_mul((uint64_t)(p.d[i] - 1), (uint64_t)p.s[i]));
  }
  if (p.x % p.esize || p.y % p.esize) return NNW_BAD_ARGS;
  NNW_TRY(nnw_check_tensor(p.x, nnw_mul(nnw_add(reach, 1), (uint64_t)p.esize), arena_bytes, 0, 0));
  NNW_TRY(nnw_check_tensor(p.y, nnw_mul(count, (uint64_t)p.esize), arena_bytes, 0, 0));
  return nnw_check_apart(p.x, (reach + 1) * (uint64_t)p.esize, p.y, count * (uint64_t)p.esize, 0);
}

#define GATHER(T)                                                                              \
  static void gather_##T(const T *x, T *y, const int32_t *d, const int32_t *s) {             \
    for (int32_t a = 0; a < d[0]; a++)                                                       \
      for (int32_t b = 0; b < d[1]; b++)                                                     \
        for (int32_t c = 0; c < d[2]; c++)                                                   \
          for (int32_t e = 0; e < d[3]; e++)                                                 \
            for (int32_t f = 0; f < d[4]; f++) {                                             \
              const T *row = x + (size_t)a * s[0] + (size_t)b * s[1] + (size_t)c * s[2] +    \
                             (size_t)e * s[3] + (size_t)f * s[4];                            \
              if (s[5] == 1) {                                                               \
                memcpy(y, row, (size_t)d[5] * sizeof(T));                                    \
              } else {                                                                       \
                for (int32_t g = 0; g < d[5]; g++) y[g] = row[(size_t)g * s[5]];             \
              }                                                                              \
              y += d[5];                                                                     \
            }                                                                                \
  }
GATHER(uint8_t)
GATHER(uint16_t)
GATHER(uint32_t)
GATHER(uint64_t)

void nnw_run_transpose(const int32_t *v, uint8_t *arena) {
  struct nnw_transpose p;
  decode(v, &p);
  const void *x = arena + p.x;
  void *y = arena + p.y;
  switch (p.esize) {
    case 1: gather_uint8_t(x, y, p.d, p.s); break;
    case 2: gather_uint16_t(x, y, p.d, p.s); break;
    case 4: gather_uint32_t(x, y, p.d, p.s); break;
    default: gather_uint64_t(x, y, p.d, p.s); break;
  }
}
