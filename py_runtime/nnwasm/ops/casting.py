"""Conversions to and from the element types numpy lacks (bfloat16, the float8 family, float4,
int4/uint4, int2/uint2), with ONNX's rules: Cast's `saturate` for float8 (out-of-range values,
infinities included, clamp to the largest finite value instead of becoming NaN/inf) and its
`round_mode` for float8e8m0 (onnx/reference's cast_to is the spec). numpy functions; ml_dtypes is
reached through dtypes.numpy_dtype (a clear Unsupported where it is missing)."""
from .. import dtypes

FLOAT8 = {"float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz"}


def to_type(x, dt, saturate=True, round_mode="up"):
    """x (ndarray) as element type dt (dtypes.DType)."""
    import numpy as np
    target = dtypes.numpy_dtype(dt)
    if x.dtype == target:
        return x.copy()
    if dtypes.of_numpy(x.dtype) is not None and dtypes.of_numpy(x.dtype).ml_dtypes:
        # every ml_dtypes value is exact in float32 (its integers too); ml_dtypes' casts between
        # two of its own types are not all registered
        x = x.astype(np.float32)
        if x.dtype == target:
            return x
    if dt.name == "float8_e8m0fnu":
        return to_e8m0(x, saturate, round_mode)
    if dt.name in FLOAT8 and saturate:
        import ml_dtypes
        info = ml_dtypes.finfo(target)
        x = np.clip(x.astype(np.float32), np.float32(info.min), np.float32(info.max))
    return x.astype(target)


def to_e8m0(x, saturate=True, round_mode="up"):
    """float8e8m0 (a power of two: the float32 exponent alone) of x, rounding the dropped
    mantissa as round_mode says ("up", "down", "nearest": ties away from the smaller power) and,
    with saturate, never past the largest value 2^127."""
    import numpy as np
    if round_mode not in ("up", "down", "nearest"):
        raise ValueError(f"round_mode must be 'up', 'down' or 'nearest', got '{round_mode}'")
    bits = np.asarray(x, dtype=np.float32).view(np.uint32)
    exp = ((bits >> 23) & 0xFF).astype(np.uint16)
    special = exp == 0xFF
    if round_mode == "up":
        bump = (bits & 0x7FFFFF) > 0
    elif round_mode == "nearest":
        g, r, s = (bits & 0x400000) > 0, (bits & 0x200000) > 0, (bits & 0x1FFFFF) > 0
        bump = g & (r | s | (exp > 0))
    else:
        bump = np.zeros(bits.shape, dtype=bool)
    bump &= ~special
    if saturate:
        bump &= exp != 0xFE
    exp = np.where(special, 0xFF, exp + bump).astype(np.uint8)
    return exp.view(dtypes.numpy_dtype(dtypes.BY_NAME["float8_e8m0fnu"]))


def is_lowp_float(np_dtype):
    dt = dtypes.of_numpy(np_dtype)
    return dt is not None and dt.ml_dtypes and "float" in dt.name


def widened(fn):
    """fn (a numpy kernel) run on float32 copies of its bfloat16/float8 inputs, its float32
    results rounded back to that type once: for kernels built on numpy routines that refuse
    ml_dtypes (einsum, iinfo, matmul...), and more exact than rounding after every step."""
    import functools

    @functools.wraps(fn)
    def run(node, *xs, **kw):
        import numpy as np
        low = next((x.dtype for x in xs if isinstance(x, np.ndarray) and is_lowp_float(x.dtype)), None)
        if low is None:
            return fn(node, *xs, **kw)
        xs = [x.astype(np.float32) if isinstance(x, np.ndarray) and is_lowp_float(x.dtype) else x for x in xs]
        out = fn(node, *xs, **kw)
        back = lambda y: y.astype(low) if isinstance(y, np.ndarray) and y.dtype == np.float32 else y  # noqa: E731
        return tuple(back(y) for y in out) if isinstance(out, tuple) else back(np.asarray(out))
    return run
