"""kernels.wasm in CPython, through wasmtime.

Calls go through wasmtime's unchecked raw call (a preallocated wasmtime_val_raw array): ~1.6 µs
a call against ~16 µs for Func.__call__ (measured, see shared PLATFORM notes). Linear memory is
addressed through its current base pointer, re-read on every copy since memory may have grown.

Compiling kernels.wasm with Cranelift takes ~250 ms; the compiled module is kept on disk
(compiled_module below) and loads in a few ms after that. The engine keeps wasmtime's default
configuration: Cranelift opt_level "speed", 4 GiB reservation + 32 MiB guard (no bounds checks),
host CPU features; none of the settings tried did better (docs/wasmtime.md).
"""
import atexit
import ctypes
import hashlib
import os
import tempfile
from importlib import metadata
from pathlib import Path

import wasmtime
from wasmtime import _bindings as ffi

from ..errors import KernelError
from . import HostBase

_MAX_ARGS = 16
# kernels_c/internal.h's NNW_HINT_*: the variants Cranelift compiles best (docs/wasmtime.md)
HINT_SPLAT_BY_SHUFFLE = 1   # A packed k-major, lanes by pshufd, in the GEMMs
HINT_HOISTS_LOADS = 2       # small blocks: depthwise kernel rows kept rolled
HINTS = HINT_SPLAT_BY_SHUFFLE | HINT_HOISTS_LOADS
COPY_PIECE = 1 << 20        # write(): read-only buffers go through ctypes this much at a time


class WasmtimeHost(HostBase):
    def __init__(self, wasm_bytes):
        super().__init__()
        self.engine = wasmtime.Engine()
        self.store = wasmtime.Store(self.engine)
        module = compiled_module(self.engine, wasm_bytes)
        linker = wasmtime.Linker(self.engine)
        # kernels.wasm (LLVM 19) imports nothing; an Emscripten build of old imported this (a no-op).
        linker.define_func("env", "emscripten_notify_memory_growth",
                           wasmtime.FuncType([wasmtime.ValType.i32()], []), lambda _: None)
        self.instance = linker.instantiate(self.store, module)
        exports = self.instance.exports(self.store)
        self.memory = exports["memory"]
        self._funcs = {}
        for exp in module.exports:
            item = exports[exp.name]
            if isinstance(item, wasmtime.Func):
                self._funcs[exp.name] = item
        self._raw = (ffi.wasmtime_val_raw * _MAX_ARGS)()
        self._ctx = self.store._context()
        self.wasm_bytes_len = len(wasm_bytes)
        self.closed = False
        if "_initialize" in self._funcs:
            self._funcs["_initialize"](self.store)
        if "nnw_set_host_hints" in self._funcs:   # kernels_c/hints.c: Cranelift's variants
            self.call("nnw_set_host_hints", HINTS)
        # wasmtime's own finalizers fail once the interpreter is tearing down; close first.
        # (atexit runs this after the plans' weakref finalizers, which were registered later.)
        atexit.register(self.close)

    def close(self):
        if not self.closed:
            self.closed = True
            self._funcs.clear()
            self.memory = self.instance = None
            self.store.close()
            self.engine.close()

    def call(self, name, *args):
        if self.closed:
            raise KernelError("kernels.wasm host is closed (its session was released, or the interpreter is exiting)")
        with self.lock:
            raw = self._raw
            for i, a in enumerate(args):
                raw[i].i32 = a
            trap = ctypes.POINTER(ffi.wasm_trap_t)()
            err = ffi.wasmtime_func_call_unchecked(self._ctx, ctypes.byref(self._funcs[name]._func), raw,
                                                  _MAX_ARGS, ctypes.byref(trap))
            result = raw[0].i32
        if err:
            raise KernelError(f"kernels.wasm {name}: {wasmtime.WasmtimeError._from_ptr(err)}")
        if trap:
            raise KernelError(f"kernels.wasm trapped in {name}: {wasmtime.Trap._from_ptr(trap).message}")
        return result

    def _base(self):
        return ctypes.addressof(self.memory.data_ptr(self.store).contents)

    def _check(self, ptr, n):
        if self.closed:
            raise KernelError("kernels.wasm host is closed (its session was released, or the interpreter is exiting)")
        if ptr < 0 or n < 0 or ptr + n > self.memory.data_len(self.store):
            raise KernelError(f"copy of {n} bytes at {ptr} is outside kernels.wasm memory")

    def write(self, ptr, data):
        mv = memoryview(data).cast("B")
        n = mv.nbytes
        self._check(ptr, n)
        # a read-only buffer (bytes: a model's weights) is copied through ctypes in pieces, so
        # writing a 1 GB weight does not make a 1 GB temporary
        step = COPY_PIECE if mv.readonly else max(n, 1)
        for at in range(0, n, step):
            part = mv[at:at + step]
            k = part.nbytes
            src = (ctypes.c_char * k).from_buffer_copy(part) if mv.readonly else (ctypes.c_char * k).from_buffer(part)
            ctypes.memmove(self._base() + ptr + at, src, k)

    def read(self, ptr, nbytes):
        """A bytearray, so numpy arrays over it are writable (as onnxruntime's outputs are)."""
        out = bytearray(nbytes)
        self.read_into(ptr, out)
        return out

    def read_into(self, ptr, buf):
        """Copy len(buf) bytes at ptr into a writable buffer (avoids an extra bytes object)."""
        mv = memoryview(buf).cast("B")
        self._check(ptr, mv.nbytes)
        if mv.nbytes:
            ctypes.memmove((ctypes.c_char * mv.nbytes).from_buffer(mv), self._base() + ptr, mv.nbytes)


def cache_dir():
    """Where compiled modules are kept: $NNWASM_WASMTIME_CACHE ("0" or "" turns it off), else
    $XDG_CACHE_HOME/nnwasm/wasmtime or ~/.cache/nnwasm/wasmtime. None when off."""
    env = os.environ.get("NNWASM_WASMTIME_CACHE")
    if env is not None:
        return Path(env) if env not in ("", "0") else None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "nnwasm" / "wasmtime"


def compiled_module(engine, wasm_bytes):
    """kernels.wasm compiled for this engine, from the disk cache when there is a good copy.

    The file's name holds kernels.wasm's SHA-256 and wasmtime's version (wasmtime itself also
    refuses a module compiled by another version, configuration or CPU); the file starts with the
    SHA-256 of the rest, checked before wasmtime sees it, because deserializing trusts the machine
    code it is given. Any failure (unreadable, truncated, corrupt, refused, a read-only disk)
    falls back to compiling; a new copy is written to a temporary file and renamed into place,
    so readers never see half a file."""
    folder = cache_dir()
    if folder is None:
        return wasmtime.Module(engine, wasm_bytes)
    try:
        version = metadata.version("wasmtime")
    except metadata.PackageNotFoundError:
        version = "unknown"
    path = folder / f"kernels-{hashlib.sha256(wasm_bytes).hexdigest()[:32]}-wasmtime-{version}.cwasm"
    try:
        blob = path.read_bytes()
        if len(blob) > 32 and hashlib.sha256(blob[32:]).digest() == blob[:32]:
            return wasmtime.Module.deserialize(engine, blob[32:])
    except (OSError, wasmtime.WasmtimeError):
        pass
    module = wasmtime.Module(engine, wasm_bytes)
    try:
        code = bytes(module.serialize())
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".kernels-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(hashlib.sha256(code).digest() + code)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except (OSError, wasmtime.WasmtimeError):
        pass
    return module
