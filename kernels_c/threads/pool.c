/* The thread pool (pool.h). Built with atomics (the `+threads` flavours: shared memory imported
 * from the host, which runs one instance of kernels.wasm per helper thread on it), the pool's
 * state lives in linear memory and the helpers sleep in memory.atomic.wait32 between jobs:
 *
 *   host, once: p = nnw_pool_prepare(n)  (caller allocates n helper stacks + pack buffers)
 *   each helper thread, its own instance: set its __stack_pointer global to nnw_pool_stack_top(p, w),
 *     then nnw_worker_loop(w) (returns only when the pool stops)
 *   host: waits until nnw_pool_ready() == n (with a timeout: else nnw_pool_stop, 1 thread)
 *         nnw_pool_enable(n)
 *   at the end: nnw_pool_stop() wakes every helper to return, the host joins its threads.
 *
 * A job: the caller writes fn/ctx/range, sets the tile counter to 0 and `pending` to the helper
 * count, bumps `gen` and notifies; everyone (caller included) takes tiles from the counter with
 * an atomic add until none are left; each helper then decrements `pending`, the last one
 * notifies the caller, which waits in wait32 until pending is 0. No allocation, no lock per op.
 * Only the caller's instance allocates (wasi-libc's dlmalloc has no lock in this build).
 *
 * Faults: a helper whose instance traps (out of bounds, unreachable) inside a job returns to its
 * host with the job unfinished. The host's helper wrapper then calls nnw_pool_fault(w) on that
 * instance: it records the fault, takes the pool down to the caller alone (enabled = 0) and, if the
 * helper was counted in the job, releases `pending` for it, so the caller never waits on a helper
 * that will not come. The caller's host reads nnw_pool_faulted() after the run (the outputs are
 * incomplete: it raises) and stops the pool. A trap on the caller's side leaves the job `busy`:
 * its host calls nnw_pool_settle(), which waits for the helpers to finish the job's tiles.
 * A caller that may not block (a browser's main thread: memory.atomic.wait32 traps there) is told
 * so by nnw_pool_caller_spins(1): it then spins on `pending` (helpers still sleep in wait32). */
#include "pool.h"

#include <stdlib.h>

#include "internal.h"
#include "linalg/pack_a.h"

#define POOL_MAX 64
#define STACK_BYTES (256 * 1024)

#if defined(__wasm__) && defined(__wasm_atomics__)
#define NNW_POOL_ATOMICS 1
#endif

static struct {
  int32_t gen;      /* bumped per job and at stop; helpers wait32 on it */
  int32_t pending;  /* helpers still in the current job; the caller waits32 on it */
  int32_t next;     /* the next tile to take */
  int32_t ready;    /* helpers that entered nnw_worker_loop */
  int32_t enabled;  /* helpers that take part in jobs (0: serial) */
  int32_t stop;
  int32_t busy;     /* a job is running (a nested parallel_for runs serially) */
  int32_t prepared; /* helpers whose stacks and buffers exist */
  int32_t jobs;     /* jobs run on more than one thread (tests read it) */
  int32_t fault;    /* the first helper that trapped (nnw_pool_fault), 0 if none */
  int32_t spin;     /* the caller spins instead of wait32 (nnw_pool_caller_spins) */
  int32_t trap_at;  /* tests: worker + 1 whose next tile traps (nnw_pool_test_trap), 0 = none */
  int32_t in_job[POOL_MAX + 1]; /* helper w is inside a job it is counted in (`pending`) */
  int32_t ran[POOL_MAX + 1]; /* tiles each worker ran in jobs (tests read it) */
  nnw_task_fn fn;
  void *ctx;
  int32_t range, tile, tiles;
  uint8_t *stacks;
  float *packs;
} pool;

#define LOAD(p) __atomic_load_n(p, __ATOMIC_SEQ_CST)
#define STORE(p, v) __atomic_store_n(p, v, __ATOMIC_SEQ_CST)
#define ADD(p, v) __atomic_add_fetch(p, v, __ATOMIC_SEQ_CST)

#ifdef NNW_POOL_ATOMICS
static void run_tiles(int32_t worker) {
  for (;;) {
    int32_t t = ADD(&pool.next, 1) - 1;
    if (t >= pool.tiles) return;
    if (pool.trap_at == worker + 1) {
      pool.trap_at = 0;
      __builtin_trap();
    }
    int32_t start = t * pool.tile, count = pool.range - start < pool.tile ? pool.range - start : pool.tile;
    pool.fn(pool.ctx, start, count, worker);
    pool.ran[worker]++;
  }
}

#ifndef NNW_POOL_SPIN
#define NNW_POOL_SPIN (1 << 16)
#endif
static void wait_while(int32_t *p, int32_t v) {
  for (int32_t i = 0; i < NNW_POOL_SPIN && LOAD(p) == v; i++) {
  }
  while (LOAD(p) == v) __builtin_wasm_memory_atomic_wait32(p, v, -1);
}
static void wake(int32_t *p, uint32_t n) { __builtin_wasm_memory_atomic_notify(p, n); }

/* the caller's wait until every helper left the job: wait32, or a spin where it may not block */
static void wait_pending(void) {
  for (int32_t i = 0; i < NNW_POOL_SPIN && LOAD(&pool.pending) != 0; i++) {
  }
  for (int32_t p; (p = LOAD(&pool.pending)) != 0;) {
    if (!LOAD(&pool.spin)) __builtin_wasm_memory_atomic_wait32(&pool.pending, p, -1);
  }
}
#endif

NNW_EXPORT int32_t nnw_pool_threads(void) { return 1 + LOAD(&pool.enabled); }

float *nnw_pool_pack_buf(int32_t worker) {
  return worker == 0 ? nnw_pack_a_buf : pool.packs + (size_t)(worker - 1) * NNW_PACK_A_FLOATS;
}

/* helpers' stacks and pack buffers for n helpers; 0 on success, -1 without atomics or memory */
NNW_EXPORT int32_t nnw_pool_prepare(int32_t n) {
#ifdef NNW_POOL_ATOMICS
  if (n < 1 || n > POOL_MAX || pool.prepared != 0) return -1;
  pool.stacks = malloc((size_t)n * STACK_BYTES);
  pool.packs = aligned_alloc(16, (size_t)n * NNW_PACK_A_FLOATS * 4);
  if (pool.stacks == NULL || pool.packs == NULL) {
    free(pool.stacks);
    free(pool.packs);
    pool.stacks = NULL;
    pool.packs = NULL;
    return -1;
  }
  pool.prepared = n;
  for (int32_t w = 0; w <= POOL_MAX; w++) STORE(&pool.in_job[w], 0);
  STORE(&pool.fault, 0);
  STORE(&pool.stop, 0);
  STORE(&pool.ready, 0);
  return 0;
#else
  (void)n;
  return -1;
#endif
}

/* the value helper w (1..n) sets its instance's __stack_pointer to before it calls anything */
NNW_EXPORT int32_t nnw_pool_stack_top(int32_t w) {
  if (w < 1 || w > pool.prepared) return 0;
  return (int32_t)(uintptr_t)(pool.stacks + (size_t)w * STACK_BYTES);
}

NNW_EXPORT int32_t nnw_pool_jobs(void) { return pool.jobs; }

/* tiles worker w ran in split jobs since the pool started */
NNW_EXPORT int32_t nnw_pool_tiles(int32_t w) { return w >= 0 && w <= POOL_MAX ? pool.ran[w] : -1; }

NNW_EXPORT int32_t nnw_pool_ready(void) { return LOAD(&pool.ready); }

NNW_EXPORT int32_t nnw_pool_enable(int32_t n) {
  if (n < 0 || n > LOAD(&pool.ready)) return -1;
  STORE(&pool.enabled, n);
  return 0;
}

/* helper w's loop: sleeps until a job or the stop, runs tiles, returns when the pool stops */
NNW_EXPORT int32_t nnw_worker_loop(int32_t w) {
#ifdef NNW_POOL_ATOMICS
  if (w < 1 || w > pool.prepared) return -1;
  int32_t seen = 0;
  ADD(&pool.ready, 1);
  for (;;) {
    if (LOAD(&pool.stop)) break;
    wait_while(&pool.gen, seen);
    seen = LOAD(&pool.gen);
    if (LOAD(&pool.stop)) break;
    STORE(&pool.in_job[w], 1);
    run_tiles(w);
    STORE(&pool.in_job[w], 0);
    if (ADD(&pool.pending, -1) == 0) wake(&pool.pending, 1);
  }
  ADD(&pool.ready, -1);
  return 0;
#else
  (void)w;
  return -1;
#endif
}

/* called by helper w's host, on w's own instance, after nnw_worker_loop(w) trapped: records the
 * fault, leaves the caller alone in later jobs, and releases the caller from the job w was in.
 * 0 once recorded, -1 for a bad w. */
NNW_EXPORT int32_t nnw_pool_fault(int32_t w) {
  if (w < 1 || w > pool.prepared) return -1;
  STORE(&pool.enabled, 0);
  int32_t none = 0;
  __atomic_compare_exchange_n(&pool.fault, &none, w, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  ADD(&pool.ready, -1);
#ifdef NNW_POOL_ATOMICS
  if (LOAD(&pool.in_job[w])) {
    STORE(&pool.in_job[w], 0);
    if (ADD(&pool.pending, -1) == 0) wake(&pool.pending, 1);
  }
#endif
  return 0;
}

/* the helper that trapped (1..n), 0 if none since the pool was prepared */
NNW_EXPORT int32_t nnw_pool_faulted(void) { return LOAD(&pool.fault); }

/* after a trap on the caller's side inside a job: waits for the helpers to finish it */
NNW_EXPORT void nnw_pool_settle(void) {
#ifdef NNW_POOL_ATOMICS
  if (pool.busy) {
    wait_pending();
    pool.busy = 0;
  }
#endif
}

/* 1: the caller spins instead of blocking in wait32 (hosts whose calling thread may not block) */
NNW_EXPORT void nnw_pool_caller_spins(int32_t on) { STORE(&pool.spin, on != 0); }

/* tests: worker w's next tile in a split job traps (w = 0: the caller's), -1 disarms */
NNW_EXPORT void nnw_pool_test_trap(int32_t w) { pool.trap_at = w >= 0 && w <= POOL_MAX ? w + 1 : 0; }

/* wakes every helper to return from nnw_worker_loop; the host joins its threads, then may free */
NNW_EXPORT void nnw_pool_stop(void) {
  STORE(&pool.enabled, 0);
  STORE(&pool.stop, 1);
  ADD(&pool.gen, 1);
#ifdef NNW_POOL_ATOMICS
  wake(&pool.gen, 0xffffffffu);
#endif
}

/* after the host joined every helper: frees their stacks and buffers */
NNW_EXPORT void nnw_pool_release(void) {
  free(pool.stacks);
  free(pool.packs);
  pool.stacks = NULL;
  pool.packs = NULL;
  pool.prepared = 0;
  STORE(&pool.fault, 0);
  STORE(&pool.enabled, 0);
}

void nnw_parallel_for(int32_t range, int32_t tile, nnw_task_fn fn, void *ctx) {
  if (range <= 0) return;
  if (tile < 1) tile = 1;
  int32_t tiles = (range - 1) / tile + 1, helpers = LOAD(&pool.enabled);
#ifdef NNW_POOL_ATOMICS
  if (helpers > 0 && tiles > 1 && !pool.busy) {
    pool.busy = 1;
    pool.jobs++;
    pool.fn = fn;
    pool.ctx = ctx;
    pool.range = range;
    pool.tile = tile;
    pool.tiles = tiles;
    STORE(&pool.next, 0);
    STORE(&pool.pending, helpers);
    ADD(&pool.gen, 1);
    wake(&pool.gen, (uint32_t)helpers);
    run_tiles(0);
    wait_pending();
    pool.busy = 0;
    return;
  }
#endif
  (void)helpers;
  for (int32_t t = 0; t < tiles; t++) {
    int32_t start = t * tile;
    fn(ctx, start, range - start < tile ? range - start : tile, 0);
  }
}
