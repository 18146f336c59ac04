"""Signal processing: DFT, STFT, the Hann/Hamming/Blackman windows and MelWeightMatrix. Complex
values are a trailing dim of 2 (real, imaginary); a trailing 1 is a real signal. numpy.fft keeps
float32 in complex64 (numpy >= 2), which is what the backend cases' expected values hold."""
from . import shapes as S
from .registry import op


def _scalar_input(node, inputs, i, what):
    vi = S.get(inputs, i)
    if vi is not None and S.numel(S.shape(vi)) not in (None, 1):
        S.fail(node, f"{what} must be a scalar, got shape {list(S.shape(vi))}")


def _one(node, t, what):
    if t.size != 1:
        S.fail(node, f"{what} must be one value, got {t.size}")
    return int(t.reshape(-1)[0])


def _complex(node, x):
    """The complex signal of a [..., 1|2] tensor."""
    if x.ndim < 2 or x.shape[-1] not in (1, 2):
        S.fail(node, f"input must end in a dim of 1 (real) or 2 (complex), got shape {list(x.shape)}")
    return x[..., 0] if x.shape[-1] == 1 else x[..., 0] + 1j * x[..., 1]


def _pairs(z):
    import numpy as np
    return np.stack([z.real, z.imag], -1)


# --- DFT --------------------------------------------------------------------------------------------

def _dft_axis(node, consts, r):
    """The transformed axis of the input tensor (rank r, counting the trailing complex dim), or None."""
    if node.opset < 20:
        a = node.attr("axis", 1)
    elif S.get(node.inputs, 2) in (None, ""):
        a = -2
    else:
        a = S.const_scalar(consts, 2)
        if a is None:
            return None
        a = int(a)
    if r is None:
        return a if a >= 0 else None
    a = S.axis(node, a, r)
    if a == r - 1:
        S.fail(node, "axis cannot be the last (real/imaginary) dim")
    return a


def _dft_out_len(node, n, length):
    """(transform length, output length along the axis) from the axis size n and dft_length."""
    inverse, onesided = node.attr("inverse", 0), node.attr("onesided", 0)
    if length is None:
        if not S.known(n):
            return None, None
        length = 2 * (n - 1) if inverse and onesided else n
    if length < 1:
        S.fail(node, f"dft_length must be positive, got {length}")
    return length, length if inverse or not onesided else length // 2 + 1


def infer_dft(node, inputs, consts):
    x = S.need(node, inputs, 0)
    _scalar_input(node, inputs, 1, "dft_length")
    _scalar_input(node, inputs, 2, "axis")
    xs = S.shape(x)
    if xs is None:
        return [(x.dtype, None)]
    if len(xs) < 2 or S.known(xs[-1]) and xs[-1] not in (1, 2):
        S.fail(node, f"input must end in a dim of 1 (real) or 2 (complex), got shape {list(xs)}")
    a = _dft_axis(node, consts, len(xs))
    length = S.const_scalar(consts, 1)
    length_known = length is not None or S.get(node.inputs, 1) in (None, "")
    last = 1 if node.attr("inverse", 0) and node.attr("onesided", 0) else 2
    if a is None:
        return [(x.dtype, (None,) * (len(xs) - 1) + (last,))]
    out_len = _dft_out_len(node, xs[a], None if length is None else int(length))[1] if length_known else None
    return [(x.dtype, tuple(out_len if i == a else last if i == len(xs) - 1 else d for i, d in enumerate(xs)))]


def _dft(node, x, dft_length, axis):
    import numpy as np
    a = S.axis(node, axis, x.ndim)
    if a == x.ndim - 1:
        S.fail(node, "axis cannot be the last (real/imaginary) dim")
    z = _complex(node, x if x.dtype.kind == "f" and x.itemsize >= 4 else x.astype(np.float32))
    length = None if dft_length is None else _one(node, dft_length, "dft_length")
    n, _ = _dft_out_len(node, x.shape[a], length)
    if node.attr("inverse", 0):
        if node.attr("onesided", 0):
            return np.fft.irfft(z, n=n, axis=a)[..., None].astype(x.dtype)
        return _pairs(np.fft.ifft(z, n=n, axis=a)).astype(x.dtype)
    y = np.fft.fft(z, n=n, axis=a)
    if node.attr("onesided", 0):
        y = np.take(y, np.arange(n // 2 + 1), axis=a)
    return _pairs(y).astype(x.dtype)


@op("DFT", 17, infer_dft)
def dft_17(node, x, dft_length=None):
    return _dft(node, x, dft_length, node.attr("axis", 1))


@op("DFT", 20, infer_dft)
def dft_20(node, x, dft_length=None, axis=None):
    return _dft(node, x, dft_length, -2 if axis is None else _one(node, axis, "axis"))


# --- STFT -------------------------------------------------------------------------------------------

def infer_stft(node, inputs, consts):
    x = S.need(node, inputs, 0)
    _scalar_input(node, inputs, 1, "frame_step")
    _scalar_input(node, inputs, 3, "frame_length")
    xs = S.shape(x)
    if xs is not None and (len(xs) != 3 or S.known(xs[2]) and xs[2] not in (1, 2)):
        S.fail(node, f"signal must be [batch, length, 1|2], got shape {list(xs)}")
    ws = S.shape(S.get(inputs, 2))
    if ws is not None and len(ws) != 1:
        S.fail(node, f"window must be 1-D, got shape {list(ws)}")
    step, length = S.const_scalar(consts, 1), S.const_scalar(consts, 3)
    if step is not None and step < 1:
        S.fail(node, f"frame_step must be positive, got {step}")
    if length is None and S.get(node.inputs, 3) in (None, ""):
        length = ws[0] if ws is not None else xs[1] if xs is not None else None
    if S.known(length) and ws is not None and S.known(ws[0]) and ws[0] != length:
        S.fail(node, f"window length {ws[0]} differs from frame_length {length}")
    n = xs[1] if xs is not None else None
    frames = (n - length) // step + 1 if S.known(n) and S.known(length) and step is not None else None
    if frames is not None and frames < 1:
        S.fail(node, f"frame_length {length} exceeds the signal length {n}")
    bins = (length // 2 + 1 if node.attr("onesided", 1) else length) if S.known(length) else None
    return [(x.dtype, (xs[0] if xs is not None else None, frames, bins, 2))]


@op("STFT", 17, infer_stft)
def stft(node, x, frame_step, window=None, frame_length=None):
    """Frames of frame_length every frame_step samples, times the window, each transformed."""
    import numpy as np
    z = _complex(node, x.astype(np.float64))
    if z.ndim != 2:
        S.fail(node, f"signal must be [batch, length, 1|2], got shape {list(x.shape)}")
    step = _one(node, frame_step, "frame_step")
    length = _one(node, frame_length, "frame_length") if frame_length is not None else \
        window.shape[0] if window is not None else z.shape[1]
    if window is not None and (window.ndim != 1 or window.shape[0] != length):
        S.fail(node, f"window shape {list(window.shape)} must be [{length}] (frame_length)")
    if step < 1 or not 1 <= length <= z.shape[1]:
        S.fail(node, f"frame_step {step} / frame_length {length} do not fit the signal length {z.shape[1]}")
    frames = (z.shape[1] - length) // step + 1
    starts = np.arange(frames)[:, None] * step + np.arange(length)[None, :]
    f = z[:, starts]
    if window is not None:
        f = f * window.astype(np.float64)
    y = np.fft.fft(f, axis=-1)
    if node.attr("onesided", 1):
        y = y[..., :length // 2 + 1]
    return _pairs(y).astype(x.dtype)


# --- windows, MelWeightMatrix -----------------------------------------------------------------------

def _out_type(node):
    dt = S.dtype_attr(node, "output_datatype", 1)
    if dt.name == "object" or dt.name == "bool":
        S.fail(node, f"output_datatype must be numeric, got {dt.name}")
    return dt


def infer_window(node, inputs, consts):
    _scalar_input(node, inputs, 0, "size")
    n = S.const_scalar(consts, 0)
    if n is not None and n < 0:
        S.fail(node, f"size must be >= 0, got {n}")
    return [(_out_type(node), (None if n is None else int(n),))]


def _window(name, fn):
    def kernel(node, size):
        """periodic=1 (the default) divides by N, periodic=0 (symmetric) by N - 1."""
        import numpy as np
        n = _one(node, size, "size")
        if n < 0:
            S.fail(node, f"size must be >= 0, got {n}")
        denom = n if node.attr("periodic", 1) else n - 1
        with np.errstate(all="ignore"):
            w = fn(np, 2 * np.pi * np.arange(n) / denom)
        return w.astype(_out_type(node).name)
    kernel.__name__ = name
    op(name, 17, infer_window)(kernel)


_window("HannWindow", lambda np, t: 0.5 - 0.5 * np.cos(t))
_window("HammingWindow", lambda np, t: 25 / 46 - 21 / 46 * np.cos(t))
_window("BlackmanWindow", lambda np, t: 0.42 - 0.5 * np.cos(t) + 0.08 * np.cos(2 * t))


def infer_mel(node, inputs, consts):
    for i, what in enumerate(("num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz", "upper_edge_hertz")):
        _scalar_input(node, inputs, i, what)
    bins, length = S.const_scalar(consts, 0), S.const_scalar(consts, 1)
    return [(_out_type(node), (None if length is None else int(length) // 2 + 1, None if bins is None else int(bins)))]


@op("MelWeightMatrix", 17, infer_mel)
def mel_weight_matrix(node, num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz):
    """Triangles peaking at 1 over [num_spectrogram_bins, num_mel_bins], their edges num_mel_bins + 2
    points evenly spaced on the mel scale mel(f) = 2595 log10(1 + f / 700), as onnx's reference."""
    import numpy as np
    bins, length, rate = (_one(node, t, w) for t, w in ((num_mel_bins, "num_mel_bins"),
                                                         (dft_length, "dft_length"), (sample_rate, "sample_rate")))
    lo, hi = (float(t.reshape(-1)[0]) for t in (lower_edge_hertz, upper_edge_hertz))
    if bins < 1 or length < 1 or rate < 1 or not 0 <= lo < hi:
        S.fail(node, f"invalid num_mel_bins {bins}, dft_length {length}, sample_rate {rate} or edges {lo}, {hi}")
    lo_mel, hi_mel = (2595 * np.log10(1 + f / 700) for f in (lo, hi))
    mel = np.arange(bins + 2) * ((hi_mel - lo_mel) / (bins + 2)) + lo_mel
    edges = (((length + 1) * (700 * (10 ** (mel / 2595) - 1))) // rate).astype(np.int64)
    spec = length // 2 + 1
    if edges.max() >= spec:
        S.fail(node, f"upper_edge_hertz {hi} lies above the Nyquist frequency of sample_rate {rate}")
    out = np.zeros((spec, bins))
    for i in range(bins):
        left, center, right = edges[i:i + 3]
        if center == left:
            out[center, i] = 1
        else:
            out[left:center + 1, i] = (np.arange(left, center + 1) - left) / (center - left)
        if right > center:
            out[center:right, i] = (right - np.arange(center, right)) / (right - center)
    return out.astype(_out_type(node).name)
