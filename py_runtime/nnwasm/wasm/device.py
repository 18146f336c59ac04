"""Tensors that live in kernels.wasm's memory: onnxruntime's device-resident OrtValues (a CUDA
buffer kept between runs), for nnwasm's one device, the wasm linear memory. A decoder's present
key/values bound to the "wasm" device (IOBinding.bind_output(name, "wasm")) stay there and are
fed back as the next step's past (bind_ortvalue_input) without crossing to the host: the runner
moves them between its arena and their buffer inside kernels.wasm (nnw_memmove), where feeds
and outputs otherwise pass through Python bytes both ways.

`keeping(names)` says, for the runs under it (this thread), which outputs stay on the device;
an If's runner extends it to its branch's output names."""
import contextlib
import threading
import weakref

from ..tensor import TensorData, numel

DEVICE = "wasm"
_state = threading.local()


class WasmTensor(TensorData):
    """dtype and shape on the host, the bytes in kernels.wasm's memory at ptr (freed with the
    tensor). `data` reads them to the host: every consumer that is not a WasmRunner of the same
    instance (the numpy provider, a host op, OrtValue.numpy()) still works, with that copy."""
    __slots__ = ("host", "ptr", "__weakref__")
    device = DEVICE

    def __init__(self, host, ptr, dtype, shape):
        self.host, self.ptr, self.dtype, self.shape = host, ptr, dtype, tuple(int(d) for d in shape)
        weakref.finalize(self, host.release, [ptr])

    @property
    def nbytes(self):
        return numel(self.shape) * self.dtype.size

    @property
    def data(self):
        with self.host.lock:
            return self.host.read(self.ptr, self.nbytes)

    def write(self, data):
        """Writes compact host bytes into the tensor (under the host lock)."""
        self.host.write(self.ptr, data)

    def copy_to(self, dst):
        """Copies the tensor's bytes, compact, to dst in kernels.wasm's memory (under the host lock)."""
        if self.nbytes:
            self.host.call("nnw_memmove", dst, self.ptr, self.nbytes)

    def copy_from(self, src):
        """Writes compact bytes at src in kernels.wasm's memory into the tensor (under the host lock)."""
        if self.nbytes:
            self.host.call("nnw_memmove", self.ptr, src, self.nbytes)


def nbytes(t):
    """A tensor's byte size, without reading a device tensor's bytes."""
    return t.nbytes if isinstance(t, WasmTensor) else len(t.data)


def kept():
    return getattr(_state, "keep", frozenset())


@contextlib.contextmanager
def keeping(names):
    """Outputs named `names` stay in kernels.wasm's memory for the runs under this (nested: added)."""
    saved = kept()
    _state.keep = saved | frozenset(names)
    try:
        yield
    finally:
        _state.keep = saved


def into():
    """{output name: WasmTensor} the runs under `writing_into` write into (this thread)."""
    return getattr(_state, "into", {})


@contextlib.contextmanager
def writing_into(targets):
    """Outputs named in `targets` {name: WasmTensor} are written into that tensor (of their type and
    shape): IOBinding.bind_ortvalue_output with an OrtValue on the "wasm" device. A runner writes
    there in place when it can (a shared past/present buffer, wasm/region.py), else copies there."""
    saved = into()
    _state.into = {**saved, **targets}
    try:
        yield
    finally:
        _state.into = saved
