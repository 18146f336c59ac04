"""RMSNorm and residual-add fusions, as onnxruntime's SimplifiedLayerNormalization and
SkipLayerNormalization fusions: exports that write RMSNorm out (Optimum's and torch.onnx's Llama,
Qwen2, T5) and add the residual before each norm get the skip_norm kernel, one pass per row
instead of five or six ops.

RMSNorm:  v = ReduceMean(Pow(x, 2) | Mul(x, x)) over the last axes; r = Sqrt(Add(v, eps));
          y = Div(x, r) | Mul(x, Reciprocal(r)) | Mul(x, Div(1, r)); [Mul(y, gamma)]
          -> SimplifiedLayerNormalization(x, gamma, axis, epsilon) (ai.onnx, onnxruntime's registration)
Skip:     s = Add(a, b) feeding LayerNormalization / SimplifiedLayerNormalization (last axis, one
          output, scale [H]) -> com.microsoft SkipLayerNormalization(a, b, gamma, beta) /
          SkipSimplifiedLayerNormalization(a, b, gamma), whose 4th output is s when anything else
          reads it (the residual stream).
"""
from ..ir import Node
from .rewrite import Readers, accept, close, const_scalar, is_f32, ms_node, splice
from .transformer import _reduce_axes, _replace_matches, _reshaped, _squeeze, _tensor_f32


def _rms_norm_at(ctx, mean, m):
    g = ctx.graph
    sq = m.op(mean.inputs[0], "Pow", "Mul")
    if sq is None or m.r.only(mean.inputs[0]) is not mean:
        return None
    x = sq.inputs[0]
    if sq.op_type == "Pow" and not close(const_scalar(g, sq.inputs[1]), 2.0, 1e-6):
        return None
    if sq.op_type == "Mul" and sq.inputs[1] != x:
        return None
    xs = g.values[x].shape if x in g.values else None
    if xs is None or not is_f32(g, x):
        return None
    axes = _reduce_axes(g, mean, len(xs))
    if axes is None or any(not isinstance(xs[a], int) for a in axes):
        return None
    add = m.reader(mean.outputs[0], "Add")
    eps = const_scalar(g, m.other(add, mean.outputs[0])) if add is not None else None
    sqrt = m.reader(add.outputs[0], "Sqrt") if eps is not None else None
    if sqrt is None:
        return None
    r = sqrt.outputs[0]
    pattern = [sq, mean, add, sqrt]
    last = m.r.only(r)
    if last is not None and last.domain == "" and last.op_type == "Div" and last.inputs == [x, r]:
        y = last.outputs[0]
        pattern.append(last)
    else:
        inv = m.reader(r, "Reciprocal", "Div")
        if inv is None or (inv.op_type == "Div" and (inv.inputs[1] != r or not close(const_scalar(g, inv.inputs[0]), 1.0, 1e-7))):
            return None
        mul = m.reader(inv.outputs[0], "Mul")
        if mul is None or m.other(mul, inv.outputs[0]) != x:
            return None
        pattern += [inv, mul]
        y = mul.outputs[0]
    norm_shape = tuple(xs[axes[0]:])
    gamma = None
    gmul = m.reader(y, "Mul")
    if gmul is not None:
        gname = m.other(gmul, y)
        gt = g.initializers.get(gname) if gname else None
        if gt is not None and is_f32(g, gname) and _squeeze(gt.shape) == _squeeze(norm_shape):
            gamma, y = _reshaped(ctx, gname, norm_shape), gmul.outputs[0]
            pattern.append(gmul)
    if gamma is None:
        n = 1
        for s in norm_shape:
            n *= s
        gamma = _tensor_f32(ctx, "rms_gamma", norm_shape, [1.0] * n)
    node = Node("SimplifiedLayerNormalization", [x, gamma], [y], name=mean.name,
                attrs={"axis": axes[0], "epsilon": float(eps)}, opset=g.opsets.get("", 17))
    return pattern, node


def fuse_rms_norm(ctx):
    return _replace_matches(ctx, lambda n: n.op_type == "ReduceMean", _rms_norm_at)


def fuse_skip_norm(ctx):
    g, count, used = ctx.graph, 0, set()
    r = Readers(g)
    producers = g.producers()
    for norm in list(g.nodes):
        if norm.domain != "" or norm.op_type not in ("LayerNormalization", "SimplifiedLayerNormalization") \
                or len([o for o in norm.outputs if o]) != 1 or norm.attr("stash_type", 1) != 1:
            continue
        add = producers.get(norm.inputs[0])
        if add is None or add.domain != "" or add.op_type != "Add" or id(add) in used or id(norm) in used:
            continue
        s = add.outputs[0]
        shapes = [g.values[n].shape if n in g.values else None for n in (add.inputs[0], add.inputs[1], s)]
        if any(sh is None for sh in shapes) or not is_f32(g, *add.inputs, s):
            continue
        a, b, ss = (tuple(sh) for sh in shapes)
        if len(ss) not in (2, 3) or a != ss or not all(isinstance(d, int) for d in ss):
            continue
        if b != ss and not (len(ss) == 3 and b in (ss[1:], (1, *ss[1:]))):
            continue
        rank = len(ss)
        if norm.attr("axis", -1) % rank != rank - 1:
            continue
        params = [p for p in norm.inputs[1:] if p]
        if any(tuple(g.values[p].shape) != (ss[-1],) for p in params):
            continue
        skip_readers = [n for n in r.of(s) if n is not norm]
        at = {id(n): i for i, n in enumerate(g.nodes)}
        if any(at.get(id(n), -1) < at[id(norm)] for n in skip_readers):
            continue   # the fused node sits where the norm was: a reader of s before it would come first
        keep_sum = bool(skip_readers) or s in r.outputs
        if norm.op_type == "LayerNormalization":
            inputs = [add.inputs[0], add.inputs[1]] + params
            new = ms_node(ctx, "SkipLayerNormalization", inputs, [norm.outputs[0], "", "", s if keep_sum else ""],
                          norm.name, epsilon=float(norm.attr("epsilon", 1e-5)))
        else:
            new = ms_node(ctx, "SkipSimplifiedLayerNormalization", [add.inputs[0], add.inputs[1]] + params,
                          [norm.outputs[0], "", "", s if keep_sum else ""], norm.name,
                          epsilon=float(norm.attr("epsilon", 1e-5)))
        if not keep_sum:
            new = Node(new.op_type, new.inputs, new.outputs[:1], name=new.name, domain=new.domain, attrs=new.attrs,
                       opset=new.opset)
        if not accept(ctx, new, [add, norm]):
            continue
        used.update((id(add), id(norm)))
        if splice(g, [add, norm], [new]):
            count += 1
    return count


