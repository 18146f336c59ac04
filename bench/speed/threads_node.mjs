// nnwasm on 1 and 2 threads (env.wasm.numThreads, web/threads.mjs) in one Node process, interleaved:
// each configuration lives in a worker_threads Worker of its own (its own realm: its own kernels.wasm,
// pool and helpers), both warm up (>= 30 runs and >= 3 s each), then rounds alternate them, each
// taking the median of a few runs; the ratio 2T/1T is the median over rounds of the per-round ratio.
//
//   node bench/speed/threads_node.mjs MODEL.nnwp [...] [--rounds 10] [--runs 5]
//
// Prints one line per model and a JSON line. The machine may be shared: the load average is printed
// with each model (os.loadavg before and after).
import { loadavg } from "node:os";
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";

if (isMainThread) {
  const args = process.argv.slice(2);
  const opt = (name, dflt) => {
    const i = args.indexOf(name);
    if (i < 0) return dflt;
    const v = Number(args[i + 1]);
    args.splice(i, 2);
    return v;
  };
  const rounds = opt("--rounds", 10), runs = opt("--runs", 5);
  const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
  const results = {};
  for (const file of args) {
    const workers = [1, 2].map((threads) => {
      const w = new Worker(new URL(import.meta.url), { workerData: { file, threads } });
      let waiting = null;
      w.on("message", (m) => waiting?.(m));
      w.on("error", (e) => { console.error(e); process.exit(1); });
      return { threads, ask: (m) => new Promise((resolve) => { waiting = resolve; w.postMessage(m); }), w };
    });
    const load0 = loadavg()[0];
    for (const w of workers) await w.ask({ type: "warm" });
    const t1 = [], t2 = [], ratios = [];
    for (let r = 0; r < rounds; r++) {
      const a = median((await workers[0].ask({ type: "time", runs })).times);
      const b = median((await workers[1].ask({ type: "time", runs })).times);
      t1.push(a), t2.push(b), ratios.push(b / a);
    }
    const threads = (await workers[1].ask({ type: "threads" })).threads;
    const load1 = loadavg()[0];
    for (const w of workers) await w.w.terminate();
    const name = file.split("/").pop().replace(/\.nnwp$/, "");
    results[name] = { ms1: median(t1), ms2: median(t2), ratio: median(ratios), ratioMin: Math.min(...ratios),
                      ratioMax: Math.max(...ratios), threads2: threads, load: [load0, load1] };
    console.log(`${name}: 1T ${median(t1).toFixed(1)} ms, 2T ${median(t2).toFixed(1)} ms (${threads} threads), ` +
                `2T/1T ${median(ratios).toFixed(3)} (rounds ${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)}), ` +
                `load average ${load0.toFixed(2)} -> ${load1.toFixed(2)}`);
  }
  console.log(JSON.stringify({ node: process.version, rounds, runs, results }));
} else {
  const { env, InferenceSession, Tensor } = await import("../../web/nnwasm.mjs");
  const { readFileSync } = await import("node:fs");
  env.wasm.numThreads = workerData.threads;
  env.wasm.relaxedSimd = false; // the same kernels both sides: simd vs simd+threads
  env.wasm.wasmPaths = new URL("../../py_runtime/nnwasm/", import.meta.url).href;
  const session = await InferenceSession.create(new Uint8Array(readFileSync(workerData.file)));
  const ARRAYS = { float32: Float32Array, int64: BigInt64Array, int32: Int32Array };
  const feeds = {};
  for (const m of session.inputMetadata) {
    const n = m.shape.reduce((a, b) => a * b, 1);
    const data = new ARRAYS[m.type](n);
    if (m.type === "float32") for (let i = 0; i < n; i++) data[i] = Math.sin(i * 0.37);
    else data.fill(m.type === "int64" ? 1n : 1);
    feeds[m.name] = new Tensor(m.type, data, m.shape);
  }
  const once = async () => {
    const t0 = performance.now();
    await session.run(feeds);
    return performance.now() - t0;
  };
  parentPort.on("message", async (m) => {
    if (m.type === "warm") {
      const t0 = performance.now();
      for (let i = 0; i < 30 || performance.now() - t0 < 3000; i++) {
        await once();
        if (session.numThreads < workerData.threads) await new Promise((r) => setTimeout(r, 5));
      }
      parentPort.postMessage({});
    } else if (m.type === "time") {
      const times = [];
      for (let i = 0; i < m.runs; i++) times.push(await once());
      parentPort.postMessage({ times });
    } else {
      parentPort.postMessage({ threads: session.numThreads });
    }
  });
}
