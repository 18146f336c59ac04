// Adds Pyodide's bytecode to pure wheels: each .py gets its __pycache__/<name>.cpython-3XY.pyc,
// compiled by the Pyodide of node_modules (the npm pin, so the magic number is the kernel's) as an
// unchecked-hash pyc (used whatever the installed file's mtime). Importing nnwasm in Pyodide then
// skips compiling ~100 modules: 2.2 s -> 0.66 s in Node (docs/notebooks.md). Also used on the
// kernel's start-up wheels from PyPI (IPython, jedi, ...), which Pyodide's own builds ship compiled.
// CPython ignores the files unless its version is the same (then they are what it would write).
// A .py that does not compile for this Python (a vendored Python 2 file) is left without one.
//   node notebook/wheel_pyc.mjs IN.whl OUT.whl [IN.whl OUT.whl ...]
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const pairs = process.argv.slice(2);
if (pairs.length === 0 || pairs.length % 2) throw new Error("usage: wheel_pyc.mjs IN.whl OUT.whl [IN.whl OUT.whl ...]");
const ROOT = fileURLToPath(new URL("..", import.meta.url));
const { loadPyodide } = await import(`${ROOT}node_modules/pyodide/pyodide.mjs`);
const pyodide = await loadPyodide({ indexURL: `${ROOT}node_modules/pyodide/` });
pyodide.runPython(`
import base64, hashlib, importlib.util, io, zipfile
from importlib._bootstrap_external import _code_to_hash_pyc

def record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"

def add_pyc(src, dst):
    with zipfile.ZipFile(src) as zin:
        infos = zin.infolist()
        files = {i.filename: zin.read(i) for i in infos}
    record = next(n for n in files if n.endswith(".dist-info/RECORD"))
    added = {}
    for name, data in files.items():
        if name.endswith(".py") and "/__pycache__/" not in name:
            try:
                code = compile(data, name, "exec", dont_inherit=True)
            except SyntaxError:
                continue
            added[importlib.util.cache_from_source(name)] = bytes(
                _code_to_hash_pyc(code, importlib.util.source_hash(data), checked=False))
    lines = [l for l in files[record].decode().splitlines() if l and not l.startswith(record + ",")]
    lines += [record_line(n, d) for n, d in added.items()] + [f"{record},,"]
    stamp = infos[0].date_time
    with zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in infos:
            if info.filename != record and info.filename not in added:
                zout.writestr(info, files[info.filename])
        for name, data in added.items():
            zout.writestr(zipfile.ZipInfo(name, date_time=stamp), data, zipfile.ZIP_DEFLATED)
        zout.writestr(zipfile.ZipInfo(record, date_time=stamp), "\\n".join(lines) + "\\n", zipfile.ZIP_DEFLATED)
    return len(added)
`);
const addPyc = pyodide.globals.get("add_pyc");
for (let i = 0; i < pairs.length; i += 2) {
  pyodide.FS.writeFile("/tmp/in.whl", new Uint8Array(readFileSync(pairs[i])));
  const n = addPyc("/tmp/in.whl", "/tmp/out.whl");
  writeFileSync(pairs[i + 1], pyodide.FS.readFile("/tmp/out.whl"));
  console.log(`${pairs[i + 1]}: ${n} .pyc added`);
}
