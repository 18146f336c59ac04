// What the Node tests share: the fixtures tests/test_node_shim.py writes (ONNX models built
// with the onnx package, the preprocessed photo), found through NNWASM_NODE_FIXTURES.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { env } from "../../web/nnwasm.mjs";

const dir = process.env.NNWASM_NODE_FIXTURES;

/** fixtures.json with every path made absolute, or null outside pytest. */
export const fixtures = dir ? JSON.parse(readFileSync(join(dir, "fixtures.json"), "utf8")) : null;

/** For test(..., { skip }): false when the fixtures are there, else why the test can't run. */
export const needsFixtures = fixtures ? false : "NNWASM_NODE_FIXTURES is not set: run `pytest tests/test_node_shim.py`";

if (process.env.NNWASM_DIST_URL) env.distURL = process.env.NNWASM_DIST_URL;

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
