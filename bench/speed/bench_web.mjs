// EfficientNet-Lite0, batch 1, single thread, in Node (V8): nnwasm (kernels.wasm driven from
// Pyodide) against onnxruntime-web's wasm backend (SIMD, numThreads = 1), interleaved run by
// run, medians. V8 compiles wasm in a baseline tier first and optimizes in the background, so
// both warm up on count and time before measuring.
//
//   node bench/speed/bench_web.mjs [seconds]     last line of stdout: JSON of the medians
import { readFile } from "node:fs/promises";
import * as ort from "onnxruntime-web";
import { InferenceSession, Tensor } from "../../web/nnwasm.mjs";

const seconds = Number(process.argv[2] ?? 20);
const model = new Uint8Array(await readFile(new URL("../../demo/assets/efficientnet-lite0.onnx", import.meta.url)));
const dims = [1, 3, 224, 224];
const data = new Float32Array(dims.reduce((a, b) => a * b));
let seed = 1;
for (let i = 0; i < data.length; i++) data[i] = ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32) * 2 - 1;

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const ms = () => performance.now();

let t = ms();
const ours = await InferenceSession.create(model);
const createMs = ms() - t;
ort.env.wasm.numThreads = 1;
ort.env.wasm.simd = true;
const theirs = await ort.InferenceSession.create(model, { executionProviders: ["wasm"] });

const runners = {
  nnwasm: () => ours.run({ input: new Tensor("float32", data, dims) }),
  ortweb: () => theirs.run({ input: new ort.Tensor("float32", data, dims) }),
};
const first = {};
for (const [name, run] of Object.entries(runners)) {
  const out = await run();
  first[name] = (out.logits ?? Object.values(out)[0]).data;
}
let maxDiff = 0;
for (let i = 0; i < first.nnwasm.length; i++) maxDiff = Math.max(maxDiff, Math.abs(first.nnwasm[i] - first.ortweb[i]));

const warmEnd = ms() + Math.min(10_000, seconds * 500);
for (let i = 0; i < 30 || ms() < warmEnd; i++) for (const run of Object.values(runners)) await run();

const times = { nnwasm: [], ortweb: [] };
const end = ms() + seconds * 1000;
while (ms() < end) {
  for (const [name, run] of Object.entries(runners)) {
    t = ms();
    await run();
    times[name].push(ms() - t);
  }
}
console.log(JSON.stringify({
  nnwasm_ms: median(times.nnwasm), ortweb_ms: median(times.ortweb), runs: times.nnwasm.length,
  nnwasm_create_ms: createMs, max_abs_diff_logits: maxDiff,
}));
