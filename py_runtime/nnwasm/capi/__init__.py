"""onnxruntime's `capi` package path, so `from nnwasm.capi.onnxruntime_pybind11_state import
InvalidArgument` works as it does with onnxruntime."""
from . import onnxruntime_pybind11_state  # noqa: F401
