/* gather_axes: y[i0, i1, ...] = x[t0[i0] + t1[i1] + ...], one int32 offset table per output axis
 * (-1 = the pad value). The plan compiler builds the tables from Slice, Expand, Tile, Split, Pad,
 * nearest Resize, DepthToSpace and SpaceToDepth, so one kernel moves them all; the tables are
 * data in the arena, so their bounds are checked at run time (a few hundred entries per run). */
#include "internal.h"

#define MAX_RANK 6

struct nnw_gather_axes {
  int32_t x, y, table, value, esize, x_count, rank;
  int32_t d[MAX_RANK];   /* left-padded with 1 */
};

static void decode(const int32_t *v, struct nnw_gather_axes *p) {
  p->x = v[NNW_GATHER_AXES_X];
  p->y = v[NNW_GATHER_AXES_Y];
  p->table = v[NNW_GATHER_AXES_TABLE];
  p->value = v[NNW_GATHER_AXES_VALUE];
  p->esize = v[NNW_GATHER_AXES_ESIZE];
  p->x_count = v[NNW_GATHER_AXES_X_COUNT];
  p->rank = v[NNW_GATHER_AXES_RANK];
  int32_t rank = p->rank < 0 ? 0 : p->rank > MAX_RANK ? MAX_RANK : p->rank;
  for (int i = 0; i < MAX_RANK; i++) {
    int k = i - (MAX_RANK - rank);
    p->d[i] = k < 0 ? 1 : v[NNW_GATHER_AXES_D0 + k];
  }
}

int nnw_validate_gather_axes(const int32_t *v, uint32_t arena_bytes) {
  struct nnw_gather_axes p;
  decode(v, &p);
  if (p.rank < 1 || p.rank > MAX_RANK || p.x_count <= 0) return NNW_BAD_ARGS;
  if (p.esize != 1 && p.esize != 2 && p.esize != 4 && p.esize != 8) return NNW_BAD_ARGS;
  NNW_TRY(nnw_check_positive(p.d, MAX_RANK));
  uint64_t count = 1, entries = 0, es = (uint64_t)p.esize;
  for (int i = 0; i < MAX_RANK; i++) {
    count = nnw_mul(count, (uint64_t)p.d[i]);
    if (i >= MAX_RANK - p.rank) entries = nnw_add(entries, (uint64_t)p.d[i]);   /* padding has no table */
  }
  if (p.x % p.esize || p.y % p.esize || (p.value >= 0 && p.value % p.esize)) return NNW_BAD_ARGS;
  uint64_t x_bytes = (uint64_t)p.x_count * es, y_bytes = nnw_mul(count, es);
  NNW_TRY(nnw_check_tensor(p.x, x_bytes, arena_bytes, 0, 0));
  NNW_TRY(nnw_check_tensor(p.y, y_bytes, arena_bytes, 0, 0));
  NNW_TRY(nnw_check_typed(p.table, entries, NNW_I32, arena_bytes, 0));
  NNW_TRY(nnw_check_tensor(p.value, es, arena_bytes, 1, 0));
  NNW_TRY(nnw_check_apart(p.x, x_bytes, p.y, y_bytes, 0));
  NNW_TRY(nnw_check_apart(p.table, entries * 4, p.y, y_bytes, 0));
  return nnw_check_apart(p.value, es, p.y, y_bytes, 0);
}

/* The largest offset any output element reads, or -1 when a table holds an entry below -1 or pads
 * without a value. */
static int64_t reach(const int32_t *const t[MAX_RANK], const int32_t *d, int has_value) {
  int64_t sum = 0;
  for (int i = 0; i < MAX_RANK; i++) {
    int32_t hi = 0;
    for (int32_t j = 0; j < d[i]; j++) {
      if (t[i][j] < -1 || (t[i][j] == -1 && !has_value)) return -1;
      if (t[i][j] > hi) hi = t[i][j];
    }
    sum += hi;
  }
  return sum;
}

/* The last axis's table as [pads, a contiguous run of x, pads] when it has that shape (Pad, Slice,
 * Split: rows are a memcpy between two fills); *lo = *hi = -1 when it has not. */
static void contiguous_run(const int32_t *t, int32_t n, int32_t *lo, int32_t *hi) {
  int32_t a = 0, b = n;
  while (a < n && t[a] == -1) a++;
  while (b > a && t[b - 1] == -1) b--;
  *lo = *hi = -1;
  if (a == b) return;
  for (int32_t g = a + 1; g < b; g++)
    if (t[g] != t[a] + (g - a)) return;
  *lo = a;
  *hi = b;
}

#define GATHER_AXES(T)                                                                          \
  static void gather_axes_##T(const T *x, T *y, const int32_t *const t[MAX_RANK], const int32_t *d, \
                              const T *value) {                                                 \
    int32_t lo, hi;                                                                             \
    contiguous_run(t[5], d[5], &lo, &hi);                                                       \
    T pad = 0;                                                                                  \
    if (value) memcpy(&pad, value, sizeof pad);                                                 \
    for (int32_t a = 0; a < d[0]; a++)                                                          \
      for (int32_t b = 0; b < d[1]; b++)                                                        \
        for (int32_t c = 0; c < d[2]; c++)                                                      \
          for (int32_t e = 0; e < d[3]; e++)                                                    \
            for (int32_t f = 0; f < d[4]; f++, y += d[5]) {                                     \
              int32_t o[5] = {t[0][a], t[1][b], t[2][c], t[3][e], t[4][f]};                     \
              if ((o[0] | o[1] | o[2] | o[3] | o[4]) < 0) {   /* a padded row */              \
                for (int32_t g = 0; g < d[5]; g++) y[g] = pad;                                  \
                continue;                                                                       \
              }                                                                                 \
              const T *row = x + (size_t)o[0] + (size_t)o[1] + (size_t)o[2] + (size_t)o[3] + (size_t)o[4]; \
              if (lo >= 0) {                                                                    \
                for (int32_t g = 0; g < lo; g++) y[g] = pad;                                    \
                memcpy(y + lo, row + t[5][lo], (size_t)(hi - lo) * sizeof(T));                  \
                for (int32_t g = hi; g < d[5]; g++) y[g] = pad;                                 \
              } else {                                                                          \
                for (int32_t g = 0; g < d[5]; g++) y[g] = t[5][g] < 0 ? pad : row[t[5][g]];     \
              }                                                                                 \
            }                                                                                   \
  }
GATHER_AXES(uint8_t)
GATHER_AXES(uint16_t)
GATHER_AXES(uint32_t)
GATHER_AXES(uint64_t)

void nnw_run_gather_axes(const int32_t *v, uint8_t *arena) {
  struct nnw_gather_axes p;
  decode(v, &p);
  static const int32_t zero = 0;   /* the table of a padding axis */
  const int32_t *t[MAX_RANK];
  const int32_t *at = (const int32_t *)(const void *)(arena + p.table);
  for (int i = 0; i < MAX_RANK; i++) {
    if (i < MAX_RANK - p.rank) {
      t[i] = &zero;
    } else {
      t[i] = at;
      at += p.d[i];
    }
  }
  int64_t last = reach(t, p.d, p.value >= 0);
  if (last < 0 || last >= p.x_count) {
    nnw_run_fail(NNW_BAD_INDEX);
    return;
  }
  const void *x = arena + p.x, *value = p.value >= 0 ? arena + p.value : NULL;
  void *y = arena + p.y;
  switch (p.esize) {
    case 1: gather_axes_uint8_t(x, y, t, p.d, value); break;
    case 2: gather_axes_uint16_t(x, y, t, p.d, value); break;
    case 4: gather_axes_uint32_t(x, y, t, p.d, value); break;
    default: gather_axes_uint64_t(x, y, t, p.d, value); break;
  }
}
