"""ONNX ops: shape/dtype inference (pure Python) and numpy reference kernels, one file per op
family, all reached through registry.lookup()."""
from .registry import OpDef, lookup, op_types, versions

__all__ = ["OpDef", "lookup", "op_types", "versions"]
