""".nnwp plan files: compile_plan / `python -m nnwasm compile` write them (byte-identical across
runs and processes), InferenceSession runs them with outputs bit-identical to the ONNX session's,
the compiler refuses what a plan file can't hold, and the reader refuses every corrupted file with
an nnwasm error, never a crash."""
import json
import os
import struct
import subprocess
import sys
import zlib

import numpy as np
import pytest
from onnx import TensorProto, helper

import nnwasm
from conftest import ROOT
from model_builders import graph_model, rand
from nnwasm import planfile
from nnwasm.profiling import node_label
from nnwasm.wasm.opcodes import OPS
from quant_models import cnn_inputs, small_bert, small_cnn

WASM = "WasmExecutionProvider"


def _ids():
    return (np.arange(8, dtype=np.int64).reshape(1, 8) * 7) % 50


@pytest.fixture(scope="module")
def models():
    cnn = small_cnn().SerializeToString()
    out = {"cnn": (cnn, {"x": cnn_inputs(1)[0]}),
           "bert": (small_bert().SerializeToString(), {"ids": _ids()})}
    try:
        from quant_models import quantize_static_qdq
        out["int8"] = (quantize_static_qdq(small_cnn(), cnn_inputs(8), per_channel=True), {"x": cnn_inputs(1)[0]})
    except ImportError:   # onnxruntime.quantization absent
        pass
    return out


@pytest.fixture(scope="module")
def cnn_plan(models):
    return nnwasm.compile_plan(models["cnn"][0])


@pytest.mark.parametrize("name", ["cnn", "bert", "int8"])
def test_plan_session_is_bit_identical_to_onnx_session(models, name):
    if name not in models:
        pytest.skip("onnxruntime.quantization is not installed")
    model, feeds = models[name]
    data = nnwasm.compile_plan(model)
    assert data == nnwasm.compile_plan(model)
    ref = nnwasm.InferenceSession(model)
    assert {p for _, _, p in ref.get_provider_assignment()} == {WASM}
    sess = nnwasm.InferenceSession(data)
    assert type(sess).__name__ == "PlanSession" and isinstance(sess, nnwasm.InferenceSession)
    assert sess.get_providers() == [WASM]
    assert [(a.name, a.type, a.shape) for a in sess.get_inputs()] == \
           [(a.name, a.type, a.shape) for a in ref.get_inputs()]
    assert [(a.name, a.type) for a in sess.get_outputs()] == [(a.name, a.type) for a in ref.get_outputs()]
    ops = sess.get_provider_assignment()
    assert ops and {p for _, _, p in ops} == {WASM}
    assert sess.get_modelmeta().producer_name == f"nnwasm {nnwasm.__version__}"
    for _ in range(2):   # the plan runs again on the same arena
        got, want = sess.run(None, feeds), ref.run(None, feeds)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and g.shape == w.shape and g.tobytes() == w.tobytes()


def test_plan_session_from_path_and_feed_checks(cnn_plan, tmp_path, models):
    path = tmp_path / "cnn.nnwp"
    path.write_bytes(cnn_plan)
    sess = nnwasm.InferenceSession(str(path))
    x = models["cnn"][1]["x"]
    assert sess.run(["logits"], {"x": x})[0].shape == (1, 10)
    with pytest.raises(nnwasm.InvalidArgument, match="invalid input name"):
        sess.run(None, {"y": x})
    with pytest.raises(nnwasm.InvalidArgument, match="missing"):
        sess.run(None, {})
    with pytest.raises(nnwasm.InvalidArgument, match="type"):
        sess.run(None, {"x": x.astype(np.float64)})
    with pytest.raises(nnwasm.InvalidArgument, match="rank"):
        sess.run(None, {"x": x[0]})
    with pytest.raises(nnwasm.InvalidArgument, match="shape"):
        sess.run(None, {"x": np.zeros((1, 3, 16, 15), np.float32)})
    with pytest.raises(nnwasm.InvalidArgument, match="invalid output name"):
        sess.run(["nope"], {"x": x})
    with pytest.raises(nnwasm.InvalidArgument, match="alone"):
        nnwasm.InferenceSession(cnn_plan, providers=["NumpyExecutionProvider"])
    assert nnwasm.InferenceSession(cnn_plan, providers=[(WASM, {})]).get_providers() == [WASM]


def test_symbolic_dims_bound_by_input_shapes():
    model = graph_model([helper.make_node("Relu", ["x"], ["y"])], {"x": rand(2, 3)}, ["y"])
    import onnx
    m = onnx.load_from_string(model)
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
    model = m.SerializeToString()
    with pytest.raises(nnwasm.InvalidArgument, match="'x'.*--input-shape"):
        nnwasm.compile_plan(model)
    sess = nnwasm.InferenceSession(nnwasm.compile_plan(model, {"x": (4, 3)}))
    assert sess.get_inputs()[0].shape == [4, 3]
    x = rand(4, 3)
    np.testing.assert_array_equal(sess.run(None, {"x": x})[0], np.maximum(x, 0))


def _numpy_only_model():
    for op in ["Acosh", "Asinh", "Atanh", "Sinh", "Cosh", "Erf", "Softplus", "Sin"]:
        model = graph_model([helper.make_node("Relu", ["x"], ["a"], name="relu"),
                             helper.make_node(op, ["a"], ["y"], name="needs_numpy")], {"x": rand(2, 3)}, ["y"])
        if "NumpyExecutionProvider" in {p for *_, p in nnwasm.InferenceSession(model).get_provider_assignment()}:
            return model
    pytest.fail("WASM now runs every candidate op: add one only numpy runs")


def test_compile_refusals():
    with pytest.raises(nnwasm.Unsupported, match="needs_numpy"):
        nnwasm.compile_plan(_numpy_only_model())
    from test_control_flow import if_on_scalar
    with pytest.raises(nnwasm.Unsupported, match="not in plan files yet"):
        nnwasm.compile_plan(if_on_scalar())
    relu = [helper.make_node("Relu", ["x"], ["y"])]
    for outs, bad in ((["y", "x"], "x"), (["c", "y"], "c")):   # a graph input, an initializer
        model = graph_model(relu, {"x": rand(2, 3)}, outs, {"c": rand(2)}, out_dtype=TensorProto.FLOAT)
        with pytest.raises(nnwasm.Unsupported, match=rf"\['{bad}'\].*not in plan"):
            nnwasm.compile_plan(model)


def _cli(*args, hashseed="0"):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "py_runtime"), "PYTHONHASHSEED": hashseed}
    return subprocess.run([sys.executable, "-m", "nnwasm", "compile", *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=120)


def test_cli_compiles_identically_across_processes(tmp_path, models, cnn_plan):
    from test_control_flow import if_on_scalar
    src = tmp_path / "bert.onnx"
    src.write_bytes(models["bert"][0])
    for seed in ("1", "2"):
        proc = _cli(src, "-o", tmp_path / f"b{seed}.nnwp", "--input-shape", "ids=1,8", hashseed=seed)
        assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "b1.nnwp").read_bytes() == (tmp_path / "b2.nnwp").read_bytes() \
        == nnwasm.compile_plan(models["bert"][0])
    sym = tmp_path / "sym.onnx"
    import onnx
    m = onnx.load_from_string(models["cnn"][0])
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "N"
    sym.write_bytes(m.SerializeToString())
    bad = {"numpy.onnx": _numpy_only_model(), "if.onnx": if_on_scalar()}
    for name, data in bad.items():
        (tmp_path / name).write_bytes(data)
    for model, words in [(sym, "--input-shape x="), (tmp_path / "numpy.onnx", "needs_numpy"),
                         (tmp_path / "if.onnx", "not in plan files yet")]:
        proc = _cli(model, "-o", tmp_path / "out.nnwp")
        assert proc.returncode == 2 and "nnwasm compile: error:" in proc.stderr and words in proc.stderr, proc.stderr
        assert not (tmp_path / "out.nnwp").exists()
    proc = _cli(sym, "-o", tmp_path / "sym.nnwp", "--input-shape", "x=1,3,16,16")
    assert proc.returncode == 0 and (tmp_path / "sym.nnwp").read_bytes() == cnn_plan


# --- the reader on hostile bytes -----------------------------------------------------------------

def _fields(data):
    return list(struct.unpack_from("<7I", data, 4))   # format, abi, flags, io_bytes, plan_bytes, crc, reserved


def _with_header(data, **changes):
    names = ["format", "abi", "flags", "io_bytes", "plan_bytes", "crc", "reserved"]
    f = dict(zip(names, _fields(data)))
    f.update(changes)
    return data[:4] + struct.pack("<7I", *[f[n] for n in names]) + data[32:]


def _rewrap(io, plan):
    """A file around any I/O table bytes and plan, with a correct checksum."""
    body = io + bytes(-len(io) % 16) + plan
    return b"NNWF" + struct.pack("<7I", 1, 1, 0, len(io), len(plan), zlib.crc32(body), 0) + body


def _refused(data, kind=nnwasm.NnwasmError, match=None):
    with pytest.raises(kind, match=match):
        planfile.read(data)
    with pytest.raises(kind, match=match):
        nnwasm.InferenceSession(data)


def test_reader_refuses_truncation_and_header_changes(cnn_plan):
    data = cnn_plan
    _, _, _, io_bytes, plan_bytes, crc, _ = _fields(data)
    io_end = 32 + io_bytes
    for cut in [*range(4, 33, 4), io_end, 32 + (io_bytes + 15) // 16 * 16, len(data) - plan_bytes // 2, len(data) - 1]:
        _refused(data[:cut], match="plan file|not a plan file")
    _refused(data + b"\0", match="do not add up")
    _refused(b"NNWX" + data[4:], nnwasm.InvalidModel)   # not our magic: read as ONNX, refused there
    with pytest.raises(nnwasm.InvalidModel, match="not a plan file"):
        planfile.read(b"NNWX" + data[4:])
    _refused(_with_header(data, format=2), nnwasm.Unsupported, "format version 2")
    _refused(_with_header(data, abi=2), nnwasm.Unsupported, "plan version 2")
    _refused(_with_header(data, flags=1), nnwasm.Unsupported, "flags")
    for field, value in [("io_bytes", io_bytes + 1), ("io_bytes", io_bytes + 16), ("io_bytes", 0xFFFFFFFF),
                         ("plan_bytes", plan_bytes - 4), ("plan_bytes", 0xFFFFFFFF)]:
        _refused(_with_header(data, **{field: value}), nnwasm.InvalidModel)
    _refused(_with_header(data, crc=crc ^ 1), nnwasm.InvalidModel, "checksum")
    for pos in (33, io_end + 1, len(data) - 1):   # any changed byte after the header
        _refused(data[:pos] + bytes([data[pos] ^ 0x20]) + data[pos + 1:], nnwasm.InvalidModel, "checksum")
    _refused(_with_header(data, reserved=7), nnwasm.InvalidModel, "reserved")


def test_reader_refuses_bad_io_tables(cnn_plan):
    pf = planfile.read(cnn_plan)
    table = json.loads(cnn_plan[32:32 + _fields(cnn_plan)[3]])
    assert list(table) == ["inputs", "outputs", "producer", "model", "ops"]
    x = table["inputs"][0]

    def with_input(**change):
        return json.dumps({**table, "inputs": [{**x, **change}]}, separators=(",", ":")).encode()

    cases = [b"{", b"\xff\xfe", b"[]", b"null", b'{"inputs":[]}',
             json.dumps({k: v for k, v in table.items() if k != "producer"}).encode(),
             with_input(dtype="float128"), with_input(dtype="object"), with_input(dtype=1),
             with_input(shape=[1, 3, "h", 16]), with_input(shape=None), with_input(shape=[1, -3, 16, 16]),
             with_input(offset=pf.arena_bytes), with_input(offset=-16), with_input(offset=1.5),
             with_input(shape=[1 << 40, 3, 16, 16]), with_input(name=None),
             json.dumps({**table, "inputs": [x, x]}).encode(), b"[" * 100000, b'{"inputs":"ab"}',
             with_input(offset=10 ** 400), b'{"inputs":[{"name":"x","dtype":"float32","shape":[1],"offset":NaN}]}']
    for io in cases:
        _refused(_rewrap(io, pf.plan), nnwasm.InvalidModel)
    _refused(_rewrap(with_input(), pf.plan[:28]), nnwasm.InvalidModel, "shorter than its header")
    _refused(_rewrap(with_input(), b"XXXX" + pf.plan[4:]), nnwasm.InvalidModel, "plan magic")
    assert planfile.read(_rewrap(with_input(), pf.plan)) == pf


def test_ops_table_names_nodes_and_kernels(cnn_plan, models):
    """Each run op's [node, op type, kernel]: the ONNX session's nodes and plan ops, one row per op;
    a table that does not match the plan is refused, a file from before the table still reads."""
    pf = planfile.read(cnn_plan)
    table = json.loads(cnn_plan[32:32 + _fields(cnn_plan)[3]])
    assert [tuple(r) for r in table["ops"]] == [tuple(op) for op in pf.ops]
    codes = planfile.run_opcodes(pf.plan)
    assert [op.kernel for op in pf.ops] == [name for c in codes for name, op in OPS.items() if op.code == c]
    ref = nnwasm.InferenceSession(models["cnn"][0])
    nodes = [(node_label(n), n.op_type) for p in next(iter(ref._cache.values())).parts for n in p.nodes]
    planned = list(dict.fromkeys((op.node, op.op_type) for op in pf.ops))
    assert [n for n in nodes if n in planned] == planned   # in order; fused epilogues have no op of their own
    assert nnwasm.InferenceSession(cnn_plan).get_provider_assignment() == [(*n, WASM) for n in planned]

    def with_ops(ops):
        return json.dumps({**table, "ops": ops}, separators=(",", ":")).encode()
    rows = table["ops"]
    for ops, why in [(rows[:-1], "lists"), (rows + [rows[0]], "lists"), ("conv", "lists no"),
                     ([rows[0][:2]] + rows[1:], "row 0"), ([[1, 2, 3]] + rows[1:], "row 0"),
                     ([rows[0][:2] + ["gemm"]] + rows[1:], "names kernel 'gemm'")]:
        _refused(_rewrap(with_ops(ops), pf.plan), nnwasm.InvalidModel, why)
    old = {k: v for k, v in table.items() if k != "ops"}
    before = planfile.read(_rewrap(json.dumps(old, separators=(",", ":")).encode(), pf.plan))
    assert [tuple(op) for op in before.ops] == [(f"#{k}", op.kernel, op.kernel) for k, op in enumerate(pf.ops)]


def test_hostile_plan_words_are_refused_by_nnw_plan_load(cnn_plan):
    """Past the file checks (checksum recomputed), kernels.wasm's validation is the last guard."""
    pf = planfile.read(cnn_plan)
    io = cnn_plan[32:32 + _fields(cnn_plan)[3]]
    n_words = struct.unpack_from("<8i", pf.plan)[6]
    refused = 0
    rng = np.random.default_rng(0)
    for k in range(8, 8 + n_words, max(1, n_words // 40)):
        for value in (-1, 1 << 30, int(rng.integers(0, 1 << 16))):
            plan = bytearray(pf.plan)
            struct.pack_into("<i", plan, 4 * k, value)
            try:
                nnwasm.InferenceSession(_rewrap(io, bytes(plan)))
            except nnwasm.NnwasmError:
                refused += 1
    assert refused > 40


NO_NUMPY = r"""
import json, sys
sys.modules["numpy"] = None
sys.path.insert(0, sys.argv[1])
import nnwasm
from nnwasm import dtypes
from nnwasm.tensor import TensorData
data = nnwasm.compile_plan(sys.argv[2])
sess = nnwasm.InferenceSession(data)
y, = sess._run_raw(None, {"x": TensorData(dtypes.FLOAT32, (1, 3, 16, 16), open(sys.argv[3], "rb").read())})
print(json.dumps({"plan": data.hex(), "y": bytes(y.data).hex(), "numpy": sys.modules.get("numpy") is not None}))
"""


def test_compile_and_run_without_numpy(tmp_path, models, cnn_plan):
    model, feeds = models["cnn"]
    (tmp_path / "m.onnx").write_bytes(model)
    (tmp_path / "x.bin").write_bytes(feeds["x"].tobytes())
    proc = subprocess.run([sys.executable, "-c", NO_NUMPY, str(ROOT / "py_runtime"), str(tmp_path / "m.onnx"),
                           str(tmp_path / "x.bin")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert not out["numpy"] and bytes.fromhex(out["plan"]) == cnn_plan
    assert bytes.fromhex(out["y"]) == nnwasm.InferenceSession(model).run(None, feeds)[0].tobytes()


def test_efficientnet_plan_file_is_bit_identical():
    """The demo's model: one plan, byte-identical compiles, outputs identical to the ONNX session's."""
    from imagenet_fixture import preprocess
    model = ROOT / "demo" / "assets" / "efficientnet-lite0.onnx"
    data = nnwasm.compile_plan(str(model))
    assert data == nnwasm.compile_plan(model.read_bytes())
    x = preprocess(ROOT / "demo" / "assets" / "coffee.png")
    got = nnwasm.InferenceSession(data).run(None, {"input": x})[0]
    assert got.tobytes() == nnwasm.InferenceSession(str(model)).run(None, {"input": x})[0].tobytes()


def test_abi_version_is_kernels_plan_version():
    """kernels.wasm exports no version: the writer's abi_version is wasm/plan.py's, which must be nnw.h's."""
    import re
    header = (ROOT / "kernels_c" / "nnw.h").read_text()
    assert int(re.search(r"#define NNW_PLAN_VERSION (\d+)", header).group(1)) == planfile.ABI_VERSION


PYODIDE_COMPILE = """
import { readFileSync } from "node:fs";
import { boot, env } from "%s";
env.distURL = process.env.NNWASM_DIST_URL;
const py = (await boot()).pyodide;
for (const path of process.argv.slice(2)) {
  py.globals.set("model", new Uint8Array(readFileSync(path)));
  console.log(py.runPython("import nnwasm\\nnnwasm.compile_plan(model.to_bytes()).hex()"));
}
"""


@pytest.mark.node
def test_pyodide_compiles_the_same_bytes(tmp_path, models, cnn_plan):
    """compile_plan in Pyodide (no numpy) writes the file CPython writes, byte for byte."""
    import shutil
    node = shutil.which("node")
    assert node, "Node.js is not installed"
    build = subprocess.run([sys.executable, str(ROOT / "build_scripts" / "build_web.py")],
                           capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr
    names = [n for n in ("cnn", "bert", "int8") if n in models]
    for n in names:
        (tmp_path / f"{n}.onnx").write_bytes(models[n][0])
    script = tmp_path / "compile.mjs"
    script.write_text(PYODIDE_COMPILE % (ROOT / "web" / "nnwasm.mjs").as_uri())
    env = {**os.environ, "NNWASM_DIST_URL": (ROOT / "dist" / "web").as_uri() + "/"}
    proc = subprocess.run([node, str(script), *[str(tmp_path / f"{n}.onnx") for n in names]], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = proc.stdout.strip().splitlines()[-len(names):]
    assert got[0] == cnn_plan.hex()
    assert got == [nnwasm.compile_plan(models[n][0]).hex() for n in names]
