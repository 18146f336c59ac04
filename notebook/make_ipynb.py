"""Writes notebook/nnwasm-demo.ipynb (the example notebook of `make notebook`) from the cells below:
edit them here, then `python notebook/make_ipynb.py notebook/nnwasm-demo.ipynb`."""
import json, sys
cells = []
def md(s): cells.append({"cell_type": "markdown", "metadata": {}, "source": s.strip("\n")})
def code(s): cells.append({"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": s.strip("\n")})

md("""
# nnwasm in a notebook

ONNX inference in this browser tab: nnwasm runs the model on one WebAssembly module of SIMD kernels
(`kernels.wasm`), with **onnxruntime's Python API**, and needs no numpy. This notebook installs
nnwasm by name, classifies a photo with the EfficientNet-Lite0 model (`.onnx`) and with its
compiled plan file (`.nnwp`), shows which provider runs each node and where the time goes.
""")
code("""
import time
timings = {}                    # seconds, nnwasm's own part: install, import, create, first run
t0 = time.perf_counter()
%pip install nnwasm
timings["install"] = time.perf_counter() - t0
""")
code("""
t0 = time.perf_counter()
import nnwasm as ort
timings["import"] = time.perf_counter() - t0
print("nnwasm", ort.__version__, "| numpy loaded:", "numpy" in __import__("sys").modules)
""")
md("""
## The photo

The browser decodes and resizes the photo (`createImageBitmap` and an `OffscreenCanvas` in the
kernel's worker): shorter side to 256, centre crop 224, then `(pixel - 127) / 128` per RGB channel,
planar (NCHW), into an `array.array` of float32 — the recipe in `efficientnet-lite0.json`.
""")
code("""
import array, json, js
from pyodide.ffi import to_js

recipe = json.load(open("efficientnet-lite0.json"))
labels = json.load(open("imagenet_labels.json"))

async def load_photo(path, recipe):
    size, resize = recipe["size"], recipe["resize"]
    blob = js.Blob.new([to_js(open(path, "rb").read())])
    bitmap = await js.createImageBitmap(blob)
    w, h = bitmap.width, bitmap.height
    crop = size * min(w, h) / resize              # the centre crop, in the photo's pixels
    canvas = js.OffscreenCanvas.new(size, size)
    ctx = canvas.getContext("2d")
    ctx.imageSmoothingQuality = "high"
    ctx.drawImage(bitmap, (w - crop) / 2, (h - crop) / 2, crop, crop, 0, 0, size, size)
    rgba = ctx.getImageData(0, 0, size, size).data.to_py()   # bytes: R, G, B, A per pixel
    x = array.array("f")
    for c in range(3):
        m, s = recipe["mean"][c], recipe["std"][c]
        x.extend((v - m) / s for v in rgba[c::4])
    return ort.Tensor(x, [1, 3, size, size])

x = await load_photo("chelsea.png", recipe)
print(x.shape, x.dtype)
""")
md("""
## The `.onnx` model

`InferenceSession` takes a path or the file's bytes, and reads a file once. A path works here
(`InferenceSession("efficientnet-lite0.onnx")`), but JupyterLite hands a notebook file to the kernel
slowly (the whole file crosses from the page: ~10 s for these 18.5 MB); a file that ships with the
site is faster fetched over HTTP (`site_file` below: ~0.1 s). `get_provider_assignment()` says which
provider runs each node after the graph optimizer: all of them on `WasmExecutionProvider` here, so
numpy is never needed.
""")
code("""
from pyodide.http import pyfetch

async def site_file(name):   # the bytes of a file this JupyterLite site serves from its files/ folder
    site = str(js.location.href).split("/extensions/")[0]   # the kernel's worker lives under extensions/
    response = await pyfetch(f"{site}/files/{name}")
    if not response.ok:
        raise FileNotFoundError(f"{name}: HTTP {response.status}")
    return await response.bytes()

t0 = time.perf_counter()
model = await site_file("efficientnet-lite0.onnx")
fetch_s = time.perf_counter() - t0

t0 = time.perf_counter()
options = ort.SessionOptions()
options.enable_profiling = True
sess = ort.InferenceSession(model, options)
timings["create"] = time.perf_counter() - t0

t0 = time.perf_counter()
logits, = sess.run(None, {recipe["input"]: x})
timings["first run"] = time.perf_counter() - t0

def top5(logits):
    row = logits.tolist()[0]
    return sorted(range(len(row)), key=row.__getitem__, reverse=True)[:5]

best = top5(logits)
for k in best:
    print(f"{logits.tolist()[0][k]:8.3f}  {k:4d}  {labels[k]}")
print(type(logits).__name__, logits.shape, logits.dtype)
""")
code("""
from collections import Counter
assignment = sess.get_provider_assignment()
print(len(assignment), "nodes;", dict(Counter(provider for _, _, provider in assignment)))
print("kernels.wasm flavour:", assignment.kernels_flavour)
for node, op, provider in assignment[:5]:
    print(f"  {node:40s} {op:20s} {provider}")
""")
md("""
## Where the time goes: a profiling trace

With `enable_profiling`, the session records onnxruntime's Chrome-trace events;
`end_profiling()` writes them to a JSON file (open it in `chrome://tracing` or Perfetto).
""")
code("""
for _ in range(3):
    sess.run(None, {recipe["input"]: x})
trace = json.load(open(sess.end_profiling()))
runs = [e["dur"] / 1000 for e in trace if e["name"] == "model_run"]
print("model_run ms:", ", ".join(f"{r:.1f}" for r in runs))
by_op = Counter()
for e in trace:
    if e["cat"] == "Node":
        by_op[e["args"]["op_name"]] += e["dur"] / 1000 / len(runs)
print("ms per run by op type:")
for op, ms in by_op.most_common(6):
    print(f"  {op:24s} {ms:7.2f}")
""")
md("""
## The plan file

`ort.compile_plan` writes a `.nnwp` plan file: the model compiled for `kernels.wasm`, which loads
without the ONNX reader or the optimizer (and runs in a page on `kernels.wasm` alone). Its outputs are
bit-identical to the session's.
""")
code("""
plan = ort.InferenceSession(await site_file("efficientnet-lite0.nnwp"))
plan_logits, = plan.run(None, {recipe["input"]: x})
print("top-5 from the plan file:", top5(plan_logits))
print("bit-identical to the .onnx session:", plan_logits.tobytes() == logits.tobytes())
""")
md("""
## Before you run: which nodes need numpy?

`nnwasm.inspect_model.report(model, input_shapes)` is `python -m nnwasm inspect MODEL`: it lists
each node's provider without creating a session. A model with nodes on the numpy fallback needs
numpy (`%pip install numpy` where your Pyodide has it); without it, creating the session raises
`ort.FallbackUnavailable` naming those nodes.
""")
code("""
from nnwasm.inspect_model import report
r = report("efficientnet-lite0.onnx")
print(f"{r['wasm_nodes']}/{r['nodes']} nodes on WASM; fallback nodes: {len(r['fallback'])}")
""")
md("""
## Timings

nnwasm's own part of this notebook, in seconds (the file read is JupyterLite's).
""")
code("""
print({k: round(v, 3) for k, v in timings.items()}, "| nnwasm's own part:", round(sum(timings.values()), 2), "s")
print("fetching the 18.5 MB .onnx file:", round(fetch_s, 2), "s")
""")
nb = {"cells": cells, "metadata": {"kernelspec": {"display_name": "Python (Pyodide)", "language": "python", "name": "python"},
      "language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}
for i, c in enumerate(nb["cells"]):
    c["id"] = f"cell-{i}"
    c["source"] = c["source"].splitlines(keepends=True)
json.dump(nb, open(sys.argv[1], "w"), indent=1)
open(sys.argv[1], "a").write("\n")
