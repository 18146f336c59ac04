// The BERT encoder of bench/build_bench_bert.py in Node, one thread: nnwasm from plan files
// (PLAN.nnwp, compiled by `python -m nnwasm compile`) against onnxruntime-web (wasm, SIMD,
// numThreads = 1) on the same .onnx, interleaved run by run, medians; then nnwasm's top ops.
//   node bench/bench_bert_web.mjs DIR seconds name[=plan.nnwp] ...
// e.g. node bench/bench_bert_web.mjs ~/.cache/nnwasm/bench-bert 6 bert bert_int8 bert=old.nnwp
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import * as ort from "onnxruntime-web";
import { env, InferenceSession, Tensor } from "../web/nnwasm.mjs";

const [dir, secondsArg, ...specs] = process.argv.slice(2);
const seconds = Number(secondsArg ?? 5);
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const ms = () => performance.now();
ort.env.wasm.numThreads = 1;
ort.env.wasm.simd = true;
env.wasm.wasmPaths = pathToFileURL(resolve(import.meta.dirname, "../py_runtime/nnwasm/kernels.wasm")).href;

function feeds(meta, T) {
  return Object.fromEntries(Object.entries(meta.cases[0].inputs).map(([n, t]) => {
    const buf = readFileSync(join(dir, t.file));
    return [n, new T(t.dtype, new BigInt64Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength)), t.dims)];
  }));
}

const runners = {};
const ortDone = new Set();
for (const spec of specs) {
  const [name, planArg] = spec.split("=");
  const meta = JSON.parse(readFileSync(join(dir, `${name}.json`), "utf8"));
  const plan = planArg ?? join(dir, `${name}.nnwp`);
  const ours = await InferenceSession.create(new Uint8Array(readFileSync(plan)));
  const f = feeds(meta, Tensor);
  runners[`nnwasm ${spec}`] = () => ours.run(f);
  if (!ortDone.has(name)) {
    ortDone.add(name);
    const theirs = await ort.InferenceSession.create(new Uint8Array(readFileSync(join(dir, meta.file))), { executionProviders: ["wasm"] });
    const g = feeds(meta, ort.Tensor);
    runners[`ortweb ${name}`] = () => theirs.run(g);
  }
}
const warmEnd = ms() + Math.max(3000, seconds * 400);
for (let i = 0; i < 20 || ms() < warmEnd; i++) for (const run of Object.values(runners)) await run();
const times = Object.fromEntries(Object.keys(runners).map((k) => [k, []]));
const end = ms() + seconds * 1000;
while (ms() < end || times[Object.keys(times)[0]].length < 5) {
  for (const [k, run] of Object.entries(runners)) {
    const t = ms();
    await run();
    times[k].push(ms() - t);
  }
}
const med = Object.fromEntries(Object.entries(times).map(([k, v]) => [k, median(v)]));
for (const [k, v] of Object.entries(med)) {
  const base = med[`ortweb ${k.split(" ")[1].split("=")[0]}`];
  console.log(`${k.padEnd(40)} ${v.toFixed(2).padStart(8)} ms  / ortweb ${(v / base).toFixed(3)}  (${times[k].length} runs)`);
}
// top ops, profiled runs
for (const spec of specs) {
  const [name, planArg] = spec.split("=");
  const meta = JSON.parse(readFileSync(join(dir, `${name}.json`), "utf8"));
  const s = await InferenceSession.create(new Uint8Array(readFileSync(planArg ?? join(dir, `${name}.nnwp`))), { enableProfiling: true });
  const f = feeds(meta, Tensor);
  for (let i = 0; i < 10; i++) await s.run(f);
  const ev = (await s.endProfiling()).filter((e) => e.args?.kernel);
  const by = {};
  for (const e of ev) {
    const key = `${e.args.kernel} (${e.args.op_name})`;
    by[key] = (by[key] ?? 0) + e.dur / 10;
  }
  const total = Object.values(by).reduce((a, b) => a + b, 0);
  console.log(`\n${spec}: profiled ${(total / 1000).toFixed(2)} ms/run over ops`);
  for (const [k, v] of Object.entries(by).sort((a, b) => b[1] - a[1]).slice(0, 12))
    console.log(`  ${k.padEnd(36)} ${(v / 1000).toFixed(2).padStart(7)} ms ${(100 * v / total).toFixed(1).padStart(5)} %`);
}
process.exit(0);
