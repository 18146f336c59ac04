"""Issue 8 item 6: a fuzz of mutated models through the loader, shape inference, the partitioner
and a run. Six seed models (a CNN, an attention block, a QDQ int8 model, If and Loop, symbolic
dims, Gather with int64 indices) are mutated two ways, bytes of the serialized model (flips,
truncations, insertions, deletions) and edits through onnx's protobuf (attribute values and types,
dims, element types, node inputs/outputs, duplicate names, opsets, cycles, huge repeats), one
seeded RNG per case. Each case must run or raise an nnwasm.NnwasmError: any other exception, a
case over CASE_SECONDS or a hang fails the test naming the case, its seed model and mutation.

NNWASM_FUZZ_MODELS=N runs N cases (default 500); NNWASM_FUZZ_START=K starts at case K, so one
failing case reruns alone with NNWASM_FUZZ_START=K NNWASM_FUZZ_MODELS=1. tests/fuzz_oracle.py runs
the same cases against onnxruntime (wrong answers, models onnxruntime refuses) in CPython and Node:
docs/hardening.md."""
import copy
import faulthandler
import os
import signal
import threading
import time
import traceback
import warnings
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import nnwasm

CASES = int(os.environ.get("NNWASM_FUZZ_MODELS", "500"))
START = int(os.environ.get("NNWASM_FUZZ_START", "0"))
CASE_SECONDS = 5.0      # a case slower than this is a bug
HANG_SECONDS = 20       # SIGALRM interrupts a case stuck in Python code
BASE_SEED = 20260823
MAX_EDITS = int(os.environ.get("NNWASM_FUZZ_EDITS", "2"))   # protobuf edits per structure-mutated case


def _r(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def _model(nodes, inputs, outputs, inits=(), opset=17, value_info=()):
    g = helper.make_graph(nodes, "seed", inputs, outputs, list(inits), value_info=list(value_info))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def _vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def seed_models():
    rng = np.random.default_rng(7)
    F, I64, I8, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.INT8, TensorProto.BOOL
    init = numpy_helper.from_array
    seeds = {}
    seeds["cnn"] = _model(
        [helper.make_node("Conv", ["X", "W1", "B1"], ["a"], pads=[1, 1, 1, 1], strides=[2, 2], name="conv1"),
         helper.make_node("Clip", ["a", "lo", "hi"], ["b"], name="clip"),
         helper.make_node("MaxPool", ["b"], ["c"], kernel_shape=[2, 2], strides=[2, 2], name="pool"),
         helper.make_node("Conv", ["c", "W2"], ["d"], pads=[1, 1, 1, 1], group=4, name="dw"),
         helper.make_node("GlobalAveragePool", ["d"], ["e"], name="gap"),
         helper.make_node("Flatten", ["e"], ["f"], name="flat"),
         helper.make_node("Gemm", ["f", "W3", "B3"], ["Y"], transB=1, name="fc")],
        [_vi("X", F, [1, 3, 8, 8])], [_vi("Y", F, [1, 5])],
        [init(_r(rng, 4, 3, 3, 3), "W1"), init(_r(rng, 4), "B1"), init(np.float32(0), "lo"),
         init(np.float32(6), "hi"), init(_r(rng, 4, 1, 3, 3), "W2"), init(_r(rng, 5, 4), "W3"),
         init(_r(rng, 5), "B3")])
    seeds["attention"] = _model(
        [helper.make_node("MatMul", ["X", "Wq"], ["q"], name="q"),
         helper.make_node("MatMul", ["X", "Wk"], ["k"], name="k"),
         helper.make_node("MatMul", ["X", "Wv"], ["v"], name="v"),
         helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1], name="kt"),
         helper.make_node("MatMul", ["q", "kt"], ["s"], name="qk"),
         helper.make_node("Mul", ["s", "scale"], ["ss"], name="scale"),
         helper.make_node("Softmax", ["ss"], ["p"], axis=-1, name="softmax"),
         helper.make_node("MatMul", ["p", "v"], ["Y"], name="pv")],
        [_vi("X", F, [1, 4, 8])], [_vi("Y", F, [1, 4, 8])],
        [init(_r(rng, 8, 8), "Wq"), init(_r(rng, 8, 8), "Wk"), init(_r(rng, 8, 8), "Wv"),
         init(np.float32(0.35), "scale")])
    seeds["qdq"] = _model(
        [helper.make_node("QuantizeLinear", ["X", "xs", "xz"], ["xq"], name="qx"),
         helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"], name="dqx"),
         helper.make_node("DequantizeLinear", ["Wq", "ws", "wz"], ["wd"], name="dqw"),
         helper.make_node("MatMul", ["xd", "wd"], ["m"], name="mm"),
         helper.make_node("QuantizeLinear", ["m", "ys", "yz"], ["Yq"], name="qy"),
         helper.make_node("QLinearMatMul", ["Yq", "ys", "yz", "Wq2", "ws", "wz", "ys", "yz"], ["Y"],
                          name="qlmm")],
        [_vi("X", F, [2, 6])], [_vi("Y", I8, [2, 6])],
        [init(np.float32(0.05), "xs"), init(np.int8(0), "xz"), init(np.float32(0.02), "ws"),
         init(np.int8(0), "wz"), init(np.float32(0.1), "ys"), init(np.int8(3), "yz"),
         init(rng.integers(-100, 100, (6, 6)).astype(np.int8), "Wq"),
         init(rng.integers(-100, 100, (6, 6)).astype(np.int8), "Wq2")])
    then_g = helper.make_graph([helper.make_node("Add", ["X", "one"], ["t"], name="then_add")], "then", [],
                               [_vi("t", F, [2, 3])], [init(np.ones((2, 3), np.float32), "one")])
    else_g = helper.make_graph([helper.make_node("Mul", ["X", "X"], ["e"], name="else_mul")], "else", [],
                               [_vi("e", F, [2, 3])])
    body = helper.make_graph(
        [helper.make_node("Add", ["acc_in", "X"], ["acc_out"], name="body_add"),
         helper.make_node("Identity", ["cond_in"], ["cond_out"], name="body_cond")],
        "body", [_vi("i", I64, []), _vi("cond_in", B, []), _vi("acc_in", F, [2, 3])],
        [_vi("cond_out", B, []), _vi("acc_out", F, [2, 3])])
    seeds["control_flow"] = _model(
        [helper.make_node("If", ["C"], ["y_if"], then_branch=then_g, else_branch=else_g, name="if"),
         helper.make_node("Loop", ["M", "", "y_if"], ["Y"], body=body, name="loop")],
        [_vi("X", F, [2, 3]), _vi("C", B, []), _vi("M", I64, [])], [_vi("Y", F, [2, 3])])
    seeds["symbolic"] = _model(
        [helper.make_node("Relu", ["X"], ["r"], name="relu"),
         helper.make_node("ReduceSum", ["r", "axes"], ["s"], keepdims=1, name="rsum"),
         helper.make_node("Shape", ["X"], ["shp"], name="shape"),
         helper.make_node("Expand", ["s", "shp"], ["ex"], name="expand"),
         helper.make_node("Sub", ["X", "ex"], ["d"], name="sub"),
         helper.make_node("Reshape", ["d", "flat"], ["Y"], name="reshape")],
        [_vi("X", F, ["N", "S", 4])], [_vi("Y", F, ["N", None])],
        [init(np.array([1], np.int64), "axes"), init(np.array([0, -1], np.int64), "flat")])
    seeds["gather"] = _model(
        [helper.make_node("Gather", ["table", "I"], ["g"], axis=0, name="gather"),
         helper.make_node("ReduceMean", ["g"], ["m"], axes=[1], keepdims=0, name="mean"),
         helper.make_node("Concat", ["m", "m"], ["Y"], axis=-1, name="concat")],
        [_vi("I", I64, ["B", 3])], [_vi("Y", F, ["B", 8])],
        [init(_r(rng, 10, 4), "table")], opset=13)
    for m in seeds.values():
        onnx.checker.check_model(m)
    return seeds


# --- mutations -------------------------------------------------------------------------------------
HUGE = [0, -1, -7, 1 << 31, (1 << 62), 1 << 20]


def _graphs(g):
    yield g
    for n in g.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                yield from _graphs(a.g)


def _value_infos(g):
    return [*g.input, *g.output, *g.value_info]


def _structure_bytes(raw, model):
    """Offsets of the bytes outside the initializers' raw data (tags, lengths, names, attributes):
    flips there reach the loader's checks instead of only changing weights."""
    weights = bytearray(len(raw))
    for g in _graphs(model.graph):
        for t in g.initializer:
            at = raw.find(t.raw_data) if len(t.raw_data) >= 8 else -1
            if at >= 0:
                weights[at:at + len(t.raw_data)] = b"\1" * len(t.raw_data)
    return np.flatnonzero(np.frombuffer(bytes(weights), np.uint8) == 0)


def byte_mutation(rng, raw, model=None):
    raw = bytearray(raw)
    kind = rng.choice(["flip", "truncate", "insert", "delete", "flips", "flips"])
    where = _structure_bytes(bytes(raw), model) if model is not None and rng.integers(5) else None
    pos = (lambda: int(where[int(rng.integers(len(where)))])) if where is not None and len(where) else \
        (lambda: int(rng.integers(len(raw))))
    if kind == "flip":
        i = pos()
        raw[i] = int(rng.integers(256))
        return bytes(raw), f"flip byte {i}"
    if kind == "flips":
        k = int(rng.integers(1, 5))
        for _ in range(k):
            raw[pos()] ^= 1 << int(rng.integers(8))
        return bytes(raw), f"{k} bit flips"
    if kind == "truncate":
        n = int(rng.integers(len(raw)))
        return bytes(raw[:n]), f"truncate to {n}"
    i, n = int(rng.integers(len(raw))), int(rng.integers(1, 16))
    if kind == "insert":
        return bytes(raw[:i] + rng.integers(0, 256, n, dtype=np.uint8).tobytes() + raw[i:]), f"insert {n} at {i}"
    return bytes(raw[:i] + raw[i + n:]), f"delete {n} at {i}"


def _pick(rng, seq):
    return seq[int(rng.integers(len(seq)))]


def _m_attr_value(rng, m, g):
    nodes = [n for n in g.node if n.attribute]
    if not nodes:
        return None
    n = _pick(rng, nodes)
    a = _pick(rng, n.attribute)
    A = onnx.AttributeProto
    if a.type == A.INT:
        a.i = _pick(rng, HUGE + [2, 3, -2])
    elif a.type == A.INTS:
        k = int(rng.integers(0, 6))
        del a.ints[:]
        a.ints.extend(int(_pick(rng, HUGE + [1, 2, 3])) for _ in range(k))
    elif a.type == A.FLOAT:
        a.f = float(_pick(rng, [np.nan, np.inf, -np.inf, -1.0, 0.0, 1e30]))
    elif a.type == A.GRAPH:
        a.g.ClearField("node")
    else:
        a.Clear()
        a.name = "axis"
    return f"attribute {a.name} of {n.name} value"


def _m_attr_type(rng, m, g):
    nodes = [n for n in g.node if n.attribute]
    if not nodes:
        return None
    n = _pick(rng, nodes)
    i = int(rng.integers(len(n.attribute)))
    name = n.attribute[i].name
    new = _pick(rng, [helper.make_attribute(name, 1.5), helper.make_attribute(name, "x"),
                      helper.make_attribute(name, [1.0, 2.0]), helper.make_attribute(name, [b"a", b"b"]),
                      helper.make_attribute(name, 3), helper.make_attribute(name, [3, 4]),
                      helper.make_attribute(name, numpy_helper.from_array(np.zeros((2, 2), np.float32))),
                      helper.make_attribute(name, helper.make_graph([], "empty", [], []))])
    n.attribute[i].CopyFrom(new)
    return f"attribute {name} of {n.name} retyped to {new.type}"


def _m_extra_attr(rng, m, g):
    n = _pick(rng, g.node)
    name = _pick(rng, ["axis", "perm", "kernel_shape", "pads", "group", "bogus", "to", "keepdims", "axes"])
    n.attribute.append(helper.make_attribute(name, _pick(rng, [7, [1, 0], [9, 9, 9, 9], -3, 2.5])))
    return f"extra attribute {name} on {n.name}"


def _m_dim(rng, m, g):
    vis = [v for v in _value_infos(g) if v.type.HasField("tensor_type")]
    if not vis:
        return None
    v = _pick(rng, vis)
    tt = v.type.tensor_type
    choice = int(rng.integers(5))
    if choice == 0:
        tt.ClearField("shape")
        return f"shape of {v.name} cleared"
    if choice == 1:
        tt.shape.dim.add().dim_value = int(_pick(rng, [1, 2, 3]))
        return f"extra dim on {v.name}"
    if not tt.shape.dim:
        return None
    d = _pick(rng, tt.shape.dim)
    if choice == 2:
        d.dim_param = _pick(rng, ["N", "S", "B", "", "weird dim"])
    else:
        d.dim_value = int(_pick(rng, HUGE))
    return f"a dim of {v.name} changed"


def _m_elem_type(rng, m, g):
    what = int(rng.integers(2))
    t = int(_pick(rng, list(range(0, 27)) + [99, -1]))
    if what == 0 and g.initializer:
        init = _pick(rng, g.initializer)
        init.data_type = t
        return f"initializer {init.name} elem type {t}"
    vis = [v for v in _value_infos(g) if v.type.HasField("tensor_type")]
    if not vis:
        return None
    v = _pick(rng, vis)
    v.type.tensor_type.elem_type = t
    return f"{v.name} elem type {t}"


def _m_initializer(rng, m, g):
    if not g.initializer:
        return None
    init = _pick(rng, g.initializer)
    choice = int(rng.integers(4))
    if choice == 0:
        init.dims.append(int(_pick(rng, [2, 0, 1 << 30])))
    elif choice == 1:
        init.raw_data = init.raw_data[: int(rng.integers(len(init.raw_data) + 1))]
    elif choice == 2:
        del init.dims[:]
        init.dims.extend(int(_pick(rng, HUGE)) for _ in range(int(rng.integers(1, 3))))
    else:
        vals = numpy_helper.to_array(init)
        if vals.dtype.kind in "iu":
            new = np.full(vals.shape, _pick(rng, [-(1 << 40), 1 << 40, -1, 0, 1 << 62]))
            init.CopyFrom(numpy_helper.from_array(new.astype(vals.dtype, copy=False) if vals.dtype == np.int64
                                                  else vals, init.name))
        else:
            init.CopyFrom(numpy_helper.from_array(np.full(vals.shape, np.nan, vals.dtype), init.name))
    return f"initializer {init.name} data"


def _m_node_input(rng, m, g):
    n = _pick(rng, g.node)
    choice = int(rng.integers(5))
    if choice == 0 and n.input:
        del n.input[int(rng.integers(len(n.input)))]
        return f"input dropped from {n.name}"
    if choice == 1:
        n.input.append(_pick(rng, ["", "X", "nowhere", n.output[0] if n.output else "z"]))
        return f"input added to {n.name}"
    if choice == 2 and n.input:
        n.input[int(rng.integers(len(n.input)))] = _pick(rng, ["", "nowhere", "Y"])
        return f"input renamed on {n.name}"
    if choice == 3 and n.output:
        n.output[int(rng.integers(len(n.output)))] = _pick(rng, ["", "X", "dup", "Y"])
        return f"output renamed on {n.name}"
    if n.output:
        n.output.append(_pick(rng, ["extra", "", "X"]))
        return f"output added on {n.name}"
    return None


def _m_duplicate(rng, m, g):
    choice = int(rng.integers(4))
    if choice == 0:
        n = _pick(rng, g.node)
        g.node.append(copy.deepcopy(n))
        return f"node {n.name} duplicated"
    if choice == 1 and len(g.node) > 1:
        a, b = _pick(rng, g.node), _pick(rng, g.node)
        if a.output and b.output:
            b.output[0] = a.output[0]
            return f"{b.name} writes {a.name}'s output"
    if choice == 2 and g.input:
        g.input.append(copy.deepcopy(g.input[0]))
        return "graph input duplicated"
    if g.initializer:
        g.initializer.append(copy.deepcopy(_pick(rng, g.initializer)))
        if rng.integers(2) and g.input:   # an initializer shadowing an input
            g.initializer[-1].name = g.input[0].name
        return "initializer duplicated"
    return None


def _m_opset(rng, m, g):
    choice = int(rng.integers(4))
    if choice == 0:
        m.opset_import[0].version = int(_pick(rng, [0, 1, 6, 7, 11, 99, 10000, -3]))
        return f"opset {m.opset_import[0].version}"
    if choice == 1:
        m.ClearField("opset_import")
        return "no opset import"
    if choice == 2:
        n = _pick(rng, g.node)
        n.domain = _pick(rng, ["com.microsoft", "ai.onnx.ml", "nowhere", "ai.onnx"])
        return f"{n.name} domain {n.domain}"
    m.ir_version = int(_pick(rng, [0, 1, 3, 99, -1]))
    return f"ir_version {m.ir_version}"


OP_TYPES = ["Relu", "Add", "Conv", "MatMul", "Gather", "Reshape", "Loop", "If", "Softmax", "Transpose", "Concat",
            "Split", "Slice", "TopK", "Resize", "Pad", "Tile", "Expand", "Einsum", "QLinearConv", "Scan", "Bogus",
            "", "LSTM", "Unique"]


def _m_op_type(rng, m, g):
    n = _pick(rng, g.node)
    n.op_type = _pick(rng, OP_TYPES)
    return f"{n.name} became {n.op_type}"


def _m_cycle(rng, m, g):
    if len(g.node) < 2:
        n = g.node[0]
        if n.input and n.output:
            n.input[0] = n.output[0]
            return f"{n.name} reads its own output"
        return None
    i, j = sorted(int(x) for x in rng.choice(len(g.node), 2, replace=False))
    a, b = g.node[i], g.node[j]
    if not a.input or not b.output:
        return None
    a.input[int(rng.integers(len(a.input)))] = b.output[0]
    if rng.integers(2):   # a real cycle and not only a misordering: b also reads a
        b.input.append(a.output[0]) if not b.input else b.input.__setitem__(0, a.output[0])
    return f"{a.name} reads {b.name}'s output"


def _m_huge_repeat(rng, m, g):
    choice = int(rng.integers(3))
    src = g.output[0].name if g.output else None
    if not src:
        return None
    if choice == 0:   # a long chain of cheap nodes
        k = int(_pick(rng, [200, 1000]))
        for o in g.output:
            pass
        prev = src
        renamed = src + "_orig"
        for n in g.node:
            for idx, out in enumerate(n.output):
                if out == src:
                    n.output[idx] = renamed
        prev = renamed
        for t in range(k):
            nxt = src if t == k - 1 else f"rep{t}"
            g.node.append(helper.make_node(_pick(rng, ["Identity", "Neg", "Relu"]), [prev], [nxt], name=f"rep{t}"))
            prev = nxt
        return f"{k} chained nodes"
    if choice == 1:   # Tile/Expand to a huge size
        g.initializer.append(numpy_helper.from_array(
            np.array([int(_pick(rng, [1 << 20, 1 << 31, 1 << 40, 0, -1]))] * 2, np.int64), "huge_shape"))
        op = _pick(rng, ["Tile", "Expand", "Reshape", "ConstantOfShape"])
        g.node.append(helper.make_node(op, [src, "huge_shape"] if op != "ConstantOfShape" else ["huge_shape"],
                                       ["huge_out"], name="huge"))
        g.output.append(helper.make_empty_tensor_value_info("huge_out"))
        return f"{op} to a huge shape"
    for _ in range(int(_pick(rng, [50, 300]))):   # many outputs of the same value
        g.output.append(copy.deepcopy(g.output[0]))
    return "the output repeated"


def _m_graph_io(rng, m, g):
    choice = int(rng.integers(4))
    if choice == 0 and g.input:
        del g.input[int(rng.integers(len(g.input)))]
        return "a graph input removed"
    if choice == 1 and g.output:
        del g.output[int(rng.integers(len(g.output)))]
        return "a graph output removed"
    if choice == 2:
        g.output.append(helper.make_tensor_value_info(_pick(rng, ["nowhere", "X", ""]), TensorProto.FLOAT, None))
        return "an unknown graph output"
    if g.node:
        del g.node[int(rng.integers(len(g.node)))]
        return "a node removed"
    return None


def _m_value_type(rng, m, g):
    vis = _value_infos(g)
    if not vis:
        return None
    v = _pick(rng, vis)
    elem = int(_pick(rng, [1, 7, 8, 9]))
    new = _pick(rng, [helper.make_sequence_type_proto(helper.make_tensor_type_proto(elem, None)),
                      helper.make_optional_type_proto(helper.make_tensor_type_proto(elem, [2])),
                      helper.make_map_type_proto(7, helper.make_tensor_type_proto(1, None)),
                      onnx.TypeProto()])
    v.type.CopyFrom(new)
    return f"{v.name} typed {new.WhichOneof('value')}"


def _m_constant(rng, m, g):
    n = _pick(rng, g.node)
    if not n.input:
        return None
    t = _pick(rng, [numpy_helper.from_array(np.zeros((0, 3), np.float32)),
                    numpy_helper.from_array(np.array(["a", "b"], dtype=object)),
                    numpy_helper.from_array(np.array(7, np.int64)),
                    numpy_helper.from_array(np.array([1 << 40, -1], np.int64)),
                    numpy_helper.from_array(np.full((2, 2), np.inf, np.float16)),
                    helper.make_tensor("t", TensorProto.FLOAT, [1 << 20, 1 << 20], [], raw=False)])
    name = f"const{len(g.node)}"
    g.node.insert(0, helper.make_node("Constant", [], [name], value=t, name=name))
    n.input[int(rng.integers(len(n.input)))] = name
    return f"{n.name} reads a Constant {list(t.dims)} of type {t.data_type}"


STRUCT_MUTATIONS = [_m_attr_value, _m_attr_type, _m_extra_attr, _m_dim, _m_elem_type, _m_initializer,
                    _m_node_input, _m_duplicate, _m_opset, _m_op_type, _m_cycle, _m_huge_repeat, _m_graph_io]


# Added after the first bugs were found: drawn from a second RNG stream of the case, so the cases of
# FOUND keep the mutations they had.
def _m_any_op_type(rng, m, g):
    """A node becomes any ai.onnx op nnwasm registers (its inputs and attributes kept)."""
    from nnwasm.ops import registry
    n = _pick(rng, g.node)
    n.op_type = _pick(rng, sorted({t for d, t in registry.op_types() if d == ""}))
    return f"{n.name} became {n.op_type}"


EXTRA_MUTATIONS = [_m_value_type, _m_constant, _m_any_op_type]


def struct_mutation(rng, model, extra_rng=None):
    m = copy.deepcopy(model)
    done = []
    try:
        for _ in range(int(rng.integers(1, MAX_EDITS + 1))):
            for _try in range(10):
                graphs = list(_graphs(m.graph))
                g = _pick(rng, graphs)
                if not g.node:
                    continue
                mut = _pick(rng, STRUCT_MUTATIONS)
                what = mut(rng, m, g)
                if what:
                    done.append(what if g is m.graph else f"{what} (in subgraph {g.name})")
                    break
        raw = m.SerializeToString()
    except Exception:   # onnx refused what we made (an initializer already mangled): flip bytes instead
        raw, what = byte_mutation(rng, model.SerializeToString())
        return raw, "; ".join(done + [what])
    graphs = [g for g in _graphs(m.graph) if g.node]
    if extra_rng is not None and graphs and extra_rng.integers(3) == 0:
        try:
            what = _pick(extra_rng, EXTRA_MUTATIONS)(extra_rng, m, _pick(extra_rng, graphs))
            if what:
                raw = m.SerializeToString()
                done.append(what)
        except Exception:   # noqa: BLE001 - onnx refused to build or serialize it: keep the model before
            pass
    return raw, "; ".join(done) or "none"


# --- running a case --------------------------------------------------------------------------------
NP_TYPES = {"tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(float16)": np.float16,
            "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(int8)": np.int8,
            "tensor(uint8)": np.uint8, "tensor(bool)": np.bool_, "tensor(int16)": np.int16}


def make_feeds(rng, sess):
    feeds = {}
    for i in sess.get_inputs():
        dtype = NP_TYPES.get(i.type)
        if dtype is None:
            continue   # a type we do not feed here: the run then reports the missing input
        shape = i.shape if isinstance(i.shape, (list, tuple)) else []
        dims = [d if isinstance(d, int) and 0 <= d <= 8 else 2 for d in shape]
        if dtype == np.bool_:
            v = rng.integers(0, 2, dims).astype(np.bool_)
        elif np.issubdtype(dtype, np.integer):
            v = rng.integers(0, 4, dims).astype(dtype)
        else:
            v = rng.standard_normal(dims).astype(dtype)
        feeds[i.name] = v
    return feeds


class CaseTimeout(BaseException):
    """Raised in the test thread by SIGALRM: a case ran past HANG_SECONDS."""


def make_case(case, seeds):
    """The mutated model of one case, its providers, its RNG for feeds and a description."""
    rng = np.random.default_rng([BASE_SEED, case])
    names = sorted(seeds)
    name = names[case % len(names)]
    model = seeds[name]
    if rng.integers(2):
        raw, what = byte_mutation(rng, model.SerializeToString(), model)
    else:
        raw, what = struct_mutation(rng, model, np.random.default_rng([BASE_SEED, case, 1]))
    providers = ["NumpyExecutionProvider"] if case % 4 == 3 else None
    desc = f"case {case} (NNWASM_FUZZ_START={case}): seed model {name!r}, {what}, providers {providers or 'default'}"
    return raw, providers, rng, desc


def run_case(raw, providers, rng):
    """One case: returns 'ran' or 'refused'; raises whatever nnwasm raised that is not ours."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sess = nnwasm.InferenceSession(raw, providers=providers)
            feeds = make_feeds(rng, sess)
            sess.run(None, feeds)
        return "ran"
    except nnwasm.NnwasmError:
        return "refused"


def _alarm(signum, frame):
    raise CaseTimeout()


def run_cases(start, count):
    seeds = seed_models()
    failures, outcomes, slow = [], {"ran": 0, "refused": 0}, []
    can_alarm = threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")
    old = signal.signal(signal.SIGALRM, _alarm) if can_alarm else None
    # last resort for a hang in native code that SIGALRM cannot interrupt: dump every stack and exit
    faulthandler.dump_traceback_later(HANG_SECONDS * 3 + count * 2, exit=True)
    try:
        for case in range(start, start + count):
            t0 = time.perf_counter()
            if can_alarm:
                signal.setitimer(signal.ITIMER_REAL, HANG_SECONDS)
            raw, providers, rng, desc = make_case(case, seeds)
            try:
                outcome = run_case(raw, providers, rng)
                outcomes[outcome] += 1
            except CaseTimeout:
                failures.append(f"{desc}: hung (over {HANG_SECONDS} s)\n{traceback.format_exc()}")
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as e:   # noqa: B902 - every non-nnwasm exception is the bug we look for
                failures.append(f"{desc}: {type(e).__name__} is not an nnwasm error\n"
                                f"{traceback.format_exc()}")
            finally:
                if can_alarm:
                    signal.setitimer(signal.ITIMER_REAL, 0)
            dt = time.perf_counter() - t0
            if dt > CASE_SECONDS:
                slow.append(f"{desc}: took {dt:.1f} s (limit {CASE_SECONDS} s)")
    finally:
        faulthandler.cancel_dump_traceback_later()
        if can_alarm:
            signal.signal(signal.SIGALRM, old)
    return outcomes, failures, slow


def test_seed_models_run():
    rng = np.random.default_rng(0)
    for name, m in seed_models().items():
        sess = nnwasm.InferenceSession(m.SerializeToString())
        out = sess.run(None, make_feeds(rng, sess))
        assert all(np.all(np.isfinite(o.astype(np.float64))) for o in out), name


def test_mutated_models_raise_only_nnwasm_errors():
    seeds = seed_models()
    good = nnwasm.InferenceSession(seeds["attention"].SerializeToString())
    x = np.random.default_rng(3).standard_normal((1, 4, 8)).astype(np.float32)
    want = good.run(None, {"X": x})[0]
    t0 = time.perf_counter()
    outcomes, failures, slow = run_cases(START, CASES)
    print(f"{CASES} cases in {time.perf_counter() - t0:.1f} s: {outcomes}")
    assert not failures, f"{len(failures)} of {CASES} cases raised a non-nnwasm error or hung:\n\n" + \
        "\n\n".join(failures[:10])
    assert not slow, "\n".join(slow)
    if CASES >= 100:
        assert outcomes["refused"] > 0 and outcomes["ran"] > 0, outcomes
    np.testing.assert_array_equal(good.run(None, {"X": x})[0], want)


# --- regressions: each bug the fuzz found, as its case numbers and as a hand-built model -------------
FOUND = {49: "attribute transB of fc retyped to 6", 227: "shape became Conv",
         230: "input dropped from then_add (in subgraph then)", 821: "rep124 became MatMul",
         1152: "attribute axis of softmax retyped to 1", 1209: "initializer duplicated",
         1285: "attribute transB of fc value", 1303: "input dropped from flat",
         1573: "attribute strides of conv1 retyped to 7", 1946: "output added on else_mul",
         9733: "attribute pads of conv1 value", 10108: "input dropped from rep582",
         18243: "output added on concat", 52124: "input renamed on loop",
         63992: "Expand to a huge shape (in subgraph body)"}
# found with every registered op in OP_TYPES and NNWASM_FUZZ_EDITS=4 (hunting modes; see the tests below):
# Shape as a graph output (17553), a CastLike with one input (131445), a zero output scale (136492)   # case: the mutation that found a bug (kept stable)


def test_cases_that_found_bugs():
    seeds = seed_models()
    for case, mutation in FOUND.items():
        raw, providers, rng, desc = make_case(case, seeds)
        assert mutation in desc, f"the mutator changed: {desc} no longer makes the case that found a bug"
        try:
            run_case(raw, providers, rng)
        except Exception as e:   # noqa: BLE001
            pytest.fail(f"{desc}: {type(e).__name__}: {e}")


def _one_node(node, inputs, outputs, inits=(), opset=17):
    return _model([node], inputs, outputs, inits, opset).SerializeToString()


def test_attribute_of_the_wrong_type_is_an_invalid_model():
    F = TensorProto.FLOAT
    soft = helper.make_node("Softmax", ["X"], ["Y"], name="sm")
    soft.attribute.append(helper.make_attribute("axis", 1.0))                     # case 1152
    gemm = helper.make_node("Gemm", ["X", "W"], ["Y"], name="fc")
    gemm.attribute.append(helper.make_attribute("transB", [1, 1]))                # case 49
    conv = helper.make_node("Conv", ["X", "W"], ["Y"], name="cv")
    conv.attribute.append(helper.make_attribute("strides", "x"))                  # case 1573
    w = numpy_helper.from_array(np.ones((2, 2), np.float32), "W")
    for node, want in [(soft, "'axis' is of type FLOAT; ai.onnx defines it as INT"),
                       (gemm, "'transB' is of type INTS; ai.onnx defines it as INT"),
                       (conv, "'strides' is of type STRING; ai.onnx defines it as INTS")]:
        model = _one_node(node, [_vi("X", F, [2, 2])], [_vi("Y", F, None)], [w] if node.op_type != "Softmax" else [])
        with pytest.raises(nnwasm.InvalidModel, match=want):
            nnwasm.InferenceSession(model)


def test_qdq_fusion_skips_nodes_missing_inputs():
    # cases 227, 230, 821, 1303: a Conv/MatMul/Add/Flatten with too few inputs reached the QDQ fusion
    F = TensorProto.FLOAT
    for op in ["Conv", "MatMul", "Add", "Flatten"]:
        model = _one_node(helper.make_node(op, [], ["Y"], name="short"), [_vi("X", F, [1, 1, 2, 2])],
                          [_vi("Y", F, None)])
        for providers in (None, ["NumpyExecutionProvider"]):
            with pytest.raises(nnwasm.NnwasmError, match="short"):
                nnwasm.InferenceSession(model, providers=providers)


def test_float_gather_indices_are_an_invalid_model():
    # case 1209: an initializer shadowing the int64 indices input with floats crashed constant folding
    F = TensorProto.FLOAT
    inits = [numpy_helper.from_array(np.ones((4, 2), np.float32), "T"),
             numpy_helper.from_array(np.array([0.5, 1.0], np.float32), "I")]
    model = _one_node(helper.make_node("Gather", ["T", "I"], ["Y"], name="g"), [], [_vi("Y", F, None)], inits)
    with pytest.raises(nnwasm.InvalidModel, match=r"'g'.*input 'I' is tensor\(float\), which ai.onnx's Gather does not accept"):
        nnwasm.InferenceSession(model)


def test_attribute_beyond_32_bits_for_a_wasm_kernel_is_refused():
    # case 1285: Gemm transB = 2**31 reached the plan encoder (struct.error)
    F = TensorProto.FLOAT
    w = numpy_helper.from_array(np.ones((2, 2), np.float32), "W")
    model = _one_node(helper.make_node("Gemm", ["X", "W"], ["Y"], transB=1 << 31, name="fc"),
                      [_vi("X", F, [2, 2])], [_vi("Y", F, [2, 2])], [w])
    try:
        sess = nnwasm.InferenceSession(model)
        sess.run(None, {"X": np.ones((2, 2), np.float32)})
    except nnwasm.NnwasmError as e:
        assert "fc" in str(e), e


def test_subgraph_output_shadowing_an_outer_value_is_an_invalid_model():
    # case 1946: a branch node wrote the outer input X; ONNX (checker and onnxruntime) refuse it
    F, B = TensorProto.FLOAT, TensorProto.BOOL
    then_g = helper.make_graph([helper.make_node("Relu", ["X"], ["X"], name="shadow")], "then", [],
                               [_vi("X", F, [3])])
    else_g = helper.make_graph([helper.make_node("Neg", ["X"], ["n"])], "else", [], [_vi("n", F, [3])])
    model = _one_node(helper.make_node("If", ["c"], ["Y"], then_branch=then_g, else_branch=else_g),
                      [_vi("X", F, [3]), _vi("c", B, [])], [_vi("Y", F, [3])])
    with pytest.raises(nnwasm.InvalidModel, match="produces 'X', which is already a value of an enclosing graph"):
        nnwasm.InferenceSession(model)


def test_empty_pads_are_refused_as_onnxruntime_does():
    # case 9733: pads = [] (an empty INTS) passed shape inference as zeros but crashed the WASM lowering;
    # then it ran as the default. onnxruntime refuses it ("Attribute pads has incorrect size"): so does nnwasm
    F = TensorProto.FLOAT
    w = numpy_helper.from_array(np.ones((2, 1, 3, 3), np.float32), "W")
    node = helper.make_node("Conv", ["X", "W"], ["Y"], name="cv")
    node.attribute.append(helper.make_attribute("pads", [], attr_type=onnx.AttributeProto.INTS))
    model = _one_node(node, [_vi("X", F, [1, 1, 5, 5])], [_vi("Y", F, [1, 2, 3, 3])], [w])
    for providers in (None, ["NumpyExecutionProvider"]):
        with pytest.raises(nnwasm.InvalidModel, match=r"'cv'.*pads \[\] must have 4 entries"):
            nnwasm.InferenceSession(model, providers=providers)


def test_identity_without_input_is_refused_not_an_index_error():
    # case 10108: an Identity with its input dropped reached drop_identities
    F = TensorProto.FLOAT
    model = _model([helper.make_node("Identity", [], ["a"], name="idle"),
                    helper.make_node("Relu", ["a"], ["Y"], name="r")],
                   [_vi("X", F, [2])], [_vi("Y", F, [2])]).SerializeToString()
    with pytest.raises(nnwasm.NnwasmError, match="idle"):
        nnwasm.InferenceSession(model)


def test_node_naming_more_outputs_than_its_op_makes_is_refused_on_numpy():
    # case 18243: a Concat with a second output read as a graph output: KeyError in the numpy provider
    F = TensorProto.FLOAT
    model = _model([helper.make_node("Concat", ["X", "X"], ["Y", "Z"], axis=0, name="cat")],
                   [_vi("X", F, [2])], [_vi("Y", F, [4]), _vi("Z", F, [4])]).SerializeToString()
    with pytest.raises(nnwasm.NnwasmError, match="cat"):
        sess = nnwasm.InferenceSession(model, providers=["NumpyExecutionProvider"])
        sess.run(None, {"X": np.ones(2, np.float32)})


def test_loop_without_trip_count_or_condition_is_refused_not_a_hang():
    # case 52124: Loop("", "", ...) never ends by ONNX's definition (the body's condition is ignored)
    F, B, I64 = TensorProto.FLOAT, TensorProto.BOOL, TensorProto.INT64
    body = helper.make_graph([helper.make_node("Identity", ["c_in"], ["c_out"]),
                              helper.make_node("Add", ["a_in", "a_in"], ["a_out"])], "body",
                             [_vi("i", I64, []), _vi("c_in", B, []), _vi("a_in", F, [2])],
                             [_vi("c_out", B, []), _vi("a_out", F, [2])])
    model = _one_node(helper.make_node("Loop", ["", "", "X"], ["Y"], body=body, name="forever"),
                      [_vi("X", F, [2])], [_vi("Y", F, [2])])
    for providers in (None, ["NumpyExecutionProvider"]):
        with pytest.raises(nnwasm.InvalidModel, match="'forever'.*neither a trip count M nor a condition"):
            nnwasm.InferenceSession(model, providers=providers)


def test_movement_to_an_empty_output_does_not_crash_the_wasm_tables():
    # case 63992: an output axis of size 0 gave an empty gather table; merging it raised IndexError
    # (in a Loop body, where the capability check reached the tables)
    from nnwasm.wasm.lower.tables import fits
    assert fits([[0, 3], []]) == "an empty output (a dim of 0)"
    assert fits([[], [0, 1]]) == "an empty output (a dim of 0)"
    F, I64 = TensorProto.FLOAT, TensorProto.INT64
    cases = [("Slice", ["X", "s", "e", "a"], [numpy_helper.from_array(np.array(v, np.int64), n)
                                              for n, v in (("s", [1]), ("e", [1]), ("a", [1]))], (2, 0)),
             ("Expand", ["X", "shape"], [numpy_helper.from_array(np.array([0, 2, 3], np.int64), "shape")], (0, 2, 3)),
             ("Tile", ["X", "reps"], [numpy_helper.from_array(np.array([0, 1], np.int64), "reps")], (0, 3))]
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    for op, ins, inits, want in cases:
        model = _one_node(helper.make_node(op, ins, ["Y"], name="empty"), [_vi("X", F, [2, 3])],
                          [_vi("Y", F, None)], inits)
        assert nnwasm.InferenceSession(model).run(None, {"X": x})[0].shape == want, op


def test_graph_output_folded_for_the_input_shapes():
    # found by the fuzz (case 17553 with every registered op type): Shape of a symbolic input as a graph
    # output is folded once the input shapes are known; run() looked for it in the unshaped graph (KeyError)
    F, I64 = TensorProto.FLOAT, TensorProto.INT64
    model = _one_node(helper.make_node("Shape", ["X"], ["Y"]), [_vi("X", F, ["N", 4])], [_vi("Y", I64, [2])])
    sess = nnwasm.InferenceSession(model)
    for n in (3, 5):
        np.testing.assert_array_equal(sess.run(None, {"X": np.zeros((n, 4), np.float32)})[0], [n, 4])


def test_castlike_with_one_input_is_refused_not_an_index_error():
    # case 131445 (hunting mode): drop_noop_casts read the missing second input of a CastLike; that case
    # reproduces in test_hunting_mode_cases_that_found_bugs, this lone node is refused either way
    F = TensorProto.FLOAT
    model = _one_node(helper.make_node("CastLike", ["X"], ["Y"], name="cl"), [_vi("X", F, [2])], [_vi("Y", F, [2])])
    for providers in (None, ["NumpyExecutionProvider"]):
        with pytest.raises(nnwasm.NnwasmError, match="cl"):
            nnwasm.InferenceSession(model, providers=providers).run(None, {"X": np.ones(2, np.float32)})


def test_zero_output_scale_of_a_wasm_qlinear_op_is_refused():
    # case 136492 (hunting mode, bit flips in the QDQ seed): y_scale 0 divided by zero in the WASM lowering
    m = seed_models()["qdq"]
    for t in m.graph.initializer:
        if t.name == "ys":
            t.CopyFrom(numpy_helper.from_array(np.float32(0), "ys"))
    try:
        sess = nnwasm.InferenceSession(m.SerializeToString())
        sess.run(None, {"X": np.ones((2, 6), np.float32)})
    except nnwasm.NnwasmError as e:
        assert "scale" in str(e), e


def test_hunting_mode_cases_that_found_bugs(monkeypatch):
    """The cases found with every registered op type in OP_TYPES (and more edits), rerun that way."""
    import sys
    from nnwasm.ops import registry
    me = sys.modules[__name__]
    # the op types registered when these cases were found (the registry has grown since)
    text = (Path(__file__).parent / "fuzz_hunt_op_types.txt").read_text()
    hunted = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    assert set(hunted) <= {t for d, t in registry.op_types() if d == ""}
    monkeypatch.setattr(me, "OP_TYPES", hunted)
    seeds = seed_models()
    for case, edits, mutation in [(17553, 2, "concat became Shape"), (131445, 4, "mean became CastLike"),
                                  (136492, 4, "bit flips")]:
        monkeypatch.setattr(me, "MAX_EDITS", edits)
        raw, providers, rng, desc = make_case(case, seeds)
        assert mutation in desc, desc
        try:
            run_case(raw, providers, rng)
        except Exception as e:   # noqa: BLE001
            pytest.fail(f"{desc}: {type(e).__name__}: {e}")


def test_node_arity_is_checked_at_load():
    # case 313981 (hunting with wider feeds): a Conv left without output reached fuse_batch_norm (IndexError);
    # every ai.onnx node's input and output counts are now checked against onnx's schemas at load
    F = TensorProto.FLOAT
    w = numpy_helper.from_array(np.ones((2, 1, 3, 3), np.float32), "W")
    for node, want in [(helper.make_node("Conv", ["X"], ["Y"], name="c1"), "'c1' has 1 inputs; ai.onnx's Conv takes 2 to 3"),
                       (helper.make_node("Conv", ["X", "W"], [], name="c0"), "'c0' has 0 outputs; ai.onnx's Conv takes 1"),
                       (helper.make_node("Relu", ["X", "X"], ["Y"], name="r2"), "'r2' has 2 inputs; ai.onnx's Relu takes 1"),
                       (helper.make_node("Concat", ["X"], ["Y", "Z"], axis=0, name="c2"), "'c2' has 2 outputs")]:
        model = _one_node(node, [_vi("X", F, [1, 1, 5, 5])], [_vi("Y", F, None)], [w])
        with pytest.raises(nnwasm.InvalidModel, match=want):
            nnwasm.InferenceSession(model)


def test_the_watchdog_reports_hangs_and_slow_cases(monkeypatch):
    import sys
    me = sys.modules[__name__]
    monkeypatch.setattr(me, "HANG_SECONDS", 1)
    monkeypatch.setattr(me, "CASE_SECONDS", 0.2)
    monkeypatch.setattr(me, "run_case", lambda raw, providers, rng: time.sleep(0.3 if rng.integers(2) else 5) or "ran")
    t0 = time.perf_counter()
    outcomes, failures, slow = run_cases(0, 4)
    assert time.perf_counter() - t0 < 8
    assert failures and all("hung (over 1 s)" in f and "NNWASM_FUZZ_START=" in f for f in failures), failures
    assert len(slow) == 4 and all("limit 0.2 s" in s for s in slow), slow
