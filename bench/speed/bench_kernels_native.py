"""Micro-benchmark of the kernels on EfficientNet-Lite0's layer shapes (224x224, batch 1): GFLOP/s
per shape and the summed time of the whole network's convolutions and classifier, measured.

    python bench/speed/bench_kernels_native.py [--engine wasmtime|node|native ...] [--seconds 0.3]

Engines: wasmtime (kernels.wasm under Cranelift, as CPython runs it), node (kernels.wasm under
V8, as browsers run it), native (build/native/libnnw_kernels.so: the same v4 code as gcc
vector extensions). Each shape is one single-op plan, loaded once and run repeatedly; the
fastest of many short timed batches is reported (the machine is shared). `--wasm a.wasm --wasm b.wasm`
compares builds in one V8, batches interleaved; `--engine ort-web` adds onnxruntime-web's wasm
backend (npm onnxruntime-web, one thread; each layer as an ONNX Conv + Clip, run through
session.run, so its small layers also pay its per-call overhead) to the same V8.
Build first: python build_scripts/build_kernels.py
"""
import argparse
import ctypes
import json
import random
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "py_runtime"))
from nnwasm.wasm.opcodes import OPS  # noqa: E402

KERNELS_WASM = ROOT / "py_runtime" / "nnwasm" / "kernels.wasm"
NATIVE_LIB = ROOT / "build" / "native" / "libnnw_kernels.so"
ORT_WEB = ROOT / "node_modules" / "onnxruntime-web" / "dist" / "ort.node.min.mjs"
INF = float("inf")

# (name, count in the network, conv args: c, h, m, k, stride, group); square images, "same" pads
LAYERS = [
    ("stem 3x3/2 3->32 @224", 1, (3, 224, 32, 3, 2, 1)),
    ("dw 3x3 32 @112", 1, (32, 112, 32, 3, 1, 32)),
    ("pw 32->16 @112", 1, (32, 112, 16, 1, 1, 1)),
    ("pw 16->96 @112", 1, (16, 112, 96, 1, 1, 1)),
    ("dw 3x3/2 96 @112", 1, (96, 112, 96, 3, 2, 96)),
    ("pw 96->24 @56", 1, (96, 56, 24, 1, 1, 1)),
    ("pw 24->144 @56", 2, (24, 56, 144, 1, 1, 1)),
    ("dw 3x3 144 @56", 1, (144, 56, 144, 3, 1, 144)),
    ("pw 144->24 @56", 1, (144, 56, 24, 1, 1, 1)),
    ("dw 5x5/2 144 @56", 1, (144, 56, 144, 5, 2, 144)),
    ("pw 144->40 @28", 1, (144, 28, 40, 1, 1, 1)),
    ("pw 40->240 @28", 2, (40, 28, 240, 1, 1, 1)),
    ("dw 5x5 240 @28", 1, (240, 28, 240, 5, 1, 240)),
    ("pw 240->40 @28", 1, (240, 28, 40, 1, 1, 1)),
    ("dw 3x3/2 240 @28", 1, (240, 28, 240, 3, 2, 240)),
    ("pw 240->80 @14", 1, (240, 14, 80, 1, 1, 1)),
    ("pw 80->480 @14", 3, (80, 14, 480, 1, 1, 1)),
    ("dw 3x3 480 @14", 2, (480, 14, 480, 3, 1, 480)),
    ("pw 480->80 @14", 2, (480, 14, 80, 1, 1, 1)),
    ("dw 5x5 480 @14", 1, (480, 14, 480, 5, 1, 480)),
    ("pw 480->112 @14", 1, (480, 14, 112, 1, 1, 1)),
    ("pw 112->672 @14", 3, (112, 14, 672, 1, 1, 1)),
    ("dw 5x5 672 @14", 2, (672, 14, 672, 5, 1, 672)),
    ("pw 672->112 @14", 2, (672, 14, 112, 1, 1, 1)),
    ("dw 5x5/2 672 @14", 1, (672, 14, 672, 5, 2, 672)),
    ("pw 672->192 @7", 1, (672, 7, 192, 1, 1, 1)),
    ("pw 192->1152 @7", 4, (192, 7, 1152, 1, 1, 1)),
    ("dw 5x5 1152 @7", 3, (1152, 7, 1152, 5, 1, 1152)),
    ("pw 1152->192 @7", 3, (1152, 7, 192, 1, 1, 1)),
    ("dw 3x3 1152 @7", 1, (1152, 7, 1152, 3, 1, 1152)),
    ("pw 1152->320 @7", 1, (1152, 7, 320, 1, 1, 1)),
    ("pw 320->1280 @7", 1, (320, 7, 1280, 1, 1, 1)),
]

# --net resnet50: its distinct conv shapes (and SqueezeNet 1.1's 3x3 expands and classifier)
RESNET_LAYERS = [
    ("conv1 7x7/2 3->64 @224", 1, (3, 224, 64, 7, 2, 1)),
    ("l1 pw 64->64 @56", 1, (64, 56, 64, 1, 1, 1)),
    ("l1 3x3 64 @56", 3, (64, 56, 64, 3, 1, 1)),
    ("l1 pw 64->256 @56", 4, (64, 56, 256, 1, 1, 1)),
    ("l1 pw 256->64 @56", 2, (256, 56, 64, 1, 1, 1)),
    ("l2 pw 256->128 @56", 1, (256, 56, 128, 1, 1, 1)),
    ("l2 3x3/2 128 @56", 1, (128, 56, 128, 3, 2, 1)),
    ("l2 pw/2 256->512 @56", 1, (256, 56, 512, 1, 2, 1)),
    ("l3 3x3/2 256 @28", 1, (256, 28, 256, 3, 2, 1)),
    ("l3 pw/2 512->1024 @28", 1, (512, 28, 1024, 1, 2, 1)),
    ("l4 3x3/2 512 @14", 1, (512, 14, 512, 3, 2, 1)),
    ("l4 pw/2 1024->2048 @14", 1, (1024, 14, 2048, 1, 2, 1)),
    ("l2 3x3 128 @28", 3, (128, 28, 128, 3, 1, 1)),
    ("l2 pw 128->512 @28", 4, (128, 28, 512, 1, 1, 1)),
    ("l2 pw 512->128 @28", 3, (512, 28, 128, 1, 1, 1)),
    ("l3 3x3 256 @14", 5, (256, 14, 256, 3, 1, 1)),
    ("l3 pw 256->1024 @14", 6, (256, 14, 1024, 1, 1, 1)),
    ("l3 pw 1024->256 @14", 5, (1024, 14, 256, 1, 1, 1)),
    ("l4 3x3 512 @7", 2, (512, 7, 512, 3, 1, 1)),
    ("l4 pw 512->2048 @7", 3, (512, 7, 2048, 1, 1, 1)),
    ("l4 pw 2048->512 @7", 2, (2048, 7, 512, 1, 1, 1)),
    ("sq fire2 3x3 16->64 @55", 1, (16, 55, 64, 3, 1, 1)),
    ("sq fire4 3x3 32->128 @27", 1, (32, 27, 128, 3, 1, 1)),
    ("sq fire6 3x3 48->192 @13", 1, (48, 13, 192, 3, 1, 1)),
    ("sq fire8 3x3 64->256 @13", 1, (64, 13, 256, 3, 1, 1)),
    ("sq classifier pw 512->1000 @13", 1, (512, 13, 1000, 1, 1, 1)),
]


def f32_bits(x):
    return struct.unpack("<i", struct.pack("<f", x))[0]


def plan(op, args, tensors, scratch=0):
    """One-op plan; tensors: {arg name: float count} packed as random weights, then the rest of
    the arena (outputs, scratch) after them. Returns (plan bytes, arena bytes)."""
    rng = random.Random(1)
    offsets, blob = {}, bytearray()
    for name, count in tensors.items():
        offsets[name] = len(blob)
        blob += struct.pack(f"<{count}f", *(rng.uniform(-1, 1) for _ in range(count)))
        blob += bytes(-len(blob) % 16)
    arena = len(blob)
    for name in ("y", "scratch"):
        if name in args and args[name] is None:
            offsets[name] = arena
            arena += (args.pop("_y_bytes") if name == "y" else scratch) + 16
    spec = OPS[op]
    words = [spec.code, len(spec.args)]
    for arg, kind in zip(spec.args, spec.kinds):
        v = args[arg]
        if kind == "t":
            words.append(offsets[arg] if v is None else v)
        elif kind == "f":
            words.append(f32_bits(v))
        else:
            words.append(v)
    weights_at = (4 * (8 + len(words)) + 15) // 16 * 16
    header = [0x50574E4E, 1, arena, len(blob), weights_at, 0, len(words), 0]
    data = struct.pack(f"<{8 + len(words)}i", *header, *words).ljust(weights_at, b"\0") + blob
    return data, arena


def conv_plan(c, hw, m, k, s, group, scratch_bytes):
    pad = k // 2
    out = (hw + 2 * pad - k) // s + 1
    pt = max(0, ((out - 1) * s + k - hw) // 2)
    args = dict(x=None, weight=None, b=None, y=None, scratch=-1, n=1, c=c, h=hw, w=hw, m=m,
                oh=out, ow=out, kh=k, kw=k, sh=s, sw=s, dh=1, dw=1, pt=pt, pl=pt, group=group,
                act_min=0.0, act_max=6.0, _y_bytes=4 * m * out * out)
    scratch = scratch_bytes(c, m, group, k, k, out, out, s, s, 1, 1, pt, pt, hw, hw)
    if scratch:
        args["scratch"] = None
    tensors = {"x": c * hw * hw, "weight": m * (c // group) * k * k, "b": m}
    flops = 2 * m * out * out * (c // group) * k * k
    return plan("conv2d", args, tensors, scratch) + (flops,)


def winograd_plan(c, hw, m, k, s, group, scratch_bytes, winograd_scratch):
    """The layer as the plan compiler emits it where nnw_conv2d_winograd_pays: an init op
    transforming the weights once (conv2d_winograd_weights), then conv2d_winograd."""
    data, _, flops = conv_plan(c, hw, m, k, s, group, scratch_bytes)
    rng = random.Random(1)
    blob = bytearray()
    off = {}
    for name, count in (("x", c * hw * hw), ("weight", m * c * 9), ("b", m)):
        off[name] = len(blob)
        blob += struct.pack(f"<{count}f", *(rng.uniform(-1, 1) for _ in range(count)))
        blob += bytes(-len(blob) % 16)
    arena = len(blob)
    for name, size in (("u", 36 * c * m * 4), ("y", 4 * m * hw * hw),
                       ("scratch", winograd_scratch(c, m, hw, hw))):
        off[name] = arena
        arena += (size + 15) // 16 * 16
    init = [OPS["conv2d_winograd_weights"].code, 4, off["weight"], off["u"], c, m]
    args = dict(x=off["x"], u=off["u"], b=off["b"], y=off["y"], scratch=off["scratch"], n=1, c=c,
                h=hw, w=hw, m=m, oh=hw, ow=hw, pt=1, pl=1, act_min=0.0, act_max=6.0)
    spec = OPS["conv2d_winograd"]
    run = [spec.code, len(spec.args)] + [f32_bits(args[a]) if kind == "f" else args[a]
                                         for a, kind in zip(spec.args, spec.kinds)]
    words = init + run
    weights_at = (4 * (8 + len(words)) + 15) // 16 * 16
    header = [0x50574E4E, 1, arena, len(blob), weights_at, len(init), len(run), 0]
    data = struct.pack(f"<{8 + len(words)}i", *header, *words).ljust(weights_at, b"\0") + blob
    return data, arena, flops


def gemm_plan():
    args = dict(a=None, b=None, c=None, y=None, m=1, n=1000, k=1280, trans_a=0, trans_b=1,
                alpha=1.0, beta=1.0, c_rs=0, c_cs=1, act_min=-INF, act_max=INF, _y_bytes=4000)
    return plan("gemm", args, {"a": 1280, "b": 1280 * 1000, "c": 1000}) + (2 * 1280 * 1000,)


# ---- engines: each returns [(seconds per run)] for a list of plans -----------------------------

def time_runs(run, seconds):
    """Seconds per run: the best of 10 batches after a warm-up (the machine is shared: the
    fastest batch is the one least disturbed by neighbours)."""
    t0 = time.perf_counter()
    n = 0
    while time.perf_counter() - t0 < seconds / 2 or n < 3:
        run()
        n += 1
    per = max(1, n // 10)
    best = float("inf")
    for _ in range(10):
        t = time.perf_counter()
        for _ in range(per):
            run()
        best = min(best, (time.perf_counter() - t) / per)
    return best


class Native:
    names = ["native"]

    def __init__(self):
        self.lib = ctypes.CDLL(str(NATIVE_LIB))
        self.lib.nnw_malloc.restype = ctypes.c_void_p
        self.lib.nnw_malloc.argtypes = [ctypes.c_size_t]
        self.lib.nnw_plan_load.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p,
                                           ctypes.c_uint32, ctypes.c_void_p]
        self.lib.nnw_plan_run.argtypes = [ctypes.c_void_p, ctypes.c_void_p]

    def scratch_bytes(self, *a):
        return self.lib.nnw_conv2d_scratch_bytes(*a)

    def winograd_scratch(self, *a):
        return self.lib.nnw_conv2d_winograd_scratch_bytes(*a)

    def measure(self, plans, seconds, onnx_layers=()):
        out = []
        for data, arena_bytes, _ in plans:
            p = self.lib.nnw_malloc(len(data))
            a = self.lib.nnw_malloc(arena_bytes)
            ctypes.memmove(p, data, len(data))
            assert self.lib.nnw_plan_load(p, len(data), a, arena_bytes, None) == 0
            out.append(time_runs(lambda: self.lib.nnw_plan_run(p, a), seconds))
            self.lib.nnw_free(ctypes.c_void_p(p))
            self.lib.nnw_free(ctypes.c_void_p(a))
        return {"native": out}


class Wasmtime:
    names = ["wasmtime"]

    def __init__(self, wasm=KERNELS_WASM):
        import wasmtime
        engine = wasmtime.Engine()
        self.store = wasmtime.Store(engine)
        module = wasmtime.Module.from_file(engine, str(wasm))
        grow = wasmtime.Func(self.store, wasmtime.FuncType([wasmtime.ValType.i32()], []),
                             lambda _: None)
        self.ex = wasmtime.Instance(self.store, module, [grow]).exports(self.store)
        self.ex["_initialize"](self.store)

    def scratch_bytes(self, *a):
        return self.ex["nnw_conv2d_scratch_bytes"](self.store, *a)

    def winograd_scratch(self, *a):
        return self.ex["nnw_conv2d_winograd_scratch_bytes"](self.store, *a)

    def measure(self, plans, seconds, onnx_layers=()):
        s, ex, out = self.store, self.ex, []
        for data, arena_bytes, _ in plans:
            p, a = ex["nnw_malloc"](s, len(data)), ex["nnw_malloc"](s, arena_bytes)
            base = ctypes.addressof(ex["memory"].data_ptr(s).contents)
            ctypes.memmove(base + p, data, len(data))
            assert ex["nnw_plan_load"](s, p, len(data), a, arena_bytes, 0) == 0
            run = ex["nnw_plan_run"]
            out.append(time_runs(lambda: run(s, p, a), seconds))
            ex["nnw_free"](s, p)
            ex["nnw_free"](s, a)
        return {"wasmtime": out}


NODE_DRIVER = r"""
import { readFileSync } from "node:fs";
const [jobPath, seconds, ortPath] = process.argv.slice(2);
const job = JSON.parse(readFileSync(jobPath, "utf8"));
const columns = [];  // per column: per layer, a function running it once (maybe async)
for (const path of job.wasm) {
  const { instance } = await WebAssembly.instantiate(readFileSync(path),
    { env: { emscripten_notify_memory_growth() {} } });
  const ex = instance.exports;
  ex._initialize();
  columns.push(job.plans.map(([b64, arenaBytes]) => {
    const data = Buffer.from(b64, "base64");
    const p = ex.nnw_malloc(data.length), a = ex.nnw_malloc(arenaBytes);
    new Uint8Array(ex.memory.buffer, p, data.length).set(data);
    if (ex.nnw_plan_load(p, data.length, a, arenaBytes, 0) !== 0) throw new Error("load failed");
    return () => ex.nnw_plan_run(p, a);
  }));
}
if (job.ort.length) {
  const ort = await import(ortPath);
  ort.env.wasm.numThreads = 1;
  const runs = [];
  for (const [model, shape] of job.ort) {
    const session = await ort.InferenceSession.create(readFileSync(model),
      { executionProviders: ["wasm"], graphOptimizationLevel: "all" });
    const size = shape.reduce((a, b) => a * b, 1);
    const feeds = { x: new ort.Tensor("float32", Float32Array.from({ length: size }, Math.random), shape) };
    runs.push(() => session.run(feeds));
  }
  columns.push(runs);
}
async function batch(run, n) {
  const s = performance.now();
  for (let j = 0; j < n; j++) { const r = run(); if (r) await r; }
  return (performance.now() - s) / n / 1000;
}
// V8 starts in its baseline compiler: run everything for a while before measuring
const t0 = performance.now();
while (performance.now() - t0 < 3000) for (const col of columns) for (const run of col) await batch(run, 1);
// per layer: short batches of each column in turn, so a busy neighbour hurts all alike; keep the best
const out = columns.map(() => []);
const rounds = Math.max(10, Math.round(seconds * 200));
for (let i = 0; i < job.plans.length; i++) {
  const best = columns.map(() => Infinity);
  const t = performance.now();
  let n = 0;
  while (performance.now() - t < 5) { await batch(columns[0][i], 1); n++; }
  for (let b = 0; b < rounds; b++)
    for (let c = 0; c < columns.length; c++) best[c] = Math.min(best[c], await batch(columns[c][i], n));
  best.forEach((v, c) => out[c].push(v));
}
console.log(JSON.stringify(out));
"""


class Node:
    """kernels.wasm builds (and optionally onnxruntime-web's wasm backend, one thread) in one V8,
    interleaved layer by layer."""

    def __init__(self, wasm_paths=None, ort=False):
        self.wasm_paths = list(wasm_paths or [KERNELS_WASM])
        self.names = ["node"] if len(self.wasm_paths) == 1 else [f"node:{Path(p).name}"
                                                                  for p in self.wasm_paths]
        self.ort = ort
        if ort:
            self.names.append("ort-web")
        self.helpers = [Wasmtime(p) for p in self.wasm_paths]  # for the scratch query

    def scratch_bytes(self, *a):
        return max(h.scratch_bytes(*a) for h in self.helpers)  # builds may differ

    def winograd_scratch(self, *a):
        return max(h.winograd_scratch(*a) for h in self.helpers)

    def measure(self, plans, seconds, onnx_layers=()):
        import base64
        with tempfile.TemporaryDirectory() as tmp:
            driver, job = Path(tmp) / "driver.mjs", Path(tmp) / "job.json"
            driver.write_text(NODE_DRIVER)
            ort = []
            if self.ort:
                for i, (model, shape) in enumerate(onnx_layers):
                    path = Path(tmp) / f"layer{i}.onnx"
                    path.write_bytes(model)
                    ort.append([str(path), shape])
            job.write_text(json.dumps({
                "wasm": [str(p) for p in self.wasm_paths], "ort": ort,
                "plans": [[base64.b64encode(d).decode(), a] for d, a, _ in plans]}))
            out = subprocess.run(["node", str(driver), str(job), str(seconds), str(ORT_WEB)],
                                 capture_output=True, text=True)
            if out.returncode != 0:
                raise RuntimeError(f"node failed:\n{out.stderr[-2000:]}")
        return dict(zip(self.names, json.loads(out.stdout)))


def onnx_conv(c, hw, m, k, s, group):
    """The layer as an ONNX Conv + Clip(0, 6) model (onnxruntime fuses the pair), input x."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper
    pad = k // 2
    out = (hw + 2 * pad - k) // s + 1
    pt = max(0, ((out - 1) * s + k - hw) // 2)
    pb = (out - 1) * s + k - hw - pt
    rng = np.random.default_rng(1)
    inits = [numpy_helper.from_array(rng.uniform(-1, 1, (m, c // group, k, k)).astype(np.float32), "w"),
             numpy_helper.from_array(rng.uniform(-1, 1, m).astype(np.float32), "b"),
             numpy_helper.from_array(np.array(0, np.float32), "lo"),
             numpy_helper.from_array(np.array(6, np.float32), "hi")]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["t"], kernel_shape=[k, k], strides=[s, s],
                              pads=[pt, pt, pb, pb], group=group),
             helper.make_node("Clip", ["t", "lo", "hi"], ["y"])]
    graph = helper.make_graph(nodes, "layer",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, hw, hw])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    return model.SerializeToString(), [1, c, hw, hw]


def onnx_gemm():
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(1)
    inits = [numpy_helper.from_array(rng.uniform(-1, 1, (1000, 1280)).astype(np.float32), "w"),
             numpy_helper.from_array(rng.uniform(-1, 1, 1000).astype(np.float32), "b")]
    graph = helper.make_graph([helper.make_node("Gemm", ["x", "w", "b"], ["y"], transB=1)], "fc",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1280])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    return model.SerializeToString(), [1, 1280]


ENGINES = {"wasmtime": Wasmtime, "node": Node, "native": Native}
CHOICES = sorted(ENGINES) + ["ort-web"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", action="append", choices=CHOICES,
                        help="ort-web: onnxruntime-web's wasm backend (one thread) beside node")
    parser.add_argument("--wasm", action="append", type=Path,
                        help="node only: compare these kernels.wasm builds, interleaved")
    parser.add_argument("--seconds", type=float, default=0.3, help="time per shape")
    parser.add_argument("--only", help="only layers whose name contains this")
    parser.add_argument("--net", choices=["efficientnet", "resnet50"], default="efficientnet",
                        help="whose layer shapes (resnet50: also SqueezeNet 1.1's 3x3 and classifier)")
    parser.add_argument("--winograd", action="store_true",
                        help="add each 3x3 stride-1 layer again as conv2d_winograd on weights "
                             "transformed at load (rows marked [wt]), to measure its choice table")
    opts = parser.parse_args()
    chosen = opts.engine or ["wasmtime", "node"]
    engines = [Node(opts.wasm, "ort-web" in chosen) if e == "node" else ENGINES[e]()
               for e in chosen if e != "ort-web"]
    if "ort-web" in chosen and "node" not in chosen:
        engines.append(Node(opts.wasm, True))
    layers = [lay for lay in (RESNET_LAYERS if opts.net == "resnet50" else LAYERS) if not opts.only or opts.only in lay[0]]
    plans = [conv_plan(*args, engines[0].scratch_bytes) for _, _, args in layers]
    onnx_layers = [onnx_conv(*args) for _, _, args in layers] if "ort-web" in chosen else []
    names = [lay[0] for lay in layers]
    counts = [lay[1] for lay in layers]
    if opts.net == "efficientnet" and (not opts.only or opts.only in "gemm classifier"):
        names.append("gemm 1280->1000 (classifier)")
        counts.append(1)
        plans.append(gemm_plan())
        if "ort-web" in chosen:
            onnx_layers.append(onnx_gemm())
    if opts.winograd:
        for (name, count, (c, hw, m, k, st, group)) in layers:
            if k == 3 and st == 1 and group == 1 and c % 4 == 0 and m % 4 == 0:
                names.append(name + " [wt]")
                counts.append(0)
                plans.append(winograd_plan(c, hw, m, k, st, group, engines[0].scratch_bytes,
                                           engines[0].winograd_scratch))
    results = {}
    for e in engines:
        results.update(e.measure(plans, opts.seconds, onnx_layers))
    head = "".join(f" {name + ' ms':>16} {'GFLOP/s':>8}" for name in results)
    print(f"{'layer':32} {'x':>2}{head}")
    for i, name in enumerate(names):
        row = "".join(f" {r[i] * 1e3:16.3f} {plans[i][2] / r[i] / 1e9:8.1f}" for r in results.values())
        print(f"{name:32} {counts[i]:2}{row}")
    total_flops = sum(c * p[2] for c, p in zip(counts, plans))
    row = ""
    for r in results.values():
        t = sum(c * x for c, x in zip(counts, r))
        row += f" {t * 1e3:16.2f} {total_flops / t / 1e9:8.1f}"
    print(f"{'total (x counts)':32}   {row}")


if __name__ == "__main__":
    main()
