"""Sliding-window geometry shared by Conv and the pools: output sizes and the pads actually applied,
for every auto_pad mode and ceil_mode. Pure Python; dims that are not ints give None."""
import itertools

from . import shapes as S

AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")


def params(node, nd, kernel):
    """(strides, dilations, pads) attributes with their defaults, checked against nd spatial dims."""
    # an attribute present but empty is refused (onnx's shape inference and onnxruntime do), not read
    # as its default
    strides = S.ints_attr(node, "strides", [1] * nd)
    dilations = S.ints_attr(node, "dilations", [1] * nd)
    pads = S.ints_attr(node, "pads", [0] * (2 * nd))
    if nd < 1:
        S.fail(node, "needs at least one spatial dim (input rank >= 3)")
    for name, v, n in (("strides", strides, nd), ("dilations", dilations, nd), ("pads", pads, 2 * nd),
                       ("kernel_shape", kernel, nd)):
        if len(v) != n:
            S.fail(node, f"{name} {v} must have {n} entries for {nd} spatial dims")
    if min(strides) < 1 or min(dilations) < 1 or min(pads) < 0 or any(S.known(k) and k < 1 for k in kernel):
        S.fail(node, f"invalid strides {strides}, dilations {dilations}, pads {pads} or kernel {kernel}")
    return strides, dilations, pads


def geometry(node, in_sizes, kernel, strides, dilations, pads, ceil_mode=False):
    """Output sizes and (begin, end) pads per spatial dim. kernel entries may be None (unknown)."""
    auto_pad = node.attr("auto_pad", "NOTSET")
    if auto_pad not in AUTO_PADS:
        S.fail(node, f"unknown auto_pad {auto_pad!r}")
    nd = len(in_sizes)
    out, begin, end = [], [], []
    for i in range(nd):
        n, k, s, d = in_sizes[i], kernel[i], strides[i], dilations[i]
        eff = None if k is None else (k - 1) * d + 1
        pb, pe = pads[i], pads[nd + i]
        if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            o = -(-n // s) if S.known(n) else None
            if o is not None and eff is not None:
                total = max(0, (o - 1) * s + eff - n)
                pb = total // 2 if auto_pad == "SAME_UPPER" else total - total // 2
                pe = total - pb
            else:
                pb = pe = None
        elif auto_pad == "VALID":
            pb = pe = 0
            o = (n - eff) // s + 1 if S.known(n) and eff is not None else None
        elif S.known(n) and eff is not None:
            span = n + pb + pe - eff
            o = (-(-span // s) if ceil_mode else span // s) + 1
            if ceil_mode and (o - 1) * s >= n + pb:
                o -= 1      # the last window must start inside the input or its begin padding
        else:
            o = None
        if o is not None and o < 1:
            S.fail(node, f"window {k} (dilation {d}, pads {pb}+{pe}) does not fit spatial size {n}")
        out.append(o)
        begin.append(pb)
        end.append(pe)
    return out, begin, end


def taps(kernel):
    """Every kernel position, row-major (the order the first maximum wins in)."""
    return list(itertools.product(*[range(k) for k in kernel]))


def tap_slices(tap, out, strides, dilations):
    """The slices of a padded input that kernel position `tap` reads for every output position."""
    return tuple(slice(t * d, t * d + s * (o - 1) + 1, s) for t, o, s, d in zip(tap, out, strides, dilations))
