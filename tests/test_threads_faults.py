"""Faults of the thread pool in CPython (issue 16 item 7; kernels_c/threads/pool.c's protocol,
host/threads.py): a helper that traps releases the caller and the run raises, the caller's own trap
settles the job, RunOptions.terminate still stops a run between ops, and 100 create/run/release
cycles with 2 threads leave no thread, host or memory behind."""
import gc
import threading
import time

import numpy as np
import pytest

import nnwasm
from nnwasm.host import _HOSTS, threads
from test_ort_api import _terminated_midway, long_model
from test_threads import _rss_mb, host_of, matmul_model, session

X = np.random.default_rng(3).standard_normal((1, 96, 512)).astype(np.float32)


def _trapping_run(sess, host, worker, tries=20):
    """Arms worker's next tile to trap and runs until a run raises (a helper may find no tile left
    in a run: the caller takes tiles too); the KernelError."""
    host.call("nnw_pool_test_trap", worker)
    try:
        for _ in range(tries):
            try:
                sess.run(None, {"x": X})
            except nnwasm.KernelError as e:
                return e
        pytest.fail(f"worker {worker} took no tile in {tries} runs")
    finally:
        if not host.closed:
            host.call("nnw_pool_test_trap", -1)


def test_helper_trap_raises_and_goes_on_with_one_thread():
    model = matmul_model()
    want = session(model, 1).run(None, {"x": X})[0]
    s = session(model, 2)
    host = host_of(s)
    t0 = time.perf_counter()
    e = _trapping_run(s, host, 1)
    assert time.perf_counter() - t0 < 30   # no hang on the helper that will not come back
    assert "thread-pool helper (helper 1: " in str(e) and "goes on with 1 thread" in str(e), str(e)
    assert host.threads == 1 and host.call("nnw_pool_threads") == 1 and threads.live_threads() == 0
    assert s.run(None, {"x": X})[0].tobytes() == want.tobytes()   # the session stays usable, same bits
    s.release()


def test_caller_trap_settles_the_job_and_the_pool_stays():
    model = matmul_model()
    want = session(model, 1).run(None, {"x": X})[0]
    s = session(model, 2)
    host = host_of(s)
    s.run(None, {"x": X})
    e = _trapping_run(s, host, 0)
    assert "trapped in nnw_plan_run" in str(e), str(e)
    assert host.threads == 2 and host.call("nnw_pool_threads") == 2   # a caller's trap is no helper's fault
    jobs = host.call("nnw_pool_jobs")
    assert s.run(None, {"x": X})[0].tobytes() == want.tobytes()
    assert host.call("nnw_pool_jobs") > jobs   # and the next run splits again
    s.release()
    assert threads.live_threads() == 0


def test_terminate_stops_a_threaded_run_between_ops():
    so = nnwasm.SessionOptions()
    so.add_session_config_entry("session.kernels_flavour", "simd")
    so.intra_op_num_threads = 2
    sess = nnwasm.InferenceSession(long_model(), so, providers=["WasmExecutionProvider"])
    assert host_of(sess).threads == 2
    x = np.random.default_rng(4).standard_normal((256, 256)).astype(np.float32)
    full = sess.run(None, {"X": x}, nnwasm.RunOptions())[0]
    stopped, whole, ro = _terminated_midway(sess, {"X": x})
    assert stopped < whole * 0.8, (stopped, whole)
    ro.terminate = False
    assert np.array_equal(sess.run(None, {"X": x}, ro)[0], full)
    sess.release()
    assert threads.live_threads() == 0


def test_100_create_run_release_cycles():
    """100 cycles of a 2-thread session: no helper thread, no host, and the resident size settles."""
    model = matmul_model(layers=1)
    before = threading.active_count()
    rss = []
    for i in range(100):
        s = session(model, 2)
        assert host_of(s).threads == 2
        s.run(None, {"x": X})
        s.release()
        del s
        if i % 10 == 9:
            gc.collect()
            rss.append(_rss_mb())
    assert threads.live_threads() == 0 and threading.active_count() == before
    assert not [k for k in _HOSTS if k.startswith("simd+threads")]
    print(f"\nresident MB every 10 cycles: {[round(r) for r in rss]}")
    assert rss[-1] - rss[1] < 30, f"resident size grew {rss[-1] - rss[1]:.1f} MB over 80 cycles: {rss}"
