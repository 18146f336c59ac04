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
 * Only the caller's instance allocates (wasi-libc's dlmalloc has no lock in this build). */
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
    int32_t start = t * pool.tile, count = pool.range - start < pool.tile ? pool.range - start : pool.tile;
    pool.fn(pool.ctx, start, count, worker);
    pool.ran[worker]++;
  }
}

static void wait_while(int32_t *p, int32_t v) {
  while (LOAD(p) == v) __builtin_wasm_memory_atomic_wait32(p, v, -1);
}
static void wake(int32_t *p, uint32_t n) { __builtin_wasm_memory_atomic_notify(p, n); }
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
    run_tiles(w);
    if (ADD(&pool.pending, -1) == 0) wake(&pool.pending, 1);
  }
  ADD(&pool.ready, -1);
  return 0;
#else
  (void)w;
  return -1;
#endif
}

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
    for (int32_t p; (p = LOAD(&pool.pending)) != 0;) __builtin_wasm_memory_atomic_wait32(&pool.pending, p, -1);
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
