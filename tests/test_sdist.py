"""Wheels and sdists build from what they contain (docs/packaging.md): from a clean copy of the
source tree (the files git tracks, without tests/), `python -m build --sdist` makes an sdist; the
sdist's own wheel builds in pip's isolated build environment with only the build requirements its
pyproject.toml declares (offline: from a local folder of those wheels, `pip download`ed once into
~/.cache/nnwasm/build-wheelhouse); `pip install nnwasm-*.tar.gz` into a fresh venv works and runs a
model. The sdist ships the prebuilt kernels*.wasm, so none of this needs LLVM; an sdist without
them builds them from its own kernels_c/ (bit-identical), and says what to install when LLVM 19
is missing."""
import os
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import numpy as np
import pytest

from model_builders import graph_model, ort_run, rand

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "py_runtime" / "nnwasm"
KERNEL_FILES = ["kernels.wasm", "kernels-relaxed.wasm", "kernels-threads.wasm", "kernels-relaxed-threads.wasm"]
WHEELHOUSE = Path(os.environ.get("NNWASM_BUILD_WHEELHOUSE", Path.home() / ".cache" / "nnwasm" / "build-wheelhouse"))


def run(cmd, cwd=None, env=None, ok=True):
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **(env or {})})
    if ok and proc.returncode != 0:
        pytest.fail(f"`{' '.join(map(str, cmd))}` failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


def clean_copy(dest, kernels=True):
    """The files git knows (tracked, and new ones not ignored) as they are in the work tree,
    without tests/; with the built kernels*.wasm (gitignored) when `kernels`."""
    names = run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT).stdout.split("\0")
    for name in names:
        if not name or name.startswith("tests/") or not (ROOT / name).is_file():
            continue
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, dest / name)
    if kernels:
        for name in KERNEL_FILES:
            if not (PACKAGE / name).exists():
                pytest.fail(f"{PACKAGE / name} missing: run build_scripts/build_kernels.py first")
            shutil.copy2(PACKAGE / name, dest / "py_runtime" / "nnwasm" / name)
    return dest


def declared_build_requirements():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]


@pytest.fixture(scope="module")
def wheelhouse():
    """Wheels of the declared build requirements only (downloaded once from PyPI)."""
    reqs = declared_build_requirements()
    stamp = WHEELHOUSE / ".requires"
    if not (stamp.exists() and stamp.read_text() == "\n".join(reqs)):
        WHEELHOUSE.mkdir(parents=True, exist_ok=True)
        proc = run([sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:", "-d", WHEELHOUSE, *reqs], ok=False)
        if proc.returncode != 0:
            pytest.skip(f"the build requirements {reqs} could not be downloaded into {WHEELHOUSE}:\n{proc.stderr[-1000:]}")
        stamp.write_text("\n".join(reqs))
    return WHEELHOUSE


@pytest.fixture(scope="module")
def sdist(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sdist")
    src = clean_copy(tmp / "src")
    run([sys.executable, "-m", "build", "--sdist", "--no-isolation", "-o", tmp / "dist", src])
    [path] = (tmp / "dist").glob("nnwasm-*.tar.gz")
    return path


def test_sdist_holds_what_the_wheel_needs(sdist):
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    for name in KERNEL_FILES:
        assert f"py_runtime/nnwasm/{name}" in names
    for name in ["setup.py", "pyproject.toml", "MANIFEST.in", "build_scripts/build_kernels.py",
                 "build_scripts/gen_ops.py", "kernels_c/ops.def", "kernels_c/plan.c", "kernels_c/gen/ops.h"]:
        assert name in names, name
    c_files = {p.relative_to(ROOT).as_posix() for p in (ROOT / "kernels_c").rglob("*") if p.suffix in (".c", ".h")}
    assert c_files <= names, sorted(c_files - names)[:5]
    assert not any(n.startswith(("tests/", "web/", "demo/")) for n in names)


def test_wheel_from_sdist_with_declared_build_requirements_only(sdist, wheelhouse, tmp_path):
    # pip's isolated build environment, filled from the wheelhouse alone (--no-index)
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-index", "--find-links", wheelhouse,
         "-w", tmp_path, sdist], env={"NNWASM_LLVM_BIN": "/nonexistent"})   # and no LLVM
    [wheel] = tmp_path.glob("nnwasm-*-py3-none-any.whl")
    with zipfile.ZipFile(wheel) as z:
        for name in KERNEL_FILES:
            assert z.read(f"nnwasm/{name}") == (PACKAGE / name).read_bytes(), name
        modules = {p.relative_to(PACKAGE.parent).as_posix() for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts}
        assert modules <= set(z.namelist())


def test_pip_install_sdist_into_a_fresh_venv_runs_a_model(sdist, wheelhouse, tmp_path):
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", venv])
    py = venv / "bin" / "python"
    run([py, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--find-links", wheelhouse, sdist])
    # nnwasm's runtime dependencies (numpy, wasmtime) come from this venv's site-packages, after the new venv's own
    site = run([py, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"]).stdout.strip()
    deps = run([sys.executable, "-c", "import numpy, os; print(os.path.dirname(os.path.dirname(numpy.__file__)))"]).stdout.strip()
    Path(site, "zz_deps.pth").write_text(deps + "\n")
    x = rand(1, 3, 8, 8)
    w = rand(4, 3, 3, 3, seed=1)
    from onnx import helper
    model = graph_model([helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
                         helper.make_node("Relu", ["c"], ["y"])], {"x": x}, ["y"], {"w": w})
    (tmp_path / "m.onnx").write_bytes(model)
    np.save(tmp_path / "x.npy", x)
    script = (
        "import sys, numpy as np, nnwasm\n"
        "assert nnwasm.__file__.startswith(sys.prefix), nnwasm.__file__\n"
        "s = nnwasm.InferenceSession(sys.argv[1])\n"
        "assert {p for _, _, p in s.get_provider_assignment()} == {'WasmExecutionProvider'}, s.get_provider_assignment()\n"
        "np.save(sys.argv[3], s.run(None, {'x': np.load(sys.argv[2])})[0])\n")
    run([py, "-c", script, tmp_path / "m.onnx", tmp_path / "x.npy", tmp_path / "y.npy"], cwd=tmp_path)
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), ort_run(model, {"x": x})[0], rtol=1e-5, atol=1e-5)


def test_sdist_without_kernels_says_what_to_install(tmp_path):
    src = clean_copy(tmp_path / "src", kernels=False)
    proc = run([sys.executable, "-m", "build", "--sdist", "--no-isolation", "-o", tmp_path / "dist", src],
               env={"NNWASM_LLVM_BIN": "/nonexistent"}, ok=False)
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "apt-get install clang-19 lld-19" in out and "NNWASM_LLVM_BIN" in out, out[-2000:]


@pytest.mark.skipif(os.environ.get("NNWASM_SDIST_REBUILD") != "1",
                    reason="rebuilds the kernels from the sdist's C (~1 min): NNWASM_SDIST_REBUILD=1")
def test_sdist_rebuilds_identical_kernels_from_its_own_c(sdist, tmp_path):
    with tarfile.open(sdist) as tar:
        tar.extractall(tmp_path, filter="data")
    [src] = tmp_path.glob("nnwasm-*")
    for name in KERNEL_FILES:
        (src / "py_runtime" / "nnwasm" / name).unlink()
    run([sys.executable, "build_scripts/build_kernels.py", "--runtime-only"], cwd=src)
    for name in KERNEL_FILES:
        assert (src / "py_runtime" / "nnwasm" / name).read_bytes() == (PACKAGE / name).read_bytes(), name
