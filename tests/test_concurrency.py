"""Concurrency in CPython (issue 18, item 4): several threads running one session, with symbolic
dims at different sizes in each (one traced variant whose arena, words and I/O places change per
run: wasm/runner.py), get the answers each would get alone; release() of a session with helper
threads while another thread runs it waits for that run (host/threads.py takes the host's lock),
never freeing memory in use. The JS side: tests/node/concurrency.mjs (test_node_concurrency below)
and tests/test_browser_sessions.py (8 sessions in a page)."""
import subprocess
import threading

import numpy as np
import pytest

import nnwasm
from conftest import ROOT
from test_memory_bounds import _expected, _outer_model, bounds_dir, node_bounds  # noqa: F401 (a fixture)

THREADS = 4
RUNS = 30


def _one_thread(sess, seed, results):
    rng = np.random.default_rng(seed)
    try:
        for _ in range(RUNS):
            n = int(rng.integers(1, 160))
            x = rng.uniform(-1, 1, n).astype(np.float32)
            (z,) = sess.run(None, {"x": x})
            results.append((n, float(z), _expected(x)))
    except BaseException as e:   # noqa: BLE001 (reported by the test)
        results.append(e)


def test_threads_on_one_session_with_symbolic_dims():
    sess = nnwasm.InferenceSession(_outer_model())
    results = []
    threads = [threading.Thread(target=_one_thread, args=(sess, k, results)) for k in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    errors = [r for r in results if isinstance(r, BaseException)]
    assert errors == []
    assert len(results) == THREADS * RUNS
    for n, got, want in results:
        assert abs(got - want) <= 1e-3 * max(abs(want), n), (n, got, want)
    assert len({n for n, _, _ in results}) > 20, "the threads did not run many different sizes"


def test_release_during_a_run_waits_for_it():
    """intra_op_num_threads=2: release() stops the helper threads and frees the session's own
    kernels.wasm; a run in another thread when it is called finishes first, with the right answer."""
    so = nnwasm.SessionOptions()
    so.intra_op_num_threads = 2
    sess = nnwasm.InferenceSession(_outer_model(n=1500), so)
    if not getattr(sess, "_release_threads", None):
        pytest.skip("no thread pool here (host/threads.py fell back to one thread)")
    x = np.random.default_rng(0).uniform(-1, 1, 1500).astype(np.float32)
    started, outcome = threading.Event(), []

    def run():
        started.set()
        try:
            outcome.append(float(sess.run(None, {"x": x})[0]))
        except nnwasm.NnwasmError as e:   # the release came first: a clear error, not a crash
            outcome.append(e)
    t = threading.Thread(target=run)
    t.start()
    started.wait()
    sess.release()
    t.join(timeout=120)
    assert len(outcome) == 1
    if isinstance(outcome[0], float):
        assert abs(outcome[0] - _expected(x)) <= 1e-3 * abs(_expected(x))
    with pytest.raises(nnwasm.NnwasmError):
        sess.run(None, {"x": x})


@pytest.mark.node
def test_node_concurrency(bounds_dir):
    """tests/node/bounds.mjs concurrency: concurrent run() calls on one session (a plan file, eight
    plan sessions at once, an .onnx with symbolic dims through Pyodide) give each its own answer;
    release() while runs are pending waits for them, and run() rejects after it."""
    node_bounds(bounds_dir, "concurrency")
