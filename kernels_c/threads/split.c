/* split.h's row split (nnw_split_rows), and the measurement behind its threshold: `jobs` empty jobs
 * of `tiles` tiles each through nnw_parallel_for, for a host to time (tests/test_threads.py,
 * bench/speed/bench_threads.py): the cost of one wake-up and join. Returns the jobs that ran split. */
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

struct rows_job {
  nnw_rows_fn fn;
  const void *p;
  uint8_t *arena;
};

static void rows_task(void *ctx, int32_t start, int32_t count, int32_t worker) {
  const struct rows_job *j = ctx;
  (void)worker;
  j->fn(j->p, j->arena, start, start + count);
}

void nnw_split_rows(int32_t rows, uint64_t work, uint64_t min_work, nnw_rows_fn fn, const void *p, uint8_t *arena) {
  int32_t threads = nnw_split_threads(work, min_work, rows);
  struct rows_job job = {fn, p, arena};
  if (threads > 1) {
    nnw_parallel_for(rows, nnw_split_tile(rows, threads), rows_task, &job);
    return;
  }
  fn(p, arena, 0, rows);
}

int32_t nnw_split_all = 0;

/* tests: 1 makes every op whose kernel splits do so whatever its size (split.h's threshold off), 0
 * restores the threshold; returns the previous setting */
NNW_EXPORT int32_t nnw_pool_test_split_all(int32_t on) {
  int32_t was = nnw_split_all;
  nnw_split_all = on != 0;
  return was;
}
