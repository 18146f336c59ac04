/* kv_append_rows (linalg/kv_append_rows.c): exact copies between blocks of more rows than their
 * tensors (rows past t untouched), lengths checked against the tensors' rows and not the blocks'
 * (NNW_BAD_INDEX, y untouched), in place in the past's block (only the new rows and the zeros up
 * to t written; n_b != p refused when the past is grown; a shared buffer, t == p, keeps its other
 * rows), and the validator on hostile arguments. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "tests.h"

enum { POISON = 0x55 };

static int bytes_are(const void *p, size_t n, uint8_t v) {
  for (size_t i = 0; i < n; i++)
    if (((const uint8_t *)p)[i] != v) return 0;
  return 1;
}

/* past [batch, heads, p_rows, d] (p rows used), x strided as packed QKV, y [batch, heads, t_rows, d] */
static void copy_case(int batch, int heads, int p, int p_rows, int s, int d, int t, int t_rows, int with_lens,
                      int order) {
  int x_hs = d, x_rs = heads * d + 3, x_bs = s * x_rs + 5;
  size_t pn = (size_t)batch * heads * p_rows * d, xn = (size_t)(batch - 1) * x_bs + (size_t)(s - 1) * x_rs + (size_t)heads * d;
  size_t yn = (size_t)batch * heads * t_rows * d;
  uint64_t bytes[4] = {4 * (pn ? pn : 1), 4 * xn, 4 * (uint64_t)batch, 4 * yn};
  int32_t off[4];
  uint32_t ab = layout(bytes, 4, order, off);
  uint8_t *arena = arena_new(ab);
  float *past = at(arena, off[0]), *x = at(arena, off[1]), *y = at(arena, off[3]);
  fill_random(past, pn, -1, 1);
  fill_random(x, xn, -1, 1);
  memset(y, POISON, 4 * yn);
  int32_t lens[8];
  for (int b = 0; b < batch; b++) lens[b] = with_lens ? (int32_t)(rng_u32() % (unsigned)(p + 1)) : p;
  if (with_lens) lens[0] = p; /* one row appended at the end, one (likely) before it */
  memcpy(arena + off[2], lens, 4 * (size_t)batch);
  int32_t args[NNW_KV_APPEND_ROWS_NARGS] = {p ? off[0] : -1, off[1], with_lens ? off[2] : -1, off[3], batch, heads,
                                            p, t, p_rows, t_rows, s, d, x_bs, x_rs, x_hs, 0};
  int status = op_status(NNW_OP_KV_APPEND_ROWS, args, NNW_KV_APPEND_ROWS_NARGS, arena, ab);
  int ok = status == NNW_OK;
  for (int b = 0; ok && b < batch; b++)
    for (int h = 0; h < heads; h++) {
      const float *row0 = y + ((size_t)b * heads + h) * t_rows * d;
      for (int j = 0; j < t; j++)
        for (int c = 0; c < d; c++) {
          float want = j < lens[b] ? past[(((size_t)b * heads + h) * p_rows + j) * d + c]
                       : j < lens[b] + s ? x[(size_t)b * x_bs + (size_t)(j - lens[b]) * x_rs + h * x_hs + c]
                                         : 0.0f;
          if (memcmp(&want, &row0[(size_t)j * d + c], 4)) ok = 0;
        }
      ok &= bytes_are(row0 + (size_t)t * d, 4 * (size_t)(t_rows - t) * d, POISON);
    }
  expect(ok, "kv_append_rows b%d h%d p%d/%d s%d d%d t%d/%d lens%d: status %d or wrong bytes", batch, heads, p, p_rows,
         s, d, t, t_rows, with_lens, status);
  { /* a length past the past's rows (within its block when p < p_rows): refused, y untouched */
    lens[batch - 1] = p + 1;
    memcpy(arena + off[2], lens, 4 * (size_t)batch);
    args[NNW_KV_APPEND_ROWS_LENS] = off[2];
    memset(y, POISON, 4 * yn);
    status = op_status(NNW_OP_KV_APPEND_ROWS, args, NNW_KV_APPEND_ROWS_NARGS, arena, ab);
    expect(status == NNW_BAD_INDEX && bytes_are(y, 4 * yn, POISON), "kv_append_rows length %d of %d rows (block %d): "
           "status %d", p + 1, p, p_rows, status);
  }
  free(arena);
}

/* In place: y is past's block (rows capacity rows a head). grown (t = p + s + extra): only rows p..t
 * are written, the new ones then zeros, every other byte stays; a length other than p is refused
 * with nothing written. shared (t == p): the new rows at each n_b <= p - s, nothing else written. */
static void in_place_case(int batch, int heads, int p, int s, int d, int rows, int grown, int extra) {
  int t = grown ? p + s + extra : p;
  size_t yn = (size_t)batch * heads * rows * d, xn = (size_t)batch * s * heads * d;
  int32_t y_off = 0, x_off = (int32_t)(4 * yn), l_off = x_off + (int32_t)(4 * xn);
  uint32_t ab = (uint32_t)l_off + 4 * (uint32_t)batch;
  uint8_t *arena = arena_new(ab);
  float *y = at(arena, y_off), *x = at(arena, x_off);
  fill_random(y, yn, -1, 1);
  fill_random(x, xn, -1, 1);
  float *before = malloc(4 * yn);
  memcpy(before, y, 4 * yn);
  int32_t lens[4];
  for (int b = 0; b < batch; b++) lens[b] = grown ? p : (int32_t)(rng_u32() % (unsigned)(p - s + 1));
  memcpy(arena + l_off, lens, 4 * (size_t)batch);
  int32_t args[NNW_KV_APPEND_ROWS_NARGS] = {y_off, x_off, l_off, y_off, batch, heads, p, t, rows, rows, s, d,
                                            s * heads * d, heads * d, d, 0};
  int status = op_status(NNW_OP_KV_APPEND_ROWS, args, NNW_KV_APPEND_ROWS_NARGS, arena, ab);
  int ok = status == NNW_OK;
  for (int b = 0; ok && b < batch; b++)
    for (int h = 0; h < heads; h++)
      for (int j = 0; j < rows; j++)
        for (int c = 0; c < d; c++) {
          size_t i = (((size_t)b * heads + h) * rows + j) * d + c;
          float want = j >= lens[b] && j < lens[b] + s
                           ? x[(size_t)b * s * heads * d + (size_t)(j - lens[b]) * heads * d + h * d + c]
                           : grown && j >= lens[b] + s && j < t ? 0.0f : before[i];
          if (memcmp(&want, &y[i], 4)) ok = 0;
        }
  expect(ok, "kv_append_rows in place b%d h%d p%d s%d d%d rows%d t%d: status %d or wrong bytes", batch, heads, p, s,
         d, rows, t, status);
  if (grown) { /* a row that would go before the past's end: refused, nothing written */
    memcpy(before, y, 4 * yn);
    lens[batch - 1] = p - 1;
    memcpy(arena + l_off, lens, 4 * (size_t)batch);
    status = op_status(NNW_OP_KV_APPEND_ROWS, args, NNW_KV_APPEND_ROWS_NARGS, arena, ab);
    expect(status == NNW_BAD_INDEX && !memcmp(before, y, 4 * yn), "kv_append_rows in place, n_b %d of past %d: "
           "status %d", p - 1, p, status);
  }
  free(before);
  free(arena);
}

static void hostile(void) {
  /* batch 1, heads 2, p 3 of 4 rows, t 5 of 6 rows, s 2, d 4: past 128 B, x 64 B, lens 4 B, y 192 B */
  enum { P = 0, X = 128, L = 192, Y = 208, ARENA = 400 };
  const int32_t kv[NNW_KV_APPEND_ROWS_NARGS] = {P, X, L, Y, 1, 2, 3, 5, 4, 6, 2, 4, 16, 8, 4, 0};
  static const struct arg_patch rows[] = {
      {"valid", -1, 0, NNW_OK},
      {"no lens", NNW_KV_APPEND_ROWS_LENS, -1, NNW_OK},
      {"p past p_rows", NNW_KV_APPEND_ROWS_P, 5, NNW_BAD_ARGS},
      {"t past t_rows", NNW_KV_APPEND_ROWS_T, 7, NNW_BAD_ARGS},
      {"s past t", NNW_KV_APPEND_ROWS_S, 6, NNW_BAD_ARGS},
      {"p negative", NNW_KV_APPEND_ROWS_P, -1, NNW_BAD_ARGS},
      {"p 0 with a past", NNW_KV_APPEND_ROWS_P, 0, NNW_BAD_ARGS},
      {"no past with p 3", NNW_KV_APPEND_ROWS_PAST, -1, NNW_BAD_ARGS},
      {"d 0", NNW_KV_APPEND_ROWS_D, 0, NNW_BAD_ARGS},
      {"x row stride negative", NNW_KV_APPEND_ROWS_X_RS, -8, NNW_BAD_ARGS},
      {"x head stride past the arena", NNW_KV_APPEND_ROWS_X_HS, 1 << 20, NNW_OUT_OF_BOUNDS},
      {"p_rows past the arena", NNW_KV_APPEND_ROWS_P_ROWS, 1 << 20, NNW_OUT_OF_BOUNDS},
      {"t_rows huge", NNW_KV_APPEND_ROWS_T_ROWS, INT32_MAX, NNW_OUT_OF_BOUNDS},
      {"y over x", NNW_KV_APPEND_ROWS_Y, X, NNW_BAD_ARGS},
      {"y over lens", NNW_KV_APPEND_ROWS_Y, L - 16, NNW_BAD_ARGS},
      {"y over past, other rows", NNW_KV_APPEND_ROWS_Y, P, NNW_BAD_ARGS}, /* same offset, 4 rows vs 6 */
      {"lens misaligned", NNW_KV_APPEND_ROWS_LENS, L + 1, NNW_BAD_ARGS},
  };
  load_patches(NNW_OP_KV_APPEND_ROWS, kv, NNW_KV_APPEND_ROWS_NARGS, ARENA, rows, sizeof rows / sizeof rows[0]);
  /* the same block: valid in place with t >= p, refused when the present would be shorter */
  int32_t same[NNW_KV_APPEND_ROWS_NARGS];
  memcpy(same, kv, sizeof same);
  same[NNW_KV_APPEND_ROWS_Y] = P;
  same[NNW_KV_APPEND_ROWS_T_ROWS] = 4;
  same[NNW_KV_APPEND_ROWS_T] = 4;
  load_patched("in place, t 4 of 4 rows", NNW_OP_KV_APPEND_ROWS, same, NNW_KV_APPEND_ROWS_NARGS, -1, 0, ARENA, NNW_OK);
  same[NNW_KV_APPEND_ROWS_S] = 1;
  load_patched("in place, t 2 < p 3", NNW_OP_KV_APPEND_ROWS, same, NNW_KV_APPEND_ROWS_NARGS, NNW_KV_APPEND_ROWS_T, 2,
               ARENA, NNW_BAD_ARGS);
}

void test_kv_append_rows(void) {
  for (int order = 0; order < 2; order++) {
    copy_case(2, 2, 5, 5, 1, 16, 6, 6, 1, order);   /* kv_append's layout */
    copy_case(2, 2, 5, 64, 1, 16, 6, 128, 1, order); /* blocks of a capacity */
    copy_case(1, 4, 7, 9, 3, 8, 12, 12, 0, order);
    copy_case(2, 1, 9, 16, 3, 5, 13, 20, 1, order); /* t past n_b + s: zeros to t, not to t_rows */
    copy_case(1, 2, 0, 0, 4, 4, 4, 8, 0, order);    /* no past */
  }
  in_place_case(2, 2, 5, 1, 8, 64, 1, 0);
  in_place_case(1, 3, 9, 3, 4, 16, 1, 2);
  in_place_case(2, 2, 7, 1, 8, 7, 0, 0); /* a shared buffer: t == p == rows */
  in_place_case(1, 3, 9, 3, 4, 12, 0, 0);
  hostile();
}
