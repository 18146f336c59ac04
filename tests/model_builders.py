"""Small ONNX models for tests, built with the onnx package (a test-only dependency)."""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def single_node(op_type, inputs, outputs, attrs=None, initializers=None, opset=13, out_dtype=None):
    """inputs: {name: np.ndarray sample} (graph inputs); initializers: {name: np.ndarray} (constants).
    outputs: names; their types are left for inference except out_dtype (an onnx TensorProto type)."""
    initializers = initializers or {}
    node_inputs = [*inputs, *initializers] if not isinstance(inputs, list) else inputs
    return graph_model([helper.make_node(op_type, node_inputs, outputs, **(attrs or {}))],
                       {k: v for k, v in inputs.items()} if isinstance(inputs, dict) else {},
                       outputs, initializers, opset, out_dtype)


def graph_model(nodes, inputs, outputs, initializers=None, opset=13, out_dtype=None):
    g_inputs = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
                for k, v in inputs.items()]
    g_outputs = [helper.make_tensor_value_info(o, out_dtype, None) if out_dtype
                 else helper.make_empty_tensor_value_info(o) for o in outputs]
    inits = [numpy_helper.from_array(np.asarray(v), k) for k, v in (initializers or {}).items()]
    graph = helper.make_graph(nodes, "test", g_inputs, g_outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    if not out_dtype:   # give the outputs the types onnx infers, as an exporter would
        inferred = {v.name: v for v in onnx.shape_inference.infer_shapes(model).graph.value_info}
        for i, o in enumerate(outputs):
            if o in inferred:
                model.graph.output[i].CopyFrom(inferred[o])
    return model.SerializeToString()


def rand(*shape, seed=0):
    return np.asarray(np.random.default_rng(seed + sum(shape)).standard_normal(shape), dtype=np.float32)


def ort_run(model_bytes, feeds):
    import onnxruntime
    sess = onnxruntime.InferenceSession(model_bytes, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


__all__ = ["single_node", "graph_model", "rand", "ort_run", "onnx", "TensorProto"]
