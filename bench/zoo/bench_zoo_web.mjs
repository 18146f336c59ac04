// The model zoo in Node (V8), single thread: nnwasm (kernels.wasm driven from Pyodide, WASM alone:
// Pyodide has no numpy) against onnxruntime-web's wasm backend (SIMD, numThreads = 1), on each
// model's first case, interleaved run by run, medians. V8 compiles wasm in a baseline tier and
// optimizes in the background, so both warm up on count and time before measuring.
//
//   node bench/zoo/bench_zoo_web.mjs ZOO_DIR [seconds] [model ...]
// One JSON line per model on stdout: {model, nnwasm_ms, ortweb_ms, nnwasm_over_ortweb, runs} or
// {model, error} when nnwasm can't run it yet (the reason).
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import * as ort from "onnxruntime-web";
import { InferenceSession, Tensor } from "../../web/nnwasm.mjs";

const [zoo, secondsArg, ...only] = process.argv.slice(2);
const seconds = Number(secondsArg ?? 3);
const names = only.length ? only : readdirSync(zoo).filter((f) => f.endsWith(".json")).map((f) => f.slice(0, -5));
const ARRAYS = { float32: Float32Array, float16: Uint16Array, int64: BigInt64Array, int32: Int32Array, uint8: Uint8Array };
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const ms = () => performance.now();

ort.env.wasm.numThreads = 1;
ort.env.wasm.simd = true;

function feeds(meta, TensorClass) {
  return Object.fromEntries(Object.entries(meta.cases[0].inputs).map(([n, t]) => {
    const buf = readFileSync(join(zoo, t.file));
    const bytes = new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength).slice();
    return [n, new TensorClass(t.dtype, new ARRAYS[t.dtype](bytes.buffer), t.dims)];
  }));
}

for (const name of names) {
  const meta = JSON.parse(readFileSync(join(zoo, `${name}.json`), "utf8"));
  const model = new Uint8Array(readFileSync(join(zoo, meta.file)));
  let ours, theirs;
  try {
    ours = await InferenceSession.create(model, { executionProviders: ["wasm"] });
    theirs = await ort.InferenceSession.create(model, { executionProviders: ["wasm"] });
    const runners = {
      nnwasm: () => ours.run(feeds(meta, Tensor)),
      ortweb: () => theirs.run(feeds(meta, ort.Tensor)),
    };
    const warmEnd = ms() + Math.min(10_000, seconds * 500);
    for (let i = 0; i < 30 || ms() < warmEnd; i++) for (const run of Object.values(runners)) await run();
    const times = { nnwasm: [], ortweb: [] };
    const end = ms() + seconds * 1000;
    while (ms() < end || times.nnwasm.length < 3) {
      for (const [k, run] of Object.entries(runners)) {
        const t = ms();
        await run();
        times[k].push(ms() - t);
      }
    }
    const [a, b] = [median(times.nnwasm), median(times.ortweb)];
    console.log(JSON.stringify({ model: name, nnwasm_ms: a, ortweb_ms: b, nnwasm_over_ortweb: a / b, runs: times.nnwasm.length }));
  } catch (e) {
    console.log(JSON.stringify({ model: name, error: `${e.name}: ${String(e.message).split("\n").slice(0, 2).join(" ").slice(0, 200)}` }));
  } finally {
    await ours?.release();
    await theirs?.release();
  }
}
