"""A/B of the packed GEMM on float16 panels (gemm_packed_f16) against float32 panels (gemm_packed)
on BERT-base-like shapes (K = 768, N = 768 / 3072, M = 1 for a decode step and 128 for a
prompt), in both hosts at once, through ab_plans.py: one plan file per model, the float32
MatMul [M, K] x [K, N] + bias and its float16 form (weights float16, Casts at float32 I/O, as
onnxconverter-common's keep_io_types writes it). The Casts of x and y are M*(K+N) elements
against the GEMM's M*K*N multiply-adds (under 0.2 % at M = 1).

    python bench/ab/ab_fp16_gemm.py [--seconds 20] [--shapes 1x768x768,128x768x3072] [--layers 12]

--layers L adds, for M = 1 and 128, a chain of L BERT-base FFNs (768 -> 3072 -> 768, distinct
weights: 18.9 MB of float32 a layer), so that the weights stream from memory as a whole model's
do, where one matrix run again and again stays in cache.

Prints ab_plans.py's table per shape: whole-run medians in wasmtime and V8, float16 relative to
float32 (the first row)."""
import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "py_runtime"))
from nnwasm.plan_compile import compile_plan  # noqa: E402


def model(m, k, n, half):
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((k, n)) * 0.05).astype(np.float16 if half else np.float32)
    bias = (rng.standard_normal(n) * 0.05).astype(np.float16 if half else np.float32)
    t = TensorProto.FLOAT16 if half else TensorProto.FLOAT
    nodes = [helper.make_node("MatMul", ["xh" if half else "x", "w"], ["p"]),
             helper.make_node("Add", ["p", "bias"], ["yh" if half else "y"])]
    if half:
        nodes = ([helper.make_node("Cast", ["x"], ["xh"], to=t)] + nodes
                 + [helper.make_node("Cast", ["yh"], ["y"], to=TensorProto.FLOAT)])
    g = helper.make_graph(nodes, "gemm", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, m, k])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, m, n])],
                          [numpy_helper.from_array(w, "w"), numpy_helper.from_array(bias, "bias")])
    # x is [1, M, K], as in a transformer: the MatMul + Add stays a MatMul (a 2-D one becomes a Gemm,
    # which runs on the unpacked gemm kernel in float32)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8).SerializeToString()


def chain(m, layers, half):
    """x [1, M, 768] through `layers` (MatMul + bias Add) pairs 768 -> 3072 -> 768."""
    rng = np.random.default_rng(1)
    dt, t = (np.float16, TensorProto.FLOAT16) if half else (np.float32, TensorProto.FLOAT)
    nodes, inits, x = [], [], "xh" if half else "x"
    for i in range(2 * layers):
        k, n = (768, 3072) if i % 2 == 0 else (3072, 768)
        inits += [numpy_helper.from_array((rng.standard_normal((k, n)) * 0.02).astype(dt), f"w{i}"),
                  numpy_helper.from_array((rng.standard_normal(n) * 0.02).astype(dt), f"b{i}")]
        nodes += [helper.make_node("MatMul", [x, f"w{i}"], [f"p{i}"]),
                  helper.make_node("Add", [f"p{i}", f"b{i}"], [f"h{i}"])]
        x = f"h{i}"
    if half:
        nodes = ([helper.make_node("Cast", ["x"], ["xh"], to=t)] + nodes
                 + [helper.make_node("Cast", [x], ["y"], to=TensorProto.FLOAT)])
    else:
        nodes.append(helper.make_node("Identity", [x], ["y"]))
    g = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, m, 768])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, m, 768])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8).SerializeToString()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--shapes", default="1x768x768,1x768x3072,128x768x768,128x768x3072")
    ap.add_argument("--layers", type=int, default=0)
    args = ap.parse_args()
    wasm = ROOT / "py_runtime" / "nnwasm" / "kernels.wasm"
    with tempfile.TemporaryDirectory() as tmp:
        runs = [(s, tuple(map(int, s.split("x")))) for s in args.shapes.split(",") if s]
        runs += [(f"chain{m}x{args.layers}", (m, args.layers)) for m in (1, 128)] if args.layers else []
        for name, dims in runs:
            pairs = []
            for half in (False, True):
                path = Path(tmp) / f"{'gemm' if len(dims) == 3 else ''}{name}_{'f16' if half else 'f32'}.nnwp"
                path.write_bytes(compile_plan(model(*dims, half) if len(dims) == 3 else chain(*dims, half)))
                pairs.append(f"{path}@{wasm}")
            print(name if len(dims) == 2 else "M={} K={} N={}".format(*dims), flush=True)
            subprocess.run([sys.executable, str(ROOT / "bench" / "ab" / "ab_plans.py"), *pairs, "--seconds",
                            str(args.seconds)], check=True)


if __name__ == "__main__":
    main()
