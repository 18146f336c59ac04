"""nnwasm: a WebAssembly-first ONNX inference runtime with onnxruntime's Python API.

    import nnwasm as ort        # code written for onnxruntime runs by changing the import
    sess = ort.InferenceSession("model.onnx")
    logits, = sess.run(None, {"input": x})

x and logits are numpy arrays; where numpy can't be imported (Pyodide without it), feeds may be
lists, buffers or nnwasm.Tensor, and results are nnwasm.Tensor (docs/without-numpy.md).

docs/onnxruntime-api.md lists every public item of onnxruntime and what nnwasm does with it.
"""
from . import capi
from .errors import (EPFail, Fail, FallbackUnavailable, InvalidArgument, InvalidModel, KernelError, MemoryLimitExceeded,
                     MissingConfigEntry, ModelLoadCanceled, NnwasmError, NoSuchFile, NotImplementedOp, RunTerminated, Unsupported)
from .iobinding import IOBinding, SessionIOBinding
from .options import ExecutionMode, ExecutionOrder, GraphOptimizationLevel, OrtMemType, RunOptions, SessionOptions
from .ortapi import (AdapterFormat, LoraAdapter, ModelCompiler, OrtAllocatorType, OrtArenaCfg, OrtCompileApiFlags,
                     OrtDevice, OrtDeviceMemoryType, OrtDeviceVendorId, OrtEpAssignedNode, OrtEpAssignedSubgraph,
                     OrtEpContextData, OrtEpContextDataBuffer, OrtMemoryInfo,
                     OrtEpDevice, OrtExecutionProviderDevicePolicy, OrtExternalInitializerInfo, OrtHardwareDevice,
                     OrtHardwareDeviceType, OrtMemoryInfoDeviceType, OrtSparseFormat, OrtSyncStream, SparseTensor,
                     copy_tensors, create_and_register_allocator, create_and_register_allocator_v2,
                     disable_telemetry_events, enable_telemetry_events, get_all_providers, get_build_info,
                     get_ep_devices, get_version_string, has_collective_ops, preload_dlls, print_debug_info,
                     register_execution_provider_library, set_default_logger_severity, set_default_logger_verbosity,
                     set_global_thread_pool_sizes, set_seed, unregister_execution_provider_library)
from .ortvalue import OrtValue
from .session import InferenceSession, ModelMetadata, NodeArg, get_available_providers
from .user_tensor import Tensor

__version__ = "0.1.0"
version = __version__
package_name = "nnwasm"
cuda_version = ""   # no CUDA (onnxruntime's CPU packages say "" too)


def _plan_session_class():
    from .plan_session import PlanSession   # for .nnwp files only
    return PlanSession


InferenceSession._plan_session_class = staticmethod(_plan_session_class)


def compile_plan(model, input_shapes=None, sess_options=None):
    """.nnwp plan file bytes for a model whose nodes all run on WASM (plan_compile.py)."""
    from .plan_compile import compile_plan as compile_
    return compile_(model, input_shapes, sess_options)


def get_device():
    return "CPU-WASM"


__all__ = ["InferenceSession", "compile_plan", "SessionOptions", "RunOptions", "NodeArg", "ModelMetadata", "OrtValue",
           "Tensor", "IOBinding", "SessionIOBinding", "GraphOptimizationLevel", "ExecutionMode", "ExecutionOrder", "OrtMemType",
           "get_available_providers", "get_all_providers", "get_device", "get_version_string", "get_build_info",
           "NnwasmError", "Fail", "InvalidModel", "InvalidArgument", "NoSuchFile", "Unsupported", "NotImplementedOp",
           "FallbackUnavailable", "KernelError", "EPFail", "RunTerminated", "MissingConfigEntry", "ModelLoadCanceled",
           "MemoryLimitExceeded"]
