"""onnxruntime-genai's GroupQueryAttention with its cache kept on the "wasm" device and fed back (no
shared buffer): from the second decode step on, each present is its past's own block of the runner's
device region with the new rows written after the past's (lower/gqa_inplace.py, kv_append_rows),
when every batch row appends at the past's end (n_b = seqlens_k[b] + 1 - S == P, computed on the
host: wasm/kv_lengths.py). Results are ONNX's: the bits of runs with CPU outputs, onnxruntime's
tokens; a past fed twice, an older present fed again, a full block, a right-padded batch row get
a copy instead, and a seqlens_k that contradicts the past is an error naming the node."""
import gc
import struct

import numpy as np
import pytest

import nnwasm
from nnwasm.host import get_host
from nnwasm.wasm.opcodes import OPS
from nnwasm.wasm.region import RegionTensor
from nnwasm.wasm.runner import WasmRunner

from test_kv_inplace import bound, build_genzoo, host_numpy, plain, sessions, sidecar

BY_CODE = {op.code: (name, op) for name, op in OPS.items()}
GENAI = ["genai_llama_fp32", "genai_llama_int4"]


def plan_ops(runner):
    """[(kernel, {arg: value})] of the runner's run ops as its words stand (this run's dims)."""
    w = struct.unpack(f"<{len(runner._words) // 4}i", runner._words)
    at, end, out = 8 + w[5], 8 + w[5] + w[6], []
    while at < end:
        name, op = BY_CODE[w[at]]
        out.append((name, dict(zip(op.args, w[at + 2:at + 2 + w[at + 1]]))))
        at += 2 + w[at + 1]
    return out


def past_bytes_copied(runner):
    """Bytes of the past a run's kv_append / kv_append_rows copy into another block (at most its p
    rows a head: the past's length, seqlens_k's n_b <= p); 0 for a present written in its past's block."""
    total = 0
    for name, a in plan_ops(runner):
        if name in ("kv_append", "kv_append_rows") and a["past"] >= 0 and a["past"] != a["y"]:
            total += 4 * a["batch"] * a["heads"] * a["p"] * a["d"]
    return total


def kernels_of(runner):
    return {name for name, _ in plan_ops(runner)}


def runners():
    return [r for r in gc.get_objects() if isinstance(r, WasmRunner) and r._region is not None]


def decoder(meta):
    return sessions(meta)["decoder"]


def names(sess):
    return [o.name for o in sess.get_outputs()]


@pytest.mark.parametrize("name", GENAI)
def test_a_kept_cache_grows_in_place_and_keeps_the_bits(name, monkeypatch):
    """12 steps with the presents kept and fed back: from the second decode step on, no byte of the
    past is copied, neither between buffers (nnw_memmove) nor inside the plan (kv_append_rows in
    place), the host moves only the new token's feeds and the logits, each present is the past's
    block with one more row; every logit and present has the bits of the same generation with CPU
    outputs, whose tokens are onnxruntime's."""
    meta = sidecar(name)
    steps = 12
    want_steps, got_steps = [], []
    want = build_genzoo.generate(meta, plain(sessions(meta)), steps=steps, on_step=lambda k, f, o: want_steps.append(o))
    theirs = build_genzoo.ort_runner(build_genzoo.genzoo_dir(), {"decoder": meta["roles"]["decoder"]["file"]})
    assert want == build_genzoo.generate(meta, theirs, steps=steps)
    assert want[:len(meta["reference"]["tokens"])] == meta["reference"]["tokens"]
    sess = sessions(meta)
    host = get_host()
    moved = {"memmove": 0, "write": 0, "read": 0}
    call, write, read = host.call, host.write, host.read
    words = set()
    growing = []   # the region's growth moves its blocks (by doubling: a few steps in many)
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
    monkeypatch.setattr(host, "write", lambda p, d: (p in words or moved.__setitem__(
        "write", moved["write"] + memoryview(d).nbytes)) and None or write(p, d))
    monkeypatch.setattr(host, "read", lambda p, n: moved.__setitem__("read", moved["read"] + n) or read(p, n))
    ran = []
    run_plan = WasmRunner.run
    monkeypatch.setattr(WasmRunner, "run", lambda self, *a, **k: ran.append(self) or run_plan(self, *a, **k))
    run = bound(sess, meta)
    per_step = []

    def step(role, feeds):
        words.update(r.plan for r in runners())
        for k in moved:
            moved[k] = 0
        ran.clear()
        outs = run(role, feeds)
        host_in = sum(v.nbytes for v in feeds.values() if isinstance(v, np.ndarray))
        copied = sum(past_bytes_copied(r) for r in ran if r._region is not None)
        appends = set().union(*(kernels_of(r) for r in ran if r._region is not None))
        per_step.append((dict(moved), host_in, outs["logits"].nbytes, copied, appends, feeds, outs))
        return outs
    got = build_genzoo.generate(meta, step, steps=steps, on_step=lambda k, f, o: got_steps.append(host_numpy(o)))
    assert got == want
    assert per_step[1][3] > 0   # the first decode step brings the cache into a block with room: one copy
    for k, (m, host_in, logits, copied, appends, feeds, outs) in enumerate(per_step[2:], 2):
        assert "kv_append_rows" in appends, (k, appends)
        assert m["memmove"] == 0, (k, m)
        assert host_in <= m["write"] <= host_in + 64, (k, m, host_in)
        assert m["read"] == logits, (k, m, logits)
        assert copied == 0, (k, copied)
        for p_name, past in feeds.items():
            if not isinstance(past, nnwasm.OrtValue):
                continue
            present = outs[p_name.replace("past_key_values", "present")]._value
            assert isinstance(present, RegionTensor) and present.cap is not None
            assert present.ptr == past._value.ptr and present.shape[2] == past._value.shape[2] + 1
    for k, (g, w) in enumerate(zip(got_steps, want_steps)):
        for key in w:
            np.testing.assert_array_equal(g[key], w[key], err_msg=f"{name} step {k} {key}")


@pytest.mark.parametrize("name", GENAI)
def test_agrees_with_onnxruntime(name):
    """The kept cache appended in place gives onnxruntime's logits and presents (its own kernels,
    within float tolerance) at every step."""
    pytest.importorskip("onnxruntime")
    meta = sidecar(name)
    theirs = build_genzoo.ort_runner(build_genzoo.genzoo_dir(), {"decoder": meta["roles"]["decoder"]["file"]})
    mine = bound(sessions(meta), meta)
    seen = []

    def step(role, feeds):
        outs = mine(role, feeds)
        seen.append((host_numpy(outs), theirs(role, host_numpy(feeds))))
        return outs
    build_genzoo.generate(meta, step, steps=12)
    for k, (g, w) in enumerate(seen):
        for key in w:
            np.testing.assert_allclose(g[key], w[key], rtol=1e-4, atol=1e-4, err_msg=f"{name} step {k} {key}")


def _feeds(past, tokens, masks):
    """A decode step's feeds: the last token of each row of `tokens`, attention masks `masks`."""
    return {"input_ids": np.array(tokens, np.int64), "attention_mask": np.array(masks, np.int64), **past}


def _run(sess, feeds, keep=True):
    b = sess.io_binding()
    for k, v in feeds.items():
        (b.bind_ortvalue_input if isinstance(v, nnwasm.OrtValue) else b.bind_cpu_input)(k, v)
    outs = names(sess)
    for o in outs:
        b.bind_output(o, "wasm" if keep and o.startswith("present") else "cpu")
    sess.run_with_iobinding(b)
    return dict(zip(outs, b.get_outputs()))


def _host_run(sess, feeds):
    host = {k: v.numpy() if isinstance(v, nnwasm.OrtValue) else v for k, v in feeds.items()}
    return dict(zip(names(sess), sess.run(None, host)))


def _as_past(meta, outs):
    return {p: outs[o] for o, p in meta["past_map"].items()}


def _ones(n):
    return [[1] * n]


@pytest.mark.parametrize("name", GENAI)
def test_a_past_fed_twice_and_an_old_present_kept_stay_right(name):
    """Copy on conflict: the same kept past fed twice (two branches from one cache) gives two
    presents whose new rows are each their own, the past still reads as it was, and an older
    present kept while later steps grow the cache reads as it was and is right fed back."""
    meta = sidecar(name)
    sess, ref = decoder(meta), decoder(meta)
    seen = []
    new = build_genzoo.generate(meta, bound({"decoder": sess}, meta), steps=4, on_step=lambda k, f, o: seen.append(o))
    past, tokens = _as_past(meta, seen[-1]), list(build_genzoo.PROMPT) + new
    kept = {k: v.numpy().copy() for k, v in past.items()}
    n = next(iter(kept.values())).shape[2]
    a = _run(sess, _feeds(past, [[11]], _ones(n + 1)))
    b = _run(sess, _feeds(past, [[23]], _ones(n + 1)))
    for tok, got in ((11, a), (23, b)):
        want = _host_run(ref, _feeds(kept, [[tok]], _ones(n + 1)))
        for k, v in got.items():
            np.testing.assert_array_equal(v.numpy(), want[k], err_msg=f"token {tok} {k}")
    a_kept = {k: v.numpy().copy() for k, v in a.items() if k.startswith("present")}
    later, toks = _as_past(meta, b), [23]
    for i in range(4):
        o = _run(sess, _feeds(later, [toks[-1:]], _ones(n + 2 + i)))
        later = _as_past(meta, o)
        toks.append(int(o["logits"].numpy()[0, -1].argmax()))
    for k, v in past.items():
        np.testing.assert_array_equal(v.numpy(), kept[k], err_msg=k)
    for k, v in a_kept.items():
        np.testing.assert_array_equal(a[k].numpy(), v, err_msg=k)
    o = _run(sess, _feeds(_as_past(meta, a), [[5]], _ones(n + 2)))
    want = _host_run(ref, _feeds({p: a_kept[o_] for o_, p in meta["past_map"].items()}, [[5]], _ones(n + 2)))
    for k in want:
        np.testing.assert_array_equal(o[k].numpy(), want[k], err_msg=k)


def _random_past(meta, sess, batch, rows, seed):
    ins = {i.name: i for i in sess.get_inputs()}
    rng = np.random.default_rng(seed)
    return {p: rng.standard_normal((batch, ins[p].shape[1], rows, meta["dims"]["kv_cache_dim"])).astype(np.float32)
            for p in meta["past_map"].values()}


def test_the_cache_grows_past_its_capacity():
    """Past a block's capacity the cache moves once to a block twice as large (one copy), and the
    bits stay those of CPU outputs."""
    meta = sidecar("genai_llama_fp32")
    sess, ref = decoder(meta), decoder(meta)
    host_past = _random_past(meta, sess, 1, 60, 1)
    past, tok, caps, ptrs = dict(host_past), 7, [], []
    pk = next(iter(host_past))
    for i in range(10):
        feeds = _feeds(past, [[tok]], _ones(60 + i + 1))
        outs = _run(sess, feeds)
        want = _host_run(ref, _feeds(host_past, [[tok]], _ones(60 + i + 1)))
        for k, v in outs.items():
            np.testing.assert_array_equal(v.numpy(), want[k], err_msg=f"step {i} {k}")
        past = _as_past(meta, outs)
        host_past = {p: want[o] for o, p in meta["past_map"].items()}
        caps.append(past[pk]._value.rows)
        ptrs.append(past[pk]._value.ptr)
        tok = int(want["logits"][0, -1].argmax())
    assert caps == [64] * 4 + [128] * 6, caps
    assert len(set(ptrs[:4])) == 1 and len(set(ptrs[4:])) == 1 and ptrs[3] != ptrs[4], ptrs


def test_a_right_padded_batch_row_is_copied_and_agrees_with_onnxruntime():
    """A batch of 2 whose second row is right-padded (its real length 2 short of the cache's, so
    n_b < P): the present goes into a new block each step (the padded row's new key must not land
    on the past's rows), with the bits of CPU outputs and onnxruntime's values on every row's
    real rows."""
    ort = pytest.importorskip("onnxruntime")
    meta = sidecar("genai_llama_fp32")
    sess, ref = decoder(meta), decoder(meta)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    theirs = ort.InferenceSession(str(build_genzoo.genzoo_dir() / meta["roles"]["decoder"]["file"]), so,
                                  providers=["CPUExecutionProvider"])
    p0 = 9
    host_past = _random_past(meta, sess, 2, p0, 2)
    past, toks = dict(host_past), [[3], [17]]
    for i in range(5):
        total = p0 + i + 1
        masks = [[1] * total, [1] * (total - 2) + [0, 0]]
        feeds = _feeds(past, toks, masks)
        outs = _run(sess, feeds)
        want = _host_run(ref, _feeds(host_past, toks, masks))
        t_out = dict(zip(names(sess), theirs.run(None, _feeds(host_past, toks, masks))))
        for k, v in outs.items():
            got = v.numpy()
            np.testing.assert_array_equal(got, want[k], err_msg=f"step {i} {k}")
            if k == "logits":
                np.testing.assert_allclose(got, t_out[k], rtol=1e-4, atol=1e-4, err_msg=f"step {i} {k}")
            else:   # the rows each batch row holds: its real ones (onnxruntime leaves the others unset)
                for row, n in enumerate((total, total - 2)):
                    np.testing.assert_allclose(got[row, :, :n], t_out[k][row, :, :n], rtol=1e-4, atol=1e-4,
                                               err_msg=f"step {i} {k} row {row}")
            if i and k.startswith("present"):   # never in the past's block: the padded row writes before its end
                assert v._value.ptr != feeds[k.replace("present", "past_key_values")]._value.ptr, (i, k)
        past = _as_past(meta, outs)
        host_past = {p: want[o] for o, p in meta["past_map"].items()}
        toks = [[int(want["logits"][r, -1].argmax())] for r in range(2)]


def test_a_seqlens_k_that_contradicts_the_past_is_refused_and_the_session_survives():
    """An attention mask saying the past is longer than the cache fed (seqlens_k + 1 - S > P, but
    within the cache's block: rows no tensor holds) stops the run with an error naming the node;
    the session then runs the right feeds with the bits of a plain run."""
    meta = sidecar("genai_llama_fp32")
    sess, ref = decoder(meta), decoder(meta)
    seen = []
    build_genzoo.generate(meta, bound({"decoder": sess}, meta), steps=4, on_step=lambda k, f, o: seen.append(o))
    past = _as_past(meta, seen[-1])
    n = next(iter(past.values())).shape()[2]
    assert next(iter(past.values()))._value.rows > n + 3   # the block has the rows the mask claims
    with pytest.raises(nnwasm.InvalidArgument, match=r"GroupQueryAttention node '[^']+'.*seqlens_k"):
        _run(sess, _feeds(past, [[7]], _ones(n + 4)))
    got = _run(sess, _feeds(past, [[7]], _ones(n + 1)))
    want = _host_run(ref, _feeds({k: v.numpy() for k, v in past.items()}, [[7]], _ones(n + 1)))
    for k in want:
        np.testing.assert_array_equal(got[k].numpy(), want[k], err_msg=k)


def test_kept_presents_and_a_shared_buffer_in_one_session():
    """The same session serves a kept cache (appended in its block), then onnxruntime-genai's
    shared past/present buffer (a max-length past bound as the present: written in place with the
    rows past the length left), then the kept cache again, each with the bits of plain runs; the
    shared buffer's last step (its total length at the buffer's) runs the very plan of the kept
    steps."""
    meta = sidecar("genai_llama_fp32")
    sess, ref = decoder(meta), decoder(meta)
    pk = list(meta["past_map"].values())
    ran = []
    run_plan = WasmRunner.run

    def kept_steps(past, host_past, tok, n, count):
        for _ in range(count):
            ran.clear()
            outs = _run(sess, _feeds(past, [[tok]], _ones(n + 1)))
            want = _host_run(ref, _feeds(host_past, [[tok]], _ones(n + 1)))
            for k in want:
                np.testing.assert_array_equal(outs[k].numpy(), want[k], err_msg=k)
            past, n = _as_past(meta, outs), n + 1
            host_past = {p: want[o] for o, p in meta["past_map"].items()}
            tok = int(want["logits"][0, -1].argmax())
        return past, host_past, tok, n, set(ran)

    WasmRunner.run = lambda self, *a, **k: ran.append(self) or run_plan(self, *a, **k)
    try:
        host_past = _random_past(meta, sess, 1, 6, 3)
        _, _, tok, _, kept_runners = kept_steps(dict(host_past), host_past, 7, 6, 4)
        # the shared buffer: 16 rows, the first 12 real, the present bound to the past's OrtValue
        max_len, real = 16, 12
        buf = _random_past(meta, sess, 1, max_len, 4)
        first = _run(sess, _feeds({k: v for k, v in buf.items()}, [[tok]], _ones(real + 1)))
        shared = {p: first[o] for o, p in meta["past_map"].items()}
        host_buf = {p: first[o].numpy() for o, p in meta["past_map"].items()}
        shared_runners = set()
        for total in range(real + 2, max_len + 1):
            ran.clear()
            b = sess.io_binding()
            b.bind_cpu_input("input_ids", np.array([[tok]], np.int64))
            b.bind_cpu_input("attention_mask", np.ones((1, total), np.int64))
            for k in pk:
                b.bind_ortvalue_input(k, shared[k])
                b.bind_ortvalue_output(k.replace("past_key_values", "present"), shared[k])
            b.bind_output("logits")
            sess.run_with_iobinding(b)
            shared_runners |= set(ran)
            got = dict(zip([k.replace("past_key_values", "present") for k in pk] + ["logits"], b.get_outputs()))
            want = _host_run(ref, _feeds(host_buf, [[tok]], _ones(total)))
            for o, p in meta["past_map"].items():
                assert got[o] is shared[p]
                np.testing.assert_array_equal(got[o].numpy(), want[o], err_msg=f"total {total} {o}")
            np.testing.assert_array_equal(got["logits"].numpy(), want["logits"], err_msg=f"total {total}")
            host_buf = {p: want[o] for o, p in meta["past_map"].items()}
            tok = int(want["logits"][0, -1].argmax())
        assert kept_runners & shared_runners, "the shared buffer's last step ran another plan than the kept steps"
        # and kept again, from a host past
        kept_steps(dict(host_buf), host_buf, tok, max_len, 3)
    finally:
        WasmRunner.run = run_plan
