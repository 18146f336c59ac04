/* Attention over a key/value cache, for onnxruntime's GroupQueryAttention, MultiHeadAttention and
 * Attention: rope rotates Q and the new K, kv_append writes present = past ++ new (one copy, no
 * concat pass), attention_kv attends one query row at a time to the cached keys. A decode step
 * (s = 1) is then one pass over K's rows (dot products) and one over V's (a weighted sum), both
 * read in place at any stride: no transpose of the cache, no [s, t] score block beyond one row.
 * Per-batch lengths (GQA's seqlens_k) are data, checked as they are read (NNW_BAD_INDEX).
 * Every sum runs in a fixed order (four lanes over d, then lanes (0+2)+(1+3), then the tail),
 * without FMA, so the bits are the same on every engine. */
#include <math.h>

#include "act4.h"
#include "internal.h"
#include "simd.h"
#include "linalg/pack_a.h"
#include "threads/split.h"
#include "linalg/exp_scores.h"

/* elements spanned by a [b, r, h, w] view at strides bs, rs, hs (w contiguous); 0 if any is 0 */
static uint64_t span(int32_t b, int32_t bs, int32_t r, int32_t rs, int32_t h, int32_t hs, int32_t w) {
  if (b <= 0 || r <= 0 || h <= 0 || w <= 0) return 0;
  return nnw_add(nnw_add(nnw_add(nnw_mul((uint64_t)b - 1, (uint64_t)bs), nnw_mul((uint64_t)r - 1, (uint64_t)rs)),
                         nnw_mul((uint64_t)h - 1, (uint64_t)hs)), (uint64_t)w);
}

static int nonneg(const int32_t *v, int n) {
  for (int i = 0; i < n; i++)
    if (v[i] < 0) return NNW_BAD_ARGS;
  return NNW_OK;
}

static int32_t lens_at(const uint8_t *arena, int32_t lens, int32_t b) {
  int32_t n;
  memcpy(&n, arena + lens + 4 * (size_t)b, 4);
  return n;
}

/* ---- kv_append --------------------------------------------------------------------------------- */

int nnw_validate_kv_append(const int32_t *v, uint32_t arena_bytes) {
  int32_t batch = v[NNW_KV_APPEND_BATCH], heads = v[NNW_KV_APPEND_HEADS], p = v[NNW_KV_APPEND_P];
  int32_t t = v[NNW_KV_APPEND_T], s = v[NNW_KV_APPEND_S], d = v[NNW_KV_APPEND_D];
  NNW_TRY(nnw_check_positive(v + NNW_KV_APPEND_BATCH, 2));
  NNW_TRY(nnw_check_positive(v + NNW_KV_APPEND_T, 3));
  NNW_TRY(nonneg(v + NNW_KV_APPEND_X_BS, 3));
  if (p < 0 || s > t || (p == 0) != (v[NNW_KV_APPEND_PAST] < 0)) return NNW_BAD_ARGS;
  uint64_t y_bytes = nnw_mul(nnw_mul(nnw_mul(nnw_mul((uint64_t)batch, (uint64_t)heads), (uint64_t)t), (uint64_t)d), 4);
  uint64_t p_bytes = nnw_mul(nnw_mul(nnw_mul(nnw_mul((uint64_t)batch, (uint64_t)heads), (uint64_t)p), (uint64_t)d), 4);
  uint64_t x_bytes = nnw_mul(span(batch, v[NNW_KV_APPEND_X_BS], s, v[NNW_KV_APPEND_X_RS], heads,
                                  v[NNW_KV_APPEND_X_HS], d), 4);
  int32_t past = v[NNW_KV_APPEND_PAST], x = v[NNW_KV_APPEND_X], lens = v[NNW_KV_APPEND_LENS], y = v[NNW_KV_APPEND_Y];
  NNW_TRY(nnw_check_tensor(past, p_bytes, arena_bytes, 1, 1));
  NNW_TRY(nnw_check_tensor(x, x_bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_typed(lens, (uint64_t)batch, NNW_I32, arena_bytes, 1));
  NNW_TRY(nnw_check_tensor(y, y_bytes, arena_bytes, 0, 1));
  /* past == y (same offset, p == t): the cache grows in place (GroupQueryAttention's shared
   * past/present buffer), only the new rows are written */
  NNW_TRY(nnw_check_apart(past, p_bytes, y, y_bytes, p == t));
  NNW_TRY(nnw_check_apart(x, x_bytes, y, y_bytes, 0));
  return nnw_check_apart(lens, nnw_mul((uint64_t)batch, 4), y, y_bytes, 0);
}

void nnw_run_kv_append(const int32_t *v, uint8_t *arena) {
  int32_t batch = v[NNW_KV_APPEND_BATCH], heads = v[NNW_KV_APPEND_HEADS], p = v[NNW_KV_APPEND_P];
  int32_t t = v[NNW_KV_APPEND_T], s = v[NNW_KV_APPEND_S], d = v[NNW_KV_APPEND_D], lens = v[NNW_KV_APPEND_LENS];
  ptrdiff_t x_bs = v[NNW_KV_APPEND_X_BS], x_rs = v[NNW_KV_APPEND_X_RS], x_hs = v[NNW_KV_APPEND_X_HS];
  const float *past = nnw_f32_at(arena, v[NNW_KV_APPEND_PAST]), *x = nnw_f32_at(arena, v[NNW_KV_APPEND_X]);
  float *y = nnw_f32_at(arena, v[NNW_KV_APPEND_Y]);
  int shared = past == y;   /* the validator let them meet only as the same [batch, heads, t, d] */
  for (int32_t b = 0; b < batch; b++) {   /* every length checked before y is written */
    int64_t n = lens < 0 ? p : (int64_t)lens_at(arena, lens, b) + v[NNW_KV_APPEND_LENS_ADD];
    if (n < 0 || n > p || n + s > t) {
      nnw_run_fail(NNW_BAD_INDEX);
      return;
    }
  }
  size_t row = (size_t)d * sizeof(float);
  for (int32_t b = 0; b < batch; b++) {
    size_t n = lens < 0 ? (size_t)p : (size_t)((int64_t)lens_at(arena, lens, b) + v[NNW_KV_APPEND_LENS_ADD]);
    for (int32_t h = 0; h < heads; h++) {
      float *dst = y + ((size_t)b * heads + h) * (size_t)t * d;
      if (n && !shared) memcpy(dst, past + ((size_t)b * heads + h) * (size_t)p * d, n * row);
      for (int32_t i = 0; i < s; i++) memcpy(dst + (n + i) * d, x + b * x_bs + i * x_rs + h * x_hs, row);
      if (!shared) memset(dst + (n + s) * d, 0, ((size_t)t - n - s) * row);
    }
  }
}

/* ---- rope -------------------------------------------------------------------------------------- */

int nnw_validate_rope(const int32_t *v, uint32_t arena_bytes) {
  int32_t batch = v[NNW_ROPE_BATCH], s = v[NNW_ROPE_S], heads = v[NNW_ROPE_HEADS], d = v[NNW_ROPE_D];
  int32_t half = v[NNW_ROPE_HALF], max_pos = v[NNW_ROPE_MAX_POS];
  NNW_TRY(nnw_check_positive(v + NNW_ROPE_BATCH, 4));
  NNW_TRY(nonneg(v + NNW_ROPE_X_BS, 3));
  if (half < 0 || max_pos < 0 || (half > 0 && max_pos == 0) || 2 * (int64_t)half > d || v[NNW_ROPE_POS_BS] < 0 ||
      (v[NNW_ROPE_INTERLEAVED] & ~1))
    return NNW_BAD_ARGS;
  uint64_t y_bytes = nnw_mul(nnw_mul(nnw_mul(nnw_mul((uint64_t)batch, (uint64_t)s), (uint64_t)heads), (uint64_t)d), 4);
  uint64_t x_bytes = nnw_mul(span(batch, v[NNW_ROPE_X_BS], s, v[NNW_ROPE_X_RS], heads, v[NNW_ROPE_X_HS], d), 4);
  uint64_t c_bytes = nnw_mul(nnw_mul((uint64_t)max_pos, (uint64_t)half), 4);
  uint64_t pos_n = span(batch, v[NNW_ROPE_POS_BS], s, 1, 1, 0, 1);
  int32_t y = v[NNW_ROPE_Y];
  NNW_TRY(nnw_check_tensor(v[NNW_ROPE_X], x_bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(v[NNW_ROPE_XB], nnw_mul(nnw_mul((uint64_t)heads, (uint64_t)d), 4), arena_bytes, 1, 1));
  NNW_TRY(nnw_check_tensor(v[NNW_ROPE_COS], c_bytes, arena_bytes, half == 0, 1));
  NNW_TRY(nnw_check_tensor(v[NNW_ROPE_SIN], c_bytes, arena_bytes, half == 0, 1));
  NNW_TRY(nnw_check_typed(v[NNW_ROPE_LENS], (uint64_t)batch, NNW_I32, arena_bytes, 1));
  NNW_TRY(nnw_check_typed(v[NNW_ROPE_POS], pos_n, NNW_I64, arena_bytes, 1));
  NNW_TRY(nnw_check_tensor(y, y_bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_apart(v[NNW_ROPE_X], x_bytes, y, y_bytes, 0));
  NNW_TRY(nnw_check_apart(v[NNW_ROPE_COS], c_bytes, y, y_bytes, 0));
  NNW_TRY(nnw_check_apart(v[NNW_ROPE_SIN], c_bytes, y, y_bytes, 0));
  NNW_TRY(nnw_check_apart(v[NNW_ROPE_LENS], nnw_mul((uint64_t)batch, 4), y, y_bytes, 0));
  NNW_TRY(nnw_check_apart(v[NNW_ROPE_XB], nnw_mul(nnw_mul((uint64_t)heads, (uint64_t)d), 4), y, y_bytes, 0));
  return nnw_check_apart(v[NNW_ROPE_POS], nnw_mul(pos_n, 8), y, y_bytes, 0);
}

void nnw_run_rope(const int32_t *v, uint8_t *arena) {
  int32_t batch = v[NNW_ROPE_BATCH], s = v[NNW_ROPE_S], heads = v[NNW_ROPE_HEADS], d = v[NNW_ROPE_D];
  int32_t half = v[NNW_ROPE_HALF], max_pos = v[NNW_ROPE_MAX_POS], lens = v[NNW_ROPE_LENS], pos = v[NNW_ROPE_POS];
  ptrdiff_t x_bs = v[NNW_ROPE_X_BS], x_rs = v[NNW_ROPE_X_RS], x_hs = v[NNW_ROPE_X_HS];
  const float *x = nnw_f32_at(arena, v[NNW_ROPE_X]), *xb = nnw_f32_at(arena, v[NNW_ROPE_XB]);
  const float *cosv = nnw_f32_at(arena, v[NNW_ROPE_COS]), *sinv = nnw_f32_at(arena, v[NNW_ROPE_SIN]);
  float *y = nnw_f32_at(arena, v[NNW_ROPE_Y]);
  for (int32_t b = 0; b < batch; b++) {
    int64_t base = lens < 0 ? 0 : (int64_t)lens_at(arena, lens, b) + v[NNW_ROPE_LENS_ADD];
    for (int32_t i = 0; i < s; i++) {
      int64_t at = base + i;
      if (pos >= 0) memcpy(&at, arena + pos + 8 * ((size_t)b * v[NNW_ROPE_POS_BS] + i), 8);
      if (half > 0 && (at < 0 || at >= max_pos)) {
        nnw_run_fail(NNW_BAD_INDEX);
        return;
      }
      const float *c = half ? cosv + (size_t)at * half : NULL, *sn = half ? sinv + (size_t)at * half : NULL;
      for (int32_t h = 0; h < heads; h++) {
        const float *src = x + b * x_bs + i * x_rs + h * x_hs;
        float *dst = y + (((size_t)b * s + i) * heads + h) * d;
        int32_t k = 0;
        if (xb != NULL) {   /* the bias first, into dst; the rotation then reads dst */
          const float *bh = xb + (size_t)h * d;
          for (; k + 4 <= d; k += 4) v4_store(dst + k, v4_add(v4_load(src + k), v4_load(bh + k)));
          for (; k < d; k++) dst[k] = src[k] + bh[k];
          src = dst;
          k = 0;
        }
        if (v[NNW_ROPE_INTERLEAVED]) {
          for (; k < half; k++) {
            float x1 = src[2 * k], x2 = src[2 * k + 1];
            dst[2 * k] = x1 * c[k] - x2 * sn[k];
            dst[2 * k + 1] = x1 * sn[k] + x2 * c[k];
          }
        } else {
          for (; k + 4 <= half; k += 4) {
            v4 x1 = v4_load(src + k), x2 = v4_load(src + half + k), cc = v4_load(c + k), ss = v4_load(sn + k);
            v4_store(dst + k, v4_sub(v4_mul(x1, cc), v4_mul(x2, ss)));
            v4_store(dst + half + k, v4_add(v4_mul(x1, ss), v4_mul(x2, cc)));
          }
          for (; k < half; k++) {
            float x1 = src[k], x2 = src[half + k];
            dst[k] = x1 * c[k] - x2 * sn[k];
            dst[half + k] = x1 * sn[k] + x2 * c[k];
          }
        }
        if (src != dst)
          for (k = 2 * half; k < d; k++) dst[k] = src[k];
      }
    }
  }
}

/* ---- attention_kv ------------------------------------------------------------------------------ */

struct akv {
  int32_t q, k, v, bias, kmask, kend, kstart, lens, sink, y, scratch;
  int32_t batch, heads, kv_heads, s, t, d, dv;
  int32_t q_bs, q_rs, q_hs, k_bs, k_hs, k_rs, v_bs, v_hs, v_rs, y_bs, y_rs, y_hs, m_bs, m_hs, m_rs, km_bs, km_rs;
  int32_t causal, c0, lens_add, window, smooth;
  float scale, softcap, mask_value;
};

static void decode(const int32_t *a, struct akv *p) {
  p->q = a[NNW_ATTENTION_KV_Q];
  p->k = a[NNW_ATTENTION_KV_K];
  p->v = a[NNW_ATTENTION_KV_V];
  p->bias = a[NNW_ATTENTION_KV_BIAS];
  p->kmask = a[NNW_ATTENTION_KV_KMASK];
  p->kend = a[NNW_ATTENTION_KV_KEND];
  p->kstart = a[NNW_ATTENTION_KV_KSTART];
  p->lens = a[NNW_ATTENTION_KV_LENS];
  p->sink = a[NNW_ATTENTION_KV_SINK];
  p->y = a[NNW_ATTENTION_KV_Y];
  p->scratch = a[NNW_ATTENTION_KV_SCRATCH];
  memcpy(&p->batch, a + NNW_ATTENTION_KV_BATCH, 7 * sizeof(int32_t));       /* batch .. dv */
  memcpy(&p->q_bs, a + NNW_ATTENTION_KV_Q_BS, 17 * sizeof(int32_t));        /* q_bs .. km_rs */
  memcpy(&p->causal, a + NNW_ATTENTION_KV_CAUSAL, 5 * sizeof(int32_t));     /* causal .. smooth */
  p->scale = nnw_arg_f32(a[NNW_ATTENTION_KV_SCALE]);
  p->softcap = nnw_arg_f32(a[NNW_ATTENTION_KV_SOFTCAP]);
  p->mask_value = nnw_arg_f32(a[NNW_ATTENTION_KV_MASK_VALUE]);
}

/* Rows by GEMM (block) for a prompt, one at a time for a decode step or a local window (whose
 * rows see few keys: 16 of 128 ran 6x faster row by row in wasmtime) */
static int by_block(const struct akv *p) { return p->s > 1 && !(p->causal == 1 && p->window > 0); }

/* scratch bytes: one row of scores row by row; K^T and the [s, t] scores by block */
static uint64_t scratch_bytes(const struct akv *p) {
  uint64_t t = (uint64_t)p->t;
  return nnw_mul(by_block(p) ? nnw_add(nnw_mul((uint64_t)p->d, t), nnw_mul((uint64_t)p->s, t)) : t, 4);
}

int nnw_validate_attention_kv(const int32_t *a, uint32_t arena_bytes) {
  _Static_assert(NNW_ATTENTION_KV_DV - NNW_ATTENTION_KV_BATCH == 6, "ops.def: batch .. dv in a row");
  _Static_assert(NNW_ATTENTION_KV_KM_RS - NNW_ATTENTION_KV_Q_BS == 16, "ops.def: q_bs .. km_rs in a row");
  _Static_assert(NNW_ATTENTION_KV_SMOOTH - NNW_ATTENTION_KV_CAUSAL == 4, "ops.def: causal .. smooth in a row");
  struct akv p;
  decode(a, &p);
  NNW_TRY(nnw_check_positive(&p.batch, 7));
  NNW_TRY(nonneg(&p.q_bs, 17));
  if (p.heads % p.kv_heads || p.causal < 0 || p.causal > 2 || p.c0 < 0 || p.window < -1 || (p.smooth & ~1) ||
      !isfinite(p.scale) || !isfinite(p.mask_value) || !(p.softcap >= 0) || !isfinite(p.softcap))
    return NNW_BAD_ARGS;
  if (p.causal == 1 && p.lens < 0 && (int64_t)p.c0 + p.s > p.t) return NNW_BAD_ARGS;
  uint64_t q_b = nnw_mul(span(p.batch, p.q_bs, p.s, p.q_rs, p.heads, p.q_hs, p.d), 4);
  uint64_t k_b = nnw_mul(span(p.batch, p.k_bs, p.t, p.k_rs, p.kv_heads, p.k_hs, p.d), 4);
  uint64_t v_b = nnw_mul(span(p.batch, p.v_bs, p.t, p.v_rs, p.kv_heads, p.v_hs, p.dv), 4);
  uint64_t m_b = nnw_mul(span(p.batch, p.m_bs, p.s, p.m_rs, p.heads, p.m_hs, p.t), 4);
  uint64_t km_b = nnw_mul(span(p.batch, p.km_bs, p.s, p.km_rs, 1, 0, p.t), 4);
  uint64_t y_b = nnw_mul(span(p.batch, p.y_bs, p.s, p.y_rs, p.heads, p.y_hs, p.dv), 4);
  uint64_t sc_b = scratch_bytes(&p), b4 = nnw_mul((uint64_t)p.batch, 4), h4 = nnw_mul((uint64_t)p.heads, 4);
  NNW_TRY(nnw_check_tensor(p.q, q_b, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(p.k, k_b, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(p.v, v_b, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(p.bias, m_b, arena_bytes, 1, 1));
  NNW_TRY(nnw_check_typed(p.kmask, km_b / 4, NNW_I32, arena_bytes, 1));
  NNW_TRY(nnw_check_typed(p.kend, (uint64_t)p.batch, NNW_I32, arena_bytes, 1));
  NNW_TRY(nnw_check_typed(p.kstart, (uint64_t)p.batch, NNW_I32, arena_bytes, 1));
  NNW_TRY(nnw_check_typed(p.lens, (uint64_t)p.batch, NNW_I32, arena_bytes, 1));
  NNW_TRY(nnw_check_tensor(p.sink, h4, arena_bytes, 1, 1));
  NNW_TRY(nnw_check_tensor(p.y, y_b, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(p.scratch, sc_b, arena_bytes, 0, 1));
  const int32_t in[] = {p.q, p.k, p.v, p.bias, p.kmask, p.kend, p.kstart, p.lens, p.sink, p.scratch};
  const uint64_t in_b[] = {q_b, k_b, v_b, m_b, km_b, b4, b4, b4, h4, sc_b};
  for (int i = 0; i < 10; i++) NNW_TRY(nnw_check_apart(in[i], in_b[i], p.y, y_b, 0));
  for (int i = 0; i < 9; i++) NNW_TRY(nnw_check_apart(in[i], in_b[i], p.scratch, sc_b, 0));
  return NNW_OK;
}

static float dot(const float *a, const float *b, int32_t n) {
  v4 acc = v4_set1(0.0f);
  int32_t c = 0;
  for (; c + 4 <= n; c += 4) acc = v4_add(acc, v4_mul(v4_load(a + c), v4_load(b + c)));
  float sum = v4_hsum(acc);
  for (; c < n; c++) sum += a[c] * b[c];
  return sum;
}

#define PV_VECS 16 /* y's row in registers while V's rows stream by: 64 floats, a Llama head */

/* sc[j] = scale * q.k_j for j in [lo, hi): four keys at a time for independent chains, each key's
 * sum in dot()'s order (the same bits as one at a time) */
static void scores(const float *q, const float *k, ptrdiff_t k_rs, int32_t d, int32_t lo, int32_t hi, float scale,
                   float *sc) {
  int32_t j = lo;
  for (; j + 4 <= hi; j += 4) {
    const float *k0 = k + (size_t)j * k_rs, *k1 = k0 + k_rs, *k2 = k1 + k_rs, *k3 = k2 + k_rs;
    v4 a0 = v4_set1(0.0f), a1 = a0, a2 = a0, a3 = a0;
    int32_t c = 0;
    for (; c + 4 <= d; c += 4) {
      v4 qc = v4_load(q + c);
      a0 = v4_add(a0, v4_mul(qc, v4_load(k0 + c)));
      a1 = v4_add(a1, v4_mul(qc, v4_load(k1 + c)));
      a2 = v4_add(a2, v4_mul(qc, v4_load(k2 + c)));
      a3 = v4_add(a3, v4_mul(qc, v4_load(k3 + c)));
    }
    float s0 = v4_hsum(a0), s1 = v4_hsum(a1), s2 = v4_hsum(a2), s3 = v4_hsum(a3);
    for (; c < d; c++) {
      s0 += q[c] * k0[c];
      s1 += q[c] * k1[c];
      s2 += q[c] * k2[c];
      s3 += q[c] * k3[c];
    }
    sc[j] = s0 * scale;
    sc[j + 1] = s1 * scale;
    sc[j + 2] = s2 * scale;
    sc[j + 3] = s3 * scale;
  }
  for (; j < hi; j++) sc[j] = dot(q, k + (size_t)j * k_rs, d) * scale;
}


/* x[0..len) = softmax with an optional extra logit `sink` in the denominator (has_sink) */
static void softmax_sink(float *x, int32_t len, int has_sink, float sink) {
  int32_t i;
  float mx = nnw_row_max(x, len);
  if (has_sink && sink > mx) mx = sink;
  v4 vmx = v4_set1(mx), sv = v4_set1(0.0f);
  for (i = 0; i + 4 <= len; i += 4) {
    v4 e = nnw_exp_scores(v4_sub(v4_load(x + i), vmx));
    v4_store(x + i, e);
    sv = v4_add(sv, e);
  }
  float sum = v4_hsum(sv);
  for (; i < len; i++) sum += x[i] = v4_lane0(nnw_exp_scores(v4_set1(x[i] - mx)));
  if (has_sink) sum += v4_lane0(nnw_exp_scores(v4_set1(sink - mx)));
  v4 rs = v4_set1(1.0f / sum);
  for (i = 0; i + 4 <= len; i += 4) v4_store(x + i, v4_mul(v4_load(x + i), rs));
  for (; i < len; i++) x[i] *= 1.0f / sum;
}

/* the keys [lo, hi) query row i of batch b may see (n_b: its cached length) */
static void key_range(const struct akv *p, int64_t nb, int32_t i, int32_t *lo, int32_t *hi) {
  *lo = 0;
  *hi = p->t;
  if (p->causal == 1) {
    *hi = (int32_t)(nb + i + 1);
    if (p->window > 0 && *hi - p->window > 0) *lo = *hi - p->window;
  }
}

/* scores sc[lo..hi) of row i (scaled q.k) -> softmax weights in place: softcap, bias, masks, sink */
static void weights(const struct akv *p, const uint8_t *arena, int32_t b, int32_t h, int32_t i, int32_t lo, int32_t hi,
                    float *sc) {
  int32_t n = hi - lo, j;
  float *x = sc + lo;
  if (p->softcap > 0) {
    v4 cap = v4_set1(p->softcap), inv = v4_set1(1.0f / p->softcap);
    for (j = 0; j + 4 <= n; j += 4) v4_store(x + j, v4_mul(cap, nnw_tanh4(v4_mul(v4_load(x + j), inv))));
    for (; j < n; j++) x[j] = p->softcap * v4_lane0(nnw_tanh4(v4_set1(x[j] * (1.0f / p->softcap))));
  }
  if (p->bias >= 0) {
    const float *m = (const float *)(const void *)(arena + p->bias) + (size_t)b * p->m_bs + (size_t)h * p->m_hs +
                     (size_t)i * p->m_rs;
    for (j = lo; j < hi; j++) sc[j] += m[j];
  }
  float mv = p->mask_value;
  if (p->kmask >= 0) {
    const int32_t *km = (const int32_t *)(const void *)(arena + p->kmask) + (size_t)b * p->km_bs + (size_t)i * p->km_rs;
    for (j = lo; j < hi; j++)
      if (km[j] == 0) sc[j] += mv;
  }
  if (p->kend >= 0)
    for (j = lo, n = lens_at(arena, p->kend, b); j < hi; j++)
      if (j >= n) sc[j] += mv;
  if (p->kstart >= 0)
    for (j = lo, n = lens_at(arena, p->kstart, b); j < hi; j++)
      if (j < n) sc[j] += mv;
  if (p->causal == 2)
    for (j = lo; j < hi; j++)
      if (j > p->c0 + i) sc[j] += mv;
  float sink = 0.0f;
  if (p->sink >= 0) memcpy(&sink, arena + p->sink + 4 * (size_t)h, 4);
  softmax_sink(x, hi - lo, p->sink >= 0 || p->smooth, sink);
}

/* one query row (a decode step): dot products with the cached keys, then V's rows weighted */
static void row(const struct akv *p, const uint8_t *arena, int32_t b, int32_t h, int32_t i, int64_t nb,
                float *sc, float *yr) {
  const float *q = (const float *)(const void *)(arena + p->q) + (size_t)b * p->q_bs + (size_t)i * p->q_rs +
                   (size_t)h * p->q_hs;
  int32_t kvh = h / (p->heads / p->kv_heads);
  const float *k = (const float *)(const void *)(arena + p->k) + (size_t)b * p->k_bs + (size_t)kvh * p->k_hs;
  const float *v = (const float *)(const void *)(arena + p->v) + (size_t)b * p->v_bs + (size_t)kvh * p->v_hs;
  int32_t lo, hi, j;
  key_range(p, nb, i, &lo, &hi);
  scores(q, k, p->k_rs, p->d, lo, hi, p->scale, sc);
  weights(p, arena, b, h, i, lo, hi, sc);
  int32_t n = hi - lo;
  float *x = sc + lo;
  int32_t c = 0, d4 = p->dv - p->dv % 4, nv;
  for (; c < d4; c += 4 * nv) {   /* up to PV_VECS vectors of y in registers, V's rows in order */
    nv = (d4 - c) / 4 < PV_VECS ? (d4 - c) / 4 : PV_VECS;
    v4 acc[PV_VECS];
    for (int32_t u = 0; u < nv; u++) acc[u] = v4_set1(0.0f);
    for (j = 0; j < n; j++) {
      v4 pj = v4_set1(x[j]);
      const float *vr = v + (size_t)(lo + j) * p->v_rs + c;
      for (int32_t u = 0; u < nv; u++) acc[u] = v4_add(acc[u], v4_mul(pj, v4_load(vr + 4 * u)));
    }
    for (int32_t u = 0; u < nv; u++) v4_store(yr + c + 4 * u, acc[u]);
  }
  for (; c < p->dv; c++) {
    float acc = 0.0f;
    for (j = 0; j < n; j++) acc += x[j] * v[(size_t)(lo + j) * p->v_rs + c];
    yr[c] = acc;
  }
}

/* s > 1 (a prompt): per kv head K transposed once into scratch, then per query head the [s, t]
 * scores by gemm_nn.c, the weights row by row (zero outside each row's keys) and P V by gemm_nn.c
 * straight into y: the GEMMs' rate instead of one dot product per key */
static void block(const struct akv *p, const uint8_t *arena, int32_t b, int64_t nb, float *kt, float *y,
                  int32_t g0, int32_t g1, float *pbuf) {
  int32_t group = p->heads / p->kv_heads, t = p->t;
  struct nnw_epilogue sc_ep = {p->scale, 0.0f, -INFINITY, INFINITY, NULL, 0, 0};
  struct nnw_epilogue none = {1.0f, 0.0f, -INFINITY, INFINITY, NULL, 0, 0};
  float *sc = kt + (size_t)p->d * t;
  for (int32_t g = g0; g < g1; g++) {
    const float *k = (const float *)(const void *)(arena + p->k) + (size_t)b * p->k_bs + (size_t)g * p->k_hs;
    const float *v = (const float *)(const void *)(arena + p->v) + (size_t)b * p->v_bs + (size_t)g * p->v_hs;
    for (int32_t j = 0; j < t; j++)
      for (int32_t c = 0; c < p->d; c++) kt[(size_t)c * t + j] = k[(size_t)j * p->k_rs + c];
    for (int32_t h = g * group; h < (g + 1) * group; h++) {
      const float *q = (const float *)(const void *)(arena + p->q) + (size_t)b * p->q_bs + (size_t)h * p->q_hs;
      nnw_gemm_nn_buf(p->s, t, p->d, q, p->q_rs, 1, kt, t, sc, t, &sc_ep, pbuf);
      for (int32_t i = 0; i < p->s; i++) {
        float *r = sc + (size_t)i * t;
        int32_t lo, hi;
        key_range(p, nb, i, &lo, &hi);
        weights(p, arena, b, h, i, lo, hi, r);
        memset(r, 0, (size_t)lo * sizeof(float));
        memset(r + hi, 0, (size_t)(t - hi) * sizeof(float));
      }
      nnw_gemm_nn_buf(p->s, p->dv, t, sc, t, 1, v, p->v_rs, y + (size_t)b * p->y_bs + (size_t)h * p->y_hs, p->y_rs,
                      &none, pbuf);
    }
  }
}

/* Threads (threads/split.h): by block, (batch, kv head) pairs split in tiles (a kv head's query
 * heads stay together, on its K^T); row by row, (batch, query row, head) triples. Each unit is
 * computed whole by one worker exactly as on one thread. A helper keeps its scratch in its pack
 * buffer (after the 4 * max(d, t) floats its GEMMs pack A's rows into); ops whose scratch does not
 * fit there stay on the caller, which uses the op's scratch. */
struct akv_job {
  const struct akv *p;
  const uint8_t *arena;
  float *sc, *y;
};

static int32_t akv_pack(const struct akv *p) { return 4 * (p->d > p->t ? p->d : p->t); }

static int32_t akv_threads(const struct akv *p) {
  uint64_t need = scratch_bytes(p) / 4 + (uint64_t)akv_pack(p), t = (uint64_t)p->t;
  if (need > NNW_PACK_A_FLOATS) return 1;
  uint64_t macs = (uint64_t)p->batch * p->s * p->heads * t * (uint64_t)(p->d + p->dv);
  return nnw_split_threads(macs, NNW_SPLIT_MIN_FLOPS, by_block(p) ? p->batch * p->kv_heads : p->batch * p->s * p->heads);
}

static void akv_task(void *ctx, int32_t start, int32_t count, int32_t worker) {
  const struct akv_job *j = ctx;
  const struct akv *p = j->p;
  float *pbuf = nnw_pool_pack_buf(worker), *sc = worker == 0 ? j->sc : pbuf + akv_pack(p);
  for (int32_t u = start; u < start + count; u++) {
    int32_t b = by_block(p) ? u / p->kv_heads : u / (p->s * p->heads);
    int64_t nb = p->lens >= 0 ? (int64_t)lens_at(j->arena, p->lens, b) + p->lens_add : p->c0;
    if (by_block(p)) {
      int32_t g = u % p->kv_heads;
      block(p, j->arena, b, nb, sc, j->y, g, g + 1, pbuf);
    } else {
      int32_t i = u / p->heads % p->s, h = u % p->heads;
      row(p, j->arena, b, h, i, nb, sc, j->y + (size_t)b * p->y_bs + (size_t)i * p->y_rs + (size_t)h * p->y_hs);
    }
  }
}

void nnw_run_attention_kv(const int32_t *a, uint8_t *arena) {
  struct akv p;
  decode(a, &p);
  for (int32_t b = 0; p.causal == 1 && p.lens >= 0 && b < p.batch; b++) {
    int64_t nb = (int64_t)lens_at(arena, p.lens, b) + p.lens_add;
    if (nb < 0 || nb + p.s > p.t) {
      nnw_run_fail(NNW_BAD_INDEX);
      return;
    }
  }
  float *sc = nnw_f32_at(arena, p.scratch), *y = nnw_f32_at(arena, p.y);
  struct akv_job job = {&p, arena, sc, y};
  int32_t threads = akv_threads(&p);
  if (threads > 1) {
    int32_t range = by_block(&p) ? p.batch * p.kv_heads : p.batch * p.s * p.heads;
    nnw_parallel_for(range, nnw_split_tile(range, threads), akv_task, &job);
    return;
  }
  for (int32_t b = 0; b < p.batch; b++) {
    int64_t nb = p.lens >= 0 ? (int64_t)lens_at(arena, p.lens, b) + p.lens_add : p.c0;
    if (by_block(&p)) {
      block(&p, arena, b, nb, sc, y, 0, p.kv_heads, nnw_pool_pack_buf(0));
      continue;
    }
    for (int32_t i = 0; i < p.s; i++)
      for (int32_t h = 0; h < p.heads; h++)
        row(&p, arena, b, h, i, nb, sc, y + (size_t)b * p.y_bs + (size_t)i * p.y_rs + (size_t)h * p.y_hs);
  }
}
