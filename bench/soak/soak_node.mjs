// The Node half of bench/soak/soak.py: RUNS runs of an .onnx with symbolic dims through Pyodide
// (web/pyodide-session.mjs), dims drawn at random (seeded) within MAXDIMS after one run at MAXDIMS;
// every EVERY runs, after a full GC (--expose-gc), one JSON line: {run, rss, heapUsed and external
// (V8's), wasm (kernels.wasm's memory), pyHeap (Pyodide's)}.
//   node --expose-gc bench/soak/soak_node.mjs MODEL.onnx RUNS EVERY MAXDIMS_JSON SEED
import { env, InferenceSession, Tensor } from "../../web/nnwasm.mjs";
import { boot } from "../../web/pyodide-boot.mjs";

const [path, runsArg, everyArg, maxArg, seedArg] = process.argv.slice(2);
if (process.env.NNWASM_DIST_URL) env.distURL = process.env.NNWASM_DIST_URL;
const runs = Number(runsArg), every = Number(everyArg), maxDims = JSON.parse(maxArg);
let seed = Number(seedArg) || 1;
const rand = (n) => ((seed = (seed * 1103515245 + 12345) % 2147483648) % n); // 0..n-1
const { pyodide } = await boot();
const session = await InferenceSession.create(path, { executionProviders: ["wasm"] });
const kernelsBytes = () => pyodide.runPython("from nnwasm.host import get_host; get_host()._memory.buffer.byteLength");

function feeds(dims) {
  const out = {};
  for (const m of session.inputMetadata) {
    const shape = m.shape.map((d) => (typeof d === "number" ? d : dims[d]));
    const n = shape.reduce((a, b) => a * b, 1);
    if (m.type === "int64") {
      const v = new BigInt64Array(n);
      for (let i = 0; i < n; i++) v[i] = /mask/.test(m.name) ? 1n : /type/.test(m.name) ? 0n : BigInt(rand(100));
      out[m.name] = new Tensor("int64", v, shape);
    } else {
      out[m.name] = new Tensor("float32", Float32Array.from({ length: n }, () => rand(1000) / 500 - 1), shape);
    }
  }
  return out;
}

const t0 = performance.now();
for (let r = 1; r <= runs; r++) {
  const dims = {};
  for (const [name, max] of Object.entries(maxDims)) dims[name] = r === 1 ? max : 1 + rand(max);
  await session.run(feeds(dims));
  if (r % every === 0 || r === 1) {
    globalThis.gc?.(); // (soak.py starts Node with --expose-gc: what stays is what is held, not garbage)
    const { rss, heapUsed, external } = process.memoryUsage();
    console.log(JSON.stringify({ run: r, rss, heapUsed, external, wasm: kernelsBytes(),
                                 pyHeap: pyodide._module.HEAPU8.length, seconds: (performance.now() - t0) / 1e3 }));
  }
}
process.exit(0);
