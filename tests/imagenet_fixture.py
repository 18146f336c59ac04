"""The demo's image recipe in PIL and numpy, read from demo/assets/efficientnet-lite0.json (the
same file the JS demo reads), so tests feed the model exactly what the page would."""
import json
from pathlib import Path

import numpy as np
from PIL import Image

ASSETS = Path(__file__).resolve().parent.parent / "demo" / "assets"
CONFIG_PATH = ASSETS / "efficientnet-lite0.json"

_REQUIRED = {"model": str, "input": str, "output": str, "size": int, "resize": int,
             "mean": list, "std": list, "scale": str, "layout": str, "labels": str}
_SCALES = {"0..1": 1.0 / 255.0, "0..255": 1.0}


def load_config(path=CONFIG_PATH):
    """The recipe as a dict; raises ValueError when a field is missing or out of range."""
    path = Path(path)
    config = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(config, dict):
        raise ValueError(f"{path}: expected a JSON object")
    for key, kind in _REQUIRED.items():
        if not isinstance(config.get(key), kind):
            raise ValueError(f"{path}: '{key}' must be a {kind.__name__}")
    if config["scale"] not in _SCALES:
        raise ValueError(f"{path}: 'scale' must be one of {sorted(_SCALES)}")
    if config["layout"] != "NCHW":
        raise ValueError(f"{path}: only the NCHW layout is described, not {config['layout']!r}")
    if not 0 < config["size"] <= config["resize"]:
        raise ValueError(f"{path}: need 0 < size <= resize")
    for key in ("mean", "std"):
        values = config[key]
        if len(values) != 3 or not all(isinstance(v, (int, float)) for v in values):
            raise ValueError(f"{path}: '{key}' must hold three numbers (R, G, B)")
    if not all(v > 0 for v in config["std"]):
        raise ValueError(f"{path}: 'std' must be positive")
    config["dir"] = path.parent
    return config


def labels(config=None):
    """The 1000 class names, index order."""
    config = config or load_config()
    names = json.loads((config["dir"] / config["labels"]).read_text(encoding="utf-8"))
    if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
        raise ValueError(f"{config['labels']}: expected a JSON list of non-empty strings")
    return names


def preprocess(path, config=None):
    """float32 [1, 3, size, size]: shorter side to `resize` (bilinear), centre crop `size`,
    scale, then (x - mean) / std per RGB channel."""
    config = config or load_config()
    size, resize = config["size"], config["resize"]
    with Image.open(path) as img:
        img = img.convert("RGB")
        w, h = img.size
        if min(w, h) < 1:
            raise ValueError(f"{path}: empty image")
        # The longer side is rounded to the nearest pixel; the JS demo rounds the same way.
        if w <= h:
            new_w, new_h = resize, max(resize, round(h * resize / w))
        else:
            new_w, new_h = max(resize, round(w * resize / h)), resize
        img = img.resize((new_w, new_h), Image.BILINEAR)
        left, top = (new_w - size) // 2, (new_h - size) // 2
        img = img.crop((left, top, left + size, top + size))
        pixels = np.asarray(img, dtype=np.float32)
    pixels = pixels * np.float32(_SCALES[config["scale"]])
    pixels = (pixels - np.asarray(config["mean"], np.float32)) / np.asarray(config["std"], np.float32)
    return np.ascontiguousarray(pixels.transpose(2, 0, 1)[np.newaxis], dtype=np.float32)
