"""The int8 ops on kernels.wasm (kernels_c/q8/) with the numpy fallback disabled, against the numpy
provider and onnxruntime: quantized outputs within one quantization step, int32 outputs exact."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import nnwasm
from model_builders import ort_run
from test_wasm_ops import WASM_ONLY, wasm_only_options

NP = {TensorProto.UINT8: np.uint8, TensorProto.INT8: np.int8}


def model(nodes, inputs, outputs, inits, opset=13, ms=False):
    """inputs: {name: array}; outputs: {name: TensorProto type}; inits: {name: array}."""
    g = helper.make_graph(
        nodes, "q", [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
                     for k, v in inputs.items()],
        [helper.make_tensor_value_info(k, t, None) for k, t in outputs.items()],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    opsets = [helper.make_opsetid("", opset)] + ([helper.make_opsetid("com.microsoft", 1)] if ms else [])
    m = helper.make_model(g, opset_imports=opsets)
    m.ir_version = 8
    return m.SerializeToString()


def check_q(m, feeds, step=1, f32_atol=1e-5):
    """Runs m on WASM only; integer outputs within `step` units of onnxruntime's (0 for exact),
    float outputs within f32_atol."""
    wasm = nnwasm.InferenceSession(m, wasm_only_options(), providers=WASM_ONLY + ["NumpyExecutionProvider"])
    assert {p for _, _, p in wasm.get_provider_assignment()} == {"WasmExecutionProvider"}
    ref = nnwasm.InferenceSession(m, providers=["NumpyExecutionProvider"])
    got, want, oracle = wasm.run(None, feeds), ref.run(None, feeds), ort_run(m, feeds)
    for g, w, o in zip(got, want, oracle):
        assert g.shape == o.shape and g.dtype == o.dtype
        tol = f32_atol if o.dtype == np.float32 else step
        np.testing.assert_allclose(w.astype(np.float64), o.astype(np.float64), rtol=1e-6, atol=tol)
        np.testing.assert_allclose(g.astype(np.float64), o.astype(np.float64), rtol=1e-6, atol=tol)
    return wasm


def qrand(dt, *shape, seed=0):
    lo, hi = (0, 256) if dt == np.uint8 else (-128, 128)
    return np.random.default_rng(seed + sum(shape)).integers(lo, hi, shape).astype(dt)


def wrand(ta, tb, *shape, seed=1):
    """Weights for an A of type ta: for uint8 x int8, 7-bit, as onnxruntime's quantizer makes them
    (reduce_range): on x86 onnxruntime's u8s8 kernels add pairs of products in saturating int16."""
    w = qrand(tb, *shape, seed=seed)
    return w // 2 if ta == np.uint8 and tb == np.int8 else w


def frand(*shape, seed=0, scale=3.0):
    return (np.random.default_rng(seed + sum(shape)).standard_normal(shape) * scale).astype(np.float32)


# ---- QuantizeLinear / DequantizeLinear --------------------------------------------------------

@pytest.mark.parametrize("opset", [10, 13, 19, 21])
@pytest.mark.parametrize("qtype", [TensorProto.UINT8, TensorProto.INT8])
@pytest.mark.parametrize("per_axis", [None, 1, -1, 0])
def test_quantize_dequantize(opset, qtype, per_axis):
    if per_axis is not None and opset < 13:
        pytest.skip("per-axis arrived in opset 13")
    dt = NP[qtype]
    x = frand(2, 3, 5, 4)
    x.flat[:6] = [0.5, 1.5, -0.5, 2.5, 1e9, -np.inf]     # ties to even, saturation
    if per_axis is None:
        s, z, attrs = np.float32(0.5), np.array(3, dt), {}
    else:
        n = x.shape[per_axis]
        s = np.linspace(0.02, 0.3, n).astype(np.float32)
        z, attrs = qrand(dt, n, seed=5), dict(axis=per_axis)
    nodes = [helper.make_node("QuantizeLinear", ["X", "s", "z"], ["Q"], **attrs),
             helper.make_node("DequantizeLinear", ["Q", "s", "z"], ["Y"], **attrs)]
    check_q(model(nodes, {"X": x}, {"Q": qtype, "Y": TensorProto.FLOAT}, {"s": s, "z": z}, opset=opset), {"X": x})


def test_quantize_without_zero_point_and_runtime_scale():
    x, s = frand(7, 9), np.array(0.07, np.float32)
    nodes = [helper.make_node("QuantizeLinear", ["X", "S"], ["Q"]),
             helper.make_node("DequantizeLinear", ["Q", "S"], ["Y"])]
    check_q(model(nodes, {"X": x, "S": s}, {"Q": TensorProto.UINT8, "Y": TensorProto.FLOAT}, {}), {"X": x, "S": s})


def test_dequantize_int32():
    x = np.random.default_rng(1).integers(-2**20, 2**20, (4, 6)).astype(np.int32)
    nodes = [helper.make_node("DequantizeLinear", ["X", "s", "z"], ["Y"])]
    check_q(model(nodes, {"X": x}, {"Y": TensorProto.FLOAT}, {"s": np.float32(1e-3), "z": np.int32(0)}), {"X": x})


@pytest.mark.parametrize("shape", [(1,), (3, 5), (2, 7, 13)])
@pytest.mark.parametrize("kind", ["mixed", "positive", "negative", "zeros"])
def test_dynamic_quantize(shape, kind):
    x = frand(*shape)
    x = {"mixed": x, "positive": np.abs(x) + 0.1, "negative": -np.abs(x) - 0.1, "zeros": x * 0}[kind]
    nodes = [helper.make_node("DynamicQuantizeLinear", ["X"], ["Y", "S", "Z"], name="dq")]
    outs = {"Y": TensorProto.UINT8, "S": TensorProto.FLOAT, "Z": TensorProto.UINT8}
    check_q(model(nodes, {"X": x}, outs, {}, opset=11), {"X": x}, step=0, f32_atol=0)


# ---- MatMulInteger / QLinearMatMul --------------------------------------------------------------

MM_SHAPES = [((3, 4), (4, 5)), ((1, 37), (37, 19)), ((2, 5, 8), (8, 9)), ((2, 3, 6), (2, 6, 4)), ((9,), (9, 3)),
             ((17, 33), (33, 16)), ((1, 3, 6), (2, 6, 5))]


@pytest.mark.parametrize("sa,sb", MM_SHAPES)
@pytest.mark.parametrize("ta,tb", [(np.uint8, np.uint8), (np.uint8, np.int8), (np.int8, np.int8)])
def test_matmul_integer(sa, sb, ta, tb):
    a, b = qrand(ta, *sa), wrand(ta, tb, *sb, seed=3)
    inits = {"az": np.array(ta(7)), "bz": np.array(tb(-3) if tb == np.int8 else tb(9))}
    nodes = [helper.make_node("MatMulInteger", ["A", "B", "az", "bz"], ["Y"])]
    check_q(model(nodes, {"A": a, "B": b}, {"Y": TensorProto.INT32}, inits, opset=10), {"A": a, "B": b}, step=0)


def test_matmul_integer_per_column_zero_points_and_constant_b():
    a, b = qrand(np.uint8, 6, 10), wrand(np.uint8, np.int8, 10, 11, seed=2)
    inits = {"B": b, "az": np.array([17], np.uint8), "bz": qrand(np.int8, 11, seed=5)}
    nodes = [helper.make_node("MatMulInteger", ["A", "B", "az", "bz"], ["Y"])]
    check_q(model(nodes, {"A": a}, {"Y": TensorProto.INT32}, inits, opset=10), {"A": a}, step=0)


def test_matmul_integer_without_zero_points():
    a, b = qrand(np.int8, 5, 7), qrand(np.int8, 7, 3, seed=2)
    nodes = [helper.make_node("MatMulInteger", ["A", "B"], ["Y"])]
    check_q(model(nodes, {"A": a, "B": b}, {"Y": TensorProto.INT32}, {}, opset=10), {"A": a, "B": b}, step=0)


@pytest.mark.parametrize("sa,sb", MM_SHAPES[:5])
@pytest.mark.parametrize("ta,tb,ty", [(np.uint8, np.uint8, np.uint8), (np.uint8, np.int8, np.uint8),
                                      (np.int8, np.int8, np.int8)])
@pytest.mark.parametrize("per_col", [False, True])
def test_qlinear_matmul(sa, sb, ta, tb, ty, per_col):
    if per_col and len(sb) > 2:
        pytest.skip("per-column scales take a 2-D B")
    a, b = qrand(ta, *sa), wrand(ta, tb, *sb, seed=3)
    n = sb[-1]
    b_s = np.linspace(0.01, 0.03, n).astype(np.float32) if per_col else np.float32(0.02)
    inits = {"B": b, "a_s": np.float32(0.05), "a_z": np.array(ta(3)), "b_s": b_s, "b_z": np.array(tb(0)),
             "y_s": np.float32(0.4), "y_z": np.array(ty(5))}
    nodes = [helper.make_node("QLinearMatMul", ["A", "a_s", "a_z", "B", "b_s", "b_z", "y_s", "y_z"], ["Y"])]
    check_q(model(nodes, {"A": a}, {"Y": helper.np_dtype_to_tensor_dtype(np.dtype(ty))}, inits, opset=10),
            {"A": a})


# ---- ConvInteger / QLinearConv ------------------------------------------------------------------

CONV_CASES = {
    "3x3": dict(x=(1, 3, 9, 11), w=(4, 3, 3, 3), attrs=dict(pads=[1, 1, 1, 1])),
    "stride2": dict(x=(2, 3, 12, 10), w=(5, 3, 3, 3), attrs=dict(strides=[2, 2], pads=[1, 1, 1, 1])),
    "dilated_asym": dict(x=(1, 2, 13, 12), w=(3, 2, 3, 2), attrs=dict(dilations=[2, 1], pads=[2, 0, 1, 1])),
    "grouped": dict(x=(1, 4, 8, 8), w=(6, 2, 3, 3), attrs=dict(group=2, pads=[1, 1, 1, 1])),
    "depthwise": dict(x=(1, 8, 10, 10), w=(8, 1, 3, 3), attrs=dict(group=8, pads=[1, 1, 1, 1])),
    "pointwise": dict(x=(1, 24, 7, 7), w=(17, 24, 1, 1), attrs={}),
    "same_upper": dict(x=(1, 3, 10, 9), w=(4, 3, 3, 3), attrs=dict(auto_pad="SAME_UPPER", strides=[2, 2])),
    "conv1d": dict(x=(1, 4, 20), w=(6, 4, 3), attrs=dict(pads=[1, 1], strides=[2])),
}


@pytest.mark.parametrize("case", sorted(CONV_CASES))
@pytest.mark.parametrize("tx,tw", [(np.uint8, np.uint8), (np.uint8, np.int8), (np.int8, np.int8)])
def test_conv_integer(case, tx, tw):
    c = CONV_CASES[case]
    x = qrand(tx, *c["x"])
    inits = {"W": wrand(tx, tw, *c["w"]), "xz": np.array(tx(5)), "wz": np.array(tw(2))}
    nodes = [helper.make_node("ConvInteger", ["X", "W", "xz", "wz"], ["Y"], **c["attrs"])]
    check_q(model(nodes, {"X": x}, {"Y": TensorProto.INT32}, inits, opset=10), {"X": x}, step=0)


@pytest.mark.parametrize("case", sorted(CONV_CASES))
@pytest.mark.parametrize("tx,tw", [(np.uint8, np.uint8), (np.uint8, np.int8), (np.int8, np.int8)])
@pytest.mark.parametrize("per_channel", [False, True])
def test_qlinear_conv(case, tx, tw, per_channel):
    c = CONV_CASES[case]
    m = c["w"][0]
    x = qrand(tx, *c["x"])
    w_s = np.linspace(0.005, 0.02, m).astype(np.float32) if per_channel else np.float32(0.01)
    w_z = np.zeros(m, tw) if per_channel else np.array(tw(0))
    inits = {"W": wrand(tx, tw, *c["w"]), "x_s": np.float32(0.03), "x_z": np.array(tx(9)), "w_s": w_s,
             "w_z": w_z, "y_s": np.float32(0.05), "y_z": np.array(tx(4)),
             "B": np.random.default_rng(2).integers(-3000, 3000, m).astype(np.int32)}
    nodes = [helper.make_node("QLinearConv", ["X", "x_s", "x_z", "W", "w_s", "w_z", "y_s", "y_z", "B"], ["Y"],
                              **c["attrs"])]
    check_q(model(nodes, {"X": x}, {"Y": helper.np_dtype_to_tensor_dtype(np.dtype(tx))}, inits, opset=10),
            {"X": x})


def test_qlinear_conv_saturates_and_ties():
    """Large sums saturate; the multiplier makes some products exact .5 ties (half to even)."""
    x = np.full((1, 2, 4, 4), 255, np.uint8)
    x[0, 0, 0, :] = [1, 2, 3, 5]
    inits = {"W": np.full((3, 2, 1, 1), 127, np.int8), "x_s": np.float32(0.5), "x_z": np.array(np.uint8(0)),
             "w_s": np.float32(1.0), "w_z": np.array(np.int8(0)), "y_s": np.float32(127.0),
             "y_z": np.array(np.uint8(128))}
    nodes = [helper.make_node("QLinearConv", ["X", "x_s", "x_z", "W", "w_s", "w_z", "y_s", "y_z"], ["Y"])]
    check_q(model(nodes, {"X": x}, {"Y": TensorProto.UINT8}, inits, opset=10), {"X": x}, step=0)


# ---- com.microsoft QLinearAdd / QGemm ---------------------------------------------------------

@pytest.mark.parametrize("sa,sb", [((2, 3, 4), (2, 3, 4)), ((1, 8, 5, 5), (1, 8, 1, 1)), ((3, 1, 5), (4, 1)),
                                   ((6,), ())])
@pytest.mark.parametrize("dt", [np.uint8, np.int8])
def test_qlinear_add(sa, sb, dt):
    a, b = qrand(dt, *sa), qrand(dt, *sb, seed=4)
    inits = {"as": np.float32(0.05), "az": np.array(dt(3)), "bs": np.float32(0.11), "bz": np.array(dt(-2 if dt == np.int8 else 7)),
             "ys": np.float32(0.09), "yz": np.array(dt(1))}
    node = helper.make_node("QLinearAdd", ["A", "as", "az", "B", "bs", "bz", "ys", "yz"], ["Y"], domain="com.microsoft")
    check_q(model([node], {"A": a, "B": b}, {"Y": helper.np_dtype_to_tensor_dtype(np.dtype(dt))}, inits, ms=True),
            {"A": a, "B": b})


@pytest.mark.parametrize("per_col", [False, True])
@pytest.mark.parametrize("out", ["uint8", "float"])
def test_qgemm(per_col, out):
    a, w = qrand(np.uint8, 3, 20), wrand(np.uint8, np.int8, 20, 7, seed=2)
    inits = {"W": w, "as": np.float32(0.02), "az": np.array(np.uint8(100)),
             "ws": np.linspace(0.01, 0.02, 7).astype(np.float32) if per_col else np.float32(0.015),
             "wz": np.zeros(7, np.int8) if per_col else np.array(np.int8(0)),
             "C": np.random.default_rng(3).integers(-500, 500, 7).astype(np.int32)}
    ins = ["A", "as", "az", "W", "ws", "wz", "C"]
    if out == "uint8":
        inits.update(ys=np.float32(0.3), yz=np.array(np.uint8(120)))
        ins += ["ys", "yz"]
    node = helper.make_node("QGemm", ins, ["Y"], domain="com.microsoft", alpha=1.0)
    check_q(model([node], {"A": a}, {"Y": TensorProto.UINT8 if out == "uint8" else TensorProto.FLOAT}, inits,
                  ms=True), {"A": a})


@pytest.mark.parametrize("per_col", [False, True])
def test_matmul_integer_to_float(per_col):
    a, w = qrand(np.uint8, 2, 5, 24), wrand(np.uint8, np.int8, 24, 9, seed=2)
    a_s = np.array(0.03, np.float32)
    inits = {"W": w, "ws": np.linspace(0.01, 0.02, 9).astype(np.float32) if per_col else np.float32(0.015),
             "az": np.array(np.uint8(131)), "wz": np.zeros(9, np.int8) if per_col else np.array(np.int8(3))}
    node = helper.make_node("MatMulIntegerToFloat", ["A", "W", "as", "ws", "az", "wz"], ["Y"], domain="com.microsoft")
    check_q(model([node], {"A": a, "as": a_s}, {"Y": TensorProto.FLOAT}, inits, ms=True), {"A": a, "as": a_s})



def _plan_ops(m):
    from nnwasm import optimizer, passes
    from nnwasm.onnx_io.load import load_model
    from nnwasm.wasm.provider import WasmExecutionProvider
    wasm = WasmExecutionProvider()
    graph = optimizer.optimize(passes.infer_shapes(load_model(m), {}), "shaped", 99, [wasm])
    b = wasm.build_plan(graph.nodes, graph, [v.name for v in graph.inputs], [v.name for v in graph.outputs])[0]
    return [op for op, _ in b.ops]


@pytest.mark.parametrize("tail", ["", "gelu", "residual"])
@pytest.mark.parametrize("ta,tb,shape,n,per_col", [(np.uint8, np.int8, (1, 9, 33), 13, True),
                                                   (np.int8, np.int8, (6, 16), 8, False),
                                                   (np.uint8, np.int8, (2, 5, 7), 1, False),
                                                   (np.uint8, np.int8, (1, 11, 64), 24, True),
                                                   (np.uint8, np.uint8, (3, 20), 6, True)])
def test_matmul_integer_to_float_packed_b(tail, ta, tb, shape, n, per_col):
    """A constant B is packed at plan build (q8_gemm_pk8): the same bits as B given at run time (q8_gemm[_ep])."""
    k = shape[-1]
    a, w = qrand(ta, *shape), wrand(ta, tb, k, n, seed=3)
    out = shape[:-1] + (n,)
    feeds = {"A": a, "as": np.array(0.03, np.float32)}
    inits = {"ws": np.linspace(0.01, 0.02, n).astype(np.float32) if per_col else np.float32(0.015),
             "az": np.array(ta(7)), "wz": np.arange(n).astype(tb) % 5 if per_col else np.array(tb(3)),
             "bias": np.linspace(-1, 1, n).astype(np.float32)}
    nodes = [helper.make_node("MatMulIntegerToFloat", ["A", "W", "as", "ws", "az", "wz"], ["mm"], domain="com.microsoft")]
    nodes.append(helper.make_node("Add", ["mm", "bias"], ["biased" if tail else "Y"]))
    if tail == "gelu":
        nodes.append(helper.make_node("Gelu", ["biased"], ["Y"]))
    elif tail == "residual":
        feeds["R"] = frand(*out)
        nodes.append(helper.make_node("Add", ["biased", "R"], ["Y"]))
    opset = 20 if tail == "gelu" else 13
    const_w = model(nodes, feeds, {"Y": TensorProto.FLOAT}, {**inits, "W": w}, opset=opset, ms=True)
    input_w = model(nodes, {**feeds, "W": w}, {"Y": TensorProto.FLOAT}, inits, opset=opset, ms=True)
    assert "q8_gemm_pk8" in _plan_ops(const_w) and "q8_gemm_pk8" not in _plan_ops(input_w)
    sess = check_q(const_w, feeds, f32_atol=1e-4)
    other = nnwasm.InferenceSession(input_w, wasm_only_options(), providers=WASM_ONLY + ["NumpyExecutionProvider"])
    np.testing.assert_array_equal(sess.run(None, feeds)[0], other.run(None, {**feeds, "W": w})[0])

@pytest.mark.parametrize("ta,tb,ty,m,k,n,per_col,scalar_c", [(np.uint8, np.int8, np.uint8, 1, 40, 13, True, False),
                                                         (np.int8, np.int8, np.int8, 3, 17, 9, False, True),
                                                         (np.uint8, np.int8, np.uint8, 5, 64, 24, True, False)])
def test_qgemm_packed_b(ta, tb, ty, m, k, n, per_col, scalar_c):
    """QGemm with a constant B and a quantized output runs q8_gemm_pkq on B packed at plan build:
    the same bits as B given at run time (q8_gemm)."""
    a, w = qrand(ta, m, k), wrand(ta, tb, k, n, seed=3)
    rng = np.random.default_rng(5)
    inits = {"as": np.float32(0.02), "az": np.array(ta(9)),
             "ws": np.linspace(0.01, 0.02, n).astype(np.float32) if per_col else np.float32(0.015),
             "wz": (np.arange(n) % 4).astype(tb) if per_col else np.array(tb(2)),
             "C": np.array(np.int32(-77)) if scalar_c else rng.integers(-900, 900, n).astype(np.int32),
             "ys": np.float32(0.25), "yz": np.array(ty(3))}
    node = helper.make_node("QGemm", ["A", "as", "az", "W", "ws", "wz", "C", "ys", "yz"], ["Y"],
                            domain="com.microsoft", alpha=1.0)
    ydt = helper.np_dtype_to_tensor_dtype(np.dtype(ty))
    const_w = model([node], {"A": a}, {"Y": ydt}, {**inits, "W": w}, ms=True)
    input_w = model([node], {"A": a, "W": w}, {"Y": ydt}, inits, ms=True)
    assert "q8_gemm_pkq" in _plan_ops(const_w) and "q8_gemm_pkq" not in _plan_ops(input_w)
    sess = check_q(const_w, {"A": a})
    other = nnwasm.InferenceSession(input_w, wasm_only_options(), providers=WASM_ONLY + ["NumpyExecutionProvider"])
    np.testing.assert_array_equal(sess.run(None, {"A": a})[0], other.run(None, {"A": a, "W": w})[0])


def test_dynamic_matmul_pattern_fuses_exactly():
    """quantize_dynamic's DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul(scale product) becomes
    MatMulIntegerToFloat, bit for bit what the unfused graph computes."""
    x = frand(4, 16)
    inits = {"W": wrand(np.uint8, np.int8, 16, 6), "ws": np.float32(0.02), "wz": np.array(np.int8(0))}
    nodes = [helper.make_node("DynamicQuantizeLinear", ["X"], ["xq", "xs", "xz"]),
             helper.make_node("Mul", ["xs", "ws"], ["s"]),
             helper.make_node("MatMulInteger", ["xq", "W", "xz", "wz"], ["acc"]),
             helper.make_node("Cast", ["acc"], ["accf"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["accf", "s"], ["Y"])]
    m = model(nodes, {"X": x}, {"Y": TensorProto.FLOAT}, inits)
    sess = check_q(m, {"X": x}, step=0)
    assert [t for _, t, _ in sess.get_provider_assignment()] == ["DynamicQuantizeLinear", "MatMulIntegerToFloat"]
    np.testing.assert_array_equal(sess.run(None, {"X": x})[0], _ort(m, {"X": x}, optimized=False)[0])


# ---- QDQ groups (nnwasm/qdq.py) ---------------------------------------------------------------

def _qdq(x_name, out, scale, zp, dt):
    """Q then DQ of x_name with constant parameters: (nodes, {initializers}), output `out`."""
    return ([helper.make_node("QuantizeLinear", [x_name, f"{out}_s", f"{out}_z"], [f"{out}_q"]),
             helper.make_node("DequantizeLinear", [f"{out}_q", f"{out}_s", f"{out}_z"], [out])],
            {f"{out}_s": np.float32(scale), f"{out}_z": np.array(dt(zp))})


@pytest.mark.parametrize("act,zp,fused", [(None, 128, True), ("Relu", 0, True), ("Relu", 100, False),
                                          ("Clip", 0, True), ("Clip", 30, False)])
@pytest.mark.parametrize("per_col", [False, True])
def test_qdq_matmul_group(act, zp, fused, per_col):
    """DQ(a), DQ(w) -> MatMul [-> Relu/Clip] -> Q: QLinearMatMul when the activation is the Q's own
    saturation, else left as Q/DQ around float ops; either way all on WASM and onnxruntime's result."""
    x = frand(5, 12)
    n = 7
    w_q = wrand(np.uint8, np.int8, 12, n)
    w_s = np.linspace(0.01, 0.03, n).astype(np.float32) if per_col else np.float32(0.02)
    nodes, inits = _qdq("X", "xd", 0.05, 128, np.uint8)
    nodes.append(helper.make_node("DequantizeLinear", ["Wq", "ws", "wz"], ["wd"], axis=1))
    inits.update(Wq=w_q, ws=w_s, wz=np.zeros(n, np.int8) if per_col else np.array(np.int8(0)))
    nodes.append(helper.make_node("MatMul", ["xd", "wd"], ["mm"]))
    last = "mm"
    if act == "Relu":
        nodes.append(helper.make_node("Relu", ["mm"], ["act"]))
        last = "act"
    elif act == "Clip":
        inits.update(lo=np.float32(0.0), hi=np.float32(50.0))
        nodes.append(helper.make_node("Clip", ["mm", "lo", "hi"], ["act"]))
        last = "act"
    q, qi = _qdq(last, "Y", 0.04, zp, np.uint8)
    nodes += q
    inits.update(qi)
    m = model(nodes, {"X": x}, {"Y": TensorProto.FLOAT}, inits)
    sess = check_q(m, {"X": x}, f32_atol=0.04)    # one step of Y
    types = [t for _, t, _ in sess.get_provider_assignment()]
    assert ("QLinearMatMul" in types) == fused and ("MatMul" in types) != fused


def test_qdq_movers_run_on_integers():
    """DQ -> Reshape/Transpose -> Q with the same parameters moves the integers themselves."""
    x = frand(2, 3, 4)
    nodes, inits = _qdq("X", "xd", 0.05, 10, np.int8)
    nodes += [helper.make_node("Reshape", ["xd", "shape"], ["r"]),
              helper.make_node("QuantizeLinear", ["r", "xd_s", "xd_z"], ["rq"]),
              helper.make_node("DequantizeLinear", ["rq", "xd_s", "xd_z"], ["rd"]),
              helper.make_node("Transpose", ["rd"], ["t"], perm=[1, 0]),
              helper.make_node("QuantizeLinear", ["t", "xd_s", "xd_z"], ["Y"])]
    inits["shape"] = np.array([6, 4], np.int64)
    sess = check_q(model(nodes, {"X": x}, {"Y": TensorProto.INT8}, inits), {"X": x}, step=0)
    assert [t for _, t, _ in sess.get_provider_assignment()] == ["QuantizeLinear", "Reshape", "Transpose"]


# ---- whole models: onnxruntime.quantization outputs ---------------------------------------------

def _ort(model_bytes, feeds, optimized=True):
    import onnxruntime
    so = onnxruntime.SessionOptions()
    if not optimized:
        so.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    return onnxruntime.InferenceSession(model_bytes, so, providers=["CPUExecutionProvider"]).run(None, feeds)


@pytest.fixture(scope="module")
def cnn():
    from quant_models import cnn_inputs, small_cnn
    return small_cnn(), cnn_inputs(14)


# per_channel without reduce_range is checked against onnxruntime's unoptimized (reference) run:
# its optimized x86 u8s8 kernels add pairs of products in saturating int16, which 8-bit weights
# overflow; onnxruntime recommends reduce_range there, and with it the optimized run is exact.
@pytest.mark.parametrize("per_channel,reduce_range,optimized", [(False, False, True), (True, True, True),
                                                                 (True, False, False)])
def test_qdq_cnn_runs_fused_on_wasm(cnn, per_channel, reduce_range, optimized):
    from quant_models import quantize_static_qdq
    model, xs = cnn
    qb = quantize_static_qdq(model, xs[:8], per_channel, reduce_range)
    sess = nnwasm.InferenceSession(qb, wasm_only_options(), providers=WASM_ONLY + ["NumpyExecutionProvider"])
    ops = [(t, p) for _, t, p in sess.get_provider_assignment()]
    assert {p for _, p in ops} == {"WasmExecutionProvider"}
    types = [t for t, _ in ops]
    assert types.count("QLinearConv") == 4 and types.count("QLinearAdd") == 2 and types.count("QGemm") == 1
    assert "Conv" not in types and "Gemm" not in types
    import onnx
    q = onnx.load_from_string(qb)
    step = float(onnx.numpy_helper.to_array(next(t for t in q.graph.initializer if t.name == "logits_scale")))
    for x in xs[8:]:
        got, want = sess.run(None, {"x": x})[0], _ort(qb, {"x": x}, optimized)[0]
        assert np.abs(got - want).max() <= step * 1.001
        assert got.argmax() == want.argmax()


# per_channel with reduce_range: onnxruntime's x86 u8s8 MatMulInteger saturates int16 pair sums of
# full-range int8 weights (its docs recommend reduce_range there); nnwasm's sums are exact.
@pytest.fixture(scope="module", params=[False, True], ids=["per_tensor", "per_channel_reduce_range"])
def bert(request):
    from quant_models import quantize_dynamic_bytes, small_bert
    model = small_bert()
    ids = [np.random.default_rng(s).integers(0, 50, (1, 8)).astype(np.int64) for s in range(3)]
    return model, quantize_dynamic_bytes(model, per_channel=request.param, reduce_range=request.param), ids


def _cosine(a, b):
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


def test_dynamic_bert_int8_ops_on_wasm(bert):
    """Every int8 node of onnxruntime's quantize_dynamic output runs on WASM, its MatMulInteger +
    Cast + Mul groups fused; the embedding agrees with onnxruntime's (cosine >= 0.999)."""
    _, qb, ids = bert
    sess = nnwasm.InferenceSession(qb, providers=WASM_ONLY + ["NumpyExecutionProvider"])
    placed = sess.get_provider_assignment()
    assert "Cast" not in {t for _, t, _ in placed} and "MatMulInteger" not in {t for _, t, _ in placed}
    int8_ops = {"MatMulIntegerToFloat", "DynamicQuantizeLinear", "DequantizeLinear"}
    assert {t for _, t, _ in placed} >= int8_ops
    assert {p for _, t, p in placed if t in int8_ops} == {"WasmExecutionProvider"}
    assert {p for _, _, p in placed} == {"WasmExecutionProvider"}
    for x in ids:
        got, want = sess.run(None, {"ids": x})[0], _ort(qb, {"ids": x})[0]
        assert _cosine(got, want) >= 0.999


def test_dynamic_bert_entirely_on_wasm(bert):
    _, qb, ids = bert
    sess = nnwasm.InferenceSession(qb, wasm_only_options(), providers=WASM_ONLY + ["NumpyExecutionProvider"])
    for x in ids:
        assert _cosine(sess.run(None, {"ids": x})[0], _ort(qb, {"ids": x})[0]) >= 0.999


NO_NUMPY = r"""
import json, sys
sys.modules["numpy"] = None            # any import of numpy now raises ImportError
sys.path.insert(0, sys.argv[1])
import nnwasm
from nnwasm import dtypes
from nnwasm.tensor import TensorData
sess = nnwasm.InferenceSession(sys.argv[2])
y, = sess._run_raw(None, {"x": TensorData(dtypes.FLOAT32, (1, 3, 16, 16), open(sys.argv[3], "rb").read())})
print(json.dumps({"y": y.tolist(), "providers": sorted({p for _, _, p in sess.get_provider_assignment()}),
                  "numpy_loaded": sys.modules.get("numpy") is not None}))
"""


def test_qdq_cnn_runs_without_numpy(cnn, tmp_path):
    """As in Pyodide: the QDQ fusion, the int8 lowerings and the plan need no numpy."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    from quant_models import quantize_static_qdq
    model, xs = cnn
    qb = quantize_static_qdq(model, xs[:8], per_channel=True, reduce_range=True)
    (tmp_path / "q.onnx").write_bytes(qb)
    (tmp_path / "x.bin").write_bytes(xs[9].tobytes())
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.run([sys.executable, "-c", NO_NUMPY, str(root / "py_runtime"), str(tmp_path / "q.onnx"),
                           str(tmp_path / "x.bin")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["providers"] == ["WasmExecutionProvider"] and not out["numpy_loaded"]
    np.testing.assert_array_equal(np.array(out["y"], np.float32).reshape(1, 10), _ort(qb, {"x": xs[9]})[0])


def test_qlinear_conv_without_output_zero_point_and_missing_scale():
    """QLinearConv's y_zero_point and scales are required (onnx's schema; onnxruntime refuses the
    model without them, issue 18): a clear InvalidModel at creation, on every provider."""
    x = qrand(np.uint8, 1, 2, 5, 5)
    inits = {"W": qrand(np.int8, 3, 2, 3, 3), "x_s": np.float32(0.03), "x_z": np.array(np.uint8(9)),
             "w_s": np.float32(0.01), "w_z": np.array(np.int8(0)), "y_s": np.float32(0.2)}
    for providers in (WASM_ONLY, ["NumpyExecutionProvider"]):
        m = model([helper.make_node("QLinearConv", ["X", "x_s", "x_z", "W", "w_s", "w_z", "y_s", ""], ["Y"])],
                  {"X": x}, {"Y": TensorProto.UINT8}, inits, opset=10)
        with pytest.raises(nnwasm.InvalidModel, match="input 7 is empty, but ai.onnx's QLinearConv requires it"):
            nnwasm.InferenceSession(m, providers=providers)
    bad = model([helper.make_node("QLinearConv", ["X", "x_s", "x_z", "W", "", "w_z", "y_s"], ["Y"])], {"X": x},
                {"Y": TensorProto.UINT8}, inits, opset=10)
    with pytest.raises(nnwasm.InvalidModel, match="QLinearConv.* has 7 inputs; ai.onnx's QLinearConv takes 8 to 9"):
        nnwasm.InferenceSession(bad)
    bad = model([helper.make_node("QLinearConv", ["X", "x_s", "x_z", "W", "", "w_z", "y_s", "y_z"], ["Y"])], {"X": x},
                {"Y": TensorProto.UINT8}, {**inits, "y_z": np.array(np.uint8(0))}, opset=10)
    with pytest.raises(nnwasm.InvalidModel, match="input 4 is empty"):
        nnwasm.InferenceSession(bad)


def test_nonconstant_requantization_scales_fall_back_to_numpy():
    """The kernels take the multiplier prepared at plan build: a QLinearConv whose scales are
    inputs is refused (with a reason) and runs on numpy."""
    x = qrand(np.uint8, 1, 2, 5, 5)
    ys = np.array(0.05, np.float32)
    inits = {"W": qrand(np.int8, 3, 2, 3, 3), "x_s": np.float32(0.03), "x_z": np.array(np.uint8(9)),
             "w_s": np.float32(0.01), "w_z": np.array(np.int8(0)), "y_z": np.array(np.uint8(4))}
    node = helper.make_node("QLinearConv", ["X", "x_s", "x_z", "W", "w_s", "w_z", "ys", "y_z"], ["Y"], name="qc")
    m = model([node], {"X": x, "ys": ys}, {"Y": TensorProto.UINT8}, inits, opset=10)
    sess = nnwasm.InferenceSession(m)
    assert sess.get_provider_assignment() == [("qc", "QLinearConv", "NumpyExecutionProvider")]
    np.testing.assert_array_equal(sess.run(None, {"X": x, "ys": ys})[0], ort_run(m, {"X": x, "ys": ys})[0])
