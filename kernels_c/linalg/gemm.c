/* gemm (ONNX Gemm: transposes, alpha/beta, broadcast C, fused clamp) and batched matmul.
 * Both run on the GEMM core of gemm_nn.c, except gemm with trans_b = 1: B is then [N, K] and
 * each output is a dot product along contiguous K, as in a classifier's Linear layer. */
#include <math.h>

#include "internal.h"
#include "threads/split.h"
#include "simd.h"

struct gemm {
  int32_t a, b, c, y, m, n, k, trans_a, trans_b, c_rs, c_cs;
  float alpha, beta, lo, hi;
};

static void gemm_decode(const int32_t *v, struct gemm *p) {
  p->a = v[NNW_GEMM_A];
  p->b = v[NNW_GEMM_B];
  p->c = v[NNW_GEMM_C];
  p->y = v[NNW_GEMM_Y];
  p->m = v[NNW_GEMM_M];
  p->n = v[NNW_GEMM_N];
  p->k = v[NNW_GEMM_K];
  p->trans_a = v[NNW_GEMM_TRANS_A];
  p->trans_b = v[NNW_GEMM_TRANS_B];
  p->alpha = nnw_arg_f32(v[NNW_GEMM_ALPHA]);
  p->beta = nnw_arg_f32(v[NNW_GEMM_BETA]);
  p->c_rs = v[NNW_GEMM_C_RS];
  p->c_cs = v[NNW_GEMM_C_CS];
  p->lo = nnw_arg_f32(v[NNW_GEMM_ACT_MIN]);
  p->hi = nnw_arg_f32(v[NNW_GEMM_ACT_MAX]);
}

int nnw_validate_gemm(const int32_t *args, uint32_t arena_bytes) {
  struct gemm p;
  gemm_decode(args, &p);
  int32_t dims[] = {p.m, p.n, p.k};
  NNW_TRY(nnw_check_positive(dims, 3));
  if ((p.trans_a | p.trans_b) & ~1 || p.c_rs < 0 || p.c_cs < 0 || !(p.lo <= p.hi))
    return NNW_BAD_ARGS;
  uint64_t m = (uint64_t)p.m, n = (uint64_t)p.n, k = (uint64_t)p.k;
  uint64_t c_elems = nnw_add(nnw_add(nnw_mul(m - 1, (uint64_t)p.c_rs),
                                     nnw_mul(n - 1, (uint64_t)p.c_cs)), 1);
  NNW_TRY(nnw_check_tensor(p.a, nnw_mul(m * 4, k), arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(p.b, nnw_mul(k * 4, n), arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(p.c, nnw_mul(c_elems, 4), arena_bytes, 1, 1));
  NNW_TRY(nnw_check_tensor(p.y, nnw_mul(m * 4, n), arena_bytes, 0, 1));
  NNW_TRY(nnw_check_apart(p.a, nnw_mul(m * 4, k), p.y, nnw_mul(m * 4, n), 0));
  NNW_TRY(nnw_check_apart(p.b, nnw_mul(k * 4, n), p.y, nnw_mul(m * 4, n), 0));
  NNW_TRY(nnw_check_apart(p.c, nnw_mul(c_elems, 4), p.y, nnw_mul(m * 4, n), 0));
  return NNW_OK;
}

static float finish(float s, int32_t i, int32_t j, const struct nnw_epilogue *ep) {
  s *= ep->alpha;
  if (ep->c != NULL) s += ep->beta * ep->c[i * ep->c_rs + j * ep->c_cs];
  s = s < ep->lo ? ep->lo : s;
  return ep->hi < s ? ep->hi : s;
}

static float dot(const float *a, const float *b, int32_t k) {
  v4 acc0 = v4_set1(0.0f), acc1 = acc0;
  int32_t kk = 0;
  for (; kk + 8 <= k; kk += 8) {
    acc0 = v4_fmadd(acc0, v4_load(a + kk), v4_load(b + kk));
    acc1 = v4_fmadd(acc1, v4_load(a + kk + 4), v4_load(b + kk + 4));
  }
  float s = v4_hsum(v4_add(acc0, acc1));
  for (; kk < k; kk++) s += a[kk] * b[kk];
  return s;
}

/* y[i, j] = dot(a row i, b row j) for columns [j0, j1) of row i (j0 a multiple of 4); four rows of
 * b share each load of a */
static void gemm_nt_row(const struct gemm *p, const float *a, const float *b, float *y,
                        const struct nnw_epilogue *ep, int32_t i, int32_t j0, int32_t j1) {
  int32_t k = p->k;
  const float *ai = a + (size_t)i * k;
  int32_t j = j0;
  for (; j + 4 <= j1; j += 4) {
    const float *b0 = b + (size_t)j * k, *b1 = b0 + k, *b2 = b1 + k, *b3 = b2 + k;
    v4 s0 = v4_set1(0.0f), s1 = s0, s2 = s0, s3 = s0;
    int32_t kk = 0;
    for (; kk + 4 <= k; kk += 4) {
      v4 av = v4_load(ai + kk);
      s0 = v4_fmadd(s0, av, v4_load(b0 + kk));
      s1 = v4_fmadd(s1, av, v4_load(b1 + kk));
      s2 = v4_fmadd(s2, av, v4_load(b2 + kk));
      s3 = v4_fmadd(s3, av, v4_load(b3 + kk));
    }
    float t0 = v4_hsum(s0), t1 = v4_hsum(s1), t2 = v4_hsum(s2), t3 = v4_hsum(s3);
    for (; kk < k; kk++) {
      t0 += ai[kk] * b0[kk];
      t1 += ai[kk] * b1[kk];
      t2 += ai[kk] * b2[kk];
      t3 += ai[kk] * b3[kk];
    }
    float *yi = y + (size_t)i * p->n + j;
    yi[0] = finish(t0, i, j, ep);
    yi[1] = finish(t1, i, j + 1, ep);
    yi[2] = finish(t2, i, j + 2, ep);
    yi[3] = finish(t3, i, j + 3, ep);
  }
  for (; j < j1; j++) y[(size_t)i * p->n + j] = finish(dot(ai, b + (size_t)j * k, k), i, j, ep);
}

/* both transposed: rare in exported models, kept simple */
static void gemm_tt_row(const struct gemm *p, const float *a, const float *b, float *y,
                        const struct nnw_epilogue *ep, int32_t i, int32_t j0, int32_t j1) {
  for (int32_t j = j0; j < j1; j++) {
    float s = 0.0f;
    for (int32_t kk = 0; kk < p->k; kk++) s += a[(size_t)kk * p->m + i] * b[(size_t)j * p->k + kk];
    y[(size_t)i * p->n + j] = finish(s, i, j, ep);
  }
}

/* Threads (threads/split.h): NT and TT over units of (row, four columns), row-major, each output
 * computed by the code one thread uses for it (whole groups of four, the row's tail last): N
 * threads give the bits of one. A one-row product (a classifier's Linear) splits by its columns. */
struct nt_job {
  const struct gemm *p;
  const float *a, *b;
  float *y;
  const struct nnw_epilogue *ep;
  int32_t quads;
};

static void nt_task(void *ctx, int32_t start, int32_t count, int32_t worker) {
  const struct nt_job *j = ctx;
  const struct gemm *p = j->p;
  (void)worker;
  for (int32_t u = start; u < start + count;) {
    int32_t i = u / j->quads, q0 = u % j->quads;
    int32_t q1 = j->quads < q0 + (start + count - u) ? j->quads : q0 + (start + count - u);
    int32_t j1 = 4 * q1 < p->n ? 4 * q1 : p->n;
    if (p->trans_a) gemm_tt_row(p, j->a, j->b, j->y, j->ep, i, 4 * q0, j1);
    else gemm_nt_row(p, j->a, j->b, j->y, j->ep, i, 4 * q0, j1);
    u += q1 - q0;
  }
}

static void gemm_nt_split(const struct gemm *p, const float *a, const float *b, float *y,
                          const struct nnw_epilogue *ep) {
  int32_t quads = (p->n + 3) / 4;
  uint64_t units = (uint64_t)p->m * (uint64_t)quads;
  struct nt_job job = {p, a, b, y, ep, quads};
  int32_t threads = units <= INT32_MAX
                        ? nnw_split_threads((uint64_t)p->m * p->n * p->k, NNW_SPLIT_MIN_FLOPS, (int32_t)units) : 1;
  if (threads > 1) {
    nnw_parallel_for((int32_t)units, nnw_split_tile((int32_t)units, threads), nt_task, &job);
    return;
  }
  for (int32_t i = 0; i < p->m; i++) {
    if (p->trans_a) gemm_tt_row(p, a, b, y, ep, i, 0, p->n);
    else gemm_nt_row(p, a, b, y, ep, i, 0, p->n);
  }
}

void nnw_run_gemm(const int32_t *args, uint8_t *arena) {
  struct gemm p;
  gemm_decode(args, &p);
  const float *a = nnw_f32_at(arena, p.a), *b = nnw_f32_at(arena, p.b);
  float *y = nnw_f32_at(arena, p.y);
  struct nnw_epilogue ep = {p.alpha, p.beta, p.lo, p.hi, nnw_f32_at(arena, p.c), p.c_rs, p.c_cs};
  if (!p.trans_b) {
    ptrdiff_t a_rs = p.trans_a ? 1 : p.k, a_cs = p.trans_a ? p.m : 1;
    nnw_gemm_nn_split(p.m, p.n, p.k, a, a_rs, a_cs, b, p.n, y, p.n, &ep);   /* threads/split.h */
  } else {
    gemm_nt_split(&p, a, b, y, &ep);
  }
}

struct matmul {
  int32_t a, b, y, batch, m, n, k, a_bs, b_bs;
};

static void matmul_decode(const int32_t *v, struct matmul *p) {
  p->a = v[NNW_MATMUL_A];
  p->b = v[NNW_MATMUL_B];
  p->y = v[NNW_MATMUL_Y];
  p->batch = v[NNW_MATMUL_BATCH];
  p->m = v[NNW_MATMUL_M];
  p->n = v[NNW_MATMUL_N];
  p->k = v[NNW_MATMUL_K];
  p->a_bs = v[NNW_MATMUL_A_BS];
  p->b_bs = v[NNW_MATMUL_B_BS];
}

int nnw_validate_matmul(const int32_t *args, uint32_t arena_bytes) {
  struct matmul p;
  matmul_decode(args, &p);
  int32_t dims[] = {p.batch, p.m, p.n, p.k};
  NNW_TRY(nnw_check_positive(dims, 4));
  if (p.a_bs < 0 || p.b_bs < 0) return NNW_BAD_ARGS;
  uint64_t last = (uint64_t)p.batch - 1, m = (uint64_t)p.m, n = (uint64_t)p.n, k = (uint64_t)p.k;
  uint64_t a_elems = nnw_add(nnw_mul(last, (uint64_t)p.a_bs), nnw_mul(m, k));
  uint64_t b_elems = nnw_add(nnw_mul(last, (uint64_t)p.b_bs), nnw_mul(k, n));
  NNW_TRY(nnw_check_tensor(p.a, nnw_mul(a_elems, 4), arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(p.b, nnw_mul(b_elems, 4), arena_bytes, 0, 1));
  uint64_t y_bytes = nnw_mul(nnw_mul(last + 1, m * 4), n);
  NNW_TRY(nnw_check_tensor(p.y, y_bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_apart(p.a, nnw_mul(a_elems, 4), p.y, y_bytes, 0));
  NNW_TRY(nnw_check_apart(p.b, nnw_mul(b_elems, 4), p.y, y_bytes, 0));
  return NNW_OK;
}

/* Threads (threads/split.h): batched products split by batch, each product computed whole by one
 * worker as on one thread */
struct batch_job {
  const struct matmul *p;
  const float *a, *b;
  float *y;
};

static void batch_task(void *ctx, int32_t start, int32_t count, int32_t worker) {
  const struct batch_job *j = ctx;
  const struct matmul *p = j->p;
  struct nnw_epilogue ep = {1.0f, 0.0f, -INFINITY, INFINITY, NULL, 0, 0};
  for (int32_t bt = start; bt < start + count; bt++)
    nnw_gemm_nn_buf(p->m, p->n, p->k, j->a + (size_t)bt * p->a_bs, p->k, 1, j->b + (size_t)bt * p->b_bs, p->n,
                    j->y + (size_t)bt * p->m * p->n, p->n, &ep, nnw_pool_pack_buf(worker));
}

void nnw_run_matmul(const int32_t *args, uint8_t *arena) {
  struct matmul p;
  matmul_decode(args, &p);
  const float *a = nnw_f32_at(arena, p.a), *b = nnw_f32_at(arena, p.b);
  float *y = nnw_f32_at(arena, p.y);
  struct nnw_epilogue ep = {1.0f, 0.0f, -INFINITY, INFINITY, NULL, 0, 0};
  struct batch_job job = {&p, a, b, y};
  int32_t threads = nnw_split_threads((uint64_t)p.batch * p.m * p.n * p.k, NNW_SPLIT_MIN_FLOPS, p.batch);
  if (threads > 1 && p.batch >= 2 * threads) {   /* whole products per tile */
    nnw_parallel_for(p.batch, nnw_split_tile(p.batch, threads), batch_task, &job);
    return;
  }
  for (int32_t bt = 0; bt < p.batch; bt++)   /* few products: each split by rows when it pays */
    nnw_gemm_nn_split(p.m, p.n, p.k, a + (size_t)bt * p.a_bs, p.k, 1, b + (size_t)bt * p.b_bs, p.n,
                      y + (size_t)bt * p.m * p.n, p.n, &ep);
}
