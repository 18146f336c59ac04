// The Node half of ab_kernels.py: several builds of kernels.wasm in one V8, each with the same
// plan loaded, run in turn (inputs zeroed before each run, as the arena reuses their space:
// timing, not results).
//   node bench/ab/ab_kernels.mjs PLAN SECONDS MATCH A.wasm B.wasm ...
// prints one JSON line: {"ms": [median per build], "match_ms": [...], "runs": n}: match_ms sums
// the per-op medians of the ops whose node name contains MATCH (each op timed alone), or null.
import { loadPlanOnBuilds, warmUp } from "./plan_builds.mjs";

const [planPath, secondsArg, match, ...wasms] = process.argv.slice(2);
const { io, builds: loaded } = await loadPlanOnBuilds(planPath, wasms);
// the memory plan reuses inputs' space once read: zero them (valid ids, too) before each run
const builds = loaded.map(({ k, arena, run }) => () => {
  io.inputs.forEach((v) => new Uint8Array(k.memory.buffer, arena + v.offset, v.nbytes).fill(0));
  return run();
});
const opRuns = loaded.map((b) => b.op);
const picked = match ? io.ops.map((op, i) => (op.node.includes(match) ? i : -1)).filter((i) => i >= 0) : [];
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const times = builds.map(() => []);
warmUp(builds);
const end = performance.now() + Number(secondsArg) * 1000;
while (performance.now() < end || times[0].length < 5) {
  builds.forEach((run, i) => {
    for (let r = 0; r < 2; r++) {
      const t = performance.now();
      run();
      times[i].push(performance.now() - t);
    }
  });
}
let matchMs = null;
if (picked.length) {
  const per = builds.map(() => picked.map(() => []));
  const end2 = performance.now() + Number(secondsArg) * 500;
  while (performance.now() < end2 || per[0][0].length < 5) {
    opRuns.forEach((runOp, b) => picked.forEach((op, j) => {
      const t = performance.now();
      runOp(op);
      per[b][j].push(performance.now() - t);
    }));
  }
  matchMs = per.map((ops) => ops.reduce((s, t) => s + median(t), 0));
}
console.log(JSON.stringify({ ms: times.map(median), match_ms: matchMs, runs: times[0].length }));
