"""The core runs without numpy (Pyodide has none): with numpy blocked, a model whose nodes all
run on WASM loads, compiles and runs through _run_raw; one that needs the numpy fallback fails at
creation with FallbackUnavailable naming its nodes. Runs in a subprocess so blocking numpy is real."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from imagenet_fixture import preprocess
from model_builders import graph_model, ort_run, rand
from onnx import helper

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "demo" / "assets" / "efficientnet-lite0.onnx"

SCRIPT = r"""
import json, sys
sys.modules["numpy"] = None            # any import of numpy now raises ImportError
sys.path.insert(0, sys.argv[1])
import nnwasm
from nnwasm import dtypes
from nnwasm.tensor import TensorData
out = {}
sess = nnwasm.InferenceSession(sys.argv[2])
x = open(sys.argv[3], "rb").read()
y, = sess._run_raw(None, {"input": TensorData(dtypes.FLOAT32, (1, 3, 224, 224), x)})
out["logits"] = y.tolist()
out["providers"] = sorted({p for _, _, p in sess.get_provider_assignment()})
try:
    nnwasm.InferenceSession(sys.argv[4])
    out["fallback"] = "created"
except nnwasm.FallbackUnavailable as e:
    out["fallback"] = str(e)
out["numpy_loaded"] = sys.modules.get("numpy") is not None
print(json.dumps(out))
"""


def test_wasm_path_runs_without_numpy(tmp_path):
    x = preprocess(ROOT / "demo" / "assets" / "coffee.png")
    (tmp_path / "x.bin").write_bytes(x.tobytes())
    fallback = graph_model([helper.make_node("Relu", ["X"], ["a"], name="r"),
                            helper.make_node("Atan", ["a"], ["Y"], name="needs_numpy")], {"X": rand(2, 3)}, ["Y"])
    (tmp_path / "fallback.onnx").write_bytes(fallback)
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(ROOT / "py_runtime"), str(MODEL),
                           str(tmp_path / "x.bin"), str(tmp_path / "fallback.onnx")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["providers"] == ["WasmExecutionProvider"] and not out["numpy_loaded"]
    want = ort_run(MODEL.read_bytes(), {"input": x})[0]
    np.testing.assert_allclose(np.array(out["logits"], np.float32).reshape(want.shape), want, atol=1e-4)
    assert "numpy" in out["fallback"] and "needs_numpy" in out["fallback"]
