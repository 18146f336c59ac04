/* The measurement behind split.h's threshold: `jobs` empty jobs of `tiles` tiles each through
 * nnw_parallel_for, for a host to time (tests/test_threads.py, bench/speed/bench_threads.py): the
 * cost of one wake-up and join. Returns the jobs that ran split. */
#include "threads/split.h"

#include "internal.h"

static void nothing(void *ctx, int32_t start, int32_t count, int32_t worker) {
  (void)ctx;
  (void)start;
  (void)count;
  (void)worker;
}

NNW_EXPORT int32_t nnw_pool_bench_jobs(int32_t jobs, int32_t tiles) {
  int32_t before = nnw_pool_jobs();
  for (int32_t i = 0; i < jobs; i++) nnw_parallel_for(tiles, 1, nothing, NULL);
  return nnw_pool_jobs() - before;
}

int32_t nnw_split_all = 0;

/* tests: 1 makes every op whose kernel splits do so whatever its size (split.h's threshold off), 0
 * restores the threshold; returns the previous setting */
NNW_EXPORT int32_t nnw_pool_test_split_all(int32_t on) {
  int32_t was = nnw_split_all;
  nnw_split_all = on != 0;
  return was;
}
