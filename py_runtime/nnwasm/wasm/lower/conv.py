"""Lowering of the windowed ops (Conv, ConvTranspose, MaxPool, AveragePool) to conv2d,
conv_transpose2d and pool2d: they share the padding rules (explicit pads or auto_pad) and the
1-D-as-2-D view (a [N, C, W] input runs as [N, C, 1, W])."""
import math

from ...host import get_host
from ...ops.conv import transpose_geometry
from ...ops.window import params as window_params
from .epilogue import fuse_activation


def _geometry(node, g):
    """(x shape, y shape, kernel, strides, dilations, pads [begins..., ends...]) after auto_pad."""
    x, y = g.values[node.inputs[0]].shape, g.values[node.outputs[0]].shape
    if node.op_type in ("Conv", "FusedConv"):
        kernel = list(g.values[node.inputs[1]].shape[2:])
    else:
        kernel = list(node.attr("kernel_shape"))
    spatial = len(x) - 2
    strides, dil, pads = (list(v) for v in window_params(node, spatial, kernel))   # empty lists: defaults
    auto = node.attr("auto_pad", "NOTSET")
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        pads = [0] * (2 * spatial)
        for i in range(spatial):
            total = max((math.ceil(x[2 + i] / strides[i]) - 1) * strides[i] + (kernel[i] - 1) * dil[i] + 1
                        - x[2 + i], 0)
            pads[i] = total // 2 if auto == "SAME_UPPER" else (total + 1) // 2
            pads[spatial + i] = total - pads[i]
    elif auto == "VALID":
        pads = [0] * (2 * spatial)
    return x, y, kernel, strides, dil, pads


def _window(node, g):
    """(n, c, h, w, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl) for a 1-D or 2-D windowed node."""
    x, y, kernel, strides, dil, pads = _geometry(node, g)
    if len(x) == 3:
        return (x[0], x[1], 1, x[2], 1, y[2], 1, kernel[0], 1, strides[0], 1, dil[0], 0, pads[0])
    return (x[0], x[1], x[2], x[3], y[2], y[3], kernel[0], kernel[1], strides[0], strides[1], dil[0], dil[1],
            pads[0], pads[1])


def _check_window(node, g):
    rank = len(g.values[node.inputs[0]].shape)
    if rank not in (3, 4):
        return f"{rank - 2}-D windows (only 1-D and 2-D run on WASM)"
    return None


def _conv_scratch(node, g, host):
    """The kernel's own answer: scratch bytes for this conv, or -1 if it refuses the parameters."""
    n, c, h, w, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl = _window(node, g)
    m = g.values[node.inputs[1]].shape[0]
    return host.call("nnw_conv2d_scratch_bytes", c, m, node.attr("group", 1), kh, kw, oh, ow, sh, sw, dh, dw,
                     pt, pl, h, w)


def check_conv(node, g):
    why = _check_window(node, g)
    if why:
        return why
    if len(node.inputs) > 2 and node.inputs[2] and g.values[node.inputs[2]].shape != (g.values[node.inputs[1]].shape[0],):
        return "Conv bias is not of shape [M]"
    if _conv_scratch(node, g, get_host()) < 0:
        return "kernels.wasm refuses these Conv parameters (group, pads or sizes)"
    return None


def conv_args(node, b, y):
    """conv2d's arguments but the clamp, writing Ref y (Conv and com.microsoft FusedConv)."""
    n, c, h, w, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl = _window(node, b.graph)
    m = b.shape(node.inputs[1])[0]
    scratch = _conv_scratch(node, b.graph, b.host)
    bias = node.inputs[2] if len(node.inputs) > 2 and node.inputs[2] else None
    return dict(x=b.ref(node.inputs[0]), weight=b.ref(node.inputs[1]), b=b.ref(bias) if bias else None,
                y=y, scratch=b.scratch(scratch), n=n, c=c, h=h, w=w, m=m, oh=oh, ow=ow, kh=kh, kw=kw,
                sh=sh, sw=sw, dh=dh, dw=dw, pt=pt, pl=pl, group=node.attr("group", 1))


def _winograd(node, b, a):
    """Where kernels.wasm's choice tables say Winograd on weights transformed at load pays (3x3,
    stride 1 or 2, group 1, constant weights): (the op's name suffix, its scratch bytes, floats of
    U per c m), else None."""
    if (a["kh"], a["kw"], a["dh"], a["dw"], a["group"]) != (3, 3, 1, 1, 1) or a["sh"] != a["sw"] \
            or a["sh"] not in (1, 2) or node.inputs[1] not in b.graph.initializers:
        return None
    kind, points = ("", 36) if a["sh"] == 1 else ("_s2", 16)
    if not b.host.call(f"nnw_conv2d_winograd{kind}_pays", a["c"], a["m"], a["oh"], a["ow"]):
        return None
    return kind, b.host.call(f"nnw_conv2d_winograd{kind}_scratch_bytes", a["c"], a["m"], a["oh"], a["ow"]), points


def lower_conv(node, b):
    y, lo, hi = fuse_activation(node, b)
    emit_conv(node, b, b.ref(y), lo, hi)


def emit_conv(node, b, y, lo, hi):
    """conv2d, or conv2d_winograd(_s2) where it pays, of a Conv or FusedConv writing Ref y."""
    a = conv_args(node, b, y)
    wg = _winograd(node, b, a)
    if wg is None:
        b.emit("conv2d", **a, act_min=lo, act_max=hi)
        return
    # U (36 c m floats, 4x the weights; stride 2: 16 c m) is made once by an init op at plan load
    # (docs/conv.md)
    kind, scratch, points = wg
    u, new = b.persistent_buffer((f"winograd{kind}", node.inputs[1]), points * a["c"] * a["m"] * 4)
    if new:
        b.emit_init(f"conv2d_winograd{kind}_weights", weight=a["weight"], u=u, c=a["c"], m=a["m"])
    b.emit(f"conv2d_winograd{kind}", x=a["x"], u=u, b=a["b"], y=a["y"], scratch=b.scratch(scratch),
           **{k: a[k] for k in ("n", "c", "h", "w", "m", "oh", "ow", "pt", "pl")}, act_min=lo, act_max=hi)


def check_pool(node, g):
    why = _check_window(node, g)
    if why:
        return why
    if node.attr("storage_order", 0) != 0:
        return "storage_order 1"
    if node.op_type == "AveragePool" and node.attr("count_include_pad", 0) and node.attr("ceil_mode", 0):
        return "AveragePool with count_include_pad and ceil_mode together"
    # pool2d's rules (as onnxruntime's): a pad is smaller than the dilated window, and the last
    # window starts inside the image.
    x, y, kernel, strides, dil, pads = _geometry(node, g)
    spatial = len(x) - 2
    for i in range(spatial):
        reach = (kernel[i] - 1) * dil[i] + 1
        if max(pads[i], pads[spatial + i]) >= reach or (y[2 + i] - 1) * strides[i] - pads[i] >= x[2 + i]:
            return "padding as large as the window, or a window starting past the image"
    return None


def _lower_pool(node, b, kind):
    n, c, h, w, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl = _window(node, b.graph)
    b.emit("pool2d", kind=kind, x=b.ref(node.inputs[0]), y=b.ref(node.outputs[0]), n=n, c=c, h=h, w=w,
           oh=oh, ow=ow, kh=kh, kw=kw, sh=sh, sw=sw, dh=dh, dw=dw, pt=pt, pl=pl,
           count_include_pad=node.attr("count_include_pad", 0))


def lower_max_pool(node, b):
    _lower_pool(node, b, 0)


def lower_average_pool(node, b):
    _lower_pool(node, b, 1)


def _transpose_window(node, g):
    """(n, c, h, w, m, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl, group) of a 1-D or 2-D ConvTranspose,
    its pads as the op registry's shape inference resolves them (auto_pad, output_shape)."""
    x, y, ws = g.values[node.inputs[0]].shape, g.values[node.outputs[0]].shape, g.values[node.inputs[1]].shape
    kernel = list(ws[2:])
    strides, dil, pads = window_params(node, len(kernel), kernel)
    begin = transpose_geometry(node, list(x[2:]), kernel, strides, dil, pads)[1]
    group = node.attr("group", 1)
    if len(x) == 3:
        return (x[0], x[1], 1, x[2], y[1], 1, y[2], 1, kernel[0], 1, strides[0], 1, dil[0], 0, begin[0], group)
    return (x[0], x[1], x[2], x[3], y[1], y[2], y[3], kernel[0], kernel[1], strides[0], strides[1], dil[0], dil[1],
            begin[0], begin[1], group)


def _conv_transpose_scratch(node, g, host):
    n, c, h, w, m, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl, group = _transpose_window(node, g)
    return host.call("nnw_conv_transpose2d_scratch_bytes", c, m, group, kh, kw, h, w)


def check_conv_transpose(node, g):
    why = _check_window(node, g)
    if why:
        return why
    m = g.values[node.outputs[0]].shape[1]
    if len(node.inputs) > 2 and node.inputs[2] and g.values[node.inputs[2]].shape != (m,):
        return "ConvTranspose bias is not of shape [M]"
    if _conv_transpose_scratch(node, g, get_host()) < 0:
        return "kernels.wasm refuses these ConvTranspose parameters (group or sizes)"
    return None


def lower_conv_transpose(node, b):
    n, c, h, w, m, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl, group = _transpose_window(node, b.graph)
    scratch = _conv_transpose_scratch(node, b.graph, b.host)
    y, lo, hi = fuse_activation(node, b)
    bias = node.inputs[2] if len(node.inputs) > 2 and node.inputs[2] else None
    b.emit("conv_transpose2d", x=b.ref(node.inputs[0]), weight=b.ref(node.inputs[1]),
           b=b.ref(bias) if bias else None, y=b.ref(y), scratch=b.scratch(scratch), n=n, c=c, h=h, w=w, m=m,
           oh=oh, ow=ow, kh=kh, kw=kw, sh=sh, sw=sw, dh=dh, dw=dw, pt=pt, pl=pl, group=group,
           act_min=lo, act_max=hi)
