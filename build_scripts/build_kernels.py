"""Builds the C kernels: kernels.wasm for the runtime, and the test builds.

    python build_scripts/build_kernels.py [--wasm-only | --native-only] [--force]

Steps (each skipped when its inputs and command are unchanged since the last build):
  1. gen_ops.py: kernels_c/ops.def -> kernels_c/gen/ops.h, py_runtime/nnwasm/wasm/opcodes.py
  2. emcc -> py_runtime/nnwasm/kernels.wasm (WASM SIMD, standalone, imports only
     env.emscripten_notify_memory_growth), and build/wasm/test_kernels.wasm (the C tests on
     the SIMD code, a WASI command that tests/test_kernels_native.py runs in wasmtime)
  3. gcc -> build/native/libnnw_kernels.so, build/native/test_kernels (ASan + UBSan) and
     build/native/test_kernels_portable (simd.h's plain-C fallback)
A compiler failure prints the compiler's output and exits 1.
"""
import argparse
import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "build_scripts"))
import gen_ops  # noqa: E402

KERNELS = ROOT / "kernels_c"
TESTS = ROOT / "tests" / "kernels"
KERNELS_WASM = ROOT / "py_runtime" / "nnwasm" / "kernels.wasm"
BUILD = ROOT / "build"
STAMPS = BUILD / "stamps"
ALLOWED_IMPORTS = {("env", "emscripten_notify_memory_growth")}

# kernels include the shared headers (internal.h, simd.h, ...) from any family folder by name
WARN = ["-std=c99", "-Wall", "-Wextra", f"-I{KERNELS}"]
EMCC_WASM = ["-O3", "-msimd128", "-sSTANDALONE_WASM", "--no-entry", "-sALLOW_MEMORY_GROWTH=1"]
EMCC_TEST = ["-O3", "-msimd128", "-sSTANDALONE_WASM", "-sALLOW_MEMORY_GROWTH=1"]
GCC_LIB = ["-O3", "-fPIC", "-shared", "-fvisibility=hidden"]
GCC_TEST = ["-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all"]
GCC_PORTABLE = ["-O1", "-DNNW_PORTABLE_C"]  # the plain-struct v4 of simd.h, for other compilers


class BuildError(Exception):
    pass


def sources(*dirs):
    return sorted(p for d in dirs for p in d.rglob("*") if p.suffix in (".c", ".h"))


def c_files(*dirs):
    return [p for p in sources(*dirs) if p.suffix == ".c"]


def build(name, cmd, inputs, output, force):
    """Runs cmd unless output exists and was built by this same command from the same inputs."""
    digest = hashlib.sha256("\0".join(cmd).encode())
    for path in inputs:
        digest.update(path.read_bytes())
    stamp = STAMPS / (name + ".sha256")
    if not force and output.exists() and stamp.exists() and stamp.read_text() == digest.hexdigest():
        print(f"  {name}: up to date ({output.stat().st_size:,} bytes)", flush=True)
        return False
    output.parent.mkdir(parents=True, exist_ok=True)
    stamp.unlink(missing_ok=True)
    result = subprocess.run(cmd, cwd=ROOT)
    if result.returncode != 0:
        raise BuildError(f"{name}: {cmd[0]} failed (exit {result.returncode}):\n  {' '.join(cmd)}")
    STAMPS.mkdir(parents=True, exist_ok=True)
    stamp.write_text(digest.hexdigest())
    print(f"  {name}: built {output.relative_to(ROOT)} ({output.stat().st_size:,} bytes)", flush=True)
    return True


def tool(name):
    path = shutil.which(name)
    if path is None:
        raise BuildError(f"{name} not found on PATH")
    return path


def check_imports(wasm):
    """The runtime gives kernels.wasm nothing but this one import: fail the build otherwise."""
    try:
        import wasmtime
    except ImportError:
        print("  (wasmtime not importable here: imports of kernels.wasm not checked)")
        return
    module = wasmtime.Module.from_file(wasmtime.Engine(), str(wasm))
    imports = {(i.module, i.name) for i in module.imports}
    if imports - ALLOWED_IMPORTS:
        raise BuildError(f"{wasm.name} imports {sorted(imports - ALLOWED_IMPORTS)}; only "
                         f"{sorted(ALLOWED_IMPORTS)} is provided by the runtime")


def build_wasm(force):
    emcc = tool("emcc")
    kernels = c_files(KERNELS)
    cmd = [emcc, *WARN, *EMCC_WASM, *map(str, kernels), "-o", str(KERNELS_WASM)]
    if build("kernels.wasm", cmd, sources(KERNELS), KERNELS_WASM, force):
        check_imports(KERNELS_WASM)
    out = BUILD / "wasm" / "test_kernels.wasm"
    cmd = [emcc, *WARN, *EMCC_TEST, *map(str, kernels + c_files(TESTS)), "-o", str(out)]
    build("test_kernels.wasm", cmd, sources(KERNELS, TESTS), out, force)


def build_native(force):
    gcc = tool("gcc")
    kernels = c_files(KERNELS)
    out = BUILD / "native" / "libnnw_kernels.so"
    cmd = [gcc, *WARN, *GCC_LIB, *map(str, kernels), "-lm", "-o", str(out)]
    build("libnnw_kernels.so", cmd, sources(KERNELS), out, force)
    out = BUILD / "native" / "test_kernels"
    cmd = [gcc, *WARN, *GCC_TEST, *map(str, kernels + c_files(TESTS)), "-lm", "-o", str(out)]
    build("test_kernels", cmd, sources(KERNELS, TESTS), out, force)
    out = BUILD / "native" / "test_kernels_portable"
    cmd = [gcc, *WARN, *GCC_PORTABLE, *map(str, kernels + c_files(TESTS)), "-lm", "-o", str(out)]
    build("test_kernels_portable", cmd, sources(KERNELS, TESTS), out, force)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    only = parser.add_mutually_exclusive_group()
    only.add_argument("--wasm-only", action="store_true", help="only the emcc builds")
    only.add_argument("--native-only", action="store_true", help="only the gcc builds")
    parser.add_argument("--force", action="store_true", help="rebuild even if up to date")
    opts = parser.parse_args(argv)
    try:
        if gen_ops.main([]) != 0:
            raise BuildError("gen_ops.py failed")
        if not opts.native_only:
            build_wasm(opts.force)
        if not opts.wasm_only:
            build_native(opts.force)
    except BuildError as e:
        print(f"build_kernels: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
