"""Outputs kept in kernels.wasm's memory (wasm/device.py): IOBinding.bind_output(name, "wasm")
gives OrtValues on the "wasm" device, and fed back with bind_ortvalue_input they reach the next
run's arena without crossing to the host, as a decoder's KV cache should."""
import numpy as np
import pytest
from onnx import TensorProto, helper

import nnwasm
from nnwasm.errors import InvalidArgument
from nnwasm.host import get_host
from nnwasm.wasm import device
from model_builders import ort_run


def _cache_model():
    """present = Concat(past, x) on axis 1; y = ReduceSum(present) per row: a KV cache in miniature."""
    nodes = [helper.make_node("Concat", ["past", "x"], ["present"], axis=1),
             helper.make_node("ReduceSum", ["present", "axes"], ["y"], keepdims=0)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("past", TensorProto.FLOAT, [2, "p", 8]),
                                       helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 1, 8])],
                          [helper.make_tensor_value_info("present", TensorProto.FLOAT, [2, "t", 8]),
                           helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])],
                          [helper.make_tensor("axes", TensorProto.INT64, [1], [1])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m.SerializeToString()


def _session(model):
    so = nnwasm.SessionOptions()
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    return nnwasm.InferenceSession(model, so)


def test_a_cache_bound_to_wasm_is_fed_back_without_host_copies(monkeypatch):
    model = _cache_model()
    sess = _session(model)
    rng = np.random.default_rng(0)
    past = np.zeros((2, 0, 8), np.float32)
    binding = sess.io_binding()
    binding.bind_output("present", "wasm")
    binding.bind_output("y")
    binding.bind_cpu_input("past", past)
    written = []
    host = get_host()
    host_write = host.write
    monkeypatch.setattr(host, "write", lambda ptr, data: written.append(len(data)) or host_write(ptr, data))
    for step in range(6):
        x = rng.standard_normal((2, 1, 8)).astype(np.float32)
        binding.bind_cpu_input("x", x)
        written.clear()
        sess.run_with_iobinding(binding)
        present, y = binding.get_outputs()
        assert present.device_name() == "wasm" and y.device_name() == "cpu"
        want_present, want_y = ort_run(model, {"past": past, "x": x})
        np.testing.assert_array_equal(present.numpy(), want_present)
        np.testing.assert_allclose(y.numpy(), want_y, rtol=1e-6, atol=1e-6)
        if step >= 2:   # the past came from kernels.wasm's memory: x crossed from the host, it did not
            assert x.nbytes in written and past.nbytes not in written, written
        past = want_present
        binding.bind_ortvalue_input("past", present)
    assert isinstance(present._value, device.WasmTensor) and present.data_ptr() == present._value.ptr


def test_a_wasm_output_still_reads_as_numpy_and_feeds_a_plain_run():
    model = _cache_model()
    sess = _session(model)
    past = np.ones((2, 3, 8), np.float32)
    x = np.full((2, 1, 8), 2, np.float32)
    binding = sess.io_binding()
    binding.bind_cpu_input("past", past)
    binding.bind_cpu_input("x", x)
    binding.bind_output("present", "wasm")
    sess.run_with_iobinding(binding)
    (present,) = binding.get_outputs()
    got = sess.run_with_ort_values(["y"], {"past": present, "x": nnwasm.OrtValue.ortvalue_from_numpy(x)})[0]
    np.testing.assert_array_equal(got.numpy(), np.concatenate([past, x, x], 1).sum(1))


def test_a_host_buffer_for_a_wasm_output_is_refused():
    sess = _session(_cache_model())
    with pytest.raises(InvalidArgument, match="own buffers"):
        sess.io_binding().bind_output("present", "wasm", 0, np.float32, [2, 1, 8], 1234)
