"""float16 models (onnxconverter_common.float16.convert_float_to_float16, with or without
keep_io_types; onnxruntime.transformers' conversion; Optimum's --dtype fp16) compute in float32:
float16 initializers become float32 (exact; WidenedHalf remembers the halves, which the WASM
provider keeps in the plan where a kernel widens them: wasm/lower/half.py), Casts to float16
inside the graph cast to float32 (drop_noop_casts then removes those that became no-ops), and
float16 graph inputs and outputs get a Cast at the boundary, so users still feed and get float16.
Results are within float16 rounding of onnxruntime's; kernels.wasm computes in float32 only.
Graphs with subgraphs are left as they are.

The rewrite is undone if the graph ran entirely on the session's first provider before and no
longer does: a graph of data movement only (a float16 Transpose, which kernels.wasm moves as
bytes) would otherwise gain two Casts. It runs once, after the first shape inference, also when
input dims are symbolic (it needs no concrete shape; a session waiting for them refused an
Optimum export's float16 Sqrt/Div at creation); with symbolic dims the WASM provider refuses every
node at that point, so the undo never applies there."""
import struct
from dataclasses import replace

from .. import dtypes, passes
from ..ir import Node, ValueInfo
from ..tensor import TensorData, WidenedHalf
from .cleanup import drop_noop_casts, subgraphs

F16, F32 = dtypes.BY_NAME["float16"], dtypes.FLOAT32
DTYPE_ATTRS = {"Cast": "to", "EyeLike": "dtype", "RandomNormal": "dtype", "RandomUniform": "dtype",
               "RandomNormalLike": "dtype", "RandomUniformLike": "dtype"}


def to_f32(t):
    """A float16 TensorData as float32, exactly, remembering the halves (WidenedHalf): the WASM
    provider keeps big weights as float16 in the plan (wasm/lower/half.py)."""
    n = t.numel
    try:   # numpy, where present, widens a 100 MB model in a blink; struct takes seconds
        import numpy as np
        data = np.frombuffer(bytes(t.data), "<f2").astype("<f4").tobytes()
    except ImportError:
        data = struct.pack(f"<{n}f", *struct.unpack(f"<{n}e", bytes(t.data)))
    return WidenedHalf(F32, t.shape, data, t)


def _uses_f16(g):
    """A float16 model: float16 weights or inputs or outputs (a float32 model that casts to
    float16 inside on purpose, to round, keeps its Casts), not converted yet (values inside
    still float16)."""
    io = {v.name for v in g.inputs + g.outputs}
    inside = any(v.dtype == F16 for k, v in g.values.items() if k not in io)
    return inside and (any(t.dtype == F16 for t in g.initializers.values())
                       or any(v.dtype == F16 for v in g.inputs + g.outputs))


def _off_first(ctx):
    return sum(1 for n in ctx.graph.nodes if ctx.preferred(n) > 0)


def float16_to_float32(ctx):
    g = ctx.graph
    if not _uses_f16(g) or any(subgraphs(n) for n in g.nodes):
        return 0
    before = _off_first(ctx)
    saved = (list(g.nodes), dict(g.initializers), dict(g.values))
    shapes = {v.name: g.values[v.name].shape for v in g.inputs if v.name in g.values}
    _convert(ctx)
    passes.infer_shapes(g, shapes)
    drop_noop_casts(ctx)
    if before == 0 and _off_first(ctx) > 0:
        g.nodes, g.initializers, g.values = saved
        return 0
    return 1


def _convert(ctx):
    g = ctx.graph
    outputs = {v.name for v in g.outputs}
    for name, t in list(g.initializers.items()):
        if t.dtype == F16 and name not in outputs:
            g.initializers[name] = to_f32(t)
    nodes = []
    for n in g.nodes:
        key = DTYPE_ATTRS.get(n.op_type) if n.domain == "" else None
        attrs = dict(n.attrs)
        if key and attrs.get(key) == F16.onnx:
            attrs[key] = F32.onnx
        for k, v in n.attrs.items():
            if isinstance(v, TensorData) and v.dtype == F16:
                attrs[k] = to_f32(v)
        nodes.append(replace(n, attrs=attrs) if attrs != n.attrs else n)
    rename, head, tail = {}, [], []
    for v in g.inputs:
        if v.dtype == F16:
            rename[v.name] = ctx.fresh(v.name + "_f32")
            head.append(Node("Cast", [v.name], [rename[v.name]], name=rename[v.name], attrs={"to": F32.onnx},
                             opset=g.opsets.get("", 13)))
    inputs = {v.name for v in g.inputs}
    for v in g.outputs:
        if v.dtype == F16 and v.name not in g.initializers and v.name not in inputs and v.name not in rename:
            rename[v.name] = ctx.fresh(v.name + "_f32")
            tail.append(Node("Cast", [rename[v.name]], [v.name], name=v.name + "_to_f16", attrs={"to": F16.onnx},
                             opset=g.opsets.get("", 13)))
    renamed = []
    for n in nodes:
        if any(i in rename for i in n.inputs) or any(o in rename for o in n.outputs):
            n = replace(n, inputs=[rename.get(i, i) for i in n.inputs], outputs=[rename.get(o, o) for o in n.outputs])
        renamed.append(n)
    g.nodes = head + renamed + tail
    for name, vi in list(g.values.items()):
        if vi.dtype == F16 and name not in inputs and name not in outputs:
            g.values[name] = ValueInfo(name, F32, vi.shape)
