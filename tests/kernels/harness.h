/* Test harness for the kernels: one-op plans run through nnw_plan_load / nnw_plan_run, arenas
 * poisoned with NaN, tensors laid out so that each test also runs with its inputs, then its
 * outputs, flush against the arena's end (where ASan sees any overrun), and tolerance checks
 * against double-precision references. */
#ifndef NNW_TEST_HARNESS_H
#define NNW_TEST_HARNESS_H
#include <stddef.h>
#include <stdint.h>

#include "../../kernels_c/gen/ops.h"
#include "../../kernels_c/nnw.h"

extern int g_passed, g_failed;

/* records one check; prints `what` when it failed. Returns ok. */
int expect(int ok, const char *fmt, ...);

/* xorshift; uniform floats in [lo, hi) */
void rng_seed(uint64_t seed);
uint32_t rng_u32(void);
float rng_float(float lo, float hi);
void fill_random(float *x, size_t n, float lo, float hi);

/* Offsets for tensors of the given byte sizes, 4-aligned with small gaps; order 0 places them
 * first to last, order 1 last to first. Returns the arena size. */
uint32_t layout(const uint64_t *bytes, int count, int order, int32_t *offsets);

/* An arena of exactly `bytes` bytes (malloc'd, so ASan guards its end), filled with NaN. */
uint8_t *arena_new(uint32_t bytes);
float *at(uint8_t *arena, int32_t offset);

/* A plan with init ops then run ops, each given as [opcode, n_args, args...] words. */
struct plan {
  uint8_t *bytes;
  uint32_t size;
};
struct plan plan_build(const int32_t *init, uint32_t init_words, const int32_t *run,
                       uint32_t run_words, uint32_t arena_bytes, const void *weights,
                       uint32_t weights_bytes);
void plan_free(struct plan *p);

/* Builds the one-op plan, loads and runs it; returns the load status, or else the run status,
 * recording no expectation (for run-time refusals such as NNW_BAD_INDEX). */
int op_status(int opcode, const int32_t *args, int n_args, uint8_t *arena, uint32_t arena_bytes);

/* Builds the one-op plan, loads (expecting NNW_OK) and runs it; returns the load status. */
int run_op(int opcode, const int32_t *args, int n_args, uint8_t *arena, uint32_t arena_bytes);

/* Status of nnw_plan_load on the one-op plan over a fresh arena of arena_bytes (nothing runs, no
 * expectation recorded): for hostile-argument tests. */
int load_status(int opcode, const int32_t *args, int n_args, uint32_t arena_bytes);

/* Expects load_status `want` for the op's n (<= 64) arguments base with argument i (if >= 0) set
 * to v; `what` names the patch in the failure. */
void load_patched(const char *what, int opcode, const int32_t *base, int n, int i, int32_t v,
                  uint32_t arena_bytes, int want);

/* One hostile-argument case for load_patches: argument `arg` set to `value` must load with `want`. */
struct arg_patch {
  const char *what;
  int arg;
  int32_t value;
  int want;
};

/* load_patched for each of the n_rows patches of the op's valid arguments base. */
void load_patches(int opcode, const int32_t *base, int n, uint32_t arena_bytes, const struct arg_patch *rows,
                  size_t n_rows);

/* words of one op: [opcode, n_args, args...]; returns the word count */
int op_words(int32_t *dst, int opcode, const int32_t *args, int n_args);

int32_t f32_bits(float f);

/* |got - want| <= atol + rtol * mag, mag = |want| unless given (the abs-sum of a dot product) */
int check_close(const char *what, const float *got, const double *want, const double *mag,
                size_t n, double atol, double rtol);

#endif
