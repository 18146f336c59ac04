"""Run inside Pyodide by bench/startup/boot_breakdown.py (its last expression is the result): creates one
nnwasm session from `model_bytes` (a JS Uint8Array set as a global) and runs it once, timing
each phase of the creation by wrapping the functions session.py calls. Returns JSON:
{"phases": {name: ms}, "nnwasm_modules": [the nnwasm modules imported by then]}."""
import json
import sys
import time

import nnwasm
from nnwasm import session as _session
from nnwasm.host import pyodide_host as _pyodide_host
from nnwasm.wasm import provider as _provider, runner as _runner

_phases = {}


def _timed(owner, attr, label):
    fn = getattr(owner, attr)

    def wrapper(*args, **kwargs):
        t = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            _phases[label] = _phases.get(label, 0.0) + (time.perf_counter() - t) * 1000
    setattr(owner, attr, wrapper)
    return fn


_originals = [
    (_session, "load_model", _timed(_session, "load_model", "model parse (load_model)")),
    (_session.optimizer, "optimize", _timed(_session.optimizer, "optimize", "optimizer (graph + shaped)")),
    (_session.passes, "infer_shapes", _timed(_session.passes, "infer_shapes", "shape inference")),
    (_session, "partition", _timed(_session, "partition", "partition")),
    (_pyodide_host.PyodideHost, "__init__",
     _timed(_pyodide_host.PyodideHost, "__init__", "kernels.wasm compile + instantiate")),
    (_provider.WasmExecutionProvider, "build_plan",
     _timed(_provider.WasmExecutionProvider, "build_plan", "plan build (lowering, weights packing)")),
    (_runner.WasmRunner, "_load", _timed(_runner.WasmRunner, "_load", "nnw_plan_load (copy in + load)")),
]
try:
    _t = time.perf_counter()
    _data = model_bytes.to_bytes()  # noqa: F821 (set by the page)
    _phases["model bytes JS -> Python"] = (time.perf_counter() - _t) * 1000
    _t = time.perf_counter()
    _sess = nnwasm.InferenceSession(_data)
    _phases["InferenceSession() total"] = (time.perf_counter() - _t) * 1000
    _inp = _sess.get_inputs()[0]
    from nnwasm.tensor import TensorData
    _feed = TensorData(nnwasm.dtypes.from_name("float32"), list(_inp.shape), bytes(4 * 224 * 224 * 3))
    _t = time.perf_counter()
    _sess._run_raw(None, {_inp.name: _feed})
    _phases["first run"] = (time.perf_counter() - _t) * 1000
    _t = time.perf_counter()
    _sess._run_raw(None, {_inp.name: _feed})
    _phases["second run"] = (time.perf_counter() - _t) * 1000
finally:
    for _owner, _attr, _fn in _originals:
        setattr(_owner, _attr, _fn)
json.dumps({"phases": _phases, "nnwasm_modules": sorted(m for m in sys.modules if m.startswith("nnwasm"))})
