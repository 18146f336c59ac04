// The BERT encoder of bench/speed/build_bench_bert.py in Node, one thread, interleaved run by run:
// nnwasm plan files (each on the kernels.wasm given, default this checkout's) against
// onnxruntime-web (wasm, SIMD, numThreads = 1) on the .onnx; medians and ratios to ort-web, then
// the top ops of each nnwasm plan (profiled). Each runner lives in its own worker, so plans can run
// on different kernels.wasm builds (before/after) in one run.
//   node bench/speed/bench_bert_web.mjs DIR seconds RUNNER...
//   RUNNER: ort:NAME (DIR/NAME.onnx) | LABEL=PLAN.nnwp[@KERNELS.wasm] | NAME (DIR/NAME.nnwp)
// e.g. node bench/speed/bench_bert_web.mjs ~/.cache/nnwasm/bench-bert 20 ort:bert bert ort:bert_int8 bert_int8
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { Worker, isMainThread, parentPort, workerData } from "node:worker_threads";

const INPUTS = ["input_ids", "attention_mask", "token_type_ids"];
const KERNELS = resolve(import.meta.dirname, "../../py_runtime/nnwasm/kernels.wasm");

function feeds(dir, T) {
  // the inputs whose .bin the ref dir holds (bench/'s bert_4l has no token_type_ids)
  return Object.fromEntries(INPUTS.filter((n) => existsSync(join(dir, "bert.ref", `${n}.bin`))).map((n) => {
    const b = readFileSync(join(dir, "bert.ref", `${n}.bin`));
    return [n, new T("int64", new BigInt64Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength)), [1, 128])];
  }));
}

async function session({ dir, kind, file, kernels }, profiling = false) {
  if (kind === "ort") {
    const ort = await import("onnxruntime-web");
    ort.env.wasm.numThreads = 1;
    ort.env.wasm.simd = true;
    const s = await ort.InferenceSession.create(new Uint8Array(readFileSync(file)), { executionProviders: ["wasm"] });
    return [s, feeds(dir, ort.Tensor)];
  }
  const { env, InferenceSession, Tensor } = await import("../../web/nnwasm.mjs");
  env.wasm.wasmPaths = pathToFileURL(kernels).href;
  const s = await InferenceSession.create(new Uint8Array(readFileSync(file)), { enableProfiling: profiling });
  return [s, feeds(dir, Tensor)];
}

/** {"kernel (op type)": ms a run}: each plan op's median over 11 profiled runs (a mean let one
 * preempted op inflate its total on a loaded machine); every run records the plan's ops in order */
async function topOps(r) {
  const RUNS = 11;
  const [s, f] = await session(r, true);
  for (let i = 0; i < RUNS; i++) await s.run(f);
  const ev = (await s.endProfiling()).filter((x) => x.args?.kernel);
  const per = ev.length / RUNS, by = {};
  for (let i = 0; i < per; i++) {
    const d = Array.from({ length: RUNS }, (_, run) => ev[run * per + i].dur / 1000).sort((a, b) => a - b);
    const key = `${ev[i].args.kernel} (${ev[i].args.op_name})`;
    by[key] = (by[key] ?? 0) + d[(RUNS - 1) >> 1];
  }
  return by;
}

if (!isMainThread) {
  const [s, f] = await session(workerData);
  parentPort.on("message", async (m) => {
    if (m === "profile") return parentPort.postMessage(await topOps(workerData));
    const t = performance.now(), c = process.cpuUsage();
    await s.run(f);
    const d = process.cpuUsage(c);   // the process's CPU time: one worker runs at a time
    parentPort.postMessage([performance.now() - t, (d.user + d.system) / 1000]);
  });
  parentPort.postMessage(0);
} else {
  const [dir, secondsArg, ...specs] = process.argv.slice(2);
  const seconds = Number(secondsArg ?? 10);
  const runners = specs.map((spec) => {
    if (spec.startsWith("ort:")) return { label: spec, dir, kind: "ort", file: join(dir, `${spec.slice(4)}.onnx`) };
    const [label, rest] = spec.includes("=") ? spec.split("=") : [spec, join(dir, `${spec}.nnwp`)];
    const [file, kernels] = rest.split("@");
    return { label, dir, kind: "nnwasm", file, kernels: resolve(kernels ?? KERNELS) };
  });
  const workers = runners.map((r) => new Worker(new URL(import.meta.url), { workerData: r }));
  const ask = (w, m = 0) => new Promise((ok) => { w.once("message", ok); w.postMessage(m); });
  await Promise.all(workers.map((w) => new Promise((ok) => w.once("message", ok))));
  const warmEnd = performance.now() + Math.max(3000, seconds * 300);
  for (let i = 0; i < 30 || performance.now() < warmEnd; i++) for (const w of workers) await ask(w);
  const times = runners.map(() => []), cpu = runners.map(() => []);
  const end = performance.now() + seconds * 1000;
  while (performance.now() < end || times[0].length < 10)
    for (let v = 0; v < workers.length; v++) {
      const [ms, cpuMs] = await ask(workers[v]);
      times[v].push(ms);
      cpu[v].push(cpuMs);
    }
  const q = (xs, p) => [...xs].sort((a, b) => a - b)[Math.floor(p * (xs.length - 1))];
  const med = times.map((t) => q(t, 0.5)), cmed = cpu.map((t) => q(t, 0.5));
  // an nnwasm runner's ratio is to the ort:NAME whose NAME is the longest prefix of its label
  const ortOf = (r) => runners.map((o, i) => [o, i]).filter(([o]) => o.kind === "ort" && r.label.startsWith(o.label.slice(4)))
    .sort((a, b) => b[0].label.length - a[0].label.length)[0]?.[1] ?? -1;
  // CPU time per run (process.cpuUsage) is what other load on the machine does not inflate
  console.log(`| runner | median ms | p10 ms | / onnxruntime-web | CPU ms (median) | CPU / onnxruntime-web |\n|---|---|---|---|---|---|`);
  runners.forEach((r, v) => {
    const o = r.kind === "ort" ? v : ortOf(r);
    console.log(`| ${r.label}${r.kernels && r.kernels !== KERNELS ? ` (${r.kernels})` : ""} | ${med[v].toFixed(2)} | ${q(times[v], 0.1).toFixed(2)} | ${o >= 0 ? (med[v] / med[o]).toFixed(3) : "-"} | ${cmed[v].toFixed(2)} | ${o >= 0 ? (cmed[v] / cmed[o]).toFixed(3) : "-"} |`);
  });
  console.log(`(${times[0].length} interleaved runs each)`);
  for (let v = 0; v < runners.length; v++) {
    if (runners[v].kind !== "nnwasm") continue;
    const by = await ask(workers[v], "profile");
    const total = Object.values(by).reduce((a, b) => a + b, 0);
    console.log(`\n${runners[v].label}: top ops, ${total.toFixed(2)} ms a run profiled`);
    for (const [k, ms] of Object.entries(by).sort((a, b) => b[1] - a[1]).slice(0, 8))
      console.log(`  ${k.padEnd(44)} ${ms.toFixed(2).padStart(7)} ms ${(100 * ms / total).toFixed(1).padStart(5)} %`);
  }
  process.exit(0);
}
