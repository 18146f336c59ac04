#include "harness.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int g_passed, g_failed;

int expect(int ok, const char *fmt, ...) {
  if (ok) {
    g_passed++;
    return 1;
  }
  g_failed++;
  va_list ap;
  va_start(ap, fmt);
  fputs("FAIL: ", stdout);
  vprintf(fmt, ap);
  fputc('\n', stdout);
  va_end(ap);
  return 0;
}

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;

void rng_seed(uint64_t seed) { g_rng = seed ? seed : 1; }

uint32_t rng_u32(void) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return (uint32_t)(g_rng >> 16);
}

float rng_float(float lo, float hi) { return lo + (hi - lo) * (float)(rng_u32() >> 8) / 16777216.0f; }

void fill_random(float *x, size_t n, float lo, float hi) {
  for (size_t i = 0; i < n; i++) x[i] = rng_float(lo, hi);
}

uint32_t layout(const uint64_t *bytes, int count, int order, int32_t *offsets) {
  uint64_t at = 0;
  for (int k = 0; k < count; k++) {
    int i = order ? count - 1 - k : k;
    at += 4 * (rng_u32() % 3); /* gaps break 16-byte alignment on purpose */
    offsets[i] = (int32_t)at;
    at += (bytes[i] + 3) / 4 * 4;
  }
  return (uint32_t)at;
}

uint8_t *arena_new(uint32_t bytes) {
  uint8_t *a = malloc(bytes ? bytes : 1);
  if (a == NULL) abort();
  float nan = NAN;
  for (uint32_t i = 0; i + 4 <= bytes; i += 4) memcpy(a + i, &nan, 4);
  return a;
}

float *at(uint8_t *arena, int32_t offset) { return (float *)(void *)(arena + offset); }

struct plan plan_build(const int32_t *init, uint32_t init_words, const int32_t *run,
                       uint32_t run_words, uint32_t arena_bytes, const void *weights,
                       uint32_t weights_bytes) {
  uint32_t ops_end = 4 * (NNW_PLAN_HEADER_WORDS + init_words + run_words);
  uint32_t weights_offset = (ops_end + 15) / 16 * 16;
  struct plan p;
  p.size = weights_offset + weights_bytes;
  p.bytes = calloc(1, p.size);
  if (p.bytes == NULL) abort();
  int32_t header[NNW_PLAN_HEADER_WORDS] = {(int32_t)NNW_PLAN_MAGIC, NNW_PLAN_VERSION,
                                           (int32_t)arena_bytes, (int32_t)weights_bytes,
                                           (int32_t)weights_offset, (int32_t)init_words,
                                           (int32_t)run_words, 0};
  memcpy(p.bytes, header, sizeof header);
  if (init_words) memcpy(p.bytes + sizeof header, init, 4 * init_words);
  if (run_words) memcpy(p.bytes + sizeof header + 4 * init_words, run, 4 * run_words);
  if (weights_bytes) memcpy(p.bytes + weights_offset, weights, weights_bytes);
  return p;
}

void plan_free(struct plan *p) {
  free(p->bytes);
  p->bytes = NULL;
}

int op_words(int32_t *dst, int opcode, const int32_t *args, int n_args) {
  dst[0] = opcode;
  dst[1] = n_args;
  memcpy(dst + 2, args, sizeof(int32_t) * (size_t)n_args);
  return n_args + 2;
}

int load_status(int opcode, const int32_t *args, int n_args, uint32_t arena_bytes) {
  int32_t words[128];
  int n = op_words(words, opcode, args, n_args);
  struct plan p = plan_build(NULL, 0, words, (uint32_t)n, arena_bytes, NULL, 0);
  uint8_t *arena = arena_new(arena_bytes);
  int status = nnw_plan_load(p.bytes, p.size, arena, arena_bytes, NULL);
  free(arena);
  plan_free(&p);
  return status;
}

void load_patched(const char *what, int opcode, const int32_t *base, int n, int i, int32_t v,
                  uint32_t arena_bytes, int want) {
  int32_t args[64];
  memcpy(args, base, 4 * (size_t)n);
  if (i >= 0) args[i] = v;
  int got = load_status(opcode, args, n, arena_bytes);
  expect(got == want, "%s: %s gives %d, want %d", nnw_op_names[opcode], what, got, want);
}

void load_patches(int opcode, const int32_t *base, int n, uint32_t arena_bytes, const struct arg_patch *rows,
                  size_t n_rows) {
  for (size_t r = 0; r < n_rows; r++)
    load_patched(rows[r].what, opcode, base, n, rows[r].arg, rows[r].value, arena_bytes, rows[r].want);
}

int op_status(int opcode, const int32_t *args, int n_args, uint8_t *arena, uint32_t arena_bytes) {
  int32_t words[128];
  int n = op_words(words, opcode, args, n_args);
  struct plan p = plan_build(NULL, 0, words, (uint32_t)n, arena_bytes, NULL, 0);
  int status = nnw_plan_load(p.bytes, p.size, arena, arena_bytes, NULL);
  if (status == NNW_OK) status = nnw_plan_run(p.bytes, arena);
  plan_free(&p);
  return status;
}

int run_op(int opcode, const int32_t *args, int n_args, uint8_t *arena, uint32_t arena_bytes) {
  int32_t words[128];
  int n = op_words(words, opcode, args, n_args);
  struct plan p = plan_build(NULL, 0, words, (uint32_t)n, arena_bytes, NULL, 0);
  int32_t bad_op = 99;
  int status = nnw_plan_load(p.bytes, p.size, arena, arena_bytes, &bad_op);
  if (status == NNW_OK) status = nnw_plan_run(p.bytes, arena);
  expect(status == NNW_OK, "%s: load/run status %d (bad_op %d)", nnw_op_names[opcode], status,
         bad_op);
  plan_free(&p);
  return status;
}

int32_t f32_bits(float f) {
  int32_t i;
  memcpy(&i, &f, 4);
  return i;
}

int check_close(const char *what, const float *got, const double *want, const double *mag,
                size_t n, double atol, double rtol) {
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    double m = mag ? mag[i] : fabs(want[i]);
    double err = fabs((double)got[i] - want[i]);
    int ok = err <= atol + rtol * m || (isinf(want[i]) && (double)got[i] == want[i]);
    if (!ok) {
      if (bad < 5)
        printf("  %s[%zu]: got %.9g want %.9g (err %.3g, tol %.3g)\n", what, i, (double)got[i],
               want[i], err, atol + rtol * m);
      bad++;
    }
  }
  return expect(bad == 0, "%s: %zu of %zu elements off", what, bad, n);
}
