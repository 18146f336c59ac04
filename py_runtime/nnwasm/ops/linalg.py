"""MatMul, Gemm, Einsum and Det."""
from . import shapes as S
from .casting import widened
from .registry import op


def infer_det(node, inputs, consts):
    x = S.need(node, inputs, 0)
    xs = S.shape(x)
    if xs is None:
        return [(x.dtype, None)]
    if len(xs) < 2:
        S.fail(node, f"input must be [..., M, M], got shape {list(xs)}")
    S.merge_dims(node, xs[-1], xs[-2], "a square matrix")
    return [(x.dtype, tuple(xs[:-2]))]


def det(node, x):
    import numpy as np
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        S.fail(node, f"input must be [..., M, M], got shape {list(x.shape)}")
    if x.dtype.kind != "f":
        S.fail(node, f"input must be floating point, got {x.dtype}")
    return np.asarray(np.linalg.det(x.astype(np.float64))).astype(x.dtype)


for _since in (11, 22):     # 22 adds bfloat16
    op("Det", _since, infer_det)(det)


def matmul_shape(node, a, b):
    """numpy.matmul's shape rule: 1-D operands get a dim added then removed; batch dims broadcast."""
    if a is None or b is None:
        return None
    if len(a) == 0 or len(b) == 0:
        S.fail(node, "MatMul operands must have rank >= 1")
    a2 = (1, *a) if len(a) == 1 else a
    b2 = (*b, 1) if len(b) == 1 else b
    S.merge_dims(node, a2[-1], b2[-2], f"inner dims of {list(a)} x {list(b)}")
    batch = S.broadcast(node, a2[:-2], b2[:-2])
    out = (*batch, *([a2[-2]] if len(a) > 1 else []), *([b2[-1]] if len(b) > 1 else []))
    return out


def infer_matmul(node, inputs, consts):
    a, b = S.need(node, inputs, 0), S.need(node, inputs, 1)
    return [(S.same_dtype(node, inputs), matmul_shape(node, S.shape(a), S.shape(b)))]


@op("MatMul", 1, infer_matmul)
def matmul(node, a, b):
    import numpy as np
    return np.matmul(a, b).astype(a.dtype, copy=False)   # ml_dtypes' bfloat16 matmul gives float32


def infer_gemm(node, inputs, consts):
    a, b = S.need(node, inputs, 0), S.need(node, inputs, 1)
    dt = S.same_dtype(node, inputs)
    m = k1 = k2 = n = None
    for vi, trans, name in ((a, node.attr("transA", 0), "A"), (b, node.attr("transB", 0), "B")):
        s = S.shape(vi)
        if s is not None and len(s) != 2:
            S.fail(node, f"{name} must be 2-D, got shape {list(s)}")
        if s is not None:
            rows, cols = (s[1], s[0]) if trans else s
            if name == "A":
                m, k1 = rows, cols
            else:
                k2, n = rows, cols
    S.merge_dims(node, k1, k2, f"inner dims of A {list(S.shape(a) or ())} and B {list(S.shape(b) or ())}")
    c = S.shape(S.get(inputs, 2))
    if c is not None:
        out = S.broadcast(node, (m, n), c)
        if len(c) > 2 or any(S.known(want) and got != want for want, got in zip((m, n), out)):
            S.fail(node, f"C of shape {list(c)} does not broadcast to ({m}, {n})")
        m, n = out
    return [(dt, (m, n))]


@op("Gemm", 1, infer_gemm)   # opset 1-6's `broadcast` of C is unidirectional: numpy's covers it
@op("Gemm", 7, infer_gemm)
def gemm(node, a, b, c=None):
    import numpy as np
    if node.attr("transA", 0):
        a = a.T
    if node.attr("transB", 0):
        b = b.T
    y = np.matmul(a, b)
    alpha, beta = node.attr("alpha", 1.0), node.attr("beta", 1.0)
    if alpha != 1.0:
        y = y * np.asarray(alpha, y.dtype)
    if c is not None:
        y = y + (c * np.asarray(beta, c.dtype) if beta != 1.0 else c)
    return y.astype(a.dtype, copy=False)


def _einsum_terms(node, n_inputs):
    eq = node.attr("equation")
    if not isinstance(eq, str):
        S.fail(node, "attribute equation is required")
    eq = eq.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != n_inputs:
        S.fail(node, f"equation {eq!r} has {len(terms)} operands but the node has {n_inputs} inputs")
    if not arrow:   # implicit output: ellipsis, then the letters used once, alphabetically
        letters = [c for c in lhs if c.isalpha()]
        rhs = ("..." if "..." in lhs else "") + "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    return terms, rhs


def infer_einsum(node, inputs, consts):
    terms, rhs = _einsum_terms(node, len(inputs))
    dims, ellipses = {}, []
    for term, vi in zip(terms, inputs):
        s = S.shape(vi)
        if s is None:
            return [(S.same_dtype(node, inputs), None)]
        head, dots, tail = term.partition("...")
        n_ell = len(s) - len(head) - len(tail)
        if n_ell < 0 or (n_ell and not dots):
            S.fail(node, f"term {term!r} does not fit input shape {list(s)}")
        ellipses.append(s[len(head):len(head) + n_ell])
        for letter, d in zip(head + tail, s[:len(head)] + s[len(s) - len(tail):]):
            # a size-1 dim broadcasts against the same letter elsewhere (numpy's einsum allows it)
            old = dims.get(letter)
            dims[letter] = d if old is None or old == 1 else old if d == 1 else S.merge_dims(
                node, old, d, f"letter {letter!r} of {node.attr('equation')!r}")
    ell = S.broadcast(node, *ellipses)
    out = []
    for part in rhs.split("..."):
        out.append([dims.get(c) for c in part])
    shape = tuple(out[0]) + (tuple(ell) + tuple(out[1]) if len(out) > 1 else ())
    return [(S.same_dtype(node, inputs), shape)]


@op("Einsum", 12, infer_einsum)
@widened
def einsum(node, *xs):
    import numpy as np
    return np.einsum(node.attr("equation").replace(" ", ""), *xs)
