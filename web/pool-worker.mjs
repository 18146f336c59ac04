// A helper of the thread pool (threads.mjs): a worker_threads Worker in Node, a module Web Worker
// in pages. It gets kernels-threads.wasm's compiled module, the shared memory, its id w and the top
// of its C stack; instantiates the module on that memory, sets its own __stack_pointer and parks in
// nnw_worker_loop(w) until the pool stops. A trap inside a job is a fault (kernels_c/threads/pool.c):
// the reason goes into the shared `notes`, nnw_pool_fault(w) releases the caller.
const port = typeof WorkerGlobalScope !== "undefined" ? self : (await import("node:worker_threads")).parentPort;

function onMessage(m) {
  let exports;
  try {
    if (m.testFailStart) throw new Error("refused (test)");
    exports = new WebAssembly.Instance(m.module, { env: { memory: m.memory } }).exports;
    if (!(m.top > 0)) throw new Error("no stack for the helper");
    exports.__stack_pointer.value = m.top;
  } catch (e) {
    port.postMessage({ type: "error", message: `${e.name}: ${e.message}` });
    return;
  }
  try {
    exports.nnw_worker_loop(m.w);
  } catch (e) {
    const text = new TextEncoder().encode(`${e.name}: ${e.message}`.slice(0, 200));
    const at = m.w * m.noteBytes;
    new Uint8Array(m.notes, at + 4, Math.min(text.length, m.noteBytes - 4)).set(text.subarray(0, m.noteBytes - 4));
    Atomics.store(new Int32Array(m.notes, at, 1), 0, Math.min(text.length, m.noteBytes - 4));
    exports.nnw_pool_fault(m.w);
  }
  port.postMessage({ type: "returned" });
}

if (typeof WorkerGlobalScope !== "undefined") port.addEventListener("message", (e) => onMessage(e.data), { once: true });
else port.once("message", onMessage);
