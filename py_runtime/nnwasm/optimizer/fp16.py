"""float16 models (onnxconverter_common.float16.convert_float_to_float16, with or without
keep_io_types) compute in float32: float16 initializers become float32 (exact), Casts to float16
inside the graph cast to float32 (drop_noop_casts then removes those that became no-ops), and
float16 graph inputs and outputs get a Cast at the boundary, so users still feed and get float16.
Results are within float16 rounding of onnxruntime's; kernels.wasm computes in float32 only.
Graphs with subgraphs are left as they are."""
import struct
from dataclasses import replace

from .. import dtypes
from ..ir import Node, ValueInfo
from ..tensor import TensorData
from .cleanup import subgraphs

F16, F32 = dtypes.BY_NAME["float16"], dtypes.FLOAT32
DTYPE_ATTRS = {"Cast": "to", "EyeLike": "dtype", "RandomNormal": "dtype", "RandomUniform": "dtype",
               "RandomNormalLike": "dtype", "RandomUniformLike": "dtype"}


def to_f32(t):
    """A float16 TensorData as float32, exactly."""
    n = t.numel
    return TensorData(F32, t.shape, struct.pack(f"<{n}f", *struct.unpack(f"<{n}e", bytes(t.data))))


def _uses_f16(g):
    """A float16 model: float16 weights or inputs or outputs (a float32 model that casts to
    float16 inside on purpose, to round, keeps its Casts)."""
    return any(t.dtype == F16 for t in g.initializers.values()) or any(v.dtype == F16 for v in g.inputs + g.outputs)


def float16_to_float32(ctx):
    g = ctx.graph
    if not _uses_f16(g) or any(subgraphs(n) for n in g.nodes):
        return 0
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
    return 1
