// Faults and cycles of the JS thread pool (web/threads.mjs), for tests/test_threads_js.py; one mode
// per process (a fault leaves the realm on one thread for good): argv[2] the folder of
// kernels*.wasm, argv[3] the mode: "trap" (helper 1 traps in a job), "failstart" (helper 1 refuses
// to start), "noshare" (a WebAssembly.Memory that can't be shared), "cycles" (100 create/run/release
// with 2 threads), "idle" (a session left idle past the helpers' start timeout, then run). Prints one
// JSON line.
import { env, InferenceSession, Tensor } from "../../web/nnwasm.mjs";
import { loadKernels } from "../../web/plan-session.mjs";
import { poolStats, ThreadPool } from "../../web/threads.mjs";
import { execFileSync } from "node:child_process";

const [kernels, mode] = process.argv.slice(2);
if (mode === "noshare") {
  const Memory = WebAssembly.Memory;
  WebAssembly.Memory = function (desc) {
    if (desc?.shared) throw new RangeError("no shared memory (test)");
    return new Memory(desc);
  };
}
// "idle": the start timeout is for helpers that never come; ready ones waiting for a run are not that
if (mode === "idle") ThreadPool.startTimeoutMs = 300; // before loadKernels() starts the pool
env.wasm.numThreads = 2;
env.wasm.relaxedSimd = false;
env.wasm.wasmPaths = kernels.endsWith("/") ? kernels : kernels + "/";
const warnings = [];
const warn = console.warn;
console.warn = (...a) => { warnings.push(a.join(" ")); warn(...a); };

// a MatMul chain (tests/test_threads.py's matmul_model) as a plan file, compiled by CPython
const plan = execFileSync(".venv/bin/python", ["-c", `
import sys; sys.path[:0] = ["py_runtime", "tests"]
import nnwasm
from test_threads import matmul_model
sys.stdout.buffer.write(nnwasm.compile_plan(matmul_model(), {"x": (1, 96, 512)}))`], { maxBuffer: 1 << 26 });
const x = new Float32Array(96 * 512).map((_, i) => Math.sin(i));
const feeds = { x: new Tensor("float32", x, [1, 96, 512]) };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const bytes = (t) => Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength);

async function readySession() {
  const s = await InferenceSession.create(new Uint8Array(plan));
  await s.run(feeds);
  for (let i = 0; i < 400 && s.numThreads < 2; i++) {
    await sleep(10);
    await s.run(feeds);
  }
  return s;
}

const out = {};
const k = (await loadKernels()).exports;
if (mode === "trap") {
  const s = await readySession();
  const want = bytes((await s.run(feeds)).y);
  k.nnw_pool_test_trap(1);
  let error = null;
  for (let i = 0; i < 20 && error === null; i++) {
    try {
      await s.run(feeds);
    } catch (e) {
      error = e.message;
    }
  }
  k.nnw_pool_test_trap(-1);
  const same = Buffer.compare(bytes((await s.run(feeds)).y), want) === 0;
  await sleep(300);
  out.helperTrap = { error, after: { threads: s.numThreads, same, workers: poolStats.liveWorkers } };
  await s.release();
} else if (mode === "noshare") {
  const s = await InferenceSession.create(new Uint8Array(plan));
  await s.run(feeds);
  await sleep(300);
  out.noShare = { threads: s.numThreads, flavour: s.kernelsFlavour, workers: poolStats.liveWorkers,
                  warnings: warnings.filter((w) => w.includes("thread")) };
  await s.release();
} else if (mode === "failstart") {
  ThreadPool.testFailStart.add(1);
  const s = await InferenceSession.create(new Uint8Array(plan));
  const first = bytes((await s.run(feeds)).y);
  await sleep(1500);
  const again = bytes((await s.run(feeds)).y);
  out.failStart = { threads: s.numThreads, same: Buffer.compare(first, again) === 0, workers: poolStats.liveWorkers,
                    warnings: warnings.filter((w) => w.includes("thread")) };
  await s.release();
} else if (mode === "idle") {
  const s = await InferenceSession.create(new Uint8Array(plan));
  const first = bytes((await s.run(feeds)).y);
  await sleep(1500);
  const again = bytes((await s.run(feeds)).y);
  out.idle = { threads: s.numThreads, same: Buffer.compare(first, again) === 0, warnings: warnings.filter((w) => w.includes("thread")) };
  await s.release();
} else {
  let ran2 = 0;
  const rssMB = [], wasmBytes = [];
  for (let i = 0; i < 100; i++) {
    const s = await readySession();
    ran2 += s.numThreads === 2;
    await s.release();
    if (i % 10 === 9) {
      globalThis.gc?.();
      rssMB.push(Math.round(process.memoryUsage().rss / 2 ** 20));
      wasmBytes.push(k.memory.buffer.byteLength);
    }
  }
  await (await loadKernels()).pool.settled();
  await sleep(200);
  out.cycles = { ran2, workersAfter: poolStats.liveWorkers, rssMB, wasmBytes };
}
console.log(JSON.stringify(out));
