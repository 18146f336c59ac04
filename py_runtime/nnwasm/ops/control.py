"""If, Loop, Scan (8: batch axis; 9+): control flow whose bodies are subgraphs.

Their infer functions take a fourth argument, a passes.BodyScope, through which they specialise
their bodies to the shapes of this call (and the enclosing values the bodies read). Shapes that
differ between branches or iterations merge into unknown dims, so shape inference stays static
where the model is, and symbolic where it isn't.

Their numpy functions take `scope`, the enclosing values by name (ONNX lexical scoping), and run
the body nodes with the registry's numpy kernels (run_graph). They are the reference the WASM
provider's control runners (wasm/control.py) are tested against.
"""
from .. import dtypes
from ..errors import InvalidArgument, InvalidModel
from ..ir import UnusableBody, subgraphs
from . import shapes as S
from .registry import lookup, op

BOOL, INT64 = S.BOOL, S.INT64


def merge_shapes(a, b):
    """The shape both a and b fit: equal dims kept, others unknown; unknown rank if ranks differ."""
    if a is None or b is None or len(a) != len(b):
        return None
    return tuple(x if x == y else None for x, y in zip(a, b))


def merge_dtypes(node, what, a, b):
    if a is not None and b is not None and a != b:
        S.fail(node, f"{what} has type {a.name} in one body and {b.name} in the other")
    return a or b


def _scalar_check(node, vi, what, dt=None):
    s = S.shape(vi)
    if s is not None and S.numel(s) not in (None, 1):
        S.fail(node, f"{what} must have one element, got shape {list(s)}")
    if dt is not None and vi.dtype is not None and vi.dtype != dt:
        S.fail(node, f"{what} must be {dt.name}, got {vi.dtype.name}")


# --- If ----------------------------------------------------------------------------------------

def infer_if(node, inputs, consts, scope):
    _scalar_check(node, S.need(node, inputs, 0), "cond", BOOL)
    # A branch that is wrong for these shapes only fails if it is taken (as in onnxruntime).
    then_g = scope.specialise("then_branch", [], may_fail=True)
    else_g = scope.specialise("else_branch", [], may_fail=True)
    if then_g is None or else_g is None:
        if then_g is None and else_g is None:
            raise InvalidModel(node.attrs["then_branch"].reason)
        ok = then_g or else_g
        return [S.typed(o.dtype, o.shape, o.kind) for o in ok.outputs][:len(node.outputs)]
    if len(then_g.outputs) != len(else_g.outputs):
        S.fail(node, f"then_branch has {len(then_g.outputs)} outputs, else_branch {len(else_g.outputs)}")
    if len(node.outputs) > len(then_g.outputs):
        S.fail(node, f"has {len(node.outputs)} outputs, its branches {len(then_g.outputs)}")
    return [S.typed(merge_dtypes(node, f"output {k}", a.dtype, b.dtype), merge_shapes(a.shape, b.shape), _kind(a, b))
            for k, (a, b) in enumerate(zip(then_g.outputs, else_g.outputs))][:len(node.outputs)]


def _kind(a, b):
    """The value kind (ir.ValueInfo.kind) of an output that is a in one body and b in the other: an
    optional when either is (a branch may give an empty optional)."""
    if a.kind == b.kind:
        return a.kind
    return "optional sequence" if "sequence" in a.kind + b.kind else "optional"


@op("If", 1, infer_if)
def if_(node, cond, scope=None):
    g = node.attrs["then_branch" if bool(cond.reshape(-1)[0]) else "else_branch"]
    if isinstance(g, UnusableBody):
        raise InvalidArgument(g.reason)
    return tuple(run_graph(g, {}, scope or {}))


# --- Loop --------------------------------------------------------------------------------------

def loop_parts(node, body):
    """(N carried, K scan outputs) of a Loop with this body."""
    n = len(node.inputs) - 2
    k = len(body.outputs) - 1 - n
    if n < 0 or k < 0 or len(body.inputs) != n + 2:
        S.fail(node, f"body with {len(body.inputs)} inputs and {len(body.outputs)} outputs does not fit "
                     f"{len(node.inputs)} Loop inputs")
    return n, k


def static_trip_count(node, consts, body):
    """The Loop's iteration count when it is known at session creation, else None: M is constant
    and cond can't stop it early (absent, or constant true and passed through unchanged)."""
    m = S.const_ints(consts, 0) if node.inputs[0] else None
    if m is None or len(m) != 1 or m[0] > (1 << 31):
        return None
    if node.inputs[1]:
        c = S.get(consts, 1)
        if c is None or not all(c.tolist()):
            return None
        cond_in, cond_out = body.inputs[1].name, body.outputs[0].name
        made = {o: n for n in body.nodes for o in n.outputs}
        while cond_out in made and made[cond_out].op_type == "Identity":
            cond_out = made[cond_out].inputs[0]
        t = body.initializers.get(cond_out)
        if cond_out != cond_in and not (t is not None and t.numel == 1 and all(t.tolist())):
            return None
    return max(m[0], 0)


def infer_loop(node, inputs, consts, scope):
    if len(node.inputs) < 2:
        S.fail(node, "needs inputs M and cond (either may be the empty name)")
    if not node.inputs[0] and not node.inputs[1]:
        # ONNX: with neither, the body's condition output is ignored and the loop never ends
        S.fail(node, "has neither a trip count M nor a condition: it would never end")
    if node.inputs[0]:
        _scalar_check(node, inputs[0], "M", INT64)
    if node.inputs[1]:
        _scalar_check(node, inputs[1], "cond", BOOL)
    carried = [(vi.dtype, S.shape(vi), vi.kind) if vi is not None else (None, None, "optional")
               for vi in inputs[2:]]
    for _ in range(4):   # carried shapes that change between iterations widen to a fixed point
        body = scope.specialise("body", [(INT64, ()), (BOOL, ())] + carried)
        n, k = loop_parts(node, body)
        outs = [(merge_dtypes(node, f"carried value {i}", dt, o.dtype), merge_shapes(shape, o.shape), kind)
                for i, ((dt, shape, kind), o) in enumerate(zip(carried, body.outputs[1:1 + n]))]
        if outs == carried:
            break
        carried = outs
    else:
        carried = [(dt, None, kind) for dt, _, kind in carried]
        body = scope.specialise("body", [(INT64, ()), (BOOL, ())] + carried)
    if len(node.outputs) > n + k:
        S.fail(node, f"has {len(node.outputs)} outputs; its body makes {n} carried values and {k} scan outputs")
    trips = static_trip_count(node, consts, body)
    scans = [(o.dtype, None if o.shape is None else (trips,) + tuple(o.shape)) for o in body.outputs[1 + n:]]
    return ([S.typed(*c) for c in carried] + scans)[:len(node.outputs)]


@op("Loop", 1, infer_loop)
def loop(node, m, cond, *initial, scope=None):
    import numpy as np
    body = node.attrs["body"]
    n, k = loop_parts(node, body)
    trips = None if m is None else int(m.reshape(-1)[0])
    go = True if cond is None else bool(cond.reshape(-1)[0])
    names = [v.name for v in body.inputs]
    carried, scans, i = list(initial), [[] for _ in range(k)], 0
    consts = _numpy_initializers(body)
    while go and (trips is None or i < trips):
        feeds = dict(zip(names, [np.array(i, np.int64), np.array(go)] + carried))
        outs = run_graph(body, feeds, scope or {}, consts)
        go, carried = bool(np.asarray(outs[0]).reshape(-1)[0]), list(outs[1:1 + n])
        for lst, o in zip(scans, outs[1 + n:]):
            lst.append(o)
        i += 1
    return tuple(carried) + tuple(_stack(lst, o, 0, False) for lst, o in zip(scans, body.outputs[1 + n:]))


def _stack(pieces, vi, axis, reverse):
    import numpy as np
    if not pieces:
        shape = [0 if not isinstance(d, int) else d for d in (vi.shape or ())]
        return np.empty(shape[:axis] + [0] + shape[axis:], dtype=(vi.dtype or dtypes.FLOAT32).name)
    return np.stack(pieces[::-1] if reverse else pieces, axis=axis)


# --- Scan (opset 9+: no batch axis, no sequence_lens) ------------------------------------------

def scan_attrs(node, n_inputs, n_outputs, body):
    """(N state values, M scan inputs, K scan outputs, input axes, input reverse flags, output
    axes, output reverse flags); axes not yet normalised."""
    m = node.attr("num_scan_inputs")
    if m is None or not 0 < m <= n_inputs:
        S.fail(node, f"num_scan_inputs {m} does not fit its {n_inputs} inputs")
    n = n_inputs - m
    k = n_outputs - n
    if k < 0 or len(body.inputs) != n + m or len(body.outputs) != n + k:
        S.fail(node, f"body with {len(body.inputs)} inputs and {len(body.outputs)} outputs does not fit "
                     f"{n_inputs} inputs and {n_outputs} outputs")
    lists = []
    for name, count in (("scan_input_axes", m), ("scan_input_directions", m),
                        ("scan_output_axes", k), ("scan_output_directions", k)):
        v = list(node.attr(name, [0] * count))
        if len(v) != count:
            S.fail(node, f"{name} has {len(v)} entries, expected {count}")
        lists.append(v)
    return n, m, k, lists[0], [bool(d) for d in lists[1]], lists[2], [bool(d) for d in lists[3]]


def infer_scan(node, inputs, consts, scope):
    body = node.attrs["body"]
    n, m, k, in_axes, _, out_axes, _ = scan_attrs(node, len(node.inputs), len(node.outputs), body)
    length, slices = None, []
    for i, vi in enumerate(inputs[n:]):
        s = S.shape(vi)
        if s is None:
            slices.append((vi.dtype, None))
            continue
        a = S.axis(node, in_axes[i], len(s))
        length = s[a] if length is None or not S.known(length) else length
        if S.known(s[a]) and S.known(length) and s[a] != length:
            S.fail(node, f"scan inputs have different lengths {length} and {s[a]}")
        slices.append((vi.dtype, s[:a] + s[a + 1:]))
    state = [(vi.dtype, S.shape(vi)) for vi in inputs[:n]]
    for _ in range(4):
        body = scope.specialise("body", state + slices)
        outs = [(merge_dtypes(node, f"state {i}", dt, o.dtype), merge_shapes(shape, o.shape))
                for i, ((dt, shape), o) in enumerate(zip(state, body.outputs[:n]))]
        if outs == state:
            break
        state = outs
    else:
        state = [(dt, None) for dt, _ in state]
        body = scope.specialise("body", state + slices)
    scans = []
    for i, o in enumerate(body.outputs[n:]):
        if o.shape is None:
            scans.append((o.dtype, None))
            continue
        a = S.axis(node, out_axes[i], len(o.shape) + 1)
        scans.append((o.dtype, tuple(o.shape[:a]) + (length,) + tuple(o.shape[a:])))
    return state + scans


@op("Scan", 9, infer_scan)
def scan(node, *args, scope=None):
    import numpy as np
    body = node.attrs["body"]
    n, m, k, in_axes, in_rev, out_axes, out_rev = scan_attrs(node, len(args), len(node.outputs), body)
    xs = [np.moveaxis(x, S.axis(node, a, x.ndim), 0) for x, a in zip(args[n:], in_axes)]
    lengths = {x.shape[0] for x in xs}
    if len(lengths) != 1:
        raise InvalidArgument(f"{node}: scan inputs have different lengths {sorted(lengths)}")
    length = lengths.pop()
    names = [v.name for v in body.inputs]
    state, scans = list(args[:n]), [[] for _ in range(k)]
    consts = _numpy_initializers(body)
    for t in range(length):
        slices = [x[length - 1 - t if r else t] for x, r in zip(xs, in_rev)]
        outs = run_graph(body, dict(zip(names, state + slices)), scope or {}, consts)
        state = list(outs[:n])
        for lst, o in zip(scans, outs[n:]):
            lst.append(np.asarray(o))
    out = []
    for lst, o, a, r in zip(scans, body.outputs[n:], out_axes, out_rev):
        rank = len(o.shape) + 1 if o.shape is not None else (lst[0].ndim + 1 if lst else 1)
        out.append(_stack(lst, o, S.axis(node, a, rank), r))
    return tuple(state) + tuple(out)


# --- Scan-8: a batch axis (0) on every input and output, optional sequence_lens first -----------

def scan8_attrs(node, body):
    """(N state values, M scan inputs, K scan outputs, reverse flag per scan input); node.inputs
    starts with sequence_lens (possibly omitted)."""
    n_in = len(node.inputs) - 1
    m = node.attr("num_scan_inputs")
    if m is None or not 0 < m <= n_in:
        S.fail(node, f"num_scan_inputs {m} does not fit its {n_in} state and scan inputs")
    n = n_in - m
    k = len(node.outputs) - n
    if k < 0 or len(body.inputs) != n + m or len(body.outputs) != n + k:
        S.fail(node, f"body with {len(body.inputs)} inputs and {len(body.outputs)} outputs does not fit "
                     f"{n_in} state and scan inputs and {len(node.outputs)} outputs")
    dirs = list(node.attr("directions", [0] * m))
    if len(dirs) != m or any(d not in (0, 1) for d in dirs):
        S.fail(node, f"directions {dirs} must be {m} values of 0 or 1")
    return n, m, k, [bool(d) for d in dirs]


def infer_scan8(node, inputs, consts, scope):
    body = node.attrs["body"]
    n, m, k, _ = scan8_attrs(node, body)
    lens = S.get(inputs, 0)
    if lens is not None:
        if lens.dtype is not None and lens.dtype != INT64:
            S.fail(node, f"sequence_lens must be int64, got {lens.dtype.ort_name}")
        if S.shape(lens) is not None and len(lens.shape) != 1:
            S.fail(node, f"sequence_lens must be 1-D, got shape {list(lens.shape)}")
    batch, length = (S.shape(lens) or (None,))[0] if lens is not None else None, None

    def dim(d, name, old):
        if old is None or not S.known(old):
            return d
        if S.known(d) and d != old:
            S.fail(node, f"{name} differs between inputs: {old} and {d}")
        return old

    state, slices = [], []
    for i, vi in enumerate(inputs[1:]):
        s = S.shape(vi)
        if s is not None and len(s) < (1 if i < n else 2):
            S.fail(node, f"input {i + 1} needs a batch axis{'' if i < n else ' and a sequence axis'}, "
                         f"got shape {list(s)}")
        if s is not None:
            batch = dim(s[0], "the batch size", batch)
        if i < n:
            state.append((vi.dtype, None if s is None else s[1:]))
        else:
            if s is not None:
                length = dim(s[1], "the sequence length", length)
            slices.append((vi.dtype, None if s is None else s[2:]))
    for _ in range(4):
        spec = scope.specialise("body", state + slices)
        outs = [(merge_dtypes(node, f"state {i}", dt, o.dtype), merge_shapes(shape, o.shape))
                for i, ((dt, shape), o) in enumerate(zip(state, spec.outputs[:n]))]
        if outs == state:
            break
        state = outs
    else:
        state = [(dt, None) for dt, _ in state]
        spec = scope.specialise("body", state + slices)
    return ([(dt, None if s is None else (batch,) + tuple(s)) for dt, s in state]
            + [(o.dtype, None if o.shape is None else (batch, length) + tuple(o.shape)) for o in spec.outputs[n:]])


@op("Scan", 8, infer_scan8)
def scan8(node, sequence_lens, *args, scope=None):
    import numpy as np
    body = node.attrs["body"]
    n, m, k, rev = scan8_attrs(node, body)
    xs = args[n:]
    if any(x.ndim < 2 for x in xs) or any(s.ndim < 1 for s in args[:n]):
        raise InvalidArgument(f"{node}: state inputs need a batch axis, scan inputs a batch and a sequence axis")
    shapes = {(x.shape[0], x.shape[1]) for x in xs} | {(s.shape[0], None) for s in args[:n]}
    batches, lengths = {b for b, _ in shapes}, {t for _, t in shapes if t is not None}
    if len(batches) != 1 or len(lengths) != 1:
        raise InvalidArgument(f"{node}: inputs have different batch sizes {sorted(batches)} or sequence "
                              f"lengths {sorted(lengths)}")
    batch, length = batches.pop(), lengths.pop()
    if sequence_lens is None:
        lens = [length] * batch
    else:
        lens = [int(v) for v in np.asarray(sequence_lens).reshape(-1)]
        if len(lens) != batch or any(not 0 <= v <= length for v in lens):
            raise InvalidArgument(f"{node}: sequence_lens {lens} must have {batch} values in [0, {length}]")
    names = [v.name for v in body.inputs]
    consts = _numpy_initializers(body)
    finals, stacked = [], [[] for _ in range(k)]
    for b in range(batch):
        state, pieces, t_len = [s[b] for s in args[:n]], [[] for _ in range(k)], lens[b]
        for t in range(t_len):
            slices = [x[b, t_len - 1 - t if r else t] for x, r in zip(xs, rev)]
            outs = run_graph(body, dict(zip(names, state + slices)), scope or {}, consts)
            state = list(outs[:n])
            for lst, o in zip(pieces, outs[n:]):
                lst.append(np.asarray(o))
        finals.append(state)
        for i, (lst, o) in enumerate(zip(pieces, body.outputs[n:])):
            if lst:
                seq = np.stack(lst)
                if t_len < length:   # padded with zeros past this item's length, as onnxruntime does
                    seq = np.concatenate([seq, np.zeros((length - t_len,) + seq.shape[1:], seq.dtype)])
            else:
                seq = _stack([], o, 0, False)
            stacked[i].append(seq)
    out = [np.stack([f[i] for f in finals]) if batch else np.asarray(args[i])
           for i in range(n)]
    for i, (lst, o) in enumerate(zip(stacked, body.outputs[n:])):
        shapes_i = {a.shape[1:] for a in lst if a.shape[0]}
        if batch and len(shapes_i) <= 1:
            inner = shapes_i.pop() if shapes_i else lst[0].shape[1:]
            lst = [a if a.shape[0] else np.zeros((length,) + inner, a.dtype) for a in lst]
            out.append(np.stack(lst))
        elif batch:
            raise InvalidArgument(f"{node}: scan output {i} changes shape between batch items")
        else:
            out.append(np.empty((0, length) + tuple(d if isinstance(d, int) else 0 for d in (o.shape or ())),
                                dtype=(o.dtype or dtypes.FLOAT32).name))
    return tuple(out)


# --- running a subgraph with numpy --------------------------------------------------------------

def _numpy_initializers(g):
    return {k: t.to_numpy() for k, t in g.initializers.items()}


def run_graph(g, feeds, scope, consts=None):
    """The values of g's outputs, running its nodes with the numpy kernels; names g does not define
    come from scope (the enclosing graphs' values)."""
    from collections import ChainMap
    vals = ChainMap(dict(feeds), consts if consts is not None else _numpy_initializers(g), scope)
    for node in g.nodes:
        fn = lookup(node.domain, node.op_type, node.opset)
        if fn is None or fn.numpy is None:
            raise InvalidArgument(f"{node}: no numpy implementation of {node.op_type} at opset {node.opset}")
        args = [vals[i] if i else None for i in node.inputs]
        outs = fn.numpy(node, *args, scope=vals) if subgraphs(node) else fn.numpy(node, *args)
        for name, arr in zip(node.outputs, outs):
            if name:
                vals.maps[0][name] = arr
    return [vals[v.name] for v in g.outputs]


def numpy_refusal(node):
    """Why the numpy provider can't run this node's subgraphs (recursively), or None."""
    for attr, g in subgraphs(node):
        for n in g.nodes:
            fn = lookup(n.domain, n.op_type, n.opset)
            if fn is None or fn.numpy is None:
                return f"its {attr} has {n}, which has no numpy implementation"
            why = numpy_refusal(n)
            if why:
                return f"its {attr} has {n}: {why}"
    return None
