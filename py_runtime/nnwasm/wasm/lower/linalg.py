"""Linear algebra lowerings: Gemm (with a fused epilogue), MatMul with any batch broadcasting, and
two-operand Einsum as transposes around one batched matmul."""
from ...tensor import numel
from .epilogue import fuse_activation
from .half import lower_gemm_half
from .movement import _transpose_axes
from .packed import lower_matmul_packed


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
    ta, tb = int(bool(node.attr("transA", 0))), int(bool(node.attr("transB", 0)))   # any non-zero: transposed
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
    if lower_gemm_half(node, b):   # B a float16 model's weight, kept as halves
        return
    y, lo, hi = fuse_activation(node, b)
    b.emit("gemm", **gemm_args(node, b), y=b.ref(y), act_min=lo, act_max=hi)


def _matmul_dims(g, node):
    """A and B as matrices with batch dims (a rank-1 operand gains a dim of 1, which the output lacks:
    the same bytes)."""
    sa, sb = g.values[node.inputs[0]].shape, g.values[node.inputs[1]].shape
    a2 = ((1,) + tuple(sa)) if len(sa) == 1 else tuple(sa)
    b2 = (tuple(sb) + (1,)) if len(sb) == 1 else tuple(sb)
    return a2, b2


def _batch_levels(a2, b2):
    """[(size, a stride, b stride)] of the broadcast batch dims, element strides (0 = broadcast),
    size-1 dims dropped and neighbours merged where both operands step linearly across them."""
    rank = max(len(a2), len(b2)) - 2
    ab, bb = (1,) * (rank - len(a2) + 2) + a2[:-2], (1,) * (rank - len(b2) + 2) + b2[:-2]
    a_mat, b_mat = a2[-2] * a2[-1], b2[-2] * b2[-1]
    levels = []
    for i in range(rank):
        d = max(ab[i], bb[i])
        if d == 1:
            continue
        sa = numel(ab[i + 1:]) * a_mat if ab[i] != 1 else 0
        sb = numel(bb[i + 1:]) * b_mat if bb[i] != 1 else 0
        if levels and levels[-1][1] == sa * d and levels[-1][2] == sb * d:
            levels[-1] = (levels[-1][0] * d, sa, sb)
        else:
            levels.append((d, sa, sb))
    return levels


MAX_MATMUL_OPS = 4096


def check_matmul(node, g):
    levels = _batch_levels(*_matmul_dims(g, node))
    if len(levels) > 2 and numel(d for d, _, _ in levels[:-2]) > MAX_MATMUL_OPS:
        return f"MatMul batch broadcasting that would take more than {MAX_MATMUL_OPS} plan ops"
    return None


def lower_matmul(node, b):
    a2, b2 = _matmul_dims(b.graph, node)
    m, k, n = a2[-2], a2[-1], b2[-1]
    a, w, y = node.inputs[0], node.inputs[1], node.outputs[0]
    levels = _batch_levels(a2, b2)
    if all(sb == 0 for _, _, sb in levels):
        # B is one matrix, so A is contiguous over the batch (no dim is broadcast in both): the
        # batch folds into M, one GEMM ([B, S, D] @ [D, N])
        rows = numel(d for d, _, _ in levels) * m
        if w in b.graph.initializers and len(b2) == 2:
            return lower_matmul_packed(node, b, rows, n, k)
        return b.emit("matmul", a=b.ref(a), b=b.ref(w), y=b.ref(y), batch=1, m=rows, n=n, k=k, a_bs=0, b_bs=0)
    if len(levels) == 1:
        d, sa, sb = levels[0]
        return b.emit("matmul", a=b.ref(a), b=b.ref(w), y=b.ref(y), batch=d, m=m, n=n, k=k, a_bs=sa, b_bs=sb)
    # two levels per op; one op per index of any outer levels
    outer, (d0, as0, bs0), (d1, as1, bs1) = levels[:-2], levels[-2], levels[-1]
    block = d0 * d1 * m * n
    for i, index in enumerate(_indices([d for d, _, _ in outer])):
        a_at = sum(j * sa for j, (_, sa, _) in zip(index, outer))
        b_at = sum(j * sb for j, (_, _, sb) in zip(index, outer))
        b.emit("bmatmul", a=b.ref(a, 4 * a_at), b=b.ref(w, 4 * b_at), y=b.ref(y, 4 * i * block), b0=d0, b1=d1,
               m=m, n=n, k=k, as0=as0, as1=as1, bs0=bs0, bs1=bs1)


def _indices(dims):
    """Every index tuple of dims, last fastest."""
    out = [()]
    for d in dims:
        out = [t + (j,) for t in out for j in range(d)]
    return out


def _einsum_plan(node, g):
    """Einsum of two operands as a batched MatMul: (a letters, b letters, output letters, batch, m,
    k, n letter lists, {letter: size}), or the reason it can't run."""
    eq = node.attr("equation", "").replace(" ", "")
    if "..." in eq:
        return "Einsum with an ellipsis"
    lhs, arrow, out = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != 2 or len([x for x in node.inputs if x]) != 2:
        return "Einsum of other than two operands"
    if not arrow:
        out = "".join(sorted(c for c in set(lhs) - {","} if lhs.count(c) == 1))
    a, b = terms
    size = {}
    for letters, name in ((a, node.inputs[0]), (b, node.inputs[1])):
        shape = g.values[name].shape
        if len(set(letters)) != len(letters) or len(letters) != len(shape):
            return "Einsum with a repeated index (a diagonal)"
        for c, d in zip(letters, shape):
            if size.setdefault(c, d) != d:
                return "Einsum dims that broadcast"
    if len(set(out)) != len(out):
        return "Einsum with a repeated output index"
    if any(c not in out and not (c in a and c in b) for c in a + b):
        return "Einsum summing an index of one operand only"
    batch = [c for c in out if c in a and c in b]
    ms = [c for c in out if c in a and c not in b]
    ns = [c for c in out if c in b and c not in a]
    ks = [c for c in a if c in b and c not in out]
    return a, b, out, batch, ms, ks, ns, size


def _perm(src, dst):
    return [src.index(c) for c in dst]


def check_einsum(node, g):
    plan = _einsum_plan(node, g)
    if isinstance(plan, str):
        return plan
    a, b, out, batch, ms, ks, ns, size = plan
    for src, dst in ((a, batch + ms + ks), (b, batch + ks + ns), (batch + ms + ns, out)):
        if len(_axes(src, dst, size)) > 6:
            return "Einsum needing a transpose of more than 6 dims"
    return None


def _axes(letters, order, size):
    return _transpose_axes([size[c] for c in letters], _perm(letters, order))


def _moves(letters, order, size):
    """False when putting `letters` in `order` leaves the bytes where they are."""
    axes = _axes(letters, order, size)
    return not (len(axes) == 1 and axes[0][1] == 1)


def _permuted(b, x, letters, order, size, y=None):
    """x (a Ref over `letters`) with its axes in `order`: x itself when that moves nothing, else a
    transpose into y (or into scratch)."""
    if not _moves(letters, order, size):
        return x
    axes = _axes(letters, order, size)
    y = y or b.scratch(4 * numel(size[c] for c in letters))
    d = [n for n, _ in axes] + [1] * (6 - len(axes))
    st = [s for _, s in axes] + [0] * (6 - len(axes))
    args = {"x": x, "y": y, "esize": 4, "rank": len(axes)}
    args.update({f"d{i}": d[i] for i in range(6)})
    args.update({f"s{i}": st[i] for i in range(6)})
    b.emit("transpose", **args)
    return y


def lower_einsum(node, b):
    """transpose A to [batch, m, k] and B to [batch, k, n] where they are not already, one
    matmul, and a transpose of the product into the output's letter order if needed."""
    a, w, out, batch, ms, ks, ns, size = _einsum_plan(node, b.graph)
    x = _permuted(b, b.ref(node.inputs[0]), a, batch + ms + ks, size)
    z = _permuted(b, b.ref(node.inputs[1]), w, batch + ks + ns, size)
    nb, m, k, n = (numel(size[c] for c in part) for part in (batch, ms, ks, ns))
    prod, y = batch + ms + ns, b.ref(node.outputs[0])
    t = b.scratch(4 * nb * m * n) if _moves(prod, out, size) else y
    b.emit("matmul", a=x, b=z, y=t, batch=nb, m=m, n=n, k=k, a_bs=m * k, b_bs=k * n)
    if t is not y:
        _permuted(b, t, prod, out, size, y)
