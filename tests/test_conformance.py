"""The ONNX backend suite through nnwasm.InferenceSession, as issue 8 counts it (tests/backend_suite.py):
the installed onnx's 1884 node cases plus the wheel's simple / pytorch-converted / pytorch-operator
models, 2024 cases, fed as a user would feed them, once with providers ["NumpyExecutionProvider"]
and once with the default list (WASM first, numpy fallback): reading, shape inference,
partitioning, plans and kernels all take part.

Every failure must be listed, with its reason, in tests/conformance_manifest.txt; a listed case
that passes must leave it; MIN_PASSING ratchets the pass counts up: raise them when more ops land,
never lower them. The cases are generated at test time (no copies of onnx's data are committed).

The optimizer levels must agree: test_optimizer_levels_agree runs every passing node case again at
ORT_DISABLE_ALL and compares with the default level's (ORT_ENABLE_ALL) results.
"""
import collections
import contextlib

import numpy as np
import pytest

import nnwasm

pytest.importorskip("onnx")
import backend_suite  # noqa: E402

MIN_PASSING = {"numpy": 2010, "default": 2010}   # of 2024, measured 2026-11-23 (1251 that morning) (onnxruntime 1.32: 1689)
MIN_ON_WASM = 952         # default list: passing cases in which a node ran on the WASM provider

LEVELS_DIFFER = {   # cases whose results depend on the optimization level, and why
    "test_causal_conv_with_state_silu_fp16_expanded":
        "fp16 model: ORT_DISABLE_ALL computes it in float16 node by node, outside the reference's "
        "tolerance; from ORT_ENABLE_BASIC, float16_to_float32 computes it in float32",
}


@pytest.fixture(scope="module")
def cases():
    return backend_suite.all_cases()


@pytest.fixture(scope="module")
def manifest():
    return backend_suite.read_manifest()


@pytest.fixture(scope="module")
def outcomes(cases):
    """{list: {case: (status, detail, ran on WASM)}}"""
    runtime = backend_suite.Runtime("nnwasm")
    result = {}
    for lst in backend_suite.PROVIDER_LISTS:
        result[lst] = {}
        for case in cases:
            status, detail = backend_suite.outcome(runtime, case, lst)
            on_wasm = status == "pass" and any(p == "WasmExecutionProvider" for _, _, p in detail.get_provider_assignment())
            result[lst][case.name] = (status, detail if status == "fail" else "", on_wasm)
    return result


@pytest.fixture(scope="module", autouse=True)
def _report_counts(request):
    """Prints the pass counts of both provider lists into the test run's output (CI's log)."""
    yield
    got = request.session.__dict__.get("_nnwasm_backend_counts")
    if not got:
        return
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        print("\nONNX backend suite (tests/backend_suite.py, 2024 cases): " + "; ".join(got))


def test_the_suite_has_2024_cases(cases):
    assert len(cases) == 2024, len(cases)   # onnx 1.23.2; another onnx: check the counts and the manifest
    assert len({c.name for c in cases}) == len(cases)


@pytest.mark.parametrize("lst", list(backend_suite.PROVIDER_LISTS))
def test_every_failure_is_in_the_manifest(outcomes, manifest, lst, request):
    got = outcomes[lst]
    counts = collections.Counter(o[0] for o in got.values())
    print(f"\nONNX backend suite, providers {lst}: {dict(counts)}"
          + (f", {sum(1 for o in got.values() if o[2])} passing with WASM nodes" if lst == "default" else ""))
    request.session.__dict__.setdefault("_nnwasm_backend_counts", []).append(
        f"providers {lst}: {counts['pass']} pass, {counts['fail']} listed in conformance_manifest.txt")
    bad = {k: v[1] for k, v in got.items() if v[0] == "fail" and (k, lst) not in manifest}
    assert not bad, ("unexpected failures (fix them, or list them in tests/conformance_manifest.txt with the reason):\n"
                     + "\n".join(f"{k}: {v}" for k, v in sorted(bad.items())))


@pytest.mark.parametrize("lst", list(backend_suite.PROVIDER_LISTS))
def test_manifest_lists_only_failures(outcomes, manifest, lst):
    """A listed case that passes must leave the list, except a random-output case: its draws can match
    the expected values by chance (test_bernoulli_double's 10 draws do about 1 run in 60)."""
    fixed = sorted(k for (k, m) in manifest if m == lst and outcomes[lst].get(k, ("missing",))[0] == "pass"
                   and not backend_suite.random_output(manifest, k, lst))
    missing = sorted(k for (k, m) in manifest if m == lst and k not in outcomes[lst])
    assert not fixed, f"these pass now; take them out of tests/conformance_manifest.txt ({lst}): {fixed}"
    assert not missing, f"tests/conformance_manifest.txt names cases that do not exist: {missing}"


def test_pass_count_ratchet(outcomes):
    for lst, floor in MIN_PASSING.items():
        passing = sum(1 for o in outcomes[lst].values() if o[0] == "pass")
        assert passing >= floor, f"{lst}: {passing} pass, fewer than {floor}"
    on_wasm = sum(1 for o in outcomes["default"].values() if o[2])
    assert on_wasm >= MIN_ON_WASM, on_wasm


def test_optimizer_levels_agree(cases, outcomes, manifest):
    """Node cases that pass at the default level (ORT_ENABLE_ALL) pass at ORT_DISABLE_ALL too, with
    outputs equal within the case's tolerance (random-output cases, passing by chance, are left out)."""
    chosen = sorted((c for c in cases if outcomes["default"][c.name][0] == "pass" and c.name not in LEVELS_DIFFER
                     and "/" not in c.name and not backend_suite.random_output(manifest, c.name, "default")),
                    key=lambda c: c.name)
    bad = []
    for case in chosen:
        full, off = [], []
        try:
            for level, out in ((nnwasm.GraphOptimizationLevel.ORT_ENABLE_ALL, full),
                               (nnwasm.GraphOptimizationLevel.ORT_DISABLE_ALL, off)):
                so = nnwasm.SessionOptions()
                so.graph_optimization_level = level
                backend_suite.run_case(backend_suite.Runtime("nnwasm"), case, so, out)
            for a, b in zip(full, off):
                for k, (x, y) in enumerate(zip(a, b)):   # arrays, lists (sequences), None (optionals)
                    backend_suite._compare(x, y, case.rtol, case.atol, f"output {k}")
        except Exception as e:  # noqa: BLE001 - collected and reported together
            bad.append(f"{case.name}: {type(e).__name__}: {str(e)[:300]}")
    print(f"\noptimizer levels compared on {len(chosen)} passing cases")
    assert len(chosen) >= 1000
    assert not bad, "levels disagree:\n" + "\n".join(bad)
