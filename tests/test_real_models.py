"""Real CNNs the onnx wheel ships (onnx/backend/test/data/light: opset 9 exports whose weights are
ConstantOfShape nodes), through nnwasm with the default providers against onnxruntime on random
inputs; and the wheel's simple / pytorch-converted / pytorch-operator models against their stored
outputs. Each CNN also pins which op types may fall back to numpy, so a regression that moves
nodes off WASM fails here. VGG-19 (560 MB of weights) is left to the benchmarks' machine time."""
import glob
import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

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


def _stored_cases():
    dirs = sorted(glob.glob(str(DATA / "simple" / "*" / "")) + glob.glob(str(DATA / "pytorch-*" / "*" / "")))
    return [d for d in dirs if os.path.exists(os.path.join(d, "model.onnx"))]


def test_stored_models_pass_or_are_refused_clearly():
    passed, refused, wrong = 0, 0, []
    for d in _stored_cases():
        try:
            sess = nnwasm.InferenceSession(os.path.join(d, "model.onnx"))
        except nnwasm.Unsupported:
            refused += 1
            continue
        names = [i.name for i in sess.get_inputs()]
        for ds in sorted(glob.glob(os.path.join(d, "test_data_set_*"))):
            ins = [numpy_helper.to_array(onnx.load_tensor(f)) for f in sorted(glob.glob(ds + "/input_*.pb"))]
            outs = [numpy_helper.to_array(onnx.load_tensor(f)) for f in sorted(glob.glob(ds + "/output_*.pb"))]
            try:
                for g, w in zip(sess.run(None, dict(zip(names, ins))), outs):
                    np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-5)
            except Exception as e:  # noqa: BLE001 - collected and reported
                wrong.append(f"{os.path.basename(os.path.dirname(d))}: {type(e).__name__}: {str(e)[:200]}")
        passed += 1
    print(f"\nstored-output models: {passed} ran, {refused} refused as unsupported")
    assert not wrong, "\n".join(wrong)
    assert passed >= 116    # measured 2026-11-23: 116 run, 24 refused (PRelu-6, opset-6 axis broadcasts, sequences, strings)
