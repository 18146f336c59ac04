/* attention: multi-head scaled dot-product attention in one op, per batch and head: K's head
 * transposed once into scratch, the scores Q K^T * scale + mask computed by gemm_nn.c's core
 * (the mask as its C epilogue) into one [s, l] block that stays in cache, a softmax per row, and
 * the product with V written straight into y's [s, heads*d] layout. Q, K and V are read in place
 * at a row stride of heads*d: none of the model's Reshape/Transpose copies remain. */
#include <math.h>

#include "internal.h"
#include "simd.h"
#include "linalg/exp_scores.h"
#include "linalg/pack_a.h"
#include "threads/split.h"

struct attention {
  int32_t q, k, v, mask, y, scratch, batch, heads, s, l, d, m_bs, m_hs, m_rs;
  float scale;
};

static void decode(const int32_t *v, struct attention *p) {
  p->q = v[NNW_ATTENTION_Q];
  p->k = v[NNW_ATTENTION_K];
  p->v = v[NNW_ATTENTION_V];
  p->mask = v[NNW_ATTENTION_MASK];
  p->y = v[NNW_ATTENTION_Y];
  p->scratch = v[NNW_ATTENTION_SCRATCH];
  p->batch = v[NNW_ATTENTION_BATCH];
  p->heads = v[NNW_ATTENTION_HEADS];
  p->s = v[NNW_ATTENTION_S];
  p->l = v[NNW_ATTENTION_L];
  p->d = v[NNW_ATTENTION_D];
  p->m_bs = v[NNW_ATTENTION_M_BS];
  p->m_hs = v[NNW_ATTENTION_M_HS];
  p->m_rs = v[NNW_ATTENTION_M_RS];
  p->scale = nnw_arg_f32(v[NNW_ATTENTION_SCALE]);
}

int nnw_validate_attention(const int32_t *args, uint32_t arena_bytes) {
  struct attention p;
  decode(args, &p);
  int32_t dims[] = {p.batch, p.heads, p.s, p.l, p.d};
  NNW_TRY(nnw_check_positive(dims, 5));
  if (p.m_bs < 0 || p.m_hs < 0 || p.m_rs < 0 || !isfinite(p.scale)) return NNW_BAD_ARGS;
  uint64_t b = (uint64_t)p.batch, h = (uint64_t)p.heads, s = (uint64_t)p.s, l = (uint64_t)p.l,
           d = (uint64_t)p.d;
  uint64_t hd = nnw_mul(h, d);
  uint64_t q_bytes = nnw_mul(nnw_mul(b * 4, s), hd), kv_bytes = nnw_mul(nnw_mul(b * 4, l), hd);
  uint64_t m_elems = nnw_add(nnw_add(nnw_add(nnw_mul(b - 1, (uint64_t)p.m_bs), nnw_mul(h - 1, (uint64_t)p.m_hs)),
                                     nnw_mul(s - 1, (uint64_t)p.m_rs)), l);
  uint64_t scratch = nnw_mul(nnw_add(nnw_mul(d, l), nnw_mul(s, l)), 4);
  NNW_TRY(nnw_check_tensor(p.q, q_bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(p.k, kv_bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(p.v, kv_bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(p.mask, nnw_mul(m_elems, 4), arena_bytes, 1, 1));
  NNW_TRY(nnw_check_tensor(p.y, q_bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(p.scratch, scratch, arena_bytes, 0, 1));
  const int32_t in[] = {p.q, p.k, p.v, p.mask, p.scratch};
  const uint64_t in_bytes[] = {q_bytes, kv_bytes, kv_bytes, nnw_mul(m_elems, 4), scratch};
  for (int i = 0; i < 5; i++) NNW_TRY(nnw_check_apart(in[i], in_bytes[i], p.y, q_bytes, 0));
  for (int i = 0; i < 4; i++) NNW_TRY(nnw_check_apart(in[i], in_bytes[i], p.scratch, scratch, 0));
  return NNW_OK;
}

/* kt[c][j] = kh[j][c] for j < l, c < d (kh's rows at stride hd): 4x4 blocks by v128 shuffles, the
 * edges one by one */
static void transpose_head(const float *kh, ptrdiff_t hd, int32_t l, int32_t d, float *kt) {
  int32_t j = 0;
  for (; j + 4 <= l; j += 4) {
    const float *r0 = kh + (size_t)j * hd, *r1 = r0 + hd, *r2 = r1 + hd, *r3 = r2 + hd;
    int32_t c = 0;
    for (; c + 4 <= d; c += 4) {
      v4 x0 = v4_load(r0 + c), x1 = v4_load(r1 + c), x2 = v4_load(r2 + c), x3 = v4_load(r3 + c);
      v4 t0 = v4_unpacklo(x0, x1), t1 = v4_unpackhi(x0, x1), t2 = v4_unpacklo(x2, x3), t3 = v4_unpackhi(x2, x3);
      float *o = kt + (size_t)c * l + j;
      v4_store(o, v4_unpacklo64(t0, t2));
      v4_store(o + l, v4_unpackhi64(t0, t2));
      v4_store(o + 2 * (size_t)l, v4_unpacklo64(t1, t3));
      v4_store(o + 3 * (size_t)l, v4_unpackhi64(t1, t3));
    }
    for (; c < d; c++)
      for (int32_t r = 0; r < 4; r++) kt[(size_t)c * l + j + r] = kh[(size_t)(j + r) * hd + c];
  }
  for (; j < l; j++)
    for (int32_t c = 0; c < d; c++) kt[(size_t)c * l + j] = kh[(size_t)j * hd + c];
}

/* softmax of one row of scores in place (reduce/softmax.c's row passes, with exp_scores) */
static void softmax_scores(float *x, int32_t len) {
  int32_t i;
  float mx = nnw_row_max(x, len);
  v4 vmx = v4_set1(mx), sv = v4_set1(0.0f);
  for (i = 0; i + 4 <= len; i += 4) {
    v4 e = nnw_exp_scores(v4_sub(v4_load(x + i), vmx));
    v4_store(x + i, e);
    sv = v4_add(sv, e);
  }
  float sum = v4_hsum(sv);
  for (; i < len; i++) sum += x[i] = v4_lane0(nnw_exp_scores(v4_set1(x[i] - mx)));
  v4 rs = v4_set1(1.0f / sum);
  for (i = 0; i + 4 <= len; i += 4) v4_store(x + i, v4_mul(v4_load(x + i), rs));
  for (; i < len; i++) x[i] *= 1.0f / sum;
}

/* Threads (threads/split.h): (batch, head) pairs split in tiles, each pair computed whole by one
 * worker exactly as on one thread. A helper keeps K^T and the scores in its pack buffer, after the
 * 4 * max(d, l) floats its GEMMs pack A's rows into (ops whose head does not fit there stay on the
 * caller, which uses the op's scratch). */
struct att_job {
  const struct attention *p;
  const float *q, *k, *v, *mask;
  float *y, *scratch;
};

static void att_heads(const struct att_job *j, int32_t start, int32_t count, float *kt, float *pbuf) {
  const struct attention *p = j->p;
  float *scores = kt + (size_t)p->d * p->l;
  ptrdiff_t hd = (ptrdiff_t)p->heads * p->d;
  struct nnw_epilogue none = {1.0f, 0.0f, -INFINITY, INFINITY, NULL, 0, 0};
  for (int32_t bh = start; bh < start + count; bh++) {
    int32_t b = bh / p->heads, h = bh % p->heads;
    const float *qh = j->q + (size_t)b * p->s * hd + (size_t)h * p->d;
    const float *kh = j->k + (size_t)b * p->l * hd + (size_t)h * p->d;
    const float *vh = j->v + (size_t)b * p->l * hd + (size_t)h * p->d;
    transpose_head(kh, hd, p->l, p->d, kt);
    struct nnw_epilogue ep = {p->scale, 1.0f, -INFINITY, INFINITY, NULL, p->m_rs, 1};
    if (j->mask != NULL) ep.c = j->mask + (size_t)b * p->m_bs + (size_t)h * p->m_hs;
    nnw_gemm_nn_buf(p->s, p->l, p->d, qh, hd, 1, kt, p->l, scores, p->l, &ep, pbuf);
    for (int32_t i = 0; i < p->s; i++) softmax_scores(scores + (size_t)i * p->l, p->l);
    nnw_gemm_nn_buf(p->s, p->d, p->l, scores, p->l, 1, vh, hd, j->y + (size_t)b * p->s * hd + (size_t)h * p->d, hd,
                    &none, pbuf);
  }
}

static void att_task(void *ctx, int32_t start, int32_t count, int32_t worker) {
  const struct att_job *j = ctx;
  float *pbuf = nnw_pool_pack_buf(worker);
  int32_t pack = 4 * (j->p->d > j->p->l ? j->p->d : j->p->l);
  att_heads(j, start, count, worker == 0 ? j->scratch : pbuf + pack, pbuf);
}

void nnw_run_attention(const int32_t *args, uint8_t *arena) {
  struct attention p;
  decode(args, &p);
  struct att_job job = {&p, nnw_f32_at(arena, p.q), nnw_f32_at(arena, p.k), nnw_f32_at(arena, p.v),
                        nnw_f32_at(arena, p.mask), nnw_f32_at(arena, p.y), nnw_f32_at(arena, p.scratch)};
  int32_t pairs = p.batch * p.heads;
  uint64_t fits = 4 * (uint64_t)(p.d > p.l ? p.d : p.l) + (uint64_t)(p.d + p.s) * p.l;
  uint64_t macs = (uint64_t)pairs * p.s * p.l * 2 * p.d;
  int32_t threads = fits <= NNW_PACK_A_FLOATS ? nnw_split_threads(macs, NNW_SPLIT_MIN_FLOPS, pairs) : 1;
  if (threads > 1) nnw_parallel_for(pairs, nnw_split_tile(pairs, threads), att_task, &job);
  else att_heads(&job, 0, pairs, job.scratch, nnw_pool_pack_buf(0));
}
