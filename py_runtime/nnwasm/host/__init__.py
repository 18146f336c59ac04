"""The host layer: the only code that knows which WebAssembly engine runs kernels.wasm.

A host is one instance of kernels.wasm with this interface (all ints are wasm i32/pointers):
    host.call(name, *args) -> int      call an export of kernels.wasm (see kernels_c/nnw.h)
    host.write(ptr, data)              copy a bytes-like object into linear memory at ptr
    host.read(ptr, nbytes) -> bytes    copy out of linear memory
    host.wasm_bytes_len                size of the loaded kernels.wasm, for diagnostics
Linear memory may grow during any call: hosts re-take their views of it, callers never hold them.

CPython uses wasmtime (wasmtime_host.py); Pyodide uses the browser's or Node's WebAssembly API
through its `js` module (pyodide_host.py). Everything above this layer is shared.
"""
import functools
import os
import sys
import threading

from . import flavours

_HOST = None    # a host set here (tests, bench/ab) serves every flavour
_HOSTS = {}     # flavour -> the process's instance of that kernels.wasm


class HostBase:
    """What both hosts share: one instance of kernels.wasm is one linear memory and (in
    wasmtime) one store, neither safe to use from two threads at once. `lock` (re-entrant)
    serialises every call; a sequence that must not interleave with another thread's, such as a
    plan's write inputs / run / read outputs, holds it throughout. Memory freed from a garbage
    collector's finalizer is only queued (`release`): a finalizer can fire between any two
    bytecodes, even inside another call; the queue is drained under the lock (`drain`)."""

    def __init__(self):
        self.lock = threading.RLock()
        self._pending_free = []

    def release(self, ptrs):
        self._pending_free.extend(p for p in ptrs if p)

    def drain(self):
        if not self._pending_free:
            return
        with self.lock:
            while self._pending_free:
                self.call("nnw_free", self._pending_free.pop())


@functools.cache
def kernels_wasm_bytes(flavour="simd"):
    """A flavour's kernels.wasm shipped inside the package (built by build_scripts/build_kernels.py;
    flavours.py). Read once: a Pyodide memory snapshot holds it already (pyodide_snapshot.mjs)."""
    name = flavours.FILES[flavour]
    path = os.path.join(os.path.dirname(os.path.dirname(__file__)), name)   # a wheel installs files
    try:
        if os.path.isfile(path):
            with open(path, "rb") as f:
                return f.read()
        from importlib import resources   # a zipped package (zipimport); not loaded otherwise
        return resources.files("nnwasm").joinpath(name).read_bytes()
    except FileNotFoundError:
        raise RuntimeError(f"nnwasm/{name} is missing: run `python build_scripts/build_kernels.py` "
                           "(a source checkout) or reinstall the wheel") from None


def get_host(flavour=None):
    """The process-wide instance of a flavour's kernels.wasm ('simd' or 'relaxed'; None: the
    process's default, flavours.resolve(flavours.requested())), created on first use."""
    if _HOST is not None:
        return _HOST
    flavour = flavour or flavours.resolve(flavours.requested())
    host = _HOSTS.get(flavour)
    if host is None:
        if sys.platform == "emscripten":
            from .pyodide_host import PyodideHost as Host
        else:
            from .wasmtime_host import WasmtimeHost as Host
        host = _HOSTS[flavour] = Host(kernels_wasm_bytes(flavour))
        host.flavour = flavour
    return host


def host_flavour(host):
    """The flavour a host runs ('custom' for one built from other bytes, e.g. by bench/ab)."""
    return getattr(host, "flavour", "custom")
