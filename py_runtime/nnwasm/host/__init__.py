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
import sys
import threading
from importlib import resources

_HOST = None


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
def kernels_wasm_bytes():
    """The kernels.wasm shipped inside the package (built by build_scripts/build_kernels.py).
    Read once: a Pyodide memory snapshot holds it already (pyodide_snapshot.mjs)."""
    try:
        return resources.files("nnwasm").joinpath("kernels.wasm").read_bytes()
    except FileNotFoundError:
        raise RuntimeError("nnwasm/kernels.wasm is missing: run `python build_scripts/build_kernels.py` "
                           "(a source checkout) or reinstall the wheel") from None


def get_host():
    """The process-wide kernels.wasm instance, created on first use."""
    global _HOST
    if _HOST is None:
        if sys.platform == "emscripten":
            from .pyodide_host import PyodideHost as Host
        else:
            from .wasmtime_host import WasmtimeHost as Host
        _HOST = Host(kernels_wasm_bytes())
    return _HOST
