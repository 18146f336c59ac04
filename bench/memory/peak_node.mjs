// One plan file's session in a fresh Node process: the process's peak resident size (VmHWM, reset
// by /proc/self/clear_refs first) over create
// (from its path: the PlanReceiver writes the weights straight into kernels.wasm) and the first
// run, from what it was once kernels.wasm had loaded; kernels.wasm's memory before and after; the
// plan's weights and arena bytes (its header). Printed as one JSON line for peak_memory.py.
//   node bench/memory/peak_node.mjs PLAN.nnwp
import { readFileSync, writeFileSync } from "node:fs";
import { env, InferenceSession, Tensor } from "../../web/nnwasm.mjs";
import { loadKernels } from "../../web/plan-session.mjs";
import { typedArrayFor } from "../../web/tensor.mjs";

const path = process.argv[2];
if (process.env.NNWASM_DIST_URL) env.distURL = process.env.NNWASM_DIST_URL;
env.wasm.warmUp = false;
const status = (key) => Number(readFileSync("/proc/self/status", "utf8").match(new RegExp(`^${key}:\\s+(\\d+)`, "m"))[1]) * 1024;
const { exports } = await loadKernels();
const wasm0 = exports.memory.buffer.byteLength;
writeFileSync("/proc/self/clear_refs", "5"); // resets the peak resident size (VmHWM) to the current one
const rss0 = status("VmRSS");
const session = await InferenceSession.create(path);
const feeds = {};
for (const m of session.inputMetadata) {
  const n = m.shape.reduce((a, b) => a * b, 1);
  const Ctor = typedArrayFor(m.type);
  feeds[m.name] = new Tensor(m.type, m.type === "int64" ? new BigInt64Array(n).fill(1n) : new Ctor(n).fill(1), m.shape);
}
await session.run(feeds);
const peak = status("VmHWM");
console.log(JSON.stringify({ path, rssBefore: rss0, peakRss: peak, wasmBefore: wasm0,
                             wasmAfter: exports.memory.buffer.byteLength }));
process.exit(0);
