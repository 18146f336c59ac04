"""The `+threads` host in CPython: kernels-threads.wasm on one wasmtime SharedMemory, the session's
calls on the calling thread's instance, and n - 1 Python threads each with its own Store and
instance on the same memory, parked in nnw_worker_loop (kernels_c/threads/pool.c) between jobs.
ctypes releases the GIL during a wasm call, so the helpers run while the caller computes.

A session with SessionOptions.intra_op_num_threads > 1 gets its own ThreadedHost (start_host) in
its flavour's `+threads` build: kernels-threads.wasm for `simd` (the default in CPython), or
kernels-relaxed-threads.wasm for `relaxed` (session.kernels_flavour = relaxed where wasmtime has
relaxed SIMD: the flavour key then reads `relaxed+threads#<id>`),
registered under a key get_host() knows; release_host(key) (InferenceSession.release() or the
session's finalizer) stops and joins the helpers and closes the memory. A helper that fails to
start (no threads in this wasmtime, a refused instantiation, a timeout) leaves one thread: the
pool is stopped, one warning says why, and the session runs on the caller alone.

Faults (pool.c's protocol): a helper whose instance traps inside a job calls nnw_pool_fault(w) on
its own instance from the wrapper here, which releases the caller from the job; the caller's run
then raises KernelError naming the helper and its trap (the outputs are incomplete), the pool is
stopped and the session goes on with one thread. A trap on the caller's side settles the job
(nnw_pool_settle: the helpers finish their tiles) before the KernelError goes up.
"""
import ctypes
import itertools
import threading
import time
import warnings

import wasmtime
from wasmtime import _bindings as ffi
from wasmtime import _ffi

from ..errors import KernelError
from . import _HOSTS
from .wasmtime_host import HINTS, WasmtimeHost, _MAX_ARGS, compiled_module

FILE = "kernels-threads.wasm"
FILES = {"simd": FILE, "relaxed": "kernels-relaxed-threads.wasm"}   # base flavour -> its +threads build
PAGES_MIN, PAGES_MAX = 64, 65536          # 4 MiB .. 4 GiB (build_kernels.THREADS_MAX_MEMORY)
START_TIMEOUT = 10.0                      # seconds for every helper to reach nnw_worker_loop
_ids = itertools.count(1)
_live_threads = set()                     # helper threads not yet joined (tests count them)


class _SharedMemory(wasmtime.SharedMemory):
    """wasmtime-py 50.0.1's SharedMemory._as_extern wraps an already-pointer in ctypes.pointer
    (shared PLATFORM notes): the extern is built from the pointer itself."""

    def _as_extern(self):
        return ffi.wasmtime_extern_t(_ffi.WASMTIME_EXTERN_SHAREDMEMORY,
                                     ffi.wasmtime_extern_union(sharedmemory=self.ptr()))


class _SharedView:
    """The WasmtimeHost memory interface (data_ptr/data_len with a store) over a SharedMemory."""

    def __init__(self, shared):
        self.shared = shared

    def data_ptr(self, _store=None):
        return self.shared.data_ptr()

    def data_len(self, _store=None):
        return self.shared.data_len()


_compiled = {}   # base flavour -> (engine, module): one per process, shared by its ThreadedHosts (thread-safe)


def _engine_module(wasm_bytes, base="simd"):
    if base not in _compiled:
        config = wasmtime.Config()
        config.wasm_threads = True
        config.shared_memory = True
        if base == "relaxed":
            config.wasm_relaxed_simd = True
        engine = wasmtime.Engine(config)
        _compiled[base] = engine, compiled_module(engine, wasm_bytes)   # the disk cache, as kernels.wasm's
    return _compiled[base]


def _instantiate(engine, module, shared):
    store = wasmtime.Store(engine)
    linker = wasmtime.Linker(engine)
    linker.define(store, "env", "memory", shared)
    return store, linker.instantiate(store, module)


class ThreadedHost(WasmtimeHost):
    def __init__(self, threads, base="simd"):
        wasm_bytes = kernels_wasm_bytes_threads(base)
        self.engine, self.module = _engine_module(wasm_bytes, base)
        self.shared = _SharedMemory(self.engine, wasmtime.MemoryType(
            wasmtime.Limits(PAGES_MIN, PAGES_MAX), shared=True))
        self.lock = threading.RLock()
        self._pending_free = []
        self.store, self.instance = _instantiate(self.engine, self.module, self.shared)
        exports = self.instance.exports(self.store)
        self.memory = _SharedView(self.shared)
        self._funcs = {e.name: exports[e.name] for e in self.module.exports
                       if isinstance(exports[e.name], wasmtime.Func)}
        self._raw = (ffi.wasmtime_val_raw * _MAX_ARGS)()
        self._ctx = self.store._context()
        self.wasm_bytes_len = len(wasm_bytes)
        self.closed = False
        self.flavour = f"{base}+threads"
        self._funcs["_initialize"](self.store)
        self.call("nnw_set_host_hints", HINTS)
        self.threads, self._helpers, self._errors, self._faults = 1, [], [], []
        if threads > 1:
            self._start(threads - 1)

    def _start(self, n):
        if self.call("nnw_pool_prepare", n) != 0:
            warnings.warn(f"nnwasm: could not prepare {n} helper threads; running on 1 thread", stacklevel=4)
            return
        for w in range(1, n + 1):
            t = threading.Thread(target=self._helper, args=(w, self.call("nnw_pool_stack_top", w)), name=f"nnwasm-pool-{w}", daemon=True)
            self._helpers.append(t)
            _live_threads.add(t)
            t.start()
        deadline = time.monotonic() + START_TIMEOUT
        while self.call("nnw_pool_ready") < n and not self._errors and time.monotonic() < deadline:
            time.sleep(0.001)
        if self.call("nnw_pool_ready") < n:
            why = self._errors[0] if self._errors else f"not ready after {START_TIMEOUT:.0f} s"
            self._stop()
            warnings.warn(f"nnwasm: a helper thread failed to start ({why}); running on 1 thread", stacklevel=4)
            return
        self.call("nnw_pool_enable", n)
        self.threads = n + 1

    def _helper(self, w, top):
        try:
            if _FAIL_START.get(w):
                raise RuntimeError(_FAIL_START[w])
            store, instance = _instantiate(self.engine, self.module, self.shared)
            exports = instance.exports(store)
            if top <= 0:
                raise RuntimeError("no stack for the helper")
            exports["__stack_pointer"].set_value(store, wasmtime.Val.i32(top))
        except Exception as e:   # reported to _start (which falls back to 1 thread), never raised
            self._errors.append(f"{type(e).__name__}: {e}")
            return
        try:
            exports["nnw_worker_loop"](store, w)
        except Exception as e:   # a trap in a job: release the caller (pool.c), report at its run's end
            self._faults.append(f"helper {w}: {type(e).__name__}: {str(e).splitlines()[0]}")
            exports["nnw_pool_fault"](store, w)

    def call(self, name, *args):
        if not name.startswith("nnw_plan_run") or not self._helpers:
            return super().call(name, *args)
        try:
            result = super().call(name, *args)
        except KernelError:
            super().call("nnw_pool_settle")   # the caller trapped mid-job: let the helpers finish it
            raise
        if super().call("nnw_pool_faulted"):
            for _ in range(1000):   # the wrapper appends its message right before nnw_pool_fault
                if self._faults:
                    break
                time.sleep(0.001)
            why = self._faults[0] if self._faults else "a helper thread"
            self._stop()
            raise KernelError(f"kernels.wasm trapped in a thread-pool helper ({why}) during {name}: "
                              "the run's outputs are incomplete; the session goes on with 1 thread")
        return result

    def _stop(self):
        self.call("nnw_pool_stop")
        for t in self._helpers:
            t.join(timeout=START_TIMEOUT)
            if not t.is_alive():
                _live_threads.discard(t)
        if all(not t.is_alive() for t in self._helpers):
            self.call("nnw_pool_release")
        self._helpers = []
        self.threads = 1

    def close(self):
        if not self.closed:
            if self._helpers:
                self._stop()
            self.closed = True
            self._funcs.clear()
            self.memory = self.instance = None
            self.store.close()


_FAIL_START = {}   # tests: helper id -> a message, making that helper's start fail


def kernels_wasm_bytes_threads(base="simd"):
    from importlib import resources
    name = FILES[base]
    try:
        return resources.files("nnwasm").joinpath(name).read_bytes()
    except FileNotFoundError:
        raise RuntimeError(f"nnwasm/{name} is missing: run `python build_scripts/build_kernels.py`") from None


def start_host(threads, base="simd"):
    """A new ThreadedHost with `threads` threads (fewer after a failed start) on the +threads build
    of flavour `base` ('simd' or 'relaxed'), registered in the host table under a key of its own:
    the session's providers use that key as their flavour."""
    try:
        host = ThreadedHost(threads, base)
    except (wasmtime.WasmtimeError, RuntimeError, OSError) as e:   # no shared memory / threads here
        warnings.warn(f"nnwasm: no thread pool ({type(e).__name__}: {e}); running on 1 thread", stacklevel=3)
        return None
    key = f"{base}+threads#{next(_ids)}"
    host.flavour = key
    _HOSTS[key] = host
    return key


def release_host(key):
    host = _HOSTS.pop(key, None)
    if host is not None:
        with host.lock:   # a run in another thread holds it: release() waits for it, never frees memory in use
            host.close()


def live_threads():
    return sum(t.is_alive() for t in list(_live_threads))
