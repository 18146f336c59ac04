/* nnwasm kernels: the flat C ABI of kernels.wasm (and of the native test build).
 *
 * A plan is a byte buffer, little-endian int32 words:
 *   word 0  magic NNW_PLAN_MAGIC ("NNWP")
 *   word 1  version NNW_PLAN_VERSION
 *   word 2  arena_bytes      size of the arena the plan addresses (weights + activations + scratch)
 *   word 3  weights_bytes    weights occupy arena[0, weights_bytes)
 *   word 4  weights_offset   where the weights blob starts in the plan buffer (bytes, 16-aligned)
 *   word 5  init_words       op words run once by nnw_plan_load (weight packing)
 *   word 6  run_words        op words run by every nnw_plan_run
 *   word 7  reserved, 0
 *   word 8.. init ops, then run ops; each op is [opcode, n_args, arg0 .. arg(n_args-1)]
 *   then padding, then the weights blob.
 * Opcodes and argument order are those of kernels_c/ops.def (see gen/ops.h).
 * Tensor arguments are byte offsets into the arena, -1 when absent; all f32 tensors are 4-aligned.
 *
 * Ownership: whoever calls nnw_malloc calls nnw_free. The plan buffer and the arena belong
 * to the caller and must outlive every nnw_plan_run on them. Nothing here keeps global state
 * besides the allocator and the last run's failed op, so one module instance can hold many plans
 * (run one at a time: the instance has one thread).
 */
#ifndef NNW_H
#define NNW_H
#include <stddef.h>
#include <stdint.h>

#define NNW_PLAN_MAGIC 0x50574E4Eu /* "NNWP" read as a little-endian word */
#define NNW_PLAN_VERSION 1
#define NNW_PLAN_HEADER_WORDS 8

enum nnw_status {
  NNW_OK = 0,
  NNW_BAD_MAGIC = 1,      /* not a plan */
  NNW_BAD_VERSION = 2,    /* a plan of another format version */
  NNW_TRUNCATED = 3,      /* header or op words run past plan_bytes */
  NNW_BAD_OPCODE = 4,     /* opcode not in ops.def */
  NNW_BAD_ARGS = 5,       /* wrong n_args, or a shape/param out of range */
  NNW_OUT_OF_BOUNDS = 6,  /* a tensor would reach outside the arena */
  NNW_OUT_OF_MEMORY = 7,
  NNW_BAD_INDEX = 8       /* run time: an index read from a tensor (Gather's) is out of range */
};

void *nnw_malloc(size_t bytes);
void nnw_free(void *p);
/* p grown (or moved) to bytes, 16-aligned; NULL if it can't (alloc.c) */
void *nnw_realloc(void *p, size_t bytes);

/* Checks every op of the plan against arena_bytes (shapes, offsets, extents), copies the weights
 * blob into the arena and runs the init ops. Returns a nnw_status; on failure *bad_op (if not
 * NULL) holds the index of the offending op, counted over init then run ops (-1 for the header). */
int nnw_plan_load(const uint8_t *plan, uint32_t plan_bytes, uint8_t *arena, uint32_t arena_bytes,
                  int32_t *bad_op);

/* A plan whose tensors live in several allocated blocks (a session's shared weights blocks and
 * the plan's own arena, py_runtime/nnwasm/wasm/weights.py): its tensor words are offsets from
 * `base`, a pointer at or below every block, and every tensor must lie within one of the
 * n_extents [lo, hi) pairs of `extents` (offsets from base, lo <= hi <= span, at most
 * NNW_MAX_EXTENTS; the host, not the plan, gives them: the blocks it allocated). Extent 0 is the
 * plan's arena: the weights blob is copied to its start. Otherwise as nnw_plan_load with
 * arena = base and arena_bytes = span; nnw_plan_run then takes base. */
#define NNW_MAX_EXTENTS 64
int nnw_plan_load_at(const uint8_t *plan, uint32_t plan_bytes, uint8_t *base, uint32_t span,
                     const uint32_t *extents, int32_t n_extents, int32_t *bad_op);
/* nnw_plan_check (next) within extents, as nnw_plan_load_at. */
int nnw_plan_check_at(const uint8_t *plan, uint32_t plan_bytes, uint32_t span, const uint32_t *extents,
                      int32_t n_extents, int32_t *bad_op);
/* Validates again the op words of a loaded plan, rewritten by the host for new symbolic dims,
 * against arena_bytes: nnw_plan_load's checks, nothing written. */
int nnw_plan_check(const uint8_t *plan, uint32_t plan_bytes, uint32_t arena_bytes, int32_t *bad_op);

/* Bytes of the blocks nnw_malloc / nnw_realloc handed out and not yet freed (the allocator's
 * usable sizes), and the most that ever were at once: what a session's plans hold in
 * kernels.wasm's memory (tests/test_shared_weights.py, bench/memory). */
uint32_t nnw_allocated_bytes(void);
uint32_t nnw_allocated_peak(void);

/* Runs the run ops on an arena prepared by a successful nnw_plan_load of the same plan. Returns
 * NNW_OK, or the status of the first op that failed on the data it read (NNW_BAD_INDEX: an index
 * tensor held an out-of-range value); the ops after it do not run, nothing outside the arena's
 * tensors is touched, and the arena stays loaded, so the next nnw_plan_run starts afresh.
 * nnw_plan_failed_op() then gives that op's index among the run ops (-1 after a success). */
int nnw_plan_run(const uint8_t *plan, uint8_t *arena);
int32_t nnw_plan_failed_op(void);

/* Runs run ops [first, first + count) of a loaded plan, as nnw_plan_run runs them all (same
 * statuses; nnw_plan_failed_op() counts from op 0 of the run section). A range that is not within
 * the run ops gives NNW_BAD_ARGS and runs nothing. For profilers: the host times each op with
 * count = 1 (kernels.wasm has no clock); finding op `first` walks the op records before it. */
int nnw_plan_run_ops(const uint8_t *plan, uint8_t *arena, int32_t first, int32_t count);

/* Tells kernels which of their equivalent variants suit the host's compiler (bits of
 * NNW_HINT_*, internal.h; 0, the default, suits V8). Variants compute the same sums in the same
 * order: outputs are bit-identical whatever the hints; only speed differs. The wasmtime host
 * sets NNW_HINT_SPLAT_BY_SHUFFLE | NNW_HINT_HOISTS_LOADS once after _initialize. */
void nnw_set_host_hints(int32_t hints);

/* Bytes of scratch conv2d needs for these parameters (0 when the chosen algorithm needs none).
 * The plan compiler asks this so the kernel alone decides its algorithm. */
int32_t nnw_conv2d_scratch_bytes(int32_t c, int32_t m, int32_t group, int32_t kh, int32_t kw,
                                 int32_t oh, int32_t ow, int32_t sh, int32_t sw, int32_t dh, int32_t dw,
                                 int32_t pt, int32_t pl, int32_t h, int32_t w);

/* conv2d_winograd (Winograd F(4x4, 3x3) on weights transformed at plan load): its scratch bytes
 * (-1 for parameters it refuses), and whether it beats conv2d on this shape (the measured choice
 * table the plan compiler follows; 0 or 1). */
int32_t nnw_conv2d_winograd_scratch_bytes(int32_t c, int32_t m, int32_t oh, int32_t ow);
int32_t nnw_conv2d_winograd_pays(int32_t c, int32_t m, int32_t oh, int32_t ow);
/* the same for conv2d_winograd_s2 (3x3 stride 2, strided Winograd F(2x2, 3x3)) */
int32_t nnw_conv2d_winograd_s2_scratch_bytes(int32_t c, int32_t m, int32_t oh, int32_t ow);
int32_t nnw_conv2d_winograd_s2_pays(int32_t c, int32_t m, int32_t oh, int32_t ow);

/* Bytes of scratch conv_transpose2d needs (the columns of one group), -1 for bad parameters. */
int32_t nnw_conv_transpose2d_scratch_bytes(int32_t c, int32_t m, int32_t group, int32_t kh,
                                           int32_t kw, int32_t h, int32_t w);

/* Bytes of scratch one recurrent op needs (ops.def: kind, sizes), -1 for bad parameters. */
int32_t nnw_recurrent_scratch_bytes(int32_t kind, int32_t seq, int32_t batch, int32_t input,
                                    int32_t hidden);
/* The int8 ops' scratch (kernels_c/q8/), asked the same way: bytes, or -1 for parameters the
 * kernel refuses. q8_gemm: a is [m, k]. q8_conv2d: the parameters of nnw_conv2d_scratch_bytes. */
int32_t nnw_q8_gemm_scratch_bytes(int32_t m, int32_t k);
int32_t nnw_q8_conv2d_scratch_bytes(int32_t c, int32_t m, int32_t group, int32_t kh, int32_t kw,
                                    int32_t oh, int32_t ow, int32_t sh, int32_t sw, int32_t dh,
                                    int32_t dw, int32_t pt, int32_t pl, int32_t h, int32_t w);

#endif
