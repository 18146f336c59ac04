"""float16 models (onnxconverter_common.float16.convert_float_to_float16, with or without
keep_io_types; onnxruntime.transformers' conversion; Optimum's --dtype fp16) compute in float32:
float16 initializers become float32 (exact; WidenedHalf remembers the halves, which the WASM
provider keeps in the plan where a kernel widens them: wasm/lower/half.py), Casts to float16
inside the graph cast to float32 (drop_noop_casts then removes those that became no-ops), and
float16 graph inputs and outputs get a Cast at the boundary, so users still feed and get float16.
Results are within float16 rounding of onnxruntime's; kernels.wasm computes in float32 only.
The bodies of If, Loop and Scan (Optimum's merged fp16 decoders: an If whose branches hold the
whole decoder) are converted the same way, all through: their initializers, Casts and values,
their formal inputs and outputs too, and their reads of outer values that became Casts at the
boundary (a float16 past fed in) read the float32 values instead; an If's float16 graph outputs
stay float16 through Casts at the end of each branch. The KV cache stays in halves
(_half_concats): the present is the past's halves concatenated with the new rows cast to float16,
widened once for the attention, rather than the past widened, concatenated and narrowed again.

The rewrite is undone if the graph ran entirely on the session's first provider before and no
longer does: a graph of data movement only (a float16 Transpose, which kernels.wasm moves as
bytes) would otherwise gain two Casts. It runs once, after the first shape inference, also when
input dims are symbolic (it needs no concrete shape; a session waiting for them refused an
Optimum export's float16 Sqrt/Div at creation); with symbolic dims the WASM provider refuses every
node at that point, so the undo never applies there."""
import struct
from dataclasses import replace

from .. import dtypes, passes
from ..ir import Graph, Node, UnusableBody, ValueInfo, implicit_inputs, scoped
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
    float16 inside on purpose, to round, keeps its Casts), not converted yet (values inside,
    a body's included, still float16)."""
    io = {v.name for v in g.inputs + g.outputs}
    bodies = list(_bodies(g))
    inside = any(v.dtype == F16 for k, v in g.values.items() if k not in io) or \
        any(v.dtype == F16 for b in bodies for v in b.values.values())
    return inside and (any(t.dtype == F16 for b in [g] + bodies for t in b.initializers.values())
                       or any(v.dtype == F16 for v in g.inputs + g.outputs))


def _bodies(g):
    """Every subgraph of g's nodes, at any depth."""
    for n in g.nodes:
        for _, body in subgraphs(n):
            yield body
            yield from _bodies(body)


def _off_first(ctx):
    return sum(1 for n in ctx.graph.nodes if ctx.preferred(n) > 0)


def float16_to_float32(ctx):
    g = ctx.graph
    if not _uses_f16(g):
        return 0
    before = _off_first(ctx)
    saved = (list(g.nodes), dict(g.initializers), dict(g.values))
    shapes = {v.name: g.values[v.name].shape for v in g.inputs if v.name in g.values}
    _convert(ctx)
    passes.infer_shapes(g, shapes)
    drop_noop_casts(ctx)
    _drop_body_casts(ctx, g)
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
    rename, head, tail = {}, [], []
    for v in g.inputs:
        if v.dtype == F16:
            rename[v.name] = ctx.fresh(v.name + "_f32")
            head.append(Node("Cast", [v.name], [rename[v.name]], name=rename[v.name], attrs={"to": F32.onnx},
                             opset=g.opsets.get("", 13)))
    inputs = {v.name for v in g.inputs}
    # an If's float16 output that only the graph's outputs read stays float16: its branches cast
    # at their end (the If's output length differs between the branches, a Cast after it would
    # wait for the shape)
    read = {i for n in g.nodes for i in [*n.inputs, *implicit_inputs(n)]}
    half = {o for n in g.nodes if n.op_type == "If" and n.domain == "" for o in n.outputs
            if o in outputs and o not in read and g.values.get(o) and g.values[o].dtype == F16}
    for v in g.outputs:
        if v.dtype == F16 and v.name not in g.initializers and v.name not in inputs and v.name not in rename \
                and v.name not in half:
            rename[v.name] = ctx.fresh(v.name + "_f32")
            tail.append(Node("Cast", [rename[v.name]], [v.name], name=v.name + "_to_f16", attrs={"to": F16.onnx},
                             opset=g.opsets.get("", 13)))
    nodes = [_convert_node(n, rename, outputs=True, half=half) for n in g.nodes]
    g.nodes = head + nodes + tail
    widened = {rename[v.name]: v.name for v in g.inputs if v.dtype == F16}
    _half_concats(g, widened, {v.name for v in g.outputs})
    for name, vi in list(g.values.items()):
        if vi.dtype == F16 and name not in inputs and name not in outputs:
            g.values[name] = ValueInfo(name, F32, vi.shape, vi.kind)


def _convert_node(n, rename, outputs=False, half=()):
    """n computing in float32: its dtype attributes, float16 tensor attributes and subgraphs
    converted; its inputs (and its outputs if `outputs`) renamed. An If's outputs named in `half`
    stay float16 (its branches end with a Cast)."""
    cast = {k for k, o in enumerate(n.outputs) if o in half} if n.op_type == "If" else set()
    key = DTYPE_ATTRS.get(n.op_type) if n.domain == "" else None
    attrs = dict(n.attrs)
    if key and attrs.get(key) == F16.onnx:
        attrs[key] = F32.onnx
    for k, v in n.attrs.items():
        if isinstance(v, TensorData) and v.dtype == F16:
            attrs[k] = to_f32(v)
        elif isinstance(v, Graph):
            attrs[k] = _convert_body(v, rename, cast)
        elif isinstance(v, UnusableBody):
            attrs[k] = replace(v, template=_convert_body(v.template, rename, cast))
        elif isinstance(v, list) and v and all(isinstance(b, Graph) for b in v):
            attrs[k] = [_convert_body(b, rename) for b in v]
    if any(attrs[k] is not v for k, v in n.attrs.items()):   # (identity: no deep compare of bodies)
        n = replace(n, attrs=attrs)
    ins = [rename.get(i, i) for i in n.inputs]
    outs = [rename.get(o, o) for o in n.outputs] if outputs else n.outputs
    return replace(n, inputs=ins, outputs=outs) if ins != n.inputs or outs != n.outputs else n


def _f32(vi):
    return replace(vi, dtype=F32) if vi.dtype == F16 else vi


def _convert_body(body, rename, cast=()):
    """A float32 copy of subgraph `body`: float16 initializers widened, Casts to float16 and
    values, formal inputs and outputs float32; reads of renamed outer values renamed (a name the
    body defines itself is its own). The outputs at positions `cast` that were float16 stay
    float16 through a Cast at the body's end."""
    inits = {k: to_f32(t) if t.dtype == F16 else t for k, t in body.initializers.items()}
    local = {v.name for v in body.inputs} | set(inits) | {o for n in body.nodes for o in n.outputs if o}
    outer = {k: v for k, v in rename.items() if k not in local}
    nodes = [_convert_node(n, outer) for n in body.nodes]
    outs = []
    for k, v in enumerate(body.outputs):
        name = outer.get(v.name, v.name)
        if k in cast and v.dtype == F16:
            y = f"{v.name}/nnwasm_to_f16"
            nodes.append(Node("Cast", [name], [y], name=y, attrs={"to": F16.onnx}, opset=body.opsets.get("", 13)))
            outs.append(replace(v, name=y))
        else:
            outs.append(_f32(replace(v, name=name)))
    values = {k: _f32(v) for k, v in body.values.items()}
    return Graph(nodes, [_f32(v) for v in body.inputs], outs, inits, values, body.opsets, body.name)


def _drop_body_casts(ctx, g, outer=None):
    """drop_noop_casts in every body (the Casts to float32 that the conversion made no-ops),
    seeing the enclosing values' types."""
    from . import Context
    for n in g.nodes:
        for _, body in subgraphs(n):
            view = scoped(body, outer or g)
            drop_noop_casts(Context(view, ctx.providers, ctx.level))
            body.nodes = view.nodes
            _drop_body_casts(ctx, body, view)


def _half_concats(g, widened, keep):
    """The KV cache in halves: a Concat of a widened float16 input (the past) and new float32 rows,
    cast back to float16 for an output (the present), becomes a Concat of the past's halves and the
    new rows cast to float16, which makes the output; a Cast to float32 of that output gives the
    old float32 result to its other readers (the attention). Per step the past is then copied as
    halves and widened once, where it was widened, concatenated in float32 and narrowed again;
    the present's new rows round to float16 before the attention reads them, as in onnxruntime's
    float16 compute. `keep`: names read from outside g (its outputs). Bodies are done too."""
    from .cleanup import names_read
    producer = {o: n for n in g.nodes for o in n.outputs if o}
    readers = {}
    for n in g.nodes:
        for i in names_read(n):
            readers[i] = readers.get(i, 0) + 1
    swap = {}
    for c in g.nodes:
        src = producer.get(c.inputs[0]) if c.op_type == "Cast" and c.domain == "" and c.inputs else None
        if (src is None or c.attr("to") != F16.onnx or src.op_type != "Concat" or src.domain != ""
                or not any(i in widened for i in src.inputs) or id(src) in swap):
            continue
        x, y = src.outputs[0], c.outputs[0]
        op = g.opsets.get("", 13)
        casts = [Node("Cast", [i], [f"{i}/nnwasm_f16"], name=f"{i}/nnwasm_f16", attrs={"to": F16.onnx}, opset=op)
                 for i in src.inputs if i not in widened]
        ins = [widened.get(i, f"{i}/nnwasm_f16") for i in src.inputs]
        new = casts + [replace(src, inputs=ins, outputs=[y])]
        if readers.get(x, 0) > 1 or x in keep:
            new.append(Node("Cast", [y], [x], name=f"{x}/nnwasm_f32", attrs={"to": F32.onnx}, opset=op))
        swap[id(src)], swap[id(c)] = new, []
    if swap:
        g.nodes = [m for n in g.nodes for m in swap.get(id(n), [n])]
    for n in g.nodes:
        for _, body in subgraphs(n):
            _half_concats(body, widened, {v.name for v in body.outputs})
