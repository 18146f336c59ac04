// Runs a Python script inside Pyodide (nnwasm installed by boot(), no numpy), for tests that run
// the same script in CPython and in Pyodide (tests/test_no_numpy.py):
//   node run-python.mjs DIST_URL DIR SCRIPT [ARGS...]
// DIR (a host folder) is mounted at the same path in Pyodide's file system; sys.argv is
// [SCRIPT, ...ARGS]; the script's stdout goes to this process's stdout.
import { readFileSync } from "node:fs";
import { env } from "../../web/nnwasm.mjs";
import { boot } from "../../web/pyodide-boot.mjs";

const [distURL, dir, script, ...args] = process.argv.slice(2);
env.distURL = distURL;
const { pyodide } = await boot();
pyodide.FS.mkdirTree(dir);
pyodide.FS.mount(pyodide.FS.filesystems.NODEFS, { root: dir }, dir);
pyodide.setStdout({ batched: (line) => console.log(line) });
pyodide.globals.set("_argv", pyodide.toPy([script, ...args]));
pyodide.runPython("import sys; sys.argv = list(_argv); del _argv");
pyodide.runPython(readFileSync(script, "utf8"), { filename: script });
