/* rotary: rotary position embedding (com.microsoft RotaryEmbedding, ai.onnx RotaryEmbedding-23,
 * onnxruntime-genai's and GQA-less decoders' RoPE) on x viewed as [batch, seq, heads, head] with
 * strides, so [B, S, N*H] and [B, N, S, H] inputs need no transpose. Each rotated pair is
 * (x1 cos - x2 sin, x1 sin + x2 cos), computed as onnxruntime does (two products, one add), so
 * results match its CPU kernel bit for bit. Positions are data: each is checked against the
 * caches before anything is written. */
#include "internal.h"
#include "simd.h"

struct rotary {
  int32_t x, cos, sin, pos, y, batch, seq, heads, head, rd, interleaved, x_bs, x_ss, x_hs;
  int32_t pos_mode, pos_bs, cache_rows;
};

static void decode(const int32_t *v, struct rotary *p) {
  p->x = v[NNW_ROTARY_X];
  p->cos = v[NNW_ROTARY_COS];
  p->sin = v[NNW_ROTARY_SIN];
  p->pos = v[NNW_ROTARY_POS];
  p->y = v[NNW_ROTARY_Y];
  p->batch = v[NNW_ROTARY_BATCH];
  p->seq = v[NNW_ROTARY_SEQ];
  p->heads = v[NNW_ROTARY_HEADS];
  p->head = v[NNW_ROTARY_HEAD];
  p->rd = v[NNW_ROTARY_RD];
  p->interleaved = v[NNW_ROTARY_INTERLEAVED];
  p->x_bs = v[NNW_ROTARY_X_BS];
  p->x_ss = v[NNW_ROTARY_X_SS];
  p->x_hs = v[NNW_ROTARY_X_HS];
  p->pos_mode = v[NNW_ROTARY_POS_MODE];
  p->pos_bs = v[NNW_ROTARY_POS_BS];
  p->cache_rows = v[NNW_ROTARY_CACHE_ROWS];
}

/* the furthest element (+1) of x: every index b*x_bs + s*x_ss + h*x_hs + i stays below it */
static uint64_t x_extent(const struct rotary *p) {
  uint64_t last = nnw_add(nnw_add(nnw_mul((uint64_t)p->batch - 1, (uint64_t)p->x_bs),
                                  nnw_mul((uint64_t)p->seq - 1, (uint64_t)p->x_ss)),
                          nnw_add(nnw_mul((uint64_t)p->heads - 1, (uint64_t)p->x_hs), (uint64_t)p->head));
  return last;
}

int nnw_validate_rotary(const int32_t *v, uint32_t arena_bytes) {
  struct rotary p;
  decode(v, &p);
  int32_t dims[] = {p.batch, p.seq, p.heads, p.head, p.rd, p.cache_rows};
  NNW_TRY(nnw_check_positive(dims, 6));
  if (p.rd % 2 || p.rd > p.head || p.interleaved & ~1 || p.pos_mode < 0 || p.pos_mode > 2) return NNW_BAD_ARGS;
  if (p.x_bs < 0 || p.x_ss < 0 || p.x_hs < 0 || p.pos_bs < 0) return NNW_BAD_ARGS;
  uint64_t x_bytes = nnw_mul(x_extent(&p), 4);
  uint64_t cache = nnw_mul(nnw_mul((uint64_t)p.cache_rows, (uint64_t)p.rd / 2), 4);
  NNW_TRY(nnw_check_tensor(p.x, x_bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(p.y, x_bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(p.cos, cache, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(p.sin, cache, arena_bytes, 0, 1));
  uint64_t pos_count = 0;
  if (p.pos_mode == 0)
    pos_count = nnw_add(nnw_mul((uint64_t)p.batch - 1, (uint64_t)p.pos_bs), (uint64_t)p.seq);
  else if (p.pos_mode == 1)
    pos_count = 1;
  if (p.pos_mode == 2) {
    if (p.pos != -1) return NNW_BAD_ARGS;
  } else {
    NNW_TRY(nnw_check_tensor(p.pos, nnw_mul(pos_count, 8), arena_bytes, 0, 0));   /* read with memcpy: any alignment */
  }
  NNW_TRY(nnw_check_apart(p.x, x_bytes, p.y, x_bytes, 1));
  const int32_t read[] = {p.cos, p.sin, p.pos};
  const uint64_t read_bytes[] = {cache, cache, pos_count * 8};
  for (int r = 0; r < 3; r++) NNW_TRY(nnw_check_apart(read[r], read_bytes[r], p.y, x_bytes, 0));
  return NNW_OK;
}

/* the cache row of (b, s), or -1 when outside the caches */
static int64_t row_of(const struct rotary *p, const uint8_t *pos, int32_t b, int32_t s) {
  int64_t r;
  if (p->pos_mode == 2) {
    r = (int64_t)b * p->pos_bs + s;
  } else {
    size_t k = p->pos_mode == 0 ? (size_t)b * (size_t)p->pos_bs + (size_t)s : 0;
    memcpy(&r, pos + 8 * k, 8);
    if (p->pos_mode == 1) r += s;
  }
  return r >= 0 && r < p->cache_rows ? r : -1;
}

/* one head: halves */
static void rotate_half(const float *x, float *y, const float *c, const float *sn, int32_t half) {
  int32_t i = 0;
  for (; i + 4 <= half; i += 4) {
    v4 x1 = v4_load(x + i), x2 = v4_load(x + half + i), vc = v4_load(c + i), vs = v4_load(sn + i);
    v4_store(y + i, v4_sub(v4_mul(x1, vc), v4_mul(x2, vs)));
    v4_store(y + half + i, v4_add(v4_mul(x2, vc), v4_mul(x1, vs)));
  }
  for (; i < half; i++) {
    float x1 = x[i], x2 = x[half + i];
    y[i] = x1 * c[i] - x2 * sn[i];
    y[half + i] = x2 * c[i] + x1 * sn[i];
  }
}

/* one head: even/odd pairs */
static void rotate_interleaved(const float *x, float *y, const float *c, const float *sn, int32_t half) {
  for (int32_t i = 0; i < half; i++) {
    float x1 = x[2 * i], x2 = x[2 * i + 1];
    y[2 * i] = x1 * c[i] - x2 * sn[i];
    y[2 * i + 1] = x2 * c[i] + x1 * sn[i];
  }
}

void nnw_run_rotary(const int32_t *v, uint8_t *arena) {
  struct rotary p;
  decode(v, &p);
  const uint8_t *pos = p.pos >= 0 ? arena + p.pos : NULL;
  for (int32_t b = 0; b < p.batch; b++)
    for (int32_t s = 0; s < p.seq; s++)
      if (row_of(&p, pos, b, s) < 0) {
        nnw_run_fail(NNW_BAD_INDEX);
        return;
      }
  const float *x = nnw_f32_at(arena, p.x), *cos = nnw_f32_at(arena, p.cos), *sin = nnw_f32_at(arena, p.sin);
  float *y = nnw_f32_at(arena, p.y);
  int32_t half = p.rd / 2;
  for (int32_t b = 0; b < p.batch; b++)
    for (int32_t s = 0; s < p.seq; s++) {
      size_t row = (size_t)row_of(&p, pos, b, s) * (size_t)half;
      for (int32_t h = 0; h < p.heads; h++) {
        size_t at = (size_t)b * p.x_bs + (size_t)s * p.x_ss + (size_t)h * p.x_hs;
        if (p.interleaved)
          rotate_interleaved(x + at, y + at, cos + row, sin + row, half);
        else
          rotate_half(x + at, y + at, cos + row, sin + row, half);
        if (y != x && p.rd < p.head) memcpy(y + at + p.rd, x + at + p.rd, 4 * (size_t)(p.head - p.rd));
      }
    }
}
