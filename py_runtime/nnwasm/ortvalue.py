"""OrtValue: onnxruntime's tensor handle, on the CPU (or the "wasm" device: wasm/device.py). It
wraps a numpy array (ortvalue_from_numpy keeps the caller's array, no copy, as onnxruntime does)
or a TensorData (run_with_ort_values' outputs; every value where numpy can't be imported: then
numpy() gives an nnwasm.Tensor sharing the value's bytes, user_tensor.py)."""
from . import dtypes
from .errors import InvalidArgument, Unsupported
from .tensor import TensorData
from .user_tensor import Tensor, numpy_or_none


def _check_device(device_type, what):
    if str(device_type).lower() != "cpu":
        raise Unsupported(f"{what}: device '{device_type}' is not available; nnwasm's tensors live on 'cpu'")


def element_dtype(element_type, what):
    """dtypes.DType for a numpy dtype / type, a numpy dtype name, or a TensorProto code."""
    if isinstance(element_type, int) and not isinstance(element_type, bool):
        dt = dtypes.from_onnx(element_type)
    else:
        try:
            import numpy as np
            name = np.dtype(element_type).name
        except (TypeError, ImportError):
            name = element_type if isinstance(element_type, str) else None
        dt = dtypes.from_name(name) if name else None
    if dt is None or dt.size == 0:
        raise InvalidArgument(f"{what}: element type {element_type!r} is not one nnwasm's tensors take")
    return dt


class OrtValue:
    def __init__(self, value, _owner=None):
        """value: a numpy array or a TensorData. Use the ortvalue_from_* factories."""
        self._value = value

    # --- factories (onnxruntime's static methods) --------------------------------------------
    @staticmethod
    def ortvalue_from_numpy(numpy_obj, device_type="cpu", device_id=0, vendor_id=-1):
        """numpy_obj: a numpy array, or an nnwasm.Tensor (numpy not needed; its bytes
        are kept, not copied, unless read-only)."""
        _check_device(device_type, "OrtValue.ortvalue_from_numpy")
        if isinstance(numpy_obj, Tensor):
            if not numpy_obj._td.dtype.size:
                raise Unsupported("OrtValue.ortvalue_from_numpy: string tensors are not supported by nnwasm")
            return OrtValue(_writable(numpy_obj._td))
        np = numpy_or_none()
        if np is None or not isinstance(numpy_obj, np.ndarray):
            raise InvalidArgument(f"OrtValue.ortvalue_from_numpy takes a numpy array, got {type(numpy_obj).__name__}")
        if numpy_obj.dtype.kind in "OSUV":
            raise Unsupported(f"OrtValue.ortvalue_from_numpy: {numpy_obj.dtype} arrays (strings, objects) are not "
                              "supported by nnwasm")
        element_dtype(numpy_obj.dtype, "OrtValue.ortvalue_from_numpy")
        arr = numpy_obj if numpy_obj.flags.c_contiguous else np.ascontiguousarray(numpy_obj)
        return OrtValue(arr)

    @staticmethod
    def ortvalue_from_numpy_with_onnx_type(data, onnx_element_type):
        dt = element_dtype(onnx_element_type, "OrtValue.ortvalue_from_numpy_with_onnx_type")
        v = OrtValue.ortvalue_from_numpy(data)
        if v.element_type() != dt.onnx:
            raise Unsupported(f"OrtValue.ortvalue_from_numpy_with_onnx_type: a {data.dtype} array as ONNX type "
                              f"{onnx_element_type}: nnwasm reinterprets no bits (its types are numpy's)")
        return v

    @staticmethod
    def ortvalue_from_shape_and_type(shape, element_type, device_type="cpu", device_id=0, vendor_id=-1):
        """A zero-filled tensor (onnxruntime leaves it uninitialised)."""
        _check_device(device_type, "OrtValue.ortvalue_from_shape_and_type")
        dims = _dims(shape, "OrtValue.ortvalue_from_shape_and_type")
        dt = element_dtype(element_type, "OrtValue.ortvalue_from_shape_and_type")
        np = numpy_or_none()
        if np is None:
            return OrtValue(TensorData(dt, dims, bytearray(_numel(dims) * dt.size)))
        return OrtValue(np.zeros(dims, dtype=dt.name))

    @staticmethod
    def from_dlpack(data, is_bool_tensor=False):
        import numpy as np
        try:
            arr = np.from_dlpack(data)
        except (TypeError, RuntimeError, BufferError) as e:
            raise InvalidArgument(f"OrtValue.from_dlpack: {e}") from None
        if is_bool_tensor and arr.dtype != np.bool_:
            arr = arr.view(np.bool_) if arr.dtype.itemsize == 1 else arr.astype(np.bool_)
        return OrtValue.ortvalue_from_numpy(np.array(arr))

    @staticmethod
    def ort_value_from_sparse_tensor(sparse_tensor):
        raise Unsupported("sparse OrtValues are not supported by nnwasm (a model's sparse initializers are "
                          "densified when it loads)")

    # --- inspection ---------------------------------------------------------------------------
    def _td(self):
        v = self._value
        return v if isinstance(v, TensorData) else TensorData.from_numpy(v, copy=False)

    def numpy(self):
        """The array (a view of this value's memory, as onnxruntime's; a copy for a value on the
        "wasm" device, which stays there). Where numpy can't be imported, an nnwasm.Tensor, the
        same way (sharing this value's bytes; a copy from the "wasm" device)."""
        v = self._value
        if numpy_or_none() is None:
            if getattr(v, "device", "cpu") != "cpu":
                return Tensor._of(TensorData(v.dtype, v.shape, bytearray(v.data)))
            self._value = v = _writable(v)
            return Tensor._of(v)
        if getattr(v, "device", "cpu") != "cpu":
            return v.to_numpy().copy()
        if isinstance(v, TensorData):
            self._value = v = v.to_numpy().copy()   # writable from now on; the value keeps it
        return v

    def shape(self):
        return list(self._value.shape)

    def element_type(self):
        return self._dtype().onnx

    def data_type(self):
        return self._dtype().ort_type

    def _dtype(self):
        v = self._value
        return v.dtype if isinstance(v, TensorData) else dtypes.from_name(v.dtype.name)

    def device_name(self):
        """"cpu", or "wasm" for a value in kernels.wasm's memory (an IOBinding output bound there)."""
        return getattr(self._value, "device", "cpu")

    def has_value(self):
        return True

    def is_tensor(self):
        return True

    def is_tensor_sequence(self):
        return False

    def is_sparse_tensor(self):
        return False

    def tensor_size_in_bytes(self):
        return self._dtype().size * int(_numel(self.shape()))

    def data_ptr(self):
        """The address of the first element (CPython: numpy's buffer; on the "wasm" device, its
        offset in kernels.wasm's memory)."""
        if self.device_name() != "cpu":
            return self._value.ptr
        if isinstance(self._value, TensorData) and numpy_or_none() is None:
            import ctypes
            self._value = v = _writable(self._value)
            return ctypes.addressof(ctypes.c_char.from_buffer(v.data)) if len(v.data) else 0
        return self.numpy().ctypes.data

    def update_inplace(self, np_arr):
        """Writes np_arr's values into this value's memory (same type and shape). Without numpy,
        np_arr may be anything run() takes as a feed of this type and shape."""
        np = numpy_or_none()
        if np is None:
            from . import values
            from .ir import ValueInfo
            td = self._value = _writable(self._value)
            src = values.from_user("update_inplace", np_arr, ValueInfo("", td.dtype, td.shape))
            if src.dtype != td.dtype or tuple(src.shape) != tuple(td.shape):
                raise InvalidArgument(f"OrtValue.update_inplace: got {src.dtype.name} {list(src.shape)}, the value is "
                                      f"{td.dtype.name} {list(td.shape)}")
            td.data[:] = src.data
            return
        arr = self.numpy()
        src = np.asarray(np_arr)
        if src.shape != arr.shape or src.dtype != arr.dtype:
            raise InvalidArgument(f"OrtValue.update_inplace: got {src.dtype} {list(src.shape)}, the value is "
                                  f"{arr.dtype} {list(arr.shape)}")
        np.copyto(arr, src)

    def as_sparse_tensor(self):
        raise Unsupported("OrtValue.as_sparse_tensor: nnwasm's OrtValues are dense tensors")

    def __repr__(self):
        return f"OrtValue({self.data_type()}, {self.shape()})"


def _writable(td):
    """td with writable bytes (td itself if they already are: a bytearray, a writable memoryview
    such as an array.array's), for in-place writes."""
    if isinstance(td.data, bytearray) or (isinstance(td.data, memoryview) and not td.data.readonly):
        return td
    return TensorData(td.dtype, td.shape, bytearray(td.data))


def _numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def _dims(shape, what):
    try:
        dims = [int(d) for d in shape]
    except (TypeError, ValueError):
        raise InvalidArgument(f"{what}: shape must be a sequence of ints, got {shape!r}") from None
    if any(d < 0 for d in dims):
        raise InvalidArgument(f"{what}: shape {dims} has a negative dimension")
    return dims
