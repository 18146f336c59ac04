// Memory of an .onnx model's session in Node, one process per model (memory never shrinks): the
// kernels.wasm memory (weights + arena), Pyodide's heap and the process's peak RSS after create and
// one run. For one model with its weights inline (bytes through Python: the only way before
// external data) against the same weights as external data (web/external-data.mjs).
//   node bench/memory/extdata_memory.mjs MODEL.onnx CASE.json      (ids [1, n] -> y, tests/extdata_models.py)
import { readFileSync } from "node:fs";
import { env, InferenceSession, Tensor } from "../../web/nnwasm.mjs";
import { boot } from "../../web/pyodide-boot.mjs";
const [path, casePath] = process.argv.slice(2);
if (process.env.NNWASM_DIST_URL) env.distURL = process.env.NNWASM_DIST_URL;
const c = JSON.parse(readFileSync(casePath, "utf8"));
const { pyodide } = await boot();
const rss0 = process.memoryUsage().rss;
const t0 = performance.now();
let result;
try {
  const session = await InferenceSession.create(path, { executionProviders: ["wasm"] });
  const createMs = performance.now() - t0;
  const { y } = await session.run({ ids: new Tensor("int64", BigInt64Array.from(c.ids.map(BigInt)), [1, c.ids.length]) });
  let worst = 0;
  for (let i = 0; i < c.y.length; i++) worst = Math.max(worst, Math.abs(y.data[i] - c.y[i]));
  result = { createMs: Math.round(createMs), maxAbsDiffFromOnnxruntime: worst };
} catch (e) {
  result = { error: `${e.name}: ${e.message}`.slice(0, 200) };
}
const kernels = pyodide.runPython("from nnwasm.host import get_host; get_host()._memory.buffer.byteLength");
console.log(JSON.stringify({ path, weightsMB: c.weights_bytes / 1e6, ...result, kernelsWasmMB: kernels / 1e6,
                             pyodideHeapMB: pyodide._module.HEAPU8.length / 1e6, rssAfterBootMB: rss0 / 1e6,
                             peakRssMB: process.resourceUsage().maxRSS / 1e3 }));
