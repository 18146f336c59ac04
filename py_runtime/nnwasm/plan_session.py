"""PlanSession: an InferenceSession over a .nnwp plan file. InferenceSession(path or bytes)
returns one when the bytes start with the plan file magic. It keeps the session's API and its
feed checks (inherited), and replaces only creation (no ONNX, no optimizer: planfile.read, then
one WasmRunner on the shared host) and the run (that one plan)."""
import os
import struct

from . import planfile
from .errors import InvalidArgument
from .host import get_host
from .ir import ValueInfo
from .options import SessionOptions
from .session import InferenceSession, ModelMetadata, NodeArg
from .wasm.opcodes import OPS
from .wasm.provider import WasmExecutionProvider
from .wasm.runner import WasmRunner

_OP_NAMES = {op.code: name for name, op in OPS.items()}
WASM = WasmExecutionProvider.name


def read_bytes(path_or_bytes):
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        return bytes(path_or_bytes)
    if isinstance(path_or_bytes, (str, os.PathLike)):
        with open(path_or_bytes, "rb") as f:
            return f.read()
    raise InvalidArgument(f"expected a model path or bytes, got {type(path_or_bytes).__name__}")


class PlanSession(InferenceSession):
    def __init__(self, path_or_bytes, sess_options=None, providers=None, provider_options=None, **kwargs):
        names = [p[0] if isinstance(p, (tuple, list)) else p for p in providers or [WASM]]
        if WASM not in names:
            raise InvalidArgument(f"a plan file runs on {WASM} alone; providers {names} exclude it")
        pf = planfile.read(read_bytes(path_or_bytes))
        self._plan_file = pf
        self._sess_options = sess_options or SessionOptions()
        self._providers = [WasmExecutionProvider()]
        self._values = [ValueInfo(v.name, v.dtype, v.shape) for v in pf.inputs]
        self._inputs = [NodeArg(v.name, v.dtype, v.shape) for v in pf.inputs]
        self._outputs = [NodeArg(v.name, v.dtype, v.shape) for v in pf.outputs]
        ops = _op_names(pf.plan)
        self._runner = WasmRunner(get_host(), pf.plan, pf.arena_bytes,
                                  [(v.name, v.offset, v.nbytes) for v in pf.inputs],
                                  [(v.name, v.offset, v.dtype, v.shape) for v in pf.outputs], len(ops))
        self._assignment = [(f"#{k}", op, WASM) for k, op in enumerate(ops)]

    def get_modelmeta(self):
        meta = ModelMetadata(None)
        meta.producer_name, meta.graph_name = self._plan_file.producer, self._plan_file.model
        return meta

    def get_provider_assignment(self):
        """[("#k", plan op name, provider)]: a plan file keeps its ops, not the ONNX nodes."""
        return list(self._assignment)

    def get_fallback_reasons(self):
        return {}

    def _run(self, output_names, feeds):
        names = self._check_output_names(output_names)
        for arg, vi in zip(self._inputs, self._values):
            self._check_feed(arg, vi, feeds[arg.name])
        env = dict(feeds)
        self._runner.run(env)
        return [env[n] for n in names]


def _op_names(plan):
    """The plan's op names in run order; nnw_plan_load has validated the words by the time the
    session exists, but this runs first, so it stops at anything out of bounds."""
    head = struct.unpack_from("<8i", plan)
    start, n = 8 + head[5], head[6]   # run ops follow the init ops
    ok = head[5] >= 0 and 0 <= n <= len(plan) // 4 - start
    words = struct.unpack_from(f"<{n}i", plan, 4 * start) if ok else ()
    names, k = [], 0
    while k + 1 < len(words) and words[k + 1] >= 0:
        names.append(_OP_NAMES.get(words[k], f"op{words[k]}"))
        k += 2 + words[k + 1]
    return names
