/* attention_kv.c's ops: kv_append (exact copies, lengths out of range stop the run before present is
 * written), rope and attention_kv against double-precision references (grouped heads, strided and
 * packed inputs, causal with per-batch lengths and a window, additive masks of every kind, softcap,
 * a sink), and each validator on hostile arguments. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "tests.h"

static void put_i32(uint8_t *arena, int32_t off, const int32_t *v, int n) { memcpy(arena + off, v, 4 * (size_t)n); }

/* ---- kv_append ---- */

static void kv_append_case(int batch, int heads, int p, int s, int d, int t, int with_lens, int order) {
  int x_hs = d, x_rs = heads * d + 3, x_bs = s * x_rs + 5; /* strided rows, as packed QKV */
  size_t pn = (size_t)batch * heads * p * d, xn = (size_t)(batch - 1) * x_bs + (size_t)(s - 1) * x_rs + (size_t)heads * d;
  size_t yn = (size_t)batch * heads * t * d;
  uint64_t bytes[4] = {4 * (pn ? pn : 1), 4 * xn, 4 * (uint64_t)batch, 4 * yn};
  int32_t off[4];
  uint32_t ab = layout(bytes, 4, order, off);
  uint8_t *arena = arena_new(ab);
  float *past = at(arena, off[0]), *x = at(arena, off[1]), *y = at(arena, off[3]);
  fill_random(past, pn, -1, 1);
  fill_random(x, xn, -1, 1);
  int32_t lens[8];
  for (int b = 0; b < batch; b++) lens[b] = with_lens ? (int32_t)(rng_u32() % (unsigned)(p + 1)) : p;
  put_i32(arena, off[2], lens, batch);
  int32_t args[NNW_KV_APPEND_NARGS] = {p ? off[0] : -1, off[1], with_lens ? off[2] : -1, off[3], batch, heads, p, t, s, d,
                                       x_bs, x_rs, x_hs, 0};
  int status = op_status(NNW_OP_KV_APPEND, args, NNW_KV_APPEND_NARGS, arena, ab);
  int ok = status == NNW_OK;
  for (int b = 0; ok && b < batch; b++)
    for (int h = 0; h < heads; h++)
      for (int j = 0; j < t; j++)
        for (int c = 0; c < d; c++) {
          float want = j < lens[b] ? past[(((size_t)b * heads + h) * p + j) * d + c]
                       : j < lens[b] + s ? x[(size_t)b * x_bs + (size_t)(j - lens[b]) * x_rs + h * x_hs + c]
                                         : 0.0f;
          if (memcmp(&want, &y[(((size_t)b * heads + h) * t + j) * d + c], 4)) ok = 0;
        }
  expect(ok, "kv_append b%d h%d p%d s%d d%d t%d lens%d: status %d or wrong bytes", batch, heads, p, s, d, t,
         with_lens, status);
  if (with_lens) { /* a length past the cache: NNW_BAD_INDEX, present untouched */
    lens[batch - 1] = p + 1;
    put_i32(arena, off[2], lens, batch);
    memset(y, 0x55, 4 * yn);
    status = op_status(NNW_OP_KV_APPEND, args, NNW_KV_APPEND_NARGS, arena, ab);
    int untouched = 1;
    for (size_t i = 0; i < 4 * yn; i++) untouched &= ((uint8_t *)y)[i] == 0x55;
    expect(status == NNW_BAD_INDEX && untouched, "kv_append length %d of %d: status %d", p + 1, p, status);
  }
  free(arena);
}

/* A shared past/present buffer (past == y, p == t, GroupQueryAttention's past_present_share_buffer):
 * only the s new rows at each batch's length are written, every other byte stays; a present that
 * overlaps the past any other way is refused. */
static void kv_append_shared_case(int batch, int heads, int t, int s, int d) {
  size_t yn = (size_t)batch * heads * t * d, xn = (size_t)batch * s * heads * d;
  /* a free row after y, so a present shifted by one row overlaps the past and nothing else */
  int32_t y_off = 0, x_off = (int32_t)(4 * (yn + d)), l_off = x_off + (int32_t)(4 * xn);
  uint32_t ab = (uint32_t)l_off + 16;
  uint8_t *arena = arena_new(ab);
  float *y = at(arena, y_off), *x = at(arena, x_off);
  fill_random(y, yn, -1, 1);
  fill_random(x, xn, -1, 1);
  float *before = malloc(4 * yn);
  memcpy(before, y, 4 * yn);
  int32_t lens[4];
  for (int b = 0; b < batch; b++) lens[b] = (int32_t)(rng_u32() % (unsigned)(t - s + 1));
  put_i32(arena, l_off, lens, batch);
  int32_t args[NNW_KV_APPEND_NARGS] = {y_off, x_off, l_off, y_off, batch, heads, t, t, s, d,
                                       s * heads * d, heads * d, d, 0};
  int status = op_status(NNW_OP_KV_APPEND, args, NNW_KV_APPEND_NARGS, arena, ab);
  int ok = status == NNW_OK;
  for (int b = 0; ok && b < batch; b++)
    for (int h = 0; h < heads; h++)
      for (int j = 0; j < t; j++)
        for (int c = 0; c < d; c++) {
          size_t i = (((size_t)b * heads + h) * t + j) * d + c;
          float want = j >= lens[b] && j < lens[b] + s ? x[(size_t)b * s * heads * d + (size_t)(j - lens[b]) * heads * d + h * d + c]
                                                       : before[i];
          if (memcmp(&want, &y[i], 4)) ok = 0;
        }
  expect(ok, "kv_append shared b%d h%d t%d s%d d%d: status %d or wrong bytes", batch, heads, t, s, d, status);
  args[NNW_KV_APPEND_P] = t - 1; /* the same offset, but a shorter past: not the same tensor */
  expect(op_status(NNW_OP_KV_APPEND, args, NNW_KV_APPEND_NARGS, arena, ab) == NNW_BAD_ARGS,
         "kv_append past == y with p != t accepted");
  args[NNW_KV_APPEND_P] = t;
  args[NNW_KV_APPEND_Y] = y_off + 4 * d; /* overlapping, one row apart */
  expect(op_status(NNW_OP_KV_APPEND, args, NNW_KV_APPEND_NARGS, arena, ab) == NNW_BAD_ARGS,
         "kv_append y overlapping past one row apart accepted");
  free(before);
  free(arena);
}

/* ---- rope ---- */

static void rope_case(int batch, int s, int heads, int d, int half, int interleaved, int with_bias, int with_pos) {
  int max_pos = 40, x_hs = d, x_rs = heads * d, x_bs = s * x_rs;
  size_t xn = (size_t)batch * s * heads * d, cn = (size_t)max_pos * half;
  uint64_t bytes[7] = {4 * xn, 4 * (uint64_t)heads * d, 4 * (cn ? cn : 1), 4 * (cn ? cn : 1), 4 * (uint64_t)batch,
                       8 * (uint64_t)batch * s, 4 * xn};
  int32_t off[7];
  uint32_t ab = 0;
  for (int i = 0; i < 7; i++) { /* 8-aligned (int64 positions), 8 bytes apart, y last against the end */
    off[i] = (int32_t)ab;
    ab += (uint32_t)(bytes[i] + 7) / 8 * 8 + (i < 6 ? 8 : 0);
  }
  ab = (uint32_t)(off[6] + bytes[6]);
  uint8_t *arena = arena_new(ab);
  float *x = at(arena, off[0]), *xb = at(arena, off[1]), *cs = at(arena, off[2]), *sn = at(arena, off[3]);
  fill_random(x, xn, -1, 1);
  fill_random(xb, (size_t)heads * d, -1, 1);
  fill_random(cs, cn, -1, 1);
  fill_random(sn, cn, -1, 1);
  int32_t lens[4];
  int64_t pos[64];
  for (int b = 0; b < batch; b++) lens[b] = (int32_t)(rng_u32() % 10);
  for (int i = 0; i < batch * s; i++) pos[i] = rng_u32() % (unsigned)max_pos;
  put_i32(arena, off[4], lens, batch);
  memcpy(arena + off[5], pos, 8 * (size_t)batch * s);
  int32_t args[NNW_ROPE_NARGS] = {off[0], with_bias ? off[1] : -1, half ? off[2] : -1, half ? off[3] : -1, off[4],
                                  with_pos ? off[5] : -1, off[6], batch, s, heads, d, half, half ? max_pos : 0,
                                  x_bs, x_rs, x_hs, 1, s, interleaved};
  int status = op_status(NNW_OP_ROPE, args, NNW_ROPE_NARGS, arena, ab);
  double *want = malloc(8 * xn);
  for (int b = 0; b < batch; b++)
    for (int i = 0; i < s; i++) {
      int64_t at_ = with_pos ? pos[b * s + i] : lens[b] + 1 + i;
      for (int h = 0; h < heads; h++) {
        double v[64];
        for (int c = 0; c < d; c++)
          v[c] = (double)x[(size_t)b * x_bs + i * x_rs + h * x_hs + c] + (with_bias ? xb[h * d + c] : 0.0);
        double *w = want + (((size_t)b * s + i) * heads + h) * d;
        for (int c = 0; c < d; c++) w[c] = v[c];
        for (int k = 0; k < half; k++) {
          double cc = cs[at_ * half + k], ss = sn[at_ * half + k];
          int a = interleaved ? 2 * k : k, bb = interleaved ? 2 * k + 1 : k + half;
          w[a] = v[a] * cc - v[bb] * ss;
          w[bb] = v[a] * ss + v[bb] * cc;
        }
      }
    }
  char name[96];
  snprintf(name, sizeof name, "rope b%d s%d h%d d%d half%d il%d bias%d pos%d", batch, s, heads, d, half, interleaved,
           with_bias, with_pos);
  if (expect(status == NNW_OK, "%s: status %d", name, status)) check_close(name, at(arena, off[6]), want, NULL, xn, 1e-5, 1e-5);
  if (half && !with_pos) { /* a position past the table: NNW_BAD_INDEX */
    lens[0] = max_pos;
    put_i32(arena, off[4], lens, batch);
    status = op_status(NNW_OP_ROPE, args, NNW_ROPE_NARGS, arena, ab);
    expect(status == NNW_BAD_INDEX, "%s: position %d of %d gives %d", name, max_pos + 1, max_pos, status);
  }
  free(want);
  free(arena);
}

/* ---- attention_kv ---- */

struct akv_case {
  int batch, heads, kv_heads, s, t, d, dv;
  int causal, window, masks, softcap, sink; /* masks: bit 0 bias [B,1,S,T], 1 kmask [B,T], 2 kend, 3 kstart */
};

static void akv_case(const struct akv_case *c) {
  int B = c->batch, H = c->heads, G = c->kv_heads, S = c->s, T = c->t, D = c->d, DV = c->dv;
  /* q strided as packed QKV rows; k, v in BNSH; y [B, S, H*DV] */
  int q_hs = D, q_rs = H * D + 2 * G * D, q_bs = S * q_rs;
  size_t qn = (size_t)B * q_bs, kn = (size_t)B * G * T * D, vn = (size_t)B * G * T * DV, mn = (size_t)B * S * T;
  size_t yn = (size_t)B * S * H * DV;
  uint64_t bytes[10] = {4 * qn, 4 * kn, 4 * vn, 4 * mn, 4 * (uint64_t)B * T, 4 * (uint64_t)B, 4 * (uint64_t)B,
                        4 * (uint64_t)B, 4 * (uint64_t)H, 4 * yn};
  int32_t off[11];
  uint64_t all[11];
  memcpy(all, bytes, sizeof bytes);
  all[10] = 4 * (uint64_t)(S > 1 && !(c->causal == 1 && c->window > 0) ? D * T + S * T : T);
  uint32_t ab = layout(all, 11, (int)(rng_u32() % 2), off);
  uint8_t *arena = arena_new(ab);
  float *q = at(arena, off[0]), *k = at(arena, off[1]), *v = at(arena, off[2]), *bias = at(arena, off[3]);
  float *sink = at(arena, off[8]);
  fill_random(q, qn, -1, 1);
  fill_random(k, kn, -1, 1);
  fill_random(v, vn, -1, 1);
  fill_random(bias, mn, -2, 0);
  fill_random(sink, (size_t)H, -1, 1);
  int32_t km[256], kend[4], kstart[4], lens[4];
  for (size_t i = 0; i < (size_t)B * T; i++) km[i] = rng_u32() % 4 != 0;
  for (int b = 0; b < B; b++) {
    kend[b] = (int32_t)(rng_u32() % (unsigned)(T + 1));
    kstart[b] = (int32_t)(rng_u32() % 3);
    lens[b] = (int32_t)(S - 1 + rng_u32() % (unsigned)(T - S + 1)); /* seqlens_k: n_b = lens + 1 - S in [0, T - S] */
  }
  put_i32(arena, off[4], km, B * T);
  put_i32(arena, off[5], kend, B);
  put_i32(arena, off[6], kstart, B);
  put_i32(arena, off[7], lens, B);
  float scale = 0.3f, cap = c->softcap ? 1.5f : 0.0f, mv = -10000.0f;
  int c0 = T - S;
  int32_t args[NNW_ATTENTION_KV_NARGS] = {
      off[0], off[1], off[2], c->masks & 1 ? off[3] : -1, c->masks & 2 ? off[4] : -1, c->masks & 4 ? off[5] : -1,
      c->masks & 8 ? off[6] : -1, c->causal == 1 ? off[7] : -1, c->sink ? off[8] : -1, off[9], off[10],
      B, H, G, S, T, D, DV, q_bs, q_rs, q_hs, G * T * D, T * D, D, G * T * DV, T * DV, DV, S * H * DV, H * DV, DV,
      S * T, 0, T, T, 0, c->causal, c0, 1 - S, c->window, 0, f32_bits(scale), f32_bits(cap), f32_bits(mv)};
  int status = op_status(NNW_OP_ATTENTION_KV, args, NNW_ATTENTION_KV_NARGS, arena, ab);
  double *want = malloc(8 * yn), *mag = malloc(8 * yn), *p = malloc(8 * (size_t)T);
  for (int b = 0; b < B; b++)
    for (int i = 0; i < S; i++)
      for (int h = 0; h < H; h++) {
        int g = h / (H / G), lo = 0, hi = T;
        if (c->causal == 1) {
          hi = lens[b] + 1 - S + i + 1;
          if (c->window > 0 && hi - c->window > 0) lo = hi - c->window;
        }
        double mx = -INFINITY, sum = 0;
        for (int j = lo; j < hi; j++) {
          double x = 0;
          for (int e = 0; e < D; e++)
            x += (double)q[(size_t)b * q_bs + i * q_rs + h * q_hs + e] * k[(((size_t)b * G + g) * T + j) * D + e];
          x *= scale;
          if (cap > 0) x = cap * tanh(x / cap);
          /* a masked key's -10000 is added in float32 by the kernel (and onnxruntime): round as it does,
           * else the reference is "better" than float32 can be on rows whose every key is masked */
          x = (float)x;
          if (c->masks & 1) x = (float)(x + bias[((size_t)b * S + i) * T + j]);
          if ((c->masks & 2) && km[b * T + j] == 0) x = (float)(x + mv);
          if ((c->masks & 4) && j >= kend[b]) x = (float)(x + mv);
          if ((c->masks & 8) && j < kstart[b]) x = (float)(x + mv);
          if (c->causal == 2 && j > c0 + i) x = (float)(x + mv);
          p[j] = x;
          mx = x > mx ? x : mx;
        }
        if (c->sink && sink[h] > mx) mx = sink[h];
        for (int j = lo; j < hi; j++) sum += p[j] = exp(p[j] - mx);
        if (c->sink) sum += exp(sink[h] - mx);
        for (int e = 0; e < DV; e++) {
          double y = 0, m = 0;
          for (int j = lo; j < hi; j++) {
            double vv = v[(((size_t)b * G + g) * T + j) * DV + e];
            y += p[j] / sum * vv;
            m += fabs(vv);
          }
          size_t o = (((size_t)b * S + i) * H + h) * DV + e;
          want[o] = y;
          mag[o] = m * (1 + D * scale);
        }
      }
  char name[128];
  snprintf(name, sizeof name, "attention_kv b%d h%d/%d s%d t%d d%d/%d causal%d w%d masks%d cap%d sink%d", B, H, G, S, T,
           D, DV, c->causal, c->window, c->masks, c->softcap, c->sink);
  if (expect(status == NNW_OK, "%s: status %d", name, status)) check_close(name, at(arena, off[9]), want, mag, yn, 1e-5, 1e-6);
  if (c->causal == 1) { /* seqlens_k past the cache: NNW_BAD_INDEX */
    lens[0] = T;
    put_i32(arena, off[7], lens, B);
    status = op_status(NNW_OP_ATTENTION_KV, args, NNW_ATTENTION_KV_NARGS, arena, ab);
    expect(status == NNW_BAD_INDEX, "%s: seqlens %d of %d gives %d", name, T, T, status);
  }
  free(want);
  free(mag);
  free(p);
  free(arena);
}

static void hostile(void) {
  /* kv_append: batch 1, heads 2, p 3, t 5, s 2, d 4: past 96 B, x 64 B, lens 4 B, y 160 B */
  enum { P = 0, X = 96, L = 160, Y = 176, ARENA = 336 };
  const int32_t kv[NNW_KV_APPEND_NARGS] = {P, X, L, Y, 1, 2, 3, 5, 2, 4, 16, 8, 4, 0};
  static const struct arg_patch kv_rows[] = {
      {"valid", -1, 0, NNW_OK},
      {"no lens", NNW_KV_APPEND_LENS, -1, NNW_OK},
      {"s past t", NNW_KV_APPEND_S, 6, NNW_BAD_ARGS},
      {"p negative", NNW_KV_APPEND_P, -1, NNW_BAD_ARGS},
      {"p 0 with a past", NNW_KV_APPEND_P, 0, NNW_BAD_ARGS},
      {"no past with p 3", NNW_KV_APPEND_PAST, -1, NNW_BAD_ARGS},
      {"x row stride negative", NNW_KV_APPEND_X_RS, -8, NNW_BAD_ARGS},
      {"x batch stride past the arena", NNW_KV_APPEND_X_BS, 1 << 20, NNW_OK}, /* batch 1: unused */
      {"x head stride past the arena", NNW_KV_APPEND_X_HS, 1 << 20, NNW_OUT_OF_BOUNDS},
      {"t huge", NNW_KV_APPEND_T, INT32_MAX, NNW_OUT_OF_BOUNDS},
      {"y over x", NNW_KV_APPEND_Y, X, NNW_BAD_ARGS},
      {"y over lens", NNW_KV_APPEND_Y, L - 16, NNW_BAD_ARGS},
      {"lens misaligned", NNW_KV_APPEND_LENS, L + 1, NNW_BAD_ARGS},
  };
  load_patches(NNW_OP_KV_APPEND, kv, NNW_KV_APPEND_NARGS, ARENA, kv_rows, sizeof kv_rows / sizeof kv_rows[0]);

  /* rope: batch 1, s 2, heads 1, d 4, half 2, max_pos 3: x 32 B, xb 16, cos/sin 24 each, y 32 */
  enum { RX = 0, RB = 32, RC = 48, RS = 72, RL = 96, RY = 112, RARENA = 144 };
  const int32_t rp[NNW_ROPE_NARGS] = {RX, RB, RC, RS, RL, -1, RY, 1, 2, 1, 4, 2, 3, 8, 4, 4, 0, 0, 0};
  static const struct arg_patch rope_rows[] = {
      {"valid", -1, 0, NNW_OK},
      {"half past d/2", NNW_ROPE_HALF, 3, NNW_BAD_ARGS},
      {"half negative", NNW_ROPE_HALF, -1, NNW_BAD_ARGS},
      {"max_pos 0 with a rotation", NNW_ROPE_MAX_POS, 0, NNW_BAD_ARGS},
      {"interleaved 2", NNW_ROPE_INTERLEAVED, 2, NNW_BAD_ARGS},
      {"cos absent", NNW_ROPE_COS, -1, NNW_OUT_OF_BOUNDS},
      {"max_pos past the table", NNW_ROPE_MAX_POS, 1000, NNW_OUT_OF_BOUNDS},
      {"y over x", NNW_ROPE_Y, RX + 4, NNW_BAD_ARGS},
      {"y over cos", NNW_ROPE_Y, RC, NNW_BAD_ARGS},
      {"pos misaligned", NNW_ROPE_POS, RL + 4, NNW_BAD_ARGS},
  };
  load_patches(NNW_OP_ROPE, rp, NNW_ROPE_NARGS, RARENA, rope_rows, sizeof rope_rows / sizeof rope_rows[0]);

  /* attention_kv: batch 1, heads 2, kv 1, s 1, t 3, d 2, dv 2: q 16 B, k 24, v 24, y 16, scratch 12 */
  enum { AQ = 0, AK = 16, AV = 48, AL = 80, AY = 96, AS = 112, AARENA = 128 };
  const int32_t ak[NNW_ATTENTION_KV_NARGS] = {AQ, AK, AV, -1, -1, -1, -1, AL, -1, AY, AS, 1, 2, 1, 1, 3, 2, 2,
                                              4, 4, 2, 6, 6, 2, 6, 6, 2, 4, 4, 2, 0, 0, 0, 0, 0, 1, 0, 0, -1, 0,
                                              f32_bits(0.5f), 0, f32_bits(-10000.0f)};
  static const struct arg_patch akv_rows[] = {
      {"valid", -1, 0, NNW_OK},
      {"heads not a multiple of kv_heads", NNW_ATTENTION_KV_HEADS, 3, NNW_BAD_ARGS},
      {"kv_heads 0", NNW_ATTENTION_KV_KV_HEADS, 0, NNW_BAD_ARGS},
      {"causal 3", NNW_ATTENTION_KV_CAUSAL, 3, NNW_BAD_ARGS},
      {"window -2", NNW_ATTENTION_KV_WINDOW, -2, NNW_BAD_ARGS},
      {"smooth 2", NNW_ATTENTION_KV_SMOOTH, 2, NNW_BAD_ARGS},
      {"scale nan", NNW_ATTENTION_KV_SCALE, 0x7FC00000, NNW_BAD_ARGS},
      {"softcap negative", NNW_ATTENTION_KV_SOFTCAP, (int32_t)0xBF800000, NNW_BAD_ARGS},
      {"mask_value inf", NNW_ATTENTION_KV_MASK_VALUE, (int32_t)0xFF800000, NNW_BAD_ARGS},
      {"k row stride negative", NNW_ATTENTION_KV_K_RS, -2, NNW_BAD_ARGS},
      {"k row stride past the arena", NNW_ATTENTION_KV_K_RS, 1 << 20, NNW_OUT_OF_BOUNDS},
      {"t huge", NNW_ATTENTION_KV_T, INT32_MAX, NNW_OUT_OF_BOUNDS},
      {"causal 1 without lens, c0 + s > t", NNW_ATTENTION_KV_LENS, -1, NNW_OK},
      {"y over q", NNW_ATTENTION_KV_Y, AQ + 4, NNW_BAD_ARGS},
      {"y over lens", NNW_ATTENTION_KV_Y, AL, NNW_BAD_ARGS},
      {"scratch over v", NNW_ATTENTION_KV_SCRATCH, AV, NNW_BAD_ARGS},
      {"scratch past the arena", NNW_ATTENTION_KV_SCRATCH, AARENA - 8, NNW_OUT_OF_BOUNDS},
      {"bias past the arena", NNW_ATTENTION_KV_BIAS, AARENA - 4, NNW_OUT_OF_BOUNDS},
  };
  load_patches(NNW_OP_ATTENTION_KV, ak, NNW_ATTENTION_KV_NARGS, AARENA, akv_rows, sizeof akv_rows / sizeof akv_rows[0]);
  int32_t bad_c0[NNW_ATTENTION_KV_NARGS];
  memcpy(bad_c0, ak, sizeof bad_c0);
  bad_c0[NNW_ATTENTION_KV_LENS] = -1;
  load_patched("causal 1 without lens, c0 3 + s 1 > t 3", NNW_OP_ATTENTION_KV, bad_c0, NNW_ATTENTION_KV_NARGS,
               NNW_ATTENTION_KV_C0, 3, AARENA, NNW_BAD_ARGS);
}

void test_attention_kv(void) {
  for (int order = 0; order < 2; order++) {
    kv_append_case(2, 2, 5, 1, 16, 6, 1, order);
    kv_append_case(1, 4, 0, 7, 8, 7, 0, order);
    kv_append_case(2, 1, 9, 3, 5, 12, 1, order);
    kv_append_case(1, 2, 4, 1, 4, 5, 0, order);
  }
  kv_append_shared_case(2, 2, 7, 1, 8);
  kv_append_shared_case(1, 3, 9, 3, 4);
  for (int il = 0; il < 2; il++) {
    rope_case(2, 3, 2, 16, 8, il, 0, 0);
    rope_case(1, 1, 3, 10, 4, il, 1, 1);
    rope_case(2, 2, 1, 7, 3, il, 1, 0);
  }
  rope_case(1, 2, 2, 6, 0, 0, 1, 0); /* bias only (MultiHeadAttention) */
  static const struct akv_case cases[] = {
      {1, 4, 2, 1, 9, 16, 16, 1, -1, 0, 0, 0},  /* a GQA decode step */
      {2, 4, 1, 5, 12, 8, 8, 1, -1, 0, 1, 0},   /* a prompt, per-batch lengths, softcap */
      {1, 2, 2, 3, 10, 6, 6, 1, 3, 1, 0, 1},    /* window, bias, sink */
      {2, 3, 3, 4, 7, 5, 3, 2, -1, 15, 0, 0},   /* MultiHeadAttention / Attention: every mask, causal */
      {1, 2, 2, 1, 1, 4, 4, 0, -1, 0, 0, 0},    /* one key */
      {2, 6, 2, 2, 33, 13, 9, 0, -1, 3, 1, 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) akv_case(&cases[i]);
  for (int r = 0; r < 20; r++) {
    int kvh = 1 + (int)(rng_u32() % 3), s = 1 + (int)(rng_u32() % 4);
    struct akv_case c = {1 + (int)(rng_u32() % 2), kvh * (1 + (int)(rng_u32() % 3)), kvh, s,
                         s + (int)(rng_u32() % 12), 1 + (int)(rng_u32() % 20), 1 + (int)(rng_u32() % 9),
                         (int)(rng_u32() % 3), (int)(rng_u32() % 5) - 1, (int)(rng_u32() % 16),
                         (int)(rng_u32() % 2), (int)(rng_u32() % 2)};
    akv_case(&c);
  }
  hostile();
}
