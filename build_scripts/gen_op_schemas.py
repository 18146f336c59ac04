"""Writes py_runtime/nnwasm/onnx_io/op_schemas.json: what the loader checks a node against, so that
nnwasm refuses at load the models onnxruntime refuses as invalid, without importing onnx at run time.

For every op of ai.onnx, ai.onnx.ml and com.microsoft, each schema version (since_version) with its
attributes (type, required), its input/output counts, its formal inputs/outputs (type parameter,
optional/variadic) and its type constraints; plus, per domain, the opset versions a model may import
and the newest IR version. ai.onnx and ai.onnx.ml come from onnx's op schemas
(onnx.defs.get_all_schemas_with_history()), com.microsoft from onnxruntime's contrib schemas
(onnxruntime.capi.onnxruntime_pybind11_state.get_all_operator_schema()). The version ranges are the
wider of onnx's and what onnxruntime loads, probed by asking onnxruntime to load one-node models:
onnxruntime refuses onnx's newest opset and IR version as "under development", nnwasm loads them
as onnx's checker does.

Run offline after upgrading the oracle's onnxruntime: .venv/bin/python build_scripts/gen_op_schemas.py"""
import json
import sys
from pathlib import Path

import onnx
import onnxruntime
from onnx import TensorProto, helper
from onnxruntime.capi import onnxruntime_pybind11_state as C

OUT = Path(__file__).resolve().parents[1] / "py_runtime" / "nnwasm" / "onnx_io" / "op_schemas.json"
DOMAINS = ("", "ai.onnx.ml", "com.microsoft")
# domains onnxruntime validates an opset import of (their ops are not checked by nnwasm: it runs none)
OTHER_DOMAINS = ("ai.onnx.training", "ai.onnx.preview.training", "com.microsoft.nchwc",
                 "com.microsoft.experimental", "com.ms.internal.nhwc", "com.microsoft.dml", "org.pytorch.aten")
OPTION = {"Single": 0, "Optional": 1, "Variadic": 2}   # 3: a variadic of mixed types (Loop's V)


def _loads(opsets, ir=8):
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2])
    m = helper.make_model(helper.make_graph([helper.make_node("Identity", ["X"], ["Y"])], "g", [x], [y]),
                          opset_imports=[helper.make_opsetid(d, v) for d, v in opsets])
    m.ir_version = ir
    so = onnxruntime.SessionOptions()
    so.log_severity_level = 3
    try:
        onnxruntime.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
        return True
    except Exception as e:   # noqa: BLE001
        return "ValidateOpsetForDomain" not in str(e) and "Unsupported model IR version" not in str(e)


def _max_accepted(ok, lo, hi):
    """Largest v in [lo, hi] with ok(v) (ok is monotone: true up to some version)."""
    if not ok(lo):
        return None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid - 1)
    return lo


def _fields(s, formal):
    """(domain, name, since, deprecated, attrs, arity, inputs, outputs, constraints) of schema s;
    formal(p): a formal input's or output's (type string, option name, homogeneous)."""
    return (s.domain, s.name, s.since_version, s.deprecated,
            {a.name: (int(a.type), a.required) for a in s.attributes.values()},
            (s.min_input, s.max_input, s.min_output, s.max_output),
            [formal(p) for p in s.inputs], [formal(p) for p in s.outputs],
            {tc.type_param_str: list(tc.allowed_type_strs) for tc in s.type_constraints})


def _onnx_schemas():
    """_fields() of onnx's ai.onnx / ai.onnx.ml schemas and onnxruntime's com.microsoft ones (the
    two APIs spell a formal parameter's fields differently)."""
    for s in onnx.defs.get_all_schemas_with_history():
        if s.domain in ("", "ai.onnx.ml"):
            yield _fields(s, lambda p: (p.type_str, p.option.name, p.is_homogeneous))
    for s in C.get_all_operator_schema():
        if s.domain == "com.microsoft":
            yield _fields(s, lambda p: (p.typeStr, p.option.name, p.isHomogeneous))


def main():
    schemas = sorted(_onnx_schemas(), key=lambda s: s[:3])
    types = sorted({t for s in schemas for ts in s[8].values() for t in ts})
    tix = {t: i for i, t in enumerate(types)}
    ops = {d: {} for d in DOMAINS}
    big = 2 ** 31 - 1
    for domain, name, since, deprecated, attrs, (mini, maxi, mino, maxo), ins, outs, cons in schemas:
        formal = lambda ps: [[t, OPTION[o] + (o == "Variadic" and not homogeneous)] for t, o, homogeneous in ps]  # noqa: E731
        ops[domain].setdefault(name, []).append(
            [since, int(bool(deprecated)), {a: [t, int(bool(r))] for a, (t, r) in attrs.items()},
             [mini, None if maxi >= big else maxi, mino, None if maxo >= big else maxo],
             formal(ins), formal(outs), {p: [tix[t] for t in ts] for p, ts in cons.items()}])
    opsets = {}
    for d in DOMAINS + OTHER_DOMAINS:
        base = [] if d == "" else [("", 17)]
        top = _max_accepted(lambda v: _loads(base + [(d, v)]), 1, 1000)
        if top is not None and top < 1000:
            # onnx's newest opsets, which onnxruntime refuses as "under development", are loaded
            # (onnx's checker accepts them; docs/hardening.md)
            newest = max((v[0] for op in ops.get(d, {}).values() for v in op), default=top)
            opsets[d] = [1, max(top, newest, onnx.defs.onnx_opset_version() if d == "" else 0)]
    ir = max(_max_accepted(lambda v: _loads([("", 17)], ir=v), 3, 1000), onnx.IR_VERSION)
    # element types onnxruntime accepts in a TypeProto (the others: "Invalid tensor data type")
    elem = {code: name.lower() for name, code in TensorProto.DataType.items()
            if code and f"tensor({name.lower()})" in tix}
    data = {"generated_by": "build_scripts/gen_op_schemas.py", "elem_types": elem,
            "onnxruntime": onnxruntime.__version__, "onnx": onnx.__version__,
            "max_ir_version": ir, "opsets": opsets, "types": types, "ops": ops}
    OUT.write_text(json.dumps(data, separators=(",", ":"), sort_keys=True) + "\n")
    n = sum(len(v) for d in ops.values() for v in d.values())
    print(f"{OUT}: {n} schemas, opsets {opsets}, IR <= {ir}, {OUT.stat().st_size:,} bytes", file=sys.stderr)


if __name__ == "__main__":
    main()
