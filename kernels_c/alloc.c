/* The allocator the host uses for plans, arenas and inputs. 16-byte alignment keeps v128
 * accesses on whole lines; whoever calls nnw_malloc calls nnw_free. */
#define _POSIX_C_SOURCE 200112L /* posix_memalign under -std=c99 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

NNW_EXPORT void *nnw_malloc(size_t bytes) {
  void *p = NULL;
  if (posix_memalign(&p, 16, bytes ? bytes : 1) != 0) return NULL;
  return p;
}

NNW_EXPORT void nnw_free(void *p) { free(p); }

/* Moves bytes within linear memory (an arena grown for larger symbolic dims keeps its weights). */
NNW_EXPORT void nnw_memmove(void *dst, const void *src, size_t bytes) { memmove(dst, src, bytes); }

/* An arena grown in place where the allocator can (a plan's arena is often the heap's last
 * block): no copy of its weights and no second arena alive at once. NULL if it can't grow: p
 * stays valid. The result keeps nnw_malloc's 16-byte alignment (else it is moved to a block that
 * has it). */
NNW_EXPORT void *nnw_realloc(void *p, size_t bytes) {
  void *q = realloc(p, bytes ? bytes : 1);
  if (q == NULL || ((uintptr_t)q & 15) == 0) return q;
  void *r = nnw_malloc(bytes);
  if (r != NULL) memcpy(r, q, bytes);
  free(q);
  return r;
}
