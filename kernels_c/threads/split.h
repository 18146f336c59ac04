/* How kernels split their work over the thread pool (pool.h; docs/architecture.md, "The thread
 * pool"). Every split keeps each output's whole computation in one tile, computed by the same code
 * in the same order as on one thread: N threads give the bits of one.
 *
 * The cost threshold: a job wakes the helpers (notify), they take tiles, the caller waits for the
 * last one (wait32). Measured with nnw_pool_bench_jobs (split.c) in CPython/wasmtime, 2 threads,
 * 2026-11-27 on this 2-core machine shared by other work: 55-58 us an empty job at load average 9,
 * 88 us at 10.6 (test_threads.py's test_wakeup_cost prints it; a futex wake on an idle core is a
 * few us: the figure is mostly waiting for a core). An op splits when its work is worth at least
 * about 2 such loaded wake-ups: NNW_SPLIT_MIN_FLOPS multiply-adds (2^19 at ~4 GFLOP/s a thread
 * take ~130 us), NNW_SPLIT_MIN_ELEMS outputs of an elementwise loop (2^18 adds, ~130 us).
 */
#ifndef NNW_SPLIT_H
#define NNW_SPLIT_H
#include <stdint.h>

#include <stddef.h>

#include "threads/pool.h"

struct nnw_epilogue;
/* nnw_gemm_nn (internal.h) split by blocks of four rows when it pays (gemm_split.c) */
void nnw_gemm_nn_split(int32_t m, int32_t n, int32_t k, const float *a, ptrdiff_t a_rs, ptrdiff_t a_cs, const float *b,
                       ptrdiff_t ldb, float *y, ptrdiff_t ldy, const struct nnw_epilogue *ep);

#define NNW_SPLIT_MIN_FLOPS ((uint64_t)1 << 19) /* multiply-adds (GEMM, conv, attention) */
#define NNW_SPLIT_MIN_ELEMS ((uint64_t)1 << 18) /* outputs of a memory-bound loop (~0.5 ns each) */

/* tests: nonzero makes every op split whatever its size (nnw_pool_test_split_all, split.c), so that
 * the tiny models of the test zoos run every split kernel's tiles (the bits must not change) */
extern int32_t nnw_split_all;

/* the threads a job of `work` units would use (1: stay on the caller) over `range` items */
static inline int32_t nnw_split_threads(uint64_t work, uint64_t min_work, int32_t range) {
  int32_t threads = nnw_pool_threads();
  return threads > 1 && range > 1 && (work >= min_work || nnw_split_all) ? threads : 1;
}

/* two tiles a thread (the last tile is often short: a second round evens the load) */
static inline int32_t nnw_split_tile(int32_t range, int32_t threads) {
  return (range + 2 * threads - 1) / (2 * threads);
}

/* a kernel over independent rows (norm.c's slabs, skip_norm.c's rows): fn(p, arena, r0, r1)
 * computes rows [r0, r1) whole, in the order one thread does; nnw_split_rows gives it tiles of
 * rows when `work` reaches min_work (nnw_split_threads), else all of them on the caller */
typedef void (*nnw_rows_fn)(const void *p, uint8_t *arena, int32_t r0, int32_t r1);
void nnw_split_rows(int32_t rows, uint64_t work, uint64_t min_work, nnw_rows_fn fn, const void *p, uint8_t *arena);
#endif
