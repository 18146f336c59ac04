"""SessionOptions and RunOptions, shaped like onnxruntime's so existing code keeps working.
Options nnwasm has no use for are accepted and kept (so code setting them runs unchanged); a value
of the wrong type or out of range is refused when it is set (InvalidArgument naming the option),
where onnxruntime would fail later or misbehave. docs/onnxruntime-api.md lists each field."""
import enum
import os

from .errors import InvalidArgument, MissingConfigEntry, Unsupported
from .host import flavours
from . import memory_limit


class GraphOptimizationLevel(enum.IntEnum):
    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_LAYOUT = 3     # onnxruntime's layout passes (NHWC for some EPs); nnwasm runs extended's
    ORT_ENABLE_ALL = 99


class ExecutionMode(enum.IntEnum):
    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1          # kernels.wasm is single-threaded: runs sequentially


class ExecutionOrder(enum.IntEnum):
    DEFAULT = 0
    PRIORITY_BASED = 1
    MEMORY_EFFICIENT = 2      # nnwasm's plan arena is already laid out by live ranges


class OrtMemType(enum.IntEnum):
    CPU_INPUT = -2
    CPU_OUTPUT = -1
    CPU = -1
    DEFAULT = 0


# Session config keys nnwasm reads; every other key is stored and ignored, as onnxruntime does.
DISABLE_CPU_EP_FALLBACK = "session.disable_cpu_ep_fallback"


def _check_int(owner, name, value, low, high=None):
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgument(f"{owner}.{name} must be an int, got {type(value).__name__} {value!r}")
    if value < low or (high is not None and value > high):
        span = f"{low}..{high}" if high is not None else f">= {low}"
        raise InvalidArgument(f"{owner}.{name} must be {span}, got {value}")
    return int(value)


def _check_enum(owner, name, value, enum_type):
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgument(f"{owner}.{name} must be a {enum_type.__name__}, got {type(value).__name__} {value!r}")
    try:
        return enum_type(value)
    except ValueError:
        raise InvalidArgument(f"{owner}.{name}: {value} is not a {enum_type.__name__} "
                              f"(one of {', '.join(m.name for m in enum_type)})") from None


def _check_type(owner, name, value, types, what):
    if not isinstance(value, types):
        raise InvalidArgument(f"{owner}.{name} must be {what}, got {type(value).__name__} {value!r}")
    return value


def _field(name, check, doc=""):
    """A property that validates with check(owner_name, name, value) when set."""
    attr = "_" + name

    def get(self):
        return getattr(self, attr)

    def set_(self, value):
        setattr(self, attr, check(type(self).__name__, name, value))
    return property(get, set_, doc=doc)


def _severity(o, n, v):
    return _check_int(o, n, v, -1, 4)   # -1: the default logger's level (onnxruntime's default)


def _nonneg(o, n, v):
    return _check_int(o, n, v, 0)


def _threads(o, n, v):
    return _check_int(o, n, v, 0)   # 0: the default; kernels.wasm uses one thread whatever is asked


def _bool(o, n, v):
    return bool(_check_type(o, n, v, (bool, int), "a bool"))


def _str(o, n, v):
    return _check_type(o, n, v, str, "a str")


def _path(o, n, v):
    return os.fspath(_check_type(o, n, v, (str, os.PathLike), "a str or path"))


class SessionOptions:
    graph_optimization_level = _field("graph_optimization_level",
                                      lambda o, n, v: _check_enum(o, n, v, GraphOptimizationLevel))
    execution_mode = _field("execution_mode", lambda o, n, v: _check_enum(o, n, v, ExecutionMode))
    execution_order = _field("execution_order", lambda o, n, v: _check_enum(o, n, v, ExecutionOrder))
    intra_op_num_threads = _field("intra_op_num_threads", _threads)
    inter_op_num_threads = _field("inter_op_num_threads", _threads)
    log_severity_level = _field("log_severity_level", _severity)
    log_verbosity_level = _field("log_verbosity_level", _nonneg)
    logid = _field("logid", _str)
    enable_profiling = _field("enable_profiling", _bool)
    profile_file_prefix = _field("profile_file_prefix", _str)
    optimized_model_filepath = _field("optimized_model_filepath", _path)
    enable_mem_pattern = _field("enable_mem_pattern", _bool)
    enable_mem_reuse = _field("enable_mem_reuse", _bool)
    enable_cpu_mem_arena = _field("enable_cpu_mem_arena", _bool)
    use_deterministic_compute = _field("use_deterministic_compute", _bool)   # nnwasm's kernels always are
    use_per_session_threads = _field("use_per_session_threads", _bool)

    def __init__(self):
        self.graph_optimization_level = GraphOptimizationLevel.ORT_ENABLE_ALL
        self.execution_mode = ExecutionMode.ORT_SEQUENTIAL
        self.execution_order = ExecutionOrder.DEFAULT
        self.intra_op_num_threads = 0
        self.inter_op_num_threads = 0
        self.log_severity_level = -1
        self.log_verbosity_level = 0
        self.logid = ""
        self.enable_profiling = False
        self.profile_file_prefix = "nnwasm_profile"   # onnxruntime's is "onnxruntime_profile_"
        self.optimized_model_filepath = ""
        self.enable_mem_pattern = True
        self.enable_mem_reuse = True
        self.enable_cpu_mem_arena = True
        self.use_deterministic_compute = False
        self.use_per_session_threads = True
        self._config = {}
        self._initializers = {}        # name -> OrtValue (add_initializer)
        self._dim_by_name = {}         # symbolic dim name -> size
        self._dim_by_denotation = {}   # dim denotation -> size
        self._providers = []           # [(name, options)] from add_provider
        self._load_cancelled = False

    def add_session_config_entry(self, key, value):
        _check_type("SessionOptions", "add_session_config_entry key", key, str, "a str")
        _check_type("SessionOptions", "add_session_config_entry value", value, str, "a str")
        if key == DISABLE_CPU_EP_FALLBACK and value not in ("0", "1"):
            raise InvalidArgument(f"session config '{key}' must be '0' or '1', got {value!r}")
        if key == memory_limit.CONFIG_KEY:
            memory_limit.parse(value, f"session config '{key}'")
        if key == flavours.CONFIG_KEY:
            flavours.check(value, f"session config '{key}'")
        self._config[key] = value

    def get_session_config_entry(self, key):
        if key not in self._config:
            raise MissingConfigEntry(f"SessionOptions does not have configuration with key: {key}")
        return self._config[key]

    def disable_cpu_ep_fallback(self):
        """nnwasm's reading of "session.disable_cpu_ep_fallback" (not onnxruntime API)."""
        return self._config.get(DISABLE_CPU_EP_FALLBACK, "0") == "1"

    def add_initializer(self, name, ortvalue):
        """The model's initializer `name` is replaced by this value (same type and shape) in every
        session created with these options."""
        from .ortvalue import OrtValue
        _check_type("SessionOptions", "add_initializer name", name, str, "a str")
        if not isinstance(ortvalue, OrtValue):
            raise InvalidArgument(f"SessionOptions.add_initializer('{name}', ...) takes an OrtValue "
                                  f"(OrtValue.ortvalue_from_numpy(array)), got {type(ortvalue).__name__}")
        self._initializers[name] = ortvalue

    def add_external_initializers(self, names, ortvalues):
        """onnxruntime's way to give the values of initializers stored in external data: here, as
        add_initializer for each name."""
        if len(names) != len(ortvalues):
            raise InvalidArgument(f"add_external_initializers: {len(names)} names but {len(ortvalues)} values")
        for n, v in zip(names, ortvalues):
            self.add_initializer(n, v)

    def add_external_initializers_from_files_in_memory(self, *args, **kwargs):
        raise Unsupported("SessionOptions.add_external_initializers_from_files_in_memory is not supported by "
                          "nnwasm: pass the model as bytes with its initializers inline, or use add_initializer")

    def add_free_dimension_override_by_name(self, dim_name, dim_value):
        """Fixes the symbolic input dim `dim_name` to `dim_value` (get_inputs() shows the number; a
        feed of another size is refused)."""
        _check_type("SessionOptions", "add_free_dimension_override_by_name name", dim_name, str, "a str")
        self._dim_by_name[dim_name] = _check_int("SessionOptions", "free dimension override", dim_value, 0)

    def add_free_dimension_override_by_denotation(self, dim_denotation, dim_value):
        """As by_name, for the input dims whose denotation (e.g. "DATA_BATCH") is dim_denotation."""
        _check_type("SessionOptions", "add_free_dimension_override_by_denotation denotation", dim_denotation,
                    str, "a str")
        self._dim_by_denotation[dim_denotation] = _check_int("SessionOptions", "free dimension override",
                                                             dim_value, 0)

    def register_custom_ops_library(self, library_path):
        raise Unsupported(f"register_custom_ops_library('{library_path}'): nnwasm cannot load native "
                          "custom-op libraries (its kernels are one sandboxed WebAssembly module, and it runs "
                          "in browsers); a custom-domain node fails at session creation with its name")

    def add_provider(self, provider_name, provider_options=None):
        from .providers import PROVIDERS
        if provider_name not in PROVIDERS:
            raise InvalidArgument(f"unknown provider '{provider_name}'; nnwasm's are {list(PROVIDERS)}")
        self._providers.append((provider_name, dict(provider_options or {})))

    def has_providers(self):
        return bool(self._providers)

    def add_provider_for_devices(self, *args, **kwargs):
        raise Unsupported("SessionOptions.add_provider_for_devices: nnwasm has no plugin EP devices "
                          "(get_ep_devices() is empty); use providers=[...] or add_provider(name)")

    def set_provider_selection_policy(self, *args, **kwargs):
        raise Unsupported("SessionOptions.set_provider_selection_policy: nnwasm has no EP devices to choose "
                          "from; its providers run in priority order (WASM, then numpy)")

    set_provider_selection_policy_delegate = set_provider_selection_policy

    def set_ep_context_data_read_func(self, *args, **kwargs):
        raise Unsupported("EP context models are not supported by nnwasm (its compiled form is the .nnwp plan file)")

    def clear_ep_context_data_read_func(self):
        pass

    def set_load_cancellation_flag(self, value):
        """True makes a session being created with these options stop with ModelLoadCanceled."""
        self._load_cancelled = _bool("SessionOptions", "load cancellation flag", value)


class RunOptions:
    log_severity_level = _field("log_severity_level", _severity)
    log_verbosity_level = _field("log_verbosity_level", _nonneg)
    logid = _field("logid", _str)
    terminate = _field("terminate", _bool)
    only_execute_path_to_fetches = _field("only_execute_path_to_fetches", _bool)

    def __init__(self):
        self.log_severity_level = -1
        self.log_verbosity_level = 0
        self.logid = ""
        self.terminate = False
        self.only_execute_path_to_fetches = False
        self._config = {}

    def add_run_config_entry(self, key, value):
        _check_type("RunOptions", "add_run_config_entry key", key, str, "a str")
        _check_type("RunOptions", "add_run_config_entry value", value, str, "a str")
        self._config[key] = value

    def get_run_config_entry(self, key):
        if key not in self._config:
            raise MissingConfigEntry(f"RunOptions does not have configuration with key: {key}")
        return self._config[key]

    def add_active_adapter(self, adapter):
        raise Unsupported("RunOptions.add_active_adapter: LoRA adapters are not supported by nnwasm")
