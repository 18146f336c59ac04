"""kernels-warmup.nnwp: a tiny plan (a few KB) that plan sessions run on kernels.wasm while a real
plan downloads, so that V8 has compiled the hot kernels with its optimizing tier (TurboFan) by the
real plan's first run (web/plan-session.mjs, warmUp()). V8 runs wasm first in its baseline tier
(Liftoff) and optimizes a function in the background once it has run enough; a long call never
switches tiers midway, so without this the first EfficientNet-Lite0 run is all Liftoff code.

The model is a MobileNet/EfficientNet-Lite block stack at 56x56 with few channels: every conv
shape EfficientNet-Lite0 has (the stem's 3x3/2 through im2col, depthwise 3x3 and 5x5 at strides
1 and 2 with its pads, 1x1 with and without ReLU6), residual Adds, global average pooling,
Reshape and Gemm. Spatial sizes 28, 14 and 7 give the GEMM the same column tails as the real
model's 784, 196 and 49; channels are multiples of 4, as there. Weights are fixed small values
(the results are never looked at). build_web.py writes it to dist/web/ with the kernels.wasm it
was compiled for.

    .venv/bin/python build_scripts/warmup_plan.py OUT.nnwp     (build_web.py calls warmup_plan_bytes())
"""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIZE = 56  # input height and width

# (kind, out channels, kernel, stride, pads [top, left, bottom, right], relu6), in order;
# "dw" keeps the channels, "add" adds the output of the block start (the last "mark").
LAYERS = [
    ("conv", 16, 3, 2, [0, 0, 1, 1], True),   # stem
    ("dw", 16, 3, 1, [1, 1, 1, 1], True),
    ("conv", 8, 1, 1, [0, 0, 0, 0], False),
    ("conv", 48, 1, 1, [0, 0, 0, 0], True),
    ("dw", 48, 3, 2, [0, 0, 1, 1], True),
    ("conv", 12, 1, 1, [0, 0, 0, 0], False),
    ("mark",),
    ("conv", 48, 1, 1, [0, 0, 0, 0], True),
    ("dw", 48, 3, 1, [1, 1, 1, 1], True),
    ("conv", 12, 1, 1, [0, 0, 0, 0], False),
    ("add",),
    ("conv", 48, 1, 1, [0, 0, 0, 0], True),
    ("dw", 48, 5, 2, [1, 1, 2, 2], True),
    ("conv", 16, 1, 1, [0, 0, 0, 0], False),
    ("mark",),
    ("conv", 96, 1, 1, [0, 0, 0, 0], True),
    ("dw", 96, 5, 1, [2, 2, 2, 2], True),
    ("conv", 16, 1, 1, [0, 0, 0, 0], False),
    ("add",),
    ("conv", 64, 1, 1, [0, 0, 0, 0], True),
]
CLASSES = 8


def warmup_model():
    """The warm-up model, as ONNX bytes (deterministic)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    nodes, inits = [], []

    def const(name, array):
        inits.append(numpy_helper.from_array(np.asarray(array, dtype=np.float32), name))
        return name

    def values(count, seed):  # small, fixed, not all equal
        return ((np.arange(count) * 7 + seed) % 13 - 6).astype(np.float32) / 64

    const("zero", 0.0)
    const("six", 6.0)
    x, c, mark = "input", 3, None
    for i, layer in enumerate(LAYERS):
        kind = layer[0]
        if kind == "mark":
            mark = x
            continue
        if kind == "add":
            nodes.append(helper.make_node("Add", [x, mark], [f"add{i}"]))
            x = f"add{i}"
            continue
        _, m, k, s, pads, relu6 = layer
        group = c if kind == "dw" else 1
        w = const(f"w{i}", values(m * (c // group) * k * k, i).reshape(m, c // group, k, k))
        b = const(f"b{i}", values(m, i + 1))
        nodes.append(helper.make_node("Conv", [x, w, b], [f"conv{i}"], kernel_shape=[k, k], strides=[s, s],
                                      pads=pads, dilations=[1, 1], group=group))
        x, c = f"conv{i}", m
        if relu6:
            nodes.append(helper.make_node("Clip", [x, "zero", "six"], [f"clip{i}"]))
            x = f"clip{i}"
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["pool"]))
    const_shape = numpy_helper.from_array(np.array([1, c], dtype=np.int64), "shape")
    inits.append(const_shape)
    nodes.append(helper.make_node("Reshape", ["pool", "shape"], ["flat"]))
    const("fc_w", values(CLASSES * c, 5).reshape(CLASSES, c))
    const("fc_b", values(CLASSES, 6))
    nodes.append(helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["logits"], transB=1))
    graph = helper.make_graph(nodes, "nnwasm-warmup", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, SIZE, SIZE])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, CLASSES])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="nnwasm warmup_plan.py")
    model.ir_version = 7
    onnx.checker.check_model(model)
    return model.SerializeToString()


def warmup_plan_bytes():
    """kernels-warmup.nnwp's bytes: the warm-up model compiled by this checkout's nnwasm."""
    sys.path.insert(0, str(ROOT / "py_runtime"))
    import nnwasm
    return nnwasm.compile_plan(warmup_model())


if __name__ == "__main__":
    data = warmup_plan_bytes()
    Path(sys.argv[1]).write_bytes(data)
    print(f"wrote {sys.argv[1]} ({len(data):,} bytes)")
