"""Conv and ConvTranspose (1-D, 2-D, 3-D; groups, strides, dilations, pads, auto_pad).

The numpy kernels loop over kernel taps, never over pixels: Conv gathers the taps into one
im2col matrix per group and runs one matmul; depthwise Conv (one input channel per group)
multiply-accumulates tap by tap; ConvTranspose scatters one matmul per tap into the output.
"""
from . import shapes as S
from . import window as W
from .registry import op


def _kernel(node, w_shape, nd):
    attr = S.ints_attr(node, "kernel_shape")
    from_w = [d if S.known(d) else None for d in w_shape[2:]] if w_shape is not None else [None] * nd
    if attr is None:
        return from_w
    for a, b in zip(attr, from_w):
        if b is not None and a != b:
            S.fail(node, f"kernel_shape {attr} does not match weight shape {list(w_shape)}")
    return attr


def _spatial_rank(node, x, w):
    xs, ws = S.shape(x), S.shape(w)
    if xs is not None and ws is not None and len(xs) != len(ws):
        S.fail(node, f"input shape {list(xs)} and weight shape {list(ws)} differ in rank")
    r = len(xs) if xs is not None else len(ws) if ws is not None else None
    if r is not None and r < 3:
        S.fail(node, f"input and weight need rank >= 3, got {r}")
    return xs, ws, None if r is None else r - 2


def _check_bias(node, b, m):
    bs = S.shape(b)
    if bs is not None:
        if len(bs) != 1:
            S.fail(node, f"bias must be 1-D, got shape {list(bs)}")
        S.merge_dims(node, bs[0], m, "bias size and output channels")


def _group(node):
    g = node.attr("group", 1)
    if g < 1:
        S.fail(node, f"group must be >= 1, got {g}")
    return g


def _infer_prologue(node, inputs):
    """What Conv and ConvTranspose inference share: None for unknown rank, else
    (dtype, x shape, w shape, spatial rank, group, kernel, strides, dilations, pads, n, c)."""
    x, w = S.need(node, inputs, 0), S.need(node, inputs, 1)
    dt = S.same_dtype(node, inputs)
    xs, ws, nd = _spatial_rank(node, x, w)
    if nd is None:
        return dt, None
    kernel = _kernel(node, ws, nd)
    n, c = (xs[0], xs[1]) if xs is not None else (None, None)
    return dt, (xs, ws, nd, _group(node), kernel, *W.params(node, nd, kernel), n, c)


def infer_conv(node, inputs, consts):
    dt, p = _infer_prologue(node, inputs)
    if p is None:
        return [(dt, None)]
    xs, ws, nd, g, kernel, strides, dilations, pads, n, c = p
    m = ws[0] if ws is not None else None
    if ws is not None and S.known(ws[1]):
        S.merge_dims(node, c, ws[1] * g, f"input channels of {list(xs) if xs else None} vs weight "
                                        f"{list(ws)} x group {g}")
    if S.known(m) and m % g:
        S.fail(node, f"output channels {m} are not a multiple of group {g}")
    _check_bias(node, S.get(inputs, 2), m)
    out = W.geometry(node, xs[2:] if xs is not None else [None] * nd, kernel, strides, dilations, pads)[0]
    return [(dt, (n, m, *out))]


@op("Conv", 1, infer_conv)
def conv(node, x, w, b=None):
    import numpy as np
    n, c = x.shape[:2]
    m, cg = w.shape[:2]
    g = _group(node)
    kernel = list(w.shape[2:])
    strides, dilations, pads = W.params(node, x.ndim - 2, kernel)
    out, pb, pe = W.geometry(node, x.shape[2:], kernel, strides, dilations, pads)
    if cg * g != c or m % g:
        S.fail(node, f"input shape {list(x.shape)} does not fit weight shape {list(w.shape)} with group {g}")
    if any(pb) or any(pe):
        x = np.pad(x, [(0, 0), (0, 0)] + list(zip(pb, pe)))
    xg = x.reshape(n, g, cg, *x.shape[2:])
    taps = W.taps(kernel)
    if cg == 1 and len(taps) > 1:
        # depthwise: each tap is a broadcast multiply-add; w viewed as (1, g, m/g, taps, 1...)
        wg = w.reshape(1, g, m // g, len(taps), *[1] * len(out))
        y = np.zeros((n, g, m // g, *out), dtype=np.result_type(x, w))
        for k, tap in enumerate(taps):
            y += xg[(..., *W.tap_slices(tap, out, strides, dilations))] * wg[:, :, :, k]
    else:
        cols = [xg[(..., *W.tap_slices(tap, out, strides, dilations))] for tap in taps]
        col = cols[0] if len(cols) == 1 else np.stack(cols, axis=3)        # (n, g, cg, taps, *out)
        col = col.reshape(n, g, cg * len(taps), -1)
        y = np.matmul(w.reshape(g, m // g, cg * len(taps)), col)            # (n, g, m/g, pixels)
    y = y.reshape(n, m, *out)
    if b is not None:
        y = y + b.reshape(m, *[1] * len(out))
    return y.astype(x.dtype, copy=False)


def transpose_geometry(node, in_sizes, kernel, strides, dilations, pads):
    """Output sizes and begin pads of ConvTranspose (spec: output_shape overrides pads)."""
    nd = len(in_sizes)
    out_pad = S.ints_attr(node, "output_padding") or [0] * nd
    out_shape = S.ints_attr(node, "output_shape")
    auto_pad = node.attr("auto_pad", "NOTSET")
    if auto_pad not in W.AUTO_PADS or len(out_pad) != nd:
        S.fail(node, f"invalid auto_pad {auto_pad!r} or output_padding {out_pad}")
    explicit = out_shape is not None
    if explicit:
        out_shape = out_shape[-nd:]
    elif auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        out_shape = [n * s if S.known(n) else None for n, s in zip(in_sizes, strides)]
    out, begin = [], []
    for i in range(nd):
        n, k, s, d = in_sizes[i], kernel[i], strides[i], dilations[i]
        if not S.known(n) or k is None:
            out.append(out_shape[i] if out_shape is not None else None)
            begin.append(None)
            continue
        full = s * (n - 1) + out_pad[i] + (k - 1) * d + 1
        if out_shape is not None:
            # As onnxruntime: the pads never go negative, so a target larger than the full result
            # is reached with zeros at the end (output_shape), or not at all (auto_pad alone).
            total = max(full - out_shape[i], 0)
            pb = total // 2 if auto_pad == "SAME_UPPER" else total - total // 2
            o = out_shape[i] if explicit else full - total
        else:
            pb, pe = (0, 0) if auto_pad == "VALID" else (pads[i], pads[nd + i])
            o = full - pb - pe
        if o < 1:
            S.fail(node, f"output size {o} < 1 for spatial size {n}")
        out.append(o)
        begin.append(pb)
    return out, begin


def infer_conv_transpose(node, inputs, consts):
    dt, p = _infer_prologue(node, inputs)
    if p is None:
        return [(dt, None)]
    xs, ws, nd, g, kernel, strides, dilations, pads, n, c = p
    m = ws[1] * g if ws is not None and S.known(ws[1]) else None
    if ws is not None:
        S.merge_dims(node, c, ws[0], f"input channels of {list(xs) if xs else None} vs weight {list(ws)}")
        if S.known(ws[0]) and ws[0] % g:
            S.fail(node, f"weight's first dim {ws[0]} is not a multiple of group {g}")
    _check_bias(node, S.get(inputs, 2), m)
    out = transpose_geometry(node, xs[2:] if xs is not None else [None] * nd, kernel, strides, dilations, pads)[0]
    return [(dt, (n, m, *out))]


@op("ConvTranspose", 1, infer_conv_transpose)
def conv_transpose(node, x, w, b=None):
    import numpy as np
    n, c = x.shape[:2]
    g = _group(node)
    cg, mg = c // g, w.shape[1]
    kernel = list(w.shape[2:])
    strides, dilations, pads = W.params(node, x.ndim - 2, kernel)
    out, begin = transpose_geometry(node, x.shape[2:], kernel, strides, dilations, pads)
    if w.shape[0] != c or c % g:
        S.fail(node, f"input shape {list(x.shape)} does not fit weight shape {list(w.shape)} with group {g}")
    # Scatter every tap into a canvas wide enough for both the full result and the requested window.
    lo = [min(0, pb) for pb in begin]
    full = [max(s * (i - 1) + (k - 1) * d + 1, pb + o) - l
            for i, k, s, d, pb, o, l in zip(x.shape[2:], kernel, strides, dilations, begin, out, lo)]
    canvas = np.zeros((n, g, mg, *full), dtype=np.result_type(x, w))
    xg = x.reshape(n, g, cg, -1)
    wg = w.reshape(g, cg, mg, -1)
    for k, tap in enumerate(W.taps(kernel)):
        contrib = np.matmul(wg[:, :, :, k].transpose(0, 2, 1), xg).reshape(n, g, mg, *x.shape[2:])
        canvas[(..., *(slice(t * d - l, t * d - l + s * (i - 1) + 1, s)
                       for t, d, l, s, i in zip(tap, dilations, lo, strides, x.shape[2:])))] += contrib
    y = canvas[(..., *(slice(pb - l, pb - l + o) for pb, l, o in zip(begin, lo, out)))]
    y = y.reshape(n, g * mg, *out)
    if b is not None:
        y = y + b.reshape(g * mg, *[1] * len(out))
    return y.astype(x.dtype, copy=False)


def infer_causal_conv_with_state(node, inputs, consts):
    x, w = S.need(node, inputs, 0), S.need(node, inputs, 1)
    dt = S.same_dtype(node, inputs)
    if node.attr("activation", "none") not in ("none", "silu", "swish"):
        S.fail(node, f"activation must be 'none', 'silu' or 'swish', got {node.attr('activation')!r}")
    xs, ws = S.shape(x), S.shape(w)
    for name, s in (("input", xs), ("weight", ws)):
        if s is not None and len(s) != 3:
            S.fail(node, f"{name} must be 3-D, got shape {list(s)}")
    b, c = (xs[0], xs[1]) if xs is not None else (None, None)
    k = None
    if ws is not None:
        c = S.merge_dims(node, c, ws[0], "channels of input and weight")
        S.merge_dims(node, ws[1], 1, "weight's second dim (depthwise)")
        k = ws[2]
    _check_bias(node, S.get(inputs, 2), c)
    state = (b, c, k - 1 if S.known(k) else None)
    ps = S.shape(S.get(inputs, 3))
    if ps is not None:
        if len(ps) != 3:
            S.fail(node, f"past_state must be 3-D, got shape {list(ps)}")
        state = tuple(S.merge_dims(node, a, want, "past_state's shape") for a, want in zip(ps, state))
    return [(dt, xs), (dt, state)][:len(node.outputs)]


@op("CausalConvWithState", 27, infer_causal_conv_with_state)
def causal_conv_with_state(node, x, w, bias=None, past=None):
    """Depthwise 1-D convolution over [past_state, input] (zeros without a past); the new state
    is the last kernel - 1 positions of that sequence."""
    import numpy as np
    if x.ndim != 3 or w.ndim != 3 or w.shape[0] != x.shape[1] or w.shape[1] != 1 or w.shape[2] < 1:
        S.fail(node, f"weight of shape {list(w.shape)} does not fit input {list(x.shape)}")
    b, c, length = x.shape
    k = w.shape[2]
    if past is None:
        past = np.zeros((b, c, k - 1), x.dtype)
    elif past.shape != (b, c, k - 1):
        S.fail(node, f"past_state of shape {list(past.shape)} must be {[b, c, k - 1]}")
    seq = np.concatenate((past.astype(x.dtype, copy=False), x), axis=2)
    acc_t = np.float64 if x.dtype == np.float64 else np.float32   # float16 sums in float32
    acc = np.zeros((b, c, length), acc_t)
    sq, wq = seq.astype(acc_t, copy=False), w.astype(acc_t, copy=False)
    for j in range(k):
        acc += sq[:, :, j:j + length] * wq[None, :, 0, j, None]
    y = acc.astype(x.dtype)
    if bias is not None:   # added after rounding the sums, as onnx's reference does
        y = y + bias.astype(x.dtype)[None, :, None]
    if node.attr("activation", "none") in ("silu", "swish"):
        f = y.astype(np.float32)
        y = (f * (1 / (1 + np.exp(-f)))).astype(x.dtype)
    return y, np.ascontiguousarray(seq[:, :, seq.shape[2] - (k - 1):])


def _col2im_params(node, nd):
    dil = S.ints_attr(node, "dilations") or [1] * nd
    pads = S.ints_attr(node, "pads") or [0] * (2 * nd)
    strides = S.ints_attr(node, "strides") or [1] * nd
    if len(dil) != nd or len(pads) != 2 * nd or len(strides) != nd:
        S.fail(node, f"dilations {dil}, pads {pads}, strides {strides} do not fit {nd} spatial dims")
    if min(dil) < 1 or min(strides) < 1 or min(pads) < 0:
        S.fail(node, f"invalid dilations {dil}, pads {pads} or strides {strides}")
    return dil, pads, strides


def _col2im_blocks(node, image, block, dil, pads, strides):
    nd = len(image)
    n = []
    for i in range(nd):
        b = (image[i] + pads[i] + pads[nd + i] - dil[i] * (block[i] - 1) - 1) // strides[i] + 1
        if b < 1:
            S.fail(node, f"block {block} does not fit image {image} with pads {pads}")
        n.append(b)
    return n


def infer_col2im(node, inputs, consts):
    x = S.need(node, inputs, 0)
    S.need(node, inputs, 1), S.need(node, inputs, 2)
    xs = S.shape(x)
    if xs is not None and len(xs) != 3:
        S.fail(node, f"input must be 3-D (N, C * prod(block_shape), L), got {list(xs)}")
    image, block = S.const_ints(consts, 1), S.const_ints(consts, 2)
    nd = len(image) if image is not None else len(block) if block is not None else None
    if image is not None and block is not None:
        if len(image) != len(block) or min(block) < 1 or min(image) < 1:
            S.fail(node, f"image_shape {image} and block_shape {block} must be positive, of one length")
        dil, pads, strides = _col2im_params(node, nd)
        blocks = _col2im_blocks(node, image, block, dil, pads, strides)
        k, L = S.numel(block), S.numel(blocks)
        c = None
        if xs is not None:
            S.merge_dims(node, xs[2], L, f"input's last dim and the {blocks} blocks")
            c = _col2im_channels(node, xs[1], k)
        return [(S.dtype(x), (xs[0] if xs else None, c, *image))]
    if nd is None:
        return [(S.dtype(x), None)]
    return [(S.dtype(x), (xs[0] if xs else None, None, *(image or [None] * nd)))]


def _col2im_channels(node, ck, k):
    if not S.known(ck):
        return None
    if ck % k:
        S.fail(node, f"input's dim 1 ({ck}) is not a multiple of the block size {k}")
    return ck // k


@op("Col2Im", 18, infer_col2im)
def col2im(node, x, image_shape, block_shape):
    """Sums each column's block back into the image: one scatter-add per block offset."""
    import itertools
    import numpy as np
    image, block = [int(v) for v in image_shape.reshape(-1)], [int(v) for v in block_shape.reshape(-1)]
    nd = len(image)
    if len(block) != nd or x.ndim != 3 or min(block, default=0) < 1 or min(image, default=0) < 1:
        S.fail(node, f"image_shape {image} and block_shape {block} do not fit input {list(x.shape)}")
    dil, pads, strides = _col2im_params(node, nd)
    blocks = _col2im_blocks(node, image, block, dil, pads, strides)
    k = int(np.prod(block))
    if x.shape[1] % k or x.shape[2] != int(np.prod(blocks)):
        S.fail(node, f"input {list(x.shape)} does not fit block {block} over {blocks} blocks")
    n, c = x.shape[0], x.shape[1] // k
    cols = x.reshape(n, c, *block, *blocks)
    padded = np.zeros((n, c, *[image[i] + pads[i] + pads[nd + i] for i in range(nd)]), x.dtype)
    for off in itertools.product(*[range(b) for b in block]):
        dst = tuple(slice(o * dil[i], o * dil[i] + (blocks[i] - 1) * strides[i] + 1, strides[i])
                    for i, o in enumerate(off))
        padded[(slice(None), slice(None), *dst)] += cols[(slice(None), slice(None), *off)]
    return np.ascontiguousarray(padded[(slice(None), slice(None),
                                        *[slice(pads[i], pads[i] + image[i]) for i in range(nd)])])


def infer_deform_conv(node, inputs, consts):
    S.need(node, inputs, 2)
    dt = S.same_dtype(node, inputs)
    xs, ws, nd = _spatial_rank(node, S.need(node, inputs, 0), S.need(node, inputs, 1))
    if nd is None:
        return [(dt, None)]
    kernel = _kernel(node, ws, nd)
    strides, dilations, pads = W.params(node, nd, kernel)
    g, og = _group(node), node.attr("offset_group", 1)
    if og < 1:
        S.fail(node, f"offset_group must be >= 1, got {og}")
    n, c = (xs[0], xs[1]) if xs is not None else (None, None)
    m = ws[0] if ws is not None else None
    if ws is not None and S.known(ws[1]):
        S.merge_dims(node, c, ws[1] * g, f"input channels vs weight {list(ws)} x group {g}")
    if S.known(m) and m % g:
        S.fail(node, f"output channels {m} are not a multiple of group {g}")
    if S.known(c) and c % og:
        S.fail(node, f"input channels {c} are not a multiple of offset_group {og}")
    _check_bias(node, S.get(inputs, 3), m)
    out = W.geometry(node, xs[2:] if xs is not None else [None] * nd, kernel, strides, dilations, pads)[0]
    k = S.numel(kernel)
    for i, name, per in ((2, "offset", nd), (4, "mask", 1)):
        s = S.shape(S.get(inputs, i))
        if s is None:
            continue
        if len(s) != nd + 2:
            S.fail(node, f"{name} must have rank {nd + 2}, got {list(s)}")
        S.merge_dims(node, s[0], n, f"{name}'s batch")
        if k is not None:
            S.merge_dims(node, s[1], og * k * per, f"{name}'s channels: offset_group x kernel size x {per}")
        out = [S.merge_dims(node, a, b, f"{name}'s spatial dims and the output's") for a, b in zip(out, s[2:])]
    return [(dt, (n, m, *out))]


@op("DeformConv", 19, infer_deform_conv)
@op("DeformConv", 22, infer_deform_conv)
def deform_conv(node, x, w, offset, b=None, mask=None):
    """Conv whose taps read the input at learned fractional offsets (bilinear, zeros outside),
    scaled by mask: per kernel tap, one gather of the 2^nd corners for every channel of an
    offset group, then one matmul per group over the sampled columns."""
    import itertools
    import numpy as np
    nd = x.ndim - 2
    if nd < 1 or w.ndim != x.ndim:
        S.fail(node, f"input {list(x.shape)} and weight {list(w.shape)} must share a rank >= 3")
    kernel = S.ints_attr(node, "kernel_shape") or list(w.shape[2:])
    strides, dil, pads = W.params(node, nd, kernel)
    g, og = _group(node), node.attr("offset_group", 1)
    n, c, size = x.shape[0], x.shape[1], x.shape[2:]
    m, k = w.shape[0], int(np.prod(kernel))
    out = list(offset.shape[2:])
    want = W.geometry(node, list(size), kernel, strides, dil, pads)[0]
    if c != w.shape[1] * g or m % g or c % og or offset.shape[:2] != (n, og * k * nd) or out != want \
            or (mask is not None and mask.shape != (n, og * k, *out)):
        S.fail(node, f"input {list(x.shape)}, weight {list(w.shape)}, offset {list(offset.shape)} and "
                     f"mask {None if mask is None else list(mask.shape)} do not fit (group {g}, offset_group {og})")
    off = offset.reshape(n, og, *kernel, nd, *out).astype(np.float64)
    msk = None if mask is None else mask.reshape(n, og, *kernel, *out).astype(np.float64)
    xg = np.moveaxis(x.reshape(n, og, c // og, *size), 2, -1)   # (n, og, *size, channels of the group)
    nidx = np.arange(n).reshape((n, 1) + (1,) * nd)
    gidx = np.arange(og).reshape((1, og) + (1,) * nd)
    grids = np.meshgrid(*[np.arange(o) for o in out], indexing="ij")
    cols = np.zeros((n, og, c // og, k, *out), np.float64)
    for t, kk in enumerate(itertools.product(*[range(q) for q in kernel])):
        pos = [grids[a] * strides[a] - pads[a] + kk[a] * dil[a] + off[(slice(None), slice(None), *kk, a)]
               for a in range(nd)]
        lo = [np.floor(p).astype(np.int64) for p in pos]
        acc = np.zeros((n, og, *out, c // og), np.float64)
        for corner in itertools.product((0, 1), repeat=nd):
            wt, idx, ok = 1.0, [], True
            for a in range(nd):
                i = lo[a] + corner[a]
                wt = wt * (1 - np.abs(pos[a] - i))
                ok = ok & (i >= 0) & (i < size[a])
                idx.append(np.clip(i, 0, size[a] - 1))
            acc += xg[(nidx, gidx, *idx)] * (wt * ok)[..., None]
        if msk is not None:
            acc *= msk[(slice(None), slice(None), *kk)][..., None]
        cols[:, :, :, t] = np.moveaxis(acc, -1, 2)
    cols = cols.reshape(n, g, (c // g) * k, -1)   # channel-major columns, as the weight's layout
    y = np.matmul(w.reshape(g, m // g, -1).astype(np.float64), cols).reshape(n, m, *out)
    if b is not None:
        y += b.reshape(1, -1, *[1] * nd)
    return y.astype(x.dtype)
