"""The generative model zoo (build_scripts/build_genzoo.py: tiny random-weight decoders with a KV
cache and encoder-decoders, as Optimum, onnxruntime-genai and torch export them): greedy generation
with the past fed back, nnwasm against onnxruntime on the same feeds at every step (same token ids,
logits and present.* within the zoo tests' float tolerance), with the numpy fallback and on WASM
alone (fallback disabled: what a page has).

GEN_EXPECTED_FAIL is the ratchet: (model, configuration) -> the exception it fails with today and
why. Listed pairs are strict xfails that must fail with that exception; one that starts passing
turns into a failure: remove its row. The genzoo is built by `make genzoo` (its own venv);
without it these tests skip.
"""
import json
import os
import re
import shutil
import subprocess
import time

import numpy as np
import pytest

import nnwasm
from conftest import ROOT

import sys
sys.path.insert(0, str(ROOT / "build_scripts"))
import build_genzoo  # noqa: E402  (no torch, transformers or numpy at import)
from genzoo_check import check_record, check_same_bits  # noqa: E402

onnxruntime = pytest.importorskip("onnxruntime")

GEN_EXPECTED_FAIL = {   # (model, configuration) -> (the exception it fails with, why)
}
CONFIGS = ["fallback", "wasm"]
# Node (tests/node/generative.test.mjs through web/nnwasm.mjs, WASM alone): model -> why it fails
NODE_EXPECTED_FAIL = {
}


def params():
    out = []
    for name in build_genzoo.GENZOO:
        for config in CONFIGS:
            marks = []
            if (name, config) in GEN_EXPECTED_FAIL:
                raises, why = GEN_EXPECTED_FAIL[name, config]
                marks.append(pytest.mark.xfail(strict=True, raises=raises, reason=why))
            out.append(pytest.param(name, config, marks=marks, id=f"{name}-{config}"))
    return out


def sidecar(name):
    meta = build_genzoo.load_sidecar(name)
    if meta is None:
        pytest.skip(f"the genzoo's {name} is not built in {build_genzoo.genzoo_dir()}: run `make genzoo`")
    return meta


def nnwasm_sessions(meta, config):
    out = {}
    for role, r in meta["roles"].items():
        so = nnwasm.SessionOptions()
        if config == "wasm":
            so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
        out[role] = nnwasm.InferenceSession(str(build_genzoo.genzoo_dir() / r["file"]), so,
                                            providers=["WasmExecutionProvider", "NumpyExecutionProvider"])
    return out


def runner(sessions):
    def run(role, feeds):
        s = sessions[role]
        return dict(zip([o.name for o in s.get_outputs()], s.run(None, feeds)))
    return run


def assert_close(out, ref, what):
    assert out.dtype == ref.dtype and out.shape == ref.shape, f"{what}: {out.dtype}{out.shape} vs {ref.dtype}{ref.shape}"
    if out.size:
        scale = max(1.0, float(np.abs(ref).max()))
        rtol, atol = (1e-2, 5e-3) if out.dtype == np.float16 else (1e-3, 1e-4)   # float16: its rounding
        np.testing.assert_allclose(out, ref, rtol=rtol, atol=atol * scale, err_msg=what)


@pytest.mark.parametrize("name,config", params())
def test_generate(name, config):
    """nnwasm's greedy generation is onnxruntime's: every step's feeds are built from nnwasm's own
    previous outputs, and onnxruntime runs on those same feeds for the comparison."""
    meta = sidecar(name)
    ours = nnwasm_sessions(meta, config)
    ort = build_genzoo.ort_runner(build_genzoo.genzoo_dir(), {r: v["file"] for r, v in meta["roles"].items()})
    run_ours = runner(ours)
    times = []

    def timed(role, feeds):
        t0 = time.perf_counter()
        outs = run_ours(role, feeds)
        if role == "decoder":
            times.append(time.perf_counter() - t0)
        if role == "encoder":
            for oname, ref in ort(role, feeds).items():
                assert_close(outs[oname], ref, f"{name} encoder {oname}")
        return outs

    def check(step, feeds, outs):
        for oname, ref in ort("decoder", feeds).items():
            assert_close(outs[oname], ref, f"{name} [{config}] step {step} {oname}")
    tokens = build_genzoo.generate(meta, timed, on_step=check)
    assert tokens == meta["reference"]["tokens"]
    if config == "wasm":
        for s in ours.values():
            assert {p for _, _, p in s.get_provider_assignment()} == {"WasmExecutionProvider"}
    print(f"{name} [{config}]: decode step {1e3 * np.median(times[1:]):.2f} ms (median), step 0 {1e3 * times[0]:.1f} ms")


def test_expected_failures_are_models():
    assert {n for n, _ in GEN_EXPECTED_FAIL} <= set(build_genzoo.GENZOO)
    assert {c for _, c in GEN_EXPECTED_FAIL} <= set(CONFIGS)


BAD_INPUT_MODELS = ["gpt2", "gpt2_merged", "llama_merged", "qwen2"]


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("name", BAD_INPUT_MODELS)
def test_bad_past_is_a_clear_error_and_the_session_survives(name, config):
    """A past whose shape contradicts the model (head count, head size) names the input; a past fed
    back with the wrong length (longer than the attention mask says, or one layer's longer than the
    others') names the node it breaks; the next good step still gives onnxruntime's answer."""
    meta = sidecar(name)
    sess = nnwasm_sessions(meta, config)
    run = runner(sess)
    steps = []
    build_genzoo.generate(meta, lambda role, feeds: steps.append(dict(feeds)) or run(role, feeds), steps=3)
    feeds = steps[2]
    past = [n for n in feeds if n.startswith("past_key_values")]
    p0 = feeds[past[0]]
    heads, size = p0.shape[1], p0.shape[3]
    bad = {
        "head count": ({past[0]: np.concatenate([p0, p0], axis=1)[:, :heads + 1]}, rf"'{past[0]}'.*dimension 1"),
        "head size": ({past[0]: p0[..., :size // 2]}, rf"'{past[0]}'.*dimension 3"),
        "length vs mask": ({n: np.concatenate([feeds[n]] * 2, axis=2) for n in past}, r"node '[^']+'"),
        "one layer longer": ({past[0]: np.concatenate([p0] * 2, axis=2)}, r"node '[^']+'"),
    }
    dec = sess["decoder"]
    for what, (change, pattern) in bad.items():
        with pytest.raises(nnwasm.InvalidArgument, match=pattern):
            dec.run(None, {**feeds, **change})
    ort = build_genzoo.ort_runner(build_genzoo.genzoo_dir(), {"decoder": meta["roles"]["decoder"]["file"]})
    want = ort("decoder", feeds)
    for (oname, ref), got in zip(want.items(), dec.run(None, feeds)):
        assert_close(got, ref, f"{name} after the bad feeds: {oname}")


# --- Node: the same generation through web/nnwasm.mjs, run once for all ---------------------------

# run again with preferredOutputLocation "wasm" for their present outputs (generative.test.mjs):
# a merged decoder (If), GroupQueryAttention (fp32 and int4), and an encoder-decoder's cross-attention past
KEPT_IN_NODE = ["llama_merged", "genai_llama_fp32", "genai_llama_int4", "whisper_merged"]


@pytest.fixture(scope="module")
def node_gen(tmp_path_factory):
    """Runs tests/node/generative.test.mjs over the built models; returns {model: (status, detail, ms,
    the file recording its steps' feeds and outputs)}."""
    names = [n for n in build_genzoo.GENZOO if build_genzoo.load_sidecar(n)]
    if not names:
        pytest.skip(f"the genzoo is not built in {build_genzoo.genzoo_dir()}: run `make genzoo`")
    node = shutil.which("node")
    assert node, "Node.js is not installed"
    proc = subprocess.run([sys.executable, str(ROOT / "build_scripts" / "build_web.py")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"build_web.py failed:\n{proc.stdout}\n{proc.stderr}"
    spec = tmp_path_factory.mktemp("node_gen") / "genzoo.json"
    kept = [n for n in KEPT_IN_NODE if n in names]
    spec.write_text(json.dumps({"dir": str(build_genzoo.genzoo_dir()), "models": names, "record": str(spec.parent),
                                "kept": kept}))
    env = {**os.environ, "NNWASM_GENZOO_SPEC": str(spec), "NNWASM_DIST_URL": (ROOT / "dist" / "web").as_uri() + "/"}
    proc = subprocess.run([node, "--test", "--test-reporter=tap", "tests/node/generative.test.mjs"], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=1800)
    out = proc.stdout + proc.stderr
    results = {m: (s, d) for m, s, d in re.findall(r"^\s*# gen-result (\S+) (\S+) ?(.*)$", out, re.M)}
    missing = [n for n in names if n not in results]
    assert not missing, f"generative.test.mjs reported nothing for {missing}:\n{out[-6000:]}"
    times = dict(re.findall(r"^\s*# gen-time (\S+) (\S+)$", out, re.M))
    for name in kept:   # the present kept in the session's memory, in this thread and the proxy worker
        for case in (name, f"{name}-proxy"):
            assert re.search(rf"^\s*# kept-result {re.escape(case)} ok$", out, re.M), \
                f"generative.test.mjs: {case} with preferredOutputLocation 'wasm' failed:\n{out[-6000:]}"
    return {m: (s, d, times.get(m), spec.parent / f"{m}.json") for m, (s, d) in results.items()}


def node_params():
    return [pytest.param(n, marks=[pytest.mark.xfail(strict=True, reason=NODE_EXPECTED_FAIL[n])]
                         if n in NODE_EXPECTED_FAIL else [], id=n) for n in build_genzoo.GENZOO]


@pytest.mark.node
@pytest.mark.parametrize("name", node_params())
def test_generate_in_node(name, node_gen):
    if name not in node_gen:
        pytest.skip(f"the genzoo's {name} is not built")
    status, detail, ms, record = node_gen[name]
    assert status == "ok", f"{name} in Node: {status} {detail}"
    # every step's outputs (logits, present.*) against onnxruntime on Node's own feeds, and the
    # same bits as nnwasm in CPython
    meta, record = sidecar(name), json.loads(record.read_text())
    check_record(meta, record, f"{name} in Node", assert_close)
    check_same_bits(record, runner(nnwasm_sessions(meta, "wasm")), f"{name} in Node")
    print(f"{name} in Node: decode step {ms} ms (median)")
