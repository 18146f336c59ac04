// What the A/B scripts (ab_kernels.mjs, ab_ops.mjs, ab_ops_hosts.mjs) share: one plan file loaded
// on each of several builds of kernels.wasm, each build in its own instance.
import { readFileSync } from "node:fs";
import { parsePlanFile } from "../web/plan-file.mjs";

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
    builds.push({ k, arena, run: () => k.nnw_plan_run(p, arena), op: (i) => k.nnw_plan_run_ops(p, arena, i, 1) });
  }
  return { io, plan, builds };
}
