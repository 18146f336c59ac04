// onnxruntime-web's own per-op profile (wasm, SIMD, one thread) of a model in Node: its profiler
// (enableProfiling) prints the Chrome trace on stdout, so the script runs itself as a child and
// sums the last RUNS runs' node events by op type (each node's median over those runs).
//   node bench/speed/ort_web_profile.mjs MODEL.onnx REF_DIR [runs]
// REF_DIR holds the int64 [1, 128] inputs as NAME.bin (bench_bert_web.mjs's bert.ref).
import { spawnSync } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";

const [model, refDir, runsArg] = process.argv.slice(2);
const RUNS = Number(runsArg ?? 20);
if (process.env.ORT_PROFILE_CHILD) {
  const ort = await import("onnxruntime-web");
  ort.env.wasm.numThreads = 1;
  const feeds = Object.fromEntries(readdirSync(refDir).filter((f) => f.endsWith(".bin")).map((f) => {
    const b = readFileSync(join(refDir, f));
    return [f.slice(0, -4), new ort.Tensor("int64", new BigInt64Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength)), [1, 128])];
  }));
  const s = await ort.InferenceSession.create(new Uint8Array(readFileSync(model)), { executionProviders: ["wasm"], enableProfiling: true });
  for (let i = 0; i < 30 + RUNS; i++) await s.run(feeds);
  await s.endProfiling();
} else {
  const child = spawnSync(process.execPath, [process.argv[1], ...process.argv.slice(2)],
                          { env: { ...process.env, ORT_PROFILE_CHILD: "1" }, maxBuffer: 1 << 30, encoding: "utf8" });
  const events = child.stdout.split("\n").map((l) => l.trim().replace(/,$/, ""))
    .filter((l) => l.startsWith('{"cat"')).map((l) => { try { return JSON.parse(l); } catch { return null; } }).filter(Boolean);
  const runs = events.filter((e) => e.name === "model_run").slice(-RUNS);
  if (!runs.length) throw new Error(`no profile in onnxruntime-web's output:\n${child.stderr}`);
  const durs = {}, opOf = {};
  for (const e of events) {
    if (e.cat !== "Node" || e.ts < runs[0].ts || !e.name.endsWith("_kernel_time")) continue;
    (durs[e.name] ??= []).push(e.dur / 1000);
    opOf[e.name] = e.args?.op_name;
  }
  const by = {};
  for (const [name, d] of Object.entries(durs)) {
    d.sort((a, b) => a - b);
    by[opOf[name]] = (by[opOf[name]] ?? 0) + d[Math.floor((d.length - 1) / 2)] * d.length / RUNS;
  }
  const med = runs.map((r) => r.dur / 1000).sort((a, b) => a - b)[Math.floor((runs.length - 1) / 2)];
  const total = Object.values(by).reduce((a, b) => a + b, 0);
  console.log(`${model}: model_run median ${med.toFixed(2)} ms, op medians sum ${total.toFixed(2)} ms (${RUNS} runs)`);
  for (const [op, ms] of Object.entries(by).sort((a, b) => b[1] - a[1]))
    console.log(`  ${op.padEnd(28)} ${ms.toFixed(2).padStart(7)} ms ${(100 * ms / total).toFixed(1).padStart(5)} %`);
}
