"""Per-batch lengths a plan reads as data, known on the host before a run: where a
GroupQueryAttention's new key/value rows go is n_b = seqlens_k[b] + 1 - S, and the runner must know
it before it places the present (wasm/region.py: in the past's own block only when every row
appends at the past's end, n_b == P). seqlens_k is a plan input (read: a few bytes), or the plan
computes it from one, as onnxruntime-genai's builder does: Cast(Sub(ReduceSum(attention_mask, 1), 1)).
`trace` follows such a chain back to a plan input at plan build (a recipe of a few integer steps);
`evaluate` runs the recipe on that input's bytes at run time, in pure Python (no numpy: Pyodide).
Anything else is no recipe, and the present is then written into a block of its own, as before.
The kernel checks the lengths again (kv_append_rows), so a recipe can cost a copy, never a wrong
result."""
import array
import sys

from ..symbolic import value

MAX_STEPS = 8
_IDENTITY = ("Identity", "Squeeze", "Unsqueeze", "Reshape", "Flatten")
_INT_STRUCTS = "bBhHiIqQ"


def _scalar(g, name):
    t = g.initializers.get(name)
    if t is None or t.numel != 1 or t.dtype.struct not in _INT_STRUCTS:
        return None
    v = t.tolist()[0]
    return v if isinstance(v, int) else None


def _rank(g, name):
    vi = g.values.get(name)
    return len(vi.shape) if vi is not None and vi.shape is not None else None


def trace(b, name):
    """(plan input, steps) whose evaluation gives `name`'s values, or None. Steps: ("sum_rows",)
    a rank-2 input summed over its last axis; ("add", c); ("wrap", bits) an integer Cast."""
    g = b.graph
    producers = getattr(b, "_kv_producers", None)
    if producers is None:
        producers = b._kv_producers = g.producers()
    steps = []
    while name not in b.inputs:
        node = producers.get(name)
        if node is None or id(node) not in b.members or len(steps) >= MAX_STEPS or node.domain not in ("", "ai.onnx"):
            return None
        ins = [i for i in node.inputs if i]
        if node.op_type in _IDENTITY:   # on the [B] values only: a reshape before the sum could mix rows
            if ("sum_rows",) in steps:
                return None
            steps.append(None)
        elif node.op_type == "Cast" and node.attr("to") in (6, 7):   # int32, int64
            steps.append(("wrap", 32 if node.attr("to") == 6 else 64))
        elif node.op_type in ("Add", "Sub") and len(ins) == 2:
            c = _scalar(g, ins[1])
            if c is None and node.op_type == "Add":
                c, ins = _scalar(g, ins[0]), ins[::-1]
            if c is None:
                return None
            steps.append(("add", -c if node.op_type == "Sub" else c))
        elif node.op_type == "ReduceSum" and _rank(g, ins[0]) == 2 and not node.attr("noop_with_empty_axes", 0) \
                and ("sum_rows",) not in steps:
            axes = node.attr("axes") if node.opset < 13 else (g.initializers[ins[1]].tolist()
                                                             if len(ins) > 1 and ins[1] in g.initializers else None)
            if axes is None or list(axes) not in ([1], [-1]):
                return None
            steps.append(("sum_rows",))
        else:
            return None
        name = ins[0]
    vi = g.values.get(name)
    if vi is None or vi.dtype is None or vi.dtype.struct not in _INT_STRUCTS:
        return None
    steps = tuple(s for s in reversed(steps) if s is not None)
    if ("sum_rows",) in steps and _rank(g, name) != 2:
        return None
    return name, steps


def evaluate(recipe, env):
    """The recipe's values (a flat list of ints) for the run's input in env, or None."""
    src, steps = recipe
    t = env.get(src)
    if t is None or t.dtype.struct not in _INT_STRUCTS:
        return None
    vals = array.array(t.dtype.struct)
    vals.frombytes(bytes(t.data))
    if sys.byteorder == "big":
        vals.byteswap()
    vals = vals.tolist()
    for step in steps:
        if step[0] == "sum_rows":
            rows = t.shape[0]
            cols = len(vals) // rows if rows else 0
            vals = [sum(vals[r * cols:(r + 1) * cols]) for r in range(rows)]
        elif step[0] == "add":
            vals = [v + step[1] for v in vals]
        else:
            half, full = 1 << (step[1] - 1), 1 << step[1]
            vals = [(v + half) % full - half for v in vals]
    return vals


def rows_at(spec, env, memo):
    """n_b of each batch row for a present's spec (recipe, lens_add), or None; memo: {recipe: values}
    for one run (the layers' presents share one seqlens_k)."""
    recipe, lens_add = spec
    if recipe not in memo:
        memo[recipe] = evaluate(recipe, env)
    vals = memo[recipe]
    if vals is None:
        return None
    add = value(lens_add)
    return [v + add for v in vals]
