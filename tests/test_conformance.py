"""The ONNX backend node suite through nnwasm.InferenceSession with the default providers (WASM
first, numpy fallback), as a user would run each model: reading, shape inference, partitioning,
plans and kernels all take part.

Outcomes per case: pass; unsupported (nnwasm says so: NotImplementedOp / Unsupported, a clear
refusal) which is counted, not failed; anything else (a wrong answer, an unexpected exception) is
a failure unless WRONG_EXPECTED lists it with a reason. MIN_PASSING ratchets the pass count up:
raise it when more ops land, never lower it. The cases are generated in memory by onnx's own
generators (this onnx wheel ships no backend/test/data/node directory).

The optimizer levels must agree: test_optimizer_levels_agree runs every passing case again at
ORT_DISABLE_ALL and compares with the default level's (ORT_ENABLE_ALL) results (about 30 s).
"""
import collections
import warnings

import numpy as np
import pytest

import nnwasm

onnx = pytest.importorskip("onnx")
from onnx import numpy_helper  # noqa: E402

onnx_node_cases = pytest.importorskip("onnx.backend.test.case.node")

MIN_PASSING = 1135        # measured 2026-11-23: 1135 of 1884 (747 refused as unsupported), 1061 the day before
MIN_ON_WASM = 817         # passing cases in which a node ran on the WASM provider (416 the day before;
                          # about 20 have only tiny integer/bool nodes it computes on the host)

WRONG_EXPECTED = {
    "test_resize_downsample_scales_linear_align_corners":
        "onnx's reference divides by scale*size (a float); onnxruntime and nnwasm by the output size",
    "test_resize_downsample_scales_cubic_align_corners": "as above",
}


def _array(x):
    # Some generated cases carry their data as TensorProto instead of numpy arrays.
    return numpy_helper.to_array(x) if isinstance(x, onnx.TensorProto) else np.asarray(x)


LEVELS_DIFFER = {   # cases whose results depend on the optimization level, and why
    "test_causal_conv_with_state_silu_fp16_expanded":
        "fp16 model: ORT_DISABLE_ALL computes it in float16 node by node, outside the reference's "
        "tolerance; from ORT_ENABLE_BASIC, float16_to_float32 computes it in float32",
}


def run_case(case, level=None, results=None):
    """Runs every data set of a case against its expected outputs; returns the providers used.
    results (a list), if given, receives the outputs."""
    so = nnwasm.SessionOptions()
    if level is not None:
        so.graph_optimization_level = level
    sess = nnwasm.InferenceSession(case.model.SerializeToString(), so)
    names = [i.name for i in case.model.graph.input]
    outs = [o.name for o in case.model.graph.output]
    for inputs, expected in case.data_sets:
        got = sess.run(outs[:len(expected)], {n: _array(x) for n, x in zip(names, inputs)})
        if results is not None:
            results.append(got)
        for g, e in zip(got, expected):
            e = _array(e)
            assert g.dtype == e.dtype and g.shape == e.shape, f"got {g.dtype}{g.shape}, expected {e.dtype}{e.shape}"
            if e.dtype.kind in "fc":
                np.testing.assert_allclose(g, e, rtol=case.rtol, atol=case.atol)
            else:
                np.testing.assert_array_equal(g, e)
    return {p for _, _, p in sess.get_provider_assignment()}


@pytest.fixture(scope="module")
def cases():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return onnx_node_cases.collect_testcases()


@pytest.fixture(scope="module")
def outcomes(cases):
    result = {}
    for case in cases:
        try:
            providers = run_case(case)
            result[case.name] = ("pass", "WasmExecutionProvider" in providers, "")
        except nnwasm.errors.Unsupported as e:
            result[case.name] = ("unsupported", False, str(e))
        except Exception as e:  # noqa: BLE001 - every other outcome is judged below
            result[case.name] = ("fail", False, f"{type(e).__name__}: {str(e)[:300]}")
    return result


def test_no_unexpected_failures(outcomes):
    counts = collections.Counter(o[0] for o in outcomes.values())
    print(f"\nONNX backend node cases: {dict(counts)}, "
          f"{sum(1 for o in outcomes.values() if o[1])} passing with WASM nodes")
    bad = {k: v[2] for k, v in outcomes.items() if v[0] == "fail" and k not in WRONG_EXPECTED}
    assert not bad, "unexpected failures:\n" + "\n".join(f"{k}: {v}" for k, v in sorted(bad.items()))


def test_expected_failures_still_fail(outcomes):
    fixed = [k for k in WRONG_EXPECTED if outcomes.get(k, ("missing",))[0] == "pass"]
    missing = [k for k in WRONG_EXPECTED if k not in outcomes]
    assert not fixed, f"these now pass; remove them from WRONG_EXPECTED: {fixed}"
    assert not missing, f"WRONG_EXPECTED names cases that do not exist: {missing}"


def test_pass_count_ratchet(outcomes):
    passing = sum(1 for o in outcomes.values() if o[0] == "pass")
    on_wasm = sum(1 for o in outcomes.values() if o[0] == "pass" and o[1])
    assert passing >= MIN_PASSING and on_wasm >= MIN_ON_WASM, (passing, on_wasm)


def test_optimizer_levels_agree(cases, outcomes):
    """Cases that pass at the default level (ORT_ENABLE_ALL) pass at ORT_DISABLE_ALL too, with
    outputs equal within the case's tolerance."""
    chosen = sorted((c for c in cases if outcomes[c.name][0] == "pass" and c.name not in LEVELS_DIFFER),
                    key=lambda c: c.name)
    bad = []
    for case in chosen:
        full, off = [], []
        try:
            run_case(case, nnwasm.GraphOptimizationLevel.ORT_ENABLE_ALL, full)
            run_case(case, nnwasm.GraphOptimizationLevel.ORT_DISABLE_ALL, off)
            for a, b in zip(full, off):
                for x, y in zip(a, b):
                    assert x.dtype == y.dtype and x.shape == y.shape
                    if x.dtype.kind in "fc":
                        np.testing.assert_allclose(x, y, rtol=case.rtol, atol=case.atol)
                    else:
                        np.testing.assert_array_equal(x, y)
        except Exception as e:  # noqa: BLE001 - collected and reported together
            bad.append(f"{case.name}: {type(e).__name__}: {str(e)[:300]}")
    print(f"\noptimizer levels compared on {len(chosen)} passing cases")
    assert len(chosen) >= 1000
    assert not bad, "levels disagree:\n" + "\n".join(bad)
