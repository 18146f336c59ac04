"""`pip install nnwasm` is all a CPython user does: the wheel (build_scripts/build_web.py writes it
to dist/) installed into a fresh venv pulls numpy and wasmtime through its environment markers,
nothing else, and `import nnwasm as ort` then runs a model. In Pyodide (sys_platform
"emscripten") the same markers ask for nothing. pip fetches numpy and wasmtime from the package
registry (or its cache)."""
import email
import subprocess
import sys
import venv
import zipfile

import numpy as np
import pytest
from onnx import helper
from packaging.markers import Marker
from packaging.requirements import Requirement

from conftest import ROOT
from model_builders import graph_model


@pytest.fixture(scope="module")
def wheel():
    proc = subprocess.run([sys.executable, str(ROOT / "build_scripts" / "build_web.py")],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"build_web.py failed:\n{proc.stdout}\n{proc.stderr}"
    wheels = sorted((ROOT / "dist").glob("nnwasm-*-py3-none-any.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def requirements(wheel):
    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        return [Requirement(r) for r in email.message_from_bytes(z.read(meta)).get_all("Requires-Dist") or []]


def test_markers_pull_numpy_and_wasmtime_on_cpython_and_nothing_in_pyodide(wheel):
    reqs = [r for r in requirements(wheel) if not (r.marker and "extra" in str(r.marker))]
    assert sorted(r.name for r in reqs) == ["numpy", "wasmtime"]
    pyodide = {"sys_platform": "emscripten", "platform_system": "Emscripten", "python_version": "3.14"}
    cpython = {"sys_platform": "linux", "platform_system": "Linux", "python_version": "3.11"}
    for r in reqs:
        assert r.marker is not None and not r.marker.evaluate(pyodide), f"{r} would be installed in Pyodide"
        assert r.marker.evaluate(cpython), f"{r} would not be installed on CPython"
    assert Marker("sys_platform != 'emscripten'").evaluate(cpython)


def test_pip_install_into_a_fresh_venv_runs_a_model(wheel, tmp_path):
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = env_dir / "bin" / "python"
    proc = subprocess.run([str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(wheel)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"pip install failed (is the package registry reachable?):\n{proc.stderr[-3000:]}"
    listed = subprocess.run([str(py), "-m", "pip", "list", "--format=freeze", "--disable-pip-version-check"],
                            capture_output=True, text=True, timeout=120).stdout
    names = {line.split("==")[0].lower() for line in listed.split()} - {"pip", "setuptools", "wheel"}
    assert names == {"nnwasm", "numpy", "wasmtime"}, names

    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
    model = graph_model([helper.make_node("Relu", ["x"], ["y"])], {"x": x}, ["y"])
    (tmp_path / "relu.onnx").write_bytes(model)
    script = ("import numpy as np, nnwasm as ort\n"
              "s = ort.InferenceSession('relu.onnx', providers=['WasmExecutionProvider'])\n"
              "y, = s.run(None, {'x': np.arange(6, dtype=np.float32).reshape(2, 3) - 2})\n"
              "print(s.get_providers(), y.tolist())\n")
    out = subprocess.run([str(py), "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == f"['WasmExecutionProvider'] {np.maximum(x, 0).tolist()}"
