"""ImageDecoder: an encoded image (the bytes of a JPEG, PNG, BMP, TIFF, WebP, PNM or JPEG 2000
file) to [H, W, C] uint8, decoded by Pillow where it is installed (an optional dependency: without
it the node raises NotImplementedOp)."""
from . import shapes as S
from .registry import op

PIXEL_FORMATS = {"RGB": 3, "BGR": 3, "Grayscale": 1}


def infer_image_decoder(node, inputs, consts):
    x = S.need(node, inputs, 0)
    fmt = node.attr("pixel_format", "RGB")
    if fmt not in PIXEL_FORMATS:
        S.fail(node, f"pixel_format must be one of {list(PIXEL_FORMATS)}, got {fmt!r}")
    if x.dtype is not None and x.dtype.name != "uint8" or S.rank(x) not in (None, 1):
        S.fail(node, "encoded_stream must be a 1-D uint8 tensor")
    return [(x.dtype, (None, None, PIXEL_FORMATS[fmt]))]


@op("ImageDecoder", 20, infer_image_decoder)
def image_decoder(node, data):
    import io

    import numpy as np
    try:
        import PIL.Image
    except ImportError:
        S.unsupported(node, "decoding images needs Pillow (pip install pillow)")
    fmt = node.attr("pixel_format", "RGB")
    try:
        img = PIL.Image.open(io.BytesIO(data.tobytes()))
        img.load()
    except Exception as e:      # noqa: BLE001 - Pillow raises many kinds for a bad stream
        S.fail(node, f"cannot decode the image: {type(e).__name__}: {e}")
    if fmt == "Grayscale":
        return np.asarray(img.convert("L"), np.uint8)[:, :, None]
    rgb = np.asarray(img.convert("RGB"), np.uint8)
    return np.ascontiguousarray(rgb[:, :, ::-1]) if fmt == "BGR" else rgb
