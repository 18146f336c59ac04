"""Cast and CastLike on the `cast` op: any fixed-size type to any other (ONNX type codes pass
through as the kernel's from/to). kernels_c/elementwise/cast.c documents the conversions, among them what C
and onnxruntime leave undefined (NaN or out-of-range floats to integers)."""
from ...tensor import numel


def lower_cast(node, b):
    x, y = node.inputs[0], node.outputs[0]
    b.emit("cast", **{"from": b.dtype(x).onnx, "to": b.dtype(y).onnx}, x=b.ref(x), y=b.ref(y),
           count=numel(b.shape(y)))
