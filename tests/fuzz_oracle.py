"""Issue 18 item 2: the model fuzz of test_fuzz_models.py (same seeds, same mutations, same case
numbers) judged against onnxruntime, in CPython or through the JS shim in Node.

Each case ends as one of
  ok            nnwasm ran it and onnxruntime ran it with the same outputs (or refused it for lack
                of a kernel: NOT_IMPLEMENTED; its outputs are then not compared)
  clean error   nnwasm refused it with one of its errors
  crash         nnwasm raised something else, or its process died
  hang          the case ran past the timeout (its process is killed)
  wrong         both ran, the outputs differ
  ran-invalid   nnwasm ran a model onnxruntime refuses at load as invalid
The goal is 0 for the last four. A model that onnxruntime refuses only because its opset or IR
version is onnx's newest (onnxruntime: "under development"; onnx's checker accepts it, so does
nnwasm: docs/hardening.md) counts as ok, with that reason.

Cases run in a worker process (`fuzz_oracle.py worker`, or tests/node/fuzz-worker.mjs for Node) that
announces each case before starting it; the driver kills the worker when a case passes the timeout
or the worker dies, records that case as a hang or a crash and starts a new worker at the next case.
A child process per case would cost an interpreter start, imports (and in Node a Pyodide boot) per
case: hours for 10,000 cases on two shared cores.

  .venv/bin/python tests/fuzz_oracle.py --cases 10000 --host cpython --out /tmp/fuzz-cpython.json
  .venv/bin/python tests/fuzz_oracle.py --cases 10000 --host node --out /tmp/fuzz-node.json
(--start K reruns from case K; the Node host needs dist/web: build_scripts/build_web.py)"""
import argparse
import json
import os
import select
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "py_runtime"))
OUTCOMES = ["ok", "clean error", "crash", "hang", "wrong", "ran-invalid"]
# ops whose outputs are random or implementation-defined: a difference from onnxruntime is not wrong
RANDOM_OPS = {"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Multinomial", "Bernoulli",
              "Dropout"}


def ort_result(raw, feeds):
    """('refused', why) when onnxruntime refuses the model as invalid at load, ('unsupported', why)
    when it lacks a kernel, ('run failed', why), or ('ran', outputs)."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.log_severity_level = 4
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sess = ort.InferenceSession(raw, so, providers=["CPUExecutionProvider"])
    except Exception as e:   # noqa: BLE001
        msg = str(e)
        return ("unsupported" if "NOT_IMPLEMENTED" in msg else "refused"), msg[:400]
    try:
        names = [i.name for i in sess.get_inputs()]
        return "ran", sess.run(None, {k: v for k, v in feeds.items() if k in names})
    except Exception as e:   # noqa: BLE001
        return "run failed", str(e)[:400]


def same_outputs(a, b):
    """'' if the output lists match, else what differs."""
    if len(a) != len(b):
        return f"{len(a)} outputs, onnxruntime {len(b)}"
    for i, (x, y) in enumerate(zip(a, b)):
        x, y = np.asarray(x), np.asarray(y)
        if x.shape != y.shape:
            return f"output {i}: shape {x.shape}, onnxruntime {y.shape}"
        if x.dtype != y.dtype:
            return f"output {i}: dtype {x.dtype}, onnxruntime {y.dtype}"
        if x.dtype.kind in "fc":
            ok = np.allclose(x.astype(np.float64), y.astype(np.float64), rtol=1e-3, atol=1e-3, equal_nan=True)
        elif x.dtype.itemsize == 1 and x.dtype.kind in "iu":
            # quantized outputs: a fused integer path (nnwasm's or onnxruntime's) and float DQ -> op -> Q
            # round differently, by a step or two
            ok = np.abs(x.astype(np.int32) - y.astype(np.int32)).max(initial=0) <= 2
        else:
            ok = np.array_equal(x, y)
        if not ok:
            return f"output {i} differs from onnxruntime's"
    return ""


def judge(raw, nn, outputs, feeds, detail):
    """The outcome of a case whose nnwasm result is nn ('ran' / 'refused' / 'crash')."""
    if nn != "ran":
        return ("clean error" if nn == "refused" else "crash"), detail
    import onnx
    status, got = ort_result(raw, feeds)
    if status == "refused":
        if "ValidateOpsetForDomain" in got or "Unsupported model IR version" in got:
            return "ok", "onnxruntime refuses onnx's newest opset / IR version, which nnwasm loads"
        return "ran-invalid", got
    if status != "ran":
        return "ok", f"onnxruntime: {status}"
    diff = same_outputs(outputs, got)
    if diff:
        try:
            ops = {n.op_type for n in onnx.load_from_string(raw).graph.node}
        except Exception:   # noqa: BLE001
            ops = set()
        if ops & RANDOM_OPS:
            return "ok", f"random op ({diff})"
        return "wrong", diff
    return "ok", ""


# --- the CPython worker ---------------------------------------------------------------------------
def cpython_worker(start, count, cases=None):
    import signal
    import test_fuzz_models as fz
    import nnwasm
    seeds = fz.seed_models()
    signal.signal(signal.SIGALRM, fz._alarm)
    for case in cases or range(start, start + count):
        raw, providers, rng, desc = fz.make_case(case, seeds)
        print(json.dumps({"case": case, "phase": "start", "desc": desc}), flush=True)
        outputs, feeds, detail = None, {}, ""
        signal.setitimer(signal.ITIMER_REAL, 60)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                sess = nnwasm.InferenceSession(raw, providers=providers)
                feeds = fz.make_feeds(rng, sess)
                outputs = sess.run(None, feeds)
            nn = "ran"
        except nnwasm.NnwasmError as e:
            nn, detail = "refused", f"{type(e).__name__}: {str(e)[:300]}"
        except fz.CaseTimeout:
            nn, detail = "hang", "over 60 s (SIGALRM)"
        except Exception as e:   # noqa: BLE001
            nn, detail = "crash", f"{type(e).__name__}: {str(e)[:300]}"
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        if nn == "hang":
            outcome = "hang"
        else:
            print(json.dumps({"case": case, "phase": "oracle"}), flush=True)
            outcome, detail = judge(raw, nn, outputs, feeds, detail)
        print(json.dumps({"case": case, "phase": "done", "outcome": outcome, "detail": detail}), flush=True)


# --- the Node host --------------------------------------------------------------------------------
def write_node_batch(folder, start, count):
    """Each case's model and feeds (from CPython's nnwasm when it loads the model, else none: Node's
    run then reports the missing inputs) for tests/node/fuzz-worker.mjs; returns {case: (desc, raw)}."""
    import base64
    import test_fuzz_models as fz
    import nnwasm
    seeds = fz.seed_models()
    descs = {}
    for case in range(start, start + count):
        raw, providers, rng, desc = fz.make_case(case, seeds)
        descs[case] = (desc, raw)
        (folder / f"{case}.onnx").write_bytes(raw)
        feeds = {}
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                feeds = fz.make_feeds(rng, nnwasm.InferenceSession(raw, providers=providers))
        except Exception:   # noqa: BLE001
            pass
        (folder / f"{case}.json").write_text(json.dumps({"feeds": {
            k: {"type": str(v.dtype), "dims": list(v.shape), "b64": base64.b64encode(v.tobytes()).decode()}
            for k, v in feeds.items()}}))
        np.savez(folder / f"{case}.npz", **feeds)
    return descs


def node_outputs(rec):
    import base64
    out = []
    for o in rec["outputs"]:
        if o["type"] == "string":
            out.append(np.array(o["strings"], dtype=object).reshape(o["dims"]))
        else:
            dt = np.bool_ if o["type"] == "bool" else np.dtype(o["type"])
            out.append(np.frombuffer(base64.b64decode(o["b64"]), dtype=dt).reshape(o["dims"]))
    return out


# --- the driver ------------------------------------------------------------------------------------
def drive(host, start, count, timeout, log=None):
    """Runs cases [start, start + count) on host; returns (counts, [(case, outcome, desc, detail)])."""
    counts = {k: 0 for k in OUTCOMES}
    bad = []
    case = start
    end = start + count
    tmp = tempfile.TemporaryDirectory(prefix="nnwasm-fuzz-") if host == "node" else None
    descs = {}
    while case < end:
        if host == "cpython":
            cmd = [sys.executable, str(Path(__file__)), "worker", str(case), str(end - case)]
        else:
            n = min(end - case, 250)
            folder = Path(tmp.name) / f"b{case}"
            folder.mkdir(exist_ok=True)
            descs.update(write_node_batch(folder, case, n))
            cmd = ["node", str(HERE / "node" / "fuzz-worker.mjs"), str(folder), str(case), str(case + n)]
        env = {**os.environ, "PYTHONPATH": str(ROOT / "py_runtime")}
        if host == "node":
            env["NNWASM_DIST_URL"] = (ROOT / "dist" / "web").as_uri() + "/"
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=ROOT)
        started = time.monotonic()   # a worker that hangs before its first case (a Pyodide boot) times out too
        current, phase, desc, buf = None, None, "", b""
        batch_end = end if host == "cpython" else case + n
        while True:
            ready, _, _ = select.select([p.stdout], [], [], 1.0)
            if ready:
                chunk = os.read(p.stdout.fileno(), 65536)
                if not chunk:
                    break
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    try:
                        rec = json.loads(line)
                    except ValueError:
                        continue
                    if rec.get("phase") == "start":
                        current, phase, started = rec["case"], "nnwasm", time.monotonic()
                        desc = rec.get("desc") or descs.get(current, ("",))[0]
                    elif rec.get("phase") == "oracle":
                        phase = "oracle"
                    elif rec.get("phase") == "done":
                        outcome, detail = rec.get("outcome"), rec.get("detail", "")
                        if host == "node":
                            _, raw = descs[current]
                            feeds = dict(np.load(folder / f"{current}.npz")) if outcome == "ran" else {}
                            outs = node_outputs(rec) if outcome == "ran" else None
                            outcome, detail = judge(raw, outcome, outs, feeds, detail)
                        counts[outcome] += 1
                        if outcome not in ("ok", "clean error"):
                            bad.append((current, outcome, desc, detail))
                        if log:
                            print(f"{current} {outcome} {detail[:150] if outcome not in ('ok', 'clean error') else ''}",
                                  file=log, flush=True)
                        case, current = rec["case"] + 1, None
            elif time.monotonic() - started > timeout:
                p.kill()
                break
            if p.poll() is not None and not ready:
                break
        p.wait()
        if current is not None:   # the worker died or hung in this case
            what = "hang" if time.monotonic() - started > timeout else "crash"
            if phase == "oracle":   # onnxruntime, not nnwasm: the case counts as nnwasm's answer
                what, detail = "ok", "onnxruntime died on it"
            else:
                detail = f"worker {'killed after' if what == 'hang' else 'died'} ({p.returncode})"
            counts[what] += 1
            if what != "ok":
                bad.append((current, what, desc, detail))
            case = current + 1
        elif case < batch_end:   # died between cases (boot failure): count the rest as crashes
            bad.append((case, "crash", "", f"worker exited ({p.returncode}) before the case"))
            counts["crash"] += 1
            case += 1
    if tmp:
        tmp.cleanup()
    return counts, bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", choices=["cpython", "node"], default="cpython")
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--cases", type=int, default=int(os.environ.get("NNWASM_FUZZ_MODELS", "500")))
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--out")
    a = ap.parse_args()
    t0 = time.time()
    counts, bad = drive(a.host, a.start, a.cases, a.timeout, log=sys.stderr)
    report = {"host": a.host, "start": a.start, "cases": a.cases, "seconds": round(time.time() - t0),
              "counts": counts, "bad": bad}
    print(json.dumps(counts))
    if a.out:
        Path(a.out).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "worker":
        cpython_worker(int(sys.argv[2]), int(sys.argv[3]))
    elif len(sys.argv) > 1 and sys.argv[1] == "recheck":   # recheck CASE... in this process (triage)
        cpython_worker(0, 0, [int(c) for c in sys.argv[2:]])
    else:
        main()
