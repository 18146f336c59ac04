"""The ONNX backend suite as issue 8 counts it: the installed onnx's node cases, generated in memory
(onnx.backend.test.case.node.collect_testcases(): this wheel ships no node data), plus the wheel's
backend/test/data/{simple,pytorch-converted,pytorch-operator} models with their stored data sets.
Each case is fed as a user would feed it: TensorProto-stored values (bfloat16, float8, int4 ...)
through onnx.numpy_helper.to_array, numpy scalars as 0-d arrays, sequences as lists of arrays, an
absent optional as None; and its outputs are compared as onnx's backend runner does (rtol/atol for
floats, exact otherwise, lists element by element).

    .venv/bin/python tests/backend_suite.py [--runtime nnwasm|onnxruntime] [--providers numpy|default]
                                            [--only SUBSTRING] [--write-manifest]

prints the pass count (and the failures, grouped); --write-manifest rewrites the manifest's lines
for both provider lists from this run (keeping the reasons written by hand). tests/test_conformance.py
is the test; the manifest of expected failures is tests/conformance_manifest.txt.
"""
import argparse
import collections
import dataclasses
import glob
import os
import re
import sys
import warnings
from pathlib import Path

import numpy as np

MANIFEST = Path(__file__).resolve().parent / "conformance_manifest.txt"
DATA_SETS = ("simple", "pytorch-converted", "pytorch-operator")
PROVIDER_LISTS = {"numpy": ["NumpyExecutionProvider"], "default": None}


@dataclasses.dataclass
class Case:
    name: str
    model: bytes
    data_sets: list   # [(inputs: [value], expected: [value])]
    rtol: float
    atol: float


def _value(x):
    """A stored value as a user holds it."""
    import onnx
    from onnx import numpy_helper
    if isinstance(x, onnx.TensorProto):
        return numpy_helper.to_array(x)
    if isinstance(x, onnx.SequenceProto):
        return [_value(t) for t in numpy_helper.to_list(x)]
    if isinstance(x, onnx.OptionalProto):
        return _value(numpy_helper.to_optional(x))
    if isinstance(x, (list, tuple)):
        return [_value(v) for v in x]
    if x is None or isinstance(x, np.ndarray):
        return x
    return np.asarray(x)


def node_cases():
    import onnx.backend.test.case.node as node
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = node.collect_testcases()
    return [Case(c.name, c.model.SerializeToString(),
                 [([_value(v) for v in ins], [_value(v) for v in outs]) for ins, outs in c.data_sets],
                 c.rtol, c.atol) for c in cases]


def _read_pb(path):
    import onnx
    raw = Path(path).read_bytes()
    for proto in (onnx.TensorProto, onnx.SequenceProto, onnx.OptionalProto):
        p = proto()
        try:
            p.ParseFromString(raw)
        except Exception:   # noqa: BLE001 - try the next kind
            continue
        if proto is onnx.TensorProto and not (p.dims or p.raw_data or p.data_type):
            continue
        return _value(p)
    raise ValueError(f"{path}: not a TensorProto, SequenceProto or OptionalProto")


def data_cases():
    import onnx
    root = Path(onnx.__file__).parent / "backend" / "test" / "data"
    out = []
    for kind in DATA_SETS:
        for d in sorted(glob.glob(str(root / kind / "*"))):
            model = Path(d) / "model.onnx"
            if not model.exists():
                continue
            sets = []
            for s in sorted(glob.glob(os.path.join(d, "test_data_set_*"))):
                ins = [_read_pb(p) for p in sorted(glob.glob(os.path.join(s, "input_*.pb")), key=_index)]
                outs = [_read_pb(p) for p in sorted(glob.glob(os.path.join(s, "output_*.pb")), key=_index)]
                sets.append((ins, outs))
            out.append(Case(f"{kind}/{os.path.basename(d)}", model.read_bytes(), sets, 1e-3, 1e-7))
    return out


def _index(path):
    return int(Path(path).stem.rsplit("_", 1)[1])


def all_cases():
    return node_cases() + data_cases()


def _compare(got, want, rtol, atol, where):
    if isinstance(want, list):
        assert isinstance(got, list), f"{where}: got {type(got).__name__}, expected a list (sequence)"
        assert len(got) == len(want), f"{where}: a sequence of {len(got)}, expected {len(want)}"
        for k, (g, w) in enumerate(zip(got, want)):
            _compare(g, w, rtol, atol, f"{where}[{k}]")
        return
    if want is None:
        assert got is None, f"{where}: got a value, expected None (an empty optional)"
        return
    assert isinstance(got, np.ndarray), f"{where}: got {type(got).__name__}, expected an array"
    assert got.shape == want.shape, f"{where}: shape {got.shape}, expected {want.shape}"
    assert got.dtype == want.dtype, f"{where}: dtype {got.dtype}, expected {want.dtype}"
    if want.dtype.kind in "fc" or want.dtype.name in ("bfloat16",) or want.dtype.name.startswith("float"):
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol,
                                   err_msg=where)
    else:
        np.testing.assert_array_equal(got, want, err_msg=where)


class Runtime:
    """nnwasm or onnxruntime behind one interface: session(model bytes, provider list name)."""

    def __init__(self, name):
        self.name = name
        if name == "nnwasm":
            import nnwasm
            self.mod = nnwasm
        else:
            import onnxruntime
            self.mod = onnxruntime

    def session(self, model, providers):
        """providers: a PROVIDER_LISTS name, or (nnwasm) a SessionOptions for the default list"""
        if self.name == "nnwasm":
            if isinstance(providers, self.mod.SessionOptions):
                return self.mod.InferenceSession(model, providers)
            return self.mod.InferenceSession(model, providers=PROVIDER_LISTS[providers])
        so = self.mod.SessionOptions()
        so.intra_op_num_threads = 1
        so.log_severity_level = 3
        return self.mod.InferenceSession(model, so, providers=["CPUExecutionProvider"])


def run_case(runtime, case, providers="default", results=None):
    """Runs every data set of the case; raises on any difference. Returns the session. providers:
    see Runtime.session; results (a list), if given, receives each data set's outputs."""
    sess = runtime.session(case.model, providers)
    names = [i.name for i in sess.get_inputs()]
    outs = [o.name for o in sess.get_outputs()]
    for ins, expected in case.data_sets:
        feed = dict(zip(names, ins))
        got = sess.run(outs[:len(expected)], feed)
        if results is not None:
            results.append(got)
        assert len(got) == len(expected), f"{len(got)} outputs, expected {len(expected)}"
        for k, (g, w) in enumerate(zip(got, expected)):
            _compare(g, w, case.rtol, case.atol, f"output {k} ('{outs[k]}')")
    return sess


def outcome(runtime, case, providers="default"):
    """('pass', session) or ('fail', one-line reason)."""
    try:
        return "pass", run_case(runtime, case, providers)
    except Exception as e:  # noqa: BLE001 - every outcome is reported
        ops = sorted(set(re.findall(r"\(op ([\w.:]+), opset (\d+)\)", str(e))))
        if ops:   # NotImplementedOp lists each node on a line of its own: name the ops
            return "fail", f"{type(e).__name__}: no provider implements " + ", ".join(f"{o}-{v}" for o, v in ops)
        first = (str(e).strip().splitlines() or [""])[0]
        return "fail", f"{type(e).__name__}: {first}"[:200]


def read_manifest(path=MANIFEST):
    """{(case, list): reason}; a line is `case  list  reason` (list: numpy, default or both)."""
    out = {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 2)
        if len(parts) < 3 or parts[1] not in ("numpy", "default", "both"):
            raise ValueError(f"{path.name}:{n}: expected `case numpy|default|both reason`, got {line!r}")
        for lst in (("numpy", "default") if parts[1] == "both" else (parts[1],)):
            out[(parts[0], lst)] = parts[2]
    return out


def random_reason(reason):
    """True for an expected failure's reason that starts "random output": the case's expected values
    are random draws, which nnwasm's own draws may match by chance, so it may pass or fail from run to
    run (tests/conformance_manifest.txt, test_ops_numpy.py's EXPECTED_FAILURES)."""
    return reason is not None and reason.startswith("random output")


def random_output(manifest, case, lst):
    """True for a case the manifest lists for that provider list with a random_reason."""
    return random_reason(manifest.get((case, lst)))


def write_manifest(failures, path=MANIFEST):
    """failures: {(case, list): reason}; hand-written reasons already in the file are kept."""
    old = read_manifest(path) if path.exists() else {}
    head = [ln for ln in (path.read_text().splitlines() if path.exists() else []) if ln.startswith("#")]
    rows = {}
    for (case, lst), reason in failures.items():
        rows.setdefault(case, {})[lst] = old.get((case, lst), reason)
    lines = []
    for case in sorted(rows):
        r = rows[case]
        if set(r) == {"numpy", "default"} and r["numpy"] == r["default"]:
            lines.append(f"{case}  both  {r['numpy']}")
        else:
            lines += [f"{case}  {lst}  {r[lst]}" for lst in sorted(r)]
    path.write_text("\n".join(head + lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runtime", choices=["nnwasm", "onnxruntime"], default="nnwasm")
    ap.add_argument("--providers", choices=list(PROVIDER_LISTS), nargs="*", default=list(PROVIDER_LISTS))
    ap.add_argument("--only")
    ap.add_argument("--write-manifest", action="store_true")
    a = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "py_runtime"))
    runtime = Runtime(a.runtime)
    cases = [c for c in all_cases() if not a.only or a.only in c.name]
    failures = {}
    lists = a.providers if a.runtime == "nnwasm" else ["default"]
    for lst in lists:
        reasons = collections.Counter()
        passed = 0
        for c in cases:
            status, detail = outcome(runtime, c, lst)
            if status == "pass":
                passed += 1
            else:
                failures[(c.name, lst)] = detail
                reasons[detail.split(":")[0]] += 1
        print(f"{a.runtime} [{lst}]: {passed} of {len(cases)} pass; failures by exception: {dict(reasons.most_common())}")
    if a.write_manifest:
        assert a.runtime == "nnwasm" and not a.only and set(lists) == set(PROVIDER_LISTS), \
            "--write-manifest needs a full nnwasm run with both provider lists"
        write_manifest(failures)
        print(f"wrote {MANIFEST} ({len(failures)} expected failures)")


if __name__ == "__main__":
    main()
