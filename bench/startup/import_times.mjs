// `python -X importtime` for nnwasm inside Pyodide (Node): Pyodide started from scratch, the
// wheel unpacked, then `import nnwasm._js_bridge` timed module by module (bench/startup/importtime.py).
//   node bench/startup/import_times.mjs [N]    (the N slowest modules by self time; default 25)
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const manifest = JSON.parse(readFileSync(`${ROOT}dist/web/nnwasm-web.json`, "utf8"));
const { loadPyodide } = await import(`${ROOT}dist/web/pyodide/pyodide.mjs`);
const pyodide = await loadPyodide({ indexURL: `${ROOT}dist/web/pyodide/` });
pyodide.unpackArchive(new Uint8Array(readFileSync(`${ROOT}dist/web/${manifest.wheel}`)), "wheel");
pyodide.runPython(readFileSync(`${ROOT}bench/startup/importtime.py`, "utf8"));
const t0 = performance.now();
pyodide.runPython("import nnwasm._js_bridge");
const total = performance.now() - t0;
const rows = JSON.parse(pyodide.runPython("import json; json.dumps(report())"));
console.log(`import nnwasm._js_bridge: ${total.toFixed(0)} ms, ${rows.length} modules; self ms, cumulative ms, module:`);
for (const [name, self, cumulative] of rows.slice(0, Number(process.argv[2] ?? 25))) {
  console.log(`${self.toFixed(1).padStart(7)} ${cumulative.toFixed(1).padStart(8)}  ${name}`);
}
