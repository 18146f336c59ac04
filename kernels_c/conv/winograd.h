/* The layout of U, the transformed weights both Winograd kernels (conv2d_winograd.c,
 * conv2d_winograd_s2.c) share, and the GEMM over it. Apart from conv2d.h, which conv2d.c, the
 * kernels' caller, owns. */
#ifndef NNW_WINOGRAD_H
#define NNW_WINOGRAD_H
#include <math.h>

#include "internal.h"

/* U of the Winograd kernels (conv2d_winograd.c, conv2d_winograd_s2.c): each point's C x M matrix
 * in panels of WG_PANEL columns (the last one m % WG_PANEL wide), each panel C rows of its width,
 * so that a GEMM over one panel streams it from memory in order (a U too large for the caches is
 * read once a run, and read by rows of M floats it went page by page). The offset of U[ci][o]: */
#define NNW_WG_PANEL 32
static inline size_t nnw_wg_u_at(int32_t c, int32_t m, int32_t ci, int32_t o) {
  int32_t p = o / NNW_WG_PANEL * NNW_WG_PANEL, w = m - p < NNW_WG_PANEL ? m - p : NNW_WG_PANEL;
  return (size_t)p * c + (size_t)ci * w + (size_t)(o - p);
}

/* Z (rows x m, row-major) = V (rows x c) . U (one point's panels), panel by panel: the same sums
 * in the same order as one GEMM over U by rows */
static inline void nnw_wg_gemm(int32_t rows, int32_t c, int32_t m, const float *v, const float *u,
                               float *z) {
  struct nnw_epilogue none = {1.0f, 0.0f, -INFINITY, INFINITY, NULL, 0, 0};
  for (int32_t p = 0; p < m; p += NNW_WG_PANEL) {
    int32_t w = m - p < NNW_WG_PANEL ? m - p : NNW_WG_PANEL;
    nnw_gemm_nn(rows, w, c, v, c, 1, u + (size_t)p * c, w, z + p, m, &none);
  }
}

#endif
