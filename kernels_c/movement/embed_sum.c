/* embed_sum: EmbedLayerNormalization's three embedding lookups summed row by row (word + position
 * + segment, onnxruntime's order), and its mask_index. Unlike ONNX Gather, onnxruntime refuses a
 * negative id here, so no index wraps: every id is checked before y is written, and one outside its
 * table stops the run with NNW_BAD_INDEX. The norm that follows is skip_norm's. */
#include "internal.h"

struct embed {
  int32_t ids, segs, pos_ids, word, pos, seg, mask, y, mask_index, dtype, batch, seq, hidden;
  int32_t word_rows, pos_rows, seg_rows, pos_bs;
};

static void decode(const int32_t *v, struct embed *p) {
  p->ids = v[NNW_EMBED_SUM_IDS];
  p->segs = v[NNW_EMBED_SUM_SEGS];
  p->pos_ids = v[NNW_EMBED_SUM_POS_IDS];
  p->word = v[NNW_EMBED_SUM_WORD];
  p->pos = v[NNW_EMBED_SUM_POS];
  p->seg = v[NNW_EMBED_SUM_SEG];
  p->mask = v[NNW_EMBED_SUM_MASK];
  p->y = v[NNW_EMBED_SUM_Y];
  p->mask_index = v[NNW_EMBED_SUM_MASK_INDEX];
  p->dtype = v[NNW_EMBED_SUM_IDX_DTYPE];
  p->batch = v[NNW_EMBED_SUM_BATCH];
  p->seq = v[NNW_EMBED_SUM_SEQ];
  p->hidden = v[NNW_EMBED_SUM_HIDDEN];
  p->word_rows = v[NNW_EMBED_SUM_WORD_ROWS];
  p->pos_rows = v[NNW_EMBED_SUM_POS_ROWS];
  p->seg_rows = v[NNW_EMBED_SUM_SEG_ROWS];
  p->pos_bs = v[NNW_EMBED_SUM_POS_BS];
}

int nnw_validate_embed_sum(const int32_t *v, uint32_t arena_bytes) {
  struct embed p;
  decode(v, &p);
  int32_t dims[] = {p.batch, p.seq, p.hidden, p.word_rows, p.pos_rows};
  NNW_TRY(nnw_check_positive(dims, 5));
  if (p.dtype != NNW_I32 && p.dtype != NNW_I64) return NNW_BAD_ARGS;
  if (p.pos_bs != 0 && p.pos_bs != p.seq) return NNW_BAD_ARGS;
  if ((p.segs == -1) != (p.seg == -1) || (p.seg != -1 && p.seg_rows <= 0)) return NNW_BAD_ARGS;
  uint64_t tokens = nnw_mul((uint64_t)p.batch, (uint64_t)p.seq), row = nnw_mul((uint64_t)p.hidden, 4);
  uint64_t y_bytes = nnw_mul(tokens, row), esize = (uint64_t)nnw_dtype_size(p.dtype);
  uint64_t pos_count = p.pos_bs ? tokens : (uint64_t)p.seq;
  /* ids and the mask are read with memcpy: any alignment */
  NNW_TRY(nnw_check_tensor(p.ids, nnw_mul(tokens, esize), arena_bytes, 0, 0));
  NNW_TRY(nnw_check_tensor(p.segs, nnw_mul(tokens, esize), arena_bytes, 1, 0));
  NNW_TRY(nnw_check_tensor(p.pos_ids, nnw_mul(pos_count, esize), arena_bytes, 1, 0));
  NNW_TRY(nnw_check_tensor(p.word, nnw_mul((uint64_t)p.word_rows, row), arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(p.pos, nnw_mul((uint64_t)p.pos_rows, row), arena_bytes, 0, 1));
  NNW_TRY(nnw_check_tensor(p.seg, nnw_mul((uint64_t)p.seg_rows, row), arena_bytes, 1, 1));
  NNW_TRY(nnw_check_tensor(p.mask, nnw_mul(tokens, 4), arena_bytes, 1, 0));
  NNW_TRY(nnw_check_typed(p.mask_index, (uint64_t)p.batch, NNW_I32, arena_bytes, 1));
  NNW_TRY(nnw_check_tensor(p.y, y_bytes, arena_bytes, 0, 1));
  const int32_t read[] = {p.ids, p.segs, p.pos_ids, p.word, p.pos, p.seg, p.mask};
  const uint64_t read_bytes[] = {tokens * esize, tokens * esize, pos_count * esize,
                                 nnw_mul((uint64_t)p.word_rows, row), nnw_mul((uint64_t)p.pos_rows, row),
                                 nnw_mul((uint64_t)(p.seg_rows > 0 ? p.seg_rows : 0), row), tokens * 4};
  for (int r = 0; r < 7; r++) {
    NNW_TRY(nnw_check_apart(read[r], read_bytes[r], p.y, y_bytes, 0));
    NNW_TRY(nnw_check_apart(read[r], read_bytes[r], p.mask_index, (uint64_t)p.batch * 4, 0));
  }
  return nnw_check_apart(p.y, y_bytes, p.mask_index, (uint64_t)p.batch * 4, 0);
}

static int64_t id_at(const uint8_t *t, int32_t dtype, size_t k) {
  if (dtype == NNW_I32) {
    int32_t v;
    memcpy(&v, t + 4 * k, 4);
    return v;
  }
  int64_t v;
  memcpy(&v, t + 8 * k, 8);
  return v;
}

void nnw_run_embed_sum(const int32_t *v, uint8_t *arena) {
  struct embed p;
  decode(v, &p);
  const uint8_t *ids = arena + p.ids, *segs = p.segs >= 0 ? arena + p.segs : NULL;
  const uint8_t *pos_ids = p.pos_ids >= 0 ? arena + p.pos_ids : NULL;
  size_t tokens = (size_t)p.batch * (size_t)p.seq, n = (size_t)p.hidden;
  for (size_t t = 0; t < tokens; t++) {
    int64_t w = id_at(ids, p.dtype, t), s = segs ? id_at(segs, p.dtype, t) : 0;
    size_t b = t / (size_t)p.seq, j = t % (size_t)p.seq;
    int64_t q = pos_ids ? id_at(pos_ids, p.dtype, b * (size_t)p.pos_bs + j) : (int64_t)j;
    if (w < 0 || w >= p.word_rows || q < 0 || q >= p.pos_rows || (segs && (s < 0 || s >= p.seg_rows))) {
      nnw_run_fail(NNW_BAD_INDEX);
      return;
    }
  }
  const float *word = nnw_f32_at(arena, p.word), *pos = nnw_f32_at(arena, p.pos);
  const float *seg = nnw_f32_at(arena, p.seg);
  float *y = nnw_f32_at(arena, p.y);
  for (size_t t = 0; t < tokens; t++, y += n) {
    size_t b = t / (size_t)p.seq, j = t % (size_t)p.seq;
    const float *wr = word + (size_t)id_at(ids, p.dtype, t) * n;
    const float *pr = pos + (size_t)(pos_ids ? id_at(pos_ids, p.dtype, b * (size_t)p.pos_bs + j) : (int64_t)j) * n;
    if (segs) {
      const float *sr = seg + (size_t)id_at(segs, p.dtype, t) * n;
      for (size_t i = 0; i < n; i++) y[i] = wr[i] + pr[i] + sr[i];
    } else {
      for (size_t i = 0; i < n; i++) y[i] = wr[i] + pr[i];
    }
  }
  if (p.mask_index >= 0) {
    int32_t *mi = (int32_t *)(void *)(arena + p.mask_index);
    for (int32_t b = 0; b < p.batch; b++) {
      int32_t count = 0;
      if (p.mask >= 0)
        for (int32_t j = 0; j < p.seq; j++) {
          int32_t m;
          memcpy(&m, arena + p.mask + 4 * ((size_t)b * p.seq + j), 4);
          count += m == 1;
        }
      mi[b] = count;
    }
  }
}
