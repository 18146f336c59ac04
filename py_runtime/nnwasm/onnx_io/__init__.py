"""Reading ONNX files without the onnx or protobuf packages (neither exists in Pyodide).

wire.py decodes the protobuf wire format, messages.py declares the ONNX messages it reads,
tensors.py turns TensorProtos into TensorData, load.py builds the ir.Graph and checks it.
"""
from .load import ModelInfo, load_model
from .tensors import parse_tensor, sparse_tensor_data, tensor_data

__all__ = ["ModelInfo", "load_model", "parse_tensor", "sparse_tensor_data", "tensor_data"]
