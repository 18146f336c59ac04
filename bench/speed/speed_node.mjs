// The Node half of bench/speed/bench_speed.py: one model, its runtimes in one V8, driven by the Python
// driver one command at a time so that Node's rounds interleave with CPython's.
//
//   node bench/speed/speed_node.mjs '{"dir": ..., "model": NAME, "runtimes": [...], "peakWasm": PATH}'
// Runtimes: nnwasm (its .nnwp plan file: kernels.wasm alone, no Python), nnwasm-pyodide (the .onnx
// through Pyodide), ort-web (onnxruntime-web, wasm, SIMD, numThreads = 1), tfjs (TF.js 4.22's
// wasm backend, 1 thread, the same architecture built with its layers API: speed_tfjs_models.mjs),
// peak (bench/speed/peak.c's f32x4 loop, ~10 ms a run), nnwasm-fp32 (for an int8 model: nnwasm on
// the plan of its float32 base model, cfg.base, so that int8 / fp32 is a ratio within rounds), nnwasm-before
// (cfg.before/MODEL.nnwp: the plan compiled by another nnwasm). stdin: one JSON command a line, stdout: one
// JSON reply a line ({"error"} for a runtime that could not be created is in the first reply).
//   {"cmd": "warm", "runs": 30, "seconds": 4}  each runtime >= runs runs and >= seconds, interleaved
//   {"cmd": "round", "runs": {rt: n}}            n timed runs of each runtime in turn -> {times}
//   {"cmd": "profile", "runs": n}                nnwasm's ms a run by op type and kernel, and
//                                                its 10 slowest nodes -> {ops, nodes}
//   {"cmd": "quit"}                              -> {memory}: wasm linear memory bytes per runtime
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { watchWasmMemories } from "../wasm_memories.mjs";

const cfg = JSON.parse(process.argv[2]);
const meta = JSON.parse(readFileSync(join(cfg.dir, `${cfg.model}.json`), "utf8"));
const THREADS = cfg.threads ?? 1; // env.wasm.numThreads of nnwasm and onnxruntime-web in this process
const ARRAYS = { float32: Float32Array, int64: BigInt64Array, int32: Int32Array, uint8: Uint8Array };
const now = () => performance.now();

// Every wasm memory a runtime makes or instantiates, by the runtime being created then: that is
// how onnxruntime-web's heap is found (its module is internal).
let owner = null;
const memories = [];
watchWasmMemories((m) => memories.push([owner, m]));

function feeds(TensorClass, m = meta) {
  return Object.fromEntries(Object.entries(m.cases[0].inputs).map(([n, t]) => {
    const buf = readFileSync(join(cfg.dir, t.file));
    const bytes = new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength).slice();
    return [n, new TensorClass(t.dtype, new ARRAYS[t.dtype](bytes.buffer), t.dims)];
  }));
}

// onnxruntime's outputs for case0, to check each runtime's first answer against
function maxDiff(outputs) {
  let worst = 0;
  for (const [name, t] of Object.entries(meta.cases[0].outputs)) {
    if (!outputs[name]) continue;
    const buf = readFileSync(join(cfg.dir, t.file));
    const ref = new Float32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength));
    const got = outputs[name].data;
    for (let i = 0; i < ref.length; i++) worst = Math.max(worst, Math.abs(got[i] - ref[i]) || (got[i] === ref[i] ? 0 : Infinity));
  }
  return worst;
}

async function makeRuntime(name) {
  const onnx = new Uint8Array(readFileSync(join(cfg.dir, meta.file)));
  if (name === "nnwasm" || name === "nnwasm-pyodide") {
    const { InferenceSession, Tensor, env } = await import("../../web/nnwasm.mjs");
    if (name === "nnwasm" && !meta.plan) throw new Error(`no plan file: ${meta.plan_error}`);
    // cfg.threads (bench_speed.py --threads): onnxruntime-web's setting, nnwasm's pool (web/threads.mjs);
    // cfg.flavour "simd" (--flavour-ab): the baseline kernels where relaxed SIMD would be chosen
    if (env?.wasm) env.wasm.numThreads = THREADS;
    if (cfg.flavour === "simd") env.wasm.relaxedSimd = false;
    const bytes = name === "nnwasm" ? new Uint8Array(readFileSync(join(cfg.dir, meta.plan))) : onnx;
    const session = await InferenceSession.create(bytes, { executionProviders: ["wasm"] });
    const x = feeds(Tensor);
    const r = { run: () => session.run(x), session, flavour: () => session.kernelsFlavour, threads: () => session.numThreads };
    if (name === "nnwasm") {
      const { loadKernels } = await import("../../web/plan-session.mjs");
      const { exports } = await loadKernels();
      r.memory = () => exports.memory.buffer.byteLength;
    }
    return r;
  }
  if (name === "nnwasm-before") {
    // bench_speed.py --before DIR: this model's plan compiled by another nnwasm (before a change), same kernels.wasm
    const { InferenceSession, Tensor } = await import("../../web/nnwasm.mjs");
    const session = await InferenceSession.create(new Uint8Array(readFileSync(join(cfg.before, `${cfg.model}.nnwp`))));
    const x = feeds(Tensor);
    return { run: () => session.run(x), session };
  }
  if (name === "nnwasm-fp32") {
    const base = JSON.parse(readFileSync(join(cfg.dir, `${cfg.base}.json`), "utf8"));
    if (!base.plan) throw new Error(`no plan file for ${cfg.base}: ${base.plan_error}`);
    const { InferenceSession, Tensor, env } = await import("../../web/nnwasm.mjs");
    if (cfg.flavour === "simd") env.wasm.relaxedSimd = false;
    const session = await InferenceSession.create(new Uint8Array(readFileSync(join(cfg.dir, base.plan))));
    const x = feeds(Tensor, base);
    return { run: () => session.run(x) }; // no session: its outputs are not this model's
  }
  if (name === "ort-web") {
    const ort = await import("onnxruntime-web");
    ort.env.wasm.numThreads = THREADS;
    ort.env.wasm.simd = true;
    const session = await ort.InferenceSession.create(onnx, { executionProviders: ["wasm"] });
    const x = feeds(ort.Tensor);
    return { run: () => session.run(x), session };
  }
  if (name === "tfjs") {
    const tf = await import("@tensorflow/tfjs-core");
    const wasm = await import("@tensorflow/tfjs-backend-wasm");
    const { build } = await import("./speed_tfjs_models.mjs");
    wasm.setThreadsCount(1); // before the backend starts; Node has no wasm threads here anyway
    await tf.setBackend("wasm");
    await tf.ready();
    const model = build(cfg.model);
    const x = tf.randomNormal(model.inputs[0].shape.map((d) => d ?? 1), 0, 1, "float32", 1);
    const run = async () => {
      const y = model.predict(x);
      await y.data();
      y.dispose();
    };
    return { run, memory: () => tf.backend().wasm.HEAP8.length, threads: wasm.getThreadsCount() };
  }
  if (name === "peak") {
    const { instance } = await WebAssembly.instantiate(readFileSync(cfg.peakWasm), {});
    const ITERS = 1_200_000; // 96 flops each: ~115 MFLOP, ~3 ms at 40 GFLOP/s
    return { run: async () => instance.exports.peak(ITERS, 1000), gflop: (96 * ITERS) / 1e9 };
  }
  throw new Error(`unknown runtime ${name}`);
}

const runtimes = {};
const ready = { model: cfg.model, create_ms: {}, errors: {}, max_abs_diff: {}, threads: THREADS };
for (const name of cfg.runtimes) {
  owner = name;
  const t = now();
  try {
    const r = await makeRuntime(name);
    ready.create_ms[name] = now() - t;
    const out = await r.run();
    if (r.session) ready.max_abs_diff[name] = maxDiff(out);
    if (r.gflop) ready.peak_gflop_per_run = r.gflop;
    if (typeof r.threads === "number") ready.tfjs_threads = r.threads;
    runtimes[name] = r;
  } catch (e) {
    ready.errors[name] = `${e.name}: ${String(e.message).split("\n").slice(0, 3).join(" ").slice(0, 300)}`;
  }
}
owner = null;
console.log(JSON.stringify(ready));

async function timed(run) {
  const t = now();
  await run();
  return now() - t;
}

async function handle(c) {
  if (c.cmd === "warm") {
    const runs = Object.fromEntries(Object.keys(runtimes).map((k) => [k, 0]));
    const spent = { ...runs };
    const more = (k) => runs[k] < c.runs || spent[k] < c.seconds * 1000;
    while (Object.keys(runtimes).some(more)) {
      for (const [k, r] of Object.entries(runtimes)) {
        if (!more(k)) continue;
        spent[k] += await timed(r.run);
        runs[k]++;
      }
    }
    const last = {};
    for (const [k, r] of Object.entries(runtimes)) last[k] = await timed(r.run);
    const nn = runtimes.nnwasm; // the flavour and threads its runs use once warm (the pool starts off the first runs)
    return { warm_runs: runs, last_ms: last, nnwasm: nn?.flavour ? { flavour: nn.flavour(), threads: nn.threads() } : null };
  }
  if (c.cmd === "round") {
    const times = {};
    const order = Object.keys(runtimes);
    const shift = (c.index ?? 0) % order.length; // a different runtime first in each round
    for (const k of [...order.slice(shift), ...order.slice(0, shift)]) {
      times[k] = [];
      for (let i = 0; i < (c.runs[k] ?? 1); i++) times[k].push(await timed(runtimes[k].run));
    }
    return { times };
  }
  if (c.cmd === "profile") {
    const s = runtimes.nnwasm?.session;
    if (!s) return { ops: null };
    await s.startProfiling();
    for (let i = 0; i < c.runs; i++) await runtimes.nnwasm.run();
    const events = await s.endProfiling();
    // each plan op's median over the runs, not its mean: on a loaded machine one preempted op in
    // one of a few runs had added its whole time slice to the mean (the 17:45 report's BERT
    // profile summed to 36 ms a run against an 18.7 ms median). Every run records the ops in order.
    const ev = events.filter((e) => e.args?.kernel), per = ev.length / c.runs;
    const ops = {}, nodes = {};
    for (let i = 0; i < per; i++) {
      const d = Array.from({ length: c.runs }, (_, run) => ev[run * per + i].dur / 1000).sort((a, b) => a - b);
      const ms = d[(c.runs - 1) >> 1], e = ev[i];
      const key = `${e.args.op_name} ${e.args.kernel}`;
      ops[key] = (ops[key] ?? 0) + ms;
      nodes[e.name] = (nodes[e.name] ?? 0) + ms;
    }
    const top = Object.entries(nodes).sort((a, b) => b[1] - a[1]).slice(0, 10);
    return { ops, nodes: Object.fromEntries(top) };
  }
  if (c.cmd === "quit") {
    const memory = {};
    for (const [k, r] of Object.entries(runtimes)) {
      if (r.memory) memory[k] = { bytes: r.memory(), how: k === "nnwasm" ? "kernels.wasm memory.buffer.byteLength" : "HEAP8.length" };
    }
    const ours = memories.filter(([o]) => o === "ort-web").map(([, m]) => m.buffer.byteLength);
    if (runtimes["ort-web"] && ours.length) memory["ort-web"] = { bytes: Math.max(...ours), how: "its WebAssembly.Memory byteLength (captured at instantiation)" };
    memory.node_rss = { bytes: process.memoryUsage().rss, how: "process.memoryUsage().rss, all runtimes" };
    return { memory };
  }
  throw new Error(`unknown command ${c.cmd}`);
}

for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const c = JSON.parse(line);
  console.log(JSON.stringify(await handle(c)));
  if (c.cmd === "quit") break;
}
process.exit(0);
