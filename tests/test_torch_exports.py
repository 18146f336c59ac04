"""Models as torch.onnx's TorchScript exporter writes them (opset 17), run entirely on kernels.wasm:
a speech-style stack of bidirectional LSTM / GRU layers (batch_first, so Transpose around each
layer, zero initial states as constants) and a small U-Net (ConvTranspose up-sampling, skip
Concat). Skipped where torch is not installed."""
import io

import numpy as np
import pytest

import nnwasm
from model_builders import ort_run
from test_wasm_ops import wasm_only_options

torch = pytest.importorskip("torch")


class Speech(torch.nn.Module):
    def __init__(self, cell):
        super().__init__()
        self.rnn = getattr(torch.nn, cell)(40, 48, num_layers=2, bidirectional=True, batch_first=True)
        self.fc = torch.nn.Linear(96, 10)

    def forward(self, x):
        return self.fc(self.rnn(x)[0])


class UNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.down1 = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU())
        self.down2 = nn.Sequential(nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1), nn.ReLU())
        self.up_k2 = nn.ConvTranspose2d(32, 16, 2, stride=2)
        self.up_k4 = nn.ConvTranspose2d(32, 8, 4, stride=2, padding=1)
        self.head = nn.Conv2d(8, 2, 1)

    def forward(self, x):
        a = self.down1(x)
        b = torch.cat([self.up_k2(self.down2(a)), a], 1)
        return self.head(torch.relu(self.up_k4(torch.nn.functional.max_pool2d(b, 2))))


def export(model, x):
    torch.manual_seed(0)
    model.eval()
    f = io.BytesIO()
    torch.onnx.export(model, (x,), f, opset_version=17, dynamo=False, input_names=["x"], output_names=["y"])
    return f.getvalue()


@pytest.mark.parametrize("name,make,shape", [
    ("lstm", lambda: Speech("LSTM"), (1, 50, 40)),
    ("gru", lambda: Speech("GRU"), (2, 30, 40)),
    ("unet", UNet, (1, 3, 32, 32)),
])
def test_torch_export_runs_on_wasm(name, make, shape):
    torch.manual_seed(0)
    model = make()
    x = torch.randn(*shape)
    data = export(model, x)
    sess = nnwasm.InferenceSession(data, wasm_only_options(), providers=["WasmExecutionProvider"])
    assert {p for _, _, p in sess.get_provider_assignment()} == {"WasmExecutionProvider"}
    got = sess.run(None, {"x": x.numpy()})[0]
    with torch.no_grad():
        want = model(x).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got, ort_run(data, {"x": x.numpy()})[0], rtol=1e-4, atol=1e-5)
