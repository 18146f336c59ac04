/* binary: y = a OP b (add, sub, mul, div, pow, max, min, prelu, fmod) with NumPy broadcasting over up to 6 dims, given as
 * element strides of a and b (0 where broadcast); y is contiguous, d0 outermost.
 * Dims are first merged wherever both operands stay linear across them (and size-1 dims
 * dropped), so a same-shape op becomes one row, a bias-like add [N,C,H,W] + [C,1,1] becomes
 * rows of H*W with a scalar b, and only truly strided operands fall back to scalar loops. */
#include <math.h>

#include "bcast.h"
#include "internal.h"
#include "simd.h"
#include "threads/split.h"

#if defined(__GNUC__)
#define NNW_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define NNW_ALWAYS_INLINE inline
#endif

enum { ADD, SUB, MUL, DIV, POW, MAX, MIN, PRELU, FMOD, KINDS };

/* bcast.h reads `rank d0..d5 as0..as5 bs0..bs5` from the rank argument on */
typedef char binary_layout_is_bcast_h[NNW_BINARY_D0 == NNW_BINARY_RANK + 1 &&
                                      NNW_BINARY_AS0 == NNW_BINARY_D0 + NNW_BCAST_MAX_RANK &&
                                      NNW_BINARY_BS0 == NNW_BINARY_AS0 + NNW_BCAST_MAX_RANK ? 1 : -1];

int nnw_validate_binary(const int32_t *args, uint32_t arena_bytes) {
  int32_t kind = args[NNW_BINARY_KIND], a = args[NNW_BINARY_A], b = args[NNW_BINARY_B], y = args[NNW_BINARY_Y];
  if (kind < 0 || kind >= KINDS) return NNW_BAD_ARGS;
  uint64_t count, ext[2]; /* elements of y; elements a and b span */
  NNW_TRY(nnw_bcast_extents(args + NNW_BINARY_RANK, 2, &count, ext));
  NNW_TRY(nnw_check_tensor(a, nnw_mul(ext[0], 4), arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(b, nnw_mul(ext[1], 4), arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(y, nnw_mul(count, 4), arena_bytes, 0, 1));
  NNW_TRY(nnw_check_apart(a, nnw_mul(ext[0], 4), y, nnw_mul(count, 4), 1));
  NNW_TRY(nnw_check_apart(b, nnw_mul(ext[1], 4), y, nnw_mul(count, 4), 1));
  return NNW_OK;
}

static inline v4 op4(int kind, v4 x, v4 y) {
  switch (kind) {
    case ADD: return v4_add(x, y);
    case SUB: return v4_sub(x, y);
    case MUL: return v4_mul(x, y);
    case DIV: return v4_div(x, y);
    default: return v4_select_nonneg(x, x, v4_mul(x, y)); /* PRELU */
  }
}

/* Max and Min propagate a NaN in either operand (numpy, onnxruntime) */
static inline int either_nan(float x, float y) { return x != x || y != y; }

static inline float op1(int kind, float x, float y) {
  switch (kind) {
    case ADD: return x + y;
    case SUB: return x - y;
    case MUL: return x * y;
    case DIV: return x / y;
    case POW: return powf(x, y);
    case MAX: return either_nan(x, y) ? x + y : x < y ? y : x;
    case MIN: return either_nan(x, y) ? x + y : y < x ? y : x;
    case PRELU: return x < 0 ? x * y : x;
    default: return fmodf(x, y);
  }
}

/* one row of len outputs; as/bs are the row's element strides; kind a constant after inlining */
static NNW_ALWAYS_INLINE void row_k(int kind, const float *a, ptrdiff_t as, const float *b,
                                    ptrdiff_t bs, float *y, int32_t len) {
  int32_t i = 0;
  if (as == 1 && bs == 1) {
    for (; i + 4 <= len; i += 4) v4_store(y + i, op4(kind, v4_load(a + i), v4_load(b + i)));
  } else if (as == 1 && bs == 0) {
    v4 bv = v4_load1(b);
    for (; i + 4 <= len; i += 4) v4_store(y + i, op4(kind, v4_load(a + i), bv));
  } else if (as == 0 && bs == 1) {
    v4 av = v4_load1(a);
    for (; i + 4 <= len; i += 4) v4_store(y + i, op4(kind, av, v4_load(b + i)));
  }
  for (; i < len; i++) y[i] = op1(kind, a[i * as], b[i * bs]);
}

/* A loop per kind: with the switch inside the loop, Cranelift (wasmtime) branched through a jump
 * table for every vector (Add 2x V8's time); clang had not unswitched it. */
static void row(int kind, const float *a, ptrdiff_t as, const float *b, ptrdiff_t bs, float *y,
                int32_t len) {
  switch (kind) {
    case ADD: row_k(ADD, a, as, b, bs, y, len); break;
    case SUB: row_k(SUB, a, as, b, bs, y, len); break;
    case MUL: row_k(MUL, a, as, b, bs, y, len); break;
    case DIV: row_k(DIV, a, as, b, bs, y, len); break;
    case PRELU: row_k(PRELU, a, as, b, bs, y, len); break;
    default: /* POW, MAX, MIN, FMOD: libm or NaN-aware, plain loops */
      for (int32_t i = 0; i < len; i++) y[i] = op1(kind, a[i * as], b[i * bs]);
      break;
  }
}

/* Threads (threads/split.h): rows of the broadcast split in tiles (each tile seeks its first row),
 * or a single long row in chunks of BIN_CHUNK elements (a multiple of 4: the vector loop meets the
 * same elements); every element is one operation whoever computes it: N threads give the bits of one. */
#define BIN_CHUNK 4096

struct bin_job {
  int32_t kind;
  const struct nnw_bcast *bc;
  const float *a, *b;
  float *y;
};

static void bin_rows(void *ctx, int32_t start, int32_t count, int32_t worker) {
  const struct bin_job *j = ctx;
  struct nnw_bcast bc = *j->bc;
  (void)worker;
  size_t r = (size_t)start;
  for (int i = 1; i < bc.r; i++) {   /* seek row `start` */
    bc.idx[i] = (int32_t)(r % (size_t)bc.d[i]);
    r /= (size_t)bc.d[i];
  }
  float *y = j->y + (size_t)start * (size_t)bc.d[0];
  for (int32_t n = 0; n < count; n++) {
    ptrdiff_t off[2];
    nnw_bcast_row(&bc, off);
    row(j->kind, j->a + off[0], bc.s[0][0], j->b + off[1], bc.s[1][0], y, bc.d[0]);
    y += bc.d[0];
  }
}

static void bin_chunks(void *ctx, int32_t start, int32_t count, int32_t worker) {
  const struct bin_job *j = ctx;
  (void)worker;
  int32_t len = j->bc->d[0], lo = start * BIN_CHUNK, hi = (start + count) * BIN_CHUNK < len ? (start + count) * BIN_CHUNK : len;
  ptrdiff_t as = j->bc->s[0][0], bs = j->bc->s[1][0];
  row(j->kind, j->a + lo * as, as, j->b + lo * bs, bs, j->y + lo, hi - lo);
}

void nnw_run_binary(const int32_t *args, uint8_t *arena) {
  int32_t kind = args[NNW_BINARY_KIND];
  struct nnw_bcast bc;
  nnw_bcast_init(&bc, args + NNW_BINARY_RANK, 2);
  const float *a = nnw_f32_at(arena, args[NNW_BINARY_A]), *b = nnw_f32_at(arena, args[NNW_BINARY_B]);
  float *y = nnw_f32_at(arena, args[NNW_BINARY_Y]);
  uint64_t count = (uint64_t)bc.rows * (uint64_t)bc.d[0];
  if (bc.rows <= INT32_MAX && nnw_split_threads(count, NNW_SPLIT_MIN_ELEMS, 2) > 1) {
    struct bin_job job = {kind, &bc, a, b, y};
    int32_t threads = nnw_pool_threads();
    if (bc.rows >= (size_t)2 * threads) {
      int32_t rows = (int32_t)bc.rows;
      nnw_parallel_for(rows, nnw_split_tile(rows, threads), bin_rows, &job);
      return;
    }
    if (bc.rows == 1) {
      int32_t chunks = (bc.d[0] + BIN_CHUNK - 1) / BIN_CHUNK;
      nnw_parallel_for(chunks, nnw_split_tile(chunks, threads), bin_chunks, &job);
      return;
    }
  }
  for (size_t n = 0; n < bc.rows; n++) {
    ptrdiff_t off[2];
    nnw_bcast_row(&bc, off);
    row(kind, a + off[0], bc.s[0][0], b + off[1], bc.s[1][0], y, bc.d[0]);
    y += bc.d[0];
  }
}
