"""Optimum's decoders write present = Concat(past, new, axis=2): with the cache kept on the "wasm"
device and fed back, a decode step writes only the new rows, into the past's own block of the
runner's device region (lower/attention_concat.py, wasm/region.py: a block with a row capacity),
and the attention reads the cache where it is. Results are ONNX's: the very bits of runs with CPU
outputs, onnxruntime's tokens; a past fed twice, or an older present kept and read later, is copied
rather than overwritten."""
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
DECODERS = ["llama_merged", "gpt2_merged", "qwen2", "gpt2"]   # qwen2, gpt2: torch's sdpa form


def plan_ops(runner):
    """[(kernel, {arg: value})] of the runner's run ops as its words stand (this run's dims)."""
    w = struct.unpack(f"<{len(runner._words) // 4}i", runner._words)
    at, end, out = 8 + w[5], 8 + w[5] + w[6], []   # after the header and the init ops' words
    while at < end:
        name, op = BY_CODE[w[at]]
        out.append((name, dict(zip(op.args, w[at + 2:at + 2 + w[at + 1]]))))
        at += 2 + w[at + 1]
    return out


def cache_bytes_copied(runner):
    """Bytes the runner's plan copies from its device region (the cache) inside kernels.wasm: a
    kv_append's past rows when it is not the present's own block, and any copy or transpose that
    reads a block of the region (a Concat's, a repeat_kv's or a transpose of the cache)."""
    region, total = runner._region, 0
    blocks = [(region.base + start, region.base + start + region.blocks.get(start, 0))
              for name, start in runner._bound[3] if name.startswith(("past_key_values", "present"))]

    def in_cache(off):
        return any(lo <= off < hi for lo, hi in blocks)
    for name, a in plan_ops(runner):
        if name == "kv_append" and a["past"] >= 0 and a["past"] != a["y"]:
            n = a["lens_add"] if a["lens"] >= 0 else a["p"]
            total += 4 * a["batch"] * a["heads"] * n * a["d"]
        elif name == "copy2d" and in_cache(a["src"]):
            total += a["rows"] * a["row_bytes"]
        elif name == "transpose" and in_cache(a["x"]):
            total += a["esize"] * int(np.prod([a[f"d{i}"] for i in range(6)]))
    return total


def runners():
    return [r for r in gc.get_objects() if isinstance(r, WasmRunner) and r._region is not None]


@pytest.mark.parametrize("name", DECODERS)
def test_a_kept_cache_grows_in_place_and_keeps_the_bits(name, monkeypatch):
    """12 steps with the presents kept and fed back: from the second decode step on, no byte of the
    past is copied, neither between buffers (nnw_memmove) nor inside the plan, the host moves only
    the new token's feeds and the logits, each present is the past's block grown by one row; and
    every logit and present has the bits of the same generation with CPU outputs, whose tokens
    are onnxruntime's."""
    meta = sidecar(name)
    steps = 12
    want_steps, got_steps = [], []
    want = build_genzoo.generate(meta, plain(sessions(meta)), steps=steps,
                                 on_step=lambda k, f, o: want_steps.append(o))
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
        copied = sum(cache_bytes_copied(r) for r in ran if r._region is not None)
        per_step.append((dict(moved), host_in, outs["logits"].nbytes, copied, feeds, outs))
        return outs
    got = build_genzoo.generate(meta, step, steps=steps, on_step=lambda k, f, o: got_steps.append(host_numpy(o)))
    assert got == want
    for k, (m, host_in, logits, copied, feeds, outs) in enumerate(per_step[2:], 2):
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


@pytest.mark.parametrize("name", DECODERS)
def test_agrees_with_onnxruntime(name):
    """The fused attention over the kept cache gives onnxruntime's logits (its own kernels, within
    float tolerance) at every step, with the cache fed back from kernels.wasm's memory."""
    ort = pytest.importorskip("onnxruntime")
    meta = sidecar(name)
    theirs = build_genzoo.ort_runner(build_genzoo.genzoo_dir(), {"decoder": meta["roles"]["decoder"]["file"]})
    mine = bound(sessions(meta), meta)
    seen = []

    def step(role, feeds):
        outs = mine(role, feeds)
        ref = theirs(role, host_numpy(feeds))
        seen.append((host_numpy(outs), ref))
        return outs
    build_genzoo.generate(meta, step, steps=10)
    for k, (g, w) in enumerate(seen):
        for key in w:
            np.testing.assert_allclose(g[key], w[key], rtol=1e-4, atol=1e-4, err_msg=f"{name} step {k} {key}")
    _ = ort


def _step(sess, meta, past, tokens, keep=True):
    """One decode step of the last token on `past` ({past name: OrtValue or array}); the outputs."""
    ins = {i.name for i in sess.get_inputs()}
    n = next(iter(past.values()))
    n = (n.shape() if isinstance(n, nnwasm.OrtValue) else n.shape)[2]
    b = sess.io_binding()
    b.bind_cpu_input("input_ids", np.array([tokens[-1:]], np.int64))
    b.bind_cpu_input("attention_mask", np.ones((1, n + 1), np.int64))
    if "position_ids" in ins:
        b.bind_cpu_input("position_ids", np.array([[n]], np.int64))
    if "use_cache_branch" in ins:
        b.bind_cpu_input("use_cache_branch", np.array([True]))
    for k, v in past.items():
        (b.bind_ortvalue_input if isinstance(v, nnwasm.OrtValue) else b.bind_cpu_input)(k, v)
    names = [o.name for o in sess.get_outputs()]
    for o in names:
        b.bind_output(o, "wasm" if keep and o.startswith("present") else "cpu")
    sess.run_with_iobinding(b)
    return dict(zip(names, b.get_outputs()))


def _as_past(meta, outs):
    return {p: outs[o] for o, p in meta["past_map"].items()}


@pytest.mark.parametrize("name", DECODERS)
def test_a_past_fed_twice_and_an_old_present_kept_stay_right(name):
    """Copy on conflict: the same kept past fed twice gives two presents whose rows past the past's
    are each their own (the second run may not write over the first's), and a present kept while
    later steps grow the cache still reads as it was."""
    meta = sidecar(name)
    sess, ref = sessions(meta)["decoder"], sessions(meta)["decoder"]
    seen = []
    new = build_genzoo.generate(meta, bound({"decoder": sess}, meta), steps=4, on_step=lambda k, f, o: seen.append(o))
    past, tokens = _as_past(meta, seen[-1]), list(build_genzoo.PROMPT) + new
    kept = {k: v.numpy().copy() for k, v in past.items()}
    # the same past twice, with two different tokens: both presents kept
    a = _step(sess, meta, past, tokens + [11])
    b = _step(sess, meta, past, tokens + [23])
    for tok, got in ((11, a), (23, b)):
        want = dict(zip([o.name for o in ref.get_outputs()],
                        ref.run(None, _host_feeds(ref, kept, tokens + [tok]))))
        for k, v in got.items():
            np.testing.assert_array_equal(v.numpy(), want[k], err_msg=f"token {tok} {k}")
    # the past still reads as it was, and so does `a` after later steps grow `b`'s cache
    a_kept = {k: v.numpy().copy() for k, v in a.items() if k.startswith("present")}
    later, toks = _as_past(meta, b), tokens + [23]
    for _ in range(4):
        o = _step(sess, meta, later, toks)
        later = _as_past(meta, o)
        toks.append(int(o["logits"].numpy()[0, -1].argmax()))
    for k, v in past.items():
        np.testing.assert_array_equal(v.numpy(), kept[k], err_msg=k)
    for k, v in a_kept.items():
        np.testing.assert_array_equal(a[k].numpy(), v, err_msg=k)
    # and `a` fed back now (an older present whose block a longer one shares) is still right
    o = _step(sess, meta, _as_past(meta, a), tokens + [11])
    want = dict(zip([x.name for x in ref.get_outputs()],
                    ref.run(None, _host_feeds(ref, {p: a_kept[o_] for o_, p in meta["past_map"].items()},
                                              tokens + [11]))))
    np.testing.assert_array_equal(o["logits"].numpy(), want["logits"])
    _ = b


def _host_feeds(sess, past, tokens):
    ins = {i.name for i in sess.get_inputs()}
    n = next(iter(past.values())).shape[2]
    feeds = {"input_ids": np.array([tokens[-1:]], np.int64), "attention_mask": np.ones((1, n + 1), np.int64),
             **past}
    if "position_ids" in ins:
        feeds["position_ids"] = np.array([[n]], np.int64)
    if "use_cache_branch" in ins:
        feeds["use_cache_branch"] = np.array([True])
    return feeds


def test_the_cache_grows_past_its_capacity():
    """Past a block's capacity the cache moves once to a block twice as large (one copy), and the
    bits stay those of CPU outputs."""
    meta = sidecar("llama_merged")
    sess, ref = sessions(meta)["decoder"], sessions(meta)["decoder"]
    pk = [k for k in meta["past_map"].values()]
    shape = [1 if isinstance(d, str) and "batch" in d else d for d in
             next(i for i in meta["roles"]["decoder"]["inputs"] if i["name"] == pk[0])["shape"]]
    rng = np.random.default_rng(1)
    start = 60
    host_past = {k: rng.standard_normal([d if not isinstance(d, str) else start for d in shape]).astype(np.float32)
                 for k in pk}
    past, tokens, caps = dict(host_past), [7], []
    for _ in range(10):
        outs = _step(sess, meta, past, tokens)
        want = dict(zip([o.name for o in ref.get_outputs()], ref.run(None, _host_feeds(ref, host_past, tokens))))
        for k, v in outs.items():
            np.testing.assert_array_equal(v.numpy(), want[k], err_msg=k)
        past = _as_past(meta, outs)
        host_past = {p: want[o] for o, p in meta["past_map"].items()}
        caps.append(past[pk[0]]._value.rows)
        tokens.append(int(want["logits"][0, -1].argmax()))
    assert caps[0] == 64 and caps[-1] == 128, caps


@pytest.mark.parametrize("name", ["whisper_merged", "marian_merged"])
def test_other_decoders_keep_their_tokens(name):
    """Encoder-decoders, Whisper's and Marian's (their cross-attention past is read, not appended; the
    self-attention's is): generation with the cache kept gives onnxruntime's tokens and the bits of
    CPU outputs."""
    meta = sidecar(name)
    want_steps, got_steps = [], []
    want = build_genzoo.generate(meta, plain(sessions(meta)), on_step=lambda k, f, o: want_steps.append(o))
    got = build_genzoo.generate(meta, bound(sessions(meta), meta), on_step=lambda k, f, o: got_steps.append(host_numpy(o)))
    assert got == want == meta["reference"]["tokens"]
    for k, (g, w) in enumerate(zip(got_steps, want_steps)):
        for key in w:
            if ".encoder." in key and k:
                continue
            np.testing.assert_array_equal(g[key], w[key], err_msg=f"{name} step {k} {key}")


@pytest.mark.parametrize("name", ["llama_merged", "gpt2_merged", "qwen2"])
def test_several_new_tokens_on_a_kept_cache(name):
    """A step of 3 tokens on a kept past (a prompt continued): the fused attention over [S, T] scores
    with the model's causal mask gives the bits of CPU outputs and onnxruntime's values."""
    pytest.importorskip("onnxruntime")
    meta = sidecar(name)
    sess, ref = sessions(meta)["decoder"], sessions(meta)["decoder"]
    theirs = build_genzoo.ort_runner(build_genzoo.genzoo_dir(), {"decoder": meta["roles"]["decoder"]["file"]})
    seen = []
    new = build_genzoo.generate(meta, bound({"decoder": sess}, meta), steps=3, on_step=lambda k, f, o: seen.append(o))
    past, more = _as_past(meta, seen[-1]), [new[-1], 31, 77]
    n = next(iter(past.values())).shape()[2]
    ins = {i.name for i in sess.get_inputs()}
    feeds = {"input_ids": np.array([more], np.int64), "attention_mask": np.ones((1, n + 3), np.int64)}
    if "position_ids" in ins:
        feeds["position_ids"] = np.arange(n, n + 3, dtype=np.int64)[None]
    if "use_cache_branch" in ins:
        feeds["use_cache_branch"] = np.array([True])
    b = sess.io_binding()
    for k, v in {**feeds, **past}.items():
        (b.bind_ortvalue_input if isinstance(v, nnwasm.OrtValue) else b.bind_cpu_input)(k, v)
    names = [o.name for o in sess.get_outputs()]
    for o in names:
        b.bind_output(o, "wasm" if o.startswith("present") else "cpu")
    sess.run_with_iobinding(b)
    got = {k: v.numpy() for k, v in zip(names, b.get_outputs())}
    host = {**feeds, **{k: v.numpy() for k, v in past.items()}}
    want = dict(zip(names, ref.run(None, host)))
    ort = theirs("decoder", host)
    for k in names:
        np.testing.assert_array_equal(got[k], want[k], err_msg=k)
        np.testing.assert_allclose(got[k], ort[k], rtol=1e-4, atol=1e-4, err_msg=k)


def test_a_capacity_past_its_block_is_refused_by_the_kernels():
    """The capacity dims are plan words like the offsets: a block said to hold more rows than it
    does (a corrupted tensor) gets nnw_plan_check's refusal before anything runs, never an access
    outside the allocation, and the session then runs the good cache."""
    meta = sidecar("llama_merged")
    sess = sessions(meta)["decoder"]
    seen = []
    new = build_genzoo.generate(meta, bound({"decoder": sess}, meta), steps=3, on_step=lambda k, f, o: seen.append(o))
    past, tokens = _as_past(meta, seen[-1]), list(build_genzoo.PROMPT) + new
    t = next(iter(past.values()))._value
    good = t.cap
    t.cap = 1 << 20
    with pytest.raises(nnwasm.KernelError, match="refused"):
        _step(sess, meta, past, tokens)
    t.cap = good
    ref = sessions(meta)["decoder"]
    got = _step(sess, meta, past, tokens)
    want = dict(zip([o.name for o in ref.get_outputs()],
                    ref.run(None, _host_feeds(ref, {k: v.numpy() for k, v in past.items()}, tokens))))
    np.testing.assert_array_equal(got["logits"].numpy(), want["logits"])


def test_shared_blocks_are_freed_with_their_last_tensor():
    """Each step's present shares its past's block: the block stays while any of them lives and is
    freed with the last (no block leaks across a generation, none freed under a live tensor)."""
    meta = sidecar("llama_merged")
    sess = sessions(meta)
    seen = []
    build_genzoo.generate(meta, bound(sess, meta), steps=10, on_step=lambda k, f, o: seen.append(o))
    kept = [v for v in seen[4].values() if isinstance(v, nnwasm.OrtValue)]   # an older present, kept
    before = {k: v.numpy().copy() for k, v in enumerate(kept)}
    del seen
    gc.collect()
    regions = {id(r._region): r._region for r in runners()}
    for region in regions.values():
        region.collect()
        live = {s for s, views in region.views.items() if len(views)}
        assert set(region.blocks) == live, (sorted(region.blocks), sorted(live))
    for k, v in enumerate(kept):   # still its bytes: its block was not freed under it
        np.testing.assert_array_equal(v.numpy(), before[k])
    region, held = kept[0]._value._cell[0], {v._value._cell[1] for v in kept}
    assert all(v._value._cell[0] is region for v in kept) and held <= set(region.blocks)
    del kept, v
    gc.collect()
    region.collect()
    assert not held & set(region.blocks), (sorted(held), sorted(region.blocks))


def test_a_strided_present_reads_and_writes_compact():
    """A present that is a view of a larger block (cap rows a head) reads as its own [B, H, P, D]
    bytes and takes compact bytes written into it (IOBinding writes an output computed elsewhere
    so), leaving the block's other rows alone."""
    meta = sidecar("llama_merged")
    seen = []
    build_genzoo.generate(meta, bound(sessions(meta), meta), steps=4, on_step=lambda k, f, o: seen.append(o))
    present = next(v for v in seen[-1].values() if isinstance(v, nnwasm.OrtValue))._value
    assert present.cap is not None and present.cap > present.shape[2]
    values = np.random.default_rng(2).standard_normal(present.shape).astype(np.float32)
    with present.host.lock:
        present.write(values.tobytes())
    np.testing.assert_array_equal(np.frombuffer(present.data, np.float32).reshape(present.shape), values)
    b, h, p, d = present.shape
    row = 4 * d
    for k in range(b * h):   # the first row past the view in each head: still what kv_append left there (zeros)
        tail = present.host.read(present.ptr + (k * present.cap + p) * row, row)
        assert bytes(tail) == bytes(row)
