"""The graph optimizer (py_runtime/nnwasm/optimizer/): each pass on small graphs (the rewrite
happened: op types of the optimized model saved with optimized_model_filepath and read back with
onnx), every level agreeing with ORT_DISABLE_ALL and with onnxruntime, the saved model running in
onnxruntime, float16 models, and folding without numpy (Pyodide) through the WASM provider."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import nnwasm
from model_builders import graph_model, ort_run, rand
from nnwasm import GraphOptimizationLevel as L

LEVELS = [L.ORT_DISABLE_ALL, L.ORT_ENABLE_BASIC, L.ORT_ENABLE_EXTENDED, L.ORT_ENABLE_ALL]
NUMPY = ["NumpyExecutionProvider"]
ROOT = Path(__file__).resolve().parent.parent


def optimized(model, tmp_path, level=L.ORT_ENABLE_ALL, providers=None):
    """(session, the optimized model as onnx.ModelProto)."""
    so = nnwasm.SessionOptions()
    so.graph_optimization_level = level
    so.optimized_model_filepath = str(tmp_path / f"opt{int(level)}.onnx")
    sess = nnwasm.InferenceSession(model, so, providers=providers)
    saved = onnx.load(so.optimized_model_filepath)
    return sess, saved


def ops(m):
    return [n.op_type for n in m.graph.node]


def agree(model, feeds, tmp_path, providers=None, rtol=1e-4, atol=1e-5):
    """Every level gives onnxruntime's answers; the optimized file too, run in onnxruntime.
    Returns the ALL-level (session, saved model)."""
    want = ort_run(model, feeds)
    for level in LEVELS:
        sess, saved = optimized(model, tmp_path, level, providers)
        for got, w, o in zip(sess.run(None, feeds), want, ort_run(saved.SerializeToString(), feeds)):
            assert got.shape == w.shape and got.dtype == w.dtype
            np.testing.assert_allclose(got, w, rtol=rtol, atol=atol)
            np.testing.assert_allclose(o, w, rtol=rtol, atol=atol)
    return sess, saved


def by_provider(sess):
    return sorted({p for _, _, p in sess.get_provider_assignment()})


# --- constant folding ----------------------------------------------------------------------

def test_fold_transpose_reshape_mul_chain_on_wasm(tmp_path):
    w = rand(6, 4, seed=1)
    nodes = [helper.make_node("Transpose", ["W"], ["wt"], perm=[1, 0]),
             helper.make_node("Reshape", ["wt", "shape"], ["wr"]),
             helper.make_node("Mul", ["wr", "scale"], ["ws"]),
             helper.make_node("MatMul", ["X", "ws"], ["Y"])]
    model = graph_model(nodes, {"X": rand(3, 4)}, ["Y"], {"W": w, "shape": np.array([4, 6], np.int64),
                                                          "scale": np.float32(0.5)})
    sess, saved = agree(model, {"X": rand(3, 4)}, tmp_path)
    assert ops(saved) == ["MatMul"]
    assert len(saved.graph.initializer) == 1
    # the WASM provider alone folds the chain too (no numpy fallback)
    so = nnwasm.SessionOptions()
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    wasm = nnwasm.InferenceSession(model, so)
    assert wasm.get_provider_assignment() == [("", "MatMul", "WasmExecutionProvider")]


def test_fold_cast_mul_chain(tmp_path):
    """int8 weights dequantized by hand (Cast, Mul), round-tripped through float16."""
    q = np.random.default_rng(0).integers(-100, 100, (8, 3, 3, 3)).astype(np.int8)
    nodes = [helper.make_node("Cast", ["Q"], ["qf"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["qf", "s"], ["wd"]),
             helper.make_node("Cast", ["wd"], ["w16"], to=TensorProto.FLOAT16),
             helper.make_node("Cast", ["w16"], ["w"], to=TensorProto.FLOAT),
             helper.make_node("Conv", ["X", "w"], ["Y"], pads=[1, 1, 1, 1])]
    model = graph_model(nodes, {"X": rand(1, 3, 8, 8)}, ["Y"], {"Q": q, "s": np.float32(0.02)})
    sess, saved = agree(model, {"X": rand(1, 3, 8, 8)}, tmp_path, rtol=1e-3, atol=1e-4)
    assert ops(saved) == ["Conv"]
    assert by_provider(sess) == ["WasmExecutionProvider"]


def test_no_fold_of_big_expansions(tmp_path):
    nodes = [helper.make_node("Expand", ["c", "shape"], ["big"]),
             helper.make_node("Add", ["X", "big"], ["Y"])]
    model = graph_model(nodes, {"X": rand(256, 512)}, ["Y"], {"c": rand(512), "shape": np.array([256, 512], np.int64)})
    _, saved = agree(model, {"X": rand(256, 512)}, tmp_path)
    assert ops(saved) == ["Expand", "Add"]


def test_random_ops_are_never_folded():
    from nnwasm.optimizer.const_fold import foldable
    from nnwasm.ir import Graph, Node, ValueInfo
    from nnwasm.tensor import TensorData
    g = Graph([], [], [], {"s": TensorData(nnwasm.dtypes.INT64, (1,), (2).to_bytes(8, "little"))})
    g.values["r"] = ValueInfo("r", nnwasm.dtypes.FLOAT32, (2,))
    assert not foldable(Node("RandomNormalLike", ["s"], ["r"]), g)
    assert foldable(Node("Neg", ["s"], ["r"]), g)


def test_dead_nodes_and_unused_initializers_go(tmp_path):
    nodes = [helper.make_node("Relu", ["X"], ["Y"]),
             helper.make_node("Sigmoid", ["X"], ["unused"]),
             helper.make_node("Add", ["unused", "K"], ["unused2"])]
    model = graph_model(nodes, {"X": rand(4)}, ["Y"], {"K": rand(4), "never": rand(3)})
    sess, saved = agree(model, {"X": rand(4)}, tmp_path)
    assert ops(saved) == ["Relu"] and len(saved.graph.initializer) == 0
    _, kept = optimized(model, tmp_path, L.ORT_DISABLE_ALL)
    assert ops(kept) == ["Relu", "Sigmoid", "Add"]


# --- BatchNormalization and Conv / Gemm ------------------------------------------------------

def _bn_inits(c, seed=3):
    rng = np.random.default_rng(seed)
    return {"sc": rng.uniform(0.5, 2, c).astype(np.float32), "bb": rand(c, seed=seed),
            "mu": rand(c, seed=seed + 1), "var": rng.uniform(0.5, 2, c).astype(np.float32)}


@pytest.mark.parametrize("bias", [True, False])
def test_batch_norm_folds_into_conv(tmp_path, bias):
    inits = {"W": rand(6, 3, 3, 3, seed=1), **_bn_inits(6)}
    conv_in = ["X", "W"] + (["B"] if bias else [])
    if bias:
        inits["B"] = rand(6, seed=2)
    nodes = [helper.make_node("Conv", conv_in, ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "sc", "bb", "mu", "var"], ["Y"], epsilon=1e-3)]
    model = graph_model(nodes, {"X": rand(2, 3, 7, 7)}, ["Y"], inits)
    sess, saved = agree(model, {"X": rand(2, 3, 7, 7)}, tmp_path)
    assert ops(saved) == ["Conv"]
    assert by_provider(sess) == ["WasmExecutionProvider"]


def test_batch_norm_folds_into_conv_transpose(tmp_path):
    inits = {"W": rand(3, 5, 3, 3, seed=1), "B": rand(5, seed=2), **_bn_inits(5)}
    nodes = [helper.make_node("ConvTranspose", ["X", "W", "B"], ["c"], strides=[2, 2]),
             helper.make_node("BatchNormalization", ["c", "sc", "bb", "mu", "var"], ["Y"])]
    model = graph_model(nodes, {"X": rand(1, 3, 4, 4)}, ["Y"], inits)
    _, saved = agree(model, {"X": rand(1, 3, 4, 4)}, tmp_path)
    assert ops(saved) == ["ConvTranspose"]


@pytest.mark.parametrize("trans_b", [0, 1])
def test_batch_norm_folds_into_gemm(tmp_path, trans_b):
    inits = {"W": rand(*((5, 4) if trans_b else (4, 5)), seed=1), "C": rand(5, seed=2), **_bn_inits(5)}
    nodes = [helper.make_node("Gemm", ["X", "W", "C"], ["g"], transB=trans_b, beta=0.5),
             helper.make_node("BatchNormalization", ["g", "sc", "bb", "mu", "var"], ["Y"])]
    model = graph_model(nodes, {"X": rand(3, 4)}, ["Y"], inits)
    _, saved = agree(model, {"X": rand(3, 4)}, tmp_path)
    assert ops(saved) == ["Gemm"]


def test_conv_mul_add_relu_becomes_one_fused_conv(tmp_path):
    """Old exporters write BatchNormalization as Mul and Add by per-channel constants."""
    inits = {"W": rand(4, 2, 3, 3, seed=1), "s": rand(4, 1, 1, seed=2), "t": rand(1, 4, 1, 1, seed=3)}
    nodes = [helper.make_node("Conv", ["X", "W"], ["c"]), helper.make_node("Mul", ["c", "s"], ["m"]),
             helper.make_node("Add", ["t", "m"], ["a"]), helper.make_node("Relu", ["a"], ["Y"])]
    model = graph_model(nodes, {"X": rand(1, 2, 6, 6)}, ["Y"], inits)
    sess, saved = agree(model, {"X": rand(1, 2, 6, 6)}, tmp_path)
    assert ops(saved) == ["FusedConv"]
    assert [o.domain for o in saved.opset_import if o.domain] == ["com.microsoft"]
    _, basic = optimized(model, tmp_path, L.ORT_ENABLE_BASIC)
    assert ops(basic) == ["Conv", "Relu"]


def test_conv_with_two_readers_is_not_folded(tmp_path):
    inits = {"W": rand(4, 2, 1, 1, seed=1), **_bn_inits(4)}
    nodes = [helper.make_node("Conv", ["X", "W"], ["c"]),
             helper.make_node("BatchNormalization", ["c", "sc", "bb", "mu", "var"], ["Y"]),
             helper.make_node("Relu", ["c"], ["Z"])]
    model = graph_model(nodes, {"X": rand(1, 2, 5, 5)}, ["Y", "Z"], inits)
    _, saved = agree(model, {"X": rand(1, 2, 5, 5)}, tmp_path)
    assert "BatchNormalization" in ops(saved)


# --- fusions -----------------------------------------------------------------------------------

ACTS = {
    "Relu": (helper.make_node("Relu", ["a"], ["Y"]), {}),
    "Clip": (helper.make_node("Clip", ["a", "lo", "hi"], ["Y"]), {"lo": np.float32(-0.5), "hi": np.float32(1)}),
    "Sigmoid": (helper.make_node("Sigmoid", ["a"], ["Y"]), {}),
    "Tanh": (helper.make_node("Tanh", ["a"], ["Y"]), {}),
    "LeakyRelu": (helper.make_node("LeakyRelu", ["a"], ["Y"], alpha=0.2), {}),
    "HardSigmoid": (helper.make_node("HardSigmoid", ["a"], ["Y"], alpha=0.3, beta=0.4), {}),
}
ON_WASM = {"Relu", "Clip", "Sigmoid", "Tanh"}


@pytest.mark.parametrize("residual", [False, True])
@pytest.mark.parametrize("act", sorted(ACTS))
def test_conv_activation_fusion(tmp_path, act, residual):
    act_node, extra = ACTS[act]
    inits = {"W": rand(4, 3, 3, 3, seed=1), "B": rand(4, seed=2), **extra}
    feeds = {"X": rand(1, 3, 6, 6)}
    if residual:
        nodes = [helper.make_node("Conv", ["X", "W", "B"], ["c"], pads=[1, 1, 1, 1]),
                 helper.make_node("Add", ["c", "Z"], ["a"]), act_node]
        feeds["Z"] = rand(1, 4, 6, 6, seed=5)
    else:
        nodes = [helper.make_node("Conv", ["X", "W", "B"], ["a"], pads=[1, 1, 1, 1]), act_node]
    model = graph_model(nodes, feeds, ["Y"], inits)
    sess, saved = agree(model, feeds, tmp_path)
    if act in ON_WASM:
        assert ops(saved) == ["FusedConv"] and by_provider(sess) == ["WasmExecutionProvider"]
        assert len(saved.graph.node[0].input) == (4 if residual else 3)
    else:   # kernels.wasm lacks the activation: fusing would move the Conv to numpy
        assert "Conv" in ops(saved)
        _, numpy_only = agree(model, feeds, tmp_path, providers=NUMPY)
        assert ops(numpy_only) == ["FusedConv"]


@pytest.mark.parametrize("act", ["Relu", "Sigmoid", "Tanh", "LeakyRelu"])
def test_gemm_activation_fusion(tmp_path, act):
    act_node, _ = ACTS[act]
    nodes = [helper.make_node("Gemm", ["X", "W", "C"], ["a"], transB=1, alpha=0.7), act_node]
    model = graph_model(nodes, {"X": rand(3, 5)}, ["Y"], {"W": rand(4, 5, seed=1), "C": rand(4, seed=2)})
    providers = None if act in ON_WASM else NUMPY
    sess, saved = agree(model, {"X": rand(3, 5)}, tmp_path, providers=providers)
    assert ops(saved) == ["FusedGemm"]


@pytest.mark.parametrize("c_shape", [(4,), (1, 4), (3, 4), (3, 1)])
def test_matmul_add_becomes_gemm(tmp_path, c_shape):
    nodes = [helper.make_node("MatMul", ["X", "W"], ["m"]), helper.make_node("Add", ["C", "m"], ["Y"])]
    model = graph_model(nodes, {"X": rand(3, 5)}, ["Y"], {"W": rand(5, 4, seed=1), "C": rand(*c_shape, seed=2)})
    sess, saved = agree(model, {"X": rand(3, 5)}, tmp_path)
    assert ops(saved) == ["Gemm"]


def test_nd_matmul_add_stays(tmp_path):
    nodes = [helper.make_node("MatMul", ["X", "W"], ["m"]), helper.make_node("Add", ["m", "C"], ["Y"])]
    model = graph_model(nodes, {"X": rand(2, 3, 5)}, ["Y"], {"W": rand(5, 4, seed=1), "C": rand(4, seed=2)})
    _, saved = agree(model, {"X": rand(2, 3, 5)}, tmp_path)
    assert ops(saved) == ["MatMul", "Add"]


def test_symbolic_batch_is_fused_per_shape(tmp_path):
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 3, 6, 6])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)
    inits = [onnx.numpy_helper.from_array(rand(4, 3, 3, 3, seed=1), "W")]
    g = helper.make_graph([helper.make_node("Conv", ["X", "W"], ["a"]), helper.make_node("Relu", ["a"], ["Y"])],
                          "g", [x], [y], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    sess = nnwasm.InferenceSession(model.SerializeToString())
    for n in (1, 3):
        feeds = {"X": rand(n, 3, 6, 6)}
        np.testing.assert_allclose(sess.run(None, feeds)[0], ort_run(model.SerializeToString(), feeds)[0],
                                   rtol=1e-4, atol=1e-5)
        assert sess.get_provider_assignment() == [("", "FusedConv", "WasmExecutionProvider")]


# --- transformer patterns ------------------------------------------------------------------------

def _layer_norm_nodes(square, divide, opset):
    axes = {"axes": [-1]} if opset < 18 else {}
    ax_in = [] if opset < 18 else ["axes"]
    nodes = [helper.make_node("ReduceMean", ["X"] + ax_in, ["m"], **axes),
             helper.make_node("Sub", ["X", "m"], ["d"]),
             helper.make_node("Pow", ["d", "two"], ["p"]) if square == "pow" else helper.make_node("Mul", ["d", "d"], ["p"]),
             helper.make_node("ReduceMean", ["p"] + ax_in, ["v"], **axes),
             helper.make_node("Add", ["v", "eps"], ["ve"]),
             helper.make_node("Sqrt", ["ve"], ["s"])]
    if divide == "div":
        nodes.append(helper.make_node("Div", ["d", "s"], ["n"]))
    else:
        nodes += [helper.make_node("Reciprocal", ["s"], ["r"]), helper.make_node("Mul", ["d", "r"], ["n"])]
    nodes += [helper.make_node("Mul", ["n", "gamma"], ["g"]), helper.make_node("Add", ["beta", "g"], ["Y"])]
    return nodes


@pytest.mark.parametrize("opset", [13, 17, 18])
@pytest.mark.parametrize("square,divide", [("pow", "div"), ("mul", "div"), ("pow", "reciprocal")])
def test_layer_norm_fusion(tmp_path, square, divide, opset):
    inits = {"two": np.float32(2), "eps": np.float32(1e-5), "gamma": rand(16, seed=1), "beta": rand(16, seed=2)}
    if opset >= 18:
        inits["axes"] = np.array([-1], np.int64)
    model = graph_model(_layer_norm_nodes(square, divide, opset), {"X": rand(2, 5, 16)}, ["Y"], inits, opset=opset)
    sess, saved = agree(model, {"X": rand(2, 5, 16)}, tmp_path, providers=NUMPY)
    assert ops(saved) == ["LayerNormalization"]
    # with kernels.wasm first, the fusion waits for a WASM LayerNormalization kernel
    from nnwasm.wasm.lowering import LOWERINGS
    _, default = optimized(model, tmp_path)
    assert (ops(default) == ["LayerNormalization"]) == ("LayerNormalization" in LOWERINGS)


def _gelu_tail(order, y_in):
    if order == "x_then_half":
        return [helper.make_node("Mul", ["X", y_in], ["xm"]), helper.make_node("Mul", ["xm", "half"], ["Y"])]
    if order == "half_then_x":
        return [helper.make_node("Mul", [y_in, "half"], ["hm"]), helper.make_node("Mul", ["X", "hm"], ["Y"])]
    return [helper.make_node("Mul", ["X", "half"], ["xh"]), helper.make_node("Mul", ["xh", y_in], ["Y"])]


@pytest.mark.parametrize("opset", [13, 20])
@pytest.mark.parametrize("order", ["x_then_half", "half_then_x", "half_x_first"])
def test_gelu_erf_fusion(tmp_path, order, opset):
    nodes = [helper.make_node("Div", ["X", "sqrt2"], ["a"]), helper.make_node("Erf", ["a"], ["e"]),
             helper.make_node("Add", ["e", "one"], ["b"])] + _gelu_tail(order, "b")
    inits = {"sqrt2": np.float32(np.sqrt(2)), "one": np.float32(1), "half": np.float32(0.5)}
    model = graph_model(nodes, {"X": rand(3, 7)}, ["Y"], inits, opset=opset)
    _, saved = agree(model, {"X": rand(3, 7)}, tmp_path, providers=NUMPY)
    assert ops(saved) == ["Gelu"]
    assert saved.graph.node[0].domain == ("" if opset >= 20 else "com.microsoft")


@pytest.mark.parametrize("opset", [13, 20])
@pytest.mark.parametrize("cube", ["pow", "mul"])
def test_gelu_tanh_fusion(tmp_path, cube, opset):
    if cube == "pow":
        head = [helper.make_node("Pow", ["X", "three"], ["c"])]
    else:
        head = [helper.make_node("Mul", ["X", "X"], ["sq"]), helper.make_node("Mul", ["X", "sq"], ["c"])]
    nodes = head + [helper.make_node("Mul", ["c", "k"], ["q"]), helper.make_node("Add", ["X", "q"], ["r"]),
                    helper.make_node("Mul", ["r", "s2pi"], ["s"]), helper.make_node("Tanh", ["s"], ["t"]),
                    helper.make_node("Add", ["t", "one"], ["b"])] + _gelu_tail("half_x_first", "b")
    inits = {"three": np.float32(3), "k": np.float32(0.044715), "s2pi": np.float32(np.sqrt(2 / np.pi)),
             "one": np.float32(1), "half": np.float32(0.5)}
    model = graph_model(nodes, {"X": rand(3, 7)}, ["Y"], inits, opset=opset)
    _, saved = agree(model, {"X": rand(3, 7)}, tmp_path, providers=NUMPY)
    assert ops(saved) == (["Gelu"] if opset >= 20 else ["FastGelu"])


def _attention_model(scale_op, mask_shape, opset=14):
    """BERT's exported eager attention: q, k, v [2, 5, 12] with 3 heads of 4 (k, v over 6 keys)."""
    nodes = [helper.make_node("Reshape", ["Q", "qshape"], ["q4"]),
             helper.make_node("Transpose", ["q4"], ["qt"], perm=[0, 2, 1, 3]),
             helper.make_node("Reshape", ["K", "kshape"], ["k4"]),
             helper.make_node("Transpose", ["k4"], ["kt"], perm=[0, 2, 3, 1]),
             helper.make_node("Reshape", ["V", "kshape"], ["v4"]),
             helper.make_node("Transpose", ["v4"], ["vt"], perm=[0, 2, 1, 3]),
             helper.make_node("MatMul", ["qt", "kt"], ["qk"]),
             helper.make_node(scale_op, ["qk", "c"], ["sc"])]
    x = "sc"
    if mask_shape is not None:
        nodes.append(helper.make_node("Add", ["sc", "M"], ["sm_in"]))
        x = "sm_in"
    nodes += [helper.make_node("Softmax", [x], ["p"], axis=-1),
              helper.make_node("MatMul", ["p", "vt"], ["o4"]),
              helper.make_node("Transpose", ["o4"], ["ot"], perm=[0, 2, 1, 3]),
              helper.make_node("Reshape", ["ot", "oshape"], ["Y"])]
    feeds = {"Q": rand(2, 5, 12), "K": rand(2, 6, 12, seed=1), "V": rand(2, 6, 12, seed=2)}
    if mask_shape is not None:
        feeds["M"] = rand(*mask_shape, seed=3) * 3
    inits = {"qshape": np.array([2, 5, 3, 4], np.int64), "kshape": np.array([2, 6, 3, 4], np.int64),
             "oshape": np.array([2, 5, 12], np.int64), "c": np.float32(0.5 if scale_op == "Mul" else 2.0)}
    return graph_model(nodes, feeds, ["Y"], inits, opset=opset), feeds


@pytest.mark.parametrize("scale_op,mask_shape", [("Mul", (1, 1, 5, 6)), ("Div", (2, 1, 5, 6)),
                                                 ("Mul", (2, 3, 5, 6)), ("Div", None)])
def test_attention_fusion(tmp_path, scale_op, mask_shape):
    model, feeds = _attention_model(scale_op, mask_shape)
    for providers in (None, NUMPY):
        sess, saved = agree(model, feeds, tmp_path, providers=providers)
        assert ops(saved) == ["MultiHeadAttention"]
    assert [a[1:] for a in sess.get_provider_assignment()] == [("MultiHeadAttention", "NumpyExecutionProvider")]
    sess = nnwasm.InferenceSession(model)
    assert [a[1:] for a in sess.get_provider_assignment()] == [("MultiHeadAttention", "WasmExecutionProvider")]


def test_attention_read_elsewhere_stays(tmp_path):
    """The scores are a graph output too: nothing fuses."""
    model, feeds = _attention_model("Mul", (1, 1, 5, 6))
    proto = onnx.load_from_string(model)
    proto.graph.output.append(helper.make_tensor_value_info("p", TensorProto.FLOAT, None))
    _, saved = agree(proto.SerializeToString(), feeds, tmp_path)
    assert "MultiHeadAttention" not in ops(saved)


# --- float16 models ------------------------------------------------------------------------------

def _small_cnn():
    nodes = [helper.make_node("Conv", ["X", "W", "B"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("GlobalAveragePool", ["r"], ["p"]),
             helper.make_node("Flatten", ["p"], ["f"]),
             helper.make_node("Gemm", ["f", "G", "C"], ["Y"], transB=1)]
    inits = {"W": rand(8, 3, 3, 3, seed=1), "B": rand(8, seed=2), "G": rand(5, 8, seed=3), "C": rand(5, seed=4)}
    return graph_model(nodes, {"X": rand(1, 3, 8, 8)}, ["Y"], inits)


@pytest.mark.parametrize("keep_io_types", [False, True])
def test_float16_model_computes_in_float32(tmp_path, keep_io_types):
    float16 = pytest.importorskip("onnxconverter_common.float16")
    model = float16.convert_float_to_float16(onnx.load_from_string(_small_cnn()), keep_io_types=keep_io_types)
    data = model.SerializeToString()
    x = rand(1, 3, 8, 8)
    x = x if keep_io_types else x.astype(np.float16)
    want = ort_run(data, {"X": x})[0]
    sess, saved = optimized(data, tmp_path)
    got = sess.run(None, {"X": x})[0]
    assert got.dtype == want.dtype == (np.float32 if keep_io_types else np.float16)
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=1e-2, atol=1e-2)
    assert all(t.data_type == TensorProto.FLOAT for t in saved.graph.initializer)
    kernels = [op for op in ops(saved) if op != "Cast"]
    assert kernels == ["FusedConv", "GlobalAveragePool", "Flatten", "Gemm"]
    assert ops(saved).count("Cast") == (0 if keep_io_types else 2)
    assert {p for _, op, p in sess.get_provider_assignment() if op != "Cast"} == {"WasmExecutionProvider"}
    np.testing.assert_allclose(ort_run(saved.SerializeToString(), {"X": x})[0].astype(np.float32),
                               got.astype(np.float32), rtol=1e-3, atol=1e-3)
    off = nnwasm.SessionOptions()
    off.graph_optimization_level = L.ORT_DISABLE_ALL
    ref = nnwasm.InferenceSession(data, off).run(None, {"X": x})[0]
    np.testing.assert_allclose(ref.astype(np.float32), want.astype(np.float32), rtol=1e-2, atol=1e-2)


# --- without numpy (Pyodide) -----------------------------------------------------------------------

NO_NUMPY = r"""
import json, sys
sys.modules["numpy"] = None
sys.path.insert(0, sys.argv[1])
import nnwasm
sess = nnwasm.InferenceSession(sys.argv[2])
print(json.dumps(sess.get_provider_assignment()))
"""


def test_folding_without_numpy_uses_wasm(tmp_path):
    inits = {"W": rand(4, 3, 3, 3, seed=1), **_bn_inits(4)}
    nodes = [helper.make_node("Transpose", ["W"], ["wt"], perm=[0, 1, 3, 2]),
             helper.make_node("Conv", ["X", "wt"], ["c"]),
             helper.make_node("BatchNormalization", ["c", "sc", "bb", "mu", "var"], ["a"]),
             helper.make_node("Relu", ["a"], ["Y"])]
    (tmp_path / "m.onnx").write_bytes(graph_model(nodes, {"X": rand(1, 3, 6, 6)}, ["Y"], inits))
    proc = subprocess.run([sys.executable, "-c", NO_NUMPY, str(ROOT / "py_runtime"), str(tmp_path / "m.onnx")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout) == [["", "FusedConv", "WasmExecutionProvider"]]


# --- real models -----------------------------------------------------------------------------------

@pytest.mark.parametrize("name,most_nodes", [("light_squeezenet", 40), ("light_inception_v2", 100)])
def test_real_model_optimized_file_runs_in_onnxruntime(tmp_path, name, most_nodes):
    path = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / f"{name}.onnx"
    sess, saved = optimized(str(path), tmp_path)
    assert len(saved.graph.node) <= most_nodes < len(onnx.load(str(path)).graph.node)
    assert "FusedConv" in ops(saved) and "BatchNormalization" not in ops(saved)
    x = np.random.default_rng(3).standard_normal([d if isinstance(d, int) else 1 for d in sess.get_inputs()[0].shape])
    feeds = {sess.get_inputs()[0].name: x.astype(np.float32)}
    want = ort_run(path.read_bytes(), feeds)[0]
    for got in (sess.run(None, feeds)[0], ort_run(saved.SerializeToString(), feeds)[0]):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * max(1.0, float(np.abs(want).max())))


def test_float16_data_movement_stays_float16(tmp_path):
    """A graph kernels.wasm runs whole in float16 (bytes moved) stays whole on kernels.wasm: the
    float32 rewrite's boundary Casts run there too."""
    nodes = [helper.make_node("Transpose", ["X"], ["t"], perm=[1, 0]), helper.make_node("Reshape", ["t", "s"], ["Y"])]
    model = graph_model(nodes, {"X": rand(3, 4).astype(np.float16)}, ["Y"], {"s": np.array([2, 6], np.int64)})
    sess, saved = optimized(model, tmp_path)
    assert ops(saved) == ["Cast", "Transpose", "Reshape", "Cast"] and by_provider(sess) == ["WasmExecutionProvider"]
    _, numpy_only = optimized(model, tmp_path, providers=NUMPY)
    assert ops(numpy_only) == ["Cast", "Transpose", "Reshape", "Cast"]


@pytest.mark.parametrize("opset", [13, 17])
def test_torch_transformer_block_patterns(tmp_path, opset):
    """LayerNorm and both GELUs as torch's TorchScript exporter writes them (decomposed before
    opset 17), fused with the numpy provider alone, matching onnxruntime."""
    torch = pytest.importorskip("torch")

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = torch.nn.LayerNorm(16), torch.nn.LayerNorm(16)
            self.fc1, self.fc2 = torch.nn.Linear(16, 32), torch.nn.Linear(32, 16)
            self.gelu, self.fast = torch.nn.GELU(), torch.nn.GELU(approximate="tanh")

        def forward(self, x):
            return self.ln2(x + self.fast(self.fc2(self.gelu(self.fc1(self.ln1(x))))))

    torch.manual_seed(0)
    x = torch.randn(2, 5, 16)
    path = tmp_path / "block.onnx"
    torch.onnx.export(Block().eval(), (x,), str(path), input_names=["x"], output_names=["y"], opset_version=opset,
                      dynamo=False)
    _, saved = agree(path.read_bytes(), {"x": x.numpy()}, tmp_path, providers=NUMPY)
    # the residual Add and the second LayerNorm: SkipLayerNormalization (optimizer/norm_fusions.py)
    assert sorted(ops(saved)) == sorted(["LayerNormalization", "SkipLayerNormalization"] + ["MatMul", "Add"] * 2
                                        + ["Gelu", "FastGelu"])


def test_float16_model_with_symbolic_batch(tmp_path):
    float16 = pytest.importorskip("onnxconverter_common.float16")
    model = onnx.load_from_string(_small_cnn())
    for v in (model.graph.input[0], model.graph.output[0]):
        v.type.tensor_type.shape.dim[0].dim_param = "N"
    data = float16.convert_float_to_float16(model).SerializeToString()
    sess = nnwasm.InferenceSession(data)
    for n in (1, 2):
        x = rand(n, 3, 8, 8).astype(np.float16)
        got, want = sess.run(None, {"X": x})[0], ort_run(data, {"X": x})[0]
        assert got.dtype == np.float16 and got.shape == want.shape
        np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=1e-2, atol=1e-2)
        assert {p for _, op, p in sess.get_provider_assignment() if op != "Cast"} == {"WasmExecutionProvider"}
