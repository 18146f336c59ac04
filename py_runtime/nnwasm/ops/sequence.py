"""Sequence* and Optional* ops, and SplitToSequence / ConcatFromSequence / SequenceMap.

A sequence value is a values.Seq (a list of ndarrays) in the numpy provider, an optional is its
value or None when empty (values.py). infer returns a third item, the output's kind
(ir.ValueInfo.kind); a sequence's dtype and shape are its elements' (the shape only where every
element is known to have it). onnx/reference/ops/op_sequence_*.py, op_optional*.py are the spec.
"""
from .. import dtypes
from ..values import OPTIONAL, OPTIONAL_SEQUENCE, SEQUENCE, Seq, holds_sequence
from . import shapes as S
from .control import merge_shapes, run_graph
from .registry import op

INT64, BOOL = S.INT64, S.BOOL


def _seq_input(node, inputs, i):
    vi = S.need(node, inputs, i)
    if vi.dtype is not None and vi.kind not in (SEQUENCE, OPTIONAL_SEQUENCE) and vi.kind != "tensor":
        S.fail(node, f"input {i} must be a sequence, got a {vi.kind}")
    return vi


def _position(node, pos, n, inclusive_end, what="position"):
    """A Python index from a position tensor, checked against the spec's range."""
    p = int(pos.reshape(-1)[0])
    hi = n if inclusive_end else n - 1
    if not -n <= p <= hi:
        S.fail(node, f"{what} {p} is out of range for a sequence of {n} tensors")
    return p + n if p < 0 else p


def _check_seq(node, seq):
    if not isinstance(seq, list):
        S.fail(node, "input 0 must be a sequence")
    return seq


# --- construction -------------------------------------------------------------------------------

def infer_sequence_empty(node, inputs, consts):
    return [(S.dtype_attr(node, "dtype", 1), None, SEQUENCE)]


@op("SequenceEmpty", 11, infer_sequence_empty)
def sequence_empty(node):
    return Seq()


def infer_sequence_construct(node, inputs, consts):
    if not inputs:
        S.fail(node, "needs at least one input")
    dt = S.same_dtype(node, inputs)
    shape = S.shape(inputs[0])
    for vi in inputs[1:]:
        shape = merge_shapes(shape, S.shape(vi))
    return [(dt, shape, SEQUENCE)]


@op("SequenceConstruct", 11, infer_sequence_construct)
def sequence_construct(node, *xs):
    return Seq(x for x in xs)


def infer_sequence_insert(node, inputs, consts):
    seq, t = _seq_input(node, inputs, 0), S.need(node, inputs, 1)
    if seq.dtype is not None and t.dtype is not None and seq.dtype != t.dtype:
        S.fail(node, f"inserts a {t.dtype.name} tensor into a sequence of {seq.dtype.name}")
    return [(seq.dtype or t.dtype, merge_shapes(S.shape(seq), S.shape(t)), SEQUENCE)]


@op("SequenceInsert", 11, infer_sequence_insert)
def sequence_insert(node, seq, t, pos=None):
    out = Seq(_check_seq(node, seq))
    if seq and t.dtype != seq[0].dtype:
        S.fail(node, f"inserts a {t.dtype} tensor into a sequence of {seq[0].dtype}")
    out.insert(len(out) if pos is None else _position(node, pos, len(out), True), t)
    return out


def infer_sequence_erase(node, inputs, consts):
    seq = _seq_input(node, inputs, 0)
    return [(seq.dtype, S.shape(seq), SEQUENCE)]


@op("SequenceErase", 11, infer_sequence_erase)
def sequence_erase(node, seq, pos=None):
    out = Seq(_check_seq(node, seq))
    if not out:
        S.fail(node, "erases from an empty sequence")
    del out[len(out) - 1 if pos is None else _position(node, pos, len(out), False)]
    return out


def infer_sequence_at(node, inputs, consts):
    seq = _seq_input(node, inputs, 0)
    S.need(node, inputs, 1)
    return [(seq.dtype, S.shape(seq))]


@op("SequenceAt", 11, infer_sequence_at)
def sequence_at(node, seq, pos):
    seq = _check_seq(node, seq)
    return seq[_position(node, pos, len(seq), False)]


@op("SequenceLength", 11, lambda node, inputs, consts: [(INT64, ())])
def sequence_length(node, seq):
    import numpy as np
    return np.array(len(_check_seq(node, seq)), dtype=np.int64)


# --- tensors <-> sequences ----------------------------------------------------------------------

def infer_split_to_sequence(node, inputs, consts):
    x = S.need(node, inputs, 0)
    r = S.rank(x)
    if r is not None:
        S.axis(node, node.attr("axis", 0), r)
    return [(x.dtype, None, SEQUENCE)]


@op("SplitToSequence", 11, infer_split_to_sequence)
def split_to_sequence(node, x, split=None):
    import numpy as np
    axis = S.axis(node, node.attr("axis", 0), x.ndim)
    dim = x.shape[axis]
    if split is None:
        parts = np.split(x, dim, axis=axis) if dim else []
        if not node.attr("keepdims", 1):
            parts = [np.squeeze(p, axis=axis) for p in parts]
        return Seq(parts)
    if split.ndim == 0:
        length = int(split)
        if length <= 0:
            S.fail(node, f"split {length} must be positive")
        sizes = [length] * (dim // length) + ([dim % length] if dim % length else [])
    else:
        sizes = [int(s) for s in split.reshape(-1)]
        if any(s < 0 for s in sizes) or sum(sizes) != dim:
            S.fail(node, f"split {sizes} does not add up to dimension {dim} of axis {axis}")
    return Seq(np.split(x, np.cumsum(sizes)[:-1].tolist(), axis=axis)) if sizes else Seq()


def infer_concat_from_sequence(node, inputs, consts):
    seq = _seq_input(node, inputs, 0)
    if node.attr("axis") is None:
        S.fail(node, "attribute axis is required")
    r = S.rank(seq)
    if r is not None:
        S.axis(node, node.attr("axis"), r + 1 if node.attr("new_axis", 0) else r)
    return [(seq.dtype, None)]


@op("ConcatFromSequence", 11, infer_concat_from_sequence)
def concat_from_sequence(node, seq):
    import numpy as np
    seq = _check_seq(node, seq)
    if not seq:
        S.fail(node, "concatenates an empty sequence")
    axis = node.attr("axis")
    if node.attr("new_axis", 0):
        return np.stack(seq, axis=S.axis(node, axis, seq[0].ndim + 1))
    return np.concatenate(seq, axis=S.axis(node, axis, seq[0].ndim))


# --- SequenceMap ---------------------------------------------------------------------------------

def infer_sequence_map(node, inputs, consts, scope):
    _seq_input(node, inputs, 0)
    given = []
    for vi in inputs:
        if vi is None:
            S.fail(node, "inputs may not be omitted")
        given.append((vi.dtype, S.shape(vi), "tensor") if holds_sequence(vi.kind) else (vi.dtype, S.shape(vi)))
    body = scope.specialise("body", given)
    if len(body.outputs) < len(node.outputs):
        S.fail(node, f"has {len(node.outputs)} outputs; its body makes {len(body.outputs)}")
    return [(o.dtype, o.shape, SEQUENCE) for o in body.outputs][:len(node.outputs)]


@op("SequenceMap", 17, infer_sequence_map)
def sequence_map(node, seq, *extra, scope=None):
    body = node.attrs["body"]
    seq = _check_seq(node, seq)
    for k, e in enumerate(extra):
        if isinstance(e, list) and len(e) != len(seq):
            S.fail(node, f"input {k + 1} is a sequence of {len(e)} tensors, input 0 of {len(seq)}")
    names = [v.name for v in body.inputs]
    outs = [Seq() for _ in body.outputs]
    for i, x in enumerate(seq):
        feeds = dict(zip(names, [x] + [e[i] if isinstance(e, list) else e for e in extra]))
        for lst, y in zip(outs, run_graph(body, feeds, scope or {})):
            lst.append(y)
    return tuple(outs[:len(node.outputs)])


# --- optionals ----------------------------------------------------------------------------------

def infer_optional(node, inputs, consts):
    x = S.get(inputs, 0)
    if x is not None:
        return [(x.dtype, S.shape(x), OPTIONAL_SEQUENCE if holds_sequence(x.kind) else OPTIONAL)]
    tp = node.attr("type")
    if tp is None:
        S.fail(node, "needs an input or a type attribute")
    from ..onnx_io.load import type_kind
    kind, tt = type_kind(tp)
    if tt is None or kind not in ("tensor", SEQUENCE):
        S.unsupported(node, f"an optional of a type nnwasm can't hold ({kind})")
    dt = dtypes.from_onnx(tt.elem_type or 0)
    return [(dt, None, OPTIONAL_SEQUENCE if kind == SEQUENCE else OPTIONAL)]


@op("Optional", 15, infer_optional)
def optional(node, x=None):
    return x


@op("OptionalHasElement", 15, lambda node, inputs, consts: [(BOOL, ())])
def optional_has_element(node, x=None):
    import numpy as np
    return np.array(x is not None)


def infer_optional_get_element(node, inputs, consts):
    x = S.need(node, inputs, 0)
    return [S.typed(x.dtype, S.shape(x), SEQUENCE if holds_sequence(x.kind) else "tensor")]


@op("OptionalGetElement", 15, infer_optional_get_element)
def optional_get_element(node, x):
    if x is None:
        S.fail(node, "the optional input is empty")
    return x
