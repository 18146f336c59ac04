/* dft against a double-precision direct transform (cos/sin from libm), real and complex input,
 * frames with a step and a window, zero padding (n < len), inverse; and hostile arguments. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"
#include "tests.h"

static const double PI = 3.14159265358979323846;

static void dft_case(int batch, int frames, int step, int n, int xlen, int inner, int cin, int len, int m,
                     int inverse, int window) {
  size_t xn = (size_t)batch * xlen * inner * cin, yn = (size_t)batch * frames * m * inner * 2;
  uint32_t bytes = (uint32_t)(4 * (xn + n + 4 * len + yn) + 64);
  uint8_t *arena = arena_new(bytes);
  int32_t ox = 0, ow = (int32_t)(4 * xn), ot = (ow + 4 * n + 7) / 8 * 8, oy = ot + 16 * len;
  float *x = (float *)(arena + ox), *w = (float *)(arena + ow);
  double *tw = (double *)(void *)(arena + ot);
  for (size_t i = 0; i < xn; i++) x[i] = rng_float(-1, 1);
  for (int t = 0; t < n; t++) w[t] = rng_float(0, 1);
  double sign = inverse ? 1 : -1;
  for (int q = 0; q < len; q++) tw[2 * q] = cos(2 * PI * q / len), tw[2 * q + 1] = sign * sin(2 * PI * q / len);
  int32_t args[NNW_DFT_NARGS] = {ox, window ? ow : -1, ot, oy, batch, frames, step, n, xlen, inner, cin, len, m, inverse};
  size_t bad = 0;
  if (run_op(NNW_OP_DFT, args, NNW_DFT_NARGS, arena, bytes) == NNW_OK) {
    const float *y = (const float *)(arena + oy);
    for (int b = 0; b < batch; b++)
      for (int f = 0; f < frames; f++)
        for (int k = 0; k < m; k++)
          for (int j = 0; j < inner; j++) {
            double re = 0, im = 0;
            for (int t = 0; t < n; t++) {
              const float *z = x + (((size_t)b * xlen + (size_t)f * step + t) * inner + j) * cin;
              double g = window ? w[t] : 1, zr = z[0] * g, zi = cin == 2 ? z[1] * g : 0;
              double a = sign * 2 * PI * (double)((long)t * k % len) / len;
              re += zr * cos(a) - zi * sin(a), im += zr * sin(a) + zi * cos(a);
            }
            if (inverse) re /= len, im /= len;
            const float *o = y + ((((size_t)b * frames + f) * m + k) * inner + j) * 2;
            bad += fabs(o[0] - re) > 1e-4 * (1 + fabs(re)) || fabs(o[1] - im) > 1e-4 * (1 + fabs(im));
          }
  } else {
    bad = 1;
  }
  expect(bad == 0, "dft batch%d frames%d step%d n%d xlen%d inner%d cin%d len%d m%d inverse%d window%d: %zu wrong",
         batch, frames, step, n, xlen, inner, cin, len, m, inverse, window, bad);
  free(arena);
}

void test_dft(void) {
  dft_case(3, 1, 1, 16, 16, 1, 1, 16, 9, 0, 0);     /* rfft of 16 */
  dft_case(2, 1, 1, 12, 12, 3, 2, 12, 12, 0, 0);    /* complex, axis not last */
  dft_case(1, 1, 1, 5, 5, 1, 2, 8, 8, 0, 0);        /* zero padded to 8 */
  dft_case(2, 1, 1, 7, 7, 2, 2, 7, 7, 1, 0);        /* inverse */
  dft_case(1, 8, 160, 400, 1600, 1, 1, 400, 201, 0, 1); /* stft, Whisper's frames */
  /* hostile: x 4 floats at 0, twiddle 4 double pairs at 16, y 2 pairs at 80; 96 bytes */
  int32_t ok[NNW_DFT_NARGS] = {0, -1, 16, 80, 1, 1, 1, 4, 4, 1, 1, 4, 2, 0};
  load_patched("dft valid", NNW_OP_DFT, ok, NNW_DFT_NARGS, -1, 0, 96, NNW_OK);
  static const struct arg_patch bad[] = {
      {"dft cin 3", NNW_DFT_CIN, 3, NNW_BAD_ARGS},
      {"dft n > len", NNW_DFT_N, 5, NNW_BAD_ARGS},
      {"dft m > len", NNW_DFT_M, 5, NNW_BAD_ARGS},
      {"dft frames past the signal", NNW_DFT_FRAMES, 2, NNW_BAD_ARGS},
      {"dft inverse 2", NNW_DFT_INVERSE, 2, NNW_BAD_ARGS},
      {"dft y past the arena", NNW_DFT_Y, 92, NNW_OUT_OF_BOUNDS},
      {"dft y overlaps x", NNW_DFT_Y, 8, NNW_BAD_ARGS},
      {"dft twiddle past the arena", NNW_DFT_TWIDDLE, 72, NNW_OUT_OF_BOUNDS},
      {"dft twiddle misaligned", NNW_DFT_TWIDDLE, 20, NNW_BAD_ARGS},
      {"dft len 0", NNW_DFT_LEN, 0, NNW_BAD_ARGS},
      {"dft batch huge", NNW_DFT_BATCH, 0x40000000, NNW_OUT_OF_BOUNDS},
  };
  load_patches(NNW_OP_DFT, ok, NNW_DFT_NARGS, 96, bad, sizeof bad / sizeof bad[0]);
}
