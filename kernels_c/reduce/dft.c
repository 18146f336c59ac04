/* dft (DFT, STFT): a direct transform, every output bin a sum over the frame's samples in order,
 * in double, against a table of float64 twiddles the plan computed (so no engine's sin/cos is involved and
 * results are the same bits everywhere). O(n*m) per frame: the helper graphs that use it
 * (transformers.js's rfft and stft) transform a few hundred samples. */
#include "internal.h"

int nnw_validate_dft(const int32_t *v, uint32_t arena_bytes) {
  int32_t dims[] = {v[NNW_DFT_BATCH], v[NNW_DFT_FRAMES], v[NNW_DFT_STEP], v[NNW_DFT_N], v[NNW_DFT_XLEN],
                    v[NNW_DFT_INNER], v[NNW_DFT_CIN], v[NNW_DFT_LEN], v[NNW_DFT_M]};
  NNW_TRY(nnw_check_positive(dims, 9));
  int32_t frames = dims[1], step = dims[2], n = dims[3], xlen = dims[4], cin = dims[6], len = dims[7];
  if ((cin != 1 && cin != 2) || n > len || dims[8] > len || v[NNW_DFT_INVERSE] & ~1) return NNW_BAD_ARGS;
  if (nnw_add(nnw_mul((uint64_t)(frames - 1), (uint64_t)step), (uint64_t)n) > (uint64_t)xlen) return NNW_BAD_ARGS;
  uint64_t cols = nnw_mul((uint64_t)dims[0], (uint64_t)dims[5]);
  uint64_t x_count = nnw_mul(nnw_mul(cols, (uint64_t)xlen), (uint64_t)cin);
  uint64_t y_count = nnw_mul(nnw_mul(nnw_mul(cols, (uint64_t)frames), (uint64_t)dims[8]), 2);
  NNW_TRY(nnw_check_typed(v[NNW_DFT_X], x_count, NNW_F32, arena_bytes, 0));
  NNW_TRY(nnw_check_typed(v[NNW_DFT_WINDOW], (uint64_t)n, NNW_F32, arena_bytes, 1));
  NNW_TRY(nnw_check_typed(v[NNW_DFT_TWIDDLE], 2 * (uint64_t)len, NNW_F64, arena_bytes, 0));
  NNW_TRY(nnw_check_typed(v[NNW_DFT_Y], y_count, NNW_F32, arena_bytes, 0));
  NNW_TRY(nnw_check_apart(v[NNW_DFT_X], 4 * x_count, v[NNW_DFT_Y], 4 * y_count, 0));
  if (v[NNW_DFT_WINDOW] >= 0) NNW_TRY(nnw_check_apart(v[NNW_DFT_WINDOW], 4 * (uint64_t)n, v[NNW_DFT_Y], 4 * y_count, 0));
  NNW_TRY(nnw_check_apart(v[NNW_DFT_TWIDDLE], 16 * (uint64_t)len, v[NNW_DFT_Y], 4 * y_count, 0));
  return NNW_OK;
}

void nnw_run_dft(const int32_t *v, uint8_t *arena) {
  int32_t batch = v[NNW_DFT_BATCH], frames = v[NNW_DFT_FRAMES], step = v[NNW_DFT_STEP], n = v[NNW_DFT_N];
  int32_t xlen = v[NNW_DFT_XLEN], inner = v[NNW_DFT_INNER], cin = v[NNW_DFT_CIN], len = v[NNW_DFT_LEN];
  int32_t m = v[NNW_DFT_M];
  const float *x = nnw_f32_at(arena, v[NNW_DFT_X]);
  const double *tw = (const double *)(void *)(arena + v[NNW_DFT_TWIDDLE]);
  const float *win = v[NNW_DFT_WINDOW] >= 0 ? nnw_f32_at(arena, v[NNW_DFT_WINDOW]) : 0;
  float *y = nnw_f32_at(arena, v[NNW_DFT_Y]);
  double scale = v[NNW_DFT_INVERSE] ? 1.0 / len : 1.0;
  for (int32_t b = 0; b < batch; b++)
    for (int32_t f = 0; f < frames; f++)
      for (int32_t j = 0; j < inner; j++) {
        const float *z = x + (((size_t)b * xlen + (size_t)f * step) * inner + j) * cin;
        size_t zs = (size_t)inner * cin;
        float *out = y + (((size_t)b * frames + f) * m * inner + j) * 2;
        for (int32_t k = 0; k < m; k++) {
          double re = 0, im = 0;
          int32_t q = 0; /* (t*k) mod len, stepped */
          for (int32_t t = 0; t < n; t++) {
            double w = win ? win[t] : 1.0, zr = z[t * zs] * w, zi = cin == 2 ? z[t * zs + 1] * w : 0.0;
            double c = tw[2 * q], s = tw[2 * q + 1];
            re += zr * c - zi * s;
            im += zr * s + zi * c;
            q += k;
            if (q >= len) q -= len * (q / len);
          }
          out[(size_t)k * inner * 2] = (float)(re * scale);
          out[(size_t)k * inner * 2 + 1] = (float)(im * scale);
        }
      }
}
