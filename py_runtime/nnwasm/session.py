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
import os
from collections import OrderedDict

from . import optimizer, passes
from .errors import InvalidArgument
from .ir import Graph, ValueInfo
from .onnx_io.load import load_model
from .options import SessionOptions
from .partition import assign, partition
from .profiling import Profiler
from .providers import DEFAULT_ORDER, PROVIDERS
from . import values

_PLAN_CACHE_SIZE = 8


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


def _starts_with_plan_magic(path_or_bytes):
    """True for plan file bytes or a path to one; False (never an error) for anything else."""
    from .planfile import is_plan_file
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        return is_plan_file(path_or_bytes)
    if isinstance(path_or_bytes, (str, os.PathLike)):
        try:
            with open(path_or_bytes, "rb") as f:
                return is_plan_file(f.read(4))
        except OSError:
            return False   # the ONNX path reports it
    return False


def get_available_providers():
    return list(DEFAULT_ORDER)


def _resolve_providers(providers, provider_options, sess_options):
    names, options = [], []
    for i, p in enumerate(providers or DEFAULT_ORDER):
        name, opts = (p if isinstance(p, (tuple, list)) else (p, {}))
        if name not in PROVIDERS:
            raise InvalidArgument(f"unknown provider '{name}'; available: {get_available_providers()}")
        if provider_options is not None and i < len(provider_options):
            opts = {**opts, **provider_options[i]}
        names.append(name)
        options.append(opts)
    if sess_options.disable_cpu_ep_fallback() and len(names) > 1:
        keep = [k for k, n in enumerate(names) if n != "NumpyExecutionProvider"]
        names, options = [names[k] for k in keep], [options[k] for k in keep]
    return [PROVIDERS[n](o) for n, o in zip(names, options)]


class _Prepared:
    """A graph specialised to concrete input shapes, partitioned and compiled."""

    def __init__(self, graph, providers):
        self.fallback_reasons = {}
        self.parts = partition(graph, providers, self.fallback_reasons)
        self.runners = [p.provider.compile(p, graph) for p in self.parts]
        self.assignment = [(n.name, n.op_type, p.provider.name) for p in self.parts for n in p.nodes]


class InferenceSession:
    def __new__(cls, path_or_bytes=None, *args, **kwargs):
        # .nnwp plan files (recognised by their magic) get a PlanSession: same API, no ONNX.
        # plan_session.py is imported for them only (an ONNX session in Pyodide never compiles it).
        if cls is InferenceSession and _starts_with_plan_magic(path_or_bytes):
            from .plan_session import PlanSession
            return super().__new__(PlanSession)
        return super().__new__(cls)

    def __init__(self, path_or_bytes, sess_options=None, providers=None, provider_options=None, **kwargs):
        self._sess_options = sess_options or SessionOptions()
        self._profiler = prof = self._new_profiler()
        t0 = prof and prof.clock()
        self._providers = _resolve_providers(providers, provider_options, self._sess_options)
        self._level = int(self._sess_options.graph_optimization_level)
        model = load_model(path_or_bytes)
        if prof:
            from_file = not isinstance(path_or_bytes, (bytes, bytearray, memoryview))
            prof.session("model_loading_uri" if from_file else "model_loading_array", t0)
            t0 = prof.clock()
        graph = optimizer.optimize(model, "graph", self._level, self._providers)
        self._graph = passes.infer_shapes(graph)
        static = all(v.is_static() and v.kind == "tensor" for v in graph.inputs)
        optimizer.optimize(self._graph, "shaped", self._level, self._providers, static)
        if self._sess_options.optimized_model_filepath:
            from .onnx_io.save import save_model   # the ONNX writer, only for this option
            save_model(self._graph, self._sess_options.optimized_model_filepath)
        self._inputs = [NodeArg(v.name, v.dtype, v.shape, v.kind) for v in graph.inputs]
        self._outputs = [NodeArg(v.name, v.dtype, _first_known(self._graph.values.get(v.name, v).shape, v.shape),
                                 v.kind) for v in graph.outputs]
        self._cache = OrderedDict()
        if static:
            key = tuple(tuple(v.shape) for v in graph.inputs)
            self._cache[key] = _Prepared(self._graph, self._providers)
        else:
            # Unsupported ops fail at creation, as in onnxruntime; what needs concrete shapes waits.
            assign(self._graph, self._providers, defer=True)
        if prof:
            prof.session("session_initialization", t0)

    # --- onnxruntime's introspection API ---------------------------------------------------
    def get_inputs(self):
        return list(self._inputs)

    def get_outputs(self):
        return list(self._outputs)

    def get_modelmeta(self):
        return ModelMetadata(self._graph.model_info)

    def get_overridable_initializers(self):
        return []

    def get_providers(self):
        return [p.name for p in self._providers]

    def get_provider_options(self):
        return {p.name: dict(p.options) for p in self._providers}

    def get_session_options(self):
        return self._sess_options

    def get_provider_assignment(self):
        """[(node name, op type, provider name)] for the most recently prepared input shapes."""
        if self._cache:
            return list(next(reversed(self._cache.values())).assignment)
        chosen = assign(self._graph, self._providers, defer=True)   # provisional until the first run
        return [(n.name, n.op_type, p.name) for n, p in zip(self._graph.nodes, chosen)]

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
        declared = {v.name: v for v in self._graph.inputs} if hasattr(self, "_graph") else {}   # PlanSession: tensors
        feeds = {name: values.from_user(name, value, declared.get(name))   # arrays, lists (sequences), None
                 for name, value in self._check_feed_names(input_feed).items()}
        return [values.to_user(v) for v in self._run(output_names, feeds)]

    def run_raw(self, output_names, feeds):
        """run() without numpy: feeds and results are TensorData. The JS bridge uses this."""
        return self._run(output_names, self._check_feed_names(feeds))

    def _run(self, output_names, feeds):
        """Both runs, once their feed names are checked."""
        prof = self._profiler
        t0 = prof and prof.clock()
        names = self._check_output_names(output_names)
        shapes = {}
        for arg, vi in zip(self._inputs, self._graph.inputs):
            t = feeds[arg.name]
            if vi.kind == "tensor":
                self._check_feed(arg, vi, t)
            shapes[arg.name] = t.shape if vi.kind == "tensor" else vi.shape   # a sequence: its elements' shape
        prepared = self._prepared(shapes)
        env = dict(feeds)
        for runner in prepared.runners:
            runner.run(env, prof)
        if prof:
            prof.session("model_run", t0)
        out = []
        for n in names:
            if n in env:
                out.append(env[n])
            else:   # a graph output that is an initializer
                out.append(self._graph.initializers[n])
        return out

    def _check_feed_names(self, feed):
        if not isinstance(feed, dict):
            raise InvalidArgument(f"input_feed must be a dict of input name -> array, got {type(feed).__name__}")
        expected = [a.name for a in self._inputs]
        unknown = [k for k in feed if k not in expected]
        if unknown:
            raise InvalidArgument(f"invalid input name(s) {unknown}; the model's inputs are {expected}")
        missing = [k for k in expected if k not in feed]
        if missing:
            raise InvalidArgument(f"required input(s) {missing} are missing from the feed (got {list(feed)})")
        return feed

    def _check_output_names(self, output_names):
        known = [a.name for a in self._outputs]
        if output_names is None or len(output_names) == 0:
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

    def _prepared(self, shapes):
        key = tuple(None if shapes[a.name] is None else tuple(shapes[a.name]) for a in self._inputs)
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
            return hit
        prof = self._profiler
        t0 = prof and prof.clock()
        g = self._graph
        spec = Graph(list(g.nodes), g.inputs, g.outputs, dict(g.initializers), {}, dict(g.opsets), g.name)
        spec = passes.infer_shapes(spec, shapes)
        prepared = _Prepared(optimizer.optimize(spec, "shaped", self._level, self._providers), self._providers)
        self._cache[key] = prepared
        if len(self._cache) > _PLAN_CACHE_SIZE:
            self._cache.popitem(last=False)
        if prof:
            prof.session("prepare_input_shapes", t0)
        return prepared
