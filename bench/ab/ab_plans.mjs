// The V8 half of ab_plans.py: each PLAN@WASM pair loaded on its own instance; whole runs
// interleaved pair by pair (medians), then each plan op run alone (nnw_plan_run_ops), pairs
// interleaved op by op (minima; ops aligned by index). Prints {ms: [...], ops: [[...], ...]}.
//   node bench/ab/ab_plans.mjs SECONDS PLAN@WASM [PLAN@WASM ...]
import { loadPlanOnBuilds, warmUp } from "./plan_builds.mjs";

const [secs, ...pairs] = process.argv.slice(2);
const builds = [];
for (const pair of pairs) {
  const [plan, wasm] = pair.split("@");
  const { io, builds: [b] } = await loadPlanOnBuilds(plan, [wasm]);
  builds.push({ ...b, nops: io.ops.length });
}
warmUp(builds.map((b) => b.run));
const runs = builds.map(() => []);
let end = performance.now() + Number(secs) * 500;
while (performance.now() < end || runs[0].length < 5)
  builds.forEach((b, j) => { for (let r = 0; r < 2; r++) { const t = performance.now(); b.run(); runs[j].push(performance.now() - t); } });
const nops = Math.min(...builds.map((b) => b.nops));
const best = builds.map(() => new Array(nops).fill(Infinity));
end = performance.now() + Number(secs) * 500;
while (performance.now() < end)
  for (let i = 0; i < nops; i++)
    builds.forEach((b, j) => { const t = performance.now(); b.op(i); best[j][i] = Math.min(best[j][i], performance.now() - t); });
const med = (t) => { const s = [...t].sort((a, b) => a - b); return s[s.length >> 1]; };
console.log(JSON.stringify({ ms: runs.map(med), ops: best }));
