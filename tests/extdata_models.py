"""Models whose initializers live in external data files (model.onnx + model.onnx.data), for
tests/test_external_data.py: a small one (every default run), a ~1.5 GB one (slow, cached under
$NNWASM_EXTDATA_DIR or /work/cache/extdata, never in git), a model claiming more than wasm32's
4 GB (a sparse file: no disk used), and broken ones (bad input). Random weights, numpy and the
onnx helper; the big one is written chunk by chunk, never held whole in memory."""
import json
import os
from pathlib import Path

import numpy as np
from onnx import ModelProto, TensorProto, helper, numpy_helper, save_model

OPSET = [helper.make_opsetid("", 17)]


def cache_dir():
    return Path(os.environ.get("NNWASM_EXTDATA_DIR", "/work/cache/extdata"))


def _external(name, shape, location, offset, length, dtype=TensorProto.FLOAT):
    t = TensorProto(name=name, data_type=dtype, dims=shape)
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", str(offset)), ("length", str(length))):
        e = t.external_data.add()
        e.key, e.value = k, v
    return t


def _graph(tables, hidden, out, n_ids, w_init):
    """ids [1, n_ids] -> sum of Gather(table_i, ids) -> MatMul W [hidden, out] -> y [1, n_ids, out]."""
    nodes, acc = [], None
    for i, t in enumerate(tables):
        nodes.append(helper.make_node("Gather", [t.name, "ids"], [f"e{i}"], name=f"gather{i}"))
        if acc is not None:
            nodes.append(helper.make_node("Add", [acc, f"e{i}"], [f"s{i}"], name=f"add{i}"))
            acc = f"s{i}"
        else:
            acc = f"e{i}"
    nodes.append(helper.make_node("MatMul", [acc, "W"], ["y"], name="matmul0"))
    n = n_ids if isinstance(n_ids, int) else "n"   # "n": a symbolic dim, the plan built at the first run
    g = helper.make_graph(nodes, "extdata", [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, n])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, n, out])],
                          list(tables) + [w_init])
    return helper.make_model(g, opset_imports=OPSET, ir_version=9)


def build(folder, rows, hidden, n_tables, out=64, n_ids=8, location="model.onnx.data", seed=0):
    """Writes folder/model.onnx and folder/<location> (n_tables tables [rows, hidden] float32, then
    W [hidden, out], 4096-aligned as onnx writes them) and folder/case.json (ids, onnxruntime's y)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    tables, offset = [], 0
    with open(folder / location, "wb") as f:
        for i in range(n_tables):
            length = rows * hidden * 4
            tables.append(_external(f"table{i}", [rows, hidden], location, offset, length))
            for r in range(0, rows, 1 << 14):   # 64 MB at a time for hidden 1024
                n = min(1 << 14, rows - r)
                f.write(rng.standard_normal((n, hidden), dtype=np.float32).tobytes())
            offset += length
            pad = -offset % 4096
            f.write(bytes(pad))
            offset += pad
        w = rng.standard_normal((hidden, out), dtype=np.float32) / np.float32(np.sqrt(hidden))
        f.write(w.tobytes())
        w_init = _external("W", [hidden, out], location, offset, w.nbytes)
    model = _graph(tables, hidden, out, n_ids, w_init)
    save_model(model, str(folder / "model.onnx"))
    ids = np.concatenate([[0, rows - 1], rng.integers(0, rows, n_ids - 2)]).reshape(1, n_ids).astype(np.int64)
    import onnxruntime
    y = onnxruntime.InferenceSession(str(folder / "model.onnx"), providers=["CPUExecutionProvider"]).run(
        None, {"ids": ids})[0]
    case = {"ids": ids.ravel().tolist(), "y": y.ravel().tolist(), "dims": list(y.shape),
            "weights_bytes": offset + w.nbytes, "location": location}
    (folder / "case.json").write_text(json.dumps(case))
    return case


def build_big(folder=None):
    """~1.5 GB: two [180000, 1024] float32 tables (737 MB each, under kernels.wasm's 1 GB a
    tensor) and a [1024, 64] MatMul. Built once; reused while its case.json is there."""
    folder = Path(folder or cache_dir() / "big")
    if (folder / "case.json").exists():
        return json.loads((folder / "case.json").read_text())
    return build(folder, rows=180_000, hidden=1024, n_tables=2)


def build_over_4gb(folder):
    """A model whose two tables claim 2.25 GB each (4.5 GB in all) of a sparse data file of that
    size: truncate() allocates no disk, and the check must refuse it before reading a byte."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rows, hidden = 576 * 1024, 1024                        # 2.25 GiB a table
    length = rows * hidden * 4
    tables = [_external(f"table{i}", [rows, hidden], "model.onnx.data", i * length, length) for i in range(2)]
    w = np.zeros((hidden, 4), np.float32)
    model = _graph(tables, hidden, 4, 2, numpy_helper.from_array(w, "W"))
    save_model(model, str(folder / "model.onnx"))
    with open(folder / "model.onnx.data", "wb") as f:
        f.truncate(2 * length)
    return 2 * length


def build_bad(folder):
    """Broken variants of a small model, each in its own folder: {case: folder}."""
    folder = Path(folder)
    good = folder / "good"
    case = build(good, rows=50, hidden=16, n_tables=1, out=8, n_ids=4)
    out = {"good": str(good)}
    data = (good / "model.onnx.data").read_bytes()
    base = _graph([_external("table0", [50, 16], "model.onnx.data", 0, 50 * 16 * 4)], 16, 8, 4,
                  _external("W", [16, 8], "model.onnx.data", case["weights_bytes"] - 16 * 8 * 4, 16 * 8 * 4))
    variants = {
        # a location leaving the folder (a file there exists: it must not be read)
        "outside": ("../good/model.onnx.data", None),
        "absolute": (str(good / "model.onnx.data"), None),
        # W's bytes run past the file's end
        "past_end": ("model.onnx.data", data[:-100]),
        # the file is not there
        "missing": ("model.onnx.data", False),
        # a link in the folder leading out of it
        "link": ("model.onnx.data", "link"),
        # not bad: the ids' length symbolic, so the weights go to the arena at the first run
        "symbolic": ("model.onnx.data", data),
    }
    dynamic = _graph([_external("table0", [50, 16], "model.onnx.data", 0, 50 * 16 * 4)], 16, 8, None,
                     _external("W", [16, 8], "model.onnx.data", case["weights_bytes"] - 16 * 8 * 4, 16 * 8 * 4))
    for name, (location, contents) in variants.items():
        d = folder / name
        d.mkdir(parents=True, exist_ok=True)
        m = ModelProto()
        m.CopyFrom(dynamic if name == "symbolic" else base)
        for t in m.graph.initializer:
            for e in t.external_data:
                if e.key == "location":
                    e.value = location
        save_model(m, str(d / "model.onnx"))
        if contents == "link":
            (d / "model.onnx.data").unlink(missing_ok=True)
            (d / "model.onnx.data").symlink_to(good / "model.onnx.data")
        elif contents is None:
            (d / "model.onnx.data").write_bytes(data)   # a sibling that must not be what is read
        elif contents is not False:
            (d / "model.onnx.data").write_bytes(contents)
        out[name] = str(d)
    return out, case
