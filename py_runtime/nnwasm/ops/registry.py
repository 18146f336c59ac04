"""The ONNX op registry: (domain, op_type) -> {since_version: OpDef}, the one list of ops nnwasm
knows. Each op family file (elementwise.py, conv.py, ...) registers its ops with @op; lookup()
answers for a node's opset the entry with the largest since_version <= opset.

An OpDef carries these callables:
    infer(node, inputs, consts) -> [(dtype, shape), ...]   one per node output; pure Python.
        inputs[i] is the ir.ValueInfo of input i (None if omitted), consts[i] its TensorData when
        it is a constant (else None). dtype/shape follow ir.py: None is unknown. Inconsistent
        shapes raise InvalidModel; attribute values nnwasm can't handle raise NotImplementedOp.
    numpy(node, *arrays) -> (ndarray, ...)                  one per node output.
        The numpy reference (the NumpyExecutionProvider's kernel). Omitted inputs come as None.
        Control-flow ops (control.py: nodes with subgraphs) also take infer's 4th argument, a
        passes.BodyScope, and numpy's keyword `scope`, the enclosing values by name.
    fold(node, inputs, consts) -> [TensorData, ...] | None  optional, pure Python (fold.py).
        Output values when they can be computed now (small constant inputs; Shape/Size from a
        static shape), else None.
Family files import numpy only inside numpy functions: shape inference runs without numpy.
"""
import importlib
from dataclasses import dataclass, replace
from typing import Callable

from ..errors import InvalidArgument, InvalidModel
from ..values import Seq

# Family modules, imported on first lookup so that importing this module stays cheap and cycle-free.
FAMILIES = ("elementwise", "activations", "conv", "pool", "norm", "linalg", "shape_ops", "indexing",
            "reduce", "misc", "resize", "control", "rnn", "fold", "contrib", "quant", "attention", "attention_contrib",
            "sampling", "losses", "bitwise", "positional", "sorting", "strings", "scatter", "spectral",
            "training", "ml", "image", "sequence", "random")
FAMILIES += ("quant_blocks",)   # issue 15: MatMulNBits, GatherBlockQuantized, DynamicQuantizeMatMul
FAMILIES += ("contrib_transformer",)   # onnxruntime's transformer norms, activations, rotary (trnorm)

_REGISTRY = {}      # (domain, op_type) -> {since: OpDef}
_loaded = False


@dataclass(frozen=True)
class OpDef:
    domain: str
    op_type: str
    since: int
    infer: Callable
    numpy: Callable
    fold: Callable = None   # optional pure-Python constant folding (fold.py)

    def __str__(self):
        return f"{self.domain or 'ai.onnx'}::{self.op_type}-{self.since}"


def register(op_type, since, infer, numpy, domain=""):
    versions = _REGISTRY.setdefault((domain, op_type), {})
    if since in versions:
        raise AssertionError(f"{op_type}-{since} registered twice")
    versions[since] = OpDef(domain, op_type, since, infer, _as_tuple(numpy))
    return versions[since]


def op(op_type, since, infer, domain=""):
    """Decorator for a numpy implementation: registers it with its infer function."""
    def deco(numpy_fn):
        register(op_type, since, infer, numpy_fn, domain)
        return numpy_fn
    return deco


def set_fold(domain, op_type, fn):
    """Attaches a constant folder to every registered version of an op."""
    versions = _REGISTRY[(domain, op_type)]
    for since, d in versions.items():
        versions[since] = replace(d, fold=fn)


def lookup(domain, op_type, opset):
    """The OpDef for op_type at this opset of domain ("" and "ai.onnx" are the same), or None."""
    _load()
    versions = _REGISTRY.get(("" if domain == "ai.onnx" else domain, op_type))
    if not versions:
        return None
    fit = [v for v in versions if v <= opset]
    return versions[max(fit)] if fit else None


def op_types():
    """Every registered (domain, op_type), sorted."""
    _load()
    return sorted(_REGISTRY)


def versions(domain, op_type):
    """The since_versions registered for an op, ascending."""
    _load()
    return sorted(_REGISTRY.get((domain, op_type), ()))


def _load():
    global _loaded
    if not _loaded:
        for name in FAMILIES:
            importlib.import_module(f"{__package__}.{name}")
        _loaded = True


def _as_tuple(fn):
    # Kernels may return one array or a tuple; numpy ufuncs return scalars for 0-d inputs.
    # Callers always get a tuple of ndarrays.
    # At run time, whatever the kernel finds inconsistent comes from the fed data (constant-only
    # problems were refused by infer at session creation): report it as InvalidArgument.
    def run(node, *arrays, **kw):
        import numpy as np
        try:
            out = fn(node, *arrays, **kw)
        except InvalidModel as e:
            raise InvalidArgument(str(e)) from None
        if not isinstance(out, tuple):
            out = (out,)
        return tuple(o if o is None or isinstance(o, (np.ndarray, Seq)) else np.asarray(o) for o in out)
    run.__name__ = getattr(fn, "__name__", "numpy")
    run.__wrapped__ = fn
    return run
