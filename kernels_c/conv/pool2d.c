/* pool2d: max and average over NCHW windows, with strides, dilations and pads (bottom/right
 * implied by oh/ow). Max ignores padding (it acts as -inf); average divides by the number of
 * window elements inside the image, or by kh*kw when count_include_pad. Each window must
 * overlap the image (pads smaller than the window, as onnxruntime requires). */
#include <math.h>

#include "internal.h"
#include "simd.h"
#include "threads/split.h"

enum { MAX, AVERAGE, KINDS };

struct pool {
  int32_t kind, x, y, n, c, h, w, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl, count_include_pad;
};

static void pool_decode(const int32_t *v, struct pool *p) {
  p->kind = v[NNW_POOL2D_KIND];
  p->x = v[NNW_POOL2D_X];
  p->y = v[NNW_POOL2D_Y];
  p->n = v[NNW_POOL2D_N];
  p->c = v[NNW_POOL2D_C];
  p->h = v[NNW_POOL2D_H];
  p->w = v[NNW_POOL2D_W];
  p->oh = v[NNW_POOL2D_OH];
  p->ow = v[NNW_POOL2D_OW];
  p->kh = v[NNW_POOL2D_KH];
  p->kw = v[NNW_POOL2D_KW];
  p->sh = v[NNW_POOL2D_SH];
  p->sw = v[NNW_POOL2D_SW];
  p->dh = v[NNW_POOL2D_DH];
  p->dw = v[NNW_POOL2D_DW];
  p->pt = v[NNW_POOL2D_PT];
  p->pl = v[NNW_POOL2D_PL];
  p->count_include_pad = v[NNW_POOL2D_COUNT_INCLUDE_PAD];
}

/* every window along one axis overlaps [0, size) and all coordinates fit int32 */
static int check_axis(int32_t size, int32_t out, int32_t k, int32_t s, int32_t d, int32_t pad) {
  int64_t reach = (int64_t)(k - 1) * d + 1, last = (int64_t)(out - 1) * s - pad;
  if (pad < 0 || pad >= reach || last >= size) return NNW_BAD_ARGS;
  if (last + reach + pad > ((int64_t)1 << 30)) return NNW_BAD_ARGS;
  return NNW_OK;
}

int nnw_validate_pool2d(const int32_t *args, uint32_t arena_bytes) {
  struct pool p;
  pool_decode(args, &p);
  int32_t pos[] = {p.n, p.c, p.h, p.w, p.oh, p.ow, p.kh, p.kw, p.sh, p.sw, p.dh, p.dw};
  NNW_TRY(nnw_check_positive(pos, (int)(sizeof pos / sizeof pos[0])));
  if (p.kind < 0 || p.kind >= KINDS || (p.count_include_pad & ~1)) return NNW_BAD_ARGS;
  NNW_TRY(check_axis(p.h, p.oh, p.kh, p.sh, p.dh, p.pt));
  NNW_TRY(check_axis(p.w, p.ow, p.kw, p.sw, p.dw, p.pl));
  uint64_t planes = nnw_mul((uint64_t)p.n * 4, (uint64_t)p.c);
  uint64_t x_bytes = nnw_mul(planes, nnw_mul((uint64_t)p.h, (uint64_t)p.w));
  uint64_t y_bytes = nnw_mul(planes, nnw_mul((uint64_t)p.oh, (uint64_t)p.ow));
  NNW_TRY(nnw_check_tensor(p.x, x_bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(p.y, y_bytes, arena_bytes, 0, 1));
  NNW_TRY(nnw_check_apart(p.x, x_bytes, p.y, y_bytes, 0));
  return NNW_OK;
}

/* taps k0..k1-1 of a window starting at `start` land inside [0, size) */
static void taps(int32_t start, int32_t k, int32_t d, int32_t size, int32_t *k0, int32_t *k1) {
  int32_t lo = start >= 0 ? 0 : (-start + d - 1) / d;
  int32_t hi = start >= size ? 0 : (size - start + d - 1) / d;
  *k0 = lo;
  *k1 = hi < k ? hi : k;
  if (*k1 < *k0) *k1 = *k0;
}

static void pool_plane(const struct pool *p, const float *x, float *y) {
  for (int32_t oy = 0; oy < p->oh; oy++) {
    int32_t y0 = oy * p->sh - p->pt, ky0, ky1;
    taps(y0, p->kh, p->dh, p->h, &ky0, &ky1);
    for (int32_t ox = 0; ox < p->ow; ox++) {
      int32_t x0 = ox * p->sw - p->pl, kx0, kx1;
      taps(x0, p->kw, p->dw, p->w, &kx0, &kx1);
      float acc = p->kind == MAX ? -INFINITY : 0.0f;
      for (int32_t ky = ky0; ky < ky1; ky++) {
        const float *row = x + (size_t)(y0 + ky * p->dh) * p->w;
        for (int32_t kx = kx0; kx < kx1; kx++) {
          float v = row[x0 + kx * p->dw];
          acc = p->kind == AVERAGE ? acc + v : acc < v ? v : acc;
        }
      }
      if (p->kind == AVERAGE) {
        int32_t count = p->count_include_pad ? p->kh * p->kw : (ky1 - ky0) * (kx1 - kx0);
        acc = count > 0 ? acc / (float)count : 0.0f;
      }
      y[oy * p->ow + ox] = acc;
    }
  }
}

/* Max pooling in two passes per output row: the window's rows reduced into one row (SIMD along
 * the width) inside a -inf border, then the taps along that row, four outputs at a time (stride 1
 * and 2 with contiguous loads; others gathered). -inf never wins a max, so the border stands for
 * the taps outside the image; 3x faster than pool_plane on SqueezeNet's 3x3/2 pools. */
#define MAX_ROW 2048

static float row_max(const float *r, int32_t x0, int32_t kw, int32_t dw) {
  float acc = -INFINITY;
  for (int32_t kx = 0; kx < kw; kx++) acc = acc < r[x0 + kx * dw] ? r[x0 + kx * dw] : acc;
  return acc;
}

/* whether max_plane serves these parameters: its row (pads, span, 8 floats of overreach) fits */
static int max_plane_fits(const struct pool *p) {
  int64_t span = (int64_t)(p->ow - 1) * p->sw + (int64_t)(p->kw - 1) * p->dw + 1;
  int64_t need = span > p->pl + (int64_t)p->w ? span : p->pl + (int64_t)p->w;
  return p->kind == MAX && need + 8 <= MAX_ROW;
}

/* r's -inf border (the columns outside the image; each row rewrites the inside), once per op */
static void max_row_border(const struct pool *p, float *r) {
  for (int32_t i = 0; i < p->pl; i++) r[i] = -INFINITY;
  for (int32_t i = p->pl + p->w; i < MAX_ROW; i++) r[i] = -INFINITY;
}

static void max_plane(const struct pool *p, const float *x, float *y, float *r) {
  v4 ninf = v4_set1(-INFINITY);
  int32_t w = p->w, sw = p->sw, dw = p->dw;
  float *rw = r + p->pl; /* image column ix at rw[ix] */
  for (int32_t oy = 0; oy < p->oh; oy++) {
    int32_t y0 = oy * p->sh - p->pt, ky0, ky1;
    taps(y0, p->kh, p->dh, p->h, &ky0, &ky1);
    int32_t ix = 0;
    for (; ix + 4 <= w; ix += 4) {
      v4 acc = ninf;
      for (int32_t ky = ky0; ky < ky1; ky++)
        acc = v4_max(acc, v4_load(x + (size_t)(y0 + ky * p->dh) * w + ix));
      v4_store(rw + ix, acc);
    }
    for (; ix < w; ix++) {
      float acc = -INFINITY;
      for (int32_t ky = ky0; ky < ky1; ky++) {
        float v = x[(size_t)(y0 + ky * p->dh) * w + ix];
        acc = acc < v ? v : acc;
      }
      rw[ix] = acc;
    }
    float *yr = y + (size_t)oy * p->ow;
    int32_t ox = 0;
    for (; ox + 4 <= p->ow; ox += 4) {
      const float *base = r + ox * sw;
      v4 acc = ninf;
      for (int32_t kx = 0; kx < p->kw; kx++) {
        const float *q = base + kx * dw;
        v4 v;
        if (sw == 1) {
          v = v4_load(q);
        } else if (sw == 2) {
          v = v4_even(v4_load(q), v4_load(q + 4));
        } else {
          float t[4] = {q[0], q[sw], q[2 * sw], q[3 * sw]};
          v = v4_load(t);
        }
        acc = v4_max(acc, v);
      }
      v4_store(yr + ox, acc);
    }
    for (; ox < p->ow; ox++) yr[ox] = row_max(r, ox * sw, p->kw, dw);
  }
}

/* Threads (threads/split.h): planes (image x channel) in tiles, each computed whole by the code
 * one thread uses (max_plane's row buffer: each worker's own, in its pack buffer, with the same
 * -inf border): N threads give the bits of one. */
struct pool_job {
  const struct pool *p;
  const float *x;
  float *y;
  int fits;
};

static void pool_task(void *ctx, int32_t start, int32_t count, int32_t worker) {
  const struct pool_job *j = ctx;
  const struct pool *p = j->p;
  size_t hw = (size_t)p->h * p->w, ohw = (size_t)p->oh * p->ow;
  float *r = j->fits ? nnw_pool_pack_buf(worker) : NULL;
  if (r != NULL) max_row_border(p, r);
  for (size_t i = (size_t)start; i < (size_t)start + (size_t)count; i++) {
    if (r != NULL) max_plane(p, j->x + i * hw, j->y + i * ohw, r);
    else pool_plane(p, j->x + i * hw, j->y + i * ohw);
  }
}

void nnw_run_pool2d(const int32_t *args, uint8_t *arena) {
  struct pool p;
  pool_decode(args, &p);
  const float *x = nnw_f32_at(arena, p.x);
  float *y = nnw_f32_at(arena, p.y);
  size_t planes = (size_t)p.n * p.c, hw = (size_t)p.h * p.w, ohw = (size_t)p.oh * p.ow;
  /* every output reads a window: its taps, at least one input element each */
  uint64_t work = (uint64_t)planes * ohw * (uint64_t)p.kh * (uint64_t)p.kw;
  int32_t threads = planes <= INT32_MAX ? nnw_split_threads(work, NNW_SPLIT_MIN_ELEMS, (int32_t)planes) : 1;
  if (threads > 1) {
    struct pool_job job = {&p, x, y, max_plane_fits(&p)};
    nnw_parallel_for((int32_t)planes, nnw_split_tile((int32_t)planes, threads), pool_task, &job);
    return;
  }
  if (max_plane_fits(&p)) {
    float r[MAX_ROW];
    max_row_border(&p, r);
    for (size_t i = 0; i < planes; i++) max_plane(&p, x + i * hw, y + i * ohw, r);
    return;
  }
  for (size_t i = 0; i < planes; i++) pool_plane(&p, x + i * hw, y + i * ohw);
}
