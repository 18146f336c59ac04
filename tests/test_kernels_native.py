"""The C kernels' own tests (tests/kernels/*.c), built by build_scripts/build_kernels.py and run
three ways: natively under ASan + UBSan, natively with simd.h's plain-C fallback, and compiled to
WASM SIMD inside wasmtime, once per flavour (the code paths kernels.wasm and kernels-relaxed.wasm
ship). Plus the generated files being current and kernels.wasm's interface (imports, exports, one
plan through the ABI)."""
import ctypes
import re
import struct
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build"
KERNELS_WASM = ROOT / "py_runtime" / "nnwasm" / "kernels.wasm"
SUMMARY = re.compile(r"^(\d+) passed, (\d+) failed$", re.M)
SANITIZER = re.compile(r"runtime error|AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer")
EXPORTS = {"memory", "_initialize", "nnw_malloc", "nnw_free", "nnw_plan_load", "nnw_plan_run", "nnw_plan_failed_op",
           "nnw_plan_run_ops", "nnw_conv2d_scratch_bytes", "nnw_set_host_hints"}


@pytest.fixture(scope="module")
def built():
    result = subprocess.run([sys.executable, str(ROOT / "build_scripts" / "build_kernels.py")],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"build failed:\n{result.stdout}\n{result.stderr}"


def check_output(text, returncode):
    assert not SANITIZER.search(text), text[-4000:]
    found = SUMMARY.findall(text)
    assert found, f"no summary line (exit {returncode}):\n{text[-4000:]}"
    passed, failed = map(int, found[-1])
    assert failed == 0 and returncode == 0, text[-4000:]
    assert passed > 1000, text[-2000:]


@pytest.mark.parametrize("binary", ["test_kernels", "test_kernels_portable"])
def test_native(built, binary):
    result = subprocess.run([str(BUILD / "native" / binary)], capture_output=True, text=True,
                            timeout=300)
    check_output(result.stdout + result.stderr, result.returncode)


@pytest.mark.parametrize("binary", ["test_kernels.wasm", "test_kernels_relaxed.wasm"])
def test_wasm_simd(built, tmp_path, binary):
    wasmtime = pytest.importorskip("wasmtime")
    engine = wasmtime.Engine()
    store = wasmtime.Store(engine)
    wasi = wasmtime.WasiConfig()
    wasi.argv = ["test_kernels"]
    wasi.stdout_file = str(tmp_path / "stdout")
    wasi.stderr_file = str(tmp_path / "stderr")
    store.set_wasi(wasi)
    linker = wasmtime.Linker(engine)
    linker.define_wasi()
    module = wasmtime.Module.from_file(engine, str(BUILD / "wasm" / binary))
    instance = linker.instantiate(store, module)
    code = 0
    try:
        instance.exports(store)["_start"](store)
    except wasmtime.ExitTrap as e:
        code = e.code
    check_output((tmp_path / "stdout").read_text() + (tmp_path / "stderr").read_text(), code)


def test_generated_files_current():
    result = subprocess.run([sys.executable, str(ROOT / "build_scripts" / "gen_ops.py"), "--check"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def test_kernels_wasm_interface(built):
    wasmtime = pytest.importorskip("wasmtime")
    engine = wasmtime.Engine()
    module = wasmtime.Module.from_file(engine, str(KERNELS_WASM))
    assert [(i.module, i.name) for i in module.imports] == []   # LLVM 19 + static wasi-libc: none
    assert EXPORTS <= {e.name for e in module.exports}
    relaxed = wasmtime.Module.from_file(engine, str(KERNELS_WASM.with_name("kernels-relaxed.wasm")))
    assert [e.name for e in relaxed.exports] == [e.name for e in module.exports] and not relaxed.imports

    # one plan through the ABI: load, run, a hostile variant refused
    store = wasmtime.Store(engine)
    ex = wasmtime.Instance(store, module, []).exports(store)
    ex["_initialize"](store)
    mem = ex["memory"]

    def write(ptr, data):
        base = ctypes.addressof(mem.data_ptr(store).contents)
        ctypes.memmove(base + ptr, data, len(data))

    def read(ptr, n):
        base = ctypes.addressof(mem.data_ptr(store).contents)
        return ctypes.string_at(base + ptr, n)

    count = 5
    relu6 = [5, 6, 0, 0, 4 * count, count, *struct.unpack("<2i", struct.pack("<2f", 0.0, 6.0))]
    header = [0x50574E4E, 1, 8 * count, 0, 64, 0, len(relu6), 0]  # unary clamp(0, 6) x -> y
    plan = struct.pack(f"<{len(header) + len(relu6)}i", *header, *relu6)
    plan_ptr, arena_ptr, bad_ptr = (ex["nnw_malloc"](store, n) for n in (len(plan), 8 * count, 4))
    write(plan_ptr, plan)
    write(arena_ptr, struct.pack("<5f", -1.0, 0.5, 3.0, 7.0, float("nan")))
    assert ex["nnw_plan_load"](store, plan_ptr, len(plan), arena_ptr, 8 * count, bad_ptr) == 0
    assert ex["nnw_plan_run"](store, plan_ptr, arena_ptr) == 0
    assert ex["nnw_plan_run_ops"](store, plan_ptr, arena_ptr, 0, 1) == 0
    assert ex["nnw_plan_run_ops"](store, plan_ptr, arena_ptr, 1, 1) == 5   # past the one op: NNW_BAD_ARGS
    out = struct.unpack("<5f", read(arena_ptr + 4 * count, 4 * count))
    assert out[:4] == (0.0, 0.5, 3.0, 6.0) and out[4] != out[4]  # NaN passes through Relu6

    write(plan_ptr + 4 * (8 + 4), struct.pack("<i", 4 * count + 4))  # y now ends past the arena
    assert ex["nnw_plan_load"](store, plan_ptr, len(plan), arena_ptr, 8 * count, bad_ptr) == 6
    assert struct.unpack("<i", read(bad_ptr, 4))[0] == 0
    assert ex["nnw_conv2d_scratch_bytes"](store, 3, 32, 1, 3, 3, 112, 112, 2, 2, 1, 1, 0, 0, 224, 224) \
        == 27 * 112 * 112 * 4
    assert ex["nnw_conv2d_scratch_bytes"](store, 96, 24, 1, 1, 1, 56, 56, 1, 1, 1, 1, 0, 0, 56, 56) == 0
    assert ex["nnw_conv2d_scratch_bytes"](store, 4, 6, 4, 0, 3, 5, 5, 1, 1, 1, 1, 0, 0, 5, 5) == -1
    for p in (plan_ptr, arena_ptr, bad_ptr):
        ex["nnw_free"](store, p)
