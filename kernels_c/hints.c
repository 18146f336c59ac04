/* Host hints (internal.h): which of a kernel's equivalent variants to run. The wasmtime host sets
 * NNW_HINT_SPLAT_BY_SHUFFLE | NNW_HINT_HOISTS_LOADS; V8 hosts leave 0. Unknown bits are ignored. */
#include "internal.h"

int32_t nnw_host_hints = 0;

NNW_EXPORT void nnw_set_host_hints(int32_t hints) { nnw_host_hints = hints; }
