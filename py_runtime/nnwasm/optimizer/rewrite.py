"""What the fusion passes share: who reads a value, constants as Python numbers, and the rule
that decides whether a proposed fused node replaces its pattern."""
import math

from ..ir import Node
from .cleanup import names_read

MS = "com.microsoft"
FLOAT_MAX = 3.4028234663852886e38


class Readers:
    """value name -> nodes reading it (subgraph reads included), and the graph outputs."""

    def __init__(self, g):
        self.by_value = {}
        for n in g.nodes:
            for name in names_read(n):
                self.by_value.setdefault(name, []).append(n)
        self.outputs = {v.name for v in g.outputs}

    def only(self, name):
        """The single node reading `name` when nothing else (no graph output) does, else None."""
        users = self.by_value.get(name, [])
        if len(users) != 1 or name in self.outputs:
            return None
        return users[0]

    def of(self, name):
        return self.by_value.get(name, [])


def const_values(g, name):
    """Flat list of a constant's values (small constants only), or None."""
    t = g.initializers.get(name) if name else None
    if t is None or not t.dtype.struct or t.numel > 1 << 16:
        return None
    return t.tolist()


def const_scalar(g, name):
    vals = const_values(g, name)
    return float(vals[0]) if vals is not None and len(vals) == 1 else None


def is_f32(g, *names):
    return all(g.values.get(n) is not None and g.values[n].dtype is not None
               and g.values[n].dtype.name == "float32" for n in names)


def close(a, b, rel=1e-3):
    return a is not None and math.isclose(a, b, rel_tol=rel, abs_tol=1e-6)


def ms_node(ctx, op_type, inputs, outputs, name, **attrs):
    """A com.microsoft node (version 1; splice makes the graph import the domain)."""
    return Node(op_type, list(inputs), list(outputs), name=name, domain=MS, attrs=attrs,
                opset=ctx.graph.opsets.get(MS, 1))


def accept(ctx, new, old):
    """Whether `new` may replace the nodes `old`: the provider that would run it must be at least
    as preferred as the best provider among old's (so a Conv on WASM is never fused into a node
    only numpy runs). Outputs of `new` must already have their ValueInfo in graph.values."""
    if not ctx.providers:
        return True
    best = min(ctx.preferred(n) for n in old)
    return ctx.preferred(new) <= best


def splice(g, old, new):
    """Replaces the nodes `old` by `new` (placed where the last of old was: its inputs are ready).
    False, and nothing changes, when an earlier rewrite of the same pass took one of old."""
    ids = {id(n) for n in old}
    at = [i for i, n in enumerate(g.nodes) if id(n) in ids]
    if len(at) != len(ids):
        return False
    last = max(at)
    out = []
    for i, n in enumerate(g.nodes):
        if i == last:
            out.extend(new)
        elif id(n) not in ids:
            out.append(n)
    g.nodes = out
    for n in new:
        g.opsets.setdefault(n.domain, n.opset)
    return True
