// Profiling on the Pyodide path (a .onnx model): startProfiling()/endProfiling() reach the Python
// session through _js_bridge.py and return its trace, as CPython's end_profiling() file holds it
// (tests/test_profiling.py; plan files: plan-runner.test.mjs). proxy.test.mjs checks proxy mode.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { boot, InferenceSession } from "../../web/nnwasm.mjs";
import { fixtures, needsFixtures } from "./fixtures.mjs";
import { profileAddModel, readTrace } from "./trace.mjs";

describe("profiling a Pyodide session", { skip: needsFixtures, timeout: 120_000 }, () => {
  test("startProfiling/endProfiling return the Python session's trace", () =>
    profileAddModel((model, options) => InferenceSession.create(model, options)));

  test("in Python inside Pyodide, end_profiling() writes the trace file, for ONNX and plan sessions", async () => {
    const { pyodide } = await boot();
    pyodide.globals.set("model_bytes", new Uint8Array(readFileSync(fixtures.add.model))); // not a Buffer
    const result = pyodide.runPython(`
import json
import nnwasm
from nnwasm import dtypes
from nnwasm.tensor import TensorData
model = model_bytes.to_py()
so = nnwasm.SessionOptions()
so.enable_profiling = True
so.profile_file_prefix = "/tmp/trace"
x = TensorData(dtypes.BY_NAME["float32"], (1, 4), bytes(16))
traces = []
for source in (model, nnwasm.compile_plan(model)):
    sess = nnwasm.InferenceSession(source, so)
    sess._run_raw(None, {"x": x})
    name = sess.end_profiling()
    with open(name) as f:
        traces.append([name, f.read()])
traces
    `).toJs();
    const [onnx, plan] = result.map(([name, text]) => {
      assert.match(name, /^\/tmp\/trace_\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d_\d{3}\.json$/);
      return readTrace(JSON.parse(text));
    });
    assert.deepEqual(onnx.sessions, ["model_loading_array", "session_initialization", "model_run"]);
    assert.deepEqual(plan.sessions, onnx.sessions);
    assert.deepEqual(plan.nodes, onnx.nodes);
    assert.ok(onnx.nodes.length > 0 && onnx.nodes.every(([, , , provider]) => provider === "WasmExecutionProvider"));
  });
});
