/* The allocator the host uses for plans, arenas and inputs. 16-byte alignment keeps v128
 * accesses on whole lines; whoever calls nnw_malloc calls nnw_free. */
#define _POSIX_C_SOURCE 200112L /* posix_memalign under -std=c99 */
#define _DEFAULT_SOURCE         /* malloc_usable_size (glibc's malloc.h) */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* usable bytes of the blocks handed out through these functions and not freed, and their peak
 * (nnw_allocated_bytes); kernels.wasm's host allocates only here, from one thread */
static size_t allocated, allocated_peak;

static void *counted(void *p) {
  if (p != NULL) {
    allocated += malloc_usable_size(p);
    if (allocated > allocated_peak) allocated_peak = allocated;
  }
  return p;
}

NNW_EXPORT void *nnw_malloc(size_t bytes) {
  void *p = NULL;
  if (posix_memalign(&p, 16, bytes ? bytes : 1) != 0) return NULL;
  return counted(p);
}

NNW_EXPORT void nnw_free(void *p) {
  if (p != NULL) allocated -= malloc_usable_size(p);
  free(p);
}

NNW_EXPORT uint32_t nnw_allocated_bytes(void) { return (uint32_t)allocated; }
NNW_EXPORT uint32_t nnw_allocated_peak(void) { return (uint32_t)allocated_peak; }

/* Moves bytes within linear memory (an arena grown for larger symbolic dims keeps its weights). */
NNW_EXPORT void nnw_memmove(void *dst, const void *src, size_t bytes) { memmove(dst, src, bytes); }

/* An arena grown in place where the allocator can (a plan's arena is often the heap's last
 * block): no copy of its weights and no second arena alive at once. NULL if it can't grow: p
 * stays valid. The result keeps nnw_malloc's 16-byte alignment (else it is moved to a block that
 * has it). */
NNW_EXPORT void *nnw_realloc(void *p, size_t bytes) {
  size_t had = p != NULL ? malloc_usable_size(p) : 0;
  void *q = realloc(p, bytes ? bytes : 1);
  if (q == NULL) return NULL;
  allocated -= had;
  counted(q);
  if (((uintptr_t)q & 15) == 0) return q;
  void *r = nnw_malloc(bytes);
  if (r != NULL) memcpy(r, q, bytes);
  nnw_free(q);
  return r;
}
