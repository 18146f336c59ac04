// `import nnwasm` in Pyodide (Node) from a wheel: what it costs and what it loads. Prints one JSON
// line: import ms, modules compiled from source during the import, the stdlib/third-party modules
// the import added, and whether numpy got loaded. tests/test_pyodide_import.py runs it.
//   node tests/node/import-cost.mjs PYODIDE_DIR WHEEL
import { readFileSync } from "node:fs";

const [pyodideDir, wheel] = process.argv.slice(2);
const { loadPyodide } = await import(`${pyodideDir}/pyodide.mjs`);
const pyodide = await loadPyodide({ indexURL: `${pyodideDir}/` });
pyodide.unpackArchive(new Uint8Array(readFileSync(wheel)), "wheel");
pyodide.runPython(`
import sys, importlib._bootstrap_external as ext
compiled = []
_source_to_code = ext.SourceLoader.source_to_code
def source_to_code(self, data, path, *args, **kwargs):
    compiled.append(path)
    return _source_to_code(self, data, path, *args, **kwargs)
ext.SourceLoader.source_to_code = source_to_code
before = set(sys.modules)
`);
const t0 = performance.now();
pyodide.runPython("import nnwasm");
const ms = performance.now() - t0;
console.log(JSON.stringify({ms, ...JSON.parse(pyodide.runPython(`
import json
added = sorted(m for m in set(sys.modules) - before if not m.startswith("nnwasm"))
json.dumps({"compiled": [p for p in compiled if "/nnwasm/" in p], "added": added,
            "nnwasm_modules": len([m for m in sys.modules if m.startswith("nnwasm")]),
            "numpy": "numpy" in sys.modules})
`))}));
