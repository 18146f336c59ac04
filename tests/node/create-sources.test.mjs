// Every way onnxruntime-web lets a model in: a path, a file: URL, a URL object, an http URL
// (a server on 127.0.0.1 in this process), a Uint8Array view, an ArrayBuffer with or without
// an offset. Each must give a session that computes y = relu(x + b).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { relative } from "node:path";
import { pathToFileURL } from "node:url";
import { after, before, describe, test } from "node:test";
import { InferenceSession, Tensor } from "../../web/nnwasm.mjs";
import { fixtures, needsFixtures } from "./fixtures.mjs";

describe("InferenceSession.create sources", { skip: needsFixtures }, () => {
  let add, bytes, server, port;

  before(async () => {
    add = fixtures.add;
    bytes = readFileSync(add.model);
    server = createServer((req, res) => {
      if (req.url === "/add.onnx") res.writeHead(200, { "Content-Type": "application/octet-stream" }).end(bytes);
      else res.writeHead(404).end("not here");
    });
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = server.address().port;
  });

  after(() => server?.close());

  async function assertWorks(session) {
    assert.deepEqual(session.inputNames, [add.input]);
    const out = await session.run({ [add.input]: new Tensor("float32", Float32Array.from(add.x), add.dims) });
    assert.deepEqual(Array.from(out[add.output].data), add.y);
    await session.release();
  }

  test("an absolute path", async () => assertWorks(await InferenceSession.create(add.model)));
  test("a path relative to the working directory", async () =>
    assertWorks(await InferenceSession.create(relative(process.cwd(), add.model))));
  test("a file: URL string", async () => assertWorks(await InferenceSession.create(pathToFileURL(add.model).href)));
  test("a URL object", async () => assertWorks(await InferenceSession.create(pathToFileURL(add.model))));
  test("an http URL", async () => assertWorks(await InferenceSession.create(`http://127.0.0.1:${port}/add.onnx`)));
  test("an http URL that answers 404", async () => {
    await assert.rejects(InferenceSession.create(`http://127.0.0.1:${port}/missing.onnx`), { message: /HTTP 404/ });
  });

  test("a Uint8Array view into a larger buffer", async () => {
    const padded = new Uint8Array(bytes.length + 16);
    padded.set(bytes, 8);
    await assertWorks(await InferenceSession.create(padded.subarray(8, 8 + bytes.length)));
  });

  test("an ArrayBuffer, whole or with byteOffset and byteLength", async () => {
    const whole = new Uint8Array(bytes).buffer;
    await assertWorks(await InferenceSession.create(whole, { executionProviders: ["wasm"] }));
    const padded = new Uint8Array(bytes.length + 16);
    padded.set(bytes, 8);
    await assertWorks(await InferenceSession.create(padded.buffer, 8, bytes.length, { executionProviders: [{ name: "cpu" }] }));
  });

  test("something that is no model source", async () => {
    await assert.rejects(InferenceSession.create(42), { name: "TypeError", message: /URL, a path, a Uint8Array or an ArrayBuffer/ });
  });
});
