"""Small float models and their onnxruntime.quantization versions, for the int8 tests: a CNN
(Conv/Relu/Add/GlobalAveragePool/Gemm) quantized statically in QDQ format, and a BERT-like
encoder quantized dynamically (MatMulInteger + DynamicQuantizeLinear)."""
import os
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def _model(nodes, inputs, outputs, inits, opset=13):
    g = helper.make_graph(nodes, "m", inputs, outputs, [numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def small_cnn(seed=0):
    r = np.random.default_rng(seed)
    w = lambda *s: (r.standard_normal(s) * (2.0 / np.prod(s[1:])) ** 0.5).astype(np.float32)   # noqa: E731
    b = lambda n: (r.standard_normal(n) * 0.1).astype(np.float32)                              # noqa: E731
    inits = {"w1": w(8, 3, 3, 3), "b1": b(8), "w2": w(8, 8, 3, 3), "b2": b(8), "w3": w(16, 8, 1, 1), "b3": b(16),
             "wd": w(16, 8, 3, 3), "bd": b(16), "fc": w(10, 16), "fcb": b(10)}
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("Add", ["r1", "r2"], ["s1"]),
        helper.make_node("Conv", ["s1", "w3", "b3"], ["c3"]),
        helper.make_node("Conv", ["s1", "wd", "bd"], ["c4"], pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c3", "c4"], ["s2"]),
        helper.make_node("Relu", ["s2"], ["r3"]),
        helper.make_node("GlobalAveragePool", ["r3"], ["gap"]),
        helper.make_node("Flatten", ["gap"], ["flat"]),
        helper.make_node("Gemm", ["flat", "fc", "fcb"], ["logits"], transB=1),
    ]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                  [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10])], inits)


def cnn_inputs(count, seed=1):
    r = np.random.default_rng(seed)
    return [r.standard_normal((1, 3, 16, 16)).astype(np.float32) for _ in range(count)]


def quantize_static_qdq(model, samples, per_channel, reduce_range=False):
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter({"x": s} for s in samples)

        def get_next(self):
            return next(self.it, None)

    with tempfile.TemporaryDirectory() as d:
        src, dst = os.path.join(d, "f.onnx"), os.path.join(d, "q.onnx")
        onnx.save(model, src)
        quantize_static(src, dst, Reader(), quant_format=QuantFormat.QDQ, per_channel=per_channel,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, reduce_range=reduce_range)
        return open(dst, "rb").read()


def small_bert(seq=8, hidden=32, heads=2, ffn=64, layers=2, vocab=50, seed=0):
    """Embedding lookup + `layers` encoder blocks (self-attention, LayerNormalization, Gelu as Erf)
    + mean pooling: the float graph a BERT export has, at toy size."""
    r = np.random.default_rng(seed)
    w = lambda *s: (r.standard_normal(s) / np.sqrt(s[0])).astype(np.float32)   # noqa: E731
    v = lambda *s: (r.standard_normal(s) * 0.1).astype(np.float32)             # noqa: E731
    hd = hidden // heads
    inits = {"emb": v(vocab, hidden) * 10, "pos": v(seq, hidden) * 10,
             "shape_split": np.array([1, seq, heads, hd], np.int64), "shape_join": np.array([1, seq, hidden], np.int64),
             "sqrt_d": np.array(np.sqrt(hd), np.float32), "half": np.array(0.5, np.float32),
             "one": np.array(1.0, np.float32), "rsqrt2": np.array(1 / np.sqrt(2), np.float32)}
    nodes = [helper.make_node("Gather", ["emb", "ids"], ["e0"]), helper.make_node("Add", ["e0", "pos"], ["h0"])]
    h = "h0"
    for i in range(layers):
        p = f"l{i}_"
        for n, shape in (("q", (hidden, hidden)), ("k", (hidden, hidden)), ("v", (hidden, hidden)),
                         ("o", (hidden, hidden)), ("f1", (hidden, ffn)), ("f2", (ffn, hidden))):
            inits[p + n + "_w"], inits[p + n + "_b"] = w(*shape), v(shape[1])
        for n in ("ln1", "ln2"):
            inits[p + n + "_g"], inits[p + n + "_b"] = 1 + v(hidden), v(hidden)

        def dense(x, n, out):
            nodes.append(helper.make_node("MatMul", [x, p + n + "_w"], [p + n + "_mm"]))
            nodes.append(helper.make_node("Add", [p + n + "_mm", p + n + "_b"], [out]))

        for n in "qkv":
            dense(h, n, p + n)
            nodes.append(helper.make_node("Reshape", [p + n, "shape_split"], [p + n + "_r"]))
            perm = [0, 2, 3, 1] if n == "k" else [0, 2, 1, 3]
            nodes.append(helper.make_node("Transpose", [p + n + "_r"], [p + n + "_t"], perm=perm))
        nodes += [helper.make_node("MatMul", [p + "q_t", p + "k_t"], [p + "qk"]),
                  helper.make_node("Div", [p + "qk", "sqrt_d"], [p + "qk_s"]),
                  helper.make_node("Softmax", [p + "qk_s"], [p + "att"], axis=-1),
                  helper.make_node("MatMul", [p + "att", p + "v_t"], [p + "ctx"]),
                  helper.make_node("Transpose", [p + "ctx"], [p + "ctx_t"], perm=[0, 2, 1, 3]),
                  helper.make_node("Reshape", [p + "ctx_t", "shape_join"], [p + "ctx_j"])]
        dense(p + "ctx_j", "o", p + "ao")
        nodes += [helper.make_node("Add", [h, p + "ao"], [p + "res1"]),
                  helper.make_node("LayerNormalization", [p + "res1", p + "ln1_g", p + "ln1_b"], [p + "h1"], axis=-1)]
        dense(p + "h1", "f1", p + "f1")
        nodes += [helper.make_node("Mul", [p + "f1", "rsqrt2"], [p + "g0"]),
                  helper.make_node("Erf", [p + "g0"], [p + "g1"]),
                  helper.make_node("Add", [p + "g1", "one"], [p + "g2"]),
                  helper.make_node("Mul", [p + "f1", p + "g2"], [p + "g3"]),
                  helper.make_node("Mul", [p + "g3", "half"], [p + "gelu"])]
        dense(p + "gelu", "f2", p + "f2")
        nodes += [helper.make_node("Add", [p + "h1", p + "f2"], [p + "res2"]),
                  helper.make_node("LayerNormalization", [p + "res2", p + "ln2_g", p + "ln2_b"], [p + "out"], axis=-1)]
        h = p + "out"
    nodes.append(helper.make_node("ReduceMean", [h], ["embedding"], axes=[1], keepdims=0))
    return _model(nodes, [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, seq])],
                  [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, [1, hidden])], inits, opset=17)


def quantize_dynamic_bytes(model, per_channel=False, reduce_range=False):
    from onnxruntime.quantization import QuantType, quantize_dynamic
    with tempfile.TemporaryDirectory() as d:
        src, dst = os.path.join(d, "f.onnx"), os.path.join(d, "q.onnx")
        onnx.save(model, src)
        quantize_dynamic(src, dst, weight_type=QuantType.QInt8, per_channel=per_channel, reduce_range=reduce_range)
        return open(dst, "rb").read()
