/* gather and gather_elements: indices are data (embedding ids arrive at run time), so each index
 * is checked as it is read; one out of range stops the run with NNW_BAD_INDEX instead of reading
 * outside x. Negative indices count from the end, as ONNX says. */
#include "internal.h"

#define MAX_RANK 6

/* index k of an int32 or int64 index tensor, wrapped into [0, n); -1 when out of range */
static int64_t index_at(const uint8_t *idx, int32_t dtype, size_t k, int32_t n) {
  int64_t i;
  if (dtype == NNW_I32) {
    int32_t v;
    memcpy(&v, idx + 4 * k, 4);
    i = v;
  } else {
    memcpy(&i, idx + 8 * k, 8);
  }
  if (i < 0) i += n;
  return i >= 0 && i < n ? i : -1;
}

static int index_dtype_ok(int32_t dtype) { return dtype == NNW_I32 || dtype == NNW_I64; }

/* ---- gather: x [outer, axis_dim, inner], idx [n_idx] -> y [outer, n_idx, inner] ---------------- */

int nnw_validate_gather(const int32_t *v, uint32_t arena_bytes) {
  int32_t esize = v[NNW_GATHER_ESIZE], dtype = v[NNW_GATHER_IDX_DTYPE];
  if (esize != 1 && esize != 2 && esize != 4 && esize != 8) return NNW_BAD_ARGS;
  if (!index_dtype_ok(dtype)) return NNW_BAD_ARGS;
  NNW_TRY(nnw_check_positive(v + NNW_GATHER_OUTER, 4));   /* outer, axis_dim, n_idx, inner */
  uint64_t row = nnw_mul((uint64_t)v[NNW_GATHER_INNER], (uint64_t)esize);
  uint64_t x_bytes = nnw_mul(nnw_mul((uint64_t)v[NNW_GATHER_OUTER], (uint64_t)v[NNW_GATHER_AXIS_DIM]), row);
  uint64_t y_bytes = nnw_mul(nnw_mul((uint64_t)v[NNW_GATHER_OUTER], (uint64_t)v[NNW_GATHER_N_IDX]), row);
  uint64_t idx_bytes = nnw_mul((uint64_t)v[NNW_GATHER_N_IDX], (uint64_t)nnw_dtype_size(dtype));
  int32_t x = v[NNW_GATHER_X], y = v[NNW_GATHER_Y], idx = v[NNW_GATHER_IDX];
  NNW_TRY(nnw_check_tensor(x, x_bytes, arena_bytes, 0, 0));
  NNW_TRY(nnw_check_tensor(y, y_bytes, arena_bytes, 0, 0));
  NNW_TRY(nnw_check_typed(idx, (uint64_t)v[NNW_GATHER_N_IDX], dtype, arena_bytes, 0));
  NNW_TRY(nnw_check_apart(x, x_bytes, y, y_bytes, 0));
  return nnw_check_apart(idx, idx_bytes, y, y_bytes, 0);
}

void nnw_run_gather(const int32_t *v, uint8_t *arena) {
  int32_t dtype = v[NNW_GATHER_IDX_DTYPE], outer = v[NNW_GATHER_OUTER], n = v[NNW_GATHER_AXIS_DIM];
  int32_t n_idx = v[NNW_GATHER_N_IDX];
  size_t row = (size_t)v[NNW_GATHER_INNER] * (size_t)v[NNW_GATHER_ESIZE];
  const uint8_t *x = arena + v[NNW_GATHER_X], *idx = arena + v[NNW_GATHER_IDX];
  uint8_t *y = arena + v[NNW_GATHER_Y];
  for (int32_t j = 0; j < n_idx; j++) {   /* every index checked before y is written */
    if (index_at(idx, dtype, (size_t)j, n) < 0) {
      nnw_run_fail(NNW_BAD_INDEX);
      return;
    }
  }
  for (int32_t o = 0; o < outer; o++) {
    const uint8_t *xo = x + (size_t)o * (size_t)n * row;
    for (int32_t j = 0; j < n_idx; j++, y += row)
      memcpy(y, xo + (size_t)index_at(idx, dtype, (size_t)j, n) * row, row);
  }
}

/* ---- gather_elements ------------------------------------------------------------------------------ */

struct nnw_gather_elements {
  int32_t x, idx, y, esize, dtype, rank, axis, axis_dim;
  int32_t d[MAX_RANK], s[MAX_RANK];
};

static void decode(const int32_t *v, struct nnw_gather_elements *p) {
  p->x = v[NNW_GATHER_ELEMENTS_X];
  p->idx = v[NNW_GATHER_ELEMENTS_IDX];
  p->y = v[NNW_GATHER_ELEMENTS_Y];
  p->esize = v[NNW_GATHER_ELEMENTS_ESIZE];
  p->dtype = v[NNW_GATHER_ELEMENTS_IDX_DTYPE];
  p->rank = v[NNW_GATHER_ELEMENTS_RANK];
  p->axis = v[NNW_GATHER_ELEMENTS_AXIS];
  p->axis_dim = v[NNW_GATHER_ELEMENTS_AXIS_DIM];
  for (int i = 0; i < MAX_RANK; i++) {   /* dims past rank read as 1, stride 0 */
    p->d[i] = i < p->rank ? v[NNW_GATHER_ELEMENTS_D0 + i] : 1;
    p->s[i] = i < p->rank ? v[NNW_GATHER_ELEMENTS_S0 + i] : 0;
  }
}

int nnw_validate_gather_elements(const int32_t *v, uint32_t arena_bytes) {
  struct nnw_gather_elements p;
  decode(v, &p);
  if (p.esize != 1 && p.esize != 2 && p.esize != 4 && p.esize != 8) return NNW_BAD_ARGS;
  if (!index_dtype_ok(p.dtype) || p.rank < 1 || p.rank > MAX_RANK) return NNW_BAD_ARGS;
  if (p.axis < 0 || p.axis >= p.rank || p.axis_dim <= 0) return NNW_BAD_ARGS;
  NNW_TRY(nnw_check_positive(p.d, MAX_RANK));
  uint64_t count = 1, reach = 0;   /* reach: the largest x element offset an index can give */
  for (int i = 0; i < MAX_RANK; i++) {
    if (p.s[i] < 0) return NNW_BAD_ARGS;
    int32_t extent = i == p.axis ? p.axis_dim : p.d[i];
    count = nnw_mul(count, (uint64_t)p.d[i]);
    reach = nnw_add(reach, nnw_mul((uint64_t)(extent - 1), (uint64_t)p.s[i]));
  }
  uint64_t es = (uint64_t)p.esize, x_bytes = nnw_mul(nnw_add(reach, 1), es), y_bytes = nnw_mul(count, es);
  if (p.x % p.esize || p.y % p.esize) return NNW_BAD_ARGS;
  NNW_TRY(nnw_check_tensor(p.x, x_bytes, arena_bytes, 0, 0));
  NNW_TRY(nnw_check_tensor(p.y, y_bytes, arena_bytes, 0, 0));
  NNW_TRY(nnw_check_typed(p.idx, count, p.dtype, arena_bytes, 0));
  NNW_TRY(nnw_check_apart(p.x, x_bytes, p.y, y_bytes, 0));
  return nnw_check_apart(p.idx, count * (uint64_t)nnw_dtype_size(p.dtype), p.y, y_bytes, 0);
}

void nnw_run_gather_elements(const int32_t *v, uint8_t *arena) {
  struct nnw_gather_elements p;
  decode(v, &p);
  const uint8_t *x = arena + p.x, *idx = arena + p.idx;
  uint8_t *y = arena + p.y;
  size_t es = (size_t)p.esize, k = 0;
  int32_t i[MAX_RANK];
  for (i[0] = 0; i[0] < p.d[0]; i[0]++)
    for (i[1] = 0; i[1] < p.d[1]; i[1]++)
      for (i[2] = 0; i[2] < p.d[2]; i[2]++)
        for (i[3] = 0; i[3] < p.d[3]; i[3]++)
          for (i[4] = 0; i[4] < p.d[4]; i[4]++)
            for (i[5] = 0; i[5] < p.d[5]; i[5]++, k++) {
              int64_t j = index_at(idx, p.dtype, k, p.axis_dim);
              if (j < 0) {
                nnw_run_fail(NNW_BAD_INDEX);
                return;
              }
              size_t off = 0;
              for (int a = 0; a < MAX_RANK; a++)
                off += (size_t)(a == p.axis ? j : i[a]) * (size_t)p.s[a];
              memcpy(y + k * es, x + off * es, es);
            }
}
