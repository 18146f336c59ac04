// The V8 half of ab_ops_hosts.py: each plan op run alone (nnw_plan_run_ops) for each build of
// kernels.wasm, builds interleaved op by op; prints [build][op] = [min ms, median ms] as JSON.
//   node bench/ab/ab_ops_hosts.mjs PLAN SECONDS A.wasm [B.wasm ...]
import { loadPlanOnBuilds, timeOps, warmUp } from "./plan_builds.mjs";

const [planPath, secs, ...wasms] = process.argv.slice(2);
const { io, builds } = await loadPlanOnBuilds(planPath, wasms);
warmUp(builds.map((b) => b.run));
const times = timeOps(builds, io.ops.length, secs);
const stats = (t) => { const s = [...t].sort((a, b) => a - b); return [s[0], s[s.length >> 1]]; };
console.log(JSON.stringify(times.map((ops) => ops.map(stats))));
