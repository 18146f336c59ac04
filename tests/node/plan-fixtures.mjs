// What the plan-file tests share (plan-runner.test.mjs, plan-download.test.mjs): the fixtures
// tests/test_plan_runner_js.py writes (plan files, feeds and CPython's outputs), found through
// NNWASM_PLAN_FIXTURES. Importing it points env at the test's dist/web/ and at no Pyodide: were
// Pyodide ever asked for, it would fail, and plan files must not need it.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { env, Tensor } from "../../web/nnwasm.mjs";

const dir = process.env.NNWASM_PLAN_FIXTURES;

/** fixtures.json (name -> {plan, inputs, outputs}, absolute paths), or null outside pytest. */
export const fixtures = dir ? JSON.parse(readFileSync(join(dir, "fixtures.json"), "utf8")) : null;

/** For describe(..., { skip }): false when the fixtures are there, else why the tests can't run. */
export const skip = fixtures ? false : "NNWASM_PLAN_FIXTURES is not set: run `pytest tests/test_plan_runner_js.py`";

if (process.env.NNWASM_DIST_URL) env.distURL = process.env.NNWASM_DIST_URL;
env.pyodideIndexURL = "/nonexistent-pyodide/";

const ARRAYS = { float32: Float32Array, int32: Int32Array, int64: BigInt64Array };

export const bytesOf = (path) => new Uint8Array(readFileSync(path));

/** A fixture's inputs as Tensors. */
export function feedsOf(entry) {
  return Object.fromEntries(Object.entries(entry.inputs).map(([name, v]) => {
    const b = bytesOf(v.path), T = ARRAYS[v.dtype];
    return [name, new Tensor(v.dtype, new T(b.buffer, b.byteOffset, b.byteLength / T.BYTES_PER_ELEMENT), v.shape)];
  }));
}

/** out holds exactly the outputs `names`, each with CPython's dtype, shape and bytes. */
export function assertBitIdentical(out, entry, names = Object.keys(entry.outputs)) {
  assert.deepEqual(Object.keys(out).sort(), [...names].sort());
  for (const name of names) {
    const want = entry.outputs[name];
    assert.equal(out[name].type, want.dtype);
    assert.deepEqual([...out[name].dims], want.shape);
    const got = new Uint8Array(out[name].data.buffer, out[name].data.byteOffset, out[name].data.byteLength);
    const ref = bytesOf(want.path);
    assert.equal(got.length, ref.length);
    const differ = got.findIndex((b, i) => b !== ref[i]);
    assert.equal(differ, -1, `output '${name}' differs from CPython's at byte ${differ}`);
  }
}
