"""A session's plans share one copy of its weights in kernels.wasm's memory (wasm/weights.py): a
KV-cache decoder's prompt plan and step plan (and an If's branches) each used to hold all the
weights in their own arena, so kernels.wasm held them twice. Generation on the genzoo's decoders
in fp32, int4 (MatMulNBits), int8 (quantize_dynamic) and fp16, with the numpy fallback disabled:
the bytes kernels.wasm's allocator hands out stay below the sum of the plans' weights (each
weight is written once, into blocks the plans share), the outputs have the very bits of plans
that keep their own copies (plan.SHARE_WEIGHTS = False, as before the store) and agree with
onnxruntime, releasing the session frees everything, and a word moved into the gap between the
blocks is refused by kernels.wasm."""
import gc
import struct
import sys
from pathlib import Path

import numpy as np
import pytest

import nnwasm
from nnwasm.host import get_host
from nnwasm.wasm import plan as plan_module
from nnwasm.wasm import weights as weights_module
from nnwasm.wasm.runner import WasmRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "build_scripts"))
import build_genzoo  # noqa: E402

STEPS = 6   # the prompt, then decode steps: the past grows, arenas grow (nnw_realloc)


def _meta(name):
    meta = build_genzoo.load_sidecar(name)
    if meta is None:
        pytest.skip(f"the genzoo's {name} is not built in {build_genzoo.genzoo_dir()}: run `make genzoo`")
    return meta


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """name -> (meta, decoder path); int8: the genzoo's gpt2 through quantize_dynamic (QInt8)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic
    out = {}
    for name in ("genai_llama_fp32", "genai_llama_int4", "llama_merged", "llama_merged_fp16", "gpt2"):
        meta = build_genzoo.load_sidecar(name)
        if meta is not None:
            out[name] = (meta, build_genzoo.genzoo_dir() / meta["roles"]["decoder"]["file"])
    if "gpt2" in out:
        meta, src = out["gpt2"]
        dst = tmp_path_factory.mktemp("int8") / "gpt2_int8.onnx"
        quantize_dynamic(str(src), str(dst), weight_type=QuantType.QInt8)
        out["gpt2_int8"] = (meta, dst)
    return out


def _live_runners():
    gc.collect()
    return {id(r): r for r in gc.get_objects() if isinstance(r, WasmRunner) and r._finalizer.alive}


def _allocated(host):
    host.drain()
    return host.call("nnw_allocated_bytes") & 0xFFFFFFFF


def _generate(meta, path, share, monkeypatch):
    """(new tokens, per-step outputs, report): a session of the decoder, generation with its
    presents fed back, the allocator's bytes at each step measured from before the session."""
    monkeypatch.setattr(plan_module, "SHARE_WEIGHTS", share)
    host = get_host()
    before_runners = _live_runners()
    before = _allocated(host)
    written = weights_module.store(host).written
    so = nnwasm.SessionOptions()
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    sess = nnwasm.InferenceSession(str(path), so)
    names = [o.name for o in sess.get_outputs()]
    steps, peak = [], [0]

    def run(role, feeds):
        outs = dict(zip(names, sess.run(None, feeds)))
        peak[0] = max(peak[0], _allocated(host) - before)
        return outs
    tokens = build_genzoo.generate(meta, run, steps=STEPS, on_step=lambda k, f, o: steps.append((f, o)))
    runners = [r for k, r in _live_runners().items() if k not in before_runners]
    blocks = {id(b): b for r in runners for b in r._blocks}
    distinct = {id(d): d for r in runners for d in r._shared}
    report = {
        "peak": peak[0],
        "held": _allocated(host) - before,
        "plans": len(runners),
        "plan_weights": sum(r.plan_bytes for r in runners),   # each plan's weights, as if it held them all
        "largest_plan": max(r.plan_bytes for r in runners),
        "blocks": sum(b.size for b in blocks.values()),
        "distinct": sum(-(-weights_module._nbytes(d) // 16) * 16 for d in distinct.values()),
        "distinct_bytes": sum(weights_module._nbytes(d) for d in distinct.values()),
        "written": weights_module.store(host).written - written,
        "arenas": sum(r.held_bytes() for r in runners),
    }
    step_runner = max(runners, key=lambda r: len(r._blocks)) if share else None
    if step_runner is not None:
        report["gap_refused"] = _gap_refused(step_runner)
    del sess, run, runners, blocks, distinct, step_runner
    gc.collect()
    report["after_release"] = _allocated(host) - before
    return tokens, steps, report


def _gap_refused(r):
    """A weight's word moved into a gap between the blocks r's words address (memory inside the
    span that belongs to other allocations): (nnw_plan_check_at's status, nnw_plan_check's over
    the whole span, nnw_plan_check_at's for the words as they are); None without a gap."""
    host = r.host
    sizes = {k: weights_module._nbytes(d) for k, d in enumerate(r._shared)}
    words_of = [(i, k) for i, k, off in r._shared_words if off == 0 and sizes[k] >= 16]
    ext = sorted([(r._shift, r._shift + r._total())] + [(b.arena - r._base, b.arena - r._base + b.size)
                                                          for b in r._blocks])
    i, k = min(words_of, key=lambda ik: sizes[ik[1]])
    gap = next((-(-a_hi // 16) * 16 for (_, a_hi), (b_lo, _) in zip(ext, ext[1:])
                if b_lo - -(-a_hi // 16) * 16 >= sizes[k]), None)
    if gap is None:
        return None
    words = bytearray(r._words)
    struct.pack_into("<i", words, 4 * i, gap)
    statuses = []
    for w, extents in ((words, True), (words, False), (r._words, True)):
        p, status_at = host.call("nnw_malloc", len(w)), host.call("nnw_malloc", 4)
        try:
            host.write(p, bytes(w))
            statuses.append(host.call("nnw_plan_check_at", p, len(w), r._span, r._ext, 1 + len(r._blocks), status_at)
                            if extents else host.call("nnw_plan_check", p, len(w), r._span, status_at))
        finally:
            host.release([p, status_at])
    return tuple(statuses)


CASES = ["genai_llama_fp32", "genai_llama_int4", "llama_merged", "gpt2_int8"]


# (float16: B's panels of halves shared too; its agreement with onnxruntime: test_generative.py)
@pytest.mark.parametrize("name", CASES + ["llama_merged_fp16"])
def test_weights_once_same_bits(name, models, monkeypatch):
    if name not in models:
        pytest.skip(f"{name}: its genzoo model is not built (`make genzoo`)")
    meta, path = models[name]
    want_tokens, want_steps, old = _generate(meta, path, False, monkeypatch)
    got_tokens, got_steps, new = _generate(meta, path, True, monkeypatch)
    # the very bits of plans that keep their own copies
    assert got_tokens == want_tokens
    for (gf, go), (wf, wo) in zip(got_steps, want_steps):
        for k in wo:
            assert np.array_equal(go[k], wo[k]), f"{name}: output {k} differs with shared weights"
    # weights counted once: below the sum of the plans' weights (the bytes each would hold alone)
    assert new["plans"] >= 2, new
    assert new["peak"] < new["plan_weights"], new
    assert old["peak"] >= new["plan_weights"] - new["largest_plan"] // 8, old   # before: every plan its own copy
    assert new["peak"] < old["peak"] - new["largest_plan"] // 2, (old, new)
    # each weight written once, into blocks that hold nothing else (no plan's creation filled a
    # weight another had placed)
    # (a few bytes more: small constants of a plan built and dropped while preparing, as int8's)
    assert new["distinct_bytes"] <= new["written"] <= new["distinct_bytes"] + 4096, new
    assert new["distinct"] <= new["blocks"] <= new["distinct"] + 4096, new
    assert new["held"] <= new["blocks"] + new["arenas"] + (1 << 16), new
    # release frees the blocks with the plans
    assert new["after_release"] <= 0 and old["after_release"] <= 0, (old, new)
    # kernels.wasm refuses a weight word moved into a gap between the blocks (what a check
    # against the span alone would let through)
    assert new["gap_refused"] in (None, (6, 0, 0)), new
    print(name, "private:", old, "\nshared:", new)


@pytest.mark.parametrize("name", CASES)
def test_shared_weights_agree_with_onnxruntime(name, models, monkeypatch):
    if name not in models:
        pytest.skip(f"{name}: its genzoo model is not built (`make genzoo`)")
    import onnxruntime
    meta, path = models[name]
    tokens, steps, _ = _generate(meta, path, True, monkeypatch)
    if name != "gpt2_int8":
        assert tokens == meta["reference"]["tokens"][:STEPS]
    so = onnxruntime.SessionOptions()
    so.intra_op_num_threads = 1
    ref = onnxruntime.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    names = [o.name for o in ref.get_outputs()]
    for k, (feeds, outs) in enumerate(steps):   # the same feeds, nnwasm's past fed back to both
        want = dict(zip(names, ref.run(None, feeds)))
        got, exp = outs["logits"], want["logits"]
        tol = 0.05 * float(np.abs(exp).max()) if name == "gpt2_int8" else 1e-4 + 1e-4 * float(np.abs(exp).max())
        assert np.abs(got - exp).max() <= tol, f"{name} step {k}: logits off by {np.abs(got - exp).max()}"
