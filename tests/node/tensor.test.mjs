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
