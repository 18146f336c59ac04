// Per-op A/B of builds of kernels.wasm on one plan file in V8: every op run alone
// (nnw_plan_run_ops), the builds interleaved op by op, medians summed by class. For kernel changes
// whose effect is a few % of a run: per-op medians drift less than whole runs on a shared machine.
//   node bench/ab/ab_ops.mjs PLAN SECONDS A.wasm B.wasm ... [--input FILE] [--ops]
// Classes: the op's kernel; q8_conv2d and conv2d split into dw (group > 1) / pw (1x1) / other,
// each "_big" above 14x14 outputs. --input: raw bytes of the plan's first input (default: the
// arena as loaded). --ops: also every op's median per build.
import { readFileSync } from "node:fs";
import { loadPlanOnBuilds, timeOps, warmUp } from "./plan_builds.mjs";

const args = process.argv.slice(2);
const flag = (name) => { const i = args.indexOf(name); return i < 0 ? null : args.splice(i, name === "--ops" ? 1 : 2)[1] ?? true; };
const input = flag("--input"), showOps = flag("--ops");
const [planPath, secs, ...wasms] = args;
const { io, plan, builds } = await loadPlanOnBuilds(planPath, wasms);
const words = new Int32Array(plan.buffer, plan.byteOffset, plan.length >> 2);
// conv2d / q8_conv2d argument indices (ops.def): oh, kh, group
const CONV = { conv2d: { oh: 10, kh: 12, group: 20 }, q8_conv2d: { oh: 16, kh: 18, group: 26 } };
const classes = [];
for (let i = 0, at = 8 + words[5]; i < io.ops.length; i++) {
  const n = words[at + 1], a = words.subarray(at + 2, at + 2 + n), k = io.ops[i].kernel, c = CONV[k];
  at += 2 + n;
  classes.push(!c ? k : `${k}:${a[c.group] > 1 ? "dw" : a[c.kh] === 1 ? "pw" : "other"}${a[c.oh] > 14 ? "_big" : ""}`);
}
if (input) {
  const bytes = readFileSync(input);
  for (const { k, arena } of builds) new Uint8Array(k.memory.buffer, arena + io.inputs[0].offset, io.inputs[0].nbytes).set(bytes);
}
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
warmUp(builds.map((b) => b.run));
const times = timeOps(builds, io.ops.length, secs);
const names = ["total", ...new Set(classes)];
console.log("build".padEnd(20) + names.map((n) => n.padStart(16)).join(""));
times.forEach((ops, j) => {
  const sums = { total: 0 };
  ops.forEach((t, i) => { const m = median(t); sums[classes[i]] = (sums[classes[i]] || 0) + m; sums.total += m; });
  console.log(wasms[j].split("/").pop().padEnd(20) + names.map((n) => sums[n].toFixed(3).padStart(16)).join(""));
});
if (showOps) io.ops.forEach((op, i) => console.log(i, classes[i], times.map((t) => median(t[i]).toFixed(3)).join(" "), op.node));
