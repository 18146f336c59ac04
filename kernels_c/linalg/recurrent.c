/* recurrent: one direction of an ONNX RNN (tanh), GRU or LSTM layer, default activations.
 * Each run first transposes W and R into scratch with every gate padded to hp = hidden rounded
 * up to 4 columns (zeros), so the GEMMs write gate blocks that v4 can walk without tails; then
 * one GEMM makes X W^T + Wb for every step at once, and each step does h R^T + Rb (one more,
 * narrower product for GRU's reset-before-product form) and the gate math with v4. The transposes
 * cost one pass over the weights, a small part of a sequence's products. */
#include <math.h>

#include "act4.h"
#include "internal.h"

enum { RNN, GRU, GRU_LBR, LSTM, LSTM_COUPLED, KINDS };

struct rec {
  int32_t kind, x, w, r, b, p, h0, c0, y, yh, yc, scratch;
  int32_t seq, batch, input, hidden, reverse, x_ts, x_bs, y_ts, y_bs, h_bs;
  float clip;
};

static void decode(const int32_t *a, struct rec *q) {
  q->kind = a[NNW_RECURRENT_KIND];
  q->x = a[NNW_RECURRENT_X];
  q->w = a[NNW_RECURRENT_W];
  q->r = a[NNW_RECURRENT_R];
  q->b = a[NNW_RECURRENT_B];
  q->p = a[NNW_RECURRENT_P];
  q->h0 = a[NNW_RECURRENT_H0];
  q->c0 = a[NNW_RECURRENT_C0];
  q->y = a[NNW_RECURRENT_Y];
  q->yh = a[NNW_RECURRENT_YH];
  q->yc = a[NNW_RECURRENT_YC];
  q->scratch = a[NNW_RECURRENT_SCRATCH];
  q->seq = a[NNW_RECURRENT_SEQ];
  q->batch = a[NNW_RECURRENT_BATCH];
  q->input = a[NNW_RECURRENT_INPUT];
  q->hidden = a[NNW_RECURRENT_HIDDEN];
  q->reverse = a[NNW_RECURRENT_REVERSE];
  q->x_ts = a[NNW_RECURRENT_X_TS];
  q->x_bs = a[NNW_RECURRENT_X_BS];
  q->y_ts = a[NNW_RECURRENT_Y_TS];
  q->y_bs = a[NNW_RECURRENT_Y_BS];
  q->h_bs = a[NNW_RECURRENT_H_BS];
  q->clip = nnw_arg_f32(a[NNW_RECURRENT_CLIP]);
}

static int32_t gates(int32_t kind) { return kind == RNN ? 1 : kind <= GRU_LBR ? 3 : 4; }
static int is_lstm(int32_t kind) { return kind >= LSTM; }

/* where each scratch block starts, in floats (hp: hidden rounded up to 4) */
struct layout {
  uint64_t wt, rt, xw, hr, bias, peep, h, c, rh, total;
};

static struct layout plan_scratch(int32_t kind, int32_t seq, int32_t batch, int32_t input,
                                  int32_t hidden) {
  uint64_t hp = ((uint64_t)hidden + 3) / 4 * 4, ghp = nnw_mul(hp, (uint64_t)gates(kind));
  uint64_t rows = hp * (uint64_t)batch;
  struct layout l;
  l.wt = 0;
  l.rt = nnw_mul((uint64_t)input, ghp);
  l.xw = nnw_add(l.rt, nnw_mul((uint64_t)hidden, ghp));
  l.hr = nnw_add(l.xw, nnw_mul(nnw_mul((uint64_t)seq, (uint64_t)batch), ghp));
  l.bias = nnw_add(l.hr, nnw_mul((uint64_t)batch, ghp));
  l.peep = nnw_add(l.bias, nnw_mul(2, ghp));
  l.h = nnw_add(l.peep, nnw_mul(3, hp));
  l.c = nnw_add(l.h, rows);
  l.rh = nnw_add(l.c, rows);
  l.total = nnw_add(l.rh, rows);
  return l;
}

static int64_t scratch_bytes(int32_t kind, int32_t seq, int32_t batch, int32_t input,
                             int32_t hidden) {
  int32_t pos[] = {seq, batch, input, hidden};
  if (kind < 0 || kind >= KINDS || nnw_check_positive(pos, 4)) return -1;
  uint64_t floats = plan_scratch(kind, seq, batch, input, hidden).total;
  return floats * 4 > INT32_MAX ? -1 : (int64_t)(floats * 4);
}

NNW_EXPORT int32_t nnw_recurrent_scratch_bytes(int32_t kind, int32_t seq, int32_t batch,
                                               int32_t input, int32_t hidden) {
  return (int32_t)scratch_bytes(kind, seq, batch, input, hidden);
}

/* bytes spanned by `rows` rows of `count` floats at element stride `stride` (and `outer` blocks
 * of those at `outer_stride`) */
static uint64_t span(int32_t outer, int32_t outer_stride, int32_t rows, int32_t stride,
                     int32_t count) {
  uint64_t last = nnw_add(nnw_mul((uint64_t)(outer - 1), (uint64_t)outer_stride),
                          nnw_mul((uint64_t)(rows - 1), (uint64_t)stride));
  return nnw_mul(nnw_add(last, (uint64_t)count), 4);
}

int nnw_validate_recurrent(const int32_t *args, uint32_t arena_bytes) {
  struct rec q;
  decode(args, &q);
  int64_t scratch = scratch_bytes(q.kind, q.seq, q.batch, q.input, q.hidden);
  if (scratch < 0 || (q.reverse != 0 && q.reverse != 1) || !(q.clip > 0.0f)) return NNW_BAD_ARGS;
  if (q.x_ts < 0 || q.x_bs < 0 || q.y_ts < 0 || q.y_bs < 0 || q.h_bs < 0) return NNW_BAD_ARGS;
  if (!is_lstm(q.kind) && (q.p != -1 || q.c0 != -1 || q.yc != -1)) return NNW_BAD_ARGS;
  uint64_t gh = (uint64_t)gates(q.kind) * (uint64_t)q.hidden;
  int32_t bt = q.batch, hid = q.hidden;
  const int32_t at[] = {q.x, q.w, q.r, q.b, q.p, q.h0, q.c0, q.y, q.yh, q.yc, q.scratch};
  const uint64_t size[] = {
      span(q.seq, q.x_ts, bt, q.x_bs, q.input),
      nnw_mul(nnw_mul(gh, (uint64_t)q.input), 4),
      nnw_mul(nnw_mul(gh, (uint64_t)hid), 4),
      nnw_mul(gh, 8),
      (uint64_t)hid * 12,
      span(1, 0, bt, q.h_bs, hid),
      span(1, 0, bt, q.h_bs, hid),
      span(q.seq, q.y_ts, bt, q.y_bs, hid),
      span(1, 0, bt, q.h_bs, hid),
      span(1, 0, bt, q.h_bs, hid),
      (uint64_t)scratch};
  enum { N = 11, FIRST_OUT = 7, REQUIRED_IN = 3 };
  for (int i = 0; i < N; i++)
    NNW_TRY(nnw_check_tensor(at[i], size[i], arena_bytes, i >= REQUIRED_IN && i != N - 1, 1));
  for (int i = 0; i < N; i++) /* outputs and scratch apart from everything else */
    for (int j = i + 1; j < N; j++)
      if (j >= FIRST_OUT) NNW_TRY(nnw_check_apart(at[i], size[i], at[j], size[j], 0));
  return NNW_OK;
}

/* dst[k*ld + g*hp + u] = src[(g*hidden + u)*cols + k]: a gate-padded transpose, pads zero */
static void transpose_gates(const float *src, int32_t g_count, int32_t hidden, int32_t hp,
                            int32_t cols, float *dst) {
  int32_t ld = g_count * hp;
  for (int32_t k = 0; k < cols; k++) {
    float *row = dst + (size_t)k * ld;
    for (int32_t g = 0; g < g_count; g++) {
      const float *s = src + (size_t)g * hidden * cols + k;
      float *d = row + g * hp;
      for (int32_t u = 0; u < hidden; u++) d[u] = s[(size_t)u * cols];
      for (int32_t u = hidden; u < hp; u++) d[u] = 0.0f;
    }
  }
}

/* copies `count` floats per gate from src (gate stride `stride`) into dst (gate stride hp),
 * zeros elsewhere; src NULL gives zeros */
static void pad_gates(const float *src, int32_t g_count, int32_t count, int32_t stride, int32_t hp,
                      float *dst) {
  for (int32_t g = 0; g < g_count; g++)
    for (int32_t u = 0; u < hp; u++)
      dst[g * hp + u] = src && u < count ? src[g * stride + u] : 0.0f;
}

static void load_state(const float *src, int32_t batch, int32_t h_bs, int32_t hidden, int32_t hp,
                       float *dst) {
  for (int32_t bt = 0; bt < batch; bt++)
    for (int32_t u = 0; u < hp; u++)
      dst[bt * hp + u] = src && u < hidden ? src[(size_t)bt * h_bs + u] : 0.0f;
}

static void store_rows(const float *src, int32_t batch, int32_t hp, int32_t hidden, float *dst,
                       int32_t stride) {
  for (int32_t bt = 0; bt < batch; bt++)
    memcpy(dst + (size_t)bt * stride, src + (size_t)bt * hp, sizeof(float) * (size_t)hidden);
}

/* y[bt*ldy + j] = c[j] + sum_k a[bt*lda + k] * b[k*ldb + j] for j < n (a multiple of 4): the
 * product of a step with fewer than four batch rows. The GEMM's 4x8 tile holds only two
 * accumulators per row, so with one row the add latency bounds it; eight independent ones here. */
static void step_product(int32_t rows, int32_t n, int32_t k, const float *a, int32_t lda,
                         const float *b, int32_t ldb, const float *c, float *y, int32_t ldy) {
  for (int32_t bt = 0; bt < rows; bt++) {
    const float *ar = a + (size_t)bt * lda;
    float *yr = y + (size_t)bt * ldy;
    int32_t j = 0;
    for (; j + 32 <= n; j += 32) {
      v4 acc[8];
      for (int i = 0; i < 8; i++) acc[i] = v4_load(c + j + 4 * i);
      const float *bp = b + j;
      for (int32_t kk = 0; kk < k; kk++, bp += ldb) {
        v4 av = v4_load1(ar + kk);
        for (int i = 0; i < 8; i++) acc[i] = v4_madd(acc[i], av, v4_load(bp + 4 * i));
      }
      for (int i = 0; i < 8; i++) v4_store(yr + j + 4 * i, acc[i]);
    }
    for (; j < n; j += 4) {
      v4 acc = v4_load(c + j);
      const float *bp = b + j;
      for (int32_t kk = 0; kk < k; kk++, bp += ldb) acc = v4_madd(acc, v4_load1(ar + kk), v4_load(bp));
      v4_store(yr + j, acc);
    }
  }
}

/* y = a b + c over rows of a step (c a bias row, never absent: zeros in scratch) */
static void product(int32_t rows, int32_t n, int32_t k, const float *a, int32_t lda, const float *b,
                    int32_t ldb, const float *c, float *y, int32_t ldy) {
  if (rows < 4) {
    step_product(rows, n, k, a, lda, b, ldb, c, y, ldy);
  } else {
    struct nnw_epilogue ep = {1.0f, 1.0f, -INFINITY, INFINITY, c, 0, 1};
    nnw_gemm_nn(rows, n, k, a, lda, 1, b, ldb, y, ldy, &ep);
  }
}

void nnw_run_recurrent(const int32_t *args, uint8_t *arena) {
  struct rec q;
  decode(args, &q);
  int32_t g_count = gates(q.kind), hid = q.hidden, hp = (hid + 3) / 4 * 4, ghp = g_count * hp;
  int32_t batch = q.batch;
  struct layout l = plan_scratch(q.kind, q.seq, batch, q.input, hid);
  float *s = nnw_f32_at(arena, q.scratch);
  float *wt = s + l.wt, *rt = s + l.rt, *xw = s + l.xw, *hr = s + l.hr, *wb = s + l.bias;
  float *rb = wb + ghp, *peep = s + l.peep, *h = s + l.h, *c = s + l.c, *rh = s + l.rh;
  const float *x = nnw_f32_at(arena, q.x), *bias = nnw_f32_at(arena, q.b);
  float *y = nnw_f32_at(arena, q.y);

  transpose_gates(nnw_f32_at(arena, q.w), g_count, hid, hp, q.input, wt);
  transpose_gates(nnw_f32_at(arena, q.r), g_count, hid, hp, hid, rt);
  pad_gates(bias, g_count, hid, hid, hp, wb);
  pad_gates(bias ? bias + g_count * hid : NULL, g_count, hid, hid, hp, rb);
  pad_gates(nnw_f32_at(arena, q.p), 3, hid, hid, hp, peep);
  load_state(nnw_f32_at(arena, q.h0), batch, q.h_bs, hid, hp, h);
  load_state(nnw_f32_at(arena, q.c0), batch, q.h_bs, hid, hp, c);

  /* X W^T + Wb for every step: xw[(t*batch + bt)*ghp + j] */
  struct nnw_epilogue ep_w = {1.0f, 1.0f, -INFINITY, INFINITY, wb, 0, 1};
  if (batch == 1 || (int64_t)q.x_ts == (int64_t)batch * q.x_bs) {
    nnw_gemm_nn(q.seq * batch, ghp, q.input, x, batch == 1 ? q.x_ts : q.x_bs, 1, wt, ghp, xw, ghp,
                &ep_w);
  } else {
    for (int32_t t = 0; t < q.seq; t++)
      nnw_gemm_nn(batch, ghp, q.input, x + (size_t)t * q.x_ts, q.x_bs, 1, wt, ghp,
                  xw + (size_t)t * batch * ghp, ghp, &ep_w);
  }

  v4 lo = v4_set1(-q.clip), hi = v4_set1(q.clip), one = v4_set1(1.0f);
  for (int32_t step = 0; step < q.seq; step++) {
    int32_t t = q.reverse ? q.seq - 1 - step : step;
    const float *xt = xw + (size_t)t * batch * ghp;
    /* h R^T + Rb; GRU without linear_before_reset leaves its h gate for after the reset */
    product(batch, q.kind == GRU ? 2 * hp : ghp, hid, h, hp, rt, ghp, rb, hr, ghp);
    for (int32_t bt = 0; bt < batch; bt++) {
      const float *xr = xt + (size_t)bt * ghp;
      float *gr = hr + (size_t)bt * ghp, *hb = h + (size_t)bt * hp, *cb = c + (size_t)bt * hp;
      for (int32_t u = 0; u < hp; u += 4) {
#define PRE(g) v4_clamp(v4_add(v4_load(xr + (g) * hp + u), v4_load(gr + (g) * hp + u)), lo, hi)
        switch (q.kind) {
          case RNN:
            v4_store(hb + u, nnw_tanh4(PRE(0)));
            break;
          case GRU: /* z and r now; the h gate once r*h has been through R */
            v4_store(gr + u, nnw_sigmoid4(PRE(0)));
            v4_store(rh + (size_t)bt * hp + u, v4_mul(nnw_sigmoid4(PRE(1)), v4_load(hb + u)));
            break;
          case GRU_LBR: {
            v4 z = nnw_sigmoid4(PRE(0)), r = nnw_sigmoid4(PRE(1));
            v4 pre = v4_madd(v4_load(xr + 2 * hp + u), r, v4_load(gr + 2 * hp + u));
            v4 hh = nnw_tanh4(v4_clamp(pre, lo, hi));
            v4_store(hb + u, v4_madd(hh, z, v4_sub(v4_load(hb + u), hh)));
            break;
          }
          default: { /* LSTM, gates i o f c, peepholes i o f */
            v4 cp = v4_load(cb + u);
            v4 pi = v4_madd(PRE(0), v4_load(peep + u), cp);
            v4 i = nnw_sigmoid4(v4_clamp(pi, lo, hi));
            v4 f;
            if (q.kind == LSTM_COUPLED) {
              f = v4_sub(one, i);
            } else {
              v4 pf = v4_madd(PRE(2), v4_load(peep + 2 * hp + u), cp);
              f = nnw_sigmoid4(v4_clamp(pf, lo, hi));
            }
            v4 cn = v4_madd(v4_mul(f, cp), i, nnw_tanh4(PRE(3)));
            v4 po = v4_madd(PRE(1), v4_load(peep + hp + u), cn);
            v4 o = nnw_sigmoid4(v4_clamp(po, lo, hi));
            v4_store(cb + u, cn);
            v4_store(hb + u, v4_mul(o, nnw_tanh4(cn)));
            break;
          }
        }
#undef PRE
      }
    }
    if (q.kind == GRU) {
      product(batch, hp, hid, rh, hp, rt + 2 * hp, ghp, rb + 2 * hp, hr + 2 * hp, ghp);
      for (int32_t bt = 0; bt < batch; bt++) {
        const float *xr = xt + (size_t)bt * ghp;
        float *gr = hr + (size_t)bt * ghp, *hb = h + (size_t)bt * hp;
        for (int32_t u = 0; u < hp; u += 4) {
          v4 pre = v4_add(v4_load(xr + 2 * hp + u), v4_load(gr + 2 * hp + u));
          v4 hh = nnw_tanh4(v4_clamp(pre, lo, hi)), z = v4_load(gr + u);
          v4_store(hb + u, v4_madd(hh, z, v4_sub(v4_load(hb + u), hh)));
        }
      }
    }
    if (y) store_rows(h, batch, hp, hid, y + (size_t)t * q.y_ts, q.y_bs);
  }
  if (q.yh >= 0) store_rows(h, batch, hp, hid, nnw_f32_at(arena, q.yh), q.h_bs);
  if (q.yc >= 0) store_rows(c, batch, hp, hid, nnw_f32_at(arena, q.yc), q.h_bs);
}
