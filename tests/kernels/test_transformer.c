/* skip_norm, rotary, bias_act and embed_sum (the transformer ops' kernels) against double-precision
 * references, with their inputs then outputs flush against the arena's end, and their validators
 * against hostile arguments. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "tests.h"

enum { NNW_F32 = 1, NNW_I32 = 6, NNW_I64 = 7 };   /* ONNX element types, as internal.h names them */

/* ---- skip_norm -------------------------------------------------------------------------------- */

struct skip_case {
  int rows, hidden, skip_rows, rms, has_skip, has_bias, has_gamma, has_beta, sum, stats, in_place;
  float offset;
};

static void skip_norm_case(const struct skip_case *t) {
  size_t n = (size_t)t->rows * t->hidden, h = (size_t)t->hidden, kn = (size_t)t->skip_rows * h;
  float *x = malloc(4 * n), *skip = malloc(4 * kn), *p = malloc(4 * 3 * h);
  double *want = malloc(8 * n), *wsum = malloc(8 * n), *wmean = malloc(8 * t->rows), *winv = malloc(8 * t->rows);
  double *mag = malloc(8 * n);
  fill_random(x, n, -2, 2);
  for (size_t i = 0; i < n; i++) x[i] += t->offset;
  fill_random(skip, kn, -1, 1);
  fill_random(p, 3 * h, -1.5f, 1.5f);
  const float *bias = p, *gamma = p + h, *beta = p + 2 * h;
  for (int r = 0; r < t->rows; r++) {
    double mean = 0, var = 0;
    for (size_t i = 0; i < h; i++) {
      size_t e = (size_t)r * h + i;
      float s = x[e];
      if (t->has_skip) s += skip[(size_t)(r % t->skip_rows) * h + i];
      if (t->has_bias) s += bias[i];
      wsum[e] = s;   /* float adds, as the kernel */
      mean += s;
    }
    mean = t->rms ? 0 : mean / (double)h;
    for (size_t i = 0; i < h; i++) var += (wsum[(size_t)r * h + i] - mean) * (wsum[(size_t)r * h + i] - mean);
    double inv = 1 / sqrt(var / (double)h + 1e-5);
    wmean[r] = mean;
    winv[r] = inv;
    for (size_t i = 0; i < h; i++) {
      size_t e = (size_t)r * h + i;
      double z = (wsum[e] - mean) * inv, g = t->has_gamma ? gamma[i] : 1;
      want[e] = z * g + (t->has_beta ? beta[i] : 0);
      mag[e] = (fabs(z) + (fabs(t->offset) + 4) * inv) * fabs(g) + 1;
    }
  }
  char name[160];
  snprintf(name, sizeof name, "skip_norm %dx%d skip_rows%d rms%d skip%d bias%d gamma%d beta%d sum%d stats%d inplace%d",
           t->rows, t->hidden, t->skip_rows, t->rms, t->has_skip, t->has_bias, t->has_gamma, t->has_beta, t->sum,
           t->stats, t->in_place);
  for (int order = 0; order < 2; order++) {
    uint64_t bytes[8] = {4 * n, 4 * kn, 4 * h, 4 * h, 4 * h, 4 * n, 4 * n, 8 * (uint64_t)t->rows};
    int32_t off[8];
    uint32_t arena_bytes = layout(bytes, 8, order, off);
    uint8_t *arena = arena_new(arena_bytes);
    memcpy(at(arena, off[0]), x, 4 * n);
    memcpy(at(arena, off[1]), skip, 4 * kn);
    memcpy(at(arena, off[2]), bias, 4 * h);
    memcpy(at(arena, off[3]), gamma, 4 * h);
    memcpy(at(arena, off[4]), beta, 4 * h);
    int32_t y = t->in_place ? off[0] : off[5];
    int32_t args[NNW_SKIP_NORM_NARGS] = {off[0], t->has_skip ? off[1] : -1, t->has_bias ? off[2] : -1,
                                         t->has_gamma ? off[3] : -1, t->has_beta ? off[4] : -1, y,
                                         t->sum ? off[6] : -1, t->stats ? off[7] : -1,
                                         t->stats ? off[7] + 4 * t->rows : -1, t->rows, t->hidden, t->skip_rows,
                                         t->rms, f32_bits(1e-5f)};
    if (run_op(NNW_OP_SKIP_NORM, args, NNW_SKIP_NORM_NARGS, arena, arena_bytes) == NNW_OK) {
      check_close(name, at(arena, y), want, mag, n, 1e-6, 3e-6);
      if (t->sum) check_close(name, at(arena, off[6]), wsum, NULL, n, 0, 0);
      if (t->stats) {
        check_close(name, at(arena, off[7]), wmean, NULL, (size_t)t->rows, 1e-6, 1e-6);
        check_close(name, at(arena, off[7] + 4 * t->rows), winv, NULL, (size_t)t->rows, 1e-6, 1e-5);
      }
    }
    free(arena);
  }
  free(x), free(skip), free(p), free(want), free(wsum), free(wmean), free(winv), free(mag);
}

void test_skip_norm(void) {
  static const struct skip_case cases[] = {
      /* rows hidden skip_rows rms skip bias gamma beta sum stats inplace offset */
      {14, 64, 14, 0, 1, 1, 1, 1, 1, 1, 0, 0},   /* SkipLayerNormalization, all outputs */
      {7, 768, 7, 0, 1, 0, 1, 1, 0, 0, 0, 0},    /* BERT-base width */
      {14, 64, 7, 0, 1, 0, 1, 0, 0, 0, 1, 0},    /* skip [S, H] over a batch of 2, in place */
      {2, 37, 2, 1, 1, 1, 1, 0, 1, 1, 0, 0},     /* SkipSimplified, odd width */
      {3, 5, 1, 1, 0, 0, 1, 0, 0, 1, 0, 0},      /* SimplifiedLayerNormalization / RMSNormalization */
      {3, 5, 1, 1, 0, 0, 1, 0, 0, 0, 1, 0},
      {6, 64, 6, 0, 1, 1, 1, 1, 0, 0, 0, 500},   /* |mean| >> std */
      {1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) skip_norm_case(&cases[i]);
  for (int r = 0; r < 12; r++) {
    int rows = 1 + (int)(rng_u32() % 5), div = rows % 2 ? 1 : 2;
    struct skip_case t = {rows, 1 + (int)(rng_u32() % 40), rows / div, (int)(rng_u32() % 2), (int)(rng_u32() % 2),
                          (int)(rng_u32() % 2), (int)(rng_u32() % 2), (int)(rng_u32() % 2), (int)(rng_u32() % 2),
                          (int)(rng_u32() % 2), (int)(rng_u32() % 2), 0};
    skip_norm_case(&t);
  }
  /* x 0..32 (2x4 floats), skip 32..48, y 64..96, sum 96..128, stats 128..136 */
  int32_t ok[NNW_SKIP_NORM_NARGS] = {0, 32, -1, -1, -1, 64, 96, 128, -1, 2, 4, 1, 0, f32_bits(1e-5f)};
  load_patched("skip_norm valid", NNW_OP_SKIP_NORM, ok, NNW_SKIP_NORM_NARGS, -1, 0, 160, NNW_OK);
  static const struct arg_patch bad[] = {
      {"skip_norm rms 2", NNW_SKIP_NORM_RMS, 2, NNW_BAD_ARGS},
      {"skip_norm skip_rows > rows", NNW_SKIP_NORM_SKIP_ROWS, 3, NNW_BAD_ARGS},
      {"skip_norm skip_rows 0", NNW_SKIP_NORM_SKIP_ROWS, 0, NNW_BAD_ARGS},
      {"skip_norm y partly over x", NNW_SKIP_NORM_Y, 16, NNW_BAD_ARGS},
      {"skip_norm sum over skip", NNW_SKIP_NORM_SUM, 40, NNW_BAD_ARGS},
      {"skip_norm mean over y", NNW_SKIP_NORM_MEAN, 72, NNW_BAD_ARGS},
      {"skip_norm y past the arena", NNW_SKIP_NORM_Y, 140, NNW_OUT_OF_BOUNDS},
      {"skip_norm hidden huge", NNW_SKIP_NORM_HIDDEN, 0x7FFFFFFF, NNW_OUT_OF_BOUNDS},
      {"skip_norm rows 0", NNW_SKIP_NORM_ROWS, 0, NNW_BAD_ARGS},
      {"skip_norm x misaligned", NNW_SKIP_NORM_X, 2, NNW_BAD_ARGS},
      {"skip_norm gamma negative", NNW_SKIP_NORM_GAMMA, -8, NNW_OUT_OF_BOUNDS},
      {"skip_norm in place", NNW_SKIP_NORM_Y, 0, NNW_OK},
  };
  load_patches(NNW_OP_SKIP_NORM, ok, NNW_SKIP_NORM_NARGS, 160, bad, sizeof bad / sizeof bad[0]);
}

/* ---- rotary ----------------------------------------------------------------------------------- */

struct rotary_case {
  int batch, seq, heads, head, rd, interleaved, transposed, pos_mode, in_place;
};

static void rotary_case(const struct rotary_case *t) {
  size_t n = (size_t)t->batch * t->seq * t->heads * t->head;
  int half = t->rd / 2, rows = 16 + t->batch * t->seq;
  size_t cn = (size_t)rows * half;
  float *x = malloc(4 * n), *cs = malloc(8 * cn);
  int64_t *pos = malloc(8 * (size_t)t->batch * t->seq);
  double *want = malloc(8 * n);
  fill_random(x, n, -2, 2);
  for (size_t i = 0; i < cn; i++) {
    double a = rng_float(0, 6.2f);
    cs[i] = (float)cos(a);
    cs[cn + i] = (float)sin(a);
  }
  for (int i = 0; i < t->batch * t->seq; i++) pos[i] = (int64_t)(rng_u32() % (uint32_t)rows);
  if (t->pos_mode == 1) pos[0] = 5;
  int32_t bs, ss, hs;
  if (t->transposed) {
    ss = t->head, hs = t->seq * t->head, bs = t->heads * hs;
  } else {
    hs = t->head, ss = t->heads * t->head, bs = t->seq * ss;
  }
  for (int b = 0; b < t->batch; b++)
    for (int s = 0; s < t->seq; s++) {
      int64_t row = t->pos_mode == 0 ? pos[b * t->seq + s] : t->pos_mode == 1 ? pos[0] + s : (int64_t)b * t->seq + s;
      const float *c = cs + row * half, *sn = cs + cn + row * half;
      for (int h = 0; h < t->heads; h++) {
        size_t at = (size_t)b * bs + (size_t)s * ss + (size_t)h * hs;
        for (int i = 0; i < t->head; i++) want[at + i] = x[at + i];
        for (int i = 0; i < half; i++) {
          int i1 = t->interleaved ? 2 * i : i, i2 = t->interleaved ? 2 * i + 1 : i + half;
          double x1 = x[at + i1], x2 = x[at + i2];
          want[at + i1] = x1 * c[i] - x2 * sn[i];
          want[at + i2] = x2 * c[i] + x1 * sn[i];
        }
      }
    }
  char name[128];
  snprintf(name, sizeof name, "rotary b%d s%d n%d h%d rd%d inter%d trans%d pos%d inplace%d", t->batch, t->seq, t->heads,
           t->head, t->rd, t->interleaved, t->transposed, t->pos_mode, t->in_place);
  for (int order = 0; order < 2; order++) {
    uint64_t bytes[5] = {4 * n, 4 * cn, 4 * cn, 8 * (uint64_t)t->batch * t->seq, 4 * n};
    int32_t off[5];
    uint32_t arena_bytes = layout(bytes, 5, order, off);
    uint8_t *arena = arena_new(arena_bytes);
    memcpy(at(arena, off[0]), x, 4 * n);
    memcpy(at(arena, off[1]), cs, 4 * cn);
    memcpy(at(arena, off[2]), cs + cn, 4 * cn);
    memcpy(arena + off[3], pos, 8 * (size_t)t->batch * t->seq);
    int32_t y = t->in_place ? off[0] : off[4];
    int32_t args[NNW_ROTARY_NARGS] = {off[0], off[1], off[2], t->pos_mode == 2 ? -1 : off[3], y, t->batch, t->seq,
                                      t->heads, t->head, t->rd, t->interleaved, bs, ss, hs, t->pos_mode,
                                      t->pos_mode == 1 ? 0 : t->seq, rows};
    if (run_op(NNW_OP_ROTARY, args, NNW_ROTARY_NARGS, arena, arena_bytes) == NNW_OK)
      check_close(name, at(arena, y), want, NULL, n, 1e-6, 1e-6);
    free(arena);
  }
  free(x), free(cs), free(pos), free(want);
}

void test_rotary(void) {
  static const struct rotary_case cases[] = {
      /* batch seq heads head rd inter trans pos_mode inplace */
      {2, 7, 4, 16, 16, 0, 0, 0, 0}, {2, 7, 4, 16, 16, 1, 0, 0, 1}, {1, 1, 12, 64, 64, 0, 1, 1, 0},
      {2, 7, 2, 16, 8, 0, 1, 0, 0},  {2, 7, 2, 16, 8, 1, 0, 1, 1},  {2, 3, 3, 12, 12, 0, 0, 2, 0},
      {1, 5, 1, 6, 2, 1, 1, 2, 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) rotary_case(&cases[i]);
  /* x 0..128 (1 x 2 x 2 heads x 8), cos 128..160, sin 160..192 (4 rows x 2), pos 192..208, y 256..384 */
  int32_t ok[NNW_ROTARY_NARGS] = {0, 128, 160, 192, 256, 1, 2, 2, 8, 4, 0, 32, 16, 8, 0, 2, 4};
  load_patched("rotary valid", NNW_OP_ROTARY, ok, NNW_ROTARY_NARGS, -1, 0, 384, NNW_OK);
  static const struct arg_patch bad[] = {
      {"rotary rd odd", NNW_ROTARY_RD, 3, NNW_BAD_ARGS},
      {"rotary rd > head", NNW_ROTARY_RD, 10, NNW_BAD_ARGS},
      {"rotary pos_mode 3", NNW_ROTARY_POS_MODE, 3, NNW_BAD_ARGS},
      {"rotary pos_mode 2 with pos", NNW_ROTARY_POS_MODE, 2, NNW_BAD_ARGS},
      {"rotary negative stride", NNW_ROTARY_X_SS, -16, NNW_BAD_ARGS},
      {"rotary stride past the arena", NNW_ROTARY_X_SS, 1 << 20, NNW_OUT_OF_BOUNDS},
      {"rotary cache rows past the arena", NNW_ROTARY_CACHE_ROWS, 100, NNW_OUT_OF_BOUNDS},
      {"rotary y over the caches", NNW_ROTARY_Y, 128, NNW_BAD_ARGS},
      {"rotary pos past the arena", NNW_ROTARY_POS, 380, NNW_OUT_OF_BOUNDS},
      {"rotary heads 0", NNW_ROTARY_HEADS, 0, NNW_BAD_ARGS},
      {"rotary in place", NNW_ROTARY_Y, 0, NNW_OK},
  };
  load_patches(NNW_OP_ROTARY, ok, NNW_ROTARY_NARGS, 384, bad, sizeof bad / sizeof bad[0]);
  /* a position past the caches stops the run, before y is written */
  uint8_t *arena = arena_new(384);
  memset(arena, 0, 384);
  int64_t pos[2] = {1, 4};
  memcpy(arena + 192, pos, 16);
  expect(load_status(NNW_OP_ROTARY, ok, NNW_ROTARY_NARGS, 384) == NNW_OK, "rotary bad position loads");
  int32_t words[2 + NNW_ROTARY_NARGS];
  uint32_t nw = (uint32_t)op_words(words, NNW_OP_ROTARY, ok, NNW_ROTARY_NARGS);
  struct plan pl = plan_build(NULL, 0, words, nw, 384, NULL, 0);
  if (expect(nnw_plan_load(pl.bytes, pl.size, arena, 384, NULL) == NNW_OK, "rotary bad position: plan loads")) {
    expect(nnw_plan_run(pl.bytes, arena) == NNW_BAD_INDEX, "rotary position 4 of 4 rows: NNW_BAD_INDEX");
    expect(at(arena, 256)[0] == 0.0f, "rotary bad position: y untouched");
  }
  plan_free(&pl);
  free(arena);
}

/* ---- bias_act --------------------------------------------------------------------------------- */

void test_bias_act(void) {
  static const int shapes[][2] = {{1, 1}, {3, 5}, {2, 64}, {7, 37}, {1, 3072}};
  for (int act = 0; act < 4; act++)
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
      for (int has_bias = 0; has_bias < 2; has_bias++) {
        int rows = shapes[s][0], n = shapes[s][1];
        size_t count = (size_t)rows * n;
        float *x = malloc(4 * count), *b = malloc(4 * (size_t)n);
        double *want = malloc(8 * count);
        fill_random(x, count, -6, 6);
        fill_random(b, (size_t)n, -1, 1);
        for (size_t i = 0; i < count; i++) {
          double v = (double)(x[i] + (has_bias ? b[i % (size_t)n] : 0.0f));
          want[i] = act == 0   ? 0.5 * v * (1 + erf(v / sqrt(2.0)))
                    : act == 1 ? 0.5 * v * (1 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)))
                    : act == 2 ? v / (1 + exp(-1.702 * v))
                               : v;
        }
        char name[80];
        snprintf(name, sizeof name, "bias_act act%d %dx%d bias%d", act, rows, n, has_bias);
        for (int order = 0; order < 2; order++) {
          uint64_t bytes[3] = {4 * count, 4 * (uint64_t)n, 4 * count};
          int32_t off[3];
          uint32_t arena_bytes = layout(bytes, 3, order, off);
          uint8_t *arena = arena_new(arena_bytes);
          memcpy(at(arena, off[0]), x, 4 * count);
          memcpy(at(arena, off[1]), b, 4 * (size_t)n);
          int32_t y = (s + (size_t)order) % 2 ? off[0] : off[2];
          int32_t args[NNW_BIAS_ACT_NARGS] = {off[0], has_bias ? off[1] : -1, y, rows, n, act, f32_bits(1.702f)};
          if (run_op(NNW_OP_BIAS_ACT, args, NNW_BIAS_ACT_NARGS, arena, arena_bytes) == NNW_OK)
            check_close(name, at(arena, y), want, NULL, count, 2e-6, 4e-6);
          free(arena);
        }
        free(x), free(b), free(want);
      }
  int32_t ok[NNW_BIAS_ACT_NARGS] = {0, 32, 64, 2, 4, 0, f32_bits(1.702f)};
  load_patched("bias_act valid", NNW_OP_BIAS_ACT, ok, NNW_BIAS_ACT_NARGS, -1, 0, 96, NNW_OK);
  static const struct arg_patch bad[] = {
      {"bias_act act 4", NNW_BIAS_ACT_ACT, 4, NNW_BAD_ARGS},
      {"bias_act act -1", NNW_BIAS_ACT_ACT, -1, NNW_BAD_ARGS},
      {"bias_act y over bias", NNW_BIAS_ACT_Y, 24, NNW_BAD_ARGS},
      {"bias_act y past the arena", NNW_BIAS_ACT_Y, 72, NNW_OUT_OF_BOUNDS},
      {"bias_act n huge", NNW_BIAS_ACT_N, 0x7FFFFFFF, NNW_OUT_OF_BOUNDS},
      {"bias_act rows 0", NNW_BIAS_ACT_ROWS, 0, NNW_BAD_ARGS},
      {"bias_act in place", NNW_BIAS_ACT_Y, 0, NNW_OK},
  };
  load_patches(NNW_OP_BIAS_ACT, ok, NNW_BIAS_ACT_NARGS, 96, bad, sizeof bad / sizeof bad[0]);
}

/* ---- embed_sum -------------------------------------------------------------------------------- */

static void embed_case(int batch, int seq, int hidden, int dtype, int segs, int pos_ids, int mask, int bad) {
  int words = 11, positions = 9, segments = 2, tokens = batch * seq, esize = dtype == NNW_I32 ? 4 : 8;
  size_t wn = (size_t)words * hidden, pn = (size_t)positions * hidden, sn = (size_t)segments * hidden;
  float *tab = malloc(4 * (wn + pn + sn));
  int64_t *ids = malloc(8 * 3 * (size_t)tokens);
  int32_t *m = malloc(4 * (size_t)tokens), wmi[8];
  double *want = malloc(8 * (size_t)tokens * hidden);
  fill_random(tab, wn + pn + sn, -1, 1);
  for (int t = 0; t < tokens; t++) {
    ids[t] = rng_u32() % (uint32_t)words;
    ids[tokens + t] = rng_u32() % (uint32_t)segments;
    ids[2 * tokens + t] = rng_u32() % (uint32_t)positions;
    m[t] = (int32_t)(rng_u32() % 3);   /* 2 counts as not 1 */
  }
  if (bad) ids[tokens - 1] = bad > 0 ? words : -1;
  for (int b = 0; b < batch; b++) {
    wmi[b] = 0;
    for (int s = 0; s < seq; s++) wmi[b] += mask && m[b * seq + s] == 1;
  }
  for (int t = 0; t < tokens && !bad; t++)
    for (int i = 0; i < hidden; i++) {
      int64_t q = pos_ids ? ids[2 * tokens + t] : t % seq;
      float v = tab[ids[t] * hidden + i] + tab[wn + q * hidden + i];
      if (segs) v += tab[wn + pn + ids[tokens + t] * hidden + i];
      want[(size_t)t * hidden + i] = v;
    }
  uint8_t idx[3][8 * 64];
  for (int k = 0; k < 3; k++)
    for (int t = 0; t < tokens; t++) {
      int32_t v32 = (int32_t)ids[k * tokens + t];
      if (esize == 4)
        memcpy(idx[k] + 4 * t, &v32, 4);
      else
        memcpy(idx[k] + 8 * t, &ids[k * tokens + t], 8);
    }
  char name[96];
  snprintf(name, sizeof name, "embed_sum b%d s%d h%d dtype%d segs%d pos%d mask%d bad%d", batch, seq, hidden, dtype, segs,
           pos_ids, mask, bad);
  for (int order = 0; order < 2; order++) {
    uint64_t ib = (uint64_t)esize * tokens;
    uint64_t bytes[9] = {ib, ib, ib, 4 * wn, 4 * pn, 4 * sn, 4 * (uint64_t)tokens, 4 * (uint64_t)tokens * hidden,
                         4 * (uint64_t)batch};
    int32_t off[9];
    uint32_t arena_bytes = layout(bytes, 9, order, off);
    uint8_t *arena = arena_new(arena_bytes);
    for (int k = 0; k < 3; k++) memcpy(arena + off[k], idx[k], ib);
    memcpy(at(arena, off[3]), tab, 4 * wn);
    memcpy(at(arena, off[4]), tab + wn, 4 * pn);
    memcpy(at(arena, off[5]), tab + wn + pn, 4 * sn);
    memcpy(arena + off[6], m, 4 * (size_t)tokens);
    int32_t args[NNW_EMBED_SUM_NARGS] = {off[0], segs ? off[1] : -1, pos_ids ? off[2] : -1, off[3], off[4],
                                         segs ? off[5] : -1, mask ? off[6] : -1, off[7], off[8], dtype, batch, seq,
                                         hidden, words, positions, segs ? segments : 0, pos_ids ? seq : 0};
    if (bad) {
      int32_t words_[2 + NNW_EMBED_SUM_NARGS];
      uint32_t nw = (uint32_t)op_words(words_, NNW_OP_EMBED_SUM, args, NNW_EMBED_SUM_NARGS);
      struct plan pl = plan_build(NULL, 0, words_, nw, arena_bytes, NULL, 0);
      int loaded = nnw_plan_load(pl.bytes, pl.size, arena, arena_bytes, NULL) == NNW_OK;
      expect(loaded && nnw_plan_run(pl.bytes, arena) == NNW_BAD_INDEX, "%s: NNW_BAD_INDEX", name);
      expect(isnan(at(arena, off[7])[0]), "%s: y untouched", name);
      plan_free(&pl);
    } else if (run_op(NNW_OP_EMBED_SUM, args, NNW_EMBED_SUM_NARGS, arena, arena_bytes) == NNW_OK) {
      check_close(name, at(arena, off[7]), want, NULL, (size_t)tokens * hidden, 0, 0);
      expect(memcmp(arena + off[8], wmi, 4 * (size_t)batch) == 0, "%s: mask_index", name);
    }
    free(arena);
  }
  free(tab), free(ids), free(m), free(want);
}

void test_embed_sum(void) {
  embed_case(2, 7, 64, NNW_I32, 1, 0, 1, 0);
  embed_case(1, 1, 37, NNW_I64, 0, 0, 0, 0);
  embed_case(2, 5, 8, NNW_I64, 1, 1, 1, 0);
  embed_case(3, 4, 5, NNW_I32, 0, 1, 0, 0);
  embed_case(2, 3, 4, NNW_I32, 1, 0, 1, 1);
  embed_case(2, 3, 4, NNW_I64, 1, 1, 1, -1);
  /* ids 0..8 (2 int32), word 16..48 (2 rows x 4), pos 48..80, y 96..128, mask_index 128..136 */
  int32_t ok[NNW_EMBED_SUM_NARGS] = {0, -1, -1, 16, 48, -1, -1, 96, 128, NNW_I32, 1, 2, 4, 2, 2, 0, 0};
  load_patched("embed_sum valid", NNW_OP_EMBED_SUM, ok, NNW_EMBED_SUM_NARGS, -1, 0, 144, NNW_OK);
  static const struct arg_patch bad[] = {
      {"embed_sum dtype float", NNW_EMBED_SUM_IDX_DTYPE, NNW_F32, NNW_BAD_ARGS},
      {"embed_sum segs without a table", NNW_EMBED_SUM_SEGS, 8, NNW_BAD_ARGS},
      {"embed_sum pos_bs 1", NNW_EMBED_SUM_POS_BS, 1, NNW_BAD_ARGS},
      {"embed_sum word rows past the arena", NNW_EMBED_SUM_WORD_ROWS, 100, NNW_OUT_OF_BOUNDS},
      {"embed_sum y over pos", NNW_EMBED_SUM_Y, 64, NNW_BAD_ARGS},
      {"embed_sum mask_index over y", NNW_EMBED_SUM_MASK_INDEX, 120, NNW_BAD_ARGS},
      {"embed_sum ids past the arena", NNW_EMBED_SUM_IDS, 140, NNW_OUT_OF_BOUNDS},
      {"embed_sum mask_index misaligned", NNW_EMBED_SUM_MASK_INDEX, 130, NNW_BAD_ARGS},
      {"embed_sum hidden 0", NNW_EMBED_SUM_HIDDEN, 0, NNW_BAD_ARGS},
  };
  load_patches(NNW_OP_EMBED_SUM, ok, NNW_EMBED_SUM_NARGS, 144, bad, sizeof bad / sizeof bad[0]);
}
