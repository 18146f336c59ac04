"""Only what pyproject.toml can't say: the package's data files kernels.wasm, kernels-relaxed.wasm
kernels-threads.wasm and kernels-relaxed-threads.wasm (one per kernel flavour, built from kernels_c/ by LLVM 19).

Wheels and sdists are built from what they contain (docs/packaging.md):
- From a source checkout (git clone, `git archive`), `pip wheel .` and `python -m build` first build
  the missing kernels*.wasm with build_scripts/build_kernels.py --runtime-only, which needs clang-19,
  lld-19, wasi-libc and libclang-rt-19-dev-wasm32 (Debian; `make setup`), and never tests/.
- The sdist ships those prebuilt kernels*.wasm beside kernels_c/ and the build script, so
  `pip install nnwasm-<version>.tar.gz` needs no C toolchain: the files are the same for every
  platform (the wheel is py3-none-any). NNWASM_BUILD_KERNELS=1 rebuilds them from kernels_c/ anyway.
A missing toolchain stops the build with a message naming what to install."""
import os
import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

ROOT = Path(__file__).resolve().parent
PACKAGE = ROOT / "py_runtime" / "nnwasm"
KERNEL_FILES = ["kernels.wasm", "kernels-relaxed.wasm", "kernels-threads.wasm", "kernels-relaxed-threads.wasm"]


def ensure_kernels():
    missing = [name for name in KERNEL_FILES if not (PACKAGE / name).exists()]
    if not missing and os.environ.get("NNWASM_BUILD_KERNELS") != "1":
        return
    script = ROOT / "build_scripts" / "build_kernels.py"
    if not script.exists():
        raise SystemExit(f"nnwasm: {', '.join(missing)} missing and build_scripts/build_kernels.py is not "
                         "in this source tree: build from a git checkout or from nnwasm's sdist")
    print(f"nnwasm: building {', '.join(missing or KERNEL_FILES)} from kernels_c/ (LLVM 19)", flush=True)
    proc = subprocess.run([sys.executable, str(script), "--runtime-only"], cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(
            "nnwasm: building kernels.wasm from kernels_c/ failed (see above). It needs LLVM 19 for wasm32: "
            "on Debian `apt-get install clang-19 lld-19 wasi-libc libclang-rt-19-dev-wasm32` (or set "
            "NNWASM_LLVM_BIN to another LLVM 19's bin/). nnwasm's sdist and wheel ship the built files.")


class BuildPyWithKernels(build_py):
    def run(self):
        ensure_kernels()
        super().run()


class SdistWithKernels(sdist):
    def run(self):
        ensure_kernels()   # the sdist ships them (package-data), so installing it needs no toolchain
        super().run()


setup(cmdclass={"build_py": BuildPyWithKernels, "sdist": SdistWithKernels})
