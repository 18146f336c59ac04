/* The layout of U, the transformed weights both Winograd kernels (conv2d_winograd.c,
 * conv2d_winograd_s2.c) share, and the GEMM over it. Apart from conv2d.h, which conv2d.c, the
 * kernels' caller, owns. */
#ifndef NNW_WINOGRAD_H
#define NNW_WINOGRAD_H
#include <math.h>

#include "internal.h"
#include "threads/split.h"

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


/* Threads (threads/split.h): the GEMMs of all points at once, split by (point group, panel): tile
 * idx runs point group g = idx / panels on panel idx % panels exactly as nnw_wg_gemm does, so N
 * threads give the bits of one. Group g has rows first[g] * tn .. first[g + 1] * tn of V and Z and
 * U's matrix g. */
struct nnw_wg_gemms {
  int32_t tn, c, m, panels;
  const int *first;
  const float *v, *u;
  float *z;
};

static inline void nnw_wg_gemms_task(void *ctx, int32_t start, int32_t count, int32_t worker) {
  const struct nnw_wg_gemms *j = ctx;
  struct nnw_epilogue none = {1.0f, 0.0f, -INFINITY, INFINITY, NULL, 0, 0};
  for (int32_t idx = start; idx < start + count; idx++) {
    int32_t g = idx / j->panels, p = idx % j->panels * NNW_WG_PANEL;
    int32_t w = j->m - p < NNW_WG_PANEL ? j->m - p : NNW_WG_PANEL;
    size_t r0 = (size_t)j->first[g] * j->tn, rows = (size_t)(j->first[g + 1] - j->first[g]) * j->tn;
    nnw_gemm_nn_buf((int32_t)rows, w, j->c, j->v + r0 * j->c, j->c, 1, j->u + (size_t)g * j->c * j->m + (size_t)p * j->c,
                    w, j->z + r0 * j->m + p, j->m, &none, nnw_pool_pack_buf(worker));
  }
}

/* the GEMMs of `groups` point groups, on `threads` threads */
static inline void nnw_wg_gemms(const struct nnw_wg_gemms *j, int32_t groups, int32_t threads) {
  int32_t range = groups * j->panels;
  nnw_parallel_for(range, nnw_split_tile(range, threads), nnw_wg_gemms_task, (void *)j);
}
#endif
