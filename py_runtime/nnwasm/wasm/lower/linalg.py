"""Linear algebra lowerings: Gemm (with a fused epilogue) and MatMul."""
from ...tensor import numel
from .epilogue import fuse_activation


def check_gemm(node, g):
    if len(node.inputs) > 2 and node.inputs[2]:
        cs = g.values[node.inputs[2]].shape
        if len(cs) > 2:
            return "Gemm C of rank > 2"
    return None


def gemm_args(node, b):
    """gemm's arguments but y and the clamp (Gemm and com.microsoft FusedGemm)."""
    a, w = node.inputs[:2]
    c = node.inputs[2] if len(node.inputs) > 2 and node.inputs[2] else None
    ta, tb = node.attr("transA", 0), node.attr("transB", 0)
    sa, sw = b.shape(a), b.shape(w)
    m, k = (sa[1], sa[0]) if ta else sa
    n = sw[0] if tb else sw[1]
    c_rs = c_cs = 0
    if c is not None:
        cs = (1,) * (2 - len(b.shape(c))) + tuple(b.shape(c))
        c_rs = cs[1] if cs[0] != 1 else 0
        c_cs = 1 if cs[1] != 1 else 0
    return dict(a=b.ref(a), b=b.ref(w), c=b.ref(c) if c else None, m=m, n=n, k=k, trans_a=ta, trans_b=tb,
                alpha=float(node.attr("alpha", 1.0)), beta=float(node.attr("beta", 1.0)), c_rs=c_rs, c_cs=c_cs)


def lower_gemm(node, b):
    y, lo, hi = fuse_activation(node, b)
    b.emit("gemm", **gemm_args(node, b), y=b.ref(y), act_min=lo, act_max=hi)


def _matmul_dims(g, node):
    sa, sb = g.values[node.inputs[0]].shape, g.values[node.inputs[1]].shape
    a2 = ((1,) + tuple(sa)) if len(sa) == 1 else tuple(sa)
    b2 = (tuple(sb) + (1,)) if len(sb) == 1 else tuple(sb)
    ba, bb = numel(a2[:-2]), numel(b2[:-2])
    return a2, b2, ba, bb


def check_matmul(node, g):
    a2, b2, ba, bb = _matmul_dims(g, node)
    if ba != bb and ba != 1 and bb != 1:
        return "MatMul batch broadcasting other than one side of batch 1"
    if ba == bb and ba > 1 and a2[:-2] != b2[:-2]:
        return "MatMul batch dims differ in shape"
    return None


def lower_matmul(node, b):
    a2, b2, ba, bb = _matmul_dims(b.graph, node)
    m, k, n = a2[-2], a2[-1], b2[-1]
    b.emit("matmul", a=b.ref(node.inputs[0]), b=b.ref(node.inputs[1]), y=b.ref(node.outputs[0]),
           batch=max(ba, bb), m=m, n=n, k=k, a_bs=m * k if ba > 1 else 0, b_bs=k * n if bb > 1 else 0)
