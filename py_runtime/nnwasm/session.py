"""InferenceSession: the path of one run() through nnwasm.

create: load_model (onnx_io) -> optimizer ("graph" passes) -> passes.infer_shapes -> optimizer
("shaped" passes: constant folding, fusions) -> partition (providers' capability) ->
provider.compile per partition (WASM: one plan loaded into kernels.wasm).
run:    validate feeds -> for each partition in order, runner.run(env) -> outputs.
With SessionOptions.enable_profiling, runners get a profiling.Profiler and time what they run.
Models whose input shapes have symbolic dims are prepared (shape inference, partitioning,
compiling, and the optimizer passes that need concrete shapes) per concrete input shape at the
first run with it, and cached.
A .nnwp plan file (recognised by its magic) gives a PlanSession instead: plan_session.py.
"""
import gc
import os
import sys
import threading
import weakref
from collections import OrderedDict

from . import optimizer, passes, symbolic
from .host import flavours
from .errors import (InvalidArgument, InvalidModel, ModelLoadCanceled, NnwasmError, NoSuchFile, RunTerminated,
                     SessionClosed, Unsupported, WasmOutOfMemory)
from .ir import Graph, ValueInfo
from .onnx_io.load import load_model, read_model_file
from .options import RunOptions, SessionOptions
from .ortapi import _CPU_MEMORY_INFO, _assigned_subgraphs
from .ortvalue import OrtValue
from .partition import assign, partition
from .profiling import Profiler
from .providers import DEFAULT_ORDER, PROVIDERS
from .tensor import SymTensor, TensorData
from . import memory_limit, shape_values, values

_PLAN_CACHE_SIZE = 8
# Trace variants with symbolic dims (symbolic.py), so a decoder's every past length reuses one
# plan; NNWASM_SYMBOLIC=0 prepares each input shape anew instead (docs/architecture.md)
_SYMBOLIC = os.environ.get("NNWASM_SYMBOLIC", "1") != "0"
_MAX_UNREUSED_TRACES = 2   # traces that served no other shapes before a session stops tracing


class NodeArg:
    """An input or output of the model: name, type ("tensor(float)") and shape (ints, str, None)."""

    def __init__(self, name, dtype, shape, kind="tensor"):
        self.name = name
        self.type = values.ort_type(ValueInfo(name, dtype, shape, kind))
        self.shape = list(shape) if shape is not None else None

    def __repr__(self):
        return f"NodeArg(name='{self.name}', type='{self.type}', shape={self.shape})"


class ModelMetadata:
    """onnxruntime's ModelMetadata: what the model file says about itself."""

    def __init__(self, info):
        self.producer_name = info.producer_name if info else ""
        self.graph_name = info.graph_name if info else ""
        self.domain = info.domain if info else ""
        self.description = info.doc_string if info else ""
        self.graph_description = ""
        self.version = info.model_version if info else 0
        self.custom_metadata_map = dict(info.metadata_props) if info else {}


def _first_known(*shapes):
    return next((s for s in shapes if s is not None), None)   # () is a known shape: a scalar


def _read_once(path_or_bytes):
    """The model's bytes, read from its path now if it is one (a ModelFile, which finds external
    data beside the path): the one read of the file, for both the plan-magic check and the load
    (in JupyterLite every open() of a notebook file transfers all of it). Anything else, and a
    path that can't be read (the load reports it), is returned as it is."""
    if isinstance(path_or_bytes, (str, os.PathLike)):
        try:
            return read_model_file(path_or_bytes)
        except OSError:
            return path_or_bytes
    return path_or_bytes


def _starts_with_plan_magic(data):
    """True for plan file bytes; False (never an error) for anything else."""
    from .planfile import is_plan_file
    return isinstance(data, (bytes, bytearray, memoryview)) and is_plan_file(data)


def get_available_providers():
    return list(DEFAULT_ORDER)


# onnxruntime's provider names (onnxruntime.get_all_providers() of 1.31). CPUExecutionProvider is
# nnwasm's default list (WASM, then the numpy fallback); the others are not available here and are
# skipped with a warning, as onnxruntime does for a provider its build lacks.
ORT_CPU = "CPUExecutionProvider"
ORT_PROVIDERS = {
    "NvTensorRTRTXExecutionProvider", "TensorrtExecutionProvider", "CUDAExecutionProvider",
    "MIGraphXExecutionProvider", "OpenVINOExecutionProvider", "DnnlExecutionProvider", "VitisAIExecutionProvider",
    "QNNExecutionProvider", "NnapiExecutionProvider", "VSINPUExecutionProvider", "JsExecutionProvider",
    "CoreMLExecutionProvider", "ACLExecutionProvider", "DmlExecutionProvider", "RknpuExecutionProvider",
    "WebNNExecutionProvider", "WebGpuExecutionProvider", "XnnpackExecutionProvider", "CANNExecutionProvider",
    "AzureExecutionProvider", "ROCMExecutionProvider", "MIGraphXExecutionProvider", "TvmExecutionProvider"}


def _resolve_providers(providers, provider_options, sess_options):
    if providers is None and sess_options.has_providers():
        providers = list(sess_options._providers)
    if isinstance(providers, str):
        raise InvalidArgument(f"providers must be a list of names, got the string '{providers}'")
    providers = list(providers or DEFAULT_ORDER)
    if provider_options is not None and len(provider_options) != len(providers):
        raise InvalidArgument(f"provider_options has {len(provider_options)} entries for {len(providers)} "
                              "providers: give one dict per provider")
    chosen, skipped = {}, []   # name -> options, in order
    for i, p in enumerate(providers):
        name, opts = (p if isinstance(p, (tuple, list)) and len(p) == 2 else (p, {}))
        if not isinstance(name, str) or not isinstance(opts, dict):
            raise InvalidArgument(f"a provider is a name or a (name, options dict) pair, got {p!r}")
        if provider_options is not None:
            if not isinstance(provider_options[i], dict):
                raise InvalidArgument(f"provider_options[{i}] must be a dict, got {provider_options[i]!r}")
            opts = {**opts, **provider_options[i]}
        if name == ORT_CPU:
            for n in DEFAULT_ORDER:
                chosen.setdefault(n, {})
        elif name in ORT_PROVIDERS:
            skipped.append(name)
        elif name in PROVIDERS:
            chosen[name] = {**chosen.get(name, {}), **opts}
        else:
            raise InvalidArgument(f"unknown provider '{name}'; available: {get_available_providers()} "
                                  f"(and onnxruntime's {ORT_CPU}, which means these)")
    if skipped:
        import warnings
        warnings.warn(f"provider(s) {skipped} are not available in nnwasm; using {list(chosen) or DEFAULT_ORDER}",
                      stacklevel=3)
    if not chosen:
        chosen = {n: {} for n in DEFAULT_ORDER}
    names, options = list(chosen), list(chosen.values())
    if sess_options.disable_cpu_ep_fallback() and len(names) > 1:
        keep = [k for k, n in enumerate(names) if n != "NumpyExecutionProvider"]
        names, options = [names[k] for k in keep], [options[k] for k in keep]
    chosen = [PROVIDERS[n](o) for n, o in zip(names, options)]
    flavour = flavours.resolve(flavours.requested(sess_options))   # the kernels.wasm it runs on
    budget = memory_limit.budget(sess_options)   # session.memory_limit_bytes, shared by its plans
    for p in chosen:
        if hasattr(p, "flavour"):
            p.flavour = flavour
        if hasattr(p, "budget"):
            p.budget = budget
    return chosen


def _check_session_options(so):
    if so is None:
        return SessionOptions()
    if not isinstance(so, SessionOptions):
        raise InvalidArgument(f"sess_options must be an nnwasm.SessionOptions, got {type(so).__name__}")
    return so


def _apply_initializers(model, initializers):
    """SessionOptions.add_initializer: each replaces the model's initializer of that name."""
    for name, value in initializers.items():
        old = model.initializers.get(name)
        if old is None:
            raise InvalidArgument(f"SessionOptions.add_initializer('{name}'): the model has no initializer of "
                                  f"that name (its initializers: {sorted(model.initializers)[:20]})")
        new = value._td()
        if new.dtype != old.dtype or tuple(new.shape) != tuple(old.shape):
            raise InvalidArgument(f"SessionOptions.add_initializer('{name}'): the value is {new.dtype.ort_type} "
                                  f"{list(new.shape)}, the model's initializer is {old.dtype.ort_type} "
                                  f"{list(old.shape)}")
        model.initializers[name] = TensorData(new.dtype, new.shape, bytes(new.data))   # a private copy


def _apply_dim_overrides(model, by_name, by_denotation):
    """SessionOptions.add_free_dimension_override_by_name / _by_denotation on the graph inputs."""
    if not by_name and not by_denotation:
        return
    notes = model.model_info.dim_denotations if model.model_info is not None else {}
    for v in model.inputs:
        if v.shape is None:
            continue
        den = notes.get(v.name, [])
        dims = []
        for k, d in enumerate(v.shape):
            if isinstance(d, str) and d in by_name:
                d = by_name[d]
            elif not isinstance(d, int) and k < len(den) and den[k] in by_denotation:
                d = by_denotation[den[k]]
            dims.append(d)
        model.values[v.name] = ValueInfo(v.name, v.dtype, tuple(dims))
    model.inputs[:] = [model.values[v.name] if v.shape is not None else v for v in model.inputs]


class _RunWatch:
    """Stands in for the profiler while a run has RunOptions: after each op (plan ops run one call
    each then, as when profiling), it stops the run if RunOptions.terminate is set, and passes
    events on to the real profiler if there is one."""

    def __init__(self, run_options, prof):
        self.run_options, self.prof = run_options, prof
        self.clock = prof.clock if prof is not None else _zero

    def check(self):
        if self.run_options.terminate:
            raise RunTerminated("Exiting due to terminate flag being set to true (RunOptions.terminate)")

    def node(self, *args):
        if self.prof is not None:
            self.prof.node(*args)
        self.check()

    def session(self, *args):
        if self.prof is not None:
            self.prof.session(*args)


def _zero():
    return 0


def _feed_bytes(t):
    """A feed's bytes from its type and shape (a sequence: its tensors'), without reading them."""
    if isinstance(t, (list, tuple)):
        return sum(map(_feed_bytes, t))
    shape, dtype = getattr(t, "shape", None), getattr(t, "dtype", None)
    if shape is None or dtype is None:
        return 0
    n = 1
    for d in shape:
        n *= int(d)
    return n * max(getattr(dtype, "size", 0) or 0, 1)


class _Prepared:
    """A graph specialised to concrete input shapes, partitioned and compiled; or, traced with
    symbolic dims (symbolic.py), to every input shape for which its guards hold."""
    guards = None   # {…: guard} of a traced variant
    dim_names = None   # {input name: [dim name or None per axis]} of a traced variant

    def __init__(self, graph, providers):
        self.graph = graph   # its initializers hold the graph outputs folded for these shapes
        self.fallback_reasons = {}
        self.parts = partition(graph, providers, self.fallback_reasons)
        self.runners = [p.provider.compile(p, graph) for p in self.parts]
        self.assignment = [(n.name, n.op_type, p.provider.name) for p in self.parts for n in p.nodes]

    derived = {}   # {dim name: Sym} of names that are expressions of other dims (symbolic.derived_dims)

    def dims_of(self, shapes):
        dims = _dims(self.dim_names, shapes)
        if dims and self.derived:
            with symbolic.Binding(dims):
                if any(symbolic.value(e) != dims[n] for n, e in self.derived.items()):
                    return None   # a mask whose length is not the past's plus the new tokens'
        return dims


def _dims(dim_names, shapes):
    """{dim name: value} of these input shapes, or None where one name takes two values."""
    dims = {}
    for name, axes in dim_names.items():
        for d, v in zip(axes, shapes[name]):
            if d is not None and dims.setdefault(d, v) != v:
                return None
    return dims


def _split_names(dim_names, shapes):
    """dim_names where a name these shapes give two values (an exporter's 'sequence_length' on both
    input_ids and a decoder's attention_mask, whose length is the past's plus the new tokens') is
    replaced by one name per input axis: the feeds say those are different dims."""
    seen, clash = {}, set()
    for name, axes in dim_names.items():
        for d, v in zip(axes, shapes[name]):
            if d is not None and seen.setdefault(d, v) != v:
                clash.add(d)
    return {name: [f"{name}[{k}]" if d in clash else d for k, d in enumerate(axes)]
            for name, axes in dim_names.items()}


class InferenceSession:
    # .nnwp plan files (recognised by their magic) get a PlanSession: same API, no ONNX. PlanSession
    # subclasses this class, so this module does not import it: __init__.py sets _plan_session_class
    # to a function importing plan_session.py at the first plan file (an ONNX session in Pyodide
    # never compiles it).
    _plan_session_class = None
    _released = False

    def __new__(cls, path_or_bytes=None, *args, **kwargs):
        data = _read_once(path_or_bytes)
        if cls is InferenceSession and _starts_with_plan_magic(data):
            cls = InferenceSession._plan_session_class()
        self = super().__new__(cls)
        self._read_in_new = data   # __init__ takes it: the file is not read again
        return self

    def _take_read(self, path_or_bytes):
        """What __new__ read for path_or_bytes (once), or path_or_bytes itself."""
        data = self.__dict__.pop("_read_in_new", path_or_bytes)
        return data if isinstance(data, bytes) and data is not path_or_bytes else path_or_bytes

    def __init__(self, path_or_bytes, sess_options=None, providers=None, provider_options=None, **kwargs):
        self._sess_options = _check_session_options(sess_options)
        if self._sess_options._load_cancelled:
            raise ModelLoadCanceled("session creation was cancelled (SessionOptions.set_load_cancellation_flag)")
        self._profiler = prof = self._new_profiler()
        t0 = prof and prof.clock()
        self._providers = _resolve_providers(providers, provider_options, self._sess_options)
        self._start_threads()
        self._fallback_enabled = True
        self._path = path_or_bytes if isinstance(path_or_bytes, (str, os.PathLike)) else None
        source = self._take_read(path_or_bytes)
        if isinstance(source, (bytearray, memoryview)):
            source = bytes(source)   # kept to rebuild (set_providers, overrides): one copy
        # A path's bytes are kept, read once: rebuilding reads no file again, and they cost no
        # memory of their own (the initializers are views of them)
        self._source = source
        model = self._load()
        if prof:
            from_file = not isinstance(path_or_bytes, (bytes, bytearray, memoryview))
            prof.session("model_loading_uri" if from_file else "model_loading_array", t0)
            t0 = prof.clock()
        self._build(model)
        if prof:
            prof.session("session_initialization", t0)

    def _start_threads(self):
        """intra_op_num_threads > 1 in CPython: the session's flavour's +threads kernels.wasm of its own
        (simd+threads, or relaxed+threads when the session runs `relaxed`) with a thread pool
        (host/threads.py), stopped by release() or when the session is collected."""
        self._release_threads = None
        n = self._sess_options.intra_op_num_threads
        if sys.platform == "emscripten":   # Pyodide: env.wasm.numThreads and the JS pool (pyodide_host.py)
            from .host import pyodide_host
            base = next((p.flavour for p in self._providers if getattr(p, "flavour", None) in ("simd", "relaxed")), "simd")
            key = pyodide_host.threaded_key(base)
            for p in self._providers:
                if key and getattr(p, "flavour", None) in ("simd", "relaxed"):
                    p.flavour = key
            return
        wasm = [p for p in self._providers if getattr(p, "flavour", None) in ("simd", "relaxed")]
        if n > 1 and wasm:
            from .host import threads
            key = threads.start_host(n, wasm[0].flavour)   # kernels-threads.wasm / kernels-relaxed-threads.wasm
            if key is None:
                return
            for p in wasm:
                p.flavour = key
            self._release_threads = weakref.finalize(self, threads.release_host, key)

    def release(self):
        """Stops the session's helper threads and frees its kernels.wasm (intra_op_num_threads > 1);
        the session can't run afterwards. Without threads, a no-op."""
        if self._release_threads is not None:
            self._released = True   # checked by _run before it touches the freed kernels.wasm
            self._release_threads()   # waits for a run holding the host's lock

    def _load(self):
        """The model as loaded, with SessionOptions' initializers and free dimension overrides."""
        so = self._sess_options
        try:
            model = load_model(self._source)
        except FileNotFoundError as e:
            raise NoSuchFile(f"model file '{self._path}' does not exist") from e
        except IsADirectoryError as e:
            raise InvalidArgument(f"model path '{self._path}' is a directory, not a model file") from e
        except OSError as e:
            raise NoSuchFile(f"model file '{self._path}' can't be read: {e}") from e
        _apply_initializers(model, so._initializers)
        _apply_dim_overrides(model, so._dim_by_name, so._dim_by_denotation)
        return model

    def _build(self, model):
        """Optimizes, infers shapes and (for static input shapes) partitions and compiles."""
        self._level = int(self._sess_options.graph_optimization_level)
        info = model.model_info
        # Initializers the graph also lists as inputs (IR >= 4) may be fed: onnxruntime's
        # overridable initializers. Their declared type and shape are what a feed must match.
        names = info.initializer_inputs if info is not None and info.ir_version >= 4 else []
        self._overridable = {n: model.values.get(n) or ValueInfo(n, model.initializers[n].dtype,
                                                                 model.initializers[n].shape) for n in names}
        graph = optimizer.optimize(model, "graph", self._level, self._providers)
        declared = list(graph.nodes)
        self._graph = passes.infer_shapes(graph)
        passes.refuse_invalid_bodies(declared, self._graph)
        # Inputs whose values set shapes (shape_values.py): variants are per value too.
        self._shape_values = shape_values.shape_value_inputs(self._graph)
        static = all(v.is_static() and v.kind == "tensor" for v in graph.inputs) and not self._shape_values
        optimizer.optimize(self._graph, "shaped", self._level, self._providers, static)
        if self._sess_options.optimized_model_filepath:
            from .onnx_io.save import save_model   # the ONNX writer, only for this option
            save_model(self._graph, self._sess_options.optimized_model_filepath)
        self._inputs = [NodeArg(v.name, v.dtype, v.shape, v.kind) for v in graph.inputs]
        self._outputs = [NodeArg(v.name, v.dtype, _first_known(self._graph.values.get(v.name, v).shape, v.shape),
                                 v.kind) for v in graph.outputs]
        self._cache = OrderedDict()
        self._traced_variants = []   # variants traced with symbolic dims, most recent first
        self._traced_reused = False   # whether one served other shapes than its own
        # {input: [dim name or None per axis]}: the symbolic dims a variant is traced with
        self._dim_names = None if static or not _SYMBOLIC or self._shape_values or any(v.kind != "tensor" or v.shape is None for v in graph.inputs) \
            else {v.name: [d if isinstance(d, str) else f"{v.name}[{k}]" if d is None else None
                           for k, d in enumerate(v.shape)] for v in graph.inputs}
        if static:
            key = tuple(tuple(v.shape) for v in graph.inputs)
            self._cache[key] = _Prepared(self._graph, self._providers)
        else:
            # Unsupported ops fail at creation, as in onnxruntime; what needs concrete shapes waits.
            assign(self._graph, self._providers, defer=True)
            for p in self._providers:   # a variant per input shape: their plans share derived weights
                if hasattr(p, "derived"):
                    p.derived = {}

    # --- onnxruntime's introspection API ---------------------------------------------------
    def get_inputs(self):
        return list(self._inputs)

    def get_outputs(self):
        return list(self._outputs)

    def get_modelmeta(self):
        return ModelMetadata(self._graph.model_info)

    def get_overridable_initializers(self):
        """NodeArgs of the initializers the model also lists as graph inputs (IR >= 4): a feed of
        that name replaces the initializer for that run (its type and shape must match)."""
        return [NodeArg(n, vi.dtype, vi.shape) for n, vi in self._overridable.items()]

    def get_providers(self):
        return [p.name for p in self._providers]

    def set_providers(self, providers=None, provider_options=None):
        """Rebuilds the session for these providers (None: the default list). A bad list raises
        and leaves the session as it was (onnxruntime's session is unusable after that)."""
        new = _resolve_providers(providers, provider_options, self._sess_options)
        saved = dict(self.__dict__)
        try:
            self._providers = new
            self._build(self._load())
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(saved)
            raise

    def disable_fallback(self):
        """onnxruntime retries a failed session creation on CPU unless this is called; nnwasm never
        retries (creation fails with the reason), so this is recorded only."""
        self._fallback_enabled = False

    def enable_fallback(self):
        self._fallback_enabled = True

    def get_provider_graph_assignment_info(self):
        """onnxruntime's per-EP subgraphs: one OrtEpAssignedSubgraph per partition, in run order."""
        return _assigned_subgraphs(self.get_provider_assignment())

    def get_tuning_results(self):
        return []   # no tunable ops: kernels.wasm picks its algorithms itself

    def set_tuning_results(self, results, error_on_invalid=False):
        if results and error_on_invalid:
            raise InvalidArgument("nnwasm has no tunable ops: tuning results don't apply")

    def release_captured_graph(self):
        pass   # no graph capture (CUDA graphs) in nnwasm

    def get_input_memory_infos(self):
        return [_CPU_MEMORY_INFO for _ in self._inputs]

    def get_output_memory_infos(self):
        return [_CPU_MEMORY_INFO for _ in self._outputs]

    def get_input_epdevices(self):
        return [None for _ in self._inputs]   # no EP devices (get_ep_devices() is empty)

    def set_ep_dynamic_options(self, keys, values):
        raise Unsupported("set_ep_dynamic_options: nnwasm's providers have no dynamic options")

    def get_provider_options(self):
        return {p.name: dict(p.options) for p in self._providers}

    def get_session_options(self):
        return self._sess_options

    def get_provider_assignment(self):
        """[(node name, op type, provider name)] for the most recently prepared input shapes; its
        `kernels_flavour` says which kernels.wasm the WASM nodes run on (host/flavours.py)."""
        flavour = next((p.flavour for p in self._providers if hasattr(p, "flavour")), None)
        if self._cache:
            return flavours.ProviderAssignment(next(reversed(self._cache.values())).assignment, flavour)
        chosen = assign(self._graph, self._providers, defer=True)   # provisional until the first run
        return flavours.ProviderAssignment([(n.name, n.op_type, p.name) for n, p in zip(self._graph.nodes, chosen)],
                                           flavour)

    def get_fallback_reasons(self):
        """{node name: why} for each node that runs on a later provider than the first, with the
        earlier providers' reasons (the WASM capability check's answer), for the same input
        shapes as get_provider_assignment()."""
        if self._cache:
            reasons = next(reversed(self._cache.values())).fallback_reasons
        else:
            reasons = {}
            assign(self._graph, self._providers, defer=True, fallback_reasons=reasons)
        return dict(reasons)

    # --- profiling (onnxruntime's API; profiling.py) -----------------------------------------
    def _new_profiler(self):
        opts = self._sess_options
        return Profiler(opts.profile_file_prefix) if opts.enable_profiling else None

    def end_profiling(self):
        """Writes the trace recorded since the session was created (or profiling started) to
        `<profile_file_prefix>_<date>_<time>.json` in the working directory and returns that file
        name; profiling then stops. "" (no file) when the session is not profiling."""
        prof, self._profiler = self._profiler, None
        return prof.write() if prof else ""

    def get_profiling_start_time_ns(self):
        """When profiling started, in ns since the epoch; 0 when the session is not profiling."""
        return self._profiler.start_ns if self._profiler else 0

    def _start_profiling(self, prefix=None):
        """Starts (or restarts) recording; the JS sessions' startProfiling(). Not onnxruntime API."""
        self._profiler = Profiler(prefix or self._sess_options.profile_file_prefix)

    def _end_profiling_events(self):
        """The recorded events (a list) without writing a file, and profiling stops; None when not
        profiling. For the JS sessions' endProfiling()."""
        prof, self._profiler = self._profiler, None
        return prof.events if prof else None

    # --- running ---------------------------------------------------------------------------
    def run(self, output_names, input_feed, run_options=None):
        """Feeds: numpy arrays, lists, scalars, OrtValues, nnwasm.Tensor, buffers (values.py);
        results: numpy arrays, or nnwasm.Tensor where numpy can't be imported (user_tensor.py)."""
        declared = self._declared()
        feeds = {}
        for name, value in self._check_feed_names(input_feed).items():
            if isinstance(value, OrtValue):
                value = value._td()
            feeds[name] = values.from_user(name, value, declared.get(name))   # lists: sequences; None: optionals
        as_numpy = values.numpy_or_none() is not None
        return [values.to_user(v, as_numpy) for v in self._run(output_names, feeds, run_options)]

    def _declared(self):
        """{name: ValueInfo} of what may be fed: the graph inputs and overridable initializers."""
        return {**self._overridable, **{v.name: v for v in self._graph.inputs}}

    def _run_raw(self, output_names, feeds, run_options=None):
        """Internal (the JS bridge's path, not API): feeds and results are TensorData, unchecked
        beyond the session's own feed checks. Users call run(), which needs no numpy either."""
        return self._run(output_names, self._check_feed_names(feeds), run_options)

    def run_with_ort_values(self, output_names, input_dict_ort_values, run_options=None):
        """Feeds and results are OrtValues (numpy is needed only if the caller reads them as arrays)."""
        feeds = {}
        for name, value in self._check_feed_names(input_dict_ort_values).items():
            if not isinstance(value, OrtValue):
                raise InvalidArgument(f"run_with_ort_values: input '{name}' must be an OrtValue "
                                      f"(OrtValue.ortvalue_from_numpy), got {type(value).__name__}")
            feeds[name] = value._td()
        return [OrtValue(t) for t in self._run(output_names, feeds, run_options)]

    def run_with_ortvaluevector(self, run_options, feed_names, feeds, fetch_names, fetches, fetch_devices=None):
        """onnxruntime's low-level form: feeds a list of OrtValues in feed_names' order; the results
        are appended to the list `fetches`."""
        if len(feed_names) != len(feeds):
            raise InvalidArgument(f"run_with_ortvaluevector: {len(feed_names)} feed names for {len(feeds)} feeds")
        fetches.extend(self.run_with_ort_values(list(fetch_names), dict(zip(feed_names, feeds)), run_options))

    def run_async(self, output_names, input_feed, callback, user_data, run_options=None):
        """Runs in a new thread and calls callback(outputs, user_data, error message) when done;
        outputs is [] and the message says why if the run failed. The feed names are checked now."""
        if not callable(callback):
            raise InvalidArgument(f"run_async: callback must be callable, got {type(callback).__name__}")
        self._check_feed_names(input_feed)
        self._check_output_names(output_names)

        def work():
            try:
                outs = self.run(output_names, input_feed, run_options)
            except Exception as e:   # reported to the callback, as onnxruntime does
                callback([], user_data, f"{type(e).__name__}: {e}")
                return
            callback(outs, user_data, "")
        try:
            threading.Thread(target=work, name="nnwasm-run-async", daemon=True).start()
        except RuntimeError as e:   # Pyodide: no threads
            raise Unsupported(f"run_async needs a thread, which this Python can't start ({e}); use run()") from None

    def io_binding(self):
        from .iobinding import IOBinding
        return IOBinding(self)

    def run_with_iobinding(self, iobinding, run_options=None):
        from .iobinding import IOBinding
        if not isinstance(iobinding, IOBinding):
            raise InvalidArgument(f"run_with_iobinding takes an IOBinding (session.io_binding()), "
                                  f"got {type(iobinding).__name__}")
        iobinding._run(self, run_options)

    def create_ortvalue_from_shape_and_type(self, shape, element_type, device_type="cpu", device_id=0, vendor_id=-1):
        return OrtValue.ortvalue_from_shape_and_type(shape, element_type, device_type, device_id, vendor_id)

    def _run(self, output_names, feeds, run_options=None):
        """Every run, once its feed names are checked."""
        if self._released:
            raise SessionClosed("this session was released (InferenceSession.release()): it can't run any more")
        watch = self._watch(run_options)
        prof = watch or self._profiler
        t0 = prof and prof.clock()
        names = self._check_output_names(output_names)
        memory_limit.check_feeds(next((p.budget for p in self._providers if getattr(p, "budget", None)), None),
                                 feeds, _feed_bytes)
        shapes = {}
        for arg, vi in zip(self._inputs, self._graph.inputs):
            t = feeds[arg.name]
            if vi.kind == "tensor":
                self._check_feed(arg, vi, t)
            shapes[arg.name] = t.shape if vi.kind == "tensor" else vi.shape   # a sequence: its elements' shape
        over = {}
        for name, vi in self._overridable.items():
            if name in feeds:
                self._check_feed(NodeArg(name, vi.dtype, vi.shape), vi, feeds[name])
                over[name] = feeds[name].shape
        prepared = self._prepared(shapes, over, shape_values.specialised(self._shape_values, feeds))
        # a traced variant's run may compile an If branch first taken now: its decisions are guards too
        with symbolic.Binding(prepared.dims_of(shapes) if prepared.guards is not None else {}, guards=prepared.guards):
            while True:
                env = dict(feeds)
                try:
                    for runner in prepared.runners:
                        if watch:
                            watch.check()   # between partitions
                        runner.run(env, prof)
                    break
                except WasmOutOfMemory as e:   # a traced variant's arena grown for these dims
                    if e.hopeless or not self._drop_other_variant(prepared):
                        raise
            if prof:
                prof.session("model_run", t0)
            out = []
            for n in names:
                if n in env:
                    out.append(env[n])
                elif n in prepared.graph.initializers:   # an output folded for these shapes (Shape of an input)
                    t = prepared.graph.initializers[n]
                    out.append(TensorData(t.dtype, t.shape, t.data) if isinstance(t, SymTensor) else t)
                else:   # a graph output that is an initializer
                    out.append(self._graph.initializers[n])
        return out

    def _watch(self, run_options):
        """A _RunWatch for a run with RunOptions (None without); a terminated run stops here."""
        if run_options is None:
            return None
        if not isinstance(run_options, RunOptions):
            raise InvalidArgument(f"run_options must be an nnwasm.RunOptions, got {type(run_options).__name__}")
        watch = _RunWatch(run_options, self._profiler)
        watch.check()
        return watch

    def _check_feed_names(self, feed):
        if not isinstance(feed, dict):
            raise InvalidArgument(f"input_feed must be a dict of input name -> array, got {type(feed).__name__}")
        expected = [a.name for a in self._inputs]
        unknown = [k for k in feed if k not in expected and k not in self._overridable]
        if unknown:
            extra = f" and overridable initializers {list(self._overridable)}" if self._overridable else ""
            raise InvalidArgument(f"invalid input name(s) {unknown}; the model's inputs are {expected}{extra}")
        missing = [k for k in expected if k not in feed]
        if missing:
            raise InvalidArgument(f"required input(s) {missing} are missing from the feed (got {list(feed)})")
        return feed

    def _check_output_names(self, output_names):
        known = [a.name for a in self._outputs]
        if output_names is None:
            return known
        if isinstance(output_names, (str, bytes)) or not isinstance(output_names, (list, tuple)):
            raise InvalidArgument(f"output_names must be a list of names or None, got {output_names!r}")
        if len(output_names) == 0:
            return known
        bad = [n for n in output_names if n not in known]
        if bad:
            raise InvalidArgument(f"invalid output name(s) {bad}; the model's outputs are {known}")
        return list(output_names)

    @staticmethod
    def _check_feed(arg, vi, t):
        if vi.dtype is not None and t.dtype != vi.dtype:
            raise InvalidArgument(f"input '{arg.name}' has type {t.dtype.ort_type}, expected {vi.dtype.ort_type}")
        if vi.shape is None:
            return
        if len(t.shape) != len(vi.shape):
            raise InvalidArgument(f"input '{arg.name}' has rank {len(t.shape)} (shape {list(t.shape)}), "
                                  f"expected rank {len(vi.shape)} (shape {list(vi.shape)})")
        bad = [i for i, (g, e) in enumerate(zip(t.shape, vi.shape)) if isinstance(e, int) and g != e]
        if bad:
            raise InvalidArgument(f"input '{arg.name}' has shape {list(t.shape)}, expected {list(vi.shape)} "
                                  f"(mismatch at dimension {', '.join(map(str, bad))})")

    def _compile_evicting(self, graph):
        """_Prepared(graph); where kernels.wasm's memory can't hold its plans, the variants prepared
        for other shapes are dropped, least recently used first, until it fits (a decoder with
        500 MB of weights otherwise runs out at its third past length: each variant has its own arena)."""
        while True:
            try:
                return _Prepared(graph, self._providers)
            except WasmOutOfMemory as e:
                if e.hopeless or not self._drop_other_variant(None):
                    raise

    def _drop_other_variant(self, keep):
        """Drops the least recently used variant other than `keep`; False when there is none."""
        for key, prepared in self._cache.items():
            if prepared is not keep:
                del self._cache[key]   # its runners' finalizers queue their memory for freeing
                break
        else:
            others = [p for p in self._traced_variants if p is not keep]
            if not others:
                return False
            self._traced_variants.remove(others[-1])
        self._traced_variants = [p for p in self._traced_variants if p is keep or p in self._cache.values()]
        gc.collect()   # a failed attempt's runners, held by the traceback's frames until now
        return True

    def _traced(self, shapes):
        """A variant for these shapes traced with symbolic dims: one already traced whose guards
        hold for them, or a new one; None where tracing does not apply (no symbolic dims, a
        sequence input, a dim name given two values) or failed (then the shapes are prepared
        as concrete ones, which raises whatever error they deserve)."""
        if not self._dim_names:
            return None
        for prepared in self._traced_variants:
            dims = prepared.dims_of(shapes)
            if dims is not None and prepared.check(dims):
                self._traced_reused = True
                return prepared
        names = _split_names(self._dim_names, shapes)
        dims = _dims(names, shapes)
        if not dims:
            return None
        if len(self._traced_variants) >= _MAX_UNREUSED_TRACES and not self._traced_reused:
            return None   # every trace so far specialised on its dims: prepare concrete shapes, cheaper
        derived = symbolic.derived_dims(dims)
        syms = {d: derived[d] if d in derived else symbolic.Sym.var(d) for d in dims}
        sym_shapes = {n: tuple(syms[d] if d is not None else v for d, v in zip(names[n], shapes[n])) for n in names}
        g = self._graph
        spec = Graph(list(g.nodes), g.inputs, g.outputs, dict(g.initializers), {}, dict(g.opsets), g.name)
        try:
            with symbolic.Binding(dims, trace=True) as binding:
                spec = passes.infer_shapes(spec, sym_shapes)
                prepared = self._compile_evicting(optimizer.optimize(spec, "shaped", self._level, self._providers))
        except Exception:   # noqa: BLE001  (an op that can't take a Sym: the concrete path decides)
            if symbolic.DEBUG:
                raise
            return None
        prepared.guards, prepared.dim_names, prepared.derived = binding.guards, names, derived
        prepared.check = symbolic.Checker(binding.guards)
        self._traced_variants.insert(0, prepared)
        del self._traced_variants[_PLAN_CACHE_SIZE:]
        return prepared

    def _prepared(self, shapes, over=None, fixed=None):
        """The variant for these input shapes; with overridden initializers ({name: shape}), one
        rebuilt from the model with those initializers made graph inputs (never folded); with
        fixed ({name: TensorData}, inputs that set shapes), one where they are constants."""
        key = tuple(None if shapes[a.name] is None else tuple(shapes[a.name]) for a in self._inputs)
        if over:
            key = (key, tuple(sorted((n, tuple(sh)) for n, sh in over.items())))
        if fixed:
            key = (key, shape_values.key(fixed))
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
            return hit
        prof = self._profiler
        t0 = prof and prof.clock()
        prepared = None if over or fixed else self._traced(shapes)
        if prepared is not None:
            self._cache[key] = prepared
            if prof:
                prof.session("prepare_input_shapes", t0)
            return prepared
        if over:
            g = self._load()
            for name in over:
                vi = self._overridable[name]
                g.inputs.append(ValueInfo(name, vi.dtype, vi.shape))
                del g.initializers[name]
            g = optimizer.optimize(g, "graph", self._level, self._providers)
        else:
            g = self._graph
        fixed = fixed or {}
        spec = Graph(list(g.nodes), [v for v in g.inputs if v.name not in fixed], g.outputs,
                     {**g.initializers, **fixed}, {}, dict(g.opsets), g.name)
        try:
            spec = passes.infer_shapes(spec, {n: sh for n, sh in {**shapes, **(over or {})}.items() if n not in fixed})
        except InvalidModel as e:
            if fixed:   # the model was sound at creation: the fed values (a k, a size) are what is wrong
                given = ", ".join(f"{n} = {t.tolist()}" for n, t in fixed.items())
                raise InvalidArgument(f"{e} (fed {given})") from e
            # the model was fine for its symbolic dims: the feeds contradict it (a past whose length
            # disagrees with the attention mask), as onnxruntime's INVALID_ARGUMENT
            raise InvalidArgument(f"the model can't run with these input shapes: {e}") from None
        prepared = self._compile_evicting(optimizer.optimize(spec, "shaped", self._level, self._providers))
        self._cache[key] = prepared
        if len(self._cache) > _PLAN_CACHE_SIZE:
            self._cache.popitem(last=False)
        if prof:
            prof.session("prepare_input_shapes", t0)
        return prepared
