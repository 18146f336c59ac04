"""DFT and STFT on the `dft` kernel (kernels_c/reduce/dft.c): a direct transform against a float64 twiddle
table computed here (a plan constant). The lengths, axis and frame step must be
constants at plan build (initializers, or graph inputs the session specialises on:
shape_values.py). Inverse DFTs stay with numpy (see check_dft)."""
import math
import struct

from ...dtypes import BY_ONNX
from ...tensor import TensorData, numel


def _const(g, node, i):
    name = node.inputs[i] if len(node.inputs) > i else ""
    if not name:
        return "absent"
    t = g.initializers.get(name)
    return None if t is None or t.numel != 1 else int(t.tolist()[0])


def _twiddles(b, length, inverse):
    sign = 1.0 if inverse else -1.0
    vals = []
    for q in range(length):
        a = 2.0 * math.pi * q / length
        vals += [math.cos(a), sign * math.sin(a)]
    return b.constant(TensorData(BY_ONNX[11], (length, 2), struct.pack(f"<{2 * length}d", *vals)))   # float64


def _dft_view(node, g):
    """(outer, n_axis, inner, cin, axis) or a reason."""
    x = g.values[node.inputs[0]]
    r = len(x.shape)
    if node.opset < 20:
        a = node.attr("axis", 1)
    else:
        a = _const(g, node, 2)
        if a is None:
            return "the axis is not a constant"
        a = -2 if a == "absent" else a
    a = a + r if a < 0 else a
    shape = x.shape
    return numel(shape[:a]), shape[a], numel(shape[a + 1:r - 1]), shape[-1], a


def _dft_lengths(node, g, n):
    length = _const(g, node, 1)
    if length is None:
        return "dft_length is not a constant"
    inverse, onesided = node.attr("inverse", 0), node.attr("onesided", 0)
    length = n if length == "absent" else length
    return length, (length // 2 + 1 if onesided and not inverse else length)


def check_dft(node, g):
    if g.values[node.inputs[0]].dtype.name != "float32":
        return f"'{node.inputs[0]}' is {g.values[node.inputs[0]].dtype.name}; this WASM kernel takes float32"
    if node.attr("inverse", 0):
        # the kernel computes it (tests/kernels/test_dft.c), closer to exact than numpy's complex64
        # ifft, but onnx's conformance cases hold complex64-rounded values within atol 1e-7 of 0
        # (test_dft_inverse): numpy's own answer is kept until a float32-exact inverse is wanted
        return "an inverse DFT (left to numpy: onnx's expected values are numpy's complex64 ifft)"
    view = _dft_view(node, g)
    if isinstance(view, str):
        return view
    lengths = _dft_lengths(node, g, view[1])
    return lengths if isinstance(lengths, str) else None


def lower_dft(node, b):
    outer, n, inner, cin, _ = _dft_view(node, b.graph)
    length, m = _dft_lengths(node, b.graph, n)
    b.emit("dft", x=b.ref(node.inputs[0]), window=None, twiddle=_twiddles(b, length, node.attr("inverse", 0)),
           y=b.ref(node.outputs[0]), batch=outer, frames=1, step=1, n=min(n, length), xlen=n, inner=inner,
           cin=cin, len=length, m=m, inverse=node.attr("inverse", 0))


def check_stft(node, g):
    if g.values[node.inputs[0]].dtype.name != "float32":
        return f"'{node.inputs[0]}' is {g.values[node.inputs[0]].dtype.name}; this WASM kernel takes float32"
    window = node.inputs[2] if len(node.inputs) > 2 else ""
    if window and g.values[window].dtype.name != "float32":
        return f"the window '{window}' is not float32"
    if _const(g, node, 1) in (None, "absent"):
        return "frame_step is not a constant"
    if _const(g, node, 3) is None:
        return "frame_length is not a constant"
    return None


def lower_stft(node, b):
    batch, xlen, cin = b.shape(node.inputs[0])
    step = _const(b.graph, node, 1)
    window = node.inputs[2] if len(node.inputs) > 2 else ""
    length = _const(b.graph, node, 3)
    if length == "absent":
        length = b.shape(window)[0] if window else xlen
    frames, m = b.shape(node.outputs[0])[1:3]
    b.emit("dft", x=b.ref(node.inputs[0]), window=b.ref(window) if window else None,
           twiddle=_twiddles(b, length, 0), y=b.ref(node.outputs[0]), batch=batch, frames=frames, step=step,
           n=length, xlen=xlen, inner=1, cin=cin, len=length, m=m, inverse=0)
