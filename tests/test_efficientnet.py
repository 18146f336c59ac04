"""EfficientNet-Lite0 with its real ImageNet weights, through nnwasm in CPython (wasmtime), against
onnxruntime: every node on WASM, logits within 1e-4, and espresso for coffee.png."""
from pathlib import Path

import numpy as np
import pytest

import nnwasm
from imagenet_fixture import labels, load_config, preprocess
from model_builders import ort_run

ASSETS = Path(__file__).resolve().parent.parent / "demo" / "assets"
MODEL = ASSETS / "efficientnet-lite0.onnx"


@pytest.fixture(scope="module")
def session():
    return nnwasm.InferenceSession(str(MODEL))


def test_every_node_runs_on_wasm(session):
    providers = {p for _, _, p in session.get_provider_assignment()}
    assert providers == {"WasmExecutionProvider"}
    assert len(session._cache) == 1 and len(next(iter(session._cache.values())).runners) == 1


@pytest.mark.parametrize("photo,expected", [("coffee.png", {"espresso"}),
                                            ("chelsea.png", {"a cat having a striped coat", "tabby cat", "Egyptian Mau"})])
def test_matches_onnxruntime_and_classifies(session, photo, expected):
    x = preprocess(ASSETS / photo)
    cfg = load_config()
    got, = session.run([cfg["output"]], {cfg["input"]: x})
    want, = ort_run(MODEL.read_bytes(), {cfg["input"]: x})
    assert got.shape == (1, 1000) and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-4)
    assert labels()[int(got[0].argmax())] in expected


def test_numpy_provider_agrees(session):
    x = preprocess(ASSETS / "coffee.png")
    ref = nnwasm.InferenceSession(str(MODEL), providers=["NumpyExecutionProvider"])
    np.testing.assert_allclose(session.run(None, {"input": x})[0], ref.run(None, {"input": x})[0], atol=1e-4)


def test_repeated_runs_are_identical(session):
    x = preprocess(ASSETS / "coffee.png")
    a = session.run(None, {"input": x})[0]
    b = session.run(None, {"input": x * 0.5})[0]
    c = session.run(None, {"input": x})[0]
    assert np.array_equal(a, c) and not np.array_equal(a, b)
