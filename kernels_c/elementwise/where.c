/* where: out = cond ? x : y, elements of 1, 2, 4 or 8 bytes (any type: the kernel moves bits),
 * cond bool (nonzero = true), all three broadcast to out (bcast.h). */
#include "bcast.h"

int nnw_validate_where(const int32_t *v, uint32_t arena_bytes) {
  int32_t esize = v[NNW_WHERE_ESIZE];
  if (esize != 1 && esize != 2 && esize != 4 && esize != 8) return NNW_BAD_ARGS;
  /* the unsigned type of that size, for the alignment check */
  int32_t dtype = esize == 1 ? NNW_U8 : esize == 2 ? NNW_U16 : esize == 4 ? NNW_U32 : NNW_U64;
  uint64_t count, ext[3];
  NNW_TRY(nnw_bcast_extents(v + NNW_WHERE_RANK, 3, &count, ext));
  NNW_TRY(nnw_check_typed(v[NNW_WHERE_COND], ext[0], NNW_BOOL, arena_bytes, 0));
  NNW_TRY(nnw_check_typed(v[NNW_WHERE_X], ext[1], dtype, arena_bytes, 0));
  NNW_TRY(nnw_check_typed(v[NNW_WHERE_Y], ext[2], dtype, arena_bytes, 0));
  NNW_TRY(nnw_check_typed(v[NNW_WHERE_OUT], count, dtype, arena_bytes, 0));
  uint64_t out_bytes = nnw_mul(count, (uint64_t)esize);
  NNW_TRY(nnw_check_apart(v[NNW_WHERE_COND], ext[0], v[NNW_WHERE_OUT], out_bytes, 0));
  NNW_TRY(nnw_check_apart(v[NNW_WHERE_X], nnw_mul(ext[1], (uint64_t)esize), v[NNW_WHERE_OUT], out_bytes, 0));
  NNW_TRY(nnw_check_apart(v[NNW_WHERE_Y], nnw_mul(ext[2], (uint64_t)esize), v[NNW_WHERE_OUT], out_bytes, 0));
  return NNW_OK;
}

#define WHERE(name, T)                                                                   \
  static void name(const int32_t *v, uint8_t *arena) {                                   \
    const uint8_t *c = arena + v[NNW_WHERE_COND];                                        \
    const T *x = (const T *)(const void *)(arena + v[NNW_WHERE_X]);                      \
    const T *y = (const T *)(const void *)(arena + v[NNW_WHERE_Y]);                      \
    T *out = (T *)(void *)(arena + v[NNW_WHERE_OUT]);                                    \
    struct nnw_bcast it;                                                                 \
    nnw_bcast_init(&it, v + NNW_WHERE_RANK, 3);                                          \
    ptrdiff_t cs = it.s[0][0], xs = it.s[1][0], ys = it.s[2][0], off[3];                 \
    for (size_t r = 0; r < it.rows; r++) {                                               \
      nnw_bcast_row(&it, off);                                                           \
      const uint8_t *cr = c + off[0];                                                    \
      const T *xr = x + off[1], *yr = y + off[2];                                        \
      for (int32_t i = 0; i < it.d[0]; i++) out[i] = cr[i * cs] ? xr[i * xs] : yr[i * ys]; \
      out += it.d[0];                                                                    \
    }                                                                                    \
  }
WHERE(where8, uint8_t)
WHERE(where16, uint16_t)
WHERE(where32, uint32_t)
WHERE(where64, uint64_t)
#undef WHERE

void nnw_run_where(const int32_t *v, uint8_t *arena) {
  switch (v[NNW_WHERE_ESIZE]) {
    case 1: where8(v, arena); break;
    case 2: where16(v, arena); break;
    case 4: where32(v, arena); break;
    default: where64(v, arena); break;
  }
}
