"""Real CNNs the onnx wheel ships (onnx/backend/test/data/light: opset 9 exports whose weights are
ConstantOfShape nodes), through nnwasm with the default providers against onnxruntime on random
inputs. (The wheel's simple / pytorch-converted / pytorch-operator models with their stored outputs
are part of the backend suite: tests/test_conformance.py.) Each CNN also pins which op types may fall back to numpy, so a regression that moves
nodes off WASM fails here. VGG-19 (560 MB of weights) is left to the benchmarks' machine time."""
from pathlib import Path

import numpy as np
import onnx
import pytest

import nnwasm
from model_builders import ort_run

DATA = Path(onnx.__file__).parent / "backend" / "test" / "data"

LIGHT = {  # model -> op types allowed on the numpy provider
    "light_bvlc_alexnet": {"LRN"},
    "light_densenet121": set(),
    "light_inception_v1": {"LRN"},
    "light_inception_v2": set(),
    "light_resnet50": set(),
    "light_shufflenet": set(),
    "light_squeezenet": set(),
    "light_zfnet512": {"LRN"},
}


@pytest.mark.parametrize("name", sorted(LIGHT))
def test_light_cnn_matches_onnxruntime(name):
    path = DATA / "light" / f"{name}.onnx"
    sess = nnwasm.InferenceSession(str(path))
    on_numpy = {op for _, op, p in sess.get_provider_assignment() if p == "NumpyExecutionProvider"}
    assert on_numpy <= LIGHT[name], f"ran on numpy: {on_numpy - LIGHT[name]}"
    rng = np.random.default_rng(7)
    feeds = {i.name: rng.standard_normal([d if isinstance(d, int) else 1 for d in i.shape]).astype(np.float32)
             for i in sess.get_inputs()}
    got, want = sess.run(None, feeds), ort_run(path.read_bytes(), feeds)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5 * max(1.0, float(np.abs(w).max())))
