// Issue 18, items 3-4 in Node (run by tests/test_memory_bounds.py and tests/test_concurrency.py,
// not by `node --test tests/node/`): NNWASM_BOUNDS_DIR holds outer.onnx (x [N] -> a sum over
// [N, N] values, tests/test_memory_bounds.py's _outer_model) and outer-<n>.nnwp (its plan for N = n).
//   node tests/node/bounds.mjs concurrency   concurrent run() calls on one session (a plan file,
//                                            and the .onnx through Pyodide with symbolic dims, and
//                                            the proxy worker) give each its own answer; release()
//                                            while runs are pending waits for them
//   node tests/node/bounds.mjs limit         memoryLimitBytes / extra.session.memory_limit_bytes
//   node --wasm-max-mem-pages=1024 tests/node/bounds.mjs grow
//                                            a memory.grow that fails (64 MiB here) is a clear
//                                            WasmOutOfMemory; the other sessions and later ones work
//   node --wasm-max-mem-pages=4096 tests/node/bounds.mjs growOnnx   the same through Pyodide
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { env, InferenceSession, Tensor } from "../../web/nnwasm.mjs";

const dir = process.env.NNWASM_BOUNDS_DIR;
if (process.env.NNWASM_DIST_URL) env.distURL = process.env.NNWASM_DIST_URL;
const file = (name) => readFileSync(join(dir, name));
const LAYERS = 3;

// the numpy reference of _outer_model, in float64
function expected(x, layers = LAYERS) {
  let sum = 0;
  for (const a of x) {
    for (const b of x) {
      const m0 = a * b;
      let m = m0;
      for (let k = 1; k <= layers; k++) m = k % 2 ? m + m0 : m * m0;
      sum += m;
    }
  }
  return sum;
}

let seed = 12345;
const random = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648) * 2 - 1;
const feed = (n) => Float32Array.from({ length: n }, random);

async function check(session, x, label) {
  const { z } = await session.run({ x: new Tensor("float32", x, [x.length]) });
  const want = expected(x);
  assert.ok(Math.abs(z.data[0] - want) <= 1e-3 * Math.max(Math.abs(want), x.length), `${label}: ${z.data[0]} != ${want}`);
  return z.data[0];
}

async function concurrentRuns(session, sizes, label) {
  const xs = sizes.map(feed);
  await Promise.all(xs.map((x, i) => check(session, x, `${label} run ${i} (n = ${x.length})`)));
}

async function releaseWaits(session, sizes, label) {
  const runs = sizes.map((n, i) => check(session, feed(n), `${label} run ${i} queued before release()`));
  const released = session.release(); // asked while the runs are pending: they finish first
  await Promise.all(runs);
  await released;
  await assert.rejects(session.run({ x: new Tensor("float32", feed(sizes[0]), [sizes[0]]) }), /released/);
}

async function concurrency() {
  const plan = await InferenceSession.create(file("outer-64.nnwp"));
  await concurrentRuns(plan, Array(16).fill(64), "plan");
  await releaseWaits(await InferenceSession.create(file("outer-64.nnwp")), Array(6).fill(64), "plan");
  // eight plan sessions at once, run concurrently
  const eight = await Promise.all(Array.from({ length: 8 }, () => InferenceSession.create(file("outer-64.nnwp"))));
  await Promise.all(eight.map((s, i) => concurrentRuns(s, [64, 64, 64], `plan session ${i}`)));
  await Promise.all(eight.map((s) => s.release()));
  await plan.release();

  const sizes = Array.from({ length: 12 }, (_, i) => 20 + 13 * i);
  const onnx = await InferenceSession.create(file("outer.onnx"));
  await concurrentRuns(onnx, sizes, "onnx");
  await releaseWaits(onnx, sizes.slice(0, 5), "onnx");
  console.log("concurrency: ok (plan file, 8 plan sessions, .onnx through Pyodide with symbolic dims)");
}

async function rejectsWith(promise, name, pattern) {
  await assert.rejects(promise, (e) => {
    assert.equal(e.name, name, e.message);
    assert.match(e.message, pattern);
    return true;
  });
}

async function limit() {
  env.wasm.proxy = true; // a plan file in the proxy worker first (Pyodide's side is not fixed yet)
  await rejectsWith(InferenceSession.create(file("outer-200.nnwp"), { memoryLimitBytes: 100000 }),
    "MemoryLimitExceeded", /need \d+ bytes .*memory limit of 100000 bytes/);
  const proxied = await InferenceSession.create(file("outer-200.nnwp"), { memoryLimitBytes: 4 << 20 });
  await check(proxied, feed(200), "a plan in the proxy worker under its limit");
  await rejectsWith(proxied.run({ x: new Tensor("float32", new Float32Array(2_000_000), [2_000_000]) }),
    "MemoryLimitExceeded", /refused before any copy/);
  await proxied.release();
  env.wasm.proxy = false;
  await rejectsWith(InferenceSession.create(file("outer-200.nnwp"), { memoryLimitBytes: 100000 }),
    "MemoryLimitExceeded", /need \d+ bytes .*memory limit of 100000 bytes/);
  await rejectsWith(InferenceSession.create(file("outer-200.nnwp"), { extra: { session: { memory_limit_bytes: "100000" } } }),
    "MemoryLimitExceeded", /memory limit of 100000 bytes/);
  await assert.rejects(InferenceSession.create(file("outer-200.nnwp"), { memoryLimitBytes: -3 }), TypeError);
  const plan = await InferenceSession.create(file("outer-200.nnwp"), { memoryLimitBytes: 4 << 20 });
  await check(plan, feed(200), "plan under its limit");

  const limitBytes = 4 << 20;
  const onnx = await InferenceSession.create(file("outer.onnx"), { memoryLimitBytes: limitBytes });
  for (const n of [64, 100]) await check(onnx, feed(n), `onnx n = ${n}`);
  await rejectsWith(onnx.run({ x: new Tensor("float32", feed(600), [600]) }), "MemoryLimitExceeded",
    new RegExp(`needs \\d+ bytes .*memory limit of ${limitBytes} bytes`));
  for (const n of [90, 120, 64]) await check(onnx, feed(n), `onnx n = ${n} after the refusal`);
  await rejectsWith(onnx.run({ x: new Tensor("float32", new Float32Array(2_000_000), [2_000_000]) }),
    "MemoryLimitExceeded", /the feeds hold 8000000 bytes .*refused before any copy/);
  await check(onnx, feed(50), "onnx after a refused feed");
  console.log("limit: ok (plan file here and in the proxy worker, extra form, .onnx with symbolic dims, feeds)");
}

async function grow() {
  const small = await InferenceSession.create(file("outer-64.nnwp"));
  await check(small, feed(64), "a small plan");
  await rejectsWith(InferenceSession.create(file("outer-2500.nnwp")), "WasmOutOfMemory",
    /out of memory allocating \d+ bytes \(its linear memory could not grow/);
  await check(small, feed(64), "the small plan after the failed grow");
  const again = await InferenceSession.create(file("outer-200.nnwp"));
  await check(again, feed(200), "a new plan after the failed grow");
  console.log("grow: ok");
}

// The .onnx through Pyodide (--wasm-max-mem-pages=4096: 256 MiB, Pyodide's heap included): a run
// whose dims need a ~400 MB arena fails to grow kernels.wasm's memory; smaller dims run on.
async function growOnnx() {
  const onnx = await InferenceSession.create(file("outer.onnx"));
  for (const n of [100, 150]) await check(onnx, feed(n), `onnx n = ${n}`);
  await rejectsWith(onnx.run({ x: new Tensor("float32", feed(5000), [5000]) }), "WasmOutOfMemory",
    /out of memory allocating \d+ bytes \(its linear memory could not grow/);
  for (const n of [120, 100]) await check(onnx, feed(n), `onnx n = ${n} after the failed grow`);
  console.log("growOnnx: ok");
}

const what = process.argv[2];
await ({ concurrency, limit, grow, growOnnx })[what]();
process.exit(0); // Pyodide's timers would keep Node alive
