"""onnxruntime's exception names (onnxruntime.capi.onnxruntime_pybind11_state), mapped to nnwasm's
classes in errors.py: catching one of these catches what nnwasm raises for that status."""
from ..errors import (DeviceReset, EngineError, EPFail, Fail, InvalidArgument, InvalidGraph, InvalidProtobuf,  # noqa: F401
                      ModelLoadCanceled, ModelLoaded, ModelRequiresCompilation, NoModel, NoSuchFile, NotFound,
                      NotImplemented, RuntimeException)

__all__ = ["DeviceReset", "EngineError", "EPFail", "Fail", "InvalidArgument", "InvalidGraph", "InvalidProtobuf",
           "ModelLoadCanceled", "ModelLoaded", "ModelRequiresCompilation", "NoModel", "NoSuchFile", "NotFound",
           "NotImplemented", "RuntimeException"]
