"""kernels.wasm inside Pyodide: instantiated with the page's (or Node's) own WebAssembly API.

Every call crosses the Python/JS boundary, so the hot path stays thin: the exported wasm
functions are cached as JS function objects and called directly (measured ~1 us a call in
Node, ~0.6 us in Chromium). Copies go through a Uint8Array view over linear memory, re-created on
every copy because memory.buffer is detached whenever the memory grows.
"""
import js
from pyodide.ffi import JsException, create_proxy, to_js

from ..errors import KernelError
from . import _HOSTS, HostBase

THREADS_KEY = "simd+threads"
THREADS_FILES = {"simd+threads": "kernels-threads.wasm", "relaxed+threads": "kernels-relaxed-threads.wasm"}
THREADS_KEYS = tuple(THREADS_FILES)
_threads_failed = False   # the JS side could not make the threaded kernels.wasm (it warned once)

# The one import an Emscripten build of kernels.wasm had (LLVM 19's imports nothing; offered for
# old builds). It is told after memory.grow; we take fresh views on every copy anyway, so there is
# nothing to do. Made with the first host, not at
# import: a memory snapshot (build_scripts/pyodide_snapshot.mjs) cannot hold a JS proxy.
_notify_memory_growth = None


class PyodideHost(HostBase):
    def __init__(self, wasm_bytes):
        super().__init__()
        self.wasm_bytes_len = len(wasm_bytes)
        # Synchronous compile: kernels.wasm is far below Chromium's 8 MB main-thread limit.
        module = js.WebAssembly.Module.new(to_js(wasm_bytes))
        global _notify_memory_growth
        if _notify_memory_growth is None:
            _notify_memory_growth = create_proxy(lambda _index: None)
        imports = js.Object.new()
        imports.env = js.Object.new()
        imports.env.emscripten_notify_memory_growth = _notify_memory_growth
        exports = js.WebAssembly.Instance.new(module, imports).exports
        self._exports = exports
        self._memory = exports.memory
        self._funcs = {}
        exports._initialize()

    def call(self, name, *args):
        fn = self._funcs.get(name)
        if fn is None:
            fn = getattr(self._exports, name, None)
            if fn is None or not callable(fn):
                raise KernelError(f"kernels.wasm has no exported function {name!r}")
            self._funcs[name] = fn
        try:
            return fn(*args)
        except JsException as e:  # a trap (RuntimeError: unreachable, out of bounds ...)
            raise KernelError(f"kernels.wasm trapped in {name}: {e}") from None

    def _view(self, ptr, nbytes):
        buffer = self._memory.buffer
        if ptr < 0 or nbytes < 0 or ptr + nbytes > buffer.byteLength:
            raise KernelError(f"copy of {nbytes} bytes at {ptr} is outside kernels.wasm memory "
                              f"({buffer.byteLength} bytes)")
        return js.Uint8Array.new(buffer, ptr, nbytes)

    def write(self, ptr, data):
        view = memoryview(data)
        if view.format != "B" or view.ndim != 1:
            view = view.cast("B")
        self._view(ptr, view.nbytes).assign(view)

    def read(self, ptr, nbytes):
        return self._view(ptr, nbytes).to_bytes()


class ThreadedPyodideHost(PyodideHost):
    """kernels-threads.wasm on a shared memory with the realm's JS thread pool (web/threads.mjs),
    made by the JS side (createThreadedKernels): env.wasm.numThreads > 1, as onnxruntime-web (its
    SessionOptions.intraOpNumThreads is not read). A plan run enables the pool's helpers once they
    are ready (the first runs may go on one thread) and raises KernelError when a helper trapped
    during it (the pool then stops: one thread from there on)."""

    def __init__(self, made, wasm_bytes_len):
        HostBase.__init__(self)
        self.wasm_bytes_len = wasm_bytes_len
        self._exports = made.exports
        self._memory = made.memory
        self._pool = made.pool
        self._funcs = {}

    def call(self, name, *args):
        if not name.startswith("nnw_plan_run"):
            return super().call(name, *args)
        pool = self._pool
        pool.beforeRun()
        try:
            result = super().call(name, *args)
        except KernelError:
            self._after(True)
            raise
        self._after(False)
        return result

    def _after(self, trapped):
        try:
            self._pool.afterRun(trapped)
        except JsException as e:   # a helper trapped during the run
            raise KernelError(str(e.message if hasattr(e, "message") else e)) from None

    @property
    def threads(self):
        return int(self._pool.active)


def threaded_key(base="simd"):
    """The host key of the realm's threaded kernels.wasm when env.wasm.numThreads > 1 (pyodide-boot.mjs
    registered `nnwasm_js_threads`), made at the first call: the +threads build of the session's
    flavour `base` (kernels-threads.wasm for 'simd', kernels-relaxed-threads.wasm for 'relaxed';
    key 'simd+threads' / 'relaxed+threads'). One per realm (one JS pool): a later session of the
    other flavour runs on that one too. None without threads, or when the JS side could not make
    it (it warned once)."""
    for key in THREADS_KEYS:
        if key in _HOSTS:
            return key
    try:
        import nnwasm_js_threads
    except ImportError:
        return None
    global _threads_failed
    if _threads_failed:
        return None
    from importlib import resources
    key = f"{base}+threads"
    try:
        data = resources.files("nnwasm").joinpath(THREADS_FILES[key]).read_bytes()
    except FileNotFoundError:   # a wheel without the relaxed build: the simd one
        key = THREADS_KEY
        data = resources.files("nnwasm").joinpath(THREADS_FILES[key]).read_bytes()
    made = nnwasm_js_threads.create(to_js(data))
    if made is None:
        _threads_failed = True
        return None
    host = ThreadedPyodideHost(made, len(data))
    host.flavour = key
    _HOSTS[key] = host
    return key
