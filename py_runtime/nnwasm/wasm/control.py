"""Control flow on kernels.wasm: If, Loop and Scan whose bodies run as their own plans, and the
tiny integer computations around them (If(Equal(sr, 16000)), a Loop's `i < n`) run on the host.

A WASM partition that holds such nodes compiles to a SequenceRunner: straight-line plans between
them (one WasmRunner each), host ops, and control runners. A control runner holds one
BodyRunner per subgraph, compiled once at session creation by the same function (so bodies nest);
at run time it reads the condition / trip count on the host, runs the body's plans with the
formal inputs fed and the enclosing values it reads found by name (ONNX lexical scoping), and
writes the outputs back. Values cross wasm memory at plan boundaries: a value one plan makes and
a body plan reads is copied out and in again (loop-carried values once per iteration).
Enclosing initializers a body reads become weights of its plan, copied in once.
"""
import struct
from collections import ChainMap

from .. import dtypes
from ..errors import InvalidArgument, NotImplementedOp
from ..ir import implicit_inputs, scoped, subgraphs
from ..ops.control import loop_parts, scan_attrs
from ..ops.registry import lookup
from ..ops import shapes as S
from ..partition import Deferred, TakenOnly
from ..profiling import WASM, node_label
from ..tensor import TensorData, numel
from . import device

BOOL = dtypes.BY_NAME["bool"]
HOST_TYPES = tuple("bBhHiIqQ?")
HOST_MAX_ELEMENTS = 8     # host ops are for scalars and tiny index vectors, not tensors


# --- capability ----------------------------------------------------------------------------------

def host_op_refusal(node, graph):
    """None if the node is a tiny integer or bool computation (a condition, a counter, an index)
    that the host does in pure Python with the op's constant folder on the run-time values, else
    why not. Float math stays on the kernels."""
    op = lookup(node.domain, node.op_type, node.opset)
    if op is None or op.fold is None:
        return "no host implementation"
    for name in [n for n in node.inputs if n] + [n for n in node.outputs if n]:
        vi = graph.values.get(name)
        if vi is None or vi.dtype is None or not vi.is_static():
            return Deferred(f"the shape or type of '{name}' is not known at session creation")
        if vi.dtype.struct not in HOST_TYPES:
            return f"'{name}' is {vi.dtype.name}; the host computes integers and bools only"
        if numel(vi.shape) > HOST_MAX_ELEMENTS:
            return f"'{name}' has more than {HOST_MAX_ELEMENTS} elements"
    return None


def control_refusal(provider, node, graph):
    """None if every node of the control node's bodies runs on WASM (recursively) with static
    shapes, else the reason: a definitive one if there is any, else a Deferred one (shapes that
    symbolic input dims leave unknown until the first run)."""
    reasons = list(_control_reasons(provider, node, graph))
    return next((r for r in reasons if not isinstance(r, (Deferred, TakenOnly))),
                next((r for r in reasons if isinstance(r, TakenOnly)), reasons[0] if reasons else None))


def _body_reasons(provider, attr, body, graph):
    """Why the nodes of one body can't all run on WASM with static shapes (nothing if they can)."""
    view = scoped(body, graph)
    for vi in list(body.inputs) + list(body.outputs):
        if vi.dtype is None or not vi.dtype.size or not vi.is_static():
            yield Deferred(f"the shape of its {attr}'s '{vi.name}' is not static")
    for n in body.nodes:
        why = provider.capability(n, view)
        if why is not None:
            yield type(why)(f"its {attr} has {n}, which can't run on WASM: {why}")


def if_branch_refusals(reasons):
    """{branch: why} for the If branches that can't run on WASM while another one can, from
    {branch: [reasons]}: such a branch is checked again, and fails naming the node, only when a
    run takes it (an Optimum merged decoder's cache branch at the first step, with an empty past)."""
    # a branch refused only until shapes are known (Deferred) may run: it is judged again then
    bad = {a: [w for w in r if not isinstance(w, Deferred)] for a, r in reasons.items()}
    bad = {a: r for a, r in bad.items() if r}
    if len(bad) == len(reasons):
        return {}
    return {a: r[0] for a, r in bad.items()}


def _control_reasons(provider, node, graph):
    if node.op_type not in RUNNERS or lookup(node.domain, node.op_type, node.opset) is None:
        yield f"no WASM runner for {node.op_type} at opset {node.opset}"
        return
    if node.op_type == "Scan" and node.opset < 9:
        yield "no WASM runner for Scan-8 (the batch-axis form); the numpy provider runs it"
        return
    for name in node.inputs:
        vi = graph.values.get(name) if name else None
        if name and (vi is None or vi.dtype is None or not vi.dtype.size or not vi.is_static()):
            yield Deferred(f"the shape or type of '{name}' is not known at session creation")
    for name in node.outputs:
        vi = graph.values.get(name) if name else None
        if name and (vi is None or vi.dtype is None or not vi.dtype.size):
            yield Deferred(f"the type of '{name}' is not known at session creation")
    reasons = {attr: list(_body_reasons(provider, attr, body, graph)) for attr, body in subgraphs(node)}
    taken_only = if_branch_refusals(reasons) if node.op_type == "If" else {}
    for attr, whys in reasons.items():
        for why in whys:
            yield TakenOnly(why) if attr in taken_only else why
    if node.op_type in ("Loop", "Scan"):   # a body plan has one shape per value
        body = node.attrs["body"]
        if node.op_type == "Loop":
            n = loop_parts(node, body)[0]
            pairs = zip(body.inputs[2:2 + n], body.outputs[1:1 + n])
        else:
            n = scan_attrs(node, len(node.inputs), len(node.outputs), body)[0]
            pairs = zip(body.inputs[:n], body.outputs[:n])
        for i, o in pairs:
            if i.is_static() and o.is_static() and tuple(i.shape) != tuple(o.shape):
                yield f"the carried value '{i.name}' changes shape between iterations"


# --- compiling -------------------------------------------------------------------------------------

def compile_nodes(provider, nodes, graph, outputs):
    """A runner for nodes (topologically sorted, all accepted by the WASM provider) that leaves
    `outputs` in env: one plan when they are all plan nodes, else a SequenceRunner."""
    in_plan = {id(n): not subgraphs(n) and provider.plan_refusal(n, graph) is None for n in nodes}
    groups = []
    for node in _plan_nodes_together(nodes, in_plan):
        if in_plan[id(node)]:
            if groups and isinstance(groups[-1], list):
                groups[-1].append(node)
            else:
                groups.append([node])
        else:
            groups.append(node)
    needed = set(outputs)
    steps = []
    for g in reversed(groups):   # back to front: what each step must leave for the later ones
        members = g if isinstance(g, list) else [g]
        made = [o for n in members for o in n.outputs if o]
        if isinstance(g, list):
            outs = [o for o in made if o in needed]
            if outs:
                ins = _reads(members, graph)
                steps.append(provider.compile_plan(members, graph, ins, outs))
        else:
            steps.append(_special(provider, g, graph))
        needed.difference_update(made)
        needed.update(_reads(members, graph))
    steps.reverse()
    return steps[0] if len(steps) == 1 and not isinstance(steps[0], (HostOp, ControlRunner)) \
        else SequenceRunner(steps)


def _plan_nodes_together(nodes, in_plan):
    """A topological order of nodes that keeps plan nodes together where dependencies allow (each
    run of them is one plan call): Kahn's sort preferring a ready node of the current kind."""
    producer = {o: k for k, n in enumerate(nodes) for o in n.outputs if o}
    deps = [{producer[i] for i in [*n.inputs, *implicit_inputs(n)] if i in producer} for n in nodes]
    users = [[] for _ in nodes]
    for k, d in enumerate(deps):
        for j in d:
            users[j].append(k)
    waiting = [len(d) for d in deps]
    ready = [k for k, w in enumerate(waiting) if w == 0]
    order, kind = [], None
    while ready:
        same = [k for k in ready if in_plan[id(nodes[k])] == kind]
        k = min(same) if same else min(ready)
        ready.remove(k)
        kind = in_plan[id(nodes[k])]
        order.append(nodes[k])
        for u in users[k]:
            waiting[u] -= 1
            if waiting[u] == 0:
                ready.append(u)
    return order


def _reads(nodes, graph):
    """Values the nodes read from before them (not constants), in order of first read."""
    made, out = set(), {}
    for n in nodes:
        for i in [i for i in n.inputs if i] + implicit_inputs(n):
            if i not in made and i not in graph.initializers:
                out[i] = None
        made.update(o for o in n.outputs if o)
    return list(out)


def _special(provider, node, graph):
    if subgraphs(node):
        return RUNNERS[node.op_type](provider, node, graph)
    return HostOp(node, graph)


def _value(env, graph, name):
    return env[name] if name in env else graph.initializers[name]


def _scalar(env, graph, name, node, what):
    t = _value(env, graph, name)
    if t.numel != 1:
        raise InvalidArgument(f"{node}: {what} must have one element, got shape {list(t.shape)}")
    return t.tolist()[0]


def _tensor(dt, value):
    return TensorData(dt, (), struct.pack(f"<{dt.struct}", value))


class SequenceRunner:
    def __init__(self, steps):
        self.steps = steps

    def run(self, env, prof=None):
        for s in self.steps:
            s.run(env, prof)


class HostOp:
    """A tiny node computed in pure Python by its op's constant folder, on run-time values."""

    def __init__(self, node, graph):
        self.node, self.graph = node, graph
        self.fold = lookup(node.domain, node.op_type, node.opset).fold
        self.infos = [graph.values.get(i) if i else None for i in node.inputs]

    def run(self, env, prof=None):
        node = self.node
        t0 = prof and prof.clock()
        vals = [_value(env, self.graph, i) if i else None for i in node.inputs]
        outs = self.fold(node, self.infos, vals)
        if outs is None or any(t is None for name, t in zip(node.outputs, outs) if name):
            raise InvalidArgument(f"{node} can't be computed for these inputs (a division by zero, or a "
                                  f"value out of its type's range)")
        for name, t in zip(node.outputs, outs):
            if name:
                env[name] = t
        if prof:
            prof.node(node_label(node), node.op_type, "host", WASM, t0, prof.clock())


class BodyRunner:
    """One subgraph compiled to plans: run(env, feeds) -> its output values, in order."""

    def __init__(self, provider, body, outer):
        self.view = scoped(body, outer)
        self.names = [v.name for v in body.outputs]
        made = {o for n in body.nodes for o in n.outputs if o}
        outs = [o for o in dict.fromkeys(self.names) if o in made]
        self.runner = compile_nodes(provider, body.nodes, self.view, outs) if body.nodes else None
        self.infos = list(body.outputs)

    def run(self, env, feeds, prof=None):
        local = ChainMap(dict(feeds), env)
        if self.runner is not None:
            self.runner.run(local, prof)
        return [_value(local, self.view, n) for n in self.names]


class ControlRunner:
    """Base of the If / Loop / Scan runners: run() is _run() timed as one node when profiling (the
    body ops' own events fall inside its span)."""

    def __init__(self, provider, node, graph):
        self.node, self.graph = node, graph
        self.bodies = {attr: BodyRunner(provider, g, graph) for attr, g in subgraphs(node)}

    def run(self, env, prof=None):
        if prof is None:
            return self._run(env, None)
        t0 = prof.clock()
        self._run(env, prof)
        node = self.node
        prof.node(node_label(node), node.op_type, type(self).__name__, WASM, t0, prof.clock())


class IfRunner(ControlRunner):
    """Compiles a branch at the first run that takes it (a merged decoder takes its no-cache branch
    at the first step only: each new past length, a new prepared variant, compiles one branch, not
    two); a branch that can't run on WASM (if_branch_refusals) fails the run that takes it, naming
    the node."""

    def __init__(self, provider, node, graph):
        self.node, self.graph, self.provider = node, graph, provider
        self.branches = dict(subgraphs(node))
        self.bodies = {}   # branch -> BodyRunner, or the reason it can't run on WASM

    def _run(self, env, prof):
        node = self.node
        cond = _scalar(env, self.graph, node.inputs[0], node, "cond")
        attr = "then_branch" if cond else "else_branch"
        body = self.bodies.get(attr)
        if body is None:
            if attr not in self.branches:
                raise InvalidArgument(node.attrs[attr].reason)
            why = next(_body_reasons(self.provider, attr, self.branches[attr], self.graph), None)
            body = self.bodies[attr] = why or BodyRunner(self.provider, self.branches[attr], self.graph)
        if isinstance(body, str):
            raise NotImplementedOp(f"{node}: this run takes its {attr}, which can't run on WASM at these "
                                   f"shapes ({body}), and no enabled provider runs the whole If")
        keep = device.kept()
        with device.keeping(b for o, b in zip(node.outputs, body.names) if o in keep):
            outs = body.run(env, {}, prof)
        for name, t in zip(node.outputs, outs):
            if name:
                env[name] = t


class LoopRunner(ControlRunner):
    def _run(self, env, prof):
        node, g = self.node, self.graph
        body = self.bodies["body"]
        spec = node.attrs["body"]
        n, k = loop_parts(node, spec)
        trips = _scalar(env, g, node.inputs[0], node, "M") if node.inputs[0] else None
        go = bool(_scalar(env, g, node.inputs[1], node, "cond")) if node.inputs[1] else True
        names = [v.name for v in spec.inputs]
        carried = [_value(env, g, x) for x in node.inputs[2:]]
        pieces = [[] for _ in range(k)]
        i = 0
        while go and (trips is None or i < trips):
            feeds = dict(zip(names, [_tensor(dtypes.INT64, i), _tensor(BOOL, go)] + carried))
            outs = body.run(env, feeds, prof)
            go = bool(outs[0].tolist()[0])
            carried = outs[1:1 + n]
            for lst, t in zip(pieces, outs[1 + n:]):
                lst.append(t.data)
            i += 1
        results = carried + [TensorData(vi.dtype, (i,) + tuple(vi.shape), b"".join(lst))
                             for lst, vi in zip(pieces, spec.outputs[1 + n:])]
        for name, t in zip(node.outputs, results):
            if name:
                env[name] = t


class ScanRunner(ControlRunner):
    """Slices the scan inputs and stacks the scan outputs on the host (byte copies)."""

    def _run(self, env, prof):
        node, g = self.node, self.graph
        body, spec = self.bodies["body"], node.attrs["body"]
        n, m, k, in_axes, in_rev, out_axes, out_rev = scan_attrs(node, len(node.inputs), len(node.outputs), spec)
        xs = [_value(env, g, x) for x in node.inputs[n:]]
        axes = [S.axis(node, a, len(x.shape)) for x, a in zip(xs, in_axes)]
        lengths = {x.shape[a] for x, a in zip(xs, axes)}
        if len(lengths) != 1:
            raise InvalidArgument(f"{node}: scan inputs have different lengths {sorted(lengths)}")
        length = lengths.pop()
        names = [v.name for v in spec.inputs]
        state = [_value(env, g, x) for x in node.inputs[:n]]
        pieces = [[] for _ in range(k)]
        for t in range(length):
            slices = [_take(x, a, length - 1 - t if r else t) for x, a, r in zip(xs, axes, in_rev)]
            outs = body.run(env, dict(zip(names, state + slices)), prof)
            state = outs[:n]
            for lst, o in zip(pieces, outs[n:]):
                lst.append(bytes(o.data))
        results = list(state)
        for lst, vi, a, r in zip(pieces, spec.outputs[n:], out_axes, out_rev):
            results.append(_stack(lst[::-1] if r else lst, vi, S.axis(node, a, len(vi.shape) + 1), length))
        for name, t in zip(node.outputs, results):
            if name:
                env[name] = t


def _take(x, axis, i):
    """Index i of x along axis, as a tensor without that axis."""
    size = x.dtype.size
    d, inner = x.shape[axis], numel(x.shape[axis + 1:]) * size
    data = memoryview(x.data).cast("B")
    parts = [data[(o * d + i) * inner:(o * d + i + 1) * inner] for o in range(numel(x.shape[:axis]))]
    return TensorData(x.dtype, x.shape[:axis] + x.shape[axis + 1:], b"".join(parts))


def _stack(pieces, vi, axis, length):
    """The pieces (each of shape vi.shape) stacked along a new axis."""
    shape = tuple(vi.shape)
    inner = numel(shape[axis:]) * vi.dtype.size
    parts = [p[o * inner:(o + 1) * inner] for o in range(numel(shape[:axis])) for p in pieces]
    return TensorData(vi.dtype, shape[:axis] + (length,) + shape[axis:], b"".join(parts))


RUNNERS = {"If": IfRunner, "Loop": LoopRunner, "Scan": ScanRunner}
