"""`import nnwasm` in Pyodide loads nothing it does not use (docs/notebooks.md, "Import cost"):
no numpy, no ctypes, no importlib.resources (the stdlib modules it adds are only `numbers` and
`array`), and from the notebook site's wheel (the dist wheel plus Pyodide's bytecode,
notebook/wheel_pyc.mjs) it compiles no module from source. Runs in Pyodide under Node."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PYODIDE = ROOT / "node_modules" / "pyodide"
pytestmark = pytest.mark.node
ALLOWED_STDLIB = {"array", "numbers"}   # all else nnwasm imports is loaded by Pyodide at start


@pytest.fixture(scope="module")
def wheels(tmp_path_factory):
    node = shutil.which("node")
    if node is None or not (PYODIDE / "pyodide.mjs").exists():
        pytest.fail("node and node_modules/pyodide are needed: run `make setup`")
    proc = subprocess.run([sys.executable, str(ROOT / "build_scripts" / "build_web.py")], capture_output=True, text=True)
    assert proc.returncode == 0, f"build_web.py failed:\n{proc.stdout}\n{proc.stderr}"
    [plain] = (ROOT / "dist").glob("nnwasm-*-py3-none-any.whl")
    with_pyc = tmp_path_factory.mktemp("pyc") / plain.name
    proc = subprocess.run([node, str(ROOT / "notebook" / "wheel_pyc.mjs"), str(plain), str(with_pyc)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return node, plain, with_pyc


def import_cost(node, wheel):
    proc = subprocess.run([node, str(ROOT / "tests" / "node" / "import-cost.mjs"), str(PYODIDE), str(wheel)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_import_loads_only_what_nnwasm_uses(wheels):
    node, plain, _ = wheels
    r = import_cost(node, plain)
    assert not r["numpy"]
    assert set(r["added"]) <= ALLOWED_STDLIB, r["added"]
    assert r["compiled"], "the plain wheel has no bytecode: its modules compile at import"


def test_notebook_wheel_imports_from_bytecode(wheels):
    node, plain, with_pyc = wheels
    r = import_cost(node, with_pyc)
    assert r["compiled"] == [], r["compiled"][:5]
    assert not r["numpy"] and set(r["added"]) <= ALLOWED_STDLIB
    base = import_cost(node, plain)
    print(f"\nimport nnwasm in Pyodide (Node): {base['ms']:.0f} ms from source, {r['ms']:.0f} ms from bytecode; "
          f"{r['nnwasm_modules']} nnwasm modules; wheel {plain.stat().st_size:,} -> {with_pyc.stat().st_size:,} bytes")
