// What the Node tests share: the fixtures tests/test_node_shim.py writes (ONNX models built
// with the onnx package, the preprocessed photo), found through NNWASM_NODE_FIXTURES.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import assert from "node:assert/strict";
import { env, InferenceSession } from "../../web/nnwasm.mjs";

const dir = process.env.NNWASM_NODE_FIXTURES;

/** fixtures.json with every path made absolute, or null outside pytest. */
export const fixtures = dir ? JSON.parse(readFileSync(join(dir, "fixtures.json"), "utf8")) : null;

/** For test(..., { skip }): false when the fixtures are there, else why the test can't run. */
export const needsFixtures = fixtures ? false : "NNWASM_NODE_FIXTURES is not set: run `pytest tests/test_node_shim.py`";

if (process.env.NNWASM_DIST_URL) env.distURL = process.env.NNWASM_DIST_URL;

/** The fixtures' EfficientNet-Lite0 session on WASM, with its names, input shape and provider
 * assignment checked; also its preprocessing recipe and labels. */
export async function createEfficientNet() {
  const recipe = JSON.parse(readFileSync(fixtures.recipe, "utf8"));
  const labels = JSON.parse(readFileSync(fixtures.labels, "utf8"));
  const session = await InferenceSession.create(fixtures.efficientnet, { executionProviders: ["wasm"] });
  assert.deepEqual(session.inputNames, [recipe.input]);
  assert.deepEqual(session.outputNames, [recipe.output]);
  assert.deepEqual(session.inputMetadata[0].shape, [1, 3, recipe.size, recipe.size]);
  assert.ok(session.providerAssignment.length > 0);
  assert.ok(session.providerAssignment.every((a) => a.provider === "WasmExecutionProvider"));
  return { session, recipe, labels };
}

/** A .bin of little-endian float32 values as a Float32Array. */
export function readFloat32(path) {
  const buf = readFileSync(path);
  return new Float32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength));
}

export function argmax(values) {
  let best = 0;
  for (let i = 1; i < values.length; i++) if (values[i] > values[best]) best = i;
  return best;
}

/** The largest |a[i] - b[i]|; arrays of different lengths differ infinitely. */
export function maxAbsDiff(a, b) {
  if (a.length !== b.length) return Infinity;
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]));
  return worst;
}
