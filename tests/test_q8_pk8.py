"""q8_gemm_pk8 on int8 weight panels (kernels_c/q8/gemm_pk8.c, wasm/lower/quant_pk8.py): the plan
compiler's packer gives ops.def's layout byte for byte (uint8 and int8 B, zero points per tensor
and per column, every k and n tail); DynamicQuantizeMatMul through it agrees with onnxruntime at
m = 1 (decode), 3, 5 and 128 (prefill), and gives the same bits on 1 and 2 threads, split. The
kernel's bits against q8_gemm_pk's: tests/kernels/test_q8_gemm_pk8.c."""
import numpy as np
import pytest
from onnx import TensorProto, helper

from nnwasm.dtypes import BY_NAME
from nnwasm.tensor import TensorData
from nnwasm.wasm.lower.quant_pk8 import pack_q8_b8
from test_threads import host_of, session
from model_builders import ort_run
from test_wasm_quant_blocks import MS, model, plan_ops


def _layout(b, zps):
    """ops.def's q8_pack_b8 bytes, by numpy"""
    k, n = b.shape
    kp, n4 = -(-k // 8) * 8, -(-n // 4) * 4
    signed = b.dtype == np.int8
    off = np.array([(128 if signed else 0) if j % 2 == 0 else (0 if signed else -128) for j in range(n4)], np.int32)
    v = np.zeros((kp, n4), np.int32)
    v[:k, :n] = b.astype(np.int32) + off[:n]
    v = v.astype(np.uint8)   # the stored bytes (even columns 0..255, odd ones as int8's bytes)
    panels = v.reshape(kp // 8, 8, n4 // 4, 2, 2).transpose(2, 0, 3, 1, 4)   # [n/4][kp/8][pair][k%8][c%2]
    zc = np.zeros(n4, np.int32)
    zc[:n] = (np.asarray(zps, np.int32) if len(zps) > 1 else np.full(n, zps[0], np.int32)) + off[:n]
    return panels.tobytes() + zc.astype("<i4").tobytes()


@pytest.mark.parametrize("k,n", [(1, 1), (7, 5), (8, 4), (13, 9), (64, 24), (250, 6), (768, 31)])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
@pytest.mark.parametrize("per_col", [False, True])
def test_pack_q8_b8_layout(k, n, dtype, per_col):
    rng = np.random.default_rng(k * n)
    b = rng.integers(np.iinfo(dtype).min, np.iinfo(dtype).max + 1, (k, n)).astype(dtype)
    zps = [int(z) for z in rng.integers(np.iinfo(dtype).min, np.iinfo(dtype).max + 1, n if per_col else 1)]
    t = TensorData(BY_NAME[np.dtype(dtype).name], (k, n), memoryview(b.tobytes()))
    got = bytes(pack_q8_b8(t, zps, k, n).data)
    assert got == _layout(b, zps)


def _dqmm(m, k, n, bdt=np.int8, seed=0):
    rng = np.random.default_rng(seed)
    b = (rng.integers(-64, 64, (k, n)) if bdt == np.int8 else rng.integers(0, 256, (k, n))).astype(bdt)
    inits = {"B": b, "bs": (rng.random(n) * 0.01 + 0.001).astype(np.float32),
             "bz": (rng.integers(-3, 3, n) if bdt == np.int8 else rng.integers(100, 140, n)).astype(bdt),
             "bias": rng.standard_normal(n).astype(np.float32)}
    a = rng.standard_normal((1, m, k)).astype(np.float32)
    node = helper.make_node("DynamicQuantizeMatMul", ["A", "B", "bs", "bz", "bias"], ["Y"], domain=MS)
    return model([node], {"A": a}, {"Y": TensorProto.FLOAT}, inits), {"A": a}


@pytest.mark.parametrize("m", [1, 3, 5, 128])
@pytest.mark.parametrize("bdt", [np.int8, np.uint8])
def test_dynamic_quantize_matmul_rows(m, bdt):
    mdl, feeds = _dqmm(m, 200, 37, bdt, seed=m)
    assert "q8_gemm_pk8" in plan_ops(mdl)
    got = session(mdl, 1).run(None, feeds)[0]
    np.testing.assert_allclose(got, ort_run(mdl, feeds)[0], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("m", [1, 2, 64])
def test_same_bits_1_and_2_threads(m):
    """Columns split in whole panels over 2 threads (GEMV: row_panels' pairs; rows: each worker
    widening into its own pack buffer): one thread's bits, and really split."""
    mdl, feeds = _dqmm(m, 768, 2050 if m == 1 else 1027, seed=m)
    one_t, two = session(mdl, 1), session(mdl, 2)
    host = host_of(two)
    jobs = host.call("nnw_pool_jobs")
    want = one_t.run(None, feeds)[0]
    for _ in range(3):
        assert two.run(None, feeds)[0].tobytes() == want.tobytes()
    assert host.call("nnw_pool_jobs") > jobs
    two.release()
