"""Issue 18 item 2: plan-file and feed fuzzing. Mutated .nnwp files (bytes flipped, truncated or
inserted as they come, and structure edits with the checksum made right again so that they reach
the deeper checks: header words, the I/O table's offsets, shapes, dtypes, names and ops rows, the
plan's op words) are loaded by CPython (wasmtime), by Node as bytes and by Node through the page's
PlanReceiver (web/plan-receiver.mjs, which places the weights in kernels.wasm's memory as they
arrive), then run with feeds of the plan's input shapes. Every case must be refused with an nnwasm
error or run: never a wasm trap, another exception or a hang. Hostile feeds (wrong dtype, rank or
shape, huge and negative dims, NaN/Inf, too little data; in JS detached and shared ArrayBuffers,
non-tensors) must be refused with an nnwasm error or run, and leave the session usable.

NNWASM_FUZZ_PLANS=N cases (default 120: CI); NNWASM_FUZZ_PLANS_START=K."""
import json
import os
import signal
import struct
import subprocess
import time
import zlib
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import nnwasm
from conftest import ROOT

CASES = int(os.environ.get("NNWASM_FUZZ_PLANS", "120"))
START = int(os.environ.get("NNWASM_FUZZ_PLANS_START", "0"))
SEED = 20261127
HEADER = struct.Struct("<4s7I")


def _seed_plans():
    rng = np.random.default_rng(5)
    F = TensorProto.FLOAT
    r = lambda *s: numpy_helper.from_array(rng.standard_normal(s).astype(np.float32))  # noqa: E731

    def init(name, *shape):
        t = r(*shape)
        t.name = name
        return t
    cnn = helper.make_graph(
        [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["r"]),
         helper.make_node("GlobalAveragePool", ["r"], ["g"]), helper.make_node("Flatten", ["g"], ["f"]),
         helper.make_node("Gemm", ["f", "fw", "fb"], ["y"], transB=1)],
        "cnn", [helper.make_tensor_value_info("x", F, [1, 3, 8, 8])], [helper.make_tensor_value_info("y", F, [1, 5])],
        [init("w", 4, 3, 3, 3), init("b", 4), init("fw", 5, 4), init("fb", 5)])
    att = helper.make_graph(
        [helper.make_node("MatMul", ["x", "wq"], ["q"]), helper.make_node("Softmax", ["q"], ["p"], axis=-1),
         helper.make_node("Mul", ["p", "x"], ["y"])],
        "att", [helper.make_tensor_value_info("x", F, [2, 8])], [helper.make_tensor_value_info("y", F, [2, 8])],
        [init("wq", 8, 8)])
    plans = {}
    for g in (cnn, att):
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        m.ir_version = 8
        plans[g.name] = nnwasm.compile_plan(m.SerializeToString())
    return plans


def _fix_crc(data):
    data = bytearray(data)
    struct.pack_into("<I", data, 24, zlib.crc32(bytes(data[32:])) & 0xFFFFFFFF)
    return bytes(data)


def _parts(data):
    _, fmt, abi, flags, io_bytes, plan_bytes, crc, res = HEADER.unpack_from(data)
    io_pad = (io_bytes + 15) // 16 * 16
    return json.loads(data[32:32 + io_bytes]), bytearray(data[32 + io_pad:])


def _assemble(table, plan, words=None):
    io = json.dumps(table, separators=(",", ":")).encode()
    body = io + bytes((len(io) + 15) // 16 * 16 - len(io)) + bytes(plan)
    head = [1, 1, 0, len(io), len(plan), zlib.crc32(body) & 0xFFFFFFFF, 0]
    data = bytearray(HEADER.pack(b"NNWF", *head) + body)
    for i, v in (words or {}).items():
        struct.pack_into("<I", data, 4 * i, v & 0xFFFFFFFF)
    return bytes(data)


WILD = [0, 1, -1, 2, 7, 255, 1 << 16, (1 << 31) - 1, -(1 << 31), 1 << 30, 0x7FFF0000, 12345]


def mutate(rng, data):
    """(bytes, what) of one mutation of a plan file."""
    kind = int(rng.integers(8))
    pick = lambda seq: seq[int(rng.integers(len(seq)))]  # noqa: E731
    if kind == 0:   # bytes as they come: the checksum or the header refuses them
        raw = bytearray(data)
        i = int(rng.integers(len(raw)))
        how = pick(["flip", "truncate", "insert"])
        if how == "flip":
            raw[i] ^= 1 << int(rng.integers(8))
        elif how == "truncate":
            raw = raw[:i]
        else:
            raw[i:i] = rng.integers(0, 256, int(rng.integers(1, 9)), dtype=np.uint8).tobytes()
        return bytes(raw), f"{how} at {i}"
    table, plan = _parts(data)
    if kind == 1:   # a header word
        w = int(rng.integers(1, 8))
        v = pick(WILD)
        return _assemble(table, plan, {w: v} if w != 6 else {6: v}), f"header word {w} = {v}"
    if kind == 2:   # the I/O table's values
        rows = table["inputs"] + table["outputs"]
        row = pick(rows)
        field = pick(["offset", "shape", "dtype", "name"])
        if field == "offset":
            row["offset"] = pick([-1, 1, 1 << 31, 1 << 40, row["offset"] + 4, 0, 3])
        elif field == "shape":
            row["shape"] = pick([[], [0], [1 << 31], [-1, 2], row["shape"] + [2], row["shape"][:-1], [1.5], ["a"]])
        elif field == "dtype":
            row["dtype"] = pick(["int64", "float16", "bool", "string", "nope", 7, None])
        else:
            row["name"] = pick([rows[0]["name"], "", None, 3, "x" * 1000])
        return _assemble(table, plan), f"I/O table {field} = {row.get(field)!r}"
    if kind == 3:   # the ops table / other keys
        what = pick(["ops", "inputs", "outputs", "producer"])
        table[what] = pick([[], None, 7, "x", [["a", "b"]], {"k": 1}, table.get(what, [])[:1] * 3])
        return _assemble(table, plan), f"I/O table {what} replaced"
    # kinds 4-7: the plan's words (header, op words, then anything), the checksum made right
    n = len(plan) // 4
    i = int(pick([rng.integers(0, 8), rng.integers(0, min(n, 64)), rng.integers(0, min(n, 512)), rng.integers(0, n)]))
    k = int(rng.integers(1, 4))
    for j in range(k):
        at = min(n - 1, i + j)
        struct.pack_into("<i", plan, 4 * at, int(pick(WILD + [int(rng.integers(-1000, 1000))])))
    return _assemble(table, plan), f"plan words {i}..{i + k - 1} set"


def cases(start, count):
    plans = _seed_plans()
    names = sorted(plans)
    for case in range(start, start + count):
        rng = np.random.default_rng([SEED, case])
        name = names[case % len(names)]
        data, what = mutate(rng, plans[name])
        yield case, name, data, what, plans[name]


def _feeds(seed_plan):
    table, _ = _parts(seed_plan)
    return {r["name"]: np.ones(r["shape"], np.float32) for r in table["inputs"]}


class _Hang(BaseException):
    pass


def _alarm(*_):
    raise _Hang()


_NP = {"tensor(float)": np.float32, "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(bool)": np.bool_,
       "tensor(float16)": np.float16, "tensor(int8)": np.int8, "tensor(uint8)": np.uint8, "tensor(double)": np.float64}


def run_cpython(data, feeds):
    """feeds: unused (the loaded plan's own inputs are fed, so that a refusal at run is the plan's)."""
    try:
        sess = nnwasm.InferenceSession(data)
    except nnwasm.NnwasmError as e:
        return "refused", f"{type(e).__name__}: {e}"
    feeds = {i.name: np.ones(i.shape, _NP.get(i.type, np.float32)) for i in sess.get_inputs()}
    try:
        sess.run(None, feeds)
        return "ran", ""
    except nnwasm.NnwasmError as e:
        return "run-refused", f"{type(e).__name__}: {e}"


def test_plan_files_cpython():
    t0 = time.perf_counter()
    counts, bad = {}, []
    old = signal.signal(signal.SIGALRM, _alarm)
    try:
        for case, name, data, what, seed in cases(START, CASES):
            signal.setitimer(signal.ITIMER_REAL, 20)
            try:
                outcome, detail = run_cpython(data, _feeds(seed))
            except _Hang:
                outcome, detail = "hang", "over 20 s"
            except Exception as e:   # noqa: BLE001 - a wasmtime trap, an IndexError...: the bug this test looks for
                outcome, detail = "crash", f"{type(e).__name__}: {e}"
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            counts[outcome] = counts.get(outcome, 0) + 1
            if outcome in ("crash", "hang", "run-refused"):
                bad.append(f"case {case} ({name}, {what}): {outcome}: {detail[:300]}")
    finally:
        signal.signal(signal.SIGALRM, old)
    print(f"{CASES} plan files in CPython in {time.perf_counter() - t0:.1f} s: {counts}")
    assert not bad, "\n".join(bad[:20])
    assert counts.get("refused", 0) > CASES // 4, counts


def _node_dist():
    dist = ROOT / "dist" / "web"
    if not (dist / "kernels.wasm").exists():
        pytest.skip("dist/web is not built: run build_scripts/build_web.py")
    return dist


def _run_node(folder, entries, dist):
    (folder / "cases.json").write_text(json.dumps(entries))
    r = subprocess.run(["node", str(ROOT / "tests" / "node" / "fuzz-plans.mjs"), str(folder)], capture_output=True,
                       text=True, timeout=600, cwd=ROOT, env={**os.environ, "NNWASM_DIST_URL": dist.as_uri() + "/"})
    assert r.returncode == 0, r.stderr[-3000:]
    return [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]


def test_plan_files_node_bytes_and_plan_receiver(tmp_path):
    dist = _node_dist()
    t0 = time.perf_counter()
    entries, whats = [], {}
    for case, name, data, what, seed in cases(START, CASES):
        (tmp_path / f"{case}.nnwp").write_bytes(data)
        feeds = {k: {"type": "float32", "dims": list(v.shape)} for k, v in _feeds(seed).items()}
        entries.append({"case": case, "file": f"{case}.nnwp", "feeds": feeds})
        whats[case] = f"{name}, {what}"
    rows = _run_node(tmp_path, entries, dist)
    counts = {}
    for r in rows:
        counts[(r["how"], r["outcome"])] = counts.get((r["how"], r["outcome"]), 0) + 1
    print(f"{CASES} plan files in Node in {time.perf_counter() - t0:.1f} s: {counts}")
    assert len(rows) == 2 * CASES, f"{len(rows)} results for {CASES} cases (a case killed the worker?)"
    bad = [f"case {r['case']} ({whats[r['case']]}) via {r['how']}: {r['outcome']}: {r.get('detail', '')}"
           for r in rows if r["outcome"] in ("trap", "crash", "run-refused")]
    assert not bad, "\n".join(bad[:20])
    # the two ways of loading a file agree
    by = {}
    for r in rows:
        by.setdefault(r["case"], {})[r["how"]] = r["outcome"]
    differ = [c for c, v in by.items() if v.get("bytes") != v.get("receiver")]
    assert not differ, f"bytes and PlanReceiver disagree on cases {differ[:10]}"


# --- feeds ----------------------------------------------------------------------------------------
def _bad_feeds(x):
    n = x.size
    return {
        "int32 for float32": x.astype(np.int32), "float64 for float32": x.astype(np.float64),
        "float16 for float32": x.astype(np.float16), "bool": x.astype(bool),
        "rank + 1": x[None], "rank - 1": x.reshape(-1), "a dim off by one": np.ones(x.shape[:-1] + (x.shape[-1] + 1,),
                                                                                  np.float32),
        "empty": np.ones((0,) + x.shape[1:], np.float32), "NaN and Inf": np.where(np.arange(n).reshape(x.shape) % 2,
                                                                                 np.inf, np.nan).astype(np.float32),
        "a list": x.tolist(), "a string": "x", "None": None, "object array": x.astype(object),
        "non-contiguous": np.ones(x.shape[:-1] + (2 * x.shape[-1],), np.float32)[..., ::2],
        "huge broadcast view": np.broadcast_to(np.float32(1), (1 << 20, 1 << 20)),
    }


def test_hostile_feeds_cpython():
    plans = _seed_plans()
    t0 = time.perf_counter()
    rng = np.random.default_rng(0)
    for name, plan in plans.items():
        feeds = _feeds(plan)
        (iname, good), = feeds.items()
        good = rng.standard_normal(good.shape).astype(np.float32)
        for sess in (nnwasm.InferenceSession(plan),):
            want = sess.run(None, {iname: good})
            for what, bad in _bad_feeds(good).items():
                try:
                    out = sess.run(None, {iname: bad})
                    assert what in ("NaN and Inf", "non-contiguous", "a list"), f"{name}: {what} ran"   # lists: as ort
                    assert out[0].shape == want[0].shape
                except nnwasm.NnwasmError as e:
                    assert iname in str(e) or what in ("None", "a string", "a list"), (what, str(e))
                np.testing.assert_array_equal(sess.run(None, {iname: good})[0], want[0], err_msg=what)
            for bad_call in ({}, {iname: good, "nope": good}):
                with pytest.raises(nnwasm.NnwasmError):
                    sess.run(None, bad_call)
    print(f"hostile feeds in CPython: {time.perf_counter() - t0:.1f} s")


def test_hostile_feeds_node(tmp_path):
    dist = _node_dist()
    plans = _seed_plans()
    entries = []
    for name, plan in plans.items():
        (tmp_path / f"{name}.nnwp").write_bytes(plan)
        feeds = {k: {"type": "float32", "dims": list(v.shape)} for k, v in _feeds(plan).items()}
        entries.append({"case": name, "mode": "feeds", "file": f"{name}.nnwp", "feeds": feeds})
    t0 = time.perf_counter()
    rows = _run_node(tmp_path, entries, dist)
    print(f"hostile feeds in Node: {time.perf_counter() - t0:.1f} s, {len(rows)} feeds")
    assert len(rows) == 14 * len(plans), rows
    for r in rows:
        assert r["after"] == "usable", r
        assert r["outcome"] in ("run-refused", "ran"), r
        if r["outcome"] == "ran":
            assert r["how"] in ("NaN and Inf", "a SharedArrayBuffer"), r
