/* The plan interpreter. nnw_plan_load checks the header and every op (each op's validator knows
 * its own shapes) before it writes a byte of the arena; nnw_plan_run then trusts the plan. */
#include "internal.h"

struct nnw_op_entry {
  const char *name;
  int32_t n_args;
  int (*validate)(const int32_t *args, uint32_t arena_bytes);
  void (*run)(const int32_t *args, uint8_t *arena);
};

#define NNW_OP_ENTRY(code, name, NAME, n_args, kinds) \
  [code] = {#name, n_args, nnw_validate_##name, nnw_run_##name},
static const struct nnw_op_entry nnw_ops[] = {NNW_OPS(NNW_OP_ENTRY)};
typedef char nnw_ops_cover_all_opcodes[sizeof nnw_ops / sizeof nnw_ops[0] == NNW_OP_COUNT ? 1 : -1];

enum { H_MAGIC, H_VERSION, H_ARENA, H_WEIGHTS_BYTES, H_WEIGHTS_OFFSET, H_INIT, H_RUN, H_RESERVED };

static uint32_t header_word(const uint8_t *plan, int i) {
  uint32_t w;
  memcpy(&w, plan + 4 * i, 4);
  return w;
}

/* Validates the ops packed in words[0, count); *index counts ops across sections and is left on
 * the offending op. An op may not straddle the end of its section. */
static int validate_ops(const int32_t *words, uint32_t count, uint32_t arena_bytes, int32_t *index) {
  uint32_t at = 0;
  while (at < count) {
    ++*index;
    if (count - at < 2) return NNW_TRUNCATED;
    int32_t code = words[at], n_args = words[at + 1];
    if (code <= 0 || code >= NNW_OP_COUNT || !nnw_ops[code].validate) return NNW_BAD_OPCODE;
    if (n_args != nnw_ops[code].n_args) return NNW_BAD_ARGS;
    if ((uint32_t)n_args > count - at - 2) return NNW_TRUNCATED;
    NNW_TRY(nnw_ops[code].validate(words + at + 2, arena_bytes));
    at += 2 + (uint32_t)n_args;
  }
  return NNW_OK;
}

/* set by nnw_run_fail during a run op; wasm has one thread, and nnw_plan_run is not reentrant */
static int run_status = NNW_OK;
static int32_t failed_op = -1;

void nnw_run_fail(int status) {
  if (run_status == NNW_OK) run_status = status;
}

/* Returns NNW_OK or the first op's failure; *index counts the ops run (left on the failing one). */
static int run_ops(const int32_t *words, uint32_t count, uint8_t *arena, int32_t *index) {
  run_status = NNW_OK;
  for (uint32_t at = 0; at < count; at += 2 + (uint32_t)words[at + 1]) {
    ++*index;
    nnw_ops[words[at]].run(words + at + 2, arena);
    if (run_status != NNW_OK) return run_status;
  }
  *index = -1;
  return NNW_OK;
}

static int check_header(const uint8_t *plan, uint32_t plan_bytes, const uint8_t *arena,
                        uint32_t arena_bytes) {
  if (plan == NULL || (arena == NULL && arena_bytes > 0)) return NNW_BAD_ARGS;
  /* op words are read as int32 and tensors as f32 in place */
  if ((uintptr_t)plan % 4 != 0 || (uintptr_t)arena % 4 != 0) return NNW_BAD_ARGS;
  if (plan_bytes < 4) return NNW_TRUNCATED;
  if (header_word(plan, H_MAGIC) != NNW_PLAN_MAGIC) return NNW_BAD_MAGIC;
  if (plan_bytes < 4 * NNW_PLAN_HEADER_WORDS) return NNW_TRUNCATED;
  if (header_word(plan, H_VERSION) != NNW_PLAN_VERSION) return NNW_BAD_VERSION;
  if (header_word(plan, H_RESERVED) != 0) return NNW_BAD_ARGS;
  uint64_t plan_arena = header_word(plan, H_ARENA);
  uint64_t weights_bytes = header_word(plan, H_WEIGHTS_BYTES);
  uint64_t weights_offset = header_word(plan, H_WEIGHTS_OFFSET);
  uint64_t op_words = (uint64_t)header_word(plan, H_INIT) + header_word(plan, H_RUN);
  uint64_t ops_end = 4 * (NNW_PLAN_HEADER_WORDS + op_words);
  if (ops_end > plan_bytes) return NNW_TRUNCATED;
  if (plan_arena > arena_bytes || weights_bytes > plan_arena) return NNW_OUT_OF_BOUNDS;
  if (weights_offset % 16 != 0 || weights_offset < ops_end) return NNW_BAD_ARGS;
  if (weights_offset + weights_bytes > plan_bytes) return NNW_TRUNCATED;
  return NNW_OK;
}

/* extents (NULL: none) bound every tensor of the validation; the weights blob goes to
 * arena + blob_at, where blob_room bytes are allocated. */
static int load(const uint8_t *plan, uint32_t plan_bytes, uint8_t *arena, uint32_t arena_bytes,
                const uint32_t *extents, int32_t n_extents, int32_t *index) {
  NNW_TRY(check_header(plan, plan_bytes, arena, arena_bytes));
  uint32_t plan_arena = header_word(plan, H_ARENA);
  uint32_t init_words = header_word(plan, H_INIT), run_words = header_word(plan, H_RUN);
  uint32_t blob_at = extents ? extents[0] : 0, blob_room = extents ? extents[1] - extents[0] : plan_arena;
  if (header_word(plan, H_WEIGHTS_BYTES) > blob_room) return NNW_OUT_OF_BOUNDS;
  const int32_t *init = (const int32_t *)(const void *)plan + NNW_PLAN_HEADER_WORDS;
  nnw_set_extents(extents, n_extents);
  int status = validate_ops(init, init_words, plan_arena, index);
  if (status == NNW_OK) status = validate_ops(init + init_words, run_words, plan_arena, index);
  nnw_set_extents(NULL, 0);
  NNW_TRY(status);
  *index = -1;
  memmove(arena + blob_at, plan + header_word(plan, H_WEIGHTS_OFFSET), header_word(plan, H_WEIGHTS_BYTES));
  return run_ops(init, init_words, arena, index);
}

NNW_EXPORT int nnw_plan_load(const uint8_t *plan, uint32_t plan_bytes, uint8_t *arena,
                             uint32_t arena_bytes, int32_t *bad_op) {
  int32_t index = -1;
  int status = load(plan, plan_bytes, arena, arena_bytes, NULL, 0, &index);
  if (bad_op != NULL) *bad_op = status == NNW_OK ? -1 : index;
  return status;
}

/* NNW_OK if extents holds n pairs [lo, hi) with lo <= hi <= span (n in 1..NNW_MAX_EXTENTS). */
static int check_extents(const uint32_t *extents, int32_t n, uint32_t span) {
  if (extents == NULL || (uintptr_t)extents % 4 != 0 || n < 1 || n > NNW_MAX_EXTENTS) return NNW_BAD_ARGS;
  for (int32_t i = 0; i < n; i++)
    if (extents[2 * i] > extents[2 * i + 1] || extents[2 * i + 1] > span) return NNW_BAD_ARGS;
  return NNW_OK;
}

NNW_EXPORT int nnw_plan_load_at(const uint8_t *plan, uint32_t plan_bytes, uint8_t *base, uint32_t span,
                                const uint32_t *extents, int32_t n_extents, int32_t *bad_op) {
  int32_t index = -1;
  int status = check_extents(extents, n_extents, span);
  if (status == NNW_OK) status = load(plan, plan_bytes, base, span, extents, n_extents, &index);
  if (bad_op != NULL) *bad_op = status == NNW_OK ? -1 : index;
  return status;
}

/* Validates again the ops of a loaded plan (its header and op words, the weights gone) whose
 * words the host rewrote for new symbolic dims, against an arena of arena_bytes: the same checks
 * as nnw_plan_load's, nothing written. *bad_op as nnw_plan_load's. */
static int check(const uint8_t *plan, uint32_t plan_bytes, uint32_t arena_bytes, const uint32_t *extents,
                 int32_t n_extents, int32_t *bad_op) {
  int32_t index = -1;
  int status = NNW_OK;
  if (plan == NULL || (uintptr_t)plan % 4 != 0) status = NNW_BAD_ARGS;
  else if (plan_bytes < 4 * NNW_PLAN_HEADER_WORDS) status = NNW_TRUNCATED;
  else if (header_word(plan, H_MAGIC) != NNW_PLAN_MAGIC) status = NNW_BAD_MAGIC;
  else if (header_word(plan, H_VERSION) != NNW_PLAN_VERSION) status = NNW_BAD_VERSION;
  else if (4 * ((uint64_t)NNW_PLAN_HEADER_WORDS + header_word(plan, H_INIT) + header_word(plan, H_RUN)) > plan_bytes)
    status = NNW_TRUNCATED;
  else if (header_word(plan, H_ARENA) > arena_bytes || header_word(plan, H_WEIGHTS_BYTES) > header_word(plan, H_ARENA))
    status = NNW_OUT_OF_BOUNDS;
  else {
    uint32_t init_words = header_word(plan, H_INIT), plan_arena = header_word(plan, H_ARENA);
    const int32_t *init = (const int32_t *)(const void *)plan + NNW_PLAN_HEADER_WORDS;
    nnw_set_extents(extents, n_extents);
    status = validate_ops(init, init_words, plan_arena, &index);
    if (status == NNW_OK) status = validate_ops(init + init_words, header_word(plan, H_RUN), plan_arena, &index);
    nnw_set_extents(NULL, 0);
  }
  if (bad_op != NULL) *bad_op = status == NNW_OK ? -1 : index;
  return status;
}

NNW_EXPORT int nnw_plan_check(const uint8_t *plan, uint32_t plan_bytes, uint32_t arena_bytes, int32_t *bad_op) {
  return check(plan, plan_bytes, arena_bytes, NULL, 0, bad_op);
}

NNW_EXPORT int nnw_plan_check_at(const uint8_t *plan, uint32_t plan_bytes, uint32_t span, const uint32_t *extents,
                                 int32_t n_extents, int32_t *bad_op) {
  int status = check_extents(extents, n_extents, span);
  if (status != NNW_OK) {
    if (bad_op != NULL) *bad_op = -1;
    return status;
  }
  return check(plan, plan_bytes, span, extents, n_extents, bad_op);
}

/* The run section of a loaded plan, after a guard against a wrong pointer (not a validation:
 * nnw_plan_load did that). */
static int run_section(const uint8_t *plan, const int32_t **words, uint32_t *count) {
  if (plan == NULL || (uintptr_t)plan % 4 != 0) return NNW_BAD_ARGS;
  if (header_word(plan, H_MAGIC) != NNW_PLAN_MAGIC) return NNW_BAD_MAGIC;
  if (header_word(plan, H_VERSION) != NNW_PLAN_VERSION) return NNW_BAD_VERSION;
  *words = (const int32_t *)(const void *)plan + NNW_PLAN_HEADER_WORDS + header_word(plan, H_INIT);
  *count = header_word(plan, H_RUN);
  return NNW_OK;
}

NNW_EXPORT int nnw_plan_run(const uint8_t *plan, uint8_t *arena) {
  const int32_t *words;
  uint32_t count;
  NNW_TRY(run_section(plan, &words, &count));
  failed_op = -1;
  return run_ops(words, count, arena, &failed_op);
}

/* Word offset of op k after the op starting at word `at` (k ops on), or -1 when the section ends
 * first. The ops of a loaded plan tile their section, so the walk stays within it. */
static int64_t skip_ops(const int32_t *words, uint32_t count, uint32_t at, int32_t k) {
  for (; k > 0; --k) {
    if (at >= count) return -1;
    at += 2 + (uint32_t)words[at + 1];
  }
  return at;
}

NNW_EXPORT int nnw_plan_run_ops(const uint8_t *plan, uint8_t *arena, int32_t first, int32_t count) {
  const int32_t *words;
  uint32_t n_words;
  NNW_TRY(run_section(plan, &words, &n_words));
  failed_op = -1;
  if (first < 0 || count < 0) return NNW_BAD_ARGS;
  int64_t begin = skip_ops(words, n_words, 0, first);
  int64_t end = begin < 0 ? -1 : skip_ops(words, n_words, (uint32_t)begin, count);
  if (end < 0) return NNW_BAD_ARGS;
  failed_op = first - 1;   /* run_ops counts on from here: indices stay global among run ops */
  return run_ops(words + begin, (uint32_t)(end - begin), arena, &failed_op);
}

NNW_EXPORT int32_t nnw_plan_failed_op(void) { return failed_op; }
