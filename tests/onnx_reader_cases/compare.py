"""Assertions that nnwasm's parse of a model or tensor equals the onnx package's."""
import struct

import numpy as np
from onnx import AttributeProto, GraphProto, helper, numpy_helper

from nnwasm import dtypes

A = AttributeProto


def supported_code(code):
    return dtypes.from_onnx(code) is not None


def assert_tensor_equal(ours, ref, what=""):
    """ours: TensorData; ref: an onnx TensorProto or a numpy array."""
    arr = numpy_helper.to_array(ref) if not isinstance(ref, np.ndarray) else ref
    assert ours.shape == arr.shape, what
    if ours.dtype.name == "object":
        assert [bytes(s) for s in ours.data] == [s if isinstance(s, bytes) else s.encode() for s in arr.flat], what
        return
    assert ours.dtype.name == arr.dtype.name, what
    if ours.dtype.ml_dtypes:   # bfloat16, float8, int4...: one element a byte (two for bfloat16), as ml_dtypes
        assert bytes(ours.data) == arr.view("<u2" if arr.dtype.itemsize == 2 else "u1").tobytes(), what
        return
    assert bytes(ours.data) == arr.astype(arr.dtype.newbyteorder("<")).tobytes(), what


def expected_value_info(vi):
    """(dtype, shape) that nnwasm should report for an onnx ValueInfoProto (a sequence's or an
    optional's: those of its innermost tensor)."""
    tt = _innermost_tensor(vi.type)
    if tt is None:
        return None, None
    dt = dtypes.from_onnx(tt.elem_type)
    if not tt.HasField("shape"):
        return dt, None
    shape = []
    for d in tt.shape.dim:
        which = d.WhichOneof("value")
        if which == "dim_value":
            shape.append(d.dim_value if d.dim_value >= 0 else None)
        elif which == "dim_param":
            shape.append(d.dim_param or None)
        else:
            shape.append(None)
    return dt, tuple(shape)


def _innermost_tensor(tp):
    """The TypeProto.Tensor of a tensor, a sequence of tensors or an optional of either; None for
    what nnwasm can't hold (maps, sequences of sequences)."""
    kind = tp.WhichOneof("value")
    if kind == "tensor_type":
        return tp.tensor_type
    if kind == "sequence_type" and tp.sequence_type.elem_type.WhichOneof("value") == "tensor_type":
        return tp.sequence_type.elem_type.tensor_type
    if kind == "optional_type" and tp.optional_type.elem_type.WhichOneof("value") in ("tensor_type", "sequence_type"):
        return _innermost_tensor(tp.optional_type.elem_type)
    return None


def _float_bits(values):
    return struct.pack(f"<{len(values)}f", *values)


def assert_attr_equal(ours, a, where):
    v = helper.get_attribute_value(a)
    t = a.type
    if t == A.FLOAT:
        assert _float_bits([ours]) == _float_bits([v]), where
    elif t == A.FLOATS:
        assert _float_bits(ours) == _float_bits(v), where
    elif t in (A.INT, A.INTS):
        assert ours == (list(v) if t == A.INTS else v), where
    elif t == A.STRING:
        assert ours == _text(v), where
    elif t == A.STRINGS:
        assert ours == [_text(s) for s in v], where
    elif t == A.TENSOR:
        assert_tensor_equal(ours, v, where)
    elif t == A.TENSORS:
        assert len(ours) == len(v), where
        for o, r in zip(ours, v):
            assert_tensor_equal(o, r, where)
    elif t == A.GRAPH:
        assert_graph_equal(ours, v, top=False)
    elif t == A.GRAPHS:
        assert len(ours) == len(v), where
        for o, r in zip(ours, v):
            assert_graph_equal(o, r, top=False)
    elif t == A.SPARSE_TENSOR:
        assert_tensor_equal(ours, dense_of_sparse(v), where)
    elif t == A.TYPE_PROTO:
        assert ours.value == v.WhichOneof("value"), where
    else:
        raise AssertionError(f"{where}: attribute type {t} not covered by the comparison")


def _text(b):
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return b


def dense_of_sparse(sp):
    values = numpy_helper.to_array(sp.values)
    idx = numpy_helper.to_array(sp.indices)
    dense = np.zeros(tuple(sp.dims), dtype=values.dtype)
    if idx.ndim == 1:
        dense.reshape(-1)[idx] = values
    else:
        dense[tuple(idx.T)] = values
    return dense


def assert_graph_equal(ours, g: GraphProto, top=True):
    assert ours.name == g.name
    inits = {t.name: t for t in g.initializer}
    assert set(ours.initializers) == set(inits) | {s.values.name for s in g.sparse_initializer}
    for name, t in inits.items():
        assert_tensor_equal(ours.initializers[name], t, f"initializer {name}")
    for s in g.sparse_initializer:
        assert_tensor_equal(ours.initializers[s.values.name], dense_of_sparse(s), "sparse initializer")
    assert [v.name for v in ours.inputs] == [vi.name for vi in g.input if vi.name not in ours.initializers]
    assert [v.name for v in ours.outputs] == [vi.name for vi in g.output]
    expected = {vi.name: expected_value_info(vi) for vi in [*g.value_info, *g.output, *g.input]}
    for name, dt_shape in expected.items():
        assert (ours.values[name].dtype, ours.values[name].shape) == dt_shape, name
    assert len(ours.nodes) == len(g.node)
    for o, n in zip(ours.nodes, g.node):
        where = f"{g.name}: {n.op_type} {n.name}"
        assert (o.op_type, o.name, o.inputs, o.outputs) == (n.op_type, n.name, list(n.input), list(n.output)), where
        assert o.domain == ("" if n.domain == "ai.onnx" else n.domain), where
        assert o.opset == ours.opsets[o.domain], where
        assert list(o.attrs) == [a.name for a in n.attribute], where
        for a in n.attribute:
            assert_attr_equal(o.attrs[a.name], a, f"{where}, attribute {a.name}")


def _graphs_of(g):
    yield g
    for n in g.node:
        for a in n.attribute:
            for sub in ([a.g] if a.type == A.GRAPH else list(a.graphs) if a.type == A.GRAPHS else []):
                yield from _graphs_of(sub)


def unsupported_reason(model):
    """Why nnwasm must refuse this valid model (an element type or value kind it lacks), or None."""
    for g in _graphs_of(model.graph):
        tensors = list(g.initializer) + [s.values for s in g.sparse_initializer]
        for n in g.node:
            for a in n.attribute:
                tensors += [a.t] if a.type == A.TENSOR else list(a.tensors) if a.type == A.TENSORS else []
                tensors += [a.sparse_tensor.values] if a.type == A.SPARSE_TENSOR else []
        for t in tensors:
            if not supported_code(t.data_type):
                return f"tensor of type {t.data_type}"
    init_names = {t.name for t in model.graph.initializer}
    for vi in [*[i for i in model.graph.input if i.name not in init_names], *model.graph.output]:
        tt = _innermost_tensor(vi.type)
        if tt is None:
            return f"'{vi.name}' of kind {vi.type.WhichOneof('value')}"
        code = tt.elem_type
        if code and not supported_code(code):
            return f"'{vi.name}' of element type {code}"
    return None
