"""MatMulNBits (q4_matmul) at accuracy_level 0 (A in float32) and 4 (A quantized to int8 per block,
onnxruntime's CompInt8: what onnxruntime-genai's builder writes for int4 cpu) against the same
weights in float32 (MatMul by a constant, gemm_packed), on the linear layers of a Llama-style 125M
decoder (hidden 768, 4 of 12 heads for K and V, MLP 2048, vocabulary 32000), in wasmtime
(CPython) and V8 (Node, ab_ops_hosts.mjs) at once, each op run alone (nnw_plan_run_ops),
interleaved op by op:

    python bench/ab/ab_matmulnbits.py [--seconds 20] [--block 32] [--m 1 128] [--no-lm-head] [--symmetric]

One plan holds the three forms of every shape, so all see the same load; the table gives per-op
minima and medians and the ratios fp32 / int4 (> 1: int4 faster), and the load average before
and after. The machine is shared: only the ratios compare."""
import argparse
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from plan_builds import ROOT, Build, read_plan, start_node_half, time_ops, warm_up

sys.path.insert(0, str(ROOT / "py_runtime"))
import nnwasm  # noqa: E402

SHAPES = [(768, 768, "q/o proj"), (768, 256, "k/v proj"), (768, 2048, "gate/up"), (2048, 768, "down"),
          (768, 32000, "lm head")]
# how often each shape runs in one decode step of the 125M Llama (12 layers, then the lm head)
PER_STEP = {"q/o proj": 24, "k/v proj": 24, "gate/up": 24, "down": 12, "lm head": 1}


def quantize(w, bs, symmetric):
    """w [K, N] -> (B [N, kb, bs/2], scales [N*kb], zp [N, ceil(kb/2)] or None, dequantized [K, N]):
    4-bit, asymmetric (packed zero points) or symmetric (none: z = 8), as MatMulNBitsQuantizer."""
    k, n = w.shape
    kb = -(-k // bs)
    wt = np.zeros((n, kb * bs), np.float32)
    wt[:, :k] = w.T
    blocks = wt.reshape(n, kb, bs)
    if symmetric:
        amax = np.abs(blocks).max(-1)
        scale = np.where(amax > 0, amax / 7, 1).astype(np.float32)
        zp = np.full((n, kb), 8, np.uint8)
    else:
        lo, hi = np.minimum(blocks.min(-1), 0), np.maximum(blocks.max(-1), 0)
        scale = np.where(hi > lo, (hi - lo) / 15, 1).astype(np.float32)
        zp = np.clip(np.round(-lo / scale), 0, 15).astype(np.uint8)
    q = np.clip(np.round(blocks / scale[..., None]) + zp[..., None], 0, 15).astype(np.uint8)
    packed = (q[..., 0::2] | (q[..., 1::2] << 4)).astype(np.uint8)
    zpad = np.zeros((n, kb + (kb & 1)), np.uint8)
    zpad[:, :kb] = zp
    zpk = (zpad[:, 0::2] | (zpad[:, 1::2] << 4)).astype(np.uint8)
    deq = ((q.astype(np.float32) - zp[..., None]) * scale[..., None]).reshape(n, kb * bs)[:, :k].T.copy()
    return packed, scale.reshape(-1), None if symmetric else zpk, deq


FORMS = ("fp32", "int4 acc0", "int4 acc4")


def build_model(shapes, ms, bs, symmetric):
    rng = np.random.default_rng(0)
    nodes, inits, ins, outs, names = [], [], {}, [], []
    for k, n, what in shapes:
        w = (rng.standard_normal((k, n)) * 0.05).astype(np.float32)
        packed, scale, zp, deq = quantize(w, bs, symmetric)
        tag = f"{k}x{n}"
        inits += [numpy_helper.from_array(packed, f"B_{tag}"), numpy_helper.from_array(scale, f"s_{tag}"),
                  numpy_helper.from_array(deq, f"W_{tag}")]
        q_in = [f"B_{tag}", f"s_{tag}"]
        if zp is not None:
            inits.append(numpy_helper.from_array(zp, f"z_{tag}"))
            q_in.append(f"z_{tag}")
        for m in ms:
            a = f"A{m}_{k}"
            ins[a] = helper.make_tensor_value_info(a, TensorProto.FLOAT, [m, k])
            nodes.append(helper.make_node("MatMul", [a, f"W_{tag}"], [f"f_{m}_{tag}"], name=f"fp32 m{m} {tag}"))
            for acc in (0, 4):
                nodes.append(helper.make_node("MatMulNBits", [a, *q_in], [f"q{acc}_{m}_{tag}"], domain="com.microsoft",
                                              K=k, N=n, bits=4, block_size=bs, accuracy_level=acc,
                                              name=f"int4 acc{acc} m{m} {tag}"))
            outs += [f"f_{m}_{tag}", f"q0_{m}_{tag}", f"q4_{m}_{tag}"]
            names.append((m, tag, what))
    g = helper.make_graph(nodes, "nbits", list(ins.values()),
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    return model.SerializeToString(), names


def stats(ms):
    ms = sorted(ms)
    return ms[0], ms[len(ms) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--block", type=int, default=32)
    ap.add_argument("--m", type=int, nargs="+", default=[1])
    ap.add_argument("--no-lm-head", action="store_true")
    ap.add_argument("--symmetric", action="store_true", help="no zero points (z = 8), as onnxruntime-genai's builder")
    args = ap.parse_args()
    shapes = SHAPES[:-1] if args.no_lm_head else SHAPES
    model, names = build_model(shapes, args.m, args.block, args.symmetric)
    wasm = ROOT / "py_runtime" / "nnwasm" / "kernels.wasm"
    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        plan = Path(tmp) / "nbits.nnwp"
        plan.write_bytes(nnwasm.compile_plan(model))
        pf = read_plan(plan)
        kernels = [op.kernel for op in pf.ops]
        node = start_node_half("ab_ops_hosts.mjs", plan, args.seconds, wasm)
        build = Build(pf, wasm)
        warm_up([build])
        per = time_ops([build], range(len(pf.ops)), args.seconds)[0]
        js = node()[0]
    load1 = os.getloadavg()
    by_node = {op.node: i for i, op in enumerate(pf.ops)}
    print(f"int4 (q4_matmul, block {args.block}, {'symmetric' if args.symmetric else 'asymmetric'}) at accuracy_level 0 "
          f"and 4 vs fp32 (gemm_packed); ms min / median; ratios fp32 / int4 of minima (medians)")
    head = f"{'':6s}{'shape':>23s}"
    for host in ("wasmtime", "V8"):
        head += f" | {host + ' fp32':>15s} {'acc0':>15s} {'acc4':>15s} {'fp32/acc0':>12s} {'fp32/acc4':>12s}"
    print(head)
    step = {}
    for m, tag, what in names:
        row = f"m{m:<4d} {tag:>9s} {what:13s}"
        for host, get in (("w", lambda i: stats(per[i])), ("v", lambda i: tuple(js[i]))):
            vals = []
            for form in FORMS:
                i = by_node[f"{form} m{m} {tag}"]
                assert kernels[i] == ("gemm_packed" if form == "fp32" else "q4_matmul"), (form, kernels[i])
                v = get(i)
                vals.append(v)
                acc = step.setdefault((m, host, form), [0.0, 0.0])
                acc[0] += PER_STEP[what] * v[0]
                acc[1] += PER_STEP[what] * v[1]
            row += " | " + " ".join(f"{v[0]:7.3f}/{v[1]:7.3f}" for v in vals)
            row += "".join(f" {vals[0][0] / v[0]:5.2f}({vals[0][1] / v[1]:5.2f})" for v in vals[1:])
        print(row)
    for m in args.m:
        row = f"m{m:<4d} {'one step':>9s} {'(sums)':13s}"
        for host in ("w", "v"):
            vals = [step[(m, host, form)] for form in FORMS]
            row += " | " + " ".join(f"{v[0]:7.2f}/{v[1]:7.2f}" for v in vals)
            row += "".join(f" {vals[0][0] / v[0]:5.2f}({vals[0][1] / v[1]:5.2f})" for v in vals[1:])
        print(row)
    print(f"(one step: every linear layer of a step of m rows: 12 layers' projections and MLP"
          f"{'' if args.no_lm_head else ', the lm head'}; {len(per[0])} rounds in wasmtime; "
          f"load average {load0[0]:.2f} before, {load1[0]:.2f} after)")


if __name__ == "__main__":
    main()
