// External data with env.wasm.proxy (a process of its own: the proxy is chosen once a process):
// the options cross to the worker (paths resolved here, bytes and Blobs cloned), and the worker
// reads the files. NNWASM_EXTDATA_CASES: tests/test_external_data.py's JSON.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { after, describe, test } from "node:test";
import { env, InferenceSession, Tensor } from "../../web/nnwasm.mjs";

if (process.env.NNWASM_DIST_URL) env.distURL = process.env.NNWASM_DIST_URL;
env.wasm.proxy = true;
const casesFile = process.env.NNWASM_EXTDATA_CASES;
const cases = casesFile ? JSON.parse(readFileSync(casesFile, "utf8")) : null;

describe("external data in proxy mode", { skip: cases ? false : "NNWASM_EXTDATA_CASES is not set" }, () => {
  const dir = cases?.bad.good;
  const c = cases?.good;
  after(() => setImmediate(() => process.exit(0))); // the worker keeps the process alive

  async function check(session) {
    const ids = new Tensor("int64", BigInt64Array.from(c.ids.map(BigInt)), [1, c.ids.length]);
    const { y } = await session.run({ ids });
    assert.deepEqual(y.dims, c.dims);
    for (let i = 0; i < c.y.length; i++) assert.ok(Math.abs(y.data[i] - c.y[i]) <= 1e-4 * (1 + Math.abs(c.y[i])));
    await session.release();
  }

  test("a model path, bytes with a relative path, a Uint8Array, a Blob; a missing file named", async () => {
    const model = join(dir, "model.onnx"), data = join(dir, "model.onnx.data");
    await check(await InferenceSession.create(model));
    const bytes = () => readFileSync(model);
    await check(await InferenceSession.create(bytes(), { externalData: [{ path: "model.onnx.data", data: relative(process.cwd(), data) }] }));
    await check(await InferenceSession.create(bytes(), { externalData: [{ path: "model.onnx.data", data: new Uint8Array(readFileSync(data)) }] }));
    await check(await InferenceSession.create(bytes(), { externalData: [{ path: "model.onnx.data", data: new Blob([readFileSync(data)]) }] }));
    await assert.rejects(InferenceSession.create(bytes()), /'model\.onnx\.data', which options\.externalData does not give/);
  });
});
