/* resize_linear: separable two-tap interpolation over two axes of x [outer, h_in, mid, w_in, inner]
 * (bilinear Resize; 1-D with a one-row h table). The plan compiler turns the coordinate mode into
 * index and weight tables, so the kernel knows nothing of ONNX's modes; the index tables are data in
 * the arena and are range-checked at run time. */
#include "internal.h"

enum { OUTER, H_IN, W_IN, MID, INNER, H_OUT, W_OUT, N_DIMS };

static void dims(const int32_t *v, int32_t *d) {
  for (int i = 0; i < N_DIMS; i++) d[i] = v[NNW_RESIZE_LINEAR_OUTER + i];
}

int nnw_validate_resize_linear(const int32_t *v, uint32_t arena_bytes) {
  int32_t d[N_DIMS];
  dims(v, d);
  NNW_TRY(nnw_check_positive(d, N_DIMS));
  uint64_t plane = nnw_mul(nnw_mul((uint64_t)d[OUTER], (uint64_t)d[MID]), (uint64_t)d[INNER]);
  uint64_t x_n = nnw_mul(plane, nnw_mul((uint64_t)d[H_IN], (uint64_t)d[W_IN]));
  uint64_t y_n = nnw_mul(plane, nnw_mul((uint64_t)d[H_OUT], (uint64_t)d[W_OUT]));
  uint64_t h_n = 2 * (uint64_t)d[H_OUT], w_n = 2 * (uint64_t)d[W_OUT];
  int32_t x = v[NNW_RESIZE_LINEAR_X], y = v[NNW_RESIZE_LINEAR_Y];
  int32_t t[4] = {v[NNW_RESIZE_LINEAR_H_IDX], v[NNW_RESIZE_LINEAR_H_WT], v[NNW_RESIZE_LINEAR_W_IDX],
                  v[NNW_RESIZE_LINEAR_W_WT]};
  uint64_t t_n[4] = {h_n, h_n, w_n, w_n};
  NNW_TRY(nnw_check_typed(x, x_n, NNW_F32, arena_bytes, 0));
  NNW_TRY(nnw_check_typed(y, y_n, NNW_F32, arena_bytes, 0));
  NNW_TRY(nnw_check_apart(x, x_n * 4, y, y_n * 4, 0));
  for (int i = 0; i < 4; i++) {
    NNW_TRY(nnw_check_typed(t[i], t_n[i], i % 2 ? NNW_F32 : NNW_I32, arena_bytes, 0));
    NNW_TRY(nnw_check_apart(t[i], t_n[i] * 4, y, y_n * 4, 0));
  }
  return NNW_OK;
}

static int in_range(const int32_t *idx, int32_t count, int32_t n) {
  for (int32_t i = 0; i < count; i++)
    if (idx[i] < 0 || idx[i] >= n) return 0;
  return 1;
}

void nnw_run_resize_linear(const int32_t *v, uint8_t *arena) {
  int32_t d[N_DIMS];
  dims(v, d);
  const float *x = nnw_f32_at(arena, v[NNW_RESIZE_LINEAR_X]);
  float *y = nnw_f32_at(arena, v[NNW_RESIZE_LINEAR_Y]);
  const int32_t *hi = (const int32_t *)(const void *)(arena + v[NNW_RESIZE_LINEAR_H_IDX]);
  const int32_t *wi = (const int32_t *)(const void *)(arena + v[NNW_RESIZE_LINEAR_W_IDX]);
  const float *hw = nnw_f32_at(arena, v[NNW_RESIZE_LINEAR_H_WT]);
  const float *ww = nnw_f32_at(arena, v[NNW_RESIZE_LINEAR_W_WT]);
  if (!in_range(hi, 2 * d[H_OUT], d[H_IN]) || !in_range(wi, 2 * d[W_OUT], d[W_IN])) {
    nnw_run_fail(NNW_BAD_INDEX);
    return;
  }
  size_t inner = (size_t)d[INNER], col = inner, row = (size_t)d[W_IN] * inner;
  size_t mid_in = row, h_stride = (size_t)d[MID] * mid_in;   /* x: [outer][h][mid][w][inner] */
  for (int32_t o = 0; o < d[OUTER]; o++) {
    const float *xo = x + (size_t)o * (size_t)d[H_IN] * h_stride;
    for (int32_t i = 0; i < d[H_OUT]; i++) {
      float a0 = hw[2 * i], a1 = hw[2 * i + 1];
      for (int32_t m = 0; m < d[MID]; m++) {
        const float *r0 = xo + (size_t)hi[2 * i] * h_stride + (size_t)m * mid_in;
        const float *r1 = xo + (size_t)hi[2 * i + 1] * h_stride + (size_t)m * mid_in;
        if (inner == 1) {   /* NCHW: the common case, without the channel loop */
          for (int32_t j = 0; j < d[W_OUT]; j++, y++) {
            int32_t c0 = wi[2 * j], c1 = wi[2 * j + 1];
            float b0 = ww[2 * j], b1 = ww[2 * j + 1];
            *y = a0 * (b0 * r0[c0] + b1 * r0[c1]) + a1 * (b0 * r1[c0] + b1 * r1[c1]);
          }
          continue;
        }
        for (int32_t j = 0; j < d[W_OUT]; j++) {
          size_t c0 = (size_t)wi[2 * j] * col, c1 = (size_t)wi[2 * j + 1] * col;
          float b0 = ww[2 * j], b1 = ww[2 * j + 1];
          for (size_t c = 0; c < inner; c++, y++)
            *y = a0 * (b0 * r0[c0 + c] + b1 * r0[c1 + c]) + a1 * (b0 * r1[c0 + c] + b1 * r1[c1 + c]);
        }
      }
    }
  }
}
