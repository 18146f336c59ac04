// Profiling on the Pyodide path (a .onnx model): startProfiling()/endProfiling() reach the Python
// session through _js_bridge.py and return its trace, as CPython's end_profiling() file holds it
// (tests/test_profiling.py; plan files: plan-runner.test.mjs). proxy.test.mjs checks proxy mode.
import { describe, test } from "node:test";
import { InferenceSession } from "../../web/nnwasm.mjs";
import { needsFixtures } from "./fixtures.mjs";
import { profileAddModel } from "./trace.mjs";

describe("profiling a Pyodide session", { skip: needsFixtures, timeout: 120_000 }, () => {
  test("startProfiling/endProfiling return the Python session's trace", () =>
    profileAddModel((model, options) => InferenceSession.create(model, options)));
});
