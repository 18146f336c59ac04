"""DFT and STFT on kernels.wasm (kernels_c/reduce/dft.c, lower/spectral.py) against the numpy
provider and onnxruntime with the WASM provider alone: real and complex input, the axis (opset 17's
attribute, opset 20's input), dft_length padding and truncation, one-sided (inverse stays with numpy); STFT with and
without a window."""
import numpy as np
import pytest
from onnx import helper

from model_builders import graph_model, rand
from test_wasm_ops import check


@pytest.mark.parametrize("shape,axis,length,onesided,inverse", [
    ((3, 16, 1), 1, None, 1, 0), ((3, 16, 1), 1, None, 0, 0), ((2, 12, 2), 1, None, 0, 0),
    ((2, 5, 3, 2), 1, 8, 0, 0), ((2, 9, 2), 1, 6, 0, 0), ((6, 4, 2), 0, None, 0, 0)])
def test_dft_opset17(shape, axis, length, onesided, inverse):
    x = rand(*shape)
    inits = {} if length is None else {"L": np.array(length, np.int64)}
    node = helper.make_node("DFT", ["X", "L" if length else ""], ["Y"], axis=axis, onesided=onesided, inverse=inverse)
    check(graph_model([node], {"X": x}, ["Y"], inits, opset=17), {"X": x}, rtol=1e-4, atol=1e-4)


def test_inverse_dft_stays_with_numpy():
    import nnwasm
    x = rand(4, 7, 2)
    model = graph_model([helper.make_node("DFT", ["X"], ["Y"], axis=1, inverse=1)], {"X": x}, ["Y"], opset=17)
    sess = nnwasm.InferenceSession(model)
    assert [p for _, _, p in sess.get_provider_assignment()] == ["NumpyExecutionProvider"]


@pytest.mark.parametrize("axis", [1, -2])
def test_dft_opset20_axis_input(axis):
    x = rand(2, 10, 1)
    node = helper.make_node("DFT", ["X", "", "A"], ["Y"], onesided=1)
    check(graph_model([node], {"X": x}, ["Y"], {"A": np.array(axis, np.int64)}, opset=20), {"X": x},
          rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("window", [True, False])
@pytest.mark.parametrize("cin,onesided", [(1, 1), (2, 0)])
def test_stft(window, cin, onesided):
    x = rand(2, 300, cin)
    inits = {"S": np.array(40, np.int64), "L": np.array(64, np.int64)}
    feeds = {"X": x}
    if window:
        feeds["W"] = np.hanning(64).astype(np.float32)
    node = helper.make_node("STFT", ["X", "S", "W" if window else "", "L"], ["Y"], onesided=onesided)
    check(graph_model([node], feeds, ["Y"], inits, opset=17), feeds, rtol=1e-4, atol=2e-4)
