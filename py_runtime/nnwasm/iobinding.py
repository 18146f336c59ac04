"""IOBinding: onnxruntime's way to name a run's inputs and outputs ahead of it. Bound inputs are
OrtValues fed to the run; outputs are fresh OrtValues, OrtValues the caller bound (filled in
place), or, bound to the "wasm" device (bind_output(name, "wasm"), as onnxruntime binds "cuda"),
OrtValues that stay in kernels.wasm's memory (wasm/device.py): a decoder's present key/values,
fed back as the next step's past with bind_ortvalue_input, never cross to the host."""

from . import values
from .errors import InvalidArgument
from .ortvalue import OrtValue, _check_device, _dims, _writable, element_dtype
from .tensor import TensorData
from .user_tensor import Tensor, numpy_or_none
from .wasm.device import DEVICE, keeping, writing_into


class IOBinding:
    def __init__(self, session):
        self._session = session
        self._inputs = {}     # name -> OrtValue
        self._outputs = {}    # name -> OrtValue to fill, or None (a new one each run); bind order kept
        self._results = []

    # --- inputs ------------------------------------------------------------------------------
    def _input_name(self, name):
        s = self._session
        known = [a.name for a in s.get_inputs()] + [a.name for a in s.get_overridable_initializers()]
        if name not in known:
            raise InvalidArgument(f"IOBinding: '{name}' is not an input of the model (its inputs: {known})")
        return name

    def bind_cpu_input(self, name, arr_on_cpu):
        """arr_on_cpu: a numpy array (kept, not copied), or anything run() takes as a feed."""
        np = numpy_or_none()
        if np is not None and isinstance(arr_on_cpu, np.ndarray):
            self._inputs[self._input_name(name)] = OrtValue.ortvalue_from_numpy(arr_on_cpu)
            return
        vi = self._session._declared().get(self._input_name(name))
        self._inputs[name] = OrtValue(values.from_user(name, arr_on_cpu, vi))

    def bind_ortvalue_input(self, name, ortvalue):
        if not isinstance(ortvalue, OrtValue):
            raise InvalidArgument(f"IOBinding.bind_ortvalue_input('{name}'): expected an OrtValue, "
                                  f"got {type(ortvalue).__name__}")
        self._inputs[self._input_name(name)] = ortvalue

    def bind_input(self, name, device_type, device_id, element_type, shape, buffer_ptr):
        """The input's data is at buffer_ptr (an address in this process, as data_ptr() gives),
        read when the run starts."""
        self._input_name(name)
        self._inputs[name] = OrtValue(_array_at(buffer_ptr, device_type, element_type, shape,
                                                f"IOBinding.bind_input('{name}')"))

    def clear_binding_inputs(self):
        self._inputs.clear()

    def synchronize_inputs(self):
        pass   # one device: nothing to wait for

    # --- outputs -----------------------------------------------------------------------------
    def _output_name(self, name):
        known = [a.name for a in self._session.get_outputs()]
        if name not in known:
            raise InvalidArgument(f"IOBinding: '{name}' is not an output of the model (its outputs: {known})")
        return name

    def bind_output(self, name, device_type="cpu", device_id=0, element_type=None, shape=None, buffer_ptr=None):
        """Without buffer_ptr the run makes a new OrtValue; with it (and element_type and shape),
        the output is written there and must have that type and shape."""
        self._output_name(name)
        if str(device_type).lower() == DEVICE:
            if buffer_ptr is not None:
                raise InvalidArgument(f"IOBinding.bind_output('{name}', '{DEVICE}'): a buffer_ptr is a host "
                                      f"address; outputs on the '{DEVICE}' device get their own buffers")
            self._outputs[name] = DEVICE
            return
        _check_device(device_type, f"IOBinding.bind_output('{name}')")
        if buffer_ptr is None:
            self._outputs[name] = None
        else:
            self._outputs[name] = OrtValue(_array_at(buffer_ptr, device_type, element_type, shape,
                                                     f"IOBinding.bind_output('{name}')"))

    def bind_ortvalue_output(self, name, ortvalue):
        if not isinstance(ortvalue, OrtValue):
            raise InvalidArgument(f"IOBinding.bind_ortvalue_output('{name}'): expected an OrtValue, "
                                  f"got {type(ortvalue).__name__}")
        self._outputs[self._output_name(name)] = ortvalue

    def clear_binding_outputs(self):
        self._outputs.clear()
        self._results = []

    def synchronize_outputs(self):
        pass

    def get_outputs(self):
        """The last run's outputs as OrtValues, in the order they were bound."""
        return list(self._results)

    get_outputs_as_ortvaluevector = get_outputs

    def copy_outputs_to_cpu(self):
        """The last run's outputs as numpy arrays (copies; nnwasm.Tensor without numpy)."""
        if numpy_or_none() is None:
            tds = [v._td() for v in self._results]
            return [Tensor._of(TensorData(t.dtype, t.shape, bytearray(t.data))) for t in tds]
        return [v.numpy().copy() for v in self._results]

    # --- the run (InferenceSession.run_with_iobinding) ---------------------------------------
    def _run(self, session, run_options):
        if session is not self._session:
            raise InvalidArgument("run_with_iobinding: this IOBinding belongs to another session")
        if not self._outputs:
            raise InvalidArgument("run_with_iobinding: no outputs are bound (bind_output(name) for each wanted)")
        names = list(self._outputs)
        # OrtValues on the "wasm" device bound as outputs are written into (in place where the plan
        # can: a past/present buffer shared as onnxruntime-genai binds it, wasm/region.py)
        into = {n: d._value for n, d in self._outputs.items() if isinstance(d, OrtValue) and d.device_name() == DEVICE}
        with keeping(n for n, dest in self._outputs.items() if dest == DEVICE or n in into), writing_into(into):
            outs = session.run_with_ort_values(names, dict(self._inputs), run_options)
        results = []
        for name, got in zip(names, outs):
            dest = self._outputs[name]
            if dest is None or dest == DEVICE:
                results.append(got)
                continue
            if name in into and got._value is not dest._value:   # computed elsewhere (the numpy provider)
                g, d = got._td(), dest._value
                if g.dtype != d.dtype or tuple(g.shape) != tuple(d.shape):
                    raise InvalidArgument(f"run_with_iobinding: output '{name}' is {g.dtype.ort_type} {list(g.shape)}, "
                                          f"the value bound for it is {d.dtype.ort_type} {list(d.shape)}")
                with d.host.lock:
                    d.write(g.data)
            if name in into:
                results.append(dest)
                continue
            g, d = got._td(), dest._td()
            if g.dtype != d.dtype or tuple(g.shape) != tuple(d.shape):
                raise InvalidArgument(f"run_with_iobinding: output '{name}' is {g.dtype.ort_type} {list(g.shape)}, "
                                      f"the value bound for it is {d.dtype.ort_type} {list(d.shape)}")
            if isinstance(dest._value, TensorData):   # made without numpy: its bytes written in place
                dest._value = d = _writable(d)
                d.data[:] = g.data
            else:
                dest.numpy()[...] = got.numpy()
            results.append(dest)
        self._results = results


SessionIOBinding = IOBinding


def _array_at(buffer_ptr, device_type, element_type, shape, what):
    """A numpy view of memory at an address, for the bind_* calls that take one (a TensorData
    over it without numpy)."""
    _check_device(device_type, what)
    if element_type is None or shape is None:
        raise InvalidArgument(f"{what}: a buffer_ptr needs element_type and shape")
    dt = element_dtype(element_type, what)
    dims = _dims(shape, what)
    if isinstance(buffer_ptr, bool) or not isinstance(buffer_ptr, int) or buffer_ptr <= 0:
        raise InvalidArgument(f"{what}: buffer_ptr must be a non-null address (an int), got {buffer_ptr!r}")
    n = dt.size
    for d in dims:
        n *= d
    import ctypes   # here, not at import: ctypes costs ~0.2 s of `import nnwasm` in Pyodide
    raw = (ctypes.c_char * n).from_address(buffer_ptr)
    np = numpy_or_none()
    if np is None:
        return TensorData(dt, dims, memoryview(raw).cast("B"))
    return np.frombuffer(raw, dtype=dt.name).reshape(dims)
