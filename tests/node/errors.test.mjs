// Bad input rejects with an Error that says what is wrong, and leaves the session usable.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { before, describe, test } from "node:test";
import { InferenceSession, Tensor } from "../../web/nnwasm.mjs";
import { fixtures, needsFixtures } from "./fixtures.mjs";

describe("errors from a small model (y = relu(x + b))", { skip: needsFixtures }, () => {
  let session, add;

  before(async () => {
    add = fixtures.add;
    session = await InferenceSession.create(readFileSync(add.model));
  });

  const good = () => new Tensor("float32", Float32Array.from(add.x), add.dims);

  async function assertRunsCorrectly() {
    const out = await session.run({ [add.input]: good() });
    assert.deepEqual(out[add.output].dims, add.dims);
    assert.deepEqual(Array.from(out[add.output].data), add.y);
  }

  test("a correct run", assertRunsCorrectly);

  test("an onnxruntime-web Tensor as a feed", async () => {
    const ort = await import("onnxruntime-web");
    const out = await session.run({ [add.input]: new ort.Tensor("float32", Float32Array.from(add.x), add.dims) });
    assert.deepEqual(Array.from(out[add.output].data), add.y);
  });

  // Exactly what CPython's nnwasm says (tests/test_node_shim.py asks it); proxy.test.mjs checks the same.
  test("a wrong input name", async () => {
    await assert.rejects(session.run({ nope: good() }), (e) => {
      assert.ok(e instanceof Error);
      assert.deepEqual([e.name, e.message], add.errors.name);
      assert.match(e.message, /nope/);
      assert.match(e.message, new RegExp(add.input));
      assert.doesNotMatch(e.message, /Traceback/);
      return true;
    });
    await assertRunsCorrectly();
  });

  test("a missing input", async () => {
    await assert.rejects(session.run({}), { name: "InvalidArgument", message: /missing/ });
    await assertRunsCorrectly();
  });

  test("a wrong dtype", async () => {
    const bad = new Tensor("int32", Int32Array.from(add.x, Math.round), add.dims);
    await assert.rejects(session.run({ [add.input]: bad }), { name: "InvalidArgument", message: /int32/ });
    await assert.rejects(session.run({ [add.input]: bad }), { name: add.errors.dtype[0], message: add.errors.dtype[1] });
    await assertRunsCorrectly();
  });

  test("wrong dims", async () => {
    const n = add.x.length;
    const bad = new Tensor("float32", Float32Array.from(add.x), [n, 1]);
    await assert.rejects(session.run({ [add.input]: bad }), { name: "InvalidArgument", message: /shape/ });
    await assert.rejects(session.run({ [add.input]: bad }), { name: add.errors.dims[0], message: add.errors.dims[1] });
    await assertRunsCorrectly();
  });

  test("a string tensor", async () => {
    const bad = new Tensor("string", add.x.map(String), add.dims);
    await assert.rejects(session.run({ [add.input]: bad }), { name: "TypeError", message: /string/ });
    await assertRunsCorrectly();
  });

  test("an unknown output name", async () => {
    await assert.rejects(session.run({ [add.input]: good() }, ["nope"]), { message: /nope/ });
    await assertRunsCorrectly();
  });

  test("feeds that are not tensors", async () => {
    await assert.rejects(session.run({ [add.input]: [1, 2] }), { name: "TypeError", message: /not a Tensor/ });
    await assert.rejects(session.run(null), TypeError);
    await assertRunsCorrectly();
  });

  test("corrupt model bytes", async () => {
    const bytes = new Uint8Array(readFileSync(add.model));
    await assert.rejects(InferenceSession.create(bytes.slice(0, bytes.length >> 1)), (e) => {
      assert.equal(e.name, "InvalidModel");
      assert.match(e.message, /ONNX|model/i);
      return true;
    });
    await assert.rejects(InferenceSession.create(new TextEncoder().encode("definitely not protobuf")),
                         { name: "InvalidModel" });
    await assertRunsCorrectly();
  });

  test("a model file that does not exist", async () => {
    await assert.rejects(InferenceSession.create("/nonexistent/model.onnx"), { message: /cannot read \/nonexistent\/model\.onnx/ });
  });

  test("execution providers nnwasm does not have", async () => {
    await assert.rejects(InferenceSession.create(readFileSync(add.model), { executionProviders: ["webgpu"] }),
                         { message: /no available execution provider.*webgpu/ });
  });

  test("a released session", async () => {
    const other = await InferenceSession.create(readFileSync(add.model), { executionProviders: ["webgpu", "wasm"] });
    await other.release();
    await assert.rejects(other.run({ [add.input]: good() }), { message: /released/ });
    await assertRunsCorrectly();
  });
});
