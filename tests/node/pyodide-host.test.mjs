// nnwasm/host/pyodide_host.py inside Pyodide: kernels.wasm loaded through the JS WebAssembly
// API, copies in and out, memory growth (which detaches old views), and clear errors.
import assert from "node:assert/strict";
import { before, test } from "node:test";
import { boot } from "../../web/nnwasm.mjs";
import "./fixtures.mjs"; // honours NNWASM_DIST_URL

let py;

before(async () => {
  py = (await boot()).pyodide;
  py.runPython(`
from nnwasm.host import get_host
from nnwasm.errors import KernelError
host = get_host()
  `);
});

test("the host is the Pyodide one, and kernels.wasm is initialised", () => {
  assert.equal(py.runPython("type(host).__name__"), "PyodideHost");
  assert.ok(py.runPython("host.wasm_bytes_len") > 1000);
});

test("bytes round-trip through linear memory, across memory growth", () => {
  const result = py.runPython(`
import array
data = bytes(range(256)) * 64
p = host.call("nnw_malloc", len(data))
host.write(p, data)
before = host.read(p, len(data)) == data
big = host.call("nnw_malloc", 96 << 20)          # grows memory: old JS views are detached
floats = array.array("f", [1.5, -2.0, 3.25])
host.write(big, floats)                          # a non-byte buffer is written as its bytes
after = host.read(p, len(data)) == data and host.read(big, 12) == floats.tobytes()
host.call("nnw_free", big)
host.call("nnw_free", p)
[before, after, big > 0]
  `).toJs();
  assert.deepEqual(result, [true, true, true]);
});

test("out-of-range copies and unknown exports raise KernelError", () => {
  const messages = py.runPython(`
msgs = []
for f in (lambda: host.read(1 << 31, 16), lambda: host.write(-4, b"abcd"), lambda: host.call("no_such_export")):
    try:
        f()
        msgs.append("no error")
    except KernelError as e:
        msgs.append(str(e))
msgs
  `).toJs();
  assert.match(messages[0], /outside kernels\.wasm memory/);
  assert.match(messages[1], /outside kernels\.wasm memory/);
  assert.match(messages[2], /no exported function 'no_such_export'/);
});

test("a plan with a bad magic number is refused, not run", () => {
  const status = py.runPython(`
plan = bytes(64)
p = host.call("nnw_malloc", len(plan))
host.write(p, plan)
arena = host.call("nnw_malloc", 64)
status = host.call("nnw_plan_load", p, len(plan), arena, 64, 0)
host.call("nnw_free", arena)
host.call("nnw_free", p)
status
  `);
  assert.equal(status, 1); // NNW_BAD_MAGIC in kernels_c/nnw.h
});
