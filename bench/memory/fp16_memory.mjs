// The wasm memory (memory.buffer.byteLength: the plan's weights and arena, all kernels.wasm holds)
// of a BERT-style plan file's session in Node after create and one run, and that run's time; run
// one process per plan (memory never shrinks). For float16 against float32 plans of one model.
//   node bench/memory/fp16_memory.mjs PLAN.nnwp SEQ     (inputs input_ids, attention_mask, token_type_ids [1, SEQ])
import { readFileSync } from "node:fs";
import { PlanSession, loadKernels } from "../../web/plan-session.mjs";
import { Tensor } from "../../web/tensor.mjs";
const [path, seq] = process.argv.slice(2);
const urls = [new URL("../../py_runtime/nnwasm/kernels.wasm", import.meta.url)];
const s = await PlanSession.create(new Uint8Array(readFileSync(path)), urls);
const { exports } = await loadKernels(urls);
const n = Number(seq);
const ids = new BigInt64Array(n).fill(1n);
const feeds = {};
for (const name of ["input_ids", "attention_mask", "token_type_ids"]) feeds[name] = new Tensor("int64", name === "token_type_ids" ? new BigInt64Array(n) : ids, [1, n]);
const t = performance.now();
await s.run(Object.entries(feeds), null);
console.log(JSON.stringify({ path, memoryMB: exports.memory.buffer.byteLength / 1e6, firstRunMs: performance.now() - t }));
