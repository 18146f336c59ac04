/* attention against a double-precision reference (masks broadcast every way, odd sizes), and its
 * validator on hostile arguments. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"
#include "tests.h"

struct attn_case {
  int batch, heads, s, l, d, mask; /* mask: 0 none, 1 [1,1,s,l], 2 [b,1,s,l], 3 [b,h,s,l] */
  float scale;
};

static void attn_case(const struct attn_case *t) {
  int hd = t->heads * t->d;
  int m_rs = t->mask ? t->l : 0, m_hs = t->mask == 3 ? t->s * t->l : 0;
  int m_bs = t->mask == 2 ? t->s * t->l : t->mask == 3 ? t->heads * t->s * t->l : 0;
  size_t qn = (size_t)t->batch * t->s * hd, kn = (size_t)t->batch * t->l * hd;
  size_t mn = t->mask ? (size_t)(t->batch - 1) * m_bs + (size_t)(t->heads - 1) * m_hs + (size_t)t->s * t->l : 1;
  size_t sn = (size_t)4 * ((size_t)t->d * t->l + (size_t)t->s * t->l);
  float *q = malloc(4 * qn), *k = malloc(4 * kn), *v = malloc(4 * kn), *mask = malloc(4 * mn);
  double *want = malloc(8 * qn), *mag = malloc(8 * qn), *p = malloc(8 * (size_t)t->l);
  fill_random(q, qn, -1, 1);
  fill_random(k, kn, -1, 1);
  fill_random(v, kn, -1, 1);
  fill_random(mask, mn, -3, 0);
  if (t->mask) mask[0] = -3.4e38f; /* a masked-out key, as exported BERT's attention mask */
  for (int b = 0; b < t->batch; b++)
    for (int h = 0; h < t->heads; h++)
      for (int i = 0; i < t->s; i++) {
        double mx = -INFINITY, sum = 0;
        for (int j = 0; j < t->l; j++) {
          double s = 0;
          for (int c = 0; c < t->d; c++)
            s += (double)q[((size_t)b * t->s + i) * hd + h * t->d + c] * k[((size_t)b * t->l + j) * hd + h * t->d + c];
          s *= t->scale;
          if (t->mask) s += mask[(size_t)b * m_bs + (size_t)h * m_hs + (size_t)i * m_rs + j];
          p[j] = s;
          mx = s > mx ? s : mx;
        }
        for (int j = 0; j < t->l; j++) sum += p[j] = exp(p[j] - mx);
        for (int c = 0; c < t->d; c++) {
          double y = 0, g = 0;
          for (int j = 0; j < t->l; j++) {
            y += p[j] / sum * v[((size_t)b * t->l + j) * hd + h * t->d + c];
            g += fabs(v[((size_t)b * t->l + j) * hd + h * t->d + c]);
          }
          want[((size_t)b * t->s + i) * hd + h * t->d + c] = y;
          mag[((size_t)b * t->s + i) * hd + h * t->d + c] = g * (1 + t->d * fabs(t->scale));
        }
      }
  char name[128];
  snprintf(name, sizeof name, "attention b%d h%d s%d l%d d%d mask%d scale%g", t->batch, t->heads, t->s, t->l,
           t->d, t->mask, t->scale);
  for (int order = 0; order < 2; order++) {
    uint64_t bytes[6] = {4 * qn, 4 * kn, 4 * kn, 4 * mn, 4 * qn, sn};
    int32_t off[6];
    uint32_t arena_bytes = layout(bytes, 6, order, off);
    uint8_t *arena = arena_new(arena_bytes);
    memcpy(at(arena, off[0]), q, 4 * qn);
    memcpy(at(arena, off[1]), k, 4 * kn);
    memcpy(at(arena, off[2]), v, 4 * kn);
    memcpy(at(arena, off[3]), mask, 4 * mn);
    int32_t args[NNW_ATTENTION_NARGS] = {off[0], off[1], off[2], t->mask ? off[3] : -1, off[4], off[5],
                                         t->batch, t->heads, t->s, t->l, t->d, m_bs, m_hs, m_rs, f32_bits(t->scale)};
    if (run_op(NNW_OP_ATTENTION, args, NNW_ATTENTION_NARGS, arena, arena_bytes) == NNW_OK)
      check_close(name, at(arena, off[4]), want, mag, qn, 1e-5, 1e-6);
    free(arena);
  }
  free(q);
  free(k);
  free(v);
  free(mask);
  free(want);
  free(mag);
  free(p);
}

static void hostile(void) {
  /* batch 1, heads 2, s 3, l 4, d 2: q/y 48 B, k/v 64 B, mask [1,1,3,4] 48 B, scratch 80 B */
  enum { Q = 0, K = 48, V = 112, M = 176, Y = 224, S = 272, ARENA = 352 };
  const int32_t g[NNW_ATTENTION_NARGS] = {Q, K, V, M, Y, S, 1, 2, 3, 4, 2, 0, 0, 4, f32_bits(0.5f)};
  static const struct {
    const char *what;
    int i;
    int32_t v;
    int want;
  } cases[] = {
      {"valid", -1, 0, NNW_OK},
      {"no mask", NNW_ATTENTION_MASK, -1, NNW_OK},
      {"heads 0", NNW_ATTENTION_HEADS, 0, NNW_BAD_ARGS},
      {"d negative", NNW_ATTENTION_D, -2, NNW_BAD_ARGS},
      {"l INT32_MIN", NNW_ATTENTION_L, INT32_MIN, NNW_BAD_ARGS},
      {"mask stride negative", NNW_ATTENTION_M_RS, -4, NNW_BAD_ARGS},
      {"scale nan", NNW_ATTENTION_SCALE, 0x7FC00000, NNW_BAD_ARGS},
      {"scale inf", NNW_ATTENTION_SCALE, 0x7F800000, NNW_BAD_ARGS},
      {"batch huge", NNW_ATTENTION_BATCH, INT32_MAX, NNW_OUT_OF_BOUNDS},
      {"heads*d wraps", NNW_ATTENTION_D, 1 << 30, NNW_OUT_OF_BOUNDS},
      {"mask head stride past", NNW_ATTENTION_M_HS, 1 << 20, NNW_OUT_OF_BOUNDS},
      {"mask batch stride past (one batch: unused)", NNW_ATTENTION_M_BS, 1 << 20, NNW_OK},
      {"q absent", NNW_ATTENTION_Q, -1, NNW_OUT_OF_BOUNDS},
      {"scratch absent", NNW_ATTENTION_SCRATCH, -1, NNW_OUT_OF_BOUNDS},
      {"scratch too small", NNW_ATTENTION_SCRATCH, ARENA - 64, NNW_OUT_OF_BOUNDS},
      {"v past the arena", NNW_ATTENTION_V, ARENA - 32, NNW_OUT_OF_BOUNDS},
      {"k misaligned", NNW_ATTENTION_K, K + 2, NNW_BAD_ARGS},
      {"y over q", NNW_ATTENTION_Y, Q + 4, NNW_BAD_ARGS},
      {"y over the mask", NNW_ATTENTION_Y, M, NNW_BAD_ARGS},
      {"scratch over v", NNW_ATTENTION_SCRATCH, V, NNW_BAD_ARGS},
      {"scratch over the mask", NNW_ATTENTION_SCRATCH, M + 16, NNW_BAD_ARGS},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    int32_t args[NNW_ATTENTION_NARGS];
    memcpy(args, g, sizeof args);
    if (cases[c].i >= 0) args[cases[c].i] = cases[c].v;
    int got = load_status(NNW_OP_ATTENTION, args, NNW_ATTENTION_NARGS, ARENA);
    expect(got == cases[c].want, "attention: %s gives %d, want %d", cases[c].what, got, cases[c].want);
  }
}

void test_attention(void) {
  static const struct attn_case cases[] = {
      {1, 4, 128, 128, 64, 1, 0.125f}, /* BERT-mini */
      {2, 2, 5, 7, 3, 2, 0.5f},
      {2, 3, 4, 9, 8, 3, 1.0f},
      {1, 1, 1, 1, 1, 0, 2.0f},
      {3, 2, 6, 2, 5, 0, -0.7f},
      {1, 2, 9, 17, 4, 1, 0.3f},
      {1, 2, 6, 10, 6, 1, 0.4f}, /* K's transpose: 4x4 blocks and both edges */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) attn_case(&cases[i]);
  for (int r = 0; r < 20; r++) {
    struct attn_case t = {1 + (int)(rng_u32() % 2), 1 + (int)(rng_u32() % 3), 1 + (int)(rng_u32() % 9),
                          1 + (int)(rng_u32() % 12), 1 + (int)(rng_u32() % 9), (int)(rng_u32() % 4),
                          rng_float(-1, 1)};
    attn_case(&t);
  }
  hostile();
}
