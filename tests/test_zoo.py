"""The model zoo (build_scripts/build_zoo.py: public architectures, random weights) on WASM alone
(numpy fallback disabled), against onnxruntime's outputs saved by the builder: in CPython
(wasmtime) and in Node (web/nnwasm.mjs over Pyodide, which has no numpy).

ZOO_EXPECTED_FALLBACK is the ratchet: the op types of each model that do not run on WASM today.
A model listed there is a strict xfail (it must fail with NotImplementedOp); one that starts
running entirely on WASM turns the xfail into a failure, and test_fallback_table fails whenever
a model's fallback ops differ from its row, printing the row to paste. Update the table at merge.

Slow models (the builder's "slow" flag) run only with NNWASM_ZOO_ALL=1 (`make test-all`).
The zoo is built on first use if torch is installed (`make zoo`), else these tests fail saying so.
"""
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import nnwasm
from conftest import ROOT

sys.path.insert(0, str(ROOT / "build_scripts"))
import build_zoo  # noqa: E402  (no torch at import: it is imported only to build)

ZOO_EXPECTED_FALLBACK = {
    "mobilenet_v3_small": set(),
    "efficientnet_b0": set(),
    "convnext_tiny": set(),
    "deeplabv3_mobilenet_v3_large": set(),
    "vit_tiny": set(),
    "unet_small": set(),
    "audio_rnn": set(),
    "bert_tiny": set(),
    "distilbert_tiny": set(),
    "gpt2_tiny": set(),
    "bert_tiny_int8_dynamic": set(),
    "mobilenet_v3_small_int8_qdq": set(),
    "mobilenet_v3_small_fp16": set(),
    "bert_tiny_fp16": set(),
}

RUN_ALL = os.environ.get("NNWASM_ZOO_ALL") == "1"


def zoo_params(marks=()):
    params = []
    for name, (_, _, slow) in build_zoo.ZOO.items():
        m = list(marks)
        if ZOO_EXPECTED_FALLBACK.get(name):
            m.append(pytest.mark.xfail(strict=True, raises=nnwasm.NotImplementedOp,
                                       reason="falls back: " + ", ".join(sorted(ZOO_EXPECTED_FALLBACK[name]))))
        if slow:
            m.append(pytest.mark.skipif(not RUN_ALL, reason="slow zoo model: NNWASM_ZOO_ALL=1 (make test-all)"))
        params.append(pytest.param(name, marks=m, id=name))
    return params


@pytest.fixture(scope="session")
def zoo():
    """The zoo dir, with every model built (only missing or stale ones are built)."""
    if all(build_zoo.load_sidecar(n) for n in build_zoo.ZOO):
        return build_zoo.zoo_dir()
    try:
        import torch  # noqa: F401
    except ImportError:
        pytest.fail(f"the model zoo is not built in {build_zoo.zoo_dir()} and torch is missing: run `make zoo`")
    return build_zoo.ensure()


def load_case(zoo_dir, case):
    def arr(spec):
        return np.fromfile(zoo_dir / spec["file"], dtype=np.dtype(spec["dtype"]).newbyteorder("<")).reshape(spec["dims"])
    return ({n: arr(s) for n, s in case["inputs"].items()}, {n: arr(s) for n, s in case["outputs"].items()})


def assert_agrees(kind, out, ref, what):
    """float: tight; fp16: fp16's precision; int8: within one quantization step of the output's
    range, else cosine >= 0.999 and the same top-1 (outputs may round differently inside)."""
    assert out.dtype == ref.dtype and out.shape == ref.shape, f"{what}: {out.dtype}{out.shape} vs {ref.dtype}{ref.shape}"
    o, r = out.astype(np.float64), ref.astype(np.float64)
    scale = max(1.0, float(np.abs(r).max()))
    if kind == "float":
        np.testing.assert_allclose(o, r, rtol=1e-3, atol=1e-4 * scale, err_msg=what)
    elif kind == "fp16":
        np.testing.assert_allclose(o, r, rtol=1e-2, atol=1e-2 * scale, err_msg=what)
    else:
        step = (r.max() - r.min()) / 255
        if np.abs(o - r).max() <= step * (1 + 1e-6):
            return
        cos = float((o * r).sum() / (np.linalg.norm(o) * np.linalg.norm(r) + 1e-30))
        assert cos >= 0.999, f"{what}: cosine {cos:.5f} < 0.999 (max diff {np.abs(o - r).max():.3g}, step {step:.3g})"
        if r.ndim == 2:
            assert (o.argmax(-1) == r.argmax(-1)).all(), f"{what}: top-1 differs"


@pytest.mark.parametrize("name", zoo_params())
def test_zoo_on_wasm(name, zoo):
    meta = build_zoo.load_sidecar(name)
    so = nnwasm.SessionOptions()
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    sess = nnwasm.InferenceSession(str(zoo / meta["file"]), so, providers=["WasmExecutionProvider"])
    for case in meta["cases"]:   # two shapes for the dynamic-axes models
        feeds, refs = load_case(zoo, case)
        outs = sess.run(None, feeds)
        assert {p for _, _, p in sess.get_provider_assignment()} == {"WasmExecutionProvider"}
        for o, (oname, ref) in zip(outs, refs.items()):
            assert_agrees(meta["kind"], o, ref, f"{name} {case['name']} output {oname}")


@pytest.mark.parametrize("name", list(build_zoo.ZOO))
def test_fallback_table(name, zoo):
    """The op types WASM refuses in each model (for each case's shapes) are its table row."""
    from nnwasm.inspect_model import report
    meta = build_zoo.load_sidecar(name)
    ops = set()
    for case in meta["cases"]:
        shapes = {n: tuple(s["dims"]) for n, s in case["inputs"].items()}
        ops |= {f["op"] for f in report(str(zoo / meta["file"]), shapes)["fallback"]}
    assert ops == ZOO_EXPECTED_FALLBACK[name], \
        f"the fallback ops changed: set ZOO_EXPECTED_FALLBACK[{name!r}] = {sorted(ops)}"


@pytest.mark.parametrize("name", list(build_zoo.ZOO))
def test_zoo_references(name, zoo):
    """The sidecar's cases: two different shapes for dynamic-axes models, and the saved outputs
    (what Node compares with) are onnxruntime's for the saved feeds."""
    import onnxruntime
    meta = build_zoo.load_sidecar(name)
    dynamic = any(isinstance(d, str) for i in meta["inputs"] for d in i["shape"])
    shapes = [tuple(tuple(s["dims"]) for s in c["inputs"].values()) for c in meta["cases"]]
    assert len(set(shapes)) == (2 if dynamic else 1) == len(shapes)
    if meta["slow"] and not RUN_ALL:
        return
    sess = onnxruntime.InferenceSession(str(zoo / meta["file"]), providers=["CPUExecutionProvider"])
    for case in meta["cases"]:
        feeds, refs = load_case(zoo, case)
        for got, (oname, ref) in zip(sess.run(None, feeds), refs.items()):
            np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5, err_msg=f"{name} {case['name']} {oname}")


# --- Node: the same models through web/nnwasm.mjs, run once for all ----------------------------

@pytest.fixture(scope="module")
def node_zoo(zoo, tmp_path_factory):
    """Runs tests/node/zoo.test.mjs over the selected models; returns {model: (status, detail)}."""
    node = shutil.which("node")
    assert node, "Node.js is not installed"
    proc = subprocess.run([sys.executable, str(ROOT / "build_scripts" / "build_web.py")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"build_web.py failed:\n{proc.stdout}\n{proc.stderr}"
    names = [n for n, (_, _, slow) in build_zoo.ZOO.items() if RUN_ALL or not slow]
    spec = tmp_path_factory.mktemp("node_zoo") / "zoo.json"
    spec.write_text(json.dumps({"dir": str(zoo), "models": names}))
    env = {**os.environ, "NNWASM_ZOO_SPEC": str(spec), "NNWASM_DIST_URL": (ROOT / "dist" / "web").as_uri() + "/"}
    proc = subprocess.run([node, "--test", "--test-reporter=tap", "tests/node/zoo.test.mjs"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=1800)
    out = proc.stdout + proc.stderr
    results = {m: (s, d) for m, s, d in re.findall(r"^\s*# zoo-result (\S+) (\S+) ?(.*)$", out, re.M)}
    missing = [n for n in names if n not in results]
    assert not missing, f"zoo.test.mjs reported nothing for {missing}:\n{out[-6000:]}"
    return results


@pytest.mark.node
@pytest.mark.parametrize("name", zoo_params())
def test_zoo_in_node(name, node_zoo):
    status, detail = node_zoo[name]
    if status == "NotImplementedOp":
        raise nnwasm.NotImplementedOp(detail)
    assert status == "ok", f"{name} in Node: {status} {detail}"
