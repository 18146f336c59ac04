"""What web/inference-session.mjs calls inside Pyodide: sessions by integer handle, tensors as
(name, type, dims, bytes) so no element is ever converted one by one.

JS -> Python: model bytes and feed buffers arrive as JsProxy Uint8Arrays (one copy each, with
to_bytes()); names, types and dims as JsProxy arrays of str / numbers.
Python -> JS: results are built as JS objects with to_js, so the shim never holds a PyProxy;
output buffers are fresh ArrayBuffers the shim wraps in typed arrays as they are.
Errors: every entry point records its exception (type name and str) before re-raising, and the
shim reads it with take_error() to throw a JS Error with the Python message, not a traceback.
"""
import functools
import itertools

import js
from pyodide.ffi import to_js

from . import InferenceSession, SessionOptions, dtypes, profiling
from .errors import InvalidArgument, InvalidModel
from .onnx_io import external as _external
from .onnx_io.messages import parse_model_proto
from .tensor import TensorData
from .wasm import device

_sessions = {}
_handles = itertools.count(1)
_last_error = None


def _to_js(value):
    return to_js(value, dict_converter=js.Object.fromEntries)


def _reported(fn):
    @functools.wraps(fn)
    def wrapper(*args):
        global _last_error
        try:
            return fn(*args)
        except Exception as e:
            cls = type(e)
            _last_error = (cls.__name__, f"{cls.__module__}.{cls.__qualname__}", str(e) or cls.__name__)
            raise
    return wrapper


def take_error():
    """[type name, qualified type name, message] of the last failed call, then forgets it."""
    global _last_error
    err, _last_error = _last_error, None
    return None if err is None else _to_js(list(err))


def _web_type(dtype):
    """onnxruntime-web's name for a dtype: numpy's name, except strings."""
    return "string" if dtype.name == "object" else dtype.name


def _dtype(web_type, name):
    dt = dtypes.from_name(str(web_type)) if web_type != "string" else None
    if dt is None:
        raise InvalidArgument(f"input '{name}': tensor type '{web_type}' is not supported by nnwasm")
    return dt


def _value_info(v):
    dt = dtypes.from_name(v.type)
    shape = None if v.shape is None else [d if isinstance(d, (int, str)) else None for d in v.shape]
    return {"name": v.name, "type": _web_type(dt) if dt else v.type, "shape": shape}


def _session(handle):
    sess = _sessions.get(handle)
    if sess is None:
        raise InvalidArgument("this session was released")
    return sess


class _JsSource:
    """An external data file read by JS (web/external-data.mjs's readers: {size, readInto(offset,
    length, view)}), for onnx_io/external.py: filled straight into kernels.wasm's memory."""

    def __init__(self, reader):
        self.reader, self.size = reader, int(reader.size)

    def read(self, offset, length):
        buf = js.Uint8Array.new(length)
        self.reader.readInto(offset, length, buf)
        return buf.to_bytes()

    def fill(self, host, ptr, offset, length):
        self.reader.readInto(offset, length, host._view(ptr, length))


@_reported
def external_needs(model):
    """What the model's external data asks for, before any file is read: {files: [[location,
    extent (the largest offset + length), [tensor names]]], total: bytes claimed}. Bytes that do
    not parse give no files (create_session reports them)."""
    try:
        needs, total = _external.external_needs(parse_model_proto(model.to_bytes()))
    except InvalidModel:
        needs, total = {}, 0
    return _to_js({"files": [[loc, extent, names] for loc, (extent, names) in needs.items()], "total": total})


# A buffer (a fetched file, a Blob) is not kept for this little of it that no plan holds: that
# is copied into Python (a few packed weights, say), and the buffer goes.
DETACH_BYTES = 16 << 20


def _external_pending(sources):
    """The external files whose readers must stay open (some tensor of theirs no plan holds yet);
    the others' may be closed."""
    if sources is None:
        return []
    for location in sources.pending():
        source = sources.sources[location]
        if getattr(source.reader, "inMemory", False) and sources.pending_bytes(location) <= max(DETACH_BYTES, source.size // 8):
            sources.detach(location)
    return sources.pending()


@_reported
def external_pending(handle):
    """After a run that may have built plans (a model with symbolic dims builds them at its first
    run): the external files still needed, as create_session's externalPending."""
    source = _session(handle)._source
    return _to_js(_external_pending(getattr(source, "external", None)))


@_reported
def create_session(model, providers, dim_overrides=None, external=None, config=None):
    """model: Uint8Array of ONNX bytes; providers: JS array of provider names, or None;
    dim_overrides: JS object {symbolic dim name: size} (onnxruntime-web's
    freeDimensionOverrides), or None; external: JS object {location: reader} of the model's
    external data files (_JsSource), or None; config: JS object {key: value} of session config
    entries (onnxruntime-web's `extra`, nnwasm's memoryLimitBytes: web/session-options.mjs), or None."""
    data = model.to_bytes()
    sources = None
    if external is not None:
        sources = _external.ExternalSources({str(k): _JsSource(v) for k, v in js.Object.entries(external)})
        data = _external.ModelBytes(data)
        data.external = sources
    so = SessionOptions()
    for name, size in ([] if dim_overrides is None else dim_overrides.to_py().items()):
        so.add_free_dimension_override_by_name(str(name), int(size))
    for key, value in ([] if config is None else config.to_py().items()):
        so.add_session_config_entry(str(key), str(value))
    sess = InferenceSession(data, so, providers=None if providers is None else [str(p) for p in providers])
    handle = next(_handles)
    _sessions[handle] = sess
    assignment = sess.get_provider_assignment()
    return _to_js({
        "handle": handle,
        "inputs": [_value_info(v) for v in sess.get_inputs()],
        "outputs": [_value_info(v) for v in sess.get_outputs()],
        "providers": list(sess.get_providers()),
        "assignment": [list(a) for a in assignment],
        "kernelsFlavour": assignment.kernels_flavour,
        "externalPending": _external_pending(sources),
    })


# Outputs kept in the session's memory (preferredOutputLocation "wasm" in JS): id -> (session
# handle, TensorData; a wasm/device.py WasmTensor where kernels.wasm computed it). JS holds the id
# in a Tensor of location "wasm" and feeds it back by id, so a decoder's past never crosses to JS.
_kept = {}
_kept_ids = itertools.count(1)


def _kept_tensor(key, what):
    entry = _kept.get(int(key))
    if entry is None:
        raise InvalidArgument(f"{what}: this tensor's data was disposed (dispose(), getData(true), or its "
                              "session's release())")
    return entry[1]


@_reported
def run(handle, names, types, dims, buffers, output_names, keep=None):
    """Feeds as parallel JS arrays, a buffer being a Uint8Array or the id of a kept tensor;
    output_names a JS array, or None for all outputs; keep the output names to keep in the
    session's memory. Returns a JS array of [name, type, dims, ArrayBuffer or None, kept id or 0]
    in output order."""
    sess = _session(handle)
    feeds = {}
    for name, web_type, shape, buf in zip(names, types, dims, buffers):
        dt, shape = _dtype(web_type, name), [int(d) for d in shape]
        if isinstance(buf, (int, float)):
            t = _kept_tensor(buf, f"input '{name}'")
            if t.dtype != dt or list(t.shape) != shape:
                raise InvalidArgument(f"input '{name}': the kept tensor is {_web_type(t.dtype)} {list(t.shape)}, "
                                      f"not {web_type} {shape}")
            feeds[name] = t
        else:
            feeds[name] = TensorData(dt, shape, buf.to_bytes())
    wanted = None if output_names is None else [str(n) for n in output_names] or None
    kept_names = frozenset() if keep is None else frozenset(str(n) for n in keep)
    with device.keeping(kept_names):
        results = sess._run_raw(wanted, feeds)
    out_names = wanted if wanted is not None else [v.name for v in sess.get_outputs()]
    out = []
    for name, t in zip(out_names, results):
        if t.dtype.name == "object":
            raise InvalidArgument(f"output '{name}' is a string tensor, which the JS shim cannot return")
        if name in kept_names:
            key = next(_kept_ids)
            _kept[key] = (handle, t)
            out.append([name, _web_type(t.dtype), list(t.shape), None, key])
            continue
        out.append([name, _web_type(t.dtype), list(t.shape), _js_bytes(t.data), 0])
    return _to_js(out)


def _js_bytes(data):
    data = memoryview(data).cast("B")
    buf = js.Uint8Array.new(data.nbytes)
    buf.assign(data)
    return buf.buffer


@_reported
def kept_read(key):
    """A kept tensor's bytes, as a fresh ArrayBuffer (Tensor.getData() of a "wasm" tensor)."""
    return _js_bytes(_kept_tensor(key, "getData()").data)


@_reported
def kept_dispose(key):
    """Frees a kept tensor (its kernels.wasm buffer goes with the last reference); unknown ids are fine."""
    _kept.pop(int(key), None)


def kept_count():
    """How many kept tensors are alive (tests)."""
    return len(_kept)


@_reported
def start_profiling(handle):
    """The JS session's startProfiling(): (re)starts recording on the Python session."""
    _session(handle)._start_profiling()


@_reported
def end_profiling(handle):
    """The JS session's endProfiling(): the recorded events as JSON text ("[]" when not profiling)."""
    return profiling.to_json(_session(handle)._end_profiling_events() or [])


@_reported
def release(handle):
    sess = _sessions.pop(handle, None)
    for key in [k for k, (h, _) in _kept.items() if h == handle]:   # its kept tensors go with it
        del _kept[key]
    external = getattr(getattr(sess, "_source", None), "external", None)
    if external is not None:   # its plans go now: nothing of them to keep (external.py)
        external.closed = True
