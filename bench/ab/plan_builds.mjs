// What the A/B scripts (ab_kernels.mjs, ab_ops.mjs, ab_ops_hosts.mjs, ab_plans.mjs) share: one plan
// file loaded on each of several builds of kernels.wasm, each build in its own instance; the
// warm-up; per-op timing with the builds interleaved op by op.
import { readFileSync } from "node:fs";
import { parsePlanFile } from "../../web/plan-file.mjs";

/** -> {io, plan (parsePlanFile's), builds: [{k (exports), arena, run(), op(i)}]}: run() is nnw_plan_run, op(i) runs
 * plan op i alone (nnw_plan_run_ops). Throws when a build refuses the plan. */
export async function loadPlanOnBuilds(planPath, wasms) {
  const { plan, arenaBytes, io } = parsePlanFile(new Uint8Array(readFileSync(planPath)));
  const builds = [];
  for (const file of wasms) {
    const { instance } = await WebAssembly.instantiate(readFileSync(file), { env: { emscripten_notify_memory_growth: () => {} } });
    const k = instance.exports;
    k._initialize?.();
    const p = k.nnw_malloc(plan.length), arena = k.nnw_malloc(arenaBytes), status = k.nnw_malloc(4);
    new Uint8Array(k.memory.buffer, p, plan.length).set(plan);
    if (k.nnw_plan_load(p, plan.length, arena, arenaBytes, status)) throw new Error(`${file} refused the plan`);
    // inputs zeroed before each whole run, as plan_builds.py's Build does (a run may leave them
    // changed: a decoder's plan then stopped at once with NNW_BAD_INDEX, timing nothing)
    const zero = () => io.inputs.forEach((v) => new Uint8Array(k.memory.buffer, arena + v.offset, v.nbytes).fill(0));
    zero();
    builds.push({ k, arena, run: () => { zero(); return k.nnw_plan_run(p, arena); }, op: (i) => k.nnw_plan_run_ops(p, arena, i, 1) });
  }
  return { io, plan, builds };
}

/** Runs each of `runs` (functions) in turn until V8 has tiered them up: >= 30 rounds and >= 4 s
 * (it optimizes in the background, and a running call never changes tier). */
export function warmUp(runs) {
  const end = performance.now() + 4000;
  for (let i = 0; i < 30 || performance.now() < end; i++) runs.forEach((run) => run());
}

/** Plan ops 0..nops-1 each run alone on every build (b.op(i)), builds interleaved op by op, for
 * `secs` seconds and at least 5 rounds: -> times[build][op] = [ms, ...]. */
export function timeOps(builds, nops, secs) {
  const times = builds.map(() => Array.from({ length: nops }, () => []));
  const end = performance.now() + Number(secs) * 1000;
  while (performance.now() < end || times[0][0].length < 5)
    for (let i = 0; i < nops; i++)
      builds.forEach((b, j) => { const t = performance.now(); b.op(i); times[j][i].push(performance.now() - t); });
  return times;
}
