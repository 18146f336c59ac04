// Tensor alone (no Pyodide): onnxruntime-web's constructor forms and their checks.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Tensor } from "../../web/nnwasm.mjs";

test("new Tensor(type, data, dims)", () => {
  const t = new Tensor("float32", new Float32Array(6), [2, 3]);
  assert.equal(t.type, "float32");
  assert.deepEqual(t.dims, [2, 3]);
  assert.equal(t.size, 6);
  assert.equal(t.location, "cpu");
  assert.throws(() => { t.dims.push(1); }, TypeError); // dims are frozen
});

test("new Tensor(data, dims) infers the type", () => {
  assert.equal(new Tensor(new Int32Array(4), [4]).type, "int32");
  assert.equal(new Tensor(new BigInt64Array(2), [2]).type, "int64");
  assert.equal(new Tensor(new Uint8Array(2)).type, "uint8");
  assert.equal(new Tensor(new Uint16Array(2)).type, "uint16");
  assert.equal(new Tensor([1, 2, 3]).type, "float32");
  assert.equal(new Tensor(["a", "b"]).type, "string");
  assert.deepEqual(new Tensor(new Float32Array(5)).dims, [5]);
});

test("plain arrays become the type's typed array", () => {
  assert.ok(new Tensor("float32", [1, 2], [2]).data instanceof Float32Array);
  assert.deepEqual(Array.from(new Tensor("int64", [1, 2], [2]).data), [1n, 2n]);
  assert.deepEqual(Array.from(new Tensor("bool", [true, false], [2]).data), [1, 0]);
  assert.ok(new Tensor("float16", new Uint16Array(1), [1]).data instanceof Uint16Array);
});

test("data length must match dims", () => {
  assert.throws(() => new Tensor("float32", new Float32Array(5), [2, 3]), { name: "RangeError", message: /5 elements.*\[2,3\].*6/ });
  assert.equal(new Tensor("float32", new Float32Array(0), [0, 3]).size, 0);
});

test("bad types, data and dims are rejected", () => {
  assert.throws(() => new Tensor("float32", new Int32Array(2), [2]), { name: "TypeError", message: /Float32Array/ });
  assert.throws(() => new Tensor("complex64", [1], [1]), { name: "TypeError", message: /complex64/ });
  assert.throws(() => new Tensor("float32", new Float32Array(2), [2.5]), { name: "TypeError", message: /dims/ });
  assert.throws(() => new Tensor("float32", new Float32Array(2), [-2]), { name: "TypeError", message: /dims/ });
  assert.throws(() => new Tensor("string", [1, 2], [2]), { name: "TypeError", message: /strings/ });
});

test("reshape keeps the data", () => {
  const t = new Tensor("float32", Float32Array.from([1, 2, 3, 4]), [4]);
  const r = t.reshape([2, 2]);
  assert.equal(r.data, t.data);
  assert.deepEqual(r.dims, [2, 2]);
  assert.throws(() => t.reshape([3]), RangeError);
});

test("a tensor kept in a session's memory (location 'wasm'): getData downloads, dispose frees once", async () => {
  const calls = [];
  const kept = {
    key: 7,
    owner: "runtime",
    download: async () => { calls.push("download"); return Float32Array.of(1, 2, 3, 4).buffer; },
    dispose: () => calls.push("dispose"),
  };
  const t = Tensor._kept("float32", [2, 2], kept);
  assert.equal(t.location, "wasm");
  assert.equal(t.size, 4);
  assert.deepEqual(t.dims, [2, 2]);
  assert.equal(Tensor._keptOf(t), kept);
  assert.throws(() => t.data, /not on the CPU.*getData/);
  assert.throws(() => t.reshape([4]), /not on the CPU/);
  const data = await t.getData();
  assert.deepEqual(Array.from(data), [1, 2, 3, 4]);
  assert.equal(t.location, "cpu");
  assert.equal(t.data, data);
  assert.equal(Tensor._keptOf(t), undefined); // fed as bytes from now on
  assert.deepEqual(calls, ["download"]);
  t.dispose(); // the session's copy still goes
  t.dispose();
  assert.deepEqual(calls, ["download", "dispose"]);
  assert.equal(t.data, data); // a CPU tensor keeps its data

  const u = Tensor._kept("float32", [4], { ...kept, dispose: () => calls.push("dispose u") });
  await u.getData(true); // released at once
  assert.deepEqual(calls.slice(-2), ["download", "dispose u"]);
  const v = Tensor._kept("int64", [0], { ...kept, dispose: () => calls.push("dispose v") });
  v.dispose();
  assert.equal(v.location, "none");
  assert.equal(v.data, undefined);
  await assert.rejects(v.getData(), /disposed/);
  assert.deepEqual(calls.slice(-1), ["dispose v"]);
});
