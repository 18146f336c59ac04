// External data in Node (web/external-data.mjs): a model path finds its sibling data file, and
// options.externalData gives it as a path, bytes, an ArrayBuffer, a Blob or an http URL; each
// agrees with onnxruntime. Bad input (a location outside the folder, past the file's end, a
// missing file, a wrong path, more than 4 GB) fails create() with an error naming the file and
// initializer, and the next session works. NNWASM_EXTDATA_CASES: tests/test_external_data.py's
// JSON; NNWASM_EXTDATA_BIG: the ~1.5 GB model's folder (slow: only when set).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { env, InferenceSession, Tensor } from "../../web/nnwasm.mjs";

if (process.env.NNWASM_DIST_URL) env.distURL = process.env.NNWASM_DIST_URL;
const casesFile = process.env.NNWASM_EXTDATA_CASES;
const cases = casesFile ? JSON.parse(readFileSync(casesFile, "utf8")) : null;
const skip = cases ? false : "NNWASM_EXTDATA_CASES is not set: run `pytest tests/test_external_data.py`";

function feeds(c) {
  return { ids: new Tensor("int64", BigInt64Array.from(c.ids.map(BigInt)), [1, c.ids.length]) };
}

async function check(session, c, tol = 1e-4, assigned = true) {
  const { y } = await session.run(feeds(c));
  assert.deepEqual(y.dims, c.dims);
  let worst = 0;
  for (let i = 0; i < c.y.length; i++) worst = Math.max(worst, Math.abs(y.data[i] - c.y[i]) / (1 + Math.abs(c.y[i])));
  assert.ok(worst <= tol, `worst relative difference from onnxruntime ${worst}`);
  assert.ok(!assigned || session.providerAssignment.every((a) => a.provider === "WasmExecutionProvider"), JSON.stringify(session.providerAssignment));
  await session.release();
}

async function rejects(promise, ...patterns) {
  await assert.rejects(promise, (e) => {
    for (const p of patterns) assert.match(e.message, p);
    return true;
  });
}

describe("external data", { skip }, () => {
  const good = cases && cases.bad.good;
  const model = good && join(good, "model.onnx");
  const data = good && join(good, "model.onnx.data");
  let server, port;

  before(async () => {
    server = createServer((req, res) => {
      if (req.url === "/model.onnx.data") res.writeHead(200).end(readFileSync(data));
      else res.writeHead(404).end("not here");
    });
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = server.address().port;
  });
  after(() => server?.close());

  test("a model path finds its sibling file", async () => check(await InferenceSession.create(model), cases.good));
  test("a model path, its file also given as externalData", async () =>
    check(await InferenceSession.create(model, { externalData: [{ path: "model.onnx.data", data }] }), cases.good));

  const bytes = () => readFileSync(model);
  const sources = {
    "a path": () => data,
    "a Uint8Array": () => new Uint8Array(readFileSync(data)),
    "an ArrayBuffer": () => new Uint8Array(readFileSync(data)).slice().buffer,
    "a Blob": () => new Blob([readFileSync(data)]),
    "an http URL": () => `http://127.0.0.1:${port}/model.onnx.data`,
  };
  for (const [what, make] of Object.entries(sources)) {
    test(`model bytes, externalData as ${what}`, async () =>
      check(await InferenceSession.create(bytes(), { externalData: [{ path: "./model.onnx.data", data: make() }] }),
            cases.good));
  }

  test("a model with a symbolic dim (plans built at its first run), its file as bytes or a path", async () => {
    const symbolic = join(cases.bad.symbolic, "model.onnx");
    for (const data of [new Uint8Array(readFileSync(join(cases.bad.symbolic, "model.onnx.data"))), undefined]) {
      // WASM alone (Pyodide has no numpy here); providerAssignment is create()'s, before any plan
      const options = { executionProviders: ["wasm"], ...(data ? { externalData: [{ path: "model.onnx.data", data }] } : {}) };
      const session = await InferenceSession.create(symbolic, options);
      const { y } = await session.run(feeds(cases.good));
      assert.deepEqual(y.dims, cases.good.dims);
      await check(session, cases.good, 1e-4, false); // a second run, its reader closed or not
    }
  });

  test("bad input fails create() naming the file and initializer; the runtime stays usable", async () => {
    const at = (name) => join(cases.bad[name], "model.onnx");
    await rejects(InferenceSession.create(at("outside")), /'\.\.\/good\/model\.onnx\.data'/, /inside the model's folder/,
                  /table0/);
    await rejects(InferenceSession.create(at("absolute")), /must be a relative path/);
    await rejects(InferenceSession.create(at("link")), /'model\.onnx\.data' resolves outside the model's folder/);
    await rejects(InferenceSession.create(at("past_end")), /tensor 'W'/, /past the end of 'model\.onnx\.data'/);
    await rejects(InferenceSession.create(at("missing")), /'model\.onnx\.data' does not exist in the model's folder/,
                  /table0/);
    await rejects(InferenceSession.create(bytes()), /'model\.onnx\.data', which options\.externalData does not give/,
                  /'table0', 'W'/);
    await rejects(InferenceSession.create(bytes(), { externalData: [{ path: "weights.bin", data }] }),
                  /does not give \(it gives 'weights\.bin'\)/);
    await rejects(InferenceSession.create(bytes(), { externalData: [{ path: "model.onnx.data", data: "/nonexistent/x.data" }] }),
                  /cannot read \/nonexistent\/x\.data/);
    await rejects(InferenceSession.create(bytes(), { externalData: [{ path: "model.onnx.data", data: new Uint8Array(8) }] }),
                  /tensor 'table0'/, /past the end of 'model\.onnx\.data' \(8 bytes\)/);
    await assert.rejects(InferenceSession.create(bytes(), { externalData: [{ path: "model.onnx.data", data: 42 }] }),
                         /data must be a URL or path string, a Uint8Array, an ArrayBuffer or a Blob/);
    await assert.rejects(InferenceSession.create(bytes(), { externalData: { path: "model.onnx.data" } }),
                         /must be an array of \{path, data\}/);
    await rejects(InferenceSession.create(join(cases.over4gb, "model.onnx")), /more than the 4 GB/, /wasm32/);
    await check(await InferenceSession.create(model), cases.good); // still works
  });

  test("a ~1.5 GB model", { skip: process.env.NNWASM_EXTDATA_BIG ? false : "NNWASM_EXTDATA_BIG is not set (slow)" }, async () => {
    const dir = process.env.NNWASM_EXTDATA_BIG;
    const big = JSON.parse(readFileSync(join(dir, "case.json"), "utf8"));
    const t0 = performance.now();
    const session = await InferenceSession.create(join(dir, "model.onnx"));
    const createMs = performance.now() - t0;
    const { pyodide } = await (await import("../../web/pyodide-boot.mjs")).boot();
    const wasmBytes = pyodide.runPython("from nnwasm.host import get_host; get_host()._memory.buffer.byteLength");
    const heapBytes = pyodide._module.HEAPU8.length;
    assert.ok(wasmBytes < big.weights_bytes + 64 * 2 ** 20, `kernels.wasm holds ${wasmBytes} bytes: the weights more than once`);
    assert.ok(heapBytes < 256 * 2 ** 20, `Pyodide's heap holds ${heapBytes} bytes: weights went through Python`);
    await check(session, big);
    console.log(JSON.stringify({ weightsBytes: big.weights_bytes, createMs: Math.round(createMs), kernelsWasmBytes: wasmBytes,
                                 pyodideHeapBytes: heapBytes, maxRssBytes: process.resourceUsage().maxRSS * 1024 }));
  });
});
