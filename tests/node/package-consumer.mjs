// A JS user's script: tests/test_npm_package.py copies it into a scratch project that installed
// the npm tarball, so "nnwasm" resolves to node_modules/nnwasm/. Runs one model and prints JSON:
// the outputs (raw bytes in base64), env.distURL, and what reading SPEC.probe gave (the test runs
// plan files under Node's permission model, which must refuse it).
//   node package-consumer.mjs SPEC.json
//   SPEC: {model, proxy, probe, inputs: {name: {path, dtype, dims}}}
import { readFileSync } from "node:fs";
import { env, InferenceSession, Tensor } from "nnwasm";

const ARRAYS = { float32: Float32Array, int64: BigInt64Array, int32: Int32Array, uint8: Uint8Array };
const spec = JSON.parse(readFileSync(process.argv[2], "utf8"));
env.wasm.proxy = spec.proxy;

const feeds = {};
for (const [name, { path, dtype, dims }] of Object.entries(spec.inputs)) {
  const bytes = new Uint8Array(readFileSync(path)); // a copy: the read buffer may be pooled
  feeds[name] = new Tensor(dtype, new ARRAYS[dtype](bytes.buffer), dims);
}
const session = await InferenceSession.create(spec.model);
const results = await session.run(feeds);
const outputs = {};
for (const [name, t] of Object.entries(results)) {
  const bytes = Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength);
  outputs[name] = { type: t.type, dims: [...t.dims], base64: bytes.toString("base64") };
}
await session.release();

let probe;
try {
  readFileSync(spec.probe);
  probe = "read";
} catch (e) {
  probe = e.code;
}
console.log(JSON.stringify({ distURL: env.distURL, inputNames: session.inputNames, outputs, probe }));
process.exit(0); // the proxy worker would keep the process alive
