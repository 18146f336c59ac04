"""Flavours of kernels.wasm: one C source built twice (build_scripts/build_kernels.py, FLAVOURS), and
the one a host loads, chosen at load time as XNNPACK and onnxruntime-web choose theirs.

    simd      kernels.wasm: WebAssembly SIMD128, bit-identical on every host and CPU (the reference)
    relaxed   kernels-relaxed.wasm: adds relaxed SIMD (f32x4.relaxed_madd in the float GEMM/conv
              microkernels, which the engine may fuse): faster where the CPU has FMA, bits may differ
              by CPU and engine (never by run)

"auto" (the default) takes `relaxed` where it pays: in Pyodide (V8: 0.79-0.91x the run time of
`simd` on the speed bench's float models, bench/results/flavours.md) when the engine validates
PROBE, a 51-byte module using relaxed SIMD, else `simd`; in CPython (wasmtime) `simd`, because
Cranelift's code gained nothing from fusing there (0.94x on BERT, 1.04-1.2x on the conv models).
Forcing: SessionOptions.add_session_config_entry(CONFIG_KEY, "simd" | "relaxed" | "auto") per session, $NNWASM_KERNELS_FLAVOUR for the process's default. Asking for `relaxed` where
the engine lacks it falls back to `simd` with one warning. Plan files name ops, not flavours: any
plan runs on either (its init ops pack weights on the flavour that loads it). With threads
(intra_op_num_threads > 1 in CPython, env.wasm.numThreads > 1 under Pyodide) the session runs the
`+threads` build of the flavour resolved here: `simd+threads` or `relaxed+threads` (threads.py,
pyodide_host.py).
"""
import os
import sys
import warnings

from ..errors import InvalidArgument

FILES = {"simd": "kernels.wasm", "relaxed": "kernels-relaxed.wasm"}
CONFIG_KEY = "session.kernels_flavour"
ENV = "NNWASM_KERNELS_FLAVOUR"
CHOICES = ("auto", *FILES)

# (module (func (result v128)
#   (i32x4.relaxed_dot_i8x16_i7x16_add_s (i8x16.splat 1) (i8x16.splat 1) (i8x16.splat 1))
#   (f32x4.relaxed_madd (i8x16.splat 1) (i8x16.splat 1)))): validates only where relaxed SIMD is on
PROBE = bytes([
    0x00, 0x61, 0x73, 0x6D, 0x01, 0x00, 0x00, 0x00,
    0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7B,             # type: () -> v128
    0x03, 0x02, 0x01, 0x00,                               # func 0: type 0
    0x0A, 0x1E, 0x01, 0x1C, 0x00,                         # code: 1 body, 28 bytes, no locals
    0x41, 0x01, 0xFD, 0x0F, 0x41, 0x01, 0xFD, 0x0F, 0x41, 0x01, 0xFD, 0x0F,
    0xFD, 0x93, 0x02,                                     # i32x4.relaxed_dot_i8x16_i7x16_add_s
    0x41, 0x01, 0xFD, 0x0F, 0x41, 0x01, 0xFD, 0x0F,
    0xFD, 0x85, 0x02,                                     # f32x4.relaxed_madd
    0x0B,
])

_supported = None
_warned = False
AUTO_RELAXED = sys.platform == "emscripten"   # where "auto" may pick relaxed: V8 under Pyodide


def relaxed_simd_supported():
    """Whether this process's engine (wasmtime's default configuration, or the page's / Node's
    WebAssembly in Pyodide) validates PROBE. Asked once."""
    global _supported
    if _supported is None:
        _supported = _probe()
    return _supported


def _probe():
    if sys.platform == "emscripten":
        import js
        from pyodide.ffi import to_js
        return bool(js.WebAssembly.validate(to_js(PROBE)))
    import wasmtime
    try:
        wasmtime.Module.validate(wasmtime.Engine(), PROBE)
        return True
    except wasmtime.WasmtimeError:
        return False


def check(value, where):
    """A flavour name as given by a user, checked: 'auto', 'simd' or 'relaxed'."""
    if value not in CHOICES:
        raise InvalidArgument(f"{where}: kernels flavour must be one of {list(CHOICES)}, got {value!r}")
    return value


def requested(sess_options=None):
    """The flavour asked for: the session's config entry, else $NNWASM_KERNELS_FLAVOUR, else auto."""
    cfg = getattr(sess_options, "_config", None) or {}
    if CONFIG_KEY in cfg:
        return check(cfg[CONFIG_KEY], f"session config '{CONFIG_KEY}'")
    env = os.environ.get(ENV)
    return check(env, f"${ENV}") if env else "auto"


def resolve(choice):
    """The flavour that runs for a requested one: auto -> relaxed where supported and paying (V8,
    i.e. Pyodide), else simd; relaxed where the engine lacks it -> simd, with one warning per process."""
    global _warned
    if choice == "simd" or (choice == "auto" and not AUTO_RELAXED):
        return "simd"
    if relaxed_simd_supported():
        return "relaxed"
    if choice == "relaxed" and not _warned:
        _warned = True
        warnings.warn("nnwasm: this WebAssembly engine has no relaxed SIMD; running the 'simd' kernels "
                      "instead of 'relaxed'", RuntimeWarning, stacklevel=3)
    return "simd"


class ProviderAssignment(list):
    """get_provider_assignment()'s list of (node, op type, provider), which also says the kernels.wasm
    flavour the WASM provider's nodes run on (`kernels_flavour`: 'simd' or 'relaxed')."""

    def __init__(self, rows, kernels_flavour):
        super().__init__(rows)
        self.kernels_flavour = kernels_flavour

    def __repr__(self):
        return f"{list.__repr__(self)} (kernels.wasm flavour: {self.kernels_flavour})"
