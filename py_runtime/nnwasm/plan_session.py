"""PlanSession: an InferenceSession over a .nnwp plan file. InferenceSession(path or bytes)
returns one when the bytes start with the plan file magic. It keeps the session's API and its
feed checks (inherited), and replaces only creation (no ONNX, no optimizer: planfile.read, then
one WasmRunner on the shared host) and the run (that one plan)."""
import os

from . import planfile
from .errors import InvalidArgument, ModelLoadCanceled, NoSuchFile, Unsupported
from .host import flavours, get_host
from .ir import ValueInfo
from .session import ORT_CPU, InferenceSession, ModelMetadata, NodeArg, _check_session_options
from .wasm.provider import WasmExecutionProvider
from .wasm.runner import WasmRunner
from . import memory_limit

WASM = WasmExecutionProvider.name


def read_bytes(path_or_bytes):
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        return bytes(path_or_bytes)
    if isinstance(path_or_bytes, (str, os.PathLike)):
        try:
            with open(path_or_bytes, "rb") as f:
                return f.read()
        except OSError as e:
            raise NoSuchFile(f"plan file '{path_or_bytes}' can't be read: {e}") from e
    raise InvalidArgument(f"expected a model path or bytes, got {type(path_or_bytes).__name__}")


def _check_plan_providers(providers):
    if isinstance(providers, str):
        raise InvalidArgument(f"providers must be a list of names, got the string '{providers}'")
    names = [p[0] if isinstance(p, (tuple, list)) else p for p in providers or [WASM]]
    if WASM not in names and ORT_CPU not in names:   # onnxruntime's CPU provider means nnwasm's defaults
        raise InvalidArgument(f"a plan file runs on {WASM} alone; providers {names} exclude it")


# SessionOptions that change the model, which a plan file has already fixed: refused, not ignored.
_MODEL_OPTIONS = {"_initializers": "add_initializer", "_dim_by_name": "add_free_dimension_override_by_name",
                  "_dim_by_denotation": "add_free_dimension_override_by_denotation",
                  "optimized_model_filepath": "optimized_model_filepath"}


class PlanSession(InferenceSession):
    """Where the ONNX session's API does not apply to a plan file, it refuses: options that change
    the model (add_initializer, free dimension overrides, optimized_model_filepath: the plan was
    compiled from one model), providers other than WASM. graph_optimization_level is the compiler's, already run."""

    def __init__(self, path_or_bytes, sess_options=None, providers=None, provider_options=None, **kwargs):
        _check_plan_providers(providers)
        self._sess_options = so = _check_session_options(sess_options)
        used = [what for attr, what in _MODEL_OPTIONS.items() if getattr(so, attr)]
        if used:
            raise Unsupported(f"SessionOptions {', '.join(used)} change the model, which a plan file fixed when "
                              "it was compiled: compile the plan from the model you want (nnwasm.compile_plan; its "
                              "input_shapes fix symbolic dims)")
        if so._load_cancelled:
            raise ModelLoadCanceled("session creation was cancelled (SessionOptions.set_load_cancellation_flag)")
        self._overridable = {}
        self._fallback_enabled = True
        self._profiler = prof = self._new_profiler()
        t0 = prof and prof.clock()
        pf = planfile.read(read_bytes(self._take_read(path_or_bytes)))
        if prof:
            from_file = not isinstance(path_or_bytes, (bytes, bytearray, memoryview))
            prof.session("model_loading_uri" if from_file else "model_loading_array", t0)
            t0 = prof.clock()
        self._plan_file = pf
        self._providers = [wasm := WasmExecutionProvider()]
        wasm.flavour = flavours.resolve(flavours.requested(so))
        wasm.budget = memory_limit.budget(so)   # session.memory_limit_bytes: refused before loading
        self._values = [ValueInfo(v.name, v.dtype, v.shape) for v in pf.inputs]
        self._inputs = [NodeArg(v.name, v.dtype, v.shape) for v in pf.inputs]
        self._outputs = [NodeArg(v.name, v.dtype, v.shape) for v in pf.outputs]
        self._runner = WasmRunner(get_host(wasm.flavour), pf.plan, pf.arena_bytes,
                                  [(v.name, v.offset, v.nbytes) for v in pf.inputs],
                                  [(v.name, v.offset, v.dtype, v.shape) for v in pf.outputs], pf.ops, budget=wasm.budget)
        nodes = dict.fromkeys((op.node, op.op_type) for op in pf.ops)   # a node may lower to several ops
        self._assignment = [(node, op_type, WASM) for node, op_type in nodes]
        if prof:
            prof.session("session_initialization", t0)

    def _declared(self):
        return {v.name: v for v in self._values}

    def get_modelmeta(self):
        meta = ModelMetadata(None)
        meta.producer_name, meta.graph_name = self._plan_file.producer, self._plan_file.model
        return meta

    def get_provider_assignment(self):
        """[(node name, op type, provider)] from the file's ops table; ("#k", plan op, provider)
        for each op of a file written before it had one."""
        return flavours.ProviderAssignment(self._assignment, self._providers[0].flavour)

    def get_fallback_reasons(self):
        return {}

    def set_providers(self, providers=None, provider_options=None):
        _check_plan_providers(providers)

    def _run(self, output_names, feeds, run_options=None):
        names = self._check_output_names(output_names)
        for arg, vi in zip(self._inputs, self._values):
            self._check_feed(arg, vi, feeds[arg.name])
        watch = self._watch(run_options)
        prof = watch or self._profiler
        t0 = prof and prof.clock()
        env = dict(feeds)
        self._runner.run(env, prof)
        if prof:
            prof.session("model_run", t0)
        return [env[n] for n in names]

