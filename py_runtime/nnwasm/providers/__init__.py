"""Execution providers. Each answers, per node, whether it can run it (`capability`), and compiles
a partition of nodes it accepted into a runner. The partitioner only ever asks; it never looks at
op names itself (the ggml / onnxruntime GetCapability split).

Interface of a provider class:
    name                                    "WasmExecutionProvider", ...
    __init__(options: dict)                 provider_options from the session
    capability(node, graph) -> str | None   None if it can run the node, else the reason it can't
    compile(partition, graph) -> runner     runner.run(env) reads its inputs from env (a dict
                                            value name -> TensorData) and adds its outputs
"""
from .numpy_provider import NumpyExecutionProvider
from ..wasm.provider import WasmExecutionProvider

PROVIDERS = {p.name: p for p in (WasmExecutionProvider, NumpyExecutionProvider)}
DEFAULT_ORDER = ["WasmExecutionProvider", "NumpyExecutionProvider"]
