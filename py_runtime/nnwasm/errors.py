"""nnwasm's exceptions. Every error a user can cause is one of these, with a message that names
the model part, input or node at fault. Each also subclasses the builtin a Python user would
catch for it (ValueError, TypeError, ...), as onnxruntime's errors do.

onnxruntime raises the classes of `onnxruntime.capi.onnxruntime_pybind11_state` (Fail,
InvalidArgument, NoSuchFile, ...). nnwasm's classes carry those names too, so code that catches
them keeps working after `import nnwasm as ort`: nnwasm.InvalidArgument is onnxruntime's name,
InvalidModel is also InvalidProtobuf / InvalidGraph, Unsupported is also NotImplemented, and
`nnwasm.capi.onnxruntime_pybind11_state` holds every name (docs/onnxruntime-api.md)."""


class NnwasmError(Exception):
    """Base of every nnwasm error."""


class Fail(NnwasmError, RuntimeError):
    """onnxruntime's FAIL: a run or a call failed for a reason that is not one of the others."""


class InvalidModel(NnwasmError, ValueError):
    """The model bytes are not a valid ONNX model (corrupt, truncated, inconsistent, hostile)."""


class InvalidArgument(NnwasmError, ValueError):
    """A call got a wrong argument: unknown input/output name, wrong dtype, rank or shape, or an
    option value out of its range."""


class NoSuchFile(NnwasmError, FileNotFoundError):
    """The model file (or a file an option names) does not exist."""


class Unsupported(NnwasmError, NotImplementedError):
    """A valid model uses something nnwasm can't run yet (an op, an opset, an element type), or a
    call asks for an onnxruntime feature nnwasm refuses (the message says why)."""


class NotImplementedOp(Unsupported):
    """No enabled provider can run a node (op type, opset or attributes not supported)."""


class EPFail(Fail):
    """An execution provider failed (onnxruntime's EP_FAIL)."""


class FallbackUnavailable(EPFail):
    """Nodes need the numpy provider, but numpy cannot be imported here (e.g. in Pyodide)."""


class KernelError(EPFail):
    """kernels.wasm refused or failed a plan; the message carries its status and op."""


class WasmOutOfMemory(KernelError):
    """kernels.wasm's linear memory could not hold a plan's arena or its op words (wasm32 addresses
    4 GiB); a session then drops the variants it prepared for other input shapes and tries again.
    `hopeless`: the plan alone can't fit, so dropping others would not help (memory_limit.py)."""

    def __init__(self, message, hopeless=False):
        super().__init__(message)
        self.hopeless = hopeless


class MemoryLimitExceeded(WasmOutOfMemory):
    """A plan, an arena grown for a run's dims, or the feeds would pass the session's memory limit
    (`session.memory_limit_bytes`, memory_limit.py); nothing was allocated or copied."""


class RunTerminated(Fail):
    """RunOptions.terminate was set: the run stopped between two ops (onnxruntime raises Fail with
    "Exiting due to terminate flag being set to true.")."""


class MissingConfigEntry(Fail, KeyError):
    """get_session_config_entry / get_run_config_entry of a key never set (onnxruntime raises
    RuntimeError; KeyError is what a Python user would try)."""

    def __str__(self):   # KeyError's str() would quote the message
        return str(self.args[0]) if self.args else ""


class SessionClosed(Fail):
    """A call on an IOBinding whose session has been garbage-collected."""


# onnxruntime's other status classes. nnwasm raises none of them today; they exist so that code
# catching them (`except ort.capi.onnxruntime_pybind11_state.EngineError`) still imports and runs.
class EngineError(NnwasmError, RuntimeError):
    pass


class RuntimeException(NnwasmError, RuntimeError):
    pass


class NoModel(NnwasmError, RuntimeError):
    pass


class ModelLoaded(NnwasmError, RuntimeError):
    pass


class NotFound(NnwasmError, LookupError):
    pass


class ModelLoadCanceled(NnwasmError, RuntimeError):
    pass


class ModelRequiresCompilation(NnwasmError, RuntimeError):
    pass


class DeviceReset(NnwasmError, RuntimeError):
    pass


# onnxruntime's names for nnwasm's own classes.
InvalidProtobuf = InvalidModel
InvalidGraph = InvalidModel
NotImplemented = Unsupported   # noqa: A001 (onnxruntime's name; shadows the builtin constant in this module only)
