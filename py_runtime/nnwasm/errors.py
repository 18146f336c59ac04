"""nnwasm's exceptions. Every error a user can cause is one of these, with a message that names
the model part, input or node at fault. Each also subclasses the builtin a Python user would
catch for it (ValueError, TypeError, ...), as onnxruntime's errors do."""


class NnwasmError(Exception):
    """Base of every nnwasm error."""


class InvalidModel(NnwasmError, ValueError):
    """The model bytes are not a valid ONNX model (corrupt, truncated, inconsistent, hostile)."""


class InvalidArgument(NnwasmError, ValueError):
    """A call got a wrong argument: unknown input/output name, wrong dtype, rank or shape."""


class Unsupported(NnwasmError, NotImplementedError):
    """A valid model uses something nnwasm can't run yet (an op, an opset, an element type)."""


class NotImplementedOp(Unsupported):
    """No enabled provider can run a node (op type, opset or attributes not supported)."""


class FallbackUnavailable(NnwasmError, RuntimeError):
    """Nodes need the numpy provider, but numpy cannot be imported here (e.g. in Pyodide)."""


class KernelError(NnwasmError, RuntimeError):
    """kernels.wasm refused or failed a plan; the message carries its status and op."""
