// The V8 half of ab_ops_hosts.py: each plan op run alone (nnw_plan_run_ops) for each build of
// kernels.wasm, builds interleaved op by op; prints [build][op] = [min ms, median ms] as JSON.
//   node bench/ab_ops_hosts.mjs PLAN SECONDS A.wasm [B.wasm ...]
import { loadPlanOnBuilds } from "./plan_builds.mjs";

const [planPath, secs, ...wasms] = process.argv.slice(2);
const { io, builds } = await loadPlanOnBuilds(planPath, wasms);
const warmEnd = performance.now() + 4000;   // V8 tiers up in the background
for (let i = 0; i < 30 || performance.now() < warmEnd; i++) builds.forEach((b) => b.run());
const times = builds.map(() => io.ops.map(() => []));
const end = performance.now() + Number(secs) * 1000;
while (performance.now() < end || times[0][0].length < 5)
  for (let i = 0; i < io.ops.length; i++)
    builds.forEach((b, j) => { const t = performance.now(); b.op(i); times[j][i].push(performance.now() - t); });
const stats = (t) => { const s = [...t].sort((a, b) => a - b); return [s[0], s[s.length >> 1]]; };
console.log(JSON.stringify(times.map((ops) => ops.map(stats))));
