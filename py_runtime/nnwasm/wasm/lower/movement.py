"""Data-movement lowerings: copies (Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout),
Concat and Transpose. They move bytes, so they take any fixed-size dtype. Slice, Expand, Tile,
Split, Pad and Depth/SpaceToDepth are in reindex.py (gather_axes tables), Gather in gather.py,
Resize in resize.py."""
from ...tensor import numel
from .common import axis_attr


def lower_copy(node, b):
    nbytes = b.nbytes(node.outputs[0])
    b.emit("copy2d", src=b.ref(node.inputs[0]), dst=b.ref(node.outputs[0]), rows=1, row_bytes=nbytes,
           src_stride=nbytes, dst_stride=nbytes)


def lower_concat(node, b):
    y = node.outputs[0]
    out = b.shape(y)
    axis = axis_attr(node, len(out), 0)
    size = b.dtype(y).size
    outer, inner = numel(out[:axis]), numel(out[axis + 1:])
    at = 0
    for x in node.inputs:
        if not x:
            continue
        rows = b.shape(x)[axis] * inner * size
        if rows:
            b.emit("copy2d", src=b.ref(x), dst=b.ref(y, at), rows=outer, row_bytes=rows, src_stride=rows,
                   dst_stride=out[axis] * inner * size)
        at += rows


def _transpose_axes(shape, perm):
    """(dims, x element strides) in output order, with size-1 axes dropped and neighbours that
    stay contiguous in x merged: fewer, longer loops, and most permutations fit in 6 dims."""
    strides, acc = [0] * len(shape), 1
    for i in range(len(shape) - 1, -1, -1):
        strides[i], acc = acc, acc * shape[i]
    axes = []
    for p in perm:
        d, st = shape[p], strides[p]
        if d == 1:
            continue
        if axes and axes[-1][1] == d * st:      # the previous axis steps over exactly this one
            axes[-1] = (axes[-1][0] * d, st)
        else:
            axes.append((d, st))
    return axes or [(1, 1)]


def _perm(node, rank):
    perm = node.attr("perm")
    return list(perm) if perm is not None else list(range(rank - 1, -1, -1))


def check_transpose(node, g):
    shape = g.values[node.inputs[0]].shape
    return None if len(_transpose_axes(shape, _perm(node, len(shape)))) <= 6 else "more than 6 dims after merging"


def lower_transpose(node, b):
    x = node.inputs[0]
    axes = _transpose_axes(b.shape(x), _perm(node, len(b.shape(x))))
    d = [a[0] for a in axes] + [1] * (6 - len(axes))
    st = [a[1] for a in axes] + [0] * (6 - len(axes))
    args = {"x": b.ref(x), "y": b.ref(node.outputs[0]), "esize": b.dtype(x).size, "rank": len(axes)}
    args.update({f"d{i}": d[i] for i in range(6)})
    args.update({f"s{i}": st[i] for i in range(6)})
    b.emit("transpose", **args)


def check_dropout(node, g):
    """Inference Dropout is a copy (optimizer.cleanup.drop_identities bypasses it unless it makes a graph
    output); its mask must be unread and training mode off."""
    if len(node.inputs) > 2 and node.inputs[2]:
        return "Dropout with a training_mode input"
    mask = node.outputs[1] if len(node.outputs) > 1 else ""
    if mask and (mask in g.consumers() or mask in {v.name for v in g.outputs}):
        return "Dropout's mask output is used"
    return None
