// The worker of env.wasm.proxy: Pyodide and the Python sessions live here, booted and driven by
// the same pyodide-boot.mjs and pyodide-session.mjs as in non-proxy mode, so the calling thread
// only posts messages (proxy-messages.mjs). A module Web Worker in browsers, a worker_threads
// Worker in Node; proxy-session.mjs starts it.
import { env } from "./env.mjs";
import { boot } from "./pyodide-boot.mjs";
import { PlanSession } from "./plan-session.mjs";
import { PyodideSession } from "./pyodide-session.mjs";
import { errorToWire, REQUEST_TYPES, transferables } from "./proxy-messages.mjs";

// A browser worker's scope, or Node's parentPort (only Node gets to the await).
const port = typeof WorkerGlobalScope !== "undefined" ? self : (await import("node:worker_threads")).parentPort;

const sessions = new Map(); // handle -> PyodideSession, or PlanSession under "plan:<n>"
let plans = 0;
const kept = new Map(); // key -> a "wasm" Tensor of a session here, which the calling thread holds by key
let keys = 0;

function keptTensor(key) {
  const t = kept.get(key);
  if (t === undefined) throw new Error("nnwasm proxy worker: this tensor's data was disposed");
  return t;
}

function sessionFor(handle) {
  const session = sessions.get(handle);
  if (session === undefined) throw new Error(`nnwasm proxy worker: no session with handle ${handle}`);
  return session;
}

const HANDLERS = {
  async init({ config }) {
    // Already absolute (resolved against the page, not this worker's URL): boot() reads them here.
    env.distURL = config.distURL;
    env.pyodideIndexURL = config.pyodideIndexURL;
    env.wheelURL = config.wheelURL;
    env.debug = config.debug;
    env.pyodideSnapshot = config.pyodideSnapshot;
    env.bootTimeoutMs = config.bootTimeoutMs;
    env.wasm.relaxedSimd = { auto: undefined, simd: false, relaxed: true }[config.kernelsFlavour];
    env.wasm.numThreads = config.numThreads; // the page's: the pool runs here, under the Python sessions
    const { bootMs, versions } = await boot();
    return { bootMs, versions };
  },

  async create({ model, providers, settings, loadNumpy }) {
    env.loadNumpy = loadNumpy;
    const session = await PyodideSession.create(model, providers, settings);
    sessions.set(session.handle, session);
    const { handle, inputMetadata, outputMetadata, providerAssignment, kernelsFlavour } = session;
    return { handle, inputMetadata, outputMetadata, providers: session.providers, providerAssignment, kernelsFlavour,
             createMs: session.timings.createMs };
  },

  async plan({ model, kernelsURLs, enableProfiling, kernelsFlavour: asked, numThreads, memoryLimitBytes }) {
    env.wasm.relaxedSimd = { auto: undefined, simd: false, relaxed: true }[asked];
    env.wasm.numThreads = numThreads; // the page's setting: threads run here (threads.mjs), where waiting is allowed
    const session = await PlanSession.create(model, kernelsURLs, { enableProfiling, memoryLimitBytes });
    const handle = `plan:${++plans}`;
    sessions.set(handle, session);
    const { inputMetadata, outputMetadata, providerAssignment, kernelsFlavour } = session;
    return { handle, inputMetadata, outputMetadata, providers: session.providers, providerAssignment, kernelsFlavour,
             numThreads: session.numThreads, createMs: session.timings.createMs, bootMs: session.timings.bootMs };
  },

  async run({ handle, feeds, outputNames, loadNumpy }) {
    env.loadNumpy = loadNumpy;
    // Both sessions read a feed's type, dims and data only; data arrives as its bytes, or as the
    // key of a tensor kept here.
    const tensors = feeds.map(([name, type, dims, data, key]) => [name, key ? keptTensor(key) : { type, dims, data }]);
    const session = sessionFor(handle);
    const out = await session.run(tensors, outputNames);
    return {
      outputs: Object.entries(out).map(([name, t]) => {
        if (t.location !== "wasm") return [name, t.type, [...t.dims], t.data, 0];
        kept.set(++keys, t);
        return [name, t.type, [...t.dims], null, keys];
      }),
      numThreads: session.numThreads ?? 1,
    };
  },

  // a kept tensor's data, downloaded ({data}), or freed
  async tensor({ key, action }) {
    const t = keptTensor(key);
    kept.delete(key);
    if (action === "download") {
      const data = await t.getData(true);
      return { data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength) };
    }
    t.dispose();
    return {};
  },

  profile({ handle, action }) {
    const session = sessionFor(handle);
    if (action === "end") return { events: session.endProfiling() };
    session.startProfiling();
    return {};
  },

  release({ handle }) {
    sessionFor(handle).release();
    sessions.delete(handle);
    return {};
  },
};

async function answer(request) {
  const { type, id } = request;
  try {
    if (!REQUEST_TYPES.includes(type)) throw new Error(`nnwasm proxy worker: unknown request type ${JSON.stringify(type)}`);
    const out = await HANDLERS[type](request.in);
    // Outputs are fresh buffers nothing here keeps: handed over, not copied.
    port.postMessage({ type, id, out }, transferables(type, out));
  } catch (e) {
    port.postMessage({ type, id, err: errorToWire(e) });
  }
}

if (typeof port.on === "function") port.on("message", answer);
else port.addEventListener("message", (event) => answer(event.data));
