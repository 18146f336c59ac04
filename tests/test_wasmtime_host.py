"""The wasmtime host's compiled-module cache (host/wasmtime_host.py): kernels.wasm is compiled
once and later loaded from disk; a missing, truncated, corrupted or unwritable cache never breaks
a host, it only costs a compile."""
import hashlib
import os
import stat

import pytest
import wasmtime

from nnwasm.host import kernels_wasm_bytes, wasmtime_host


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NNWASM_WASMTIME_CACHE", str(tmp_path / "c"))
    calls = {"compile": 0, "deserialize": 0}
    compile_, deserialize = wasmtime.Module.__init__, wasmtime.Module.deserialize.__func__

    def counted_compile(self, *a, **k):
        calls["compile"] += 1
        compile_(self, *a, **k)

    def counted_deserialize(cls, *a, **k):
        calls["deserialize"] += 1
        return deserialize(cls, *a, **k)

    monkeypatch.setattr(wasmtime.Module, "__init__", counted_compile)
    monkeypatch.setattr(wasmtime.Module, "deserialize", classmethod(counted_deserialize))
    return tmp_path / "c", calls


def test_compiled_once_then_loaded(cache):
    folder, calls = cache
    engine = wasmtime.Engine()
    wasmtime_host.compiled_module(engine, kernels_wasm_bytes())
    files = list(folder.iterdir())
    assert len(files) == 1 and files[0].suffix == ".cwasm" and calls == {"compile": 1, "deserialize": 0}
    module = wasmtime_host.compiled_module(engine, kernels_wasm_bytes())
    assert calls == {"compile": 1, "deserialize": 1}
    assert [e.name for e in module.exports] == [e.name for e in wasmtime.Module(engine, kernels_wasm_bytes()).exports]


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty", "garbage"])
def test_damaged_cache_recompiles(cache, damage):
    folder, calls = cache
    engine = wasmtime.Engine()
    wasmtime_host.compiled_module(engine, kernels_wasm_bytes())
    (path,) = folder.iterdir()
    blob = bytearray(path.read_bytes())
    if damage == "flip":
        blob[len(blob) // 2] ^= 0x40
    elif damage == "truncate":
        blob = blob[: len(blob) // 3]
    elif damage == "empty":
        blob = b""
    else:
        blob = os.urandom(len(blob))
    path.write_bytes(blob)
    module = wasmtime_host.compiled_module(engine, kernels_wasm_bytes())
    assert calls == {"compile": 2, "deserialize": 0}   # the damaged copy never reached wasmtime
    # the good copy is back in place
    wasmtime_host.compiled_module(engine, kernels_wasm_bytes())
    assert calls["deserialize"] == 1


def test_other_wasmtime_version_is_refused(cache):
    """A file for this name holding a module compiled with another configuration (as another
    version would): wasmtime refuses it, the host compiles."""
    folder, calls = cache
    engine = wasmtime.Engine()
    wasmtime_host.compiled_module(engine, kernels_wasm_bytes())
    (path,) = folder.iterdir()
    cfg = wasmtime.Config()
    cfg.memory_guard_size = 1 << 16   # a tunable wasmtime checks on deserializing
    other = bytes(wasmtime.Module(wasmtime.Engine(cfg), kernels_wasm_bytes()).serialize())
    path.write_bytes(hashlib.sha256(other).digest() + other)
    calls["compile"] = 0
    wasmtime_host.compiled_module(engine, kernels_wasm_bytes())
    assert calls == {"compile": 1, "deserialize": 1}


def test_unwritable_or_off(tmp_path, monkeypatch):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(stat.S_IRUSR | stat.S_IXUSR)
    monkeypatch.setenv("NNWASM_WASMTIME_CACHE", str(ro / "sub"))
    if os.access(ro, os.W_OK):   # root ignores permissions: point the cache at a file instead
        (tmp_path / "file").write_bytes(b"x")
        monkeypatch.setenv("NNWASM_WASMTIME_CACHE", str(tmp_path / "file" / "sub"))
    engine = wasmtime.Engine()
    assert wasmtime_host.compiled_module(engine, kernels_wasm_bytes()) is not None
    monkeypatch.setenv("NNWASM_WASMTIME_CACHE", "0")
    assert wasmtime_host.cache_dir() is None
    assert wasmtime_host.compiled_module(engine, kernels_wasm_bytes()) is not None


def test_host_from_cache_runs(cache):
    host = wasmtime_host.WasmtimeHost(kernels_wasm_bytes())
    host2 = wasmtime_host.WasmtimeHost(kernels_wasm_bytes())
    try:
        for h in (host, host2):
            p = h.call("nnw_malloc", 64)
            h.write(p, b"abcd" * 16)
            assert bytes(h.read(p, 64)) == b"abcd" * 16
            h.call("nnw_free", p)
    finally:
        host.close()
        host2.close()
    assert cache[1] == {"compile": 1, "deserialize": 1}
