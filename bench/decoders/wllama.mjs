// wllama (llama.cpp compiled to WebAssembly, npm @wllama/wllama 3.x) for bench/decoders/bench_decoders.py, in
// Chromium: wllama runs llama.cpp in a Web Worker made from a blob URL (Node has no Web Workers).
// The driver serves @wllama/wllama's esm/ at /wllama/ and the GGUF files at /models/, and calls:
//   await wlLoad(key, "/models/x.gguf", threads) -> {create_ms, threads, multithread}
//   await wlGen(key, promptText, newTokens)       -> {prefill_ms, decode_ms, decode_steps, prompt_n,
//                                                    timings (llama.cpp's own), wasm_bytes}
// The prompt is text: wllama 3.13 fails on a prompt of token ids ("Invalid typed array length" in
// its worker), so the driver sends 127 one-letter words, which the benchmark's vocabulary (every
// "▁x" is a piece) makes 127 tokens + BOS = 128 (checked against llama.cpp's prompt_n).
// Peak wasm memory: every Worker this page starts is wrapped so that a hook runs in it first and
// records the WebAssembly.Memory objects it makes or instantiates; wlMemory asks each worker (over
// a MessageChannel it was given) for their sizes.
import { Wllama } from "/wllama/esm/index.js";

const HOOK = `
const mems = [];
const RealMemory = WebAssembly.Memory;
WebAssembly.Memory = function Memory(d) { const m = new RealMemory(d); mems.push(m); return m; };
WebAssembly.Memory.prototype = RealMemory.prototype;
for (const fn of ["instantiate", "instantiateStreaming"]) {
  const real = WebAssembly[fn];
  WebAssembly[fn] = async (...a) => {
    const r = await real.apply(WebAssembly, a);
    for (const e of Object.values((r.instance ?? r).exports ?? {})) if (e instanceof RealMemory) mems.push(e);
    return r;
  };
}
const realOn = self.addEventListener.bind(self);
self.addEventListener("message", (ev) => {
  if (ev.data && ev.data.__wlMemPort) {
    ev.stopImmediatePropagation();
    ev.data.__wlMemPort.onmessage = () => ev.data.__wlMemPort.postMessage(
      [...new Set(mems)].reduce((s, m) => s + m.buffer.byteLength, 0));
  }
}, true);
`;
const ports = [];
const RealWorker = window.Worker;
window.Worker = function Worker(url, opts) {
  const u = String(url);
  // pthread workers share the main worker's memory: no hook needed there
  if (!u.startsWith("blob:") || opts?.name === "em-pthread") return new RealWorker(url, opts);
  // static imports: the hook module evaluates first, then wllama's, before any message is delivered
  const hook = URL.createObjectURL(new Blob([HOOK], { type: "text/javascript" }));
  const wrapped = opts?.type === "module"
    ? `import ${JSON.stringify(hook)};\nimport ${JSON.stringify(u)};`
    : `${HOOK}\nimportScripts(${JSON.stringify(u)});`;
  const w = new RealWorker(URL.createObjectURL(new Blob([wrapped], { type: "text/javascript" })), opts);
  const ch = new MessageChannel();
  w.postMessage({ __wlMemPort: ch.port2 }, [ch.port2]);
  ports.push(ch.port1);
  return w;
};
window.Worker.prototype = RealWorker.prototype;

const inst = {};
window.wlLoad = async (key, url, threads) => {
  const t = performance.now();
  const blob = await (await fetch(url)).blob();
  const wl = new Wllama({ default: "/wllama/esm/wasm/wllama.wasm" }, { suppressNativeLog: true });
  const before = ports.length;
  await wl.loadModel([blob], { n_threads: threads, n_ctx: 512, n_parallel: 1, n_gpu_layers: 0, n_batch: 512 });
  inst[key] = { wl, ports: ports.slice(before) };
  return { create_ms: performance.now() - t, threads: wl.getNumThreads(), multithread: wl.isMultithread() };
};

async function memOf(key) {
  let total = 0;
  for (const p of inst[key].ports) {
    total += await new Promise((res) => { p.onmessage = (e) => res(e.data); p.postMessage(0); setTimeout(() => res(0), 2000); });
  }
  return total;
}

window.wlGen = async (key, prompt, newTokens) => {
  const { wl } = inst[key];
  const t = performance.now();
  let first = null, n = 0;
  let final = null;
  await wl.createCompletion({
    prompt, max_tokens: newTokens, temperature: 0, top_k: 1, ignore_eos: true, cache_prompt: false,
    stream: true,
    onData: (chunk) => {
      if (first === null && chunk.choices?.[0]?.text !== undefined) first = performance.now();
      n++;
      if (chunk.timings) final = chunk.timings;
    },
  });
  const end = performance.now();
  return {
    prefill_ms: (first ?? end) - t, decode_ms: end - (first ?? end), decode_steps: newTokens - 1,
    prompt_n: final?.prompt_n, predicted_n: final?.predicted_n, tokens: [], chunks: n, timings: final,
    wasm_bytes: await memOf(key),
  };
};
window.wlInst = (k) => inst[k].wl;
window.wlReady = true;
