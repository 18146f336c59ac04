"""Ops that write updates into a copy of data at given indices: ScatterElements (and its old name
Scatter), ScatterND, TensorScatter (a KV-cache write). reduction "none" lets the last duplicate
index win; add/mul/max/min combine every update with the data (numpy's ufunc.at)."""
from . import shapes as S
from .registry import op

REDUCTIONS = {"none": None, "add": "add", "mul": "multiply", "max": "maximum", "min": "minimum"}


def _reduction(node):
    red = node.attr("reduction", "none")
    since = {"none": 0, "add": 16, "mul": 16, "max": 18, "min": 18}.get(red)
    if since is None or node.opset < since or node.op_type == "Scatter" and red != "none":
        S.fail(node, f"unknown reduction {red!r} at opset {node.opset}")
    return REDUCTIONS[red]


def _write(out, where, updates, ufunc):
    import numpy as np
    if ufunc is None:
        out[where] = updates
    else:
        getattr(np, ufunc).at(out, where, updates)
    return out


def _in_range(node, idx, n, what="indices"):
    import numpy as np
    if idx.size and (np.min(idx) < -n or np.max(idx) >= n):
        S.fail(node, f"{what} out of range [{-n}, {n - 1}]")
    return np.where(idx < 0, idx + n, idx).astype(np.int64)


# --- ScatterElements, Scatter ------------------------------------------------------------------------

def infer_scatter_elements(node, inputs, consts):
    data, idx, upd = (S.need(node, inputs, i) for i in range(3))
    _reduction(node)
    ds, is_, us = S.shape(data), S.shape(idx), S.shape(upd)
    if is_ is not None and us is not None:
        if len(is_) != len(us):
            S.fail(node, f"indices shape {list(is_)} and updates shape {list(us)} differ")
        for a, b in zip(is_, us):
            S.merge_dims(node, a, b, "indices and updates")
    if ds is not None:
        if is_ is not None and len(is_) != len(ds):
            S.fail(node, f"indices rank {len(is_)} differs from data rank {len(ds)}")
        S.axis(node, node.attr("axis", 0), len(ds))
    S.same_dtype(node, inputs, (0, 2))
    return [(data.dtype, ds)]


def scatter_elements(node, data, indices, updates):
    import numpy as np
    if indices.shape != updates.shape or indices.ndim != data.ndim:
        S.fail(node, f"indices {list(indices.shape)}, updates {list(updates.shape)} and data "
                     f"{list(data.shape)} must share one shape (indices and updates) and rank")
    a = S.axis(node, node.attr("axis", 0), data.ndim)
    where = list(np.indices(indices.shape, sparse=True))
    where[a] = _in_range(node, indices, data.shape[a])
    if any(i > d for i, d in zip(indices.shape, data.shape)):
        S.fail(node, f"indices shape {list(indices.shape)} exceeds data shape {list(data.shape)}")
    return _write(data.copy(), tuple(where), updates, _reduction(node))


for _since in (11, 13, 16, 18):     # 16 adds reduction add/mul, 18 max/min
    op("ScatterElements", _since, infer_scatter_elements)(scatter_elements)
for _since in (9, 11):              # the deprecated name of ScatterElements without reduction
    op("Scatter", _since, infer_scatter_elements)(scatter_elements)


# --- ScatterND --------------------------------------------------------------------------------------

def infer_scatter_nd(node, inputs, consts):
    data, idx, upd = (S.need(node, inputs, i) for i in range(3))
    _reduction(node)
    ds, is_, us = S.shape(data), S.shape(idx), S.shape(upd)
    if ds is not None and is_ is not None and us is not None and S.known(is_[-1]):
        k = is_[-1]
        want = (*is_[:-1], *ds[k:])
        if k > len(ds) or len(us) != len(want):
            S.fail(node, f"updates shape {list(us)} must be {list(want)} for indices {list(is_)} "
                         f"into data {list(ds)}")
        for a, b in zip(us, want):
            S.merge_dims(node, a, b, "updates and indices/data")
    S.same_dtype(node, inputs, (0, 2))
    return [(data.dtype, ds)]


def scatter_nd(node, data, indices, updates):
    k = indices.shape[-1] if indices.ndim else 0
    if indices.ndim < 1 or k > data.ndim or updates.shape != (*indices.shape[:-1], *data.shape[k:]):
        S.fail(node, f"updates shape {list(updates.shape)} does not fit indices {list(indices.shape)} "
                     f"into data {list(data.shape)}")
    where = tuple(_in_range(node, indices[..., j], data.shape[j]) for j in range(k))
    return _write(data.copy(), where, updates, _reduction(node))


for _since in (11, 13, 16, 18):
    op("ScatterND", _since, infer_scatter_nd)(scatter_nd)


# --- TensorScatter ----------------------------------------------------------------------------------

def _tensor_scatter_axis(node, r):
    if node.attr("mode", "linear") not in ("linear", "circular"):
        S.fail(node, f"mode must be linear or circular, got {node.attr('mode')!r}")
    a = S.axis(node, node.attr("axis", -2), r)
    if a == 0:
        S.fail(node, "axis must not be the batch axis 0")
    return a


def infer_tensor_scatter(node, inputs, consts):
    cache, upd = S.need(node, inputs, 0), S.need(node, inputs, 1)
    cs, us = S.shape(cache), S.shape(upd)
    if cs is not None:
        a = _tensor_scatter_axis(node, len(cs))
        if us is not None:
            if len(us) != len(cs):
                S.fail(node, f"update shape {list(us)} and cache shape {list(cs)} differ in rank")
            for i, (c, u) in enumerate(zip(cs, us)):
                if i != a:
                    S.merge_dims(node, c, u, f"dim {i} of cache and update")
                elif S.known(c) and S.known(u) and u > c:
                    S.fail(node, f"update length {u} exceeds the cache length {c} along axis {a}")
    S.same_dtype(node, inputs, (0, 1))
    return [(cache.dtype, cs)]


@op("TensorScatter", 24, infer_tensor_scatter)
def tensor_scatter(node, cache, update, write_indices=None):
    """present[b, ..., w[b] + i, ...] = update[b, ..., i, ...] along axis; circular wraps the
    position modulo the cache length, linear refuses positions past it."""
    import numpy as np
    a = _tensor_scatter_axis(node, cache.ndim)
    if update.ndim != cache.ndim or any(u != c for i, (u, c) in enumerate(zip(update.shape, cache.shape)) if i != a) \
            or update.shape[a] > cache.shape[a]:
        S.fail(node, f"update shape {list(update.shape)} does not fit cache shape {list(cache.shape)}")
    n, length = cache.shape[a], update.shape[a]
    w = np.zeros(cache.shape[0], np.int64) if write_indices is None else write_indices.reshape(-1).astype(np.int64)
    if w.size != cache.shape[0]:
        S.fail(node, f"write_indices has {w.size} values for batch {cache.shape[0]}")
    out = cache.copy()
    for b in range(cache.shape[0]):
        pos = w[b] + np.arange(length)
        if node.attr("mode", "linear") == "circular":
            pos %= max(n, 1)
        elif length and (pos[0] < 0 or pos[-1] >= n):
            S.fail(node, f"write index {w[b]} + {length} updates runs past the cache length {n}")
        out[b][(slice(None),) * (a - 1) + (pos,)] = update[b]
    return out
