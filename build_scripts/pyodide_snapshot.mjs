// Makes the memory snapshot web/pyodide-boot.mjs boots from: Pyodide started in Node, the nnwasm
// wheel unpacked, nnwasm's modules imported, then Pyodide's whole linear memory written out.
// Booting from it skips Python's start-up and nnwasm's imports (see docs/startup.md).
//
//   node build_scripts/pyodide_snapshot.mjs PYODIDE_DIR WHEEL OUT
//
// Deterministic: the clocks and the random source Pyodide reads while starting are pinned, so
// the same Pyodide and wheel give the same bytes (build_web.py rewrites files only on change).
// The pinned random state is replaced at boot: pyodide-boot.mjs reseeds Python's `random`,
// and os.urandom reads the page's crypto.getRandomValues on every call.
import { readFileSync, writeFileSync } from "node:fs";
import crypto from "node:crypto";
import { pathToFileURL } from "node:url";
import { WHEEL_PATH } from "../web/pyodide-boot.mjs";

// What a WASM-only session needs, so that creating one imports nothing more (a test in
// tests/node/pyodide-boot.test.mjs checks it); kernels.wasm read (and cached) from the wheel.
const SETUP = [
  "import nnwasm._js_bridge, nnwasm.host.pyodide_host, nnwasm.ops.registry, nnwasm.planfile",
  "nnwasm.ops.registry._load()", // the op modules, which the registry imports at its first lookup
  "nnwasm.host.kernels_wasm_bytes()",
];

const [pyodideDir, wheelPath, outPath] = process.argv.slice(2);
if (!outPath) {
  console.error("usage: node pyodide_snapshot.mjs PYODIDE_DIR WHEEL OUT");
  process.exit(2);
}

let state = 1;
function fill(view) {
  const bytes = new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
  for (let i = 0; i < bytes.length; i++) {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    bytes[i] = state >>> 24;
  }
  return view;
}
crypto.randomFillSync = fill;
let ticks = 0;
performance.now = () => ++ticks;
Date.now = () => 315532800000;
process.hrtime = () => [0, 1];
process.hrtime.bigint = () => 1n;

const dir = pyodideDir.endsWith("/") ? pyodideDir : pyodideDir + "/";
const { loadPyodide } = await import(pathToFileURL(dir + "pyodide.mjs").href);
const pyodide = await loadPyodide({ indexURL: dir, _makeSnapshot: true, stdout: () => {}, stderr: (l) => console.error(l) });
// As web/pyodide-boot.mjs installs it: the wheel itself on sys.path, at WHEEL_PATH.
pyodide.FS.writeFile(WHEEL_PATH, new Uint8Array(readFileSync(wheelPath)));
pyodide.runPython([`import sys`, `sys.path.insert(0, "${WHEEL_PATH}")`, ...SETUP].join("\n"));
writeFileSync(outPath, pyodide.makeMemorySnapshot());
