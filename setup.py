"""Only what pyproject.toml can't say: building a wheel or sdist from a source checkout first
builds kernels.wasm and kernels-relaxed.wasm (the package's data files, one per flavour) if one is
missing, so `pip wheel .` and `python -m build` never produce a wheel without them. Needs clang-19,
lld-19 and wasi-libc (Debian; `make setup`)."""
import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
KERNELS_WASM = ROOT / "py_runtime" / "nnwasm" / "kernels.wasm"


class BuildPyWithKernels(build_py):
    def run(self):
        if not (KERNELS_WASM.exists() and KERNELS_WASM.with_name("kernels-relaxed.wasm").exists()):
            script = ROOT / "build_scripts" / "build_kernels.py"
            if not script.exists():
                raise SystemExit("nnwasm: kernels.wasm is missing and this is not a source checkout")
            subprocess.run([sys.executable, str(script), "--wasm-only"], check=True)
        super().run()


setup(cmdclass={"build_py": BuildPyWithKernels})
