"""A KV cache kept in kernels.wasm's memory is read and written in place (wasm/region.py): bound to
the "wasm" device with IOBinding and fed back, a decoder's past is neither copied into the arena
nor its present out of it. Generation that way gives the very bits of plain runs, and a step
moves only the new token's feeds and the logits between the host and the plans."""
import gc
import sys
from pathlib import Path

import numpy as np
import pytest

import nnwasm
from nnwasm.host import get_host
from nnwasm.wasm import device
from nnwasm.wasm.region import RegionTensor
from nnwasm.wasm.runner import WasmRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "build_scripts"))
import build_genzoo  # noqa: E402

MODELS = ["gpt2", "gpt2_merged", "llama_merged", "qwen2", "genai_llama_fp32", "genai_llama_int4", "whisper_merged"]


def sidecar(name):
    meta = build_genzoo.load_sidecar(name)
    if meta is None:
        pytest.skip(f"the genzoo's {name} is not built in {build_genzoo.genzoo_dir()}: run `make genzoo`")
    return meta


def sessions(meta):
    so = nnwasm.SessionOptions()
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    return {role: nnwasm.InferenceSession(str(build_genzoo.genzoo_dir() / r["file"]), so)
            for role, r in meta["roles"].items()}


def plain(sess):
    def run(role, feeds):
        s = sess[role]
        return dict(zip([o.name for o in s.get_outputs()], s.run(None, feeds)))
    return run


def bound(sess, meta):
    """run(role, feeds) through IOBinding: the decoder's presents on the "wasm" device, fed back as
    OrtValues (generate() passes them on as the next step's past)."""
    presents = set(meta["past_map"])

    def run(role, feeds):
        s = sess[role]
        b = s.io_binding()
        for k, v in feeds.items():
            if isinstance(v, nnwasm.OrtValue):
                b.bind_ortvalue_input(k, v)
            else:
                b.bind_cpu_input(k, v)
        names = [o.name for o in s.get_outputs()]
        for o in names:
            b.bind_output(o, "wasm" if role == "decoder" and o in presents else "cpu")
        s.run_with_iobinding(b)
        return {o: (v if o in presents and role == "decoder" else v.numpy())
                for o, v in zip(names, b.get_outputs())}
    return run


def host_numpy(outs):
    return {k: v.numpy() if isinstance(v, nnwasm.OrtValue) else v for k, v in outs.items()}


@pytest.mark.parametrize("name", MODELS)
def test_generation_with_the_cache_in_place_is_bit_identical(name):
    meta = sidecar(name)
    want_steps = []
    want = build_genzoo.generate(meta, plain(sessions(meta)), on_step=lambda k, f, o: want_steps.append(o))
    got_steps = []
    got = build_genzoo.generate(meta, bound(sessions(meta), meta),
                                on_step=lambda k, f, o: got_steps.append(host_numpy(o)))
    assert got == want == meta["reference"]["tokens"]
    for step, (g, w) in enumerate(zip(got_steps, want_steps)):
        for k in w:
            if ".encoder." in k and step:   # a merged decoder's dummy cross-attention present
                continue
            np.testing.assert_array_equal(g[k], w[k], err_msg=f"{name} step {step} {k}")


@pytest.mark.parametrize("name", ["llama_merged", "genai_llama_fp32"])
def test_a_step_moves_no_past(name, monkeypatch):
    """From the second step on, the past comes from the region and the present stays there: no
    nnw_memmove but an allocation's growth (by half at least, so a few steps in many), host
    writes only the new token's feeds, host reads only the logits."""
    meta = sidecar(name)
    sess = sessions(meta)
    host = get_host()
    moved = {"memmove": 0, "write": 0, "read": 0}
    call, write, read = host.call, host.write, host.read
    plans = set()   # the runners' op words and extents, rewritten per step (the new dims): not tensor bytes

    growing = []
    realloc = WasmRunner._realloc

    def counting_realloc(self, *args):
        growing.append(1)
        try:
            return realloc(self, *args)
        finally:
            growing.pop()
    monkeypatch.setattr(WasmRunner, "_realloc", counting_realloc)

    def counting_call(fn, *args):
        if fn == "nnw_memmove" and not growing:
            moved["memmove"] += args[2]
        return call(fn, *args)
    monkeypatch.setattr(host, "call", counting_call)
    def counting_write(p, d):
        if p not in plans:
            moved["write"] += memoryview(d).nbytes
        return write(p, d)
    monkeypatch.setattr(host, "write", counting_write)
    monkeypatch.setattr(host, "read", lambda p, n: moved.__setitem__("read", moved["read"] + n) or read(p, n))
    run = bound(sess, meta)
    per_step = []

    def step(role, feeds):
        plans.update(p for r in gc.get_objects() if isinstance(r, WasmRunner) for p in (r.plan, r._ext))
        for k in moved:
            moved[k] = 0
        outs = run(role, feeds)
        past = sum(v._value.nbytes for k, v in feeds.items() if isinstance(v, nnwasm.OrtValue))
        host_in = sum(v.nbytes for v in feeds.values() if isinstance(v, np.ndarray))
        per_step.append((dict(moved), past, host_in, outs["logits"].nbytes))
        return outs
    build_genzoo.generate(meta, step, steps=8)
    for k, (m, past, host_in, logits) in enumerate(per_step[2:], 2):
        assert past > 0
        assert m["memmove"] == 0, (k, m)
        # the feeds, and the few words of data the plans compute from the dims (sym_fills)
        assert host_in <= m["write"] <= host_in + 64, (k, m, host_in)
        assert m["read"] == logits, (k, m, logits)


def test_region_tensors_follow_growth_and_survive_the_session():
    """Many steps grow the region (the allocation moves; kept tensors follow); a kept tensor reads
    as its exact bytes after its session is gone."""
    meta = sidecar("gpt2")
    sess = sessions(meta)
    run = bound(sess, meta)
    seen = []
    build_genzoo.generate(meta, run, steps=12, on_step=lambda k, f, o: seen.append(o))
    last = seen[-1]
    kept = {k: v for k, v in last.items() if isinstance(v, nnwasm.OrtValue)}
    assert kept and all(isinstance(v._value, RegionTensor) for v in kept.values())
    before = {k: v.numpy().copy() for k, v in kept.items()}
    runners = {id(v._value._runner): v._value._runner for v in kept.values()}
    for r in runners.values():
        r.close()
    for k, v in kept.items():
        np.testing.assert_array_equal(v.numpy(), before[k])
        assert v._value.ptr and isinstance(v._value, device.WasmTensor)


@pytest.mark.parametrize("name", ["gpt2", "genai_llama_fp32"])
def test_a_wrong_length_cache_fed_back_is_refused_and_the_session_survives(name):
    meta = sidecar(name)
    sess = sessions(meta)
    run = bound(sess, meta)
    feeds_seen, outs_seen = [], []
    build_genzoo.generate(meta, lambda role, feeds: feeds_seen.append(dict(feeds)) or run(role, feeds), steps=3,
                          on_step=lambda k, f, o: outs_seen.append(o))
    feeds = feeds_seen[2]
    past = [n for n in feeds if n.startswith("past_key_values")]
    # one layer's cache from an earlier step (one token shorter) with the others of this one
    stale = feeds_seen[1][past[0]]
    with pytest.raises(nnwasm.InvalidArgument, match=r"node '[^']+'|'" + past[0] + "'"):
        run("decoder", {**feeds, past[0]: stale})
    # the whole cache fed back a step late: longer than the attention mask says (GroupQueryAttention
    # takes a past longer than seqlens_k, as onnxruntime does: a buffer shared with present)
    if not name.startswith("genai"):
        late = {p: outs_seen[2][o] for o, p in meta["past_map"].items()}
        with pytest.raises(nnwasm.InvalidArgument, match=r"node '[^']+'"):
            run("decoder", {**feeds, **late})
    got = host_numpy(run("decoder", feeds))
    want = plain(sessions(meta))("decoder", host_numpy(feeds))
    for k in want:
        np.testing.assert_array_equal(got[k], want[k], err_msg=k)


@pytest.mark.parametrize("name", ["genai_llama_fp32", "genai_llama_int4"])
def test_a_shared_past_present_buffer_grows_in_place(name, monkeypatch):
    """onnxruntime-genai's way (GroupQueryAttention's past_present_share_buffer): the past is a
    max-length buffer, the present bound to the same OrtValue, the attention mask giving the real
    length. From step 1 on, each present is the past's very buffer with the new row written in
    it: no memmove, no new buffer; outputs are the bits of plain runs on host arrays (onnxruntime's
    semantics: a present as long as the past, rows past the length untouched)."""
    meta = sidecar(name)
    sess = sessions(meta)["decoder"]
    ref = sessions(meta)["decoder"]
    ins = {i.name: i for i in sess.get_inputs()}
    outs = [o.name for o in sess.get_outputs()]
    pk = [k for k in ins if k.startswith("past_key_values")]
    heads, size, max_len = ins[pk[0]].shape[1], meta["dims"]["kv_cache_dim"], 16
    tokens = list(build_genzoo.PROMPT)
    host_past = {k: np.zeros((1, heads, max_len, size), np.float32) for k in pk}
    bound_past = dict(host_past)
    host = get_host()
    call = host.call
    moved = []
    monkeypatch.setattr(host, "call", lambda fn, *a: (fn == "nnw_memmove" and moved.append(a[2])) or call(fn, *a))
    for step in range(6):
        ids = tokens if step == 0 else tokens[-1:]
        feeds = {"input_ids": np.array([ids], np.int64), "attention_mask": np.ones((1, len(tokens)), np.int64)}
        want = dict(zip(outs, ref.run(None, {**feeds, **host_past})))
        b = sess.io_binding()
        for k, v in feeds.items():
            b.bind_cpu_input(k, v)
        for k in pk:
            present = k.replace("past_key_values", "present")
            if step == 0:
                b.bind_cpu_input(k, bound_past[k])
                b.bind_output(present, "wasm")
            else:
                b.bind_ortvalue_input(k, bound_past[k])
                b.bind_ortvalue_output(present, bound_past[k])
        b.bind_output("logits")
        moved.clear()
        sess.run_with_iobinding(b)
        got = dict(zip([*[k.replace("past_key_values", "present") for k in pk], "logits"], b.get_outputs()))
        np.testing.assert_array_equal(got["logits"].numpy(), want["logits"], err_msg=f"step {step}")
        for k in pk:
            present = k.replace("past_key_values", "present")
            assert got[present].device_name() == "wasm"
            if step:
                assert got[present] is bound_past[k]
                assert isinstance(got[present]._value, RegionTensor)
            np.testing.assert_array_equal(got[present].numpy(), want[present], err_msg=f"step {step} {present}")
            bound_past[k] = got[present]
        if step >= 2:
            assert moved == [], (step, moved)
        host_past = {k: want[k.replace("past_key_values", "present")] for k in pk}
        tokens.append(int(want["logits"][0, -1].argmax()))


def test_the_shared_buffer_agrees_with_onnxruntimes():
    """The same shared-buffer generation in onnxruntime (its IOBinding, past and present bound to one
    OrtValue: GroupQueryAttention's past_present_share_buffer) gives the same tokens and close
    logits and caches."""
    ort = pytest.importorskip("onnxruntime")
    meta = sidecar("genai_llama_fp32")
    path = str(build_genzoo.genzoo_dir() / meta["roles"]["decoder"]["file"])
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    theirs = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    ours = sessions(meta)["decoder"]
    pk = [i.name for i in ours.get_inputs() if i.name.startswith("past_key_values")]
    heads = [i for i in ours.get_inputs() if i.name == pk[0]][0].shape[1]
    shape = (1, heads, 16, meta["dims"]["kv_cache_dim"])
    t_past = {k: ort.OrtValue.ortvalue_from_numpy(np.zeros(shape, np.float32)) for k in pk}
    o_past = {k: np.zeros(shape, np.float32) for k in pk}
    tokens = list(build_genzoo.PROMPT)
    for step in range(5):
        ids = tokens if step == 0 else tokens[-1:]
        feeds = {"input_ids": np.array([ids], np.int64), "attention_mask": np.ones((1, len(tokens)), np.int64)}
        tb, ob = theirs.io_binding(), ours.io_binding()
        for k, v in feeds.items():
            tb.bind_cpu_input(k, v)
            ob.bind_cpu_input(k, v)
        for k in pk:
            present = k.replace("past_key_values", "present")
            tb.bind_ortvalue_input(k, t_past[k])
            tb.bind_ortvalue_output(present, t_past[k])
            if step == 0:
                ob.bind_cpu_input(k, o_past[k])
                ob.bind_output(present, "wasm")
            else:
                ob.bind_ortvalue_input(k, o_past[k])
                ob.bind_ortvalue_output(present, o_past[k])
        tb.bind_output("logits")
        ob.bind_output("logits")
        theirs.run_with_iobinding(tb)
        ours.run_with_iobinding(ob)
        t_logits = tb.get_outputs()[-1].numpy()
        got = dict(zip([*[k.replace("past_key_values", "present") for k in pk], "logits"], ob.get_outputs()))
        np.testing.assert_allclose(got["logits"].numpy(), t_logits, rtol=1e-3, atol=1e-4, err_msg=f"step {step}")
        for k in pk:
            o_past[k] = got[k.replace("past_key_values", "present")]
            np.testing.assert_allclose(o_past[k].numpy(), t_past[k].numpy(), rtol=1e-3, atol=1e-4,
                                       err_msg=f"step {step} {k}")
        assert int(got["logits"].numpy()[0, -1].argmax()) == int(t_logits[0, -1].argmax())
        tokens.append(int(t_logits[0, -1].argmax()))


def test_a_shared_buffer_of_the_wrong_shape_is_refused_and_the_session_survives():
    """A present bound to a wasm OrtValue that is not of its shape (a cache of another length) is an
    error naming the output, nothing written; the session then runs the good binding."""
    meta = sidecar("genai_llama_fp32")
    sess = sessions(meta)["decoder"]
    pk = [i.name for i in sess.get_inputs() if i.name.startswith("past_key_values")]
    heads = [i for i in sess.get_inputs() if i.name == pk[0]][0].shape[1]
    size, prompt = meta["dims"]["kv_cache_dim"], list(build_genzoo.PROMPT)

    def step(past, ids, total, into=None):
        b = sess.io_binding()
        b.bind_cpu_input("input_ids", np.array([ids], np.int64))
        b.bind_cpu_input("attention_mask", np.ones((1, total), np.int64))
        for k in pk:
            present = k.replace("past_key_values", "present")
            if isinstance(past[k], nnwasm.OrtValue):
                b.bind_ortvalue_input(k, past[k])
            else:
                b.bind_cpu_input(k, past[k])
            if into is None:
                b.bind_output(present, "wasm")
            else:
                b.bind_ortvalue_output(present, into[k])
        b.bind_output("logits")
        sess.run_with_iobinding(b)
        return dict(zip([*pk, "logits"], b.get_outputs()))
    short = step({k: np.zeros((1, heads, 0, size), np.float32) for k in pk}, prompt, len(prompt))   # length 5
    full = step({k: np.zeros((1, heads, 16, size), np.float32) for k in pk}, prompt, len(prompt))   # length 16
    before = full[pk[0]].numpy().copy()
    with pytest.raises(nnwasm.InvalidArgument, match="present.0.key"):
        step({k: full[k] for k in pk}, [7], len(prompt) + 1, into={k: short[k] for k in pk})
    np.testing.assert_array_equal(full[pk[0]].numpy(), before)
    got = step({k: full[k] for k in pk}, [7], len(prompt) + 1, into={k: full[k] for k in pk})
    want = dict(zip([o.name for o in sess.get_outputs()],
                    sess.run(None, {"input_ids": np.array([[7]], np.int64),
                                    "attention_mask": np.ones((1, len(prompt) + 1), np.int64),
                                    **{k: v for k, v in zip(pk, [before] + [full[k].numpy() for k in pk[1:]])}})))
    np.testing.assert_array_equal(got["logits"].numpy(), want["logits"])
