/* nnw_gemm_nn split over the pool by rows (split.h): blocks of four rows of A, each row taking the
 * path one thread gives it (whole blocks of four, then the last tile's tail rows; the column
 * blocking depends on n and k only), so N threads give the bits of one. Used by conv2d's GEMMs and
 * the gemm / matmul ops; each worker packs A into its own buffer. */
#include "threads/split.h"

#include "internal.h"

struct rows_job {
  int32_t m, n, k;
  const float *a, *b;
  float *y;
  ptrdiff_t a_rs, a_cs, ldb, ldy;
  struct nnw_epilogue ep;
};

static void rows_task(void *ctx, int32_t start, int32_t count, int32_t worker) {
  const struct rows_job *j = ctx;
  int32_t r0 = 4 * start, rows = j->m - r0 < 4 * count ? j->m - r0 : 4 * count;
  struct nnw_epilogue e = j->ep;
  if (e.c != NULL) e.c += r0 * e.c_rs;
  nnw_gemm_nn_buf(rows, j->n, j->k, j->a + r0 * j->a_rs, j->a_rs, j->a_cs, j->b, j->ldb, j->y + (size_t)r0 * j->ldy,
                  j->ldy, &e, nnw_pool_pack_buf(worker));
}

void nnw_gemm_nn_split(int32_t m, int32_t n, int32_t k, const float *a, ptrdiff_t a_rs, ptrdiff_t a_cs, const float *b,
                       ptrdiff_t ldb, float *y, ptrdiff_t ldy, const struct nnw_epilogue *ep) {
  int32_t blocks = (m + 3) / 4;
  int32_t threads = nnw_split_threads((uint64_t)m * n * k, NNW_SPLIT_MIN_FLOPS, blocks);
  if (threads > 1) {
    struct rows_job job = {m, n, k, a, b, y, a_rs, a_cs, ldb, ldy, *ep};
    nnw_parallel_for(blocks, nnw_split_tile(blocks, threads), rows_task, &job);
    return;
  }
  nnw_gemm_nn(m, n, k, a, a_rs, a_cs, b, ldb, y, ldy, ep);
}
