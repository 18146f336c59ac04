"""Checking a generation run outside CPython (Node, a page) against onnxruntime run here: the
runner records every step's feeds and outputs (tests/node/genzoo-generate.mjs, packTensors), and
onnxruntime reruns each step on those same feeds; nnwasm in CPython (kernels.wasm on wasmtime)
must give the very same bits. Used by tests/test_generative.py (Node) and
tests/test_generative_page.py (Chromium)."""
import base64
import sys

import numpy as np

from conftest import ROOT

sys.path.insert(0, str(ROOT / "build_scripts"))
import build_genzoo  # noqa: E402

DTYPES = {"float32": np.float32, "int64": np.int64, "int32": np.int32, "bool": np.bool_, "float16": np.float16}


def arrays(packed):
    """{name: {type, dims, b64}} -> {name: ndarray}"""
    return {n: np.frombuffer(base64.b64decode(v["b64"]), DTYPES[v["type"]]).reshape(v["dims"])
            for n, v in packed.items()}


def check_record(meta, record, where, assert_close):
    """record: {encoder?: {feeds, outputs}, steps: [{feeds, outputs}], tokens}. Every output of every
    step agrees with onnxruntime's on the step's own feeds (assert_close: tests/test_generative.py's
    tolerance), and the tokens are onnxruntime's greedy ones."""
    ort = build_genzoo.ort_runner(build_genzoo.genzoo_dir(), {r: v["file"] for r, v in meta["roles"].items()})
    if "encoder" in meta["roles"]:
        feeds, outs = arrays(record["encoder"]["feeds"]), arrays(record["encoder"]["outputs"])
        for oname, ref in ort("encoder", feeds).items():
            assert_close(outs[oname], ref, f"{where} encoder {oname}")
    assert len(record["steps"]) == meta["steps"], f"{where}: {len(record['steps'])} steps recorded"
    for step, s in enumerate(record["steps"]):
        feeds, outs = arrays(s["feeds"]), arrays(s["outputs"])
        ref = ort("decoder", feeds)
        assert set(outs) == set(ref), f"{where} step {step}: outputs {sorted(outs)} vs {sorted(ref)}"
        for oname, want in ref.items():
            assert_close(outs[oname], want, f"{where} step {step} {oname}")
    assert record["tokens"] == meta["reference"]["tokens"], f"{where}: tokens"


def check_same_bits(record, run, where):
    """The recorded outputs are bit for bit those of run(role, feeds) on the recorded feeds (nnwasm
    in CPython on WASM alone: a plan's outputs are the same in every host)."""
    parts = ([("encoder", record["encoder"])] if "encoder" in record else []) + \
        [(f"decoder step {step}", s) for step, s in enumerate(record["steps"])]
    for what, s in parts:
        role = what.split()[0]
        ours = run(role, arrays(s["feeds"]))
        for oname, got in arrays(s["outputs"]).items():
            assert got.dtype == ours[oname].dtype and got.shape == ours[oname].shape and \
                got.tobytes() == ours[oname].tobytes(), \
                f"{where} {what} {oname}: not the bits nnwasm computes in CPython on the same feeds"
