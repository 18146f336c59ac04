"""docs/onnxruntime-api.md lists every public name of the installed onnxruntime with nnwasm's
status, and every name it marks done, done differently or refused exists in nnwasm (a refused one
raising nnwasm.Unsupported when used, never AttributeError)."""
import re
from pathlib import Path

import numpy as np
import onnxruntime as ort
import onnxruntime.capi.onnxruntime_pybind11_state as ORT_C
import pytest
from onnx import TensorProto, helper

import nnwasm

DOC = Path(__file__).resolve().parent.parent / "docs" / "onnxruntime-api.md"
ROW = re.compile(r"^\| `([^`]+)` \| (done|done differently|refused|n/a) \| (.*)\|$")
EXC = "onnxruntime_pybind11_state."


def table():
    rows = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        m = ROW.match(line)
        if m:
            assert m.group(1) not in rows, f"{m.group(1)} is listed twice"
            rows[m.group(1)] = (m.group(2), m.group(3).strip())
    return rows


def _members(cls):
    if hasattr(cls, "__members__"):   # enums: their members, and each member's name / value
        return list(cls.__members__) + ["name", "value"]
    return [n for n in dir(cls) if not n.startswith("_")]


def onnxruntime_items():
    items = []
    # dir(ort) gains a subpackage once something imports it (onnxruntime.quantization ...): list them all
    subpackages = {p.name for p in Path(ort.__file__).parent.iterdir() if (p / "__init__.py").exists()}
    for name in sorted({n for n in dir(ort) if not n.startswith("_")} | subpackages):
        items.append(name)
        v = getattr(ort, name, None)
        if isinstance(v, type):
            items += [f"{name}.{m}" for m in _members(v)]
    items += [EXC + n for n in dir(ORT_C)
              if isinstance(getattr(ORT_C, n), type) and issubclass(getattr(ORT_C, n), Exception)]
    return items


def test_the_table_lists_every_public_item_of_onnxruntime():
    rows = table()
    missing = [i for i in onnxruntime_items() if i not in rows]
    assert not missing, f"docs/onnxruntime-api.md has no row for {missing}"
    assert len(rows) > 300
    assert all(note for status, note in rows.values() if status != "done"), "every non-done row says how or why"


@pytest.fixture(scope="module")
def samples():
    """Instances for the members that exist on instances only (NodeArg.name, ...)."""
    g = helper.make_graph([helper.make_node("Relu", ["X"], ["Y"])], "g",
                          [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2])])
    sess = nnwasm.InferenceSession(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString())
    sub = sess.get_provider_graph_assignment_info()[0]
    return {"NodeArg": sess.get_inputs()[0], "ModelMetadata": sess.get_modelmeta(),
            "OrtMemoryInfo": sess.get_input_memory_infos()[0], "OrtEpAssignedSubgraph": sub,
            "OrtEpAssignedNode": sub.get_nodes()[0], "OrtValue": nnwasm.OrtValue.ortvalue_from_numpy(np.ones(2, np.float32))}


def resolve(item, samples):
    if item.startswith(EXC):
        return getattr(nnwasm.capi.onnxruntime_pybind11_state, item[len(EXC):])
    if "." not in item:
        return getattr(nnwasm, item)
    cls_name, member = item.split(".")
    cls = getattr(nnwasm, cls_name)
    if hasattr(cls, "__members__"):
        return getattr(next(iter(cls)), member) if member in ("name", "value") else cls[member]
    try:
        return getattr(cls, member)
    except AttributeError:
        if cls_name in samples:
            return getattr(samples[cls_name], member)
        raise


def test_every_listed_name_exists_in_nnwasm(samples):
    bad = []
    for item, (status, _) in table().items():
        if status == "n/a":
            continue
        try:
            value = resolve(item, samples)
        except nnwasm.Unsupported:
            if status != "refused":
                bad.append(f"{item} (marked {status}) raises Unsupported")
            continue
        except AttributeError as e:
            bad.append(f"{item}: {e}")
            continue
        if status == "refused" and "." not in item and isinstance(value, type):
            with pytest.raises(nnwasm.Unsupported):
                value()
    assert not bad, bad


def test_na_rows_are_only_import_artefacts_and_tool_subpackages():
    assert sorted(i for i, (s, _) in table().items() if s == "n/a") == \
        ["backend", "contextlib", "datasets", "import_capi_exception", "onnxruntime_validation", "quantization",
         "tools", "transformers"]
