"""SessionOptions and RunOptions, shaped like onnxruntime's so existing code keeps working.
Options nnwasm has no use for are accepted and kept (so code setting them runs unchanged)."""
import enum


class GraphOptimizationLevel(enum.IntEnum):
    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_ALL = 99


class ExecutionMode(enum.IntEnum):
    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


# Session config keys nnwasm reads; every other key is stored and ignored, as onnxruntime does.
DISABLE_CPU_EP_FALLBACK = "session.disable_cpu_ep_fallback"


class SessionOptions:
    def __init__(self):
        self.graph_optimization_level = GraphOptimizationLevel.ORT_ENABLE_ALL
        self.execution_mode = ExecutionMode.ORT_SEQUENTIAL
        self.intra_op_num_threads = 0   # kernels.wasm is single-threaded for now
        self.inter_op_num_threads = 0
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.enable_profiling = False
        self.profile_file_prefix = "nnwasm_profile"   # onnxruntime's is "onnxruntime_profile_"
        self.optimized_model_filepath = ""
        self.enable_mem_pattern = True
        self.enable_cpu_mem_arena = True
        self._config = {}

    def add_session_config_entry(self, key, value):
        self._config[str(key)] = str(value)

    def get_session_config_entry(self, key):
        if key not in self._config:
            raise KeyError(f"SessionOptions has no config entry '{key}'")
        return self._config[key]

    def disable_cpu_ep_fallback(self):
        return self._config.get(DISABLE_CPU_EP_FALLBACK, "0") == "1"


class RunOptions:
    def __init__(self):
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""
        self.terminate = False
        self.only_execute_path_to_fetches = False
