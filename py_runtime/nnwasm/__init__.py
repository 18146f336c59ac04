"""nnwasm: a WebAssembly-first ONNX inference runtime with onnxruntime's Python API.

    import nnwasm as ort        # code written for onnxruntime runs by changing the import
    sess = ort.InferenceSession("model.onnx")
    logits, = sess.run(None, {"input": x})
"""
from .errors import (FallbackUnavailable, InvalidArgument, InvalidModel, KernelError, NnwasmError, Unsupported,
                     NotImplementedOp)
from .options import ExecutionMode, GraphOptimizationLevel, RunOptions, SessionOptions
from .session import InferenceSession, NodeArg, get_available_providers

__version__ = "0.1.0"


def compile_plan(model, input_shapes=None, sess_options=None):
    """.nnwp plan file bytes for a model whose nodes all run on WASM (plan_compile.py)."""
    from .plan_compile import compile_plan as compile_
    return compile_(model, input_shapes, sess_options)


def get_device():
    return "CPU-WASM"


__all__ = ["InferenceSession", "compile_plan", "SessionOptions", "RunOptions", "NodeArg", "GraphOptimizationLevel",
           "ExecutionMode", "get_available_providers", "get_device", "NnwasmError", "InvalidModel",
           "InvalidArgument", "Unsupported", "NotImplementedOp", "FallbackUnavailable", "KernelError"]
