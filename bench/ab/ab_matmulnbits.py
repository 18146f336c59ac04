"""MatMulNBits (int4, q4_matmul) against the same weights in float32 (MatMul by a constant,
gemm_packed) on the linear layers of a Llama-style 125M decoder (hidden 768, 4 of 12 heads for
K and V, MLP 2048, vocabulary 32000), in wasmtime (CPython) and V8 (Node, ab_ops_hosts.mjs) at
once, each op run alone (nnw_plan_run_ops), interleaved op by op:

    python bench/ab/ab_matmulnbits.py [--seconds 20] [--block 32] [--m 1 128] [--no-lm-head] [--accuracy-level 0]

One plan holds both forms of every shape, so both see the same load; the table gives per-op
minima and medians and the ratio fp32 / int4 (> 1: int4 faster). The machine is shared: only
the ratios compare."""
import argparse
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


def quantize(w, bs, rng):
    """w [K, N] -> (B [N, kb, bs/2], scales [N*kb], zp [N, ceil(kb/2)], dequantized [K, N]) asymmetric 4-bit."""
    k, n = w.shape
    kb = -(-k // bs)
    wt = np.zeros((n, kb * bs), np.float32)
    wt[:, :k] = w.T
    blocks = wt.reshape(n, kb, bs)
    lo, hi = np.minimum(blocks.min(-1), 0), np.maximum(blocks.max(-1), 0)
    scale = np.where(hi > lo, (hi - lo) / 15, 1).astype(np.float32)
    zp = np.clip(np.round(-lo / scale), 0, 15).astype(np.uint8)
    q = np.clip(np.round(blocks / scale[..., None]) + zp[..., None], 0, 15).astype(np.uint8)
    packed = (q[..., 0::2] | (q[..., 1::2] << 4)).astype(np.uint8)
    zpad = np.zeros((n, kb + (kb & 1)), np.uint8)
    zpad[:, :kb] = zp
    zpk = (zpad[:, 0::2] | (zpad[:, 1::2] << 4)).astype(np.uint8)
    deq = ((q.astype(np.float32) - zp[..., None]) * scale[..., None]).reshape(n, kb * bs)[:, :k].T.copy()
    return packed, scale.reshape(-1), zpk, deq


def build_model(shapes, ms, bs, acc):
    rng = np.random.default_rng(0)
    nodes, inits, ins, outs, names = [], [], {}, [], []
    for k, n, what in shapes:
        w = (rng.standard_normal((k, n)) * 0.05).astype(np.float32)
        packed, scale, zp, deq = quantize(w, bs, rng)
        tag = f"{k}x{n}"
        inits += [numpy_helper.from_array(packed, f"B_{tag}"), numpy_helper.from_array(scale, f"s_{tag}"),
                  numpy_helper.from_array(zp, f"z_{tag}"), numpy_helper.from_array(deq, f"W_{tag}")]
        for m in ms:
            a = f"A{m}_{k}"
            ins[a] = helper.make_tensor_value_info(a, TensorProto.FLOAT, [m, k])
            nodes.append(helper.make_node("MatMulNBits", [a, f"B_{tag}", f"s_{tag}", f"z_{tag}"], [f"q_{m}_{tag}"],
                                          domain="com.microsoft", K=k, N=n, bits=4, block_size=bs, accuracy_level=acc,
                                          name=f"int4 m{m} {tag} {what}"))
            nodes.append(helper.make_node("MatMul", [a, f"W_{tag}"], [f"f_{m}_{tag}"], name=f"fp32 m{m} {tag} {what}"))
            outs += [f"q_{m}_{tag}", f"f_{m}_{tag}"]
            names.append((m, tag, what))
    g = helper.make_graph(nodes, "nbits", list(ins.values()),
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    return model.SerializeToString(), names


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--block", type=int, default=32)
    ap.add_argument("--m", type=int, nargs="+", default=[1])
    ap.add_argument("--no-lm-head", action="store_true")
    ap.add_argument("--accuracy-level", type=int, default=4, help="4: A quantized to int8 (onnxruntime-genai's cpu int4)")
    args = ap.parse_args()
    shapes = SHAPES[:-1] if args.no_lm_head else SHAPES
    model, names = build_model(shapes, args.m, args.block, args.accuracy_level)
    wasm = ROOT / "py_runtime" / "nnwasm" / "kernels.wasm"
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
    by_node = {op.node: i for i, op in enumerate(pf.ops)}
    print(f"int4 (q4_matmul, block {args.block}, asymmetric, accuracy_level {args.accuracy_level}) vs fp32 (gemm_packed); ms min / median; "
          f"ratio = fp32 / int4 of minima (medians)")
    print(f"{'shape':28s} {'wasmtime int4':>17s} {'fp32':>17s} {'ratio':>13s}   {'V8 int4':>17s} {'fp32':>17s} {'ratio':>13s}")
    step = {}
    for m, tag, what in names:
        qi, fi = by_node[f"int4 m{m} {tag} {what}"], by_node[f"fp32 m{m} {tag} {what}"]
        assert kernels[qi] == "q4_matmul" and kernels[fi] == "gemm_packed", (kernels[qi], kernels[fi])
        wq, wf = sorted(per[qi]), sorted(per[fi])
        wq, wf = (wq[0], wq[len(wq) // 2]), (wf[0], wf[len(wf) // 2])
        vq, vf = js[qi], js[fi]
        for key, val in (("wq", wq), ("wf", wf), ("vq", vq), ("vf", vf)):
            got = step.setdefault((m, key), [0.0, 0.0])
            got[0] += PER_STEP[what] * val[0]
            got[1] += PER_STEP[what] * val[1]
        row = f"m{m:<4d}{tag:>10s} {what:12s}"
        for q, f in ((wq, wf), (vq, vf)):
            row += f" {q[0]:8.3f}/{q[1]:8.3f} {f[0]:8.3f}/{f[1]:8.3f} {f[0] / q[0]:5.2f}({f[1] / q[1]:5.2f})  "
        print(row)
    for m in args.m:
        row = f"m{m:<4d}{'one step':>10s} {'(sums)':12s}"
        for q, f in ((step[(m, "wq")], step[(m, "wf")]), (step[(m, "vq")], step[(m, "vf")])):
            row += f" {q[0]:8.2f}/{q[1]:8.2f} {f[0]:8.2f}/{f[1]:8.2f} {f[0] / q[0]:5.2f}({f[1] / q[1]:5.2f})  "
        print(row + f"  (every linear layer of a step of {m} row(s): 12 layers' projections and MLP" +
              ("" if args.no_lm_head else ", the lm head") + ")")
    print(f"({len(per[0])} rounds in wasmtime)")


if __name__ == "__main__":
    main()
