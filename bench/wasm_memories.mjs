// Every wasm memory made or instantiated in this process from the call on: onMemory(memory) for each
// WebAssembly.Memory constructed and each memory a WebAssembly.instantiate / instantiateStreaming
// result exports, and with { instances: true } each memory a synchronous `new WebAssembly.Instance`
// exports (nnwasm's Pyodide instantiates kernels.wasm so). Peak wasm memory = their sizes at the end
// (a wasm memory never shrinks; onnxruntime-web's module is internal, so this is how its heap is
// found). Used by bench/speed/speed_node.mjs and bench/decoders/decoders_node.mjs.
export function watchWasmMemories(onMemory, { instances = false } = {}) {
  const RealMemory = WebAssembly.Memory;
  WebAssembly.Memory = function Memory(desc) {
    const m = new RealMemory(desc);
    onMemory(m);
    return m;
  };
  WebAssembly.Memory.prototype = RealMemory.prototype;
  const exported = (exports) => {
    for (const e of Object.values(exports ?? {})) if (e instanceof RealMemory) onMemory(e);
  };
  for (const fn of ["instantiate", "instantiateStreaming"]) {
    const real = WebAssembly[fn];
    WebAssembly[fn] = async (...args) => {
      const r = await real.apply(WebAssembly, args);
      exported((r.instance ?? r).exports);
      return r;
    };
  }
  if (instances) {
    const RealInstance = WebAssembly.Instance;
    WebAssembly.Instance = function Instance(module, imports) {
      const r = new RealInstance(module, imports);
      exported(r.exports);
      return r;
    };
    WebAssembly.Instance.prototype = RealInstance.prototype;
  }
}
