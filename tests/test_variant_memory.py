"""A model with symbolic input dims prepares one variant per input shape, each with its own arena
(the weights are the session's, shared: wasm/weights.py). When kernels.wasm's memory can't hold another, the session drops the variants
it prepared for other shapes, least recently used first, instead of failing the run. The heap is
made small here by refusing nnw_malloc beyond a budget of live bytes."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import nnwasm
from nnwasm import session as session_module
from nnwasm.errors import KernelError, WasmOutOfMemory
from nnwasm.host import get_host

K, N = 64, 2048   # a 512 KiB weight: each variant's arena holds a copy


def _model():
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((K, N)).astype(np.float32), "w")
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", K])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", N])], [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m.SerializeToString(), numpy_helper.to_array(w)


@pytest.fixture
def small_heap(monkeypatch):
    """nnw_malloc returns 0 once the blocks allocated through it and not yet freed pass `budget`."""
    host = get_host()
    call, live, state = host.call, {}, {"budget": None}

    def limited(name, *args):
        if name == "nnw_malloc" and state["budget"] is not None and sum(live.values()) + args[0] > state["budget"]:
            return 0
        if (name == "nnw_realloc" and state["budget"] is not None
                and sum(live.values()) - live.get(args[0], 0) + args[1] > state["budget"]):
            return 0
        p = call(name, *args)
        if name == "nnw_malloc" and p:
            live[p] = args[0]
        elif name == "nnw_realloc" and p:
            live.pop(args[0], None)
            live[p & 0xFFFFFFFF] = args[1]
        elif name == "nnw_free":
            live.pop(args[0], None)
        return p

    monkeypatch.setattr(host, "call", limited)
    return state, live


def test_variants_evicted_when_memory_runs_out(small_heap, monkeypatch):
    monkeypatch.setattr(session_module, "_SYMBOLIC", False)   # a variant per shape (tracing shares one)
    state, live = small_heap
    model, w = _model()
    so = nnwasm.SessionOptions()
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    sess = nnwasm.InferenceSession(model, so)
    x1 = np.ones((1, K), np.float32)
    np.testing.assert_allclose(sess.run(None, {"x": x1})[0], x1 @ w, rtol=1e-5, atol=1e-4)
    one_variant = sum(live.values())   # the weights once, and a 1-row variant's arena
    # room for two variants' arenas of these sizes (about 8448 n bytes: x and y), not three
    state["budget"] = one_variant + int(2.5 * 8448 * 400)
    for n in (300, 400, 350, 380, 300, 420):
        x = np.full((n, K), 0.5, np.float32)
        np.testing.assert_allclose(sess.run(None, {"x": x})[0], x @ w, rtol=1e-5, atol=1e-4)
        assert sum(live.values()) <= state["budget"]
    assert len(sess._cache) <= 2


def test_traced_variant_grows_its_arena_within_the_heap(small_heap, monkeypatch):
    """With tracing, one variant serves every n: its arena grows (in place where it can) by half of
    what is not weights at least, or by exactly
    what the dims need where the heap can't hold more, and a growth the heap can't hold at all is a
    clear error that leaves the session usable."""
    monkeypatch.setattr(session_module, "_SYMBOLIC", True)
    state, live = small_heap
    model, w = _model()
    sess = nnwasm.InferenceSession(model)
    sess.run(None, {"x": np.ones((2, K), np.float32)})
    state["budget"] = sum(live.values()) + 1_500_000   # the grown arenas, each beside the old one while copying
    for n in (3, 40, 4):
        x = np.full((n, K), 0.5, np.float32)
        np.testing.assert_allclose(sess.run(None, {"x": x})[0], x @ w, rtol=1e-5, atol=1e-4)
        assert sum(live.values()) <= state["budget"]
    assert len(sess._traced_variants) == 1
    with pytest.raises(KernelError, match="out of memory"):
        sess.run(None, {"x": np.ones((900, K), np.float32)})
    x = np.full((5, K), 0.5, np.float32)
    np.testing.assert_allclose(sess.run(None, {"x": x})[0], x @ w, rtol=1e-5, atol=1e-4)


def test_out_of_memory_with_nothing_to_evict_is_a_clear_error(small_heap):
    state, _ = small_heap
    model, w = _model()
    sess = nnwasm.InferenceSession(model)
    state["budget"] = 1024   # not even one arena fits
    with pytest.raises(KernelError, match="out of memory"):
        sess.run(None, {"x": np.ones((3, K), np.float32)})
    state["budget"] = None   # the session stays usable
    x = np.ones((3, K), np.float32)
    np.testing.assert_allclose(sess.run(None, {"x": x})[0], x @ w, rtol=1e-5, atol=1e-4)
    assert issubclass(WasmOutOfMemory, KernelError)


def test_weights_packed_once_across_variants(monkeypatch):
    """The variants' plans take B's packed panels from the provider's cache: packed once per
    session, not once per input shape (a decoder prepares a variant per past length)."""
    from nnwasm.wasm.lower import packed
    calls = []
    real, real_pieces = packed.pack_b, packed.pack_b_pieces   # whole, or streamed into kernels.wasm
    monkeypatch.setattr(packed, "pack_b", lambda *a: calls.append(a[1:3]) or real(*a))
    monkeypatch.setattr(packed, "pack_b_pieces", lambda *a, **kw: calls.append(a[1:3]) or real_pieces(*a, **kw))
    model, w = _model()
    sess = nnwasm.InferenceSession(model)
    for n in (1, 2, 7, 2):
        x = np.random.default_rng(n).standard_normal((n, K)).astype(np.float32)
        np.testing.assert_allclose(sess.run(None, {"x": x})[0], x @ w, rtol=1e-5, atol=1e-4)
    assert calls == [(K, N)]
    assert sess.get_provider_assignment() and all(p == "WasmExecutionProvider" for *_, p in sess.get_provider_assignment())
