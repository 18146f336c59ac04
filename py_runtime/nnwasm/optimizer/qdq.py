"""QDQ fusion: the quantize/dequantize pairs of a QDQ-format model (onnxruntime.quantization's
QuantFormat.QDQ) folded into integer ops, as onnxruntime's QDQ transformer does, so the int8
kernels run instead of float32 ones between DequantizeLinear and QuantizeLinear:

    DQ(x), DQ(w) [, DQ(bias int32)] -> Conv   [-> Relu/Clip] -> Q   =>  QLinearConv
    DQ(a), DQ(b)                    -> MatMul [-> Relu/Clip] -> Q   =>  QLinearMatMul
    DQ(a), DQ(w) [, DQ(c int32)]    -> Gemm   [-> Relu/Clip] -> Q   =>  com.microsoft QGemm
    DQ(a), DQ(b)                    -> Add    [-> Relu/Clip] -> Q   =>  com.microsoft QLinearAdd
    DQ(x) -> Reshape/Flatten/Squeeze/Unsqueeze/Transpose -> Q (same scale and zero point)
                                                                    =>  the op on the integers

and, for onnxruntime.quantization's dynamic (quantize_dynamic) graphs, as its
MatMulIntegerToFloatFusion does:

    MatMulInteger(A, B, a_zp, b_zp) -> Cast(float) -> Mul(., Mul(a_scale, b_scale))
                                                                    =>  com.microsoft MatMulIntegerToFloat

A Relu or Clip before the Q folds only when the Q's saturation already is that clamp (Relu: the
zero point is the type's minimum; Clip: the bounds lie outside the representable range), so the
fused graph computes exactly what the QDQ graph does. Whatever does not match stays as Q/DQ
nodes (which run on WASM too). Weights stay integer constants. Pure Python, no numpy.

fuse_qdq(ctx): an optimizer pass (the "graph" phase, from ORT_ENABLE_EXTENDED) returning how many
groups it fused. It runs before shape inference: it needs only constants and the Q/DQ
nodes' own types.
"""
import struct

from .. import dtypes
from ..ir import Node
from ..tensor import TensorData

MS = "com.microsoft"
QRANGE = {"uint8": (0, 255), "int8": (-128, 127)}
MOVERS = ("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose")


class _Graph:
    """The lookups one fusion needs, over the graph as it is being rewritten."""

    def __init__(self, graph):
        self.g = graph
        self.inits = graph.initializers
        self.producer = {o: n for n in graph.nodes for o in n.outputs if o}
        self.users = graph.consumers()
        self.outputs = {v.name for v in graph.outputs}

    def only_user(self, name):
        users = self.users.get(name, [])
        return users[0] if len(users) == 1 and name not in self.outputs else None

    def values(self, name):
        t = self.inits.get(name) if name else None
        return None if t is None else t.tolist()


def _in(node, i):
    return node.inputs[i] if len(node.inputs) > i and node.inputs[i] else None


def _std(node, *ops):
    return node is not None and node.domain in ("", "ai.onnx") and node.op_type in ops


def _qparams(G, node):
    """(scale values, zero point values, dtype name, axis) of a Q or DQ node with constant
    parameters, else None. A missing zero point is 0 of the node's integer type."""
    scale, zp = _in(node, 1), _in(node, 2)
    s = G.values(scale)
    if s is None or G.inits[scale].dtype.name != "float32" or node.attr("block_size", 0):
        return None
    if zp is not None:
        z = G.values(zp)
        if z is None or len(z) != len(s):
            return None
        dt = G.inits[zp].dtype.name
    else:
        if node.op_type == "QuantizeLinear":
            dt = getattr(dtypes.from_onnx(node.attr("output_dtype", 2)), "name", None)
        else:
            dt = _dq_input_type(G, node)
        z = [0] * len(s)
    if dt not in QRANGE and not (dt == "int32" and node.op_type == "DequantizeLinear"):
        return None
    per_axis = len(G.inits[scale].shape) > 0 and len(s) > 1
    return s, z, dt, node.attr("axis", 1) if per_axis else None


def _dq_input_type(G, node):
    x = _in(node, 0)
    if x in G.inits:
        return G.inits[x].dtype.name
    q = G.producer.get(x)
    if _std(q, "QuantizeLinear"):
        p = _qparams(G, q)
        return p[2] if p else None
    return None


def _dq(G, name):
    """The DequantizeLinear producing `name` with constant parameters: (node, params) or None."""
    node = G.producer.get(name)
    if not _std(node, "DequantizeLinear"):
        return None
    p = _qparams(G, node)
    return (node, p) if p is not None else None


def _f32(v):
    return struct.unpack("<f", struct.pack("<f", v))[0]


def _tail_q(G, out):
    """The Q that quantizes `out`, through an optional Relu/Clip its saturation makes redundant:
    (Q node, its params, [nodes to drop]) or None."""
    user = G.only_user(out)
    dropped = []
    if _std(user, "Relu", "Clip"):
        act = user
        q = G.only_user(act.outputs[0])
        if not _std(q, "QuantizeLinear"):
            return None
        p = _qparams(G, q)
        if p is None or p[3] is not None or not _act_is_saturation(G, act, p):
            return None
        dropped.append(act)
        user = q
    if not _std(user, "QuantizeLinear"):
        return None
    p = _qparams(G, user)
    if p is None or p[3] is not None or p[2] not in QRANGE:
        return None
    return user, p, dropped


def _act_is_saturation(G, act, p):
    (s,), (z,), dt, _ = p
    qmin, qmax = QRANGE[dt]
    if act.op_type == "Relu":
        return z == qmin
    if act.opset < 11:
        lo, hi = act.attr("min", -float("inf")), act.attr("max", float("inf"))
    else:
        bounds = [G.values(_in(act, i)) for i in (1, 2)]
        if any(_in(act, i) and b is None for i, b in zip((1, 2), bounds)):
            return False
        lo = bounds[0][0] if bounds[0] else -float("inf")
        hi = bounds[1][0] if bounds[1] else float("inf")
    return lo <= (qmin - z) * s and hi >= (qmax - z) * s


class _Rewriter:
    def __init__(self, graph):
        self.graph = graph
        self.G = _Graph(graph)
        self.replace = {}      # id(node) -> new node (in its place)
        self.drop = set()      # ids of nodes that go
        self.maybe_dead = set()  # ids of nodes that go if nobody reads them any more
        self.count = 0

    def const(self, base, dtype_name, shape, values):
        dt = dtypes.BY_NAME[dtype_name]
        name = f"{base}__qdq{self.count}"
        self.count += 1
        fmt = f"<{len(values)}{dt.struct}"
        self.graph.initializers[name] = TensorData(dt, shape, struct.pack(fmt, *values))
        return name

    def zp(self, dq_or_q, dtype_name):
        """The node's zero point input, or a new 0 of dtype_name when it has none."""
        return _in(dq_or_q, 2) or self.const(dq_or_q.inputs[0], dtype_name, (), [0])

    def node(self, at, op_type, inputs, output, attrs, domain=""):
        opset = 1 if domain == MS else self.graph.opsets.get("", 13)
        if domain == MS:
            self.graph.opsets.setdefault(MS, 1)
        n = Node(op_type, inputs, [output], name=(at.name or at.op_type) + "_quant", domain=domain,
                 attrs=attrs, opset=opset)
        self.replace[id(at)] = n

    def finish(self, q, dropped):
        self.drop.add(id(q))
        self.drop.update(id(d) for d in dropped)

    def fits_bias(self, dq_b, sx, sw):
        """A DQ(int32 bias) with zero point 0 and scale x_scale * w_scale (onnxruntime's rule)."""
        s, z, dt, _ = dq_b[1]
        if dt != "int32" or any(z) or dq_b[0].inputs[0] not in self.G.inits:
            return False
        want = [_f32(sx * w) for w in sw]
        if len(want) == 1:
            want = want * len(s)
        return len(want) == len(s) and all(abs(a - b) <= 1e-6 * abs(b) for a, b in zip(s, want))


def _conv(R, node):
    G = R.G
    x, w, b = _dq(G, _in(node, 0)), _dq(G, _in(node, 1)), _in(node, 2)
    if not x or not w or x[1][3] is not None or w[0].inputs[0] not in G.inits:
        return
    if w[1][3] not in (None, 0, -len(G.inits[w[0].inputs[0]].shape)):
        return
    dqb = _dq(G, b) if b else None
    if b and not (dqb and R.fits_bias(dqb, x[1][0][0], w[1][0])):
        return
    tail = _tail_q(G, node.outputs[0])
    if tail is None:
        return
    q, qp, dropped = tail
    ins = [x[0].inputs[0], x[0].inputs[1], R.zp(x[0], x[1][2]), w[0].inputs[0], w[0].inputs[1],
           R.zp(w[0], w[1][2]), q.inputs[1], R.zp(q, qp[2])] + ([dqb[0].inputs[0]] if b else [])
    R.node(node, "QLinearConv", ins, q.outputs[0], dict(node.attrs))
    R.finish(q, dropped)


def _matmul(R, node):
    G = R.G
    a, w = _dq(G, _in(node, 0)), _dq(G, _in(node, 1))
    if not a or not w or a[1][3] is not None:
        return
    if w[1][3] is not None:      # per-column scales of a 2-D constant B only
        wi = G.inits.get(w[0].inputs[0])
        if wi is None or len(wi.shape) != 2 or w[1][3] not in (1, -1):
            return
    tail = _tail_q(G, node.outputs[0])
    if tail is None:
        return
    q, qp, dropped = tail
    ins = [a[0].inputs[0], a[0].inputs[1], R.zp(a[0], a[1][2]), w[0].inputs[0], w[0].inputs[1],
           R.zp(w[0], w[1][2]), q.inputs[1], R.zp(q, qp[2])]
    R.node(node, "QLinearMatMul", ins, q.outputs[0], {})
    R.finish(q, dropped)


def _transposed(t):
    """A 2-D integer constant transposed (pure Python: one strided slice per output row)."""
    rows, cols = t.shape
    size = t.dtype.size
    data = bytes(t.data)
    if size != 1:
        return None
    return TensorData(t.dtype, (cols, rows), b"".join(data[j::cols] for j in range(cols)))


def _gemm(R, node):
    G = R.G
    if node.attr("transA", 0) or node.attr("beta", 1.0) != 1.0:
        return
    a, w, c = _dq(G, _in(node, 0)), _dq(G, _in(node, 1)), _in(node, 2)
    if not a or not w or a[1][3] is not None or w[0].inputs[0] not in G.inits:
        return
    tb = node.attr("transB", 0)
    wt = G.inits[w[0].inputs[0]]
    if len(wt.shape) != 2 or w[1][3] is not None and w[1][3] % 2 != (0 if tb else 1):
        return
    dqc = _dq(G, c) if c else None
    if c and not (dqc and R.fits_bias(dqc, a[1][0][0], w[1][0])):
        return
    tail = _tail_q(G, node.outputs[0])
    if tail is None:
        return
    q, qp, dropped = tail
    w_name = w[0].inputs[0]
    if tb:
        t = _transposed(wt)
        if t is None:
            return
        w_name = f"{w_name}__qdq_t{R.count}"
        R.count += 1
        G.inits[w_name] = t
    ins = [a[0].inputs[0], a[0].inputs[1], R.zp(a[0], a[1][2]), w_name, w[0].inputs[1], R.zp(w[0], w[1][2]),
           dqc[0].inputs[0] if c else "", q.inputs[1], R.zp(q, qp[2])]
    R.node(node, "QGemm", ins, q.outputs[0], {"alpha": float(node.attr("alpha", 1.0))}, domain=MS)
    R.finish(q, dropped)


def _add(R, node):
    G = R.G
    a, b = _dq(G, _in(node, 0)), _dq(G, _in(node, 1))
    if not a or not b or a[1][3] is not None or b[1][3] is not None or a[1][2] != b[1][2]:
        return
    tail = _tail_q(G, node.outputs[0])
    if tail is None or tail[1][2] != a[1][2]:
        return
    q, qp, dropped = tail
    ins = [a[0].inputs[0], a[0].inputs[1], R.zp(a[0], a[1][2]), b[0].inputs[0], b[0].inputs[1],
           R.zp(b[0], b[1][2]), q.inputs[1], R.zp(q, qp[2])]
    R.node(node, "QLinearAdd", ins, q.outputs[0], {}, domain=MS)
    R.finish(q, dropped)


def _mover(R, node):
    G = R.G
    x = _dq(G, _in(node, 0))
    q = G.only_user(node.outputs[0])
    if not x or not _std(q, "QuantizeLinear"):
        return
    p = _qparams(G, q)
    if p is None or p[:3] != x[1][:3] or p[3] is not None or x[1][3] is not None:
        return
    R.node(node, node.op_type, [x[0].inputs[0]] + node.inputs[1:], q.outputs[0], dict(node.attrs))
    R.replace[id(node)].opset = node.opset
    R.finish(q, [])


def _matmul_integer(R, node):
    G = R.G
    if len(node.inputs) < 2:
        return
    cast = G.only_user(node.outputs[0])
    if not _std(cast, "Cast") or cast.attr("to") != 1 or not cast.outputs:
        return
    mul = G.only_user(cast.outputs[0])
    if not _std(mul, "Mul"):
        return
    other = [i for i in mul.inputs if i != cast.outputs[0]]
    scales = G.producer.get(other[0]) if len(other) == 1 else None
    if not _std(scales, "Mul"):
        return
    a_q = G.producer.get(node.inputs[0])
    a_scale = a_q.outputs[1] if _std(a_q, "DynamicQuantizeLinear") and len(a_q.outputs) > 1 else None
    if a_scale not in scales.inputs or len(scales.inputs) != 2:
        return
    b_scale = scales.inputs[1] if scales.inputs[0] == a_scale else scales.inputs[0]
    ins = [node.inputs[0], node.inputs[1], a_scale, b_scale, _in(node, 2) or "", _in(node, 3) or ""]
    R.node(node, "MatMulIntegerToFloat", ins, mul.outputs[0], {}, domain=MS)
    R.finish(mul, [cast])
    R.maybe_dead.add(id(scales))


FUSIONS = {"Conv": _conv, "MatMul": _matmul, "Gemm": _gemm, "Add": _add, "MatMulInteger": _matmul_integer,
           **{op: _mover for op in MOVERS}}


def fuse_qdq(ctx):
    """The pass: returns how many groups it fused."""
    graph = ctx.graph
    R = _Rewriter(graph)
    for node in list(graph.nodes):
        fuse = FUSIONS.get(node.op_type) if node.domain in ("", "ai.onnx") else None
        if fuse is not None and node.outputs and node.outputs[0] and id(node) not in R.drop:
            fuse(R, node)
    if not R.replace:
        return 0
    nodes = [R.replace.get(id(n), n) for n in graph.nodes if id(n) not in R.drop]
    # DequantizeLinear nodes (and scale products) nobody reads any more go too
    outputs = {v.name for v in graph.outputs}
    while True:
        read = {i for n in nodes for i in n.inputs if i} | outputs
        keep = [n for n in nodes if not (_std(n, "DequantizeLinear") or id(n) in R.maybe_dead)
                or n.outputs[0] in read]
        if len(keep) == len(nodes):
            break
        nodes = keep
    graph.nodes = nodes
    return len(R.replace)
