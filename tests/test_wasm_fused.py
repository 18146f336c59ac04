"""onnxruntime's fused contrib ops (com.microsoft FusedConv, FusedGemm) written directly in a
model, run on kernels.wasm alone against the numpy reference (ops/contrib.py) and onnxruntime."""
import numpy as np
import onnx
import pytest
from onnx import helper

from model_builders import rand
from test_wasm_ops import check

MS = "com.microsoft"


def ms_model(node, inputs, inits, opset=13):
    g = helper.make_graph([node], "g",
                          [helper.make_tensor_value_info(k, onnx.TensorProto.FLOAT, v.shape) for k, v in inputs.items()],
                          [helper.make_tensor_value_info("Y", onnx.TensorProto.FLOAT, None)],
                          [onnx.numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(MS, 1)])
    m.ir_version = 8
    return m.SerializeToString()


CONV_ACTS = [("Relu", None), ("Clip", [-0.3, 0.8]), ("Sigmoid", None), ("Tanh", None)]


@pytest.mark.parametrize("z", [False, True])
@pytest.mark.parametrize("act,params", CONV_ACTS)
@pytest.mark.parametrize("shape,w,attrs", [
    ((1, 4, 7, 9), (6, 2, 3, 3), dict(group=2, pads=[1, 1, 1, 1])),
    ((2, 3, 8, 8), (5, 3, 3, 3), dict(strides=[2, 2], pads=[0, 1, 1, 0])),
    ((1, 4, 12), (4, 1, 3), dict(group=4, pads=[1, 1])),
])
def test_fused_conv(shape, w, attrs, act, params, z):
    x = rand(*shape)
    y_shape = None
    inputs = {"X": x}
    names = ["X", "W", "B"]
    node_attrs = dict(attrs, activation=act)
    if params:
        node_attrs["activation_params"] = params
    if z:
        import onnxruntime
        probe = helper.make_node("FusedConv", names, ["Y"], domain=MS, **node_attrs)
        sess = onnxruntime.InferenceSession(ms_model(probe, inputs, {"W": rand(*w, seed=1), "B": rand(w[0], seed=2)}))
        y_shape = sess.run(None, inputs)[0].shape
        inputs["Z"] = rand(*y_shape, seed=3)
        names = names + ["Z"]
    node = helper.make_node("FusedConv", names, ["Y"], domain=MS, **node_attrs)
    check(ms_model(node, inputs, {"W": rand(*w, seed=1), "B": rand(w[0], seed=2)}), inputs, atol=1e-4)


@pytest.mark.parametrize("act", ["Relu", "Sigmoid", "Tanh"])
@pytest.mark.parametrize("trans_b,c_shape", [(0, None), (1, (4,)), (0, (3, 4))])
def test_fused_gemm(act, trans_b, c_shape):
    inits = {"W": rand(*((4, 5) if trans_b else (5, 4)), seed=1)}
    names = ["X", "W"]
    if c_shape:
        inits["C"] = rand(*c_shape, seed=2)
        names.append("C")
    node = helper.make_node("FusedGemm", names, ["Y"], domain=MS, transB=trans_b, alpha=0.8, beta=1.5, activation=act)
    check(ms_model(node, {"X": rand(3, 5)}, inits), {"X": rand(3, 5)}, atol=1e-5)


def test_fused_conv_leaky_relu_falls_back_to_numpy():
    import nnwasm
    node = helper.make_node("FusedConv", ["X", "W"], ["Y"], domain=MS, activation="LeakyRelu",
                            activation_params=[0.1])
    model = ms_model(node, {"X": rand(1, 2, 5, 5)}, {"W": rand(3, 2, 3, 3, seed=1)})
    sess = nnwasm.InferenceSession(model)
    assert [p for _, _, p in sess.get_provider_assignment()] == ["NumpyExecutionProvider"]
    from model_builders import ort_run
    x = rand(1, 2, 5, 5)
    np.testing.assert_allclose(sess.run(None, {"X": x})[0], ort_run(model, {"X": x})[0], rtol=1e-5, atol=1e-5)


# --- transformer linear layers: MatMul by a constant as gemm_packed, with its epilogue -------------

def _linear_model(x_shape, n, tail, bias_first):
    """MatMul(X, W) + bias, then tail: "" | "gelu" (erf form) | "relu" | "residual" (+ R)."""
    k = x_shape[-1]
    add = ["b", "m"] if bias_first else ["m", "b"]
    nodes = [helper.make_node("MatMul", ["X", "W"], ["m"]), helper.make_node("Add", add, ["h"])]
    inputs = {"X": rand(*x_shape)}
    inits = {"W": rand(k, n, seed=1), "b": rand(n, seed=2)}
    if tail == "gelu":
        nodes += [helper.make_node("Div", ["h", "sqrt2"], ["d"]), helper.make_node("Erf", ["d"], ["e"]),
                  helper.make_node("Add", ["e", "one"], ["e1"]), helper.make_node("Mul", ["h", "e1"], ["g"]),
                  helper.make_node("Mul", ["g", "half"], ["Y"])]
        inits.update(sqrt2=np.float32(np.sqrt(2)), one=np.float32(1), half=np.float32(0.5))
    elif tail == "relu":
        nodes.append(helper.make_node("Relu", ["h"], ["Y"]))
    elif tail == "residual":
        inputs["R"] = rand(*x_shape[:-1], n, seed=3)
        nodes.append(helper.make_node("Add", ["R", "h"], ["Y"]))
    else:
        nodes[-1].output[0] = "Y"
    g = helper.make_graph(nodes, "g",
                          [helper.make_tensor_value_info(k_, onnx.TensorProto.FLOAT, v.shape) for k_, v in inputs.items()],
                          [helper.make_tensor_value_info("Y", onnx.TensorProto.FLOAT, None)],
                          [onnx.numpy_helper.from_array(np.asarray(v), k_) for k_, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    m.ir_version = 8
    return m.SerializeToString(), inputs


@pytest.mark.parametrize("tail", ["", "gelu", "relu", "residual"])
@pytest.mark.parametrize("x_shape,n,bias_first", [((1, 9, 16), 24, True), ((2, 5, 7), 13, False),
                                                  ((3, 33), 8, True), ((7,), 5, False)])
def test_linear_layer_packed(x_shape, n, tail, bias_first):
    from nnwasm.wasm.provider import WasmExecutionProvider
    from nnwasm import optimizer, passes
    from nnwasm.onnx_io.load import load_model
    model, feeds = _linear_model(x_shape, n, tail, bias_first)
    check(model, feeds, rtol=1e-4, atol=1e-5)
    if len(x_shape) == 2:
        return   # a 2-D MatMul + Add is a Gemm (optimizer/fusions.py): the gemm op
    wasm = WasmExecutionProvider()
    graph = optimizer.optimize(passes.infer_shapes(load_model(model), {}), "shaped", 99, [wasm])
    b = wasm.build_plan(graph.nodes, graph, [v.name for v in graph.inputs], [v.name for v in graph.outputs])[0]
    assert [op for op, _ in b.ops] == ["gemm_packed"]
