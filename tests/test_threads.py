"""The thread pool inside kernels-threads.wasm (kernels_c/threads/pool.c) in CPython
(host/threads.py): SessionOptions.intra_op_num_threads > 1 gives a session helper threads, each
with its own wasmtime instance on one SharedMemory. N threads must give exactly the bits of one."""
import gc
import os
import sys
import threading
import time
import warnings

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import nnwasm
from conftest import ROOT
from nnwasm.host import _HOSTS, threads
from test_zoo import load_case

sys.path.insert(0, str(ROOT / "build_scripts"))
import build_zoo  # noqa: E402


def session(model, n, **kw):
    so = nnwasm.SessionOptions()
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    so.add_session_config_entry("session.kernels_flavour", "simd")
    so.intra_op_num_threads = n
    return nnwasm.InferenceSession(model, so, providers=["WasmExecutionProvider"], **kw)


def host_of(sess):
    return _HOSTS[sess.get_provider_assignment().kernels_flavour]


def matmul_model(m=96, k=512, n=1000, layers=3, seed=0):
    """MatMul + bias chains on [1, M, K] (gemm_packed; a 2-D one would become a Gemm), the last one with a width that is not a multiple of 8."""
    rng = np.random.default_rng(seed)
    nodes, inits, prev, width = [], [], "x", k
    for i in range(layers):
        out_w = n if i == layers - 1 else k
        inits += [numpy_helper.from_array(rng.standard_normal((width, out_w)).astype(np.float32) / 16, f"w{i}"),
                  numpy_helper.from_array(rng.standard_normal(out_w).astype(np.float32), f"b{i}")]
        nodes += [helper.make_node("MatMul", [prev, f"w{i}"], [f"mm{i}"]),
                  helper.make_node("Add", [f"mm{i}", f"b{i}"], [f"y{i}" if i < layers - 1 else "y"])]
        if i < layers - 1:
            nodes.append(helper.make_node("Relu", [f"y{i}"], [f"r{i}"]))
            prev = f"r{i}"
        width = out_w
    graph = helper.make_graph(nodes, "mm", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, m, k])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, m, n])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def test_threads_start_and_default_stays_one():
    one = session(matmul_model(), 0)
    assert one.get_provider_assignment().kernels_flavour == "simd"   # the default: no pool
    two = session(matmul_model(), 2)
    assert two.get_provider_assignment().kernels_flavour.startswith("simd+threads#")
    assert host_of(two).threads == 2 and host_of(two).call("nnw_pool_threads") == 2
    two.release()


@pytest.mark.parametrize("n", [2, 3])
def test_matmul_model_same_bits_1_and_n_threads(n):
    model = matmul_model()
    x = np.random.default_rng(1).standard_normal((1, 96, 512)).astype(np.float32)
    one, two = session(model, 1), session(model, n)
    host = host_of(two)
    jobs = host.call("nnw_pool_jobs")
    a, b = one.run(None, {"x": x})[0], two.run(None, {"x": x})[0]
    assert host.call("nnw_pool_jobs") - jobs == 3   # every GEMM ran split
    assert a.tobytes() == b.tobytes()
    for _ in range(3):   # and again: which helper takes which tile varies, the bits do not
        assert two.run(None, {"x": x})[0].tobytes() == a.tobytes()
    two.release()


# the zoo's models; True: at least one GEMM (gemm_packed, a pointwise conv's) must have run split
ZOO = {"bert_tiny": True, "distilbert_tiny": False, "gpt2_tiny": True, "vit_tiny": False, "mobilenet_v3_small": True,
       "efficientnet_b0": True, "unet_small": False, "audio_rnn": False, "bert_tiny_int8_dynamic": False,
       "mobilenet_v3_small_int8_qdq": False, "mobilenet_v3_small_fp16": True, "bert_tiny_fp16": False}


@pytest.mark.parametrize("name", ZOO)
def test_zoo_same_bits_1_and_2_threads(name):
    meta = build_zoo.load_sidecar(name)
    if not meta:
        pytest.fail(f"the model zoo is not built in {build_zoo.zoo_dir()}: run `make zoo`")
    path = str(build_zoo.zoo_dir() / meta["file"])
    one, two = session(path, 1), session(path, 2)
    host = host_of(two)
    jobs = host.call("nnw_pool_jobs")
    for case in meta["cases"]:
        feeds, _ = load_case(build_zoo.zoo_dir(), case)
        for a, b in zip(one.run(None, feeds), two.run(None, feeds)):
            assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), case["name"]
    if ZOO[name]:
        assert host.call("nnw_pool_jobs") > jobs, f"no GEMM of {name} ran on two threads"
    print(f"\n{name}: {host.call('nnw_pool_jobs') - jobs} split jobs")
    two.release()


def _rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def test_create_run_release_cycles_leave_no_threads():
    """20 cycles with 2 threads (released, or dropped to the finalizer): no helper thread, no host
    and no shared memory left (the resident size settles: each session touches ~10 MB of its own)."""
    model = matmul_model(layers=1)
    x = np.ones((1, 96, 512), np.float32)
    before = threading.active_count()
    rss = []
    for i in range(20):
        s = session(model, 2)
        s.run(None, {"x": x})
        if i % 2:
            s.release()
        del s
        gc.collect()   # the finalizer stops the pool of a session not released
        rss.append(_rss_mb())
    assert threads.live_threads() == 0
    assert threading.active_count() == before
    assert not [k for k in _HOSTS if k.startswith("simd+threads")]
    print(f"\nresident MB per cycle: {[round(r) for r in rss]}")
    assert rss[-1] - rss[4] < 20, f"resident size grew {rss[-1] - rss[4]:.1f} MB over 15 cycles: {rss}"


def test_helper_that_fails_to_start_falls_back_to_one_thread(monkeypatch):
    monkeypatch.setitem(threads._FAIL_START, 2, "refused (test)")
    model = matmul_model(layers=1)
    x = np.ones((1, 96, 512), np.float32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s = session(model, 3)
    msgs = [str(w.message) for w in caught if "helper thread" in str(w.message)]
    assert msgs == ["nnwasm: a helper thread failed to start (RuntimeError: refused (test)); running on 1 thread"]
    host = host_of(s)
    assert host.threads == 1 and host.call("nnw_pool_threads") == 1 and threads.live_threads() == 0
    np.testing.assert_array_equal(s.run(None, {"x": x})[0], session(model, 1).run(None, {"x": x})[0])
    s.release()


def test_no_shared_memory_falls_back_to_one_thread(monkeypatch):
    def refuse(*_):
        raise RuntimeError("no shared memory (test)")
    monkeypatch.setattr(threads, "ThreadedHost", refuse)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s = session(matmul_model(layers=1), 2)
    assert [str(w.message) for w in caught if "thread pool" in str(w.message)] == [
        "nnwasm: no thread pool (RuntimeError: no shared memory (test)); running on 1 thread"]
    assert s.get_provider_assignment().kernels_flavour == "simd"
    s.run(None, {"x": np.ones((1, 96, 512), np.float32)})


def test_large_gemm_speedup():
    """One 512x1024x1024 MatMul, 1 and 2 threads interleaved, medians, with the process's CPU time
    over wall time (about 2 when both threads found a core) and the helper's share of the tiles.
    The machine has 2 cores shared with other work: the time bound is asserted only when the load
    average leaves a core free; that the helper took tiles is asserted always."""
    model = matmul_model(m=512, k=1024, n=1024, layers=1)
    x = np.random.default_rng(2).standard_normal((1, 512, 1024)).astype(np.float32)
    one, two = session(model, 1), session(model, 2)
    host = host_of(two)
    for s in (one, two):
        s.run(None, {"x": x})
    t1, t2, cpu2 = [], [], []
    for _ in range(7):
        for s, ts in ((one, t1), (two, t2)):
            c0, t0 = time.process_time(), time.perf_counter()
            s.run(None, {"x": x})
            ts.append(time.perf_counter() - t0)
            if s is two:
                cpu2.append((time.process_time() - c0) / ts[-1])
    ratio = np.median(t2) / np.median(t1)
    load = os.getloadavg()[0]
    mine, helper = host.call("nnw_pool_tiles", 0), host.call("nnw_pool_tiles", 1)
    print(f"\nlarge GEMM 512x1024x1024: 1T {np.median(t1) * 1e3:.1f} ms, 2T {np.median(t2) * 1e3:.1f} ms, "
          f"2T/1T {ratio:.3f}, 2T cpu/wall {np.median(cpu2):.2f}, tiles caller {mine} helper {helper} "
          f"(load average {load:.2f})")
    two.release()
    assert helper > 0 and mine + helper == 4 * 8   # two tiles a thread, 8 runs
    if load < 1.0:
        assert ratio < 0.8
