"""The kernels split over the thread pool after the first slice (kernels_c/threads/split.h;
docs/architecture.md, "The thread pool"): q4_matmul (MatMulNBits, float and int8 paths),
gemm_packed_f16 (GEMV and blocks), gemm's NT/TT paths (one row too), softmax, layer norm, skip_norm
(LayerNorm and RMS), unary, pooling and q8_dyn_quantize: at 2 and 3 threads, over repeated runs,
the bits of one thread, and each really split. Then every split kernel on the tiny models of the
zoo and the generative zoo with the threshold off (nnw_pool_test_split_all): int4, fp16 and fp32
Llama decoders give the same logits and tokens on 1 and 2 threads at every step."""
import os
import sys

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import nnwasm
from conftest import ROOT
from test_threads import host_of, no_split, same_bits, session, zoo_model

sys.path.insert(0, str(ROOT / "build_scripts"))
import build_genzoo  # noqa: E402

MS = "com.microsoft"
F, F16, U8 = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.UINT8


def _model(nodes, inputs, outputs, inits=(), opsets=(("", 17), (MS, 1))):
    """inputs/outputs: (name, elem type, shape or None)"""
    graph = helper.make_graph(nodes, "k", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                              [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs], list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets]).SerializeToString()


def nbits(m, k=1024, n=1000, bits=4, bs=32, acc=0, zp=True, seed=0):
    rng = np.random.default_rng(seed)
    kb = -(-k // bs)
    b = rng.integers(0, 256, (n, kb, bs * bits // 8)).astype(np.uint8)
    scales = (rng.random(n * kb) * 0.05 + 0.005).astype(np.float32)
    inits = [numpy_helper.from_array(b, "B"), numpy_helper.from_array(scales, "S")]
    ins = ["A", "B", "S"]
    if zp:
        inits.append(numpy_helper.from_array(rng.integers(0, 256, (n, -(-kb * bits // 8))).astype(np.uint8), "Z"))
        ins.append("Z")
    node = helper.make_node("MatMulNBits", ins, ["Y"], domain=MS, K=k, N=n, bits=bits, block_size=bs, accuracy_level=acc)
    feeds = {"A": rng.standard_normal((1, m, k)).astype(np.float32)}
    return _model([node], [("A", F, [1, m, k])], [("Y", F, None)], inits), feeds


def f16_matmul(m, k=768, n=1000, seed=0):
    """an fp16 model: its weight stays float16 (gemm_packed_f16), the arithmetic float32"""
    rng = np.random.default_rng(seed)
    w = numpy_helper.from_array((rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float16), "W")
    node = helper.make_node("MatMul", ["X", "W"], ["Y"])
    feeds = {"X": rng.standard_normal((1, m, k)).astype(np.float16)}
    return _model([node], [("X", F16, [1, m, k])], [("Y", F16, None)], [w]), feeds


def gemm_t(m, k, n, trans_a=0, seed=0):
    """Gemm with B [N, K] given at run time (transB = 1: gemm's NT path, TT with transA)"""
    rng = np.random.default_rng(seed)
    a_shape = [k, m] if trans_a else [m, k]
    node = helper.make_node("Gemm", ["A", "B", "C"], ["Y"], transA=trans_a, transB=1, alpha=0.5, beta=2.0)
    c = numpy_helper.from_array(rng.standard_normal(n).astype(np.float32), "C")
    feeds = {"A": rng.standard_normal(a_shape).astype(np.float32), "B": rng.standard_normal((n, k)).astype(np.float32)}
    return _model([node], [("A", F, a_shape), ("B", F, [n, k])], [("Y", F, None)], [c]), feeds


def one(op, shape, attrs=None, inits=(), extra_in=(), domain="", out_types=(F,), outs=("Y",), seed=0, nan_at=None):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    if nan_at is not None:
        x.reshape(-1)[nan_at] = np.nan
    node = helper.make_node(op, ["X", *extra_in], list(outs), domain=domain, **(attrs or {}))
    return _model([node], [("X", F, list(shape))], [(o, t, None) for o, t in zip(outs, out_types)], inits), {"X": x}


def norm_inits(h, beta=True, seed=0):
    rng = np.random.default_rng(seed)
    out = [numpy_helper.from_array(rng.standard_normal(h).astype(np.float32), "G")]
    if beta:
        out.append(numpy_helper.from_array(rng.standard_normal(h).astype(np.float32), "Bt"))
    return out


def skip_norm(rows, h, simplified=False, seed=0):
    rng = np.random.default_rng(seed)
    op = "SkipSimplifiedLayerNormalization" if simplified else "SkipLayerNormalization"
    ins = ["X", "Sk", "G"] + ([] if simplified else ["Bt"])
    node = helper.make_node(op, ins, ["Y"], domain=MS, epsilon=1e-5)
    feeds = {"X": rng.standard_normal((1, rows, h)).astype(np.float32), "Sk": rng.standard_normal((1, rows, h)).astype(np.float32)}
    return _model([node], [("X", F, [1, rows, h]), ("Sk", F, [1, rows, h])], [("Y", F, None)],
                  norm_inits(h, not simplified)), feeds


KERNELS = {   # name -> (model, feeds), each over split.h's threshold
    "q4_matmul gemv 4 bits": lambda: nbits(1),
    "q4_matmul gemv 8 bits no zp": lambda: nbits(1, bits=8, bs=128, zp=False),
    "q4_matmul gemv 2 rows": lambda: nbits(2, n=999),
    "q4_matmul int8 decode": lambda: nbits(1, acc=4),
    "q4_matmul int8 prefill": lambda: nbits(7, n=998, acc=4),
    "gemm_packed_f16 gemv": lambda: f16_matmul(1),
    "gemm_packed_f16 gemv 3 rows": lambda: f16_matmul(3, n=1001),
    "gemm_packed_f16 blocks": lambda: f16_matmul(64, n=1003),
    "gemm NT one row": lambda: gemm_t(1, 1280, 1000),
    "gemm NT rows": lambda: gemm_t(37, 512, 301),
    "gemm TT": lambda: gemm_t(33, 256, 129, trans_a=1),
    "softmax rows": lambda: one("Softmax", (1, 4, 128, 300), {"axis": -1}),
    "softmax columns": lambda: one("Softmax", (6, 300, 200), {"axis": 1}),
    "layer norm": lambda: one("LayerNormalization", (1, 200, 768), {"axis": -1}, norm_inits(768), ["G", "Bt"]),
    "skip_norm": lambda: skip_norm(128, 768),
    "skip_norm rms": lambda: skip_norm(100, 1024, simplified=True),
    "unary tanh": lambda: one("Tanh", (1, 64, 65, 65)),
    "unary erf odd length": lambda: one("Erf", (1, 3, 301, 299)),
    "maxpool 3x3/2": lambda: one("MaxPool", (1, 64, 112, 112), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    "averagepool 3x3": lambda: one("AveragePool", (1, 32, 56, 57), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),
    "q8_dyn_quantize": lambda: one("DynamicQuantizeLinear", (1, 128, 3071), out_types=(U8, F, U8), outs=("Y", "S", "Z")),
    "q8_dyn_quantize NaN": lambda: one("DynamicQuantizeLinear", (1, 128, 3071), out_types=(U8, F, U8),
                                       outs=("Y", "S", "Z"), nan_at=200_000),
}


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("kernel", KERNELS)
def test_kernel_same_bits_1_and_n_threads(kernel, n):
    model, feeds = KERNELS[kernel]()
    split, _ = same_bits(kernel, model, {"": feeds}, n, runs=3)
    assert split > 0, f"{kernel} did not split"
    print(f"\n{kernel} ({n} threads): {split} split jobs in 3 runs")


def test_small_new_ops_stay_on_one_thread():
    """Under the threshold: a decode-size q4 GEMV of 256 x 256, a short softmax, a small norm."""
    no_split((nbits(1, k=256, n=256), one("Softmax", (1, 2, 64), {"axis": -1}), skip_norm(4, 64), one("Tanh", (1, 1000))))


# ---- every split kernel on the tiny zoo models: the threshold off (nnw_pool_test_split_all) ----

ZOO = ["bert_tiny", "distilbert_tiny", "gpt2_tiny", "vit_tiny", "mobilenet_v3_small", "efficientnet_b0", "unet_small",
       "audio_rnn", "bert_tiny_int8_dynamic", "mobilenet_v3_small_int8_qdq", "mobilenet_v3_small_fp16", "bert_tiny_fp16"]


def split_all_session(model, n):
    s = session(model, n)
    host_of(s).call("nnw_pool_test_split_all", 1)
    return s


@pytest.mark.parametrize("name", ZOO)
def test_zoo_every_op_split_same_bits(name):
    split, _ = same_bits(name, *zoo_model(name), 2, make=split_all_session)
    assert split > 0
    print(f"\n{name}: {split} split jobs (every op split)")


# ---- decoders: Llama int4 / fp16 / fp32, tokens and logits at every step on 1 and 2 threads ------

DECODERS = ["genai_llama_int4", "genai_llama_fp32", "llama_merged_fp16"]


def decoder_sessions(meta, n, folder, split_all):
    out = {}
    for role, r in meta["roles"].items():
        s = (split_all_session if split_all else session)(str(folder / r["file"]), n)
        out[role] = s
    return out


def same_generation(meta, folder, split_all, steps=None):
    one_t, two = decoder_sessions(meta, 1, folder, False), decoder_sessions(meta, 2, folder, split_all)
    host = host_of(two["decoder"])
    jobs = host.call("nnw_pool_jobs")
    compared = []

    def run(role, feeds):
        a = dict(zip([o.name for o in one_t[role].get_outputs()], one_t[role].run(None, feeds)))
        b = dict(zip([o.name for o in two[role].get_outputs()], two[role].run(None, feeds)))
        for k in a:
            assert a[k].dtype == b[k].dtype and a[k].tobytes() == b[k].tobytes(), f"{role} step {len(compared)}: {k}"
        compared.append(role)
        return a
    kw = {} if steps is None else {"steps": steps}
    tokens = build_genzoo.generate(meta, run, **kw)
    split = host.call("nnw_pool_jobs") - jobs
    for s in two.values():
        s.release()
    return tokens, len(compared), split


@pytest.mark.parametrize("name", DECODERS)
def test_decoder_same_tokens_and_logits_1_and_2_threads(name):
    meta = build_genzoo.load_sidecar(name)
    if meta is None:
        pytest.skip(f"the genzoo's {name} is not built in {build_genzoo.genzoo_dir()}: run `make genzoo`")
    tokens, steps, split = same_generation(meta, build_genzoo.genzoo_dir(), split_all=True)
    assert tokens == meta["reference"]["tokens"]
    assert split > 0
    print(f"\n{name}: {steps} steps bit for bit on 2 threads, {split} split jobs")


DECBENCH = "/work/cache/decbench/models"


@pytest.mark.skipif(os.environ.get("NNWASM_ZOO_ALL") != "1" or not os.path.isdir(DECBENCH),
                    reason="the bench-size decoders (bench/decoders, NNWASM_ZOO_ALL=1)")
@pytest.mark.parametrize("name", ["llama_genai_int4", "llama_genai_fp32"])
def test_bench_decoder_same_logits_1_and_2_threads(name):
    """The bench-size Llama (hidden 768): its own threshold decides what splits."""
    import json
    from pathlib import Path as P
    meta = json.loads((P(DECBENCH) / f"{name}.json").read_text())
    meta["dims"] = {d: e for i in meta["roles"]["decoder"]["inputs"] if i["past"]
                    for d, e in zip(i["shape"], i["empty"]) if isinstance(d, str)}
    tokens, steps, split = same_generation(meta, P(DECBENCH), split_all=False, steps=4)
    assert split > 0
    print(f"\n{name}: {steps} steps bit for bit on 2 threads, {split} split jobs, tokens {tokens}")
