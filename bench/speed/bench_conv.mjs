// Conv nets in Node, one thread: nnwasm plan files (one or more builds: web/ dir + kernels.wasm +
// plan per model) against onnxruntime-web's wasm backend, interleaved run by run, medians; and with
// --profile, nnwasm's per-op times summed by kind (the first build). Driven by bench/speed/bench_conv.py.
//   node bench/speed/bench_conv.mjs JOB.json
// JOB: {seconds, profile, builds: [{label, web, kernels}], models: [{name, onnx, plans: [path per build]}]}
import { readFileSync } from "node:fs";
import * as ort from "onnxruntime-web";

const job = JSON.parse(readFileSync(process.argv[2], "utf8"));
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
ort.env.wasm.numThreads = 1;
const builds = [];
for (const b of job.builds) builds.push({ ...b, mod: await import(`${b.web}/plan-session.mjs?${b.label}`) });

for (const model of job.models) {
  const runners = {};
  const input = Float32Array.from({ length: 3 * 224 * 224 }, (_, i) => Math.sin(i));
  for (let i = 0; i < builds.length; i++) {
    const s = await builds[i].mod.PlanSession.create(new Uint8Array(readFileSync(model.plans[i])), [builds[i].kernels],
                                                      { enableProfiling: Boolean(job.profile) && i === 0 });
    const name = s.inputs[0].name;
    runners[builds[i].label] = async () => s.run([[name, { type: "float32", dims: [1, 3, 224, 224], data: input }]], null);
    runners[builds[i].label].session = s;
  }
  if (!job.profile) {
    const theirs = await ort.InferenceSession.create(readFileSync(model.onnx), { executionProviders: ["wasm"] });
    const feeds = { [theirs.inputNames[0]]: new ort.Tensor("float32", input, [1, 3, 224, 224]) };
    runners["ort-web"] = () => theirs.run(feeds);
  }
  const warmEnd = performance.now() + 4000;
  for (let i = 0; i < 30 || performance.now() < warmEnd; i++) for (const run of Object.values(runners)) await run();
  if (job.profile) {
    const s = runners[builds[0].label].session;
    s.startProfiling();
    for (let i = 0; i < 10; i++) await runners[builds[0].label]();
    const ev = s.endProfiling().filter((e) => e.cat === "Node");
    const per = new Map(); // node name -> [durations]
    for (const e of ev) { const k = `${e.name}\t${e.args.kernel}`; if (!per.has(k)) per.set(k, []); per.get(k).push(e.dur); }
    const rows = [...per].map(([k, d]) => [k, median(d) / 1000]);
    console.log(JSON.stringify({ model: model.name, ops: rows }));
    continue;
  }
  const times = Object.fromEntries(Object.keys(runners).map((k) => [k, []]));
  const end = performance.now() + job.seconds * 1000;
  while (performance.now() < end || times["ort-web"].length < 10) {
    for (const [k, run] of Object.entries(runners)) { const t = performance.now(); await run(); times[k].push(performance.now() - t); }
  }
  console.log(JSON.stringify({ model: model.name, runs: times["ort-web"].length,
    ms: Object.fromEntries(Object.entries(times).map(([k, v]) => [k, median(v)])) }));
}
