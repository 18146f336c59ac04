// Adds Pyodide's bytecode to a pure wheel: each .py gets its __pycache__/<name>.cpython-3XY.pyc,
// compiled by the Pyodide of node_modules (the npm pin, so the magic number is the kernel's) as an
// unchecked-hash pyc (used whatever the installed file's mtime). Importing nnwasm in Pyodide then
// skips compiling ~100 modules: 1.9 s -> 0.23 s in Node (docs/notebooks.md). CPython ignores the
// files unless its version is the same (then they are the same bytecode it would write).
//   node notebook/wheel_pyc.mjs IN.whl OUT.whl
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const [input, output] = process.argv.slice(2);
const ROOT = fileURLToPath(new URL("..", import.meta.url));
const { loadPyodide } = await import(`${ROOT}node_modules/pyodide/pyodide.mjs`);
const pyodide = await loadPyodide({ indexURL: `${ROOT}node_modules/pyodide/` });
pyodide.FS.writeFile("/tmp/in.whl", new Uint8Array(readFileSync(input)));
pyodide.runPython(`
import base64, hashlib, importlib.util, io, marshal, zipfile
from importlib._bootstrap_external import _code_to_hash_pyc

def record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"

with zipfile.ZipFile("/tmp/in.whl") as zin:
    infos = zin.infolist()
    files = {i.filename: zin.read(i) for i in infos}
record = next(n for n in files if n.endswith(".dist-info/RECORD"))
added = {}
for name, data in files.items():
    if name.endswith(".py") and "/__pycache__/" not in name:
        code = compile(data, name, "exec", dont_inherit=True)
        pyc_name = importlib.util.cache_from_source(name)
        added[pyc_name] = bytes(_code_to_hash_pyc(code, importlib.util.source_hash(data), checked=False))
lines = [l for l in files[record].decode().splitlines() if l and not l.startswith(record + ",")]
lines += [record_line(n, d) for n, d in added.items()] + [f"{record},,"]
out = io.BytesIO()
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zout:
    for info in infos:
        if info.filename != record:
            zout.writestr(info, files[info.filename])
    for name, data in added.items():
        zout.writestr(zipfile.ZipInfo(name, date_time=infos[0].date_time), data, zipfile.ZIP_DEFLATED)
    zout.writestr(zipfile.ZipInfo(record, date_time=infos[0].date_time), "\\n".join(lines) + "\\n", zipfile.ZIP_DEFLATED)
open("/tmp/out.whl", "wb").write(out.getvalue())
print(f"{len(added)} .pyc added")
`);
writeFileSync(output, pyodide.FS.readFile("/tmp/out.whl"));
