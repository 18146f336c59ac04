"""Builds the C kernels: kernels.wasm for the runtime, and the test builds.

    python build_scripts/build_kernels.py [--wasm-only | --native-only | --runtime-only] [--force]

--runtime-only builds only the package's kernels*.wasm (what setup.py runs for a wheel or sdist:
no tests/ needed); --wasm-only also builds the C tests' wasm when tests/kernels/ exists.

Steps (each skipped when its inputs and command are unchanged since the last build):
  1. gen_ops.py: kernels_c/ops.def -> kernels_c/gen/ops.h, py_runtime/nnwasm/wasm/opcodes.py
  2. clang-19 + wasm-ld (Debian's LLVM 19, wasi-libc for libm/malloc/memcpy; no Emscripten)
     -> one kernels*.wasm per flavour (FLAVOURS below: py_runtime/nnwasm/kernels.wasm is `simd`,
     kernels-relaxed.wasm is `relaxed`; standalone reactors, no imports, exporting memory,
     _initialize and nnw_*), and build/wasm/test_kernels.wasm, test_kernels_relaxed.wasm (the C
     tests on each flavour's code, WASI commands that tests/test_kernels_native.py runs in wasmtime)
  3. gcc -> build/native/libnnw_kernels.so, build/native/test_kernels (ASan + UBSan) and
     build/native/test_kernels_portable (simd.h's plain-C fallback)
A compiler failure prints the compiler's output and exits 1.
"""
import argparse
import hashlib
import os
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
ALLOWED_IMPORTS = set()   # hosts still offer env.emscripten_notify_memory_growth (older builds)

# kernels include the shared headers (internal.h, simd.h, ...) from any family folder by name
WARN = ["-std=c99", "-Wall", "-Wextra", f"-I{KERNELS}"]
# LLVM 19 for wasm32 (docs/architecture.md, "Kernel flavours"). wasi-libc's sysroot gives the few
# libc pieces the kernels use (malloc/free, memcpy/memmove/memset, libm's exp/log/erf/...); linked
# statically they need no WASI import. -ffp-contract=off: no fused multiply-add unless a kernel asks
# for one (v4_fmadd, relaxed flavour only), so `simd` gives the same bits on every engine.
LLVM_BIN = Path(os.environ.get("NNWASM_LLVM_BIN", "/usr/lib/llvm-19/bin"))   # override: another LLVM 19
WASI_SYSROOT = Path("/usr")   # Debian's wasi-libc: /usr/include/wasm32-wasi, /usr/lib/wasm32-wasi
CLANG_WASM = ["--target=wasm32-wasi", f"--sysroot={WASI_SYSROOT}", "-O3", "-ffp-contract=off",
              f"-fuse-ld={LLVM_BIN / 'wasm-ld'}"]   # Debian's clang looks for wasm-ld-19 otherwise
LINK_REACTOR = ["-mexec-model=reactor", "-Wl,--export-dynamic", "-Wl,--strip-debug"]
# name -> (output file, flags). `simd` is the reference: bit-identical on every host and CPU.
# `relaxed` adds relaxed SIMD (fused multiply-add in the float microkernels; Node 22+, Chromium 114+,
# wasmtime). A `+threads` flavour will add -matomics -mbulk-memory and link with
# --import-memory --shared-memory --max-memory=N (docs/architecture.md, "Kernel flavours").
FLAVOURS = {
    "simd": (KERNELS_WASM, ["-msimd128"]),
    "relaxed": (KERNELS_WASM.with_name("kernels-relaxed.wasm"), ["-msimd128", "-mrelaxed-simd"]),
}
# `+threads` (docs/architecture.md, "The thread pool"): extra artefacts next to the flavours above, the
# same C with atomics, importing a shared memory the host creates (env.memory, up to 4 GiB) and
# exporting __stack_pointer (each helper instance sets its own C stack, threads/pool.c). Debian's
# wasi-libc has no threads build: --no-check-features links its dlmalloc, sound because only the
# calling thread's instance allocates.
THREADS_MAX_MEMORY = 4 << 30
THREAD_FLAVOURS = {
    "simd+threads": (KERNELS_WASM.with_name("kernels-threads.wasm"),
                     ["-msimd128", "-matomics", "-mbulk-memory", "-Wl,--import-memory,--shared-memory",
                      f"-Wl,--max-memory={THREADS_MAX_MEMORY}", "-Wl,--no-check-features",
                      "-Wl,--export=__stack_pointer"]),
    "relaxed+threads": (KERNELS_WASM.with_name("kernels-relaxed-threads.wasm"),   # where relaxed SIMD validates
                        ["-msimd128", "-mrelaxed-simd", "-matomics", "-mbulk-memory", "-Wl,--import-memory,--shared-memory",
                         f"-Wl,--max-memory={THREADS_MAX_MEMORY}", "-Wl,--no-check-features", "-Wl,--export=__stack_pointer"]),
}
GCC_LIB = ["-O3", "-fPIC", "-shared", "-fvisibility=hidden"]
GCC_TEST = ["-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all"]
GCC_PORTABLE = ["-O1", "-DNNW_PORTABLE_C"]  # the plain-struct v4 of simd.h, for other compilers


class BuildError(Exception):
    pass


def sources(*dirs):
    return sorted(p for d in dirs for p in d.rglob("*") if p.suffix in (".c", ".h"))


def c_files(*dirs):
    return [p for p in sources(*dirs) if p.suffix == ".c"]


def build(name, cmd, inputs, output, force, env=None):
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
    result = subprocess.run(cmd, cwd=ROOT, env=env)
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


def llvm19():
    """(clang, env): Debian's clang-19, run with a PATH that has LLVM 19's own bin first (its
    wasm-ld) and no binaryen: clang's wasm driver runs the first wasm-opt on PATH after linking,
    and Debian's (from the emscripten package) can't parse relaxed SIMD."""
    clang = LLVM_BIN / "clang"
    if not clang.exists() or not (LLVM_BIN / "wasm-ld").exists():
        raise BuildError(f"{clang} or wasm-ld not found: `apt-get install clang-19 lld-19` (make setup does; "
                         f"NNWASM_LLVM_BIN names another LLVM 19 bin/ folder)")
    if not (WASI_SYSROOT / "lib" / "wasm32-wasi" / "libc.a").exists():
        raise BuildError("wasi-libc not found (/usr/lib/wasm32-wasi/libc.a): `apt-get install wasi-libc`")
    if not list((LLVM_BIN.parent / "lib" / "clang").glob("*/lib/wasi/libclang_rt.builtins-wasm32.a")):
        raise BuildError("LLVM 19's wasm32 compiler-rt not found: `apt-get install libclang-rt-19-dev-wasm32`")
    return str(clang), {"PATH": str(LLVM_BIN), "LANG": "C"}


def wasm_cmd(flavour, files, out, reactor=True):
    """The clang-19 command building `files` into `out` for a flavour (a reactor exporting what
    NNW_EXPORT marks, or a WASI command for the C tests): also for bench/speed's peak loop."""
    clang, _ = llvm19()
    flags = {**FLAVOURS, **THREAD_FLAVOURS}[flavour][1]
    return [clang, *WARN, *CLANG_WASM, *flags, *(LINK_REACTOR if reactor else []), *map(str, files), "-o", str(out)]


def check_imports(wasm, allowed=ALLOWED_IMPORTS):
    """The runtime gives kernels.wasm no imports (ALLOWED_IMPORTS): fail the build otherwise."""
    try:
        import wasmtime
    except ImportError:
        print("  (wasmtime not importable here: imports of kernels.wasm not checked)")
        return
    config = wasmtime.Config()
    config.wasm_threads = config.shared_memory = True
    module = wasmtime.Module.from_file(wasmtime.Engine(config), str(wasm))
    imports = {(i.module, i.name) for i in module.imports}
    if imports - allowed:
        raise BuildError(f"{wasm.name} imports {sorted(imports - allowed)}; only "
                         f"{sorted(allowed)} is provided by the runtime")


def build_wasm(force, tests=True):
    _, env = llvm19()
    kernels = c_files(KERNELS)
    for flavour, (out, _) in FLAVOURS.items():
        if build(out.name, wasm_cmd(flavour, kernels, out), sources(KERNELS), out, force, env):
            check_imports(out)
    for flavour, (out, _) in THREAD_FLAVOURS.items():
        if build(out.name, wasm_cmd(flavour, kernels, out), sources(KERNELS), out, force, env):
            check_imports(out, {("env", "memory")})
    if not tests or not TESTS.exists():   # a source tree without tests/ (an sdist) builds the runtime only
        return
    for flavour in FLAVOURS:   # the C tests on each flavour's code (their tolerances hold for both)
        out = BUILD / "wasm" / ("test_kernels.wasm" if flavour == "simd" else f"test_kernels_{flavour}.wasm")
        cmd = wasm_cmd(flavour, kernels + c_files(TESTS), out, reactor=False)
        build(out.name, cmd, sources(KERNELS, TESTS), out, force, env)


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
    only.add_argument("--wasm-only", action="store_true", help="only the wasm builds")
    only.add_argument("--native-only", action="store_true", help="only the gcc builds")
    only.add_argument("--runtime-only", action="store_true", help="only the package's kernels*.wasm (no tests/)")
    parser.add_argument("--force", action="store_true", help="rebuild even if up to date")
    opts = parser.parse_args(argv)
    try:
        if gen_ops.main([]) != 0:
            raise BuildError("gen_ops.py failed")
        if not opts.native_only:
            build_wasm(opts.force, tests=not opts.runtime_only)
        if not (opts.wasm_only or opts.runtime_only):
            build_native(opts.force)
    except BuildError as e:
        print(f"build_kernels: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
