"""Bytes the plans of one decode step move inside kernels.wasm (copy2d, transpose, kv_append's and
kv_append_rows' copied and written rows) for a decoder with its cache kept on the "wasm" device, at
past P and the two steps after, from the plans' words as they stand for each run. Optimum's
Concat presents and onnxruntime-genai's GroupQueryAttention alike (e.g.
/work/cache/decbench/models/llama_genai_fp32/model.onnx).

    PYTHONPATH=TREE/py_runtime .venv/bin/python bench/ab/kv_bytes_moved.py MODEL.onnx P [HEAD_SIZE, default 64]
"""
import struct
import sys

import numpy as np
import nnwasm
from nnwasm.wasm.opcodes import OPS
from nnwasm.wasm.runner import WasmRunner
BY_CODE = {op.code: (n, op) for n, op in OPS.items()}
path, P = sys.argv[1], int(sys.argv[2])
so = nnwasm.SessionOptions()
so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
sess = nnwasm.InferenceSession(path, so)
ins = {i.name: i for i in sess.get_inputs()}
outs = [o.name for o in sess.get_outputs()]
pk = [n for n in ins if n.startswith("past_key_values")]
KV_DIM = int(sys.argv[3]) if len(sys.argv) > 3 else 64   # the genai builder's symbolic head size, kv_cache_dim
past = {k: np.zeros([1 if isinstance(d, str) and "batch" in d else KV_DIM if d == "kv_cache_dim" else
                     (P if isinstance(d, str) else d) for d in ins[k].shape], np.float32) for k in pk}
ran = []
orig = WasmRunner.run
WasmRunner.run = lambda self, *a, **k: ran.append(self) or orig(self, *a, **k)
def moved(r):
    w = struct.unpack(f"<{len(r._words)//4}i", r._words)
    at, end, tot = 8 + w[5], 8 + w[5] + w[6], 0
    while at < end:
        name, op = BY_CODE[w[at]]
        a = dict(zip(op.args, w[at + 2:at + 2 + w[at + 1]]))
        at += 2 + w[at + 1]
        if name == "copy2d":
            tot += a["rows"] * a["row_bytes"]
        elif name == "transpose":
            tot += a["esize"] * int(np.prod([a[f"d{i}"] for i in range(6)]))
        elif name in ("kv_append", "kv_append_rows"):
            # rows of the past copied: a Concat's kv_append has zero lengths + lens_add = P (its p is the
            # block's capacity); a GroupQueryAttention's n_b = seqlens_k + 1 - S <= p, taken as p (the
            # past's length: no padding here)
            n = a["lens_add"] if name == "kv_append" and a["lens"] >= 0 and a["lens_add"] > 0 else a["p"]
            tot += 4 * a["batch"] * a["heads"] * a["d"] * ((n if a["past"] != a["y"] else 0) + a["s"])
    return tot
for step in range(3):
    b = sess.io_binding()
    b.bind_cpu_input("input_ids", np.array([[7]], np.int64))
    b.bind_cpu_input("attention_mask", np.ones((1, P + step + 1), np.int64))
    if "position_ids" in ins:
        b.bind_cpu_input("position_ids", np.array([[P + step]], np.int64))
    for k, v in past.items():
        (b.bind_ortvalue_input if isinstance(v, nnwasm.OrtValue) else b.bind_cpu_input)(k, v)
    for o in outs:
        b.bind_output(o, "wasm" if o.startswith("present") else "cpu")
    ran.clear()
    sess.run_with_iobinding(b)
    got = dict(zip(outs, b.get_outputs()))
    past = {k: got[k.replace("past_key_values", "present")] for k in pk}
    print(f"P={P + step}: {sum(moved(r) for r in ran if getattr(r, '_words', None) is not None) / 2**20:.1f} MiB moved by the plan's copy ops")
