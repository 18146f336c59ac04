"""onnxruntime's module-level functions and its smaller classes, as nnwasm has them: what applies
to a single-device WebAssembly runtime works, and the rest (GPU devices, plugin EPs, allocators,
LoRA adapters, sparse tensors, EP-context compiling) is refused with Unsupported saying why.
docs/onnxruntime-api.md lists every item of onnxruntime's API with its status."""
import enum

from .errors import InvalidArgument, Unsupported
from .options import _check_int


class OrtAllocatorType(enum.IntEnum):
    INVALID = -1
    ORT_DEVICE_ALLOCATOR = 0
    ORT_ARENA_ALLOCATOR = 1


class OrtSparseFormat(enum.IntEnum):
    ORT_SPARSE_UNDEFINED = 0
    ORT_SPARSE_COO = 1
    ORT_SPARSE_CSRC = 2
    ORT_SPARSE_BLOCK_SPARSE = 4


class OrtCompileApiFlags(enum.IntEnum):
    NONE = 0
    ERROR_IF_NO_NODES_COMPILED = 1
    ERROR_IF_OUTPUT_FILE_EXISTS = 2


class OrtDeviceMemoryType(enum.IntEnum):
    DEFAULT = 0
    HOST_ACCESSIBLE = 5


class OrtDeviceVendorId(enum.IntEnum):
    NONE = 0
    AMD = 4098
    NVIDIA = 4318
    ARM = 5045
    MICROSOFT = 5140
    HUAWEI = 6629
    QUALCOMM = 20803
    INTEL = 32902


class OrtExecutionProviderDevicePolicy(enum.IntEnum):
    DEFAULT = 0
    PREFER_CPU = 1
    PREFER_NPU = 2
    PREFER_GPU = 3
    MAX_PERFORMANCE = 4
    MAX_EFFICIENCY = 5
    MIN_OVERALL_POWER = 6


class OrtHardwareDeviceType(enum.IntEnum):
    CPU = 0
    GPU = 1
    NPU = 2


class OrtMemoryInfoDeviceType(enum.IntEnum):
    CPU = 0
    GPU = 1
    FPGA = 2
    NPU = 3


class _Refused(type):
    """Metaclass of the classes nnwasm refuses: creating one, or reaching any of its (static)
    members, raises Unsupported with the reason."""

    def __call__(cls, *args, **kwargs):
        raise Unsupported(f"{cls.__name__}: {cls._why}")

    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise Unsupported(f"{cls.__name__}.{name}: {cls._why}")


def _refused(name, why):
    return _Refused(name, (), {"_why": why, "__doc__": f"Refused by nnwasm: {why}"})


_NO_DEVICES = "nnwasm has one device, the CPU (kernels.wasm), and no plugin execution providers"
SparseTensor = _refused("SparseTensor", "sparse tensors are not supported (a model's sparse initializers are "
                                        "densified when it loads)")
AdapterFormat = _refused("AdapterFormat", "LoRA adapters are not supported by nnwasm")
LoraAdapter = _refused("LoraAdapter", "LoRA adapters are not supported by nnwasm")
ModelCompiler = _refused("ModelCompiler", "EP-context compiling is not supported; nnwasm's compiled form is the "
                                          ".nnwp plan file (nnwasm.compile_plan, `python -m nnwasm compile`)")
OrtArenaCfg = _refused("OrtArenaCfg", "nnwasm has no configurable allocator arenas (each plan has its own arena, "
                                      "sized when it is compiled)")
OrtDevice = _refused("OrtDevice", _NO_DEVICES)
OrtEpDevice = _refused("OrtEpDevice", _NO_DEVICES)
OrtHardwareDevice = _refused("OrtHardwareDevice", _NO_DEVICES)
OrtSyncStream = _refused("OrtSyncStream", _NO_DEVICES)
OrtEpContextData = _refused("OrtEpContextData", "EP-context models are not supported by nnwasm")
OrtEpContextDataBuffer = _refused("OrtEpContextDataBuffer", "EP-context models are not supported by nnwasm")
OrtExternalInitializerInfo = _refused("OrtExternalInitializerInfo", "external initializers are read from the "
                                      "files the model names when it loads; there is no per-initializer API")

class OrtMemoryInfo:
    """Where a tensor lives: always the CPU (WASM linear memory is copied to and from it)."""

    def __init__(self, name="Cpu", allocator_type=1, device_id=0, mem_type=0):
        self.name, self.allocator_type, self.device_id, self.mem_type = name, allocator_type, device_id, mem_type
        self.device_mem_type, self.device_vendor_id = 0, 0

    @staticmethod
    def create_v2(*args, **kwargs):
        raise Unsupported("OrtMemoryInfo.create_v2: nnwasm has one memory, the CPU's")

    def __repr__(self):
        return f"OrtMemoryInfo(name='{self.name}')"


_CPU_MEMORY_INFO = OrtMemoryInfo()


class OrtEpAssignedNode:
    def __init__(self, name, op_type, domain=""):
        self.name, self.op_type, self.domain = name, op_type, domain


class OrtEpAssignedSubgraph:
    def __init__(self, ep_name, nodes):
        self.ep_name, self._nodes = ep_name, nodes

    def get_nodes(self):
        return list(self._nodes)


def _assigned_subgraphs(assignment):
    out = []
    for name, op_type, provider in assignment:
        if not out or out[-1].ep_name != provider:
            out.append(OrtEpAssignedSubgraph(provider, []))
        out[-1]._nodes.append(OrtEpAssignedNode(name, op_type))
    return out


_state = {"logger_severity": 2, "logger_verbosity": 0, "seed": None, "telemetry": False}


def get_all_providers():
    """Every provider nnwasm has (onnxruntime lists every one it was ever built with)."""
    from .providers import PROVIDERS
    return list(PROVIDERS)


def get_version_string():
    from . import __version__
    return __version__


def get_build_info():
    from . import __version__
    return f"nnwasm {__version__}: kernels.wasm (WebAssembly SIMD128, single-threaded), Python runtime"


def set_default_logger_severity(level):
    _state["logger_severity"] = _check_int("set_default_logger_severity", "level", level, 0, 4)


def set_default_logger_verbosity(level):
    _state["logger_verbosity"] = _check_int("set_default_logger_verbosity", "level", level, 0)


def set_seed(seed):
    """Kept in _state["seed"] for random ops (nnwasm has none yet: RandomNormal & co. are refused)."""
    _state["seed"] = _check_int("set_seed", "seed", seed, -(2 ** 63), 2 ** 64 - 1)


def disable_telemetry_events():
    _state["telemetry"] = False   # nnwasm sends no telemetry at all


def enable_telemetry_events():
    _state["telemetry"] = False   # stays off: nnwasm sends none


def set_global_thread_pool_sizes(intra_op_num_threads=0, inter_op_num_threads=0):
    """Accepted and checked; kernels.wasm runs on the calling thread."""
    _check_int("set_global_thread_pool_sizes", "intra_op_num_threads", intra_op_num_threads, 0)
    _check_int("set_global_thread_pool_sizes", "inter_op_num_threads", inter_op_num_threads, 0)


def has_collective_ops():
    return False


def preload_dlls(cuda=True, cudnn=True, msvc=True, directory=None):
    pass   # nnwasm loads no native libraries


def print_debug_info():
    print(get_build_info())
    print("providers:", get_all_providers())


def get_ep_devices():
    return []


def copy_tensors(src, dst, stream=None):
    """Copies each OrtValue of src into the OrtValue of dst at the same index (same type and shape)."""
    from .ortvalue import OrtValue
    if len(src) != len(dst):
        raise InvalidArgument(f"copy_tensors: {len(src)} sources for {len(dst)} destinations")
    for a, b in zip(src, dst):
        if not isinstance(a, OrtValue) or not isinstance(b, OrtValue):
            raise InvalidArgument("copy_tensors copies OrtValues")
        b.update_inplace(a.numpy())


def create_and_register_allocator(*args, **kwargs):
    raise Unsupported(f"create_and_register_allocator: {_NO_DEVICES}; allocators are not configurable")


create_and_register_allocator_v2 = create_and_register_allocator


def register_execution_provider_library(*args, **kwargs):
    raise Unsupported(f"register_execution_provider_library: {_NO_DEVICES} (native EP libraries cannot load "
                      "into a WebAssembly runtime)")


unregister_execution_provider_library = register_execution_provider_library
