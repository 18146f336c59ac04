"""The elementwise family on kernels.wasm: float32 math and activations (unary), pow/max/min/
prelu/fmod and the variadic ops (binary), int32/int64 arithmetic (binary_int), comparisons and
logic (compare, unary_bool), Where and Cast, each run with the numpy fallback disabled and
compared with the numpy provider and onnxruntime (exactly, for integer and bool outputs)."""
import numpy as np
import pytest

import nnwasm
from model_builders import graph_model, ort_run, single_node
from onnx import TensorProto, helper

WASM_ONLY = ["WasmExecutionProvider"]


def check(model, feeds, rtol=1e-5, atol=1e-5):
    so = nnwasm.SessionOptions()
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    wasm = nnwasm.InferenceSession(model, so, providers=WASM_ONLY + ["NumpyExecutionProvider"])
    assert {p for _, _, p in wasm.get_provider_assignment()} == {"WasmExecutionProvider"}
    ref = nnwasm.InferenceSession(model, providers=["NumpyExecutionProvider"])
    got, want, oracle = wasm.run(None, feeds), ref.run(None, feeds), ort_run(model, feeds)
    for g, w, o in zip(got, want, oracle):
        assert g.shape == o.shape and g.dtype == o.dtype
        if o.dtype.kind in "fc":
            np.testing.assert_allclose(w, o, rtol=rtol, atol=atol)
            np.testing.assert_allclose(g, o, rtol=rtol, atol=atol)
        else:
            np.testing.assert_array_equal(w, o)
            np.testing.assert_array_equal(g, o)
    return wasm


def assignment(model):
    return {op: p for _, op, p in nnwasm.InferenceSession(model).get_provider_assignment()}


SPECIALS = np.array([0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-40, 88.7, 89.0, -104, -87.5, 2.5, -2.5,
                     0.5, -0.5, 1.5, 3.5, 1e30, -1e30, 3.0, -3.0, 6.0, -6.0, 1e-6], np.float32)


def sample(shape=(4, 70), scale=4.0, seed=0, specials=True):
    x = np.asarray(np.random.default_rng(seed).standard_normal(shape) * scale, np.float32)
    if specials:
        flat = x.reshape(-1)
        flat[:len(SPECIALS)] = SPECIALS
    return x


# op -> (attrs, opset, input transform, use the special values)
UNARY = {
    "Exp": ({}, 13, None, True), "Log": ({}, 13, np.abs, True), "Sqrt": ({}, 13, np.abs, True),
    "Reciprocal": ({}, 13, None, True), "Neg": ({}, 13, None, True), "Abs": ({}, 13, None, True),
    "Erf": ({}, 13, None, True), "Sigmoid": ({}, 13, None, True), "Tanh": ({}, 13, None, True),
    "Gelu": ({}, 20, None, False), "Gelu_tanh": (dict(approximate="tanh"), 20, None, False),
    "HardSigmoid": (dict(alpha=0.3, beta=0.4), 13, None, False), "HardSwish": ({}, 14, None, False),
    "LeakyRelu": (dict(alpha=0.2), 13, None, True), "Elu": (dict(alpha=1.5), 13, None, True),
    "Softplus": ({}, 13, None, False), "Selu": ({}, 13, None, True), "Softsign": ({}, 13, None, False),
    "Sign": ({}, 13, None, False), "Floor": ({}, 13, None, True), "Ceil": ({}, 13, None, True),
    "Round": ({}, 13, None, True), "Sin": ({}, 13, None, False), "Cos": ({}, 13, None, False),
    "Mish": ({}, 18, None, True),
}


@pytest.mark.parametrize("case", sorted(UNARY))
def test_unary(case):
    attrs, opset, transform, specials = UNARY[case]
    x = sample(specials=specials)
    if case in ("Round", "Floor", "Ceil"):
        x[1, :8] = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4999998, -3.5000002]
    if transform is not None:
        x = transform(x)
    model = single_node(case.split("_")[0], {"X": x}, ["Y"], attrs, opset=opset)
    check(model, {"X": x}, rtol=1e-6 if case in ("Exp", "Erf", "Sigmoid") else 1e-5)


def test_unary_attribute_defaults():
    x = sample()
    for op in ("HardSigmoid", "LeakyRelu", "Elu", "Selu"):
        check(single_node(op, {"X": x}, ["Y"]), {"X": x})


def test_exp_and_gelu_wide_range():
    """Vector exp over the whole float range (overflow to inf, underflow through the denormals);
    erf-gelu where 1 + erf cancels."""
    x = np.linspace(-110, 95, 4001, dtype=np.float32)
    check(single_node("Exp", {"X": x}, ["Y"]), {"X": x}, rtol=1e-6, atol=0)
    x = np.linspace(-12, 12, 4001, dtype=np.float32)
    # where 1 + erf cancels, the error is 0.5 |x| times erf's (~4e-7) in absolute terms
    check(single_node("Gelu", {"X": x}, ["Y"], opset=20), {"X": x}, rtol=1e-5, atol=2e-6)
    check(single_node("Erf", {"X": x}, ["Y"]), {"X": x}, rtol=1e-6, atol=1e-7)


BINARY_SHAPES = [((3, 4, 5), (3, 4, 5)), ((2, 3, 4, 5), (3, 1, 1)), ((5, 7), ()), ((1, 6), (4, 1)),
                 ((2, 1, 3, 1, 2, 3), (1, 4, 1, 5, 1, 3))]


@pytest.mark.parametrize("op", ["Pow", "Max", "Min", "Mod"])
@pytest.mark.parametrize("shapes", BINARY_SHAPES)
def test_binary_float(op, shapes):
    a, c = sample(shapes[0], specials=False), np.asarray(sample(shapes[1], seed=1, specials=False) + 0.1)
    if op == "Pow":
        a = np.abs(a) + 0.5
        c = np.asarray(c / 2)
    attrs = dict(fmod=1) if op == "Mod" else {}
    model = single_node(op, {"A": a, "B": c}, ["Y"], attrs)
    check(model, {"A": a, "B": c})


def test_pow_negative_base_integral_exponent():
    a = np.array([-2, -1.5, -3, 0, 2, -0.5], np.float32)
    c = np.array([2, 3, -1, 2, 0.5, -2], np.float32)
    check(single_node("Pow", {"A": a, "B": c}, ["Y"]), {"A": a, "B": c})


@pytest.mark.parametrize("slope", [(3, 1, 1), (1,), (), (3, 4, 5)])
def test_prelu(slope):
    x = sample((2, 3, 4, 5))
    check(single_node("PRelu", {"X": x}, ["Y"], initializers={"S": sample(slope, seed=3, specials=False)}), {"X": x})


@pytest.mark.parametrize("op", ["Max", "Min", "Mean", "Sum"])
@pytest.mark.parametrize("n", [1, 2, 3])
def test_variadic(op, n):
    shapes = [(2, 3, 4), (3, 1), (4,)][:n]
    feeds = {f"X{i}": sample(s, seed=i, specials=False) for i, s in enumerate(shapes)}
    check(single_node(op, feeds, ["Y"]), feeds)


INT_VALUES = np.array([0, 1, -1, 7, -7, 13, -13, 2**31 - 1, -2**31, 100, -100, 3, 2**62 + 5, -2**63], np.int64)
INT_TYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]


# (onnxruntime has no Max/Min for 16-bit integers)
INT_CASES = [(op, dt) for op in ["Add", "Sub", "Mul", "Div", "Max", "Min", "Mod", "FMod"] for dt in INT_TYPES
             if not (op in ("Max", "Min") and dt in (np.int16, np.uint16))]


@pytest.mark.parametrize("op,dtype", INT_CASES, ids=lambda v: v if isinstance(v, str) else np.dtype(v).name)
@pytest.mark.parametrize("shapes", BINARY_SHAPES[:4])
def test_binary_int(op, dtype, shapes):
    """Wrapping add/sub/mul and truncating division at every integer width (values pick
    extremes); onnxruntime traps on division by zero, so the divisors avoid it."""
    rng = np.random.default_rng(5)
    values = INT_VALUES
    if op == "FMod":   # onnxruntime's integer fmod goes through double: keep to 53 bits
        values = np.abs(INT_VALUES[:-2]) if np.dtype(dtype).kind == "u" else INT_VALUES[:-2]
    a = rng.choice(values, shapes[0]).astype(dtype)
    c = np.asarray(rng.choice(values, shapes[1]).astype(dtype))
    if op in ("Div", "Mod", "FMod"):
        c[c == 0] = 3
        c[c == np.array(-1).astype(dtype)] = 5   # MIN / -1 overflows in onnxruntime's C++
    attrs = {"fmod": 1} if op == "FMod" else {}
    check(single_node(op.replace("FMod", "Mod"), {"A": a, "B": c}, ["Y"], attrs, opset=14), {"A": a, "B": c})


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64], ids=lambda d: np.dtype(d).name)
def test_neg_int(dtype):
    x = np.array([[0, 1, -1, 5, -100, 127, -127]]).astype(dtype)
    check(single_node("Neg", {"X": x}, ["Y"]), {"X": x})


def test_index_arithmetic_int64():
    """Shape-like int64 math of exported transformers, chained and broadcast; variadic Max."""
    a = np.array([[1, 2, 3]], np.int64)
    b = np.array([[10], [-20]], np.int64)
    nodes = [helper.make_node("Mul", ["A", "B"], ["T"]), helper.make_node("Sub", ["T", "A"], ["U"]),
             helper.make_node("Div", ["U", "B"], ["V"]), helper.make_node("Max", ["V", "A", "B"], ["Y"])]
    check(graph_model(nodes, {"A": a, "B": b}, ["Y"]), {"A": a, "B": b})


COMPARE_DTYPES = [np.float32, np.float64, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.int64,
                  np.uint32, np.uint64]


@pytest.mark.parametrize("dtype", COMPARE_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", ["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"])
def test_compare(op, dtype):
    rng = np.random.default_rng(2)
    a = rng.integers(0, 4, (3, 4, 5)).astype(dtype)
    c = rng.integers(0, 4, (4, 1)).astype(dtype)
    if np.dtype(dtype).kind == "f":
        a.reshape(-1)[:3] = np.nan
        c[0, 0] = np.inf
    check(single_node(op, {"A": a, "B": c}, ["Y"], opset=13 if op == "Equal" else 12), {"A": a, "B": c})


@pytest.mark.parametrize("op", ["And", "Or", "Xor", "Equal"])
def test_logic_bool(op):
    rng = np.random.default_rng(3)
    a, c = rng.integers(0, 2, (2, 3, 4)).astype(bool), rng.integers(0, 2, (3, 1)).astype(bool)
    check(single_node(op, {"A": a, "B": c}, ["Y"]), {"A": a, "B": c})


def test_not_isnan_isinf():
    x = sample((3, 40))
    m = x > 0
    check(single_node("Not", {"M": m}, ["Y"]), {"M": m})
    check(single_node("IsNaN", {"X": x}, ["Y"]), {"X": x})
    for pos, neg in [(1, 1), (1, 0), (0, 1)]:
        check(single_node("IsInf", {"X": x}, ["Y"], dict(detect_positive=pos, detect_negative=neg)), {"X": x})


# (onnxruntime has no Where for bool or int16; the kernel moves 1- and 2-byte elements alike)
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.uint8, np.float16, np.int32, np.float64],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shapes", [((2, 3, 4),) * 3, ((3, 1), (2, 3, 4), ()), ((4,), (2, 1, 1), (3, 1)),
                                    ((1, 2, 1, 2, 1, 2), (2, 1, 2, 1, 2, 1), (2,))])
def test_where(dtype, shapes):
    rng = np.random.default_rng(4)
    cond = rng.integers(0, 2, shapes[0]).astype(bool)
    x = np.asarray(rng.standard_normal(shapes[1]) * 10).astype(dtype)
    y = np.asarray(rng.standard_normal(shapes[2]) * 10).astype(dtype)
    check(single_node("Where", {"C": cond, "X": x, "Y": y}, ["Z"]), {"C": cond, "X": x, "Y": y})


CAST_TYPES = {np.float32: TensorProto.FLOAT, np.float16: TensorProto.FLOAT16, np.float64: TensorProto.DOUBLE,
              np.int8: TensorProto.INT8, np.uint8: TensorProto.UINT8, np.int16: TensorProto.INT16,
              np.uint16: TensorProto.UINT16, np.int32: TensorProto.INT32, np.uint32: TensorProto.UINT32,
              np.int64: TensorProto.INT64, np.uint64: TensorProto.UINT64, np.bool_: TensorProto.BOOL}


def cast_input(src):
    """Values every destination represents the same way in onnxruntime, numpy and nnwasm:
    in range, fractions for float sources (truncation toward zero), negatives for signed ones."""
    v = np.array([0, 1, 2, 5, 100, 127, 3, 0, 1, 64, 9, 33], np.float64)
    if np.dtype(src).kind == "f":
        v = v + np.array([0, 0.25, 0.5, 0.75, 0.9, 0.1] * 2)
    if np.dtype(src).kind in "fi":
        v[::3] = -v[::3]
    return v.astype(src).reshape(3, 4)


@pytest.mark.parametrize("dst", list(CAST_TYPES), ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("src", list(CAST_TYPES), ids=lambda d: np.dtype(d).name)
def test_cast(src, dst):
    x = cast_input(src)
    if np.dtype(dst).kind == "u" and np.dtype(src).kind == "f":
        x = np.abs(x)   # negative floats to unsigned are undefined in C and differ across runtimes
    check(single_node("Cast", {"X": x}, ["Y"], dict(to=CAST_TYPES[dst])), {"X": x}, rtol=0, atol=0)


@pytest.mark.filterwarnings("ignore:overflow encountered in cast")   # numpy's, for 1e6 -> inf
def test_cast_float16_exact():
    """Every float16 to float32 and back, and floats between float16 neighbours (ties to even)."""
    h = np.arange(65536, dtype=np.uint16).view(np.float16).reshape(256, 256)
    check(single_node("Cast", {"X": h}, ["Y"], dict(to=TensorProto.FLOAT)), {"X": h}, rtol=0, atol=0)
    f = np.concatenate([h.astype(np.float32).reshape(-1),
                        (np.random.default_rng(0).standard_normal(30000) * np.float32(2) **
                         np.random.default_rng(1).integers(-26, 17, 30000)).astype(np.float32),
                        np.array([65519.99, 65520, 1e6, 2.0**-25, 2.0**-24 * 1.5, 2.0**-26], np.float32)])
    f = f[:, None]
    check(single_node("Cast", {"X": f}, ["Y"], dict(to=TensorProto.FLOAT16)), {"X": f}, rtol=0, atol=0)


@pytest.mark.filterwarnings("ignore:overflow encountered in cast")
def test_cast_float_to_int_truncates_and_castlike():
    x = np.array([[-2.7, 2.7, -0.5, 0.99, 1e9, -1e9, 126.9, -128.9]], np.float32)
    check(single_node("Cast", {"X": x}, ["Y"], dict(to=TensorProto.INT32)), {"X": x})
    check(single_node("Cast", {"X": x}, ["Y"], dict(to=TensorProto.INT64)), {"X": x})
    check(single_node("Cast", {"X": x}, ["Y"], dict(to=TensorProto.BOOL)), {"X": x})
    like = np.zeros((1,), np.float16)
    check(single_node("CastLike", {"X": x}, ["Y"], opset=15, initializers={"L": like}), {"X": x})


def test_fp16_model_runs_on_wasm():
    """An fp16 model's float32 island: Cast in, float32 math, Cast out."""
    x = sample((2, 8), specials=False).astype(np.float16)
    nodes = [helper.make_node("Cast", ["X"], ["F"], to=TensorProto.FLOAT),
             helper.make_node("Gelu", ["F"], ["G"]),
             helper.make_node("Less", ["G", "F"], ["M"]),
             helper.make_node("Where", ["M", "G", "F"], ["W"]),
             helper.make_node("Cast", ["W"], ["Y"], to=TensorProto.FLOAT16)]
    check(graph_model(nodes, {"X": x}, ["Y"], opset=20), {"X": x}, rtol=1e-3, atol=1e-3)


def test_refusals_fall_back():
    a = np.arange(6, dtype=np.float64).reshape(2, 3)
    assert assignment(single_node("Add", {"A": a, "B": a}, ["Y"]))["Add"] == "NumpyExecutionProvider"
    # (a uint8 Neg was here: an invalid model, which onnxruntime and now nnwasm refuse at load)
    h = np.ones((2, 3), np.float16)
    assert assignment(single_node("Equal", {"A": h, "B": h}, ["Y"]))["Equal"] == "NumpyExecutionProvider"
    x = sample((2, 3), specials=False)
    assert assignment(single_node("Mod", {"A": x, "B": x}, ["Y"]))["Mod"] == "NumpyExecutionProvider"
    i = np.arange(6, dtype=np.int64).reshape(2, 3)
    assert assignment(single_node("Pow", {"A": x, "B": i}, ["Y"]))["Pow"] == "NumpyExecutionProvider"
    # (an int64 Mean was here: invalid, as the uint8 Neg above)
    d = np.ones((2, 3), np.float64)
    assert assignment(single_node("IsNaN", {"X": d}, ["Y"]))["IsNaN"] == "NumpyExecutionProvider"


def test_opset6_semantics_stay_off_wasm():
    """PRelu-6 applies a [C] slope along axis 1 and binary ops before 7 could broadcast along an
    axis: not numpy broadcasting. The WASM provider leaves PRelu-6 to numpy (which runs it per
    channel: test_ops_numpy.py), and an axis broadcast is refused clearly at creation."""
    x = sample((2, 3, 4), specials=False)
    slope = np.array([0.5, 2.0, -1.0], np.float32)
    sess = nnwasm.InferenceSession(single_node("PRelu", {"X": x}, ["Y"], opset=6, initializers={"S": slope}))
    assert {p for _, _, p in sess.get_provider_assignment()} == {"NumpyExecutionProvider"}
    np.testing.assert_array_equal(sess.run(None, {"X": x})[0], np.where(x < 0, x * slope[:, None], x))
    graph = helper.make_graph([helper.make_node("Add", ["X", "S"], ["Y"], broadcast=1, axis=1)], "g",
                              [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 3, 4])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, 3, 4])],
                              [helper.make_tensor("S", TensorProto.FLOAT, [3], [1, 2, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 6)])
    model.ir_version = 8
    with pytest.raises(nnwasm.Unsupported, match="opset < 7 broadcasting at an axis other than the trailing one"):
        nnwasm.InferenceSession(model.SerializeToString())
