/* Shared by the kernel files: the export macro, each op's validate/run entry points, and the
 * checks validators build on. Nothing here is part of the ABI (that is nnw.h). */
#ifndef NNW_INTERNAL_H
#define NNW_INTERNAL_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gen/ops.h"
#include "nnw.h"

#ifdef __EMSCRIPTEN__
#include <emscripten/em_macros.h>
#define NNW_EXPORT EMSCRIPTEN_KEEPALIVE
#elif defined(__GNUC__)
#define NNW_EXPORT __attribute__((visibility("default")))
#else
#define NNW_EXPORT
#endif

/* Every op of ops.def has a validator (checks args against the arena, returns a nnw_status) and
 * a runner (trusts the validator). plan.c indexes them by opcode. */
#define NNW_DECLARE_OP(code, name, NAME, n_args, kinds)                \
  int nnw_validate_##name(const int32_t *args, uint32_t arena_bytes); \
  void nnw_run_##name(const int32_t *args, uint8_t *arena);
NNW_OPS(NNW_DECLARE_OP)
#undef NNW_DECLARE_OP

/* Ends the current op with a run-time failure (a nnw_status, e.g. NNW_BAD_INDEX): the kernel
 * calls it and returns; nnw_plan_run stops before the next op and returns the first status. The
 * one piece of state besides the allocator, read and reset by plan.c around each run op. */
void nnw_run_fail(int status);

#define NNW_TRY(expr)         \
  do {                        \
    int nnw_status_ = (expr); \
    if (nnw_status_) return nnw_status_; \
  } while (0)

/* Sizes are computed in uint64 and saturate at NNW_SIZE_CAP, far above any 32-bit arena, so a
 * hostile plan's products can never wrap back into range. */
#define NNW_SIZE_CAP ((uint64_t)1 << 48)
static inline uint64_t nnw_mul(uint64_t a, uint64_t b) {
  if (a == 0 || b == 0) return 0;
  return a > NNW_SIZE_CAP / b ? NNW_SIZE_CAP : a * b;
}
static inline uint64_t nnw_add(uint64_t a, uint64_t b) {
  return a + b > NNW_SIZE_CAP ? NNW_SIZE_CAP : a + b;
}

/* NNW_OK if t (a byte offset, -1 = absent when optional) holds `bytes` bytes inside the arena
 * and is 4-aligned when f32. */
int nnw_check_tensor(int32_t t, uint64_t bytes, uint32_t arena_bytes, int optional, int f32);
/* From now on nnw_check_tensor also requires a tensor to lie within one of `count` extents,
 * pairs[2i] <= t and t + bytes <= pairs[2i + 1] (count 0: none required). plan.c sets them for
 * one validation and clears them after. */
void nnw_set_extents(const uint32_t *pairs, int32_t count);

/* Element types, for op arguments that name one (i:dtype in ops.def): ONNX TensorProto codes,
 * so the plan compiler passes a value's dtype through unchanged. */
enum nnw_dtype {
  NNW_F32 = 1, NNW_U8 = 2, NNW_I8 = 3, NNW_U16 = 4, NNW_I16 = 5, NNW_I32 = 6, NNW_I64 = 7,
  NNW_BOOL = 9, NNW_F16 = 10, NNW_F64 = 11, NNW_U32 = 12, NNW_U64 = 13
};
/* bytes per element of a nnw_dtype, 0 for a code that is not one */
int nnw_dtype_size(int32_t dtype);
/* NNW_OK if t holds count elements of dtype inside the arena, aligned to the element size
 * (so natively every typed load is aligned); an unknown dtype is NNW_BAD_ARGS. */
int nnw_check_typed(int32_t t, uint64_t count, int32_t dtype, uint32_t arena_bytes, int optional);

/* NNW_OK if every v[i] > 0 */
int nnw_check_positive(const int32_t *v, int count);
/* NNW_BAD_ARGS if two tensors overlap; same_ok lets them be exactly the same tensor (in-place
 * elementwise ops). Kernels copy with memcpy and read inputs after writing outputs, so a plan
 * that overlaps what they assume apart would compute garbage (and natively be undefined). */
int nnw_check_apart(int32_t a, uint64_t a_bytes, int32_t b, uint64_t b_bytes, int same_ok);

/* The conv2d scratch rule, shared by the exported query and the validator: bytes, or -1. */
int64_t nnw_conv2d_scratch_bytes64(int32_t c, int32_t m, int32_t group, int32_t kh, int32_t kw,
                                   int32_t oh, int32_t ow, int32_t sh, int32_t sw, int32_t dh,
                                   int32_t dw, int32_t pt, int32_t pl, int32_t h, int32_t w);

static inline float nnw_arg_f32(int32_t bits) {
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

/* the arena pointer of tensor argument t, NULL when absent */
static inline float *nnw_f32_at(uint8_t *arena, int32_t t) {
  return t < 0 ? NULL : (float *)(void *)(arena + t);
}

/* y[i*ldy + j] = clamp(alpha * sum_k a[i*a_rs + k*a_cs] * b[k*ldb + j] + beta * c[i*c_rs + j*c_cs])
 * for i < m, j < n (gemm_nn.c). c may be NULL. y must not overlap a, b or c. */
struct nnw_epilogue {
  float alpha, beta, lo, hi;
  const float *c;
  ptrdiff_t c_rs, c_cs;
};
/* What the host's compiler does best, set once by the host (nnw_set_host_hints, hints.c): kernels
 * may pick between variants that compute the very same sums in the same order, so outputs stay
 * bit-identical across hosts; only speed differs. 0 (the default) suits V8. */
#define NNW_HINT_SPLAT_BY_SHUFFLE 1 /* Cranelift (wasmtime): a load-splat costs it 3 instructions */
#define NNW_HINT_HOISTS_LOADS 2     /* Cranelift: a block's loads come first, so keep blocks small */
extern int32_t nnw_host_hints;

void nnw_gemm_nn(int32_t m, int32_t n, int32_t k, const float *a, ptrdiff_t a_rs, ptrdiff_t a_cs,
                 const float *b, ptrdiff_t ldb, float *y, ptrdiff_t ldy,
                 const struct nnw_epilogue *ep);
/* the same, A's rows packed into pbuf (a thread pool worker's, threads/pool.h): the same bits */
void nnw_gemm_nn_buf(int32_t m, int32_t n, int32_t k, const float *a, ptrdiff_t a_rs, ptrdiff_t a_cs,
                     const float *b, ptrdiff_t ldb, float *y, ptrdiff_t ldy,
                     const struct nnw_epilogue *ep, float *pbuf);


/* Keeps clang from unrolling the loop that follows (conv/conv2d_dw*.c, q8/conv2d_dw.c). Cranelift
 * (wasmtime) emits a basic block's loads first, in order, and its arithmetic where the results are
 * needed, so an unrolled window holds all its loaded pixels (and weights) at once and spills; a
 * rolled loop is one block per pass. Used under the wasmtime host's hints. */
#if defined(__clang__)
#define NNW_ROLLED _Pragma("clang loop unroll(disable)")
#else
#define NNW_ROLLED
#endif

#endif
