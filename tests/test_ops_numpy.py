"""The op registry against ONNX's backend node tests: for every single-node case of an op nnwasm
registers, infer (without and with constant inputs) and the numpy kernel must reproduce the
expected outputs. Exclusions live in EXPECTED_FAILURES, one line and one reason each (patterns
allowed); a listed case that starts passing fails the test, so the list stays true.

The onnx wheel installed here ships no backend/test/data/node directory, so the cases are
generated in memory by onnx's own generators (onnx.backend.test.case.node), the code that writes
those files.
"""
import collections
import contextlib
import fnmatch
import functools
import pickle
import subprocess
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import AttributeProto, TensorProto, helper, numpy_helper  # noqa: E402

import backend_suite  # noqa: E402
import nnwasm  # noqa: E402
from model_builders import graph_model  # noqa: E402
from nnwasm import dtypes, ir  # noqa: E402
from nnwasm.errors import NnwasmError  # noqa: E402
from nnwasm.ops import registry  # noqa: E402
from nnwasm.tensor import TensorData  # noqa: E402
from ops_cases.ort_cases import CASES as ORT_CASES  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

EXPECTED_FAILURES = {
    "test_resize_downsample_scales_*_align_corners":
        "onnx's reference divides by scale*size (a float), onnxruntime and nnwasm by the output size",
    "test_training_dropout": "training-mode Dropout with ratio > 0 is random: NotImplementedOp",
    "test_training_dropout_mask": "training-mode Dropout with ratio > 0 is random: NotImplementedOp",
    "test_training_dropout_default": "training-mode Dropout with ratio > 0 is random: NotImplementedOp",
    "test_training_dropout_default_mask": "training-mode Dropout with ratio > 0 is random: NotImplementedOp",
    "test_bernoulli*": "random output: the expected values come from numpy's global random state "
                       "(tests/test_ops_random.py checks Bernoulli's distribution instead)",
}

# Ops whose output shape depends on the input values: infer leaves those dims unknown even when the
# inputs are constant (the optimizer's fold_constants runs such a node instead), as onnx's own
# shape inference does.
DATA_DEPENDENT = {"NonZero", "Unique", "NonMaxSuppression", "StringSplit", "StringNormalizer", "ImageDecoder"}


def tensor_data(a):
    # Not TensorData.from_numpy: np.ascontiguousarray there turns 0-d arrays into shape (1,).
    a = np.asarray(a)
    dt = dtypes.from_name(a.dtype.name)
    if dt is None:
        raise ValueError(f"nnwasm has no element type {a.dtype}")
    return TensorData(dt, a.shape, np.ascontiguousarray(a).tobytes())


@dataclass
class Case:
    name: str
    node: ir.Node
    inputs: list          # ndarray or None per node input
    expected: list        # ndarray per present node output
    output_idx: list      # node output index of each expected output


def _attr(a):
    v = helper.get_attribute_value(a)
    if a.type == AttributeProto.STRING:
        return v.decode()
    if a.type == AttributeProto.STRINGS:
        return [s.decode() for s in v]
    if a.type == AttributeProto.TENSOR:
        return tensor_data(numpy_helper.to_array(v))
    if a.type == AttributeProto.SPARSE_TENSOR:
        values, idx = numpy_helper.to_array(v.values), numpy_helper.to_array(v.indices)
        dense = np.zeros(list(v.dims), dtype=values.dtype)
        dense[np.unravel_index(idx, dense.shape) if idx.ndim == 1 else tuple(idx.T)] = values
        return tensor_data(dense)
    return v


def _array(x):
    return numpy_helper.to_array(x) if isinstance(x, onnx.TensorProto) else np.asarray(x)


def _ir_node(n, opset):
    return ir.Node(n.op_type, list(n.input), list(n.output), name=n.name, domain=n.domain,
                   attrs={a.name: _attr(a) for a in n.attribute}, opset=opset)


def _to_case(tc):
    (n,) = tc.model.graph.node
    node = _ir_node(n, next(o.version for o in tc.model.opset_import if o.domain in ("", "ai.onnx")))
    (ins, outs), = tc.data_sets
    by_name = dict(zip([i.name for i in tc.model.graph.input], ins))
    inputs = [_array(by_name[i]) if i else None for i in node.inputs]
    output_idx = [k for k, o in enumerate(node.outputs) if o]
    return Case(tc.name, node, inputs, [_array(o) for o in outs], output_idx)


@functools.lru_cache(maxsize=None)
def backend_cases():
    """op_type -> [Case] for the single-node backend cases of every registered ai.onnx op. Nodes
    with subgraphs (If, Loop, Scan) and sequence or optional values need a whole session:
    test_control_flow.py and test_conformance.py run them."""
    from onnx.backend.test.case.node import collect_testcases
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        cases = collect_testcases()
    known = {t for d, t in registry.op_types() if d == ""}
    out = {}
    for tc in cases:
        nodes = tc.model.graph.node
        if len(nodes) == 1 and nodes[0].domain in ("", "ai.onnx") and nodes[0].op_type in known \
                and not any(a.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS) for a in nodes[0].attribute) \
                and all(v.type.HasField("tensor_type") for v in [*tc.model.graph.input, *tc.model.graph.output]):
            # sequences and optionals need a session (values.py): test_conformance.py runs them
            out.setdefault(nodes[0].op_type, []).append(_to_case(tc))
    return out


def expected_failure(name):
    for pattern, reason in EXPECTED_FAILURES.items():
        if fnmatch.fnmatchcase(name, pattern):
            return reason
    return None


def _value_info(name, arr):
    if arr is None:
        return None
    return ir.ValueInfo(name, dtypes.from_name(arr.dtype.name), tuple(arr.shape))


def _check_inferred(case, outs, with_consts):
    if len(outs) < len(case.node.outputs):
        return f"infer gave {len(outs)} outputs for {len(case.node.outputs)}"
    for k, want in zip(case.output_idx, case.expected):
        dt, shape = outs[k]
        if dt is not None and dt.name != want.dtype.name:
            return f"infer: output {k} dtype {dt.name}, expected {want.dtype}"
        if with_consts and (dt is None or shape is None or not all(isinstance(d, int) for d in shape)):
            return f"infer with constant inputs: output {k} is ({dt}, {shape}), not fully known"
        if shape is None:
            continue
        if len(shape) != want.ndim or any(isinstance(d, int) and d != w for d, w in zip(shape, want.shape)):
            return f"infer: output {k} shape {shape}, expected {want.shape}"
    return None


def _check_values(case, got):
    if len(got) < len(case.node.outputs):
        return f"numpy gave {len(got)} outputs for {len(case.node.outputs)}"
    for k, want in zip(case.output_idx, case.expected):
        g = got[k]
        if not isinstance(g, np.ndarray) or g.dtype != want.dtype or g.shape != want.shape:
            return (f"numpy: output {k} is {getattr(g, 'dtype', type(g))} {getattr(g, 'shape', '')}, "
                    f"expected {want.dtype} {want.shape}")
        if want.dtype.kind in "fc" or "float" in want.dtype.name:   # ml_dtypes' bfloat16, float8...: kind "V"
            g, want = (g, want) if want.dtype.kind in "fc" else (g.astype(np.float64), want.astype(np.float64))
            if not np.allclose(g, want, rtol=1e-3, atol=1e-5, equal_nan=True):
                err = np.nanmax(np.abs(g.astype(np.float64) - want.astype(np.float64)))
                return f"numpy: output {k} differs, max abs error {err:.3g}"
        elif want.dtype == object:
            if [str(v) for v in g.ravel()] != [str(v) for v in want.ravel()]:
                return f"numpy: output {k} strings differ: {g.ravel()[:4]} vs {want.ravel()[:4]}"
        elif not np.array_equal(g, want):
            return f"numpy: output {k} differs"
    return None


def infer_inputs(case, with_consts):
    vis = [_value_info(n, a) for n, a in zip(case.node.inputs, case.inputs)]
    consts = [tensor_data(a) if with_consts and a is not None else None for a in case.inputs]
    return vis, consts


def run_case(case):
    """None if the case passes, else what went wrong first."""
    op = registry.lookup(case.node.domain, case.node.op_type, case.node.opset)
    if op is None:
        return f"no registry entry at opset {case.node.opset}"
    try:
        for with_consts in (False, True):
            vis, consts = infer_inputs(case, with_consts)
            problem = _check_inferred(case, op.infer(case.node, vis, consts),
                                      with_consts and case.node.op_type not in DATA_DEPENDENT)
            if problem:
                return problem
        with np.errstate(all="ignore"):
            return _check_values(case, op.numpy(case.node, *case.inputs))
    except (NnwasmError, ValueError, TypeError, IndexError, KeyError) as e:
        return f"{type(e).__name__}: {e}"


SUMMARY = {}


@pytest.fixture(scope="module", autouse=True)
def _print_summary(request):
    yield
    if not SUMMARY:
        return
    total = [sum(v[i] for v in SUMMARY.values()) for i in range(2)]
    lines = [f"ONNX backend node cases: {total[0]} passed, {total[1]} expected failures; per op:"]
    per_op = [f"{op} {p}" + (f"(+{x} xfail)" if x else "") for op, (p, x) in sorted(SUMMARY.items())]
    lines += ["  " + ", ".join(per_op[i:i + 10]) for i in range(0, len(per_op), 10)]
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        print("\n" + "\n".join(lines))


@pytest.mark.parametrize("op_type", [t for d, t in registry.op_types() if d == ""])
def test_backend_node_cases(op_type):
    cases = backend_cases().get(op_type, [])
    problems, passed, xfailed = [], 0, 0
    for case in cases:
        problem = run_case(case)
        reason = expected_failure(case.name)
        if problem and reason:
            xfailed += 1
        elif problem:
            problems.append(f"{case.name} (opset {case.node.opset}): {problem}")
        elif reason and not backend_suite.random_reason(reason):   # random draws may match by chance
            problems.append(f"{case.name} passes but is listed as an expected failure ({reason})")
        elif reason:
            xfailed += 1
        else:
            passed += 1
    SUMMARY[op_type] = (passed, xfailed)
    assert not problems, "\n".join(problems)


def test_expected_failures_name_real_cases():
    names = [c.name for cs in backend_cases().values() for c in cs]
    stale = [p for p in EXPECTED_FAILURES if not any(fnmatch.fnmatchcase(n, p) for n in names)]
    assert not stale, f"EXPECTED_FAILURES entries that match no case: {stale}"


def _ort_model(node, inputs, out_dtypes, opset):
    graph = helper.make_graph(
        [node], node.op_type,
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
         for n, a in zip(node.input, inputs) if a is not None],
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(d), None)
         for n, d in zip(node.output, out_dtypes)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8     # what onnxruntime 1.x accepts for every opset used here
    return model.SerializeToString()


@pytest.mark.parametrize("row", ORT_CASES, ids=[r[0] for r in ORT_CASES])
def test_against_onnxruntime(row):
    """Cases ONNX's node tests cover thinly (random Conv weights, pool pads/ceil/dilations, Resize
    modes): numpy kernels and infer against onnxruntime's CPU provider."""
    ort = pytest.importorskip("onnxruntime")
    name, op_type, opset, attrs, inputs, n_out = row
    proto = helper.make_node(op_type, [f"in{k}" if a is not None else "" for k, a in enumerate(inputs)],
                             [f"out{k}" for k in range(n_out)], **attrs)
    node = _ir_node(proto, opset)
    got = registry.lookup("", op_type, opset).numpy(node, *inputs)
    sess = ort.InferenceSession(_ort_model(proto, inputs, [g.dtype for g in got], opset),
                                providers=["CPUExecutionProvider"])
    want = sess.run(None, {n: a for n, a in zip(proto.input, inputs) if a is not None})
    problem = run_case(Case(name, node, inputs, want, list(range(n_out))))
    assert problem is None, problem


_NO_NUMPY_SCRIPT = """
import pickle, sys
sys.modules["numpy"] = None            # any `import numpy` now raises ImportError
sys.path.insert(0, sys.argv[1])
from nnwasm.ops import registry
jobs = pickle.loads(sys.stdin.buffer.read())
results = []
for node, vis, consts in jobs:
    op = registry.lookup(node.domain, node.op_type, node.opset)
    try:
        results.append([(dt.name if dt else None, shape) for dt, shape in op.infer(node, vis, consts)])
        folded = op.fold(node, vis, consts) if op.fold else None
        results.append(None if folded is None else [t and (t.dtype.name, t.shape, bytes(t.data)) for t in folded])
    except Exception as e:
        results.append(f"{type(e).__name__}: {e}")
assert "numpy" not in sys.modules or sys.modules["numpy"] is None
sys.stdout.buffer.write(pickle.dumps(results))
"""


def _infer_jobs():
    """(case, op, input infos, consts) for every passing backend case, without and with constants."""
    for cases in backend_cases().values():
        for case in cases:
            if expected_failure(case.name):
                continue
            op = registry.lookup(case.node.domain, case.node.op_type, case.node.opset)
            for with_consts in (False, True):
                yield (case, op, *infer_inputs(case, with_consts))


def test_infer_runs_without_numpy():
    """Pyodide has no numpy: every infer and fold function, on every case, must run with numpy
    blocked and give what it gives here."""
    jobs, here = [], []
    for case, op, vis, consts in _infer_jobs():
        jobs.append((case.node, vis, consts))
        try:
            here.append([(dt.name if dt else None, s) for dt, s in op.infer(case.node, vis, consts)])
            folded = op.fold(case.node, vis, consts) if op.fold else None
            here.append(None if folded is None else
                        [t and (t.dtype.name, t.shape, bytes(t.data)) for t in folded])
        except Exception as e:
            here.append(f"{type(e).__name__}: {e}")
    proc = subprocess.run([sys.executable, "-c", _NO_NUMPY_SCRIPT, str(ROOT / "py_runtime")],
                          input=pickle.dumps(jobs), capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    there = pickle.loads(proc.stdout)
    assert len(jobs) > 1000
    diffs = [(j[0], a, b) for j, a, b in zip(jobs, here, there) if a != b]
    assert not diffs, f"{len(diffs)} differ, first: {diffs[0]}"


# --- shape inference on its own: symbolic dims, unknowns, and what must be refused ----------------

F32, I64 = dtypes.FLOAT32, dtypes.INT64


def _is_index(op_type, k):
    """Gather's indices are int64 here: shape inference refuses float indices."""
    return op_type in ("Gather", "GatherElements", "GatherND") and k == 1


def infer(op_type, in_shapes, attrs=None, consts=None, opset=17, n_out=1, dtype=F32):
    node = ir.Node(op_type, [f"i{k}" if s != "-" else "" for k, s in enumerate(in_shapes)],
                   [f"o{k}" for k in range(n_out)], name="n", attrs=attrs or {}, opset=opset)
    vis = [None if s == "-" else ir.ValueInfo(f"i{k}", I64 if consts and k in consts or _is_index(op_type, k) else dtype,
                                              None if s is None else tuple(s))
           for k, s in enumerate(in_shapes)]
    cs = [tensor_data(np.array(consts[k], dtype=np.int64)) if consts and k in consts else None
          for k in range(len(in_shapes))]
    return [s for _, s in registry.lookup("", op_type, opset).infer(node, vis, cs)]


@pytest.mark.parametrize("args, want", [
    (("Add", [["batch", 3], [1, 3]]), ("batch", 3)),
    (("Add", [[None, 3], [4, 1]]), (4, 3)),
    (("Add", [["a", 1], ["b", 1]]), (None, 1)),
    (("Add", [None, [3]]), None),
    (("Conv", [["N", 3, 224, 224], [32, 3, 3, 3]], {"strides": [2, 2], "auto_pad": "SAME_UPPER"}),
     ("N", 32, 112, 112)),
    (("Conv", [["N", 3, "H", 224], [32, 3, 3, 3]], {"pads": [1, 1, 1, 1]}), ("N", 32, None, 224)),
    (("MaxPool", [[1, 2, 8, 8]], {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}), (1, 2, 4, 4)),
    (("MaxPool", [[1, 2, 5, 5]], {"kernel_shape": [2, 2], "strides": [2, 2], "pads": [1, 1, 1, 1],
                                  "ceil_mode": 1}), (1, 2, 3, 3)),
    (("Reshape", [["batch", 1280, 1, 1], [2]], {}, {1: [0, -1]}), ("batch", 1280)),
    (("Reshape", [[2, "s", 4], [3]], {}, {1: [-1, 4, 1]}), (None, 4, 1)),
    (("Reshape", [[2, "s", 4], [2]], {}, {1: [8, -1]}), (8, "s")),
    (("Reshape", [[2, 3], [3]]), (None, None, None)),
    (("Flatten", [["batch", 1280, 1, 1]]), ("batch", 1280)),
    (("Shape", [["b", 3, 4]], {"start": -2}), (2,)),
    (("Slice", [["b", 10], [1], [1]], {}, {1: [0], 2: [2 ** 63 - 1]}), ("b", 10)),
    (("Slice", [["b", 10], [1], [1], [1]], {}, {1: [2], 2: [-1], 3: [1]}), ("b", 7)),
    (("Slice", [["b", 10], [1], [1], [1]], {}, {1: [2], 3: [1]}), ("b", None)),
    (("Concat", [["b", 3], ["b", 5]], {"axis": 1}), ("b", 8)),
    (("Concat", [["b", 3], [None, "c"]], {"axis": -1}), ("b", None)),
    (("Gather", [[5, "d"], [2, 3]], {"axis": 0}), (2, 3, "d")),
    (("Squeeze", [[1, "b", 1], [1]], {}, {1: [0, -1]}), ("b",)),
    (("Squeeze", [[1, "b", 1]], {}, None, 13), None),
    (("Unsqueeze", [["b", 3], [2]], {}, {1: [0, -1]}), (1, "b", 3, 1)),
    (("Expand", [[3, 1], [3]], {}, {1: [2, 1, 4]}), (2, 3, 4)),
    (("ReduceMean", [["b", 3, 4]], {"axes": [-1], "keepdims": 0}), ("b", 3)),
    (("MatMul", [["b", 3, 4], [4, 5]]), ("b", 3, 5)),
    (("Gemm", [[3, 4], [5, 4], [5]], {"transB": 1}), (3, 5)),
    (("Transpose", [["b", 3, 4]], {"perm": [2, 0, 1]}), (4, "b", 3)),
    (("Pad", [["b", 3], [4]], {}, {1: [0, 1, 0, 2]}), ("b", 6)),
    (("Resize", [["b", 3, 10, 10], "-", [4]], {}, None, 13), (None, None, None, None)),
])
def test_infer_shapes(args, want):
    assert infer(*args)[0] == want


@pytest.mark.parametrize("args, words", [
    (("Add", [[3], [4]]), ["[3]", "[4]", "broadcast"]),
    (("Conv", [[1, 3, 8, 8], [4, 2, 3, 3]]), ["channels", "[1, 3, 8, 8]", "[4, 2, 3, 3]"]),
    (("Conv", [[1, 8, 8, 8], [6, 2, 3, 3]], {"group": 4}), ["multiple of group"]),
    (("Conv", [[1, 3, 2, 2], [4, 3, 3, 3]]), ["does not fit"]),
    (("Reshape", [[2, 3], [2]], {}, {1: [4, 2]}), ["cannot reshape", "[2, 3]", "[4, 2]"]),
    (("Reshape", [[2, 3], [2]], {}, {1: [4, -1]}), ["cannot reshape"]),
    (("Reshape", [[2, 3], [2]], {}, {1: [-1, -1]}), ["more than one -1"]),
    (("MatMul", [[2, 3], [4, 5]]), ["inner dims"]),
    (("Gemm", [[2, 3], [3, 4], [3]]), ["broadcast", "[3]"]),
    (("Concat", [[2, 3], [3, 3]], {"axis": 1}), ["dim 0"]),
    (("Concat", [[2, 3], [2, 3, 1]], {"axis": 0}), ["rank"]),
    (("Squeeze", [[2, 3], [1]], {}, {1: [0]}), ["cannot squeeze axis 0"]),
    (("Transpose", [[2, 3]], {"perm": [0, 0]}), ["not a permutation"]),
    (("Split", [[7, 2], [2]], {}, {1: [3, 3]}, 17, 2), ["does not add up"]),
    (("Gather", [[3, 4], [2]], {"axis": 2}), ["out of range"]),
    (("Gather", [[3, 4], [2]], {}, {1: [0, 3]}), ["out of range"]),
    (("Softmax", [[3, 4]], {"axis": 2}), ["out of range"]),
    (("BatchNormalization", [[2, 3, 4], [4], [3], [3], [3]]), ["channel"]),
    (("Where", [[2], [2], [2]]), ["condition must be bool"]),
])
def test_infer_refuses_inconsistent_shapes(args, words):
    from nnwasm.errors import InvalidModel
    with pytest.raises(InvalidModel) as e:
        infer(*args)
    msg = str(e.value)
    assert msg.startswith(f"{args[0]} node 'n'"), msg
    assert all(w in msg for w in words), msg


def _degrade(vi, how, k):
    if vi is None:
        return None
    if how == "no rank":
        return ir.ValueInfo(vi.name, vi.dtype, None)
    if how == "no dtype":
        return ir.ValueInfo(vi.name, None, vi.shape)
    if how == "symbolic":
        return ir.ValueInfo(vi.name, vi.dtype, tuple(f"s{k}_{j}" for j in range(len(vi.shape))))
    return ir.ValueInfo(vi.name, vi.dtype, tuple(None for _ in vi.shape))


@pytest.mark.parametrize("how", ["no rank", "no dtype", "symbolic", "unknown dims"])
def test_infer_with_less_information(how):
    """Less input information gives less known output, never an error or a wrong dim/dtype."""
    problems = []
    for case, op, vis, consts in _infer_jobs():
        vis = [_degrade(vi, how, k) for k, vi in enumerate(vis)]
        try:
            outs = op.infer(case.node, vis, consts)
        except Exception as e:
            problems.append(f"{case.name}: {type(e).__name__}: {e}")
            continue
        p = _check_inferred(case, outs, False)
        if p:
            problems.append(f"{case.name}: {p}")
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems[:40])


# Every op the runtime promises, with the opset it first exists at (within 7..21).
REQUIRED_OPS = {
    7: "Add Sub Mul Div Pow Max Min Sum Mean Neg Abs Sqrt Exp Log Reciprocal Floor Ceil Relu LeakyRelu Elu "
       "Selu PRelu Clip Sigmoid HardSigmoid Tanh Softplus Softsign Equal Less Greater Not And Or Conv "
       "ConvTranspose MaxPool AveragePool GlobalAveragePool GlobalMaxPool BatchNormalization "
       "InstanceNormalization Gemm MatMul Softmax LogSoftmax Reshape Flatten Transpose Squeeze Unsqueeze "
       "Concat Split Slice Gather Shape Size Tile Constant Cast Identity Dropout ReduceMean ReduceSum "
       "ReduceMax ReduceMin ReduceProd ReduceL2 ArgMax ArgMin Pad Upsample",
    8: "Expand", 9: "Erf Where ConstantOfShape", 10: "Resize", 11: "GatherElements Range", 12: "LessOrEqual "
    "GreaterOrEqual Einsum", 14: "HardSwish", 17: "LayerNormalization", 20: "Gelu",
}


def test_registry_covers_opsets_7_to_21():
    missing = [f"{op_type}@{opset}" for first, names in REQUIRED_OPS.items() for op_type in names.split()
               for opset in range(first, 22) if registry.lookup("", op_type, opset) is None]
    assert not missing
    assert registry.lookup("", "Add", 6).since == 1   # opset < 7: the cases numpy broadcasting covers
    assert registry.lookup("ai.onnx", "Squeeze", 13).since == 13
    assert registry.lookup("", "Squeeze", 12).since == 1
    assert registry.lookup("com.microsoft", "Relu", 1) is None   # domains are apart
    assert registry.lookup("com.microsoft", "Gelu", 1).domain == "com.microsoft"   # ops/contrib.py


@pytest.mark.parametrize("attrs,ok", [({}, False), ({"broadcast": 1}, True), ({"broadcast": 1, "axis": 1}, True),
                                      ({"broadcast": 1, "axis": 0}, False)])
def test_opset6_binary_broadcast_only_where_numpy_agrees(attrs, ok):
    a, b = np.ones((2, 3), np.float32), np.arange(3, dtype=np.float32)
    model = graph_model([helper.make_node("Add", ["A", "B"], ["Y"], **attrs)], {"A": a, "B": b}, ["Y"], opset=6,
                        out_dtype=TensorProto.FLOAT)
    if ok:
        np.testing.assert_array_equal(nnwasm.InferenceSession(model).run(None, {"A": a, "B": b})[0], a + b)
    else:
        with pytest.raises((nnwasm.NotImplementedOp, nnwasm.InvalidModel), match="opset < 7"):
            nnwasm.InferenceSession(model)


def test_numpy_kernels_report_bad_data_as_invalid_argument():
    from nnwasm.errors import InvalidArgument
    node = ir.Node("Gather", ["d", "i"], ["o"], name="g", opset=13)
    with pytest.raises(InvalidArgument, match="Gather node 'g': indices out of range"):
        registry.lookup("", "Gather", 13).numpy(node, np.zeros((3, 2), np.float32), np.array([3]))
    node = ir.Node("Reshape", ["d", "s"], ["o"], name="r", opset=13)
    with pytest.raises(InvalidArgument, match="cannot reshape"):
        registry.lookup("", "Reshape", 13).numpy(node, np.zeros((3, 2), np.float32), np.array([4, 2]))


def test_numpy_kernel_results_are_tuples_of_arrays():
    node = ir.Node("Add", ["a", "b"], ["o"], opset=13)
    (out,) = registry.lookup("", "Add", 13).numpy(node, np.array(1.5, np.float32), np.array(2, np.float32))
    assert isinstance(out, np.ndarray) and out.dtype == np.float32 and out.shape == ()


# --- constant folding (pure Python) -------------------------------------------------------------------

def test_fold_reproduces_backend_outputs():
    folded, problems = collections.Counter(), []
    for op_type, cases in backend_cases().items():
        for case in cases:
            op = registry.lookup("", op_type, case.node.opset)
            if op.fold is None or expected_failure(case.name):
                continue
            vis, consts = infer_inputs(case, True)
            outs = op.fold(case.node, vis, consts)
            if outs is None:
                continue
            for k, want in zip(case.output_idx, case.expected):
                got = outs[k] and outs[k].to_numpy()
                if got is None or got.dtype != want.dtype or got.shape != want.shape or \
                        not np.allclose(got.astype(np.float64), want.astype(np.float64), equal_nan=True):
                    problems.append(f"{case.name}: folded {got!r}, expected {want!r}")
            folded[op_type] += 1
    assert not problems, "\n".join(problems)
    assert sum(folded.values()) > 250 and len(folded) >= 35, folded


def test_fold_shape_chain_without_constants():
    """x.view(x.size(0), -1) as exporters write it: with a static input shape, every value on the
    way to Reshape folds, so Reshape's output shape is known."""
    def n(op_type, ins, outs, **attrs):
        return ir.Node(op_type, ins, outs, name=outs[0], attrs=attrs, opset=13)
    nodes = [n("Shape", ["x"], ["s"]), n("Gather", ["s", "zero"], ["b"], axis=0), n("Unsqueeze", ["b", "ax0"], ["b1"]),
             n("Concat", ["b1", "minus1"], ["shape"], axis=0), n("Reshape", ["x", "shape"], ["y"])]
    consts = {"zero": tensor_data(np.array(0)), "ax0": tensor_data(np.array([0])),
              "minus1": tensor_data(np.array([-1]))}
    values = {k: ir.ValueInfo(k, t.dtype, t.shape) for k, t in consts.items()}
    values["x"] = ir.ValueInfo("x", F32, (2, 64, 7, 7))
    for node in nodes:
        op = registry.lookup("", node.op_type, 13)
        ins, cs = [values[i] for i in node.inputs], [consts.get(i) for i in node.inputs]
        (dt, shape), = op.infer(node, ins, cs)
        values[node.outputs[0]] = ir.ValueInfo(node.outputs[0], dt, shape)
        folded = op.fold(node, ins, cs) if node.op_type != "Reshape" else None
        if folded:
            consts[node.outputs[0]] = folded[0]
    assert consts["shape"].tolist() == [2, -1]
    assert values["y"].shape == (2, 3136)


def test_fold_declines_what_it_should_not_fold():
    big = tensor_data(np.zeros(1 << 15, np.int64))
    node = ir.Node("Add", ["a", "b"], ["c"], opset=13)
    vi = ir.ValueInfo("a", I64, big.shape)
    assert registry.lookup("", "Add", 13).fold(node, [vi, vi], [big, big]) is None
    assert registry.lookup("", "Add", 13).fold(node, [vi, vi], [big, None]) is None
    node = ir.Node("Shape", ["x"], ["s"], opset=13)
    assert registry.lookup("", "Shape", 13).fold(node, [ir.ValueInfo("x", F32, ("N", 3))], [None]) is None
    node = ir.Node("Div", ["a", "b"], ["c"], opset=13)
    one, zero = (tensor_data(np.array([v])) for v in (1, 0))
    vi = ir.ValueInfo("a", I64, (1,))
    assert registry.lookup("", "Div", 13).fold(node, [vi, vi], [one, zero]) is None


def test_prelu_before_opset_7_slopes_along_channels():
    """PRelu-6: a [C] slope applies along axis 1 (not numpy's trailing axis), on both providers;
    a slope that is neither [1] nor [C] is refused at creation."""
    x = np.random.default_rng(3).standard_normal((2, 3, 4)).astype(np.float32)
    slope = np.array([0.1, 0.2, 0.3], np.float32)
    model = graph_model([helper.make_node("PRelu", ["x", "s"], ["y"])], {"x": x}, ["y"], {"s": slope}, opset=6,
                        out_dtype=TensorProto.FLOAT)
    want = np.where(x < 0, x * slope[None, :, None], x)
    for providers in (None, ["NumpyExecutionProvider"]):
        np.testing.assert_array_equal(nnwasm.InferenceSession(model, providers=providers).run(None, {"x": x})[0], want)
    bad = graph_model([helper.make_node("PRelu", ["x", "s"], ["y"])], {"x": x}, ["y"],
                      {"s": np.ones(4, np.float32)}, opset=6, out_dtype=TensorProto.FLOAT)
    with pytest.raises(nnwasm.InvalidModel, match="channel axis"):
        nnwasm.InferenceSession(bad)
