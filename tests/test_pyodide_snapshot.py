"""build_scripts/pyodide_snapshot.mjs: the same Pyodide and wheel give a byte-identical snapshot
(build_web.py rewrites dist/web/ only when something changed), and a bad argument is refused."""
import shutil
import subprocess

import pytest

from conftest import ROOT

pytestmark = pytest.mark.node

SCRIPT = ROOT / "build_scripts" / "pyodide_snapshot.mjs"
PYODIDE = ROOT / "node_modules" / "pyodide"


def _wheel():
    wheels = sorted((ROOT / "dist").glob("nnwasm-*.whl"))
    if not wheels:
        pytest.skip("no wheel in dist/: run build_scripts/build_web.py")
    return wheels[-1]


def test_snapshot_is_deterministic(tmp_path):
    node = shutil.which("node")
    assert node, "Node.js is not installed"
    wheel = _wheel()
    outs = [tmp_path / "a.bin", tmp_path / "b.bin"]
    for out in outs:
        proc = subprocess.run([node, str(SCRIPT), str(PYODIDE), str(wheel), str(out)], capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 0, proc.stderr
    a, b = (p.read_bytes() for p in outs)
    assert len(a) > 1 << 20 and a == b


def test_snapshot_refuses_a_missing_wheel(tmp_path):
    proc = subprocess.run([shutil.which("node"), str(SCRIPT), str(PYODIDE), str(tmp_path / "none.whl"),
                           str(tmp_path / "out.bin")], capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0 and "none.whl" in proc.stderr
    assert not (tmp_path / "out.bin").exists()
