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
