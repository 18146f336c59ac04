// Runs the plan files of tests/threads_fixtures.py on env.wasm.numThreads = argv[3] (web/threads.mjs)
// and prints one JSON line: {flavour, warnings, models: {key: {sha256: {output: hex}, threads, jobs}}}:
// the kernels.wasm the realm picked (web/flavours.mjs threadsFlavour, plan-session.mjs), the
// warnings it printed, and per model the outputs' SHA-256 of a run once the pool is enabled (the
// first run may go on one thread while the helpers start), the threads it ran on and the split jobs
// it made (nnw_pool_jobs). argv[2]: the fixtures folder; argv[4]: env.wasm.relaxedSimd ("auto":
// unset, "true", "false"); argv[5]: the folder holding kernels*.wasm; argv[6] "onnx": the .onnx
// models through Pyodide instead of the plan files (the pool then lives under the Python sessions);
// argv[7..]: only these keys. For tests/test_threads_js.py and tests/test_threads_flavours.py.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { env, InferenceSession, Tensor } from "../../web/nnwasm.mjs";
import { loadKernels } from "../../web/plan-session.mjs";
import { pyodideThreadPool } from "../../web/threads.mjs";

const [folder, threads, relaxed, kernels, kind, ...only] = process.argv.slice(2);
env.wasm.numThreads = Number(threads);
if (relaxed !== "auto") env.wasm.relaxedSimd = relaxed === "true";
env.wasm.wasmPaths = kernels.endsWith("/") ? kernels : kernels + "/";
const warnings = [];
const warn = console.warn;
console.warn = (...a) => {
  warnings.push(a.join(" "));
  warn(...a);
};
const ARRAYS = { float32: Float32Array, int32: Int32Array, int64: BigInt64Array, uint8: Uint8Array, int8: Int8Array,
                 float16: Uint16Array, bool: Uint8Array };
const fixtures = JSON.parse(readFileSync(join(folder, "fixtures.json"), "utf8"));
const out = { models: {}, warnings };
for (const [key, entry] of Object.entries(fixtures)) {
  if (only.length && !only.includes(key)) continue;
  const session = kind === "onnx" ? await InferenceSession.create(entry.onnx)
    : await InferenceSession.create(new Uint8Array(readFileSync(join(folder, entry.plan))));
  const feeds = {};
  for (const [name, v] of Object.entries(entry.inputs)) {
    const bytes = readFileSync(join(folder, v.file));
    feeds[name] = new Tensor(v.dtype, new ARRAYS[v.dtype](bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length)), v.shape);
  }
  await session.run(feeds);
  for (let i = 0; i < 200 && session.numThreads < Number(threads); i++) {
    await new Promise((r) => setTimeout(r, 25));
    await session.run(feeds); // enables the pool once its helpers are ready
  }
  const k = kind === "onnx" ? pyodideThreadPool()?.k.exports ?? {} : (await loadKernels()).exports;
  const jobs = k.nnw_pool_jobs?.() ?? 0;
  const ran = session.numThreads;
  const results = await session.run(feeds);
  const sha256 = {};
  for (const [name, t] of Object.entries(results)) {
    sha256[name] = createHash("sha256").update(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength)).digest("hex");
  }
  out.models[key] = { threads: ran, jobs: (k.nnw_pool_jobs?.() ?? 0) - jobs, sha256 };
  out.flavour = session.kernelsFlavour;
  await session.release();
}
console.log(JSON.stringify(out));
process.exit(0); // Pyodide keeps Node's loop alive
