/* A pthreadpool-like pool inside kernels.wasm (pool.c; docs/architecture.md, "The thread pool").
 * nnw_parallel_for(range, tile, fn, ctx) calls fn(ctx, start, count, worker) for every tile
 * [start, start + count) of [0, range), tile by tile, on the calling thread (worker 0) and the
 * pool's helpers (workers 1..n). Which worker takes a tile varies from run to run: a kernel keeps
 * its bits by letting each tile compute whole outputs in the same order whoever runs it. Without
 * a pool (builds without atomics, no helpers started, a nested call) every tile runs on the caller
 * in order. Never allocates: the caller's memory, set up by the host at pool start. */
#ifndef NNW_POOL_H
#define NNW_POOL_H
#include <stdint.h>

typedef void (*nnw_task_fn)(void *ctx, int32_t start, int32_t count, int32_t worker);

void nnw_parallel_for(int32_t range, int32_t tile, nnw_task_fn fn, void *ctx);

/* jobs run split since the pool started (tests) */
int32_t nnw_pool_jobs(void);

/* workers that may run a task (1 + helpers enabled); 1 without a pool */
int32_t nnw_pool_threads(void);

/* worker w's 128 KiB A-packing buffer (pack_a.h): nnw_pack_a_buf for the caller */
float *nnw_pool_pack_buf(int32_t worker);
#endif
