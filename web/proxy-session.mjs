// ProxySession (env.wasm.proxy): PyodideSession's interface, with Pyodide and the Python sessions
// in one worker per page or process (proxy-worker.mjs), so this thread never waits on a boot or
// a run. The worker starts with the first boot() or create() and speaks proxy-messages.mjs. A
// worker that fails to boot or dies takes its sessions with it: every call in flight rejects,
// and the next create() starts a new worker.
import { env, resolveEnv, resolveKernelsURL } from "./env.mjs";
import { requestedFlavour } from "./flavours.mjs";
import { IN_NODE } from "./load-bytes.mjs";
import { errorFromWire, ownedBytes, transferables } from "./proxy-messages.mjs";
import { Tensor } from "./tensor.mjs";

// "../web/": the same file from web/ and from a bundle one level under the root (demo/app.bundle.mjs).
const WORKER_URL = new URL("../web/proxy-worker.mjs", import.meta.url);

async function spawn() {
  try {
    if (!IN_NODE) return new Worker(WORKER_URL, { type: "module" });
    const { Worker: NodeWorker } = await import("node:worker_threads");
    return new NodeWorker(WORKER_URL);
  } catch (e) {
    throw new Error(`nnwasm: cannot start the proxy worker ${WORKER_URL.href}: ${e.message}`, { cause: e });
  }
}

/** Where a "wasm" tensor of a worker's session is (tensor.mjs's `kept`). */
function keptInWorker(link, key) {
  return {
    key,
    owner: link,
    download: async () => {
      const { data } = await link.request("tensor", { key, action: "download" });
      return data.buffer.byteLength === data.byteLength ? data.buffer : data.slice().buffer;
    },
    dispose: () => {
      if (!link.stopped) link.request("tensor", { key, action: "dispose" }).catch(() => {});
    },
  };
}

/** The one worker and the calls waiting on it. */
class WorkerLink {
  #worker;              // Promise<Worker>
  #live = null;         // the Worker, once started
  #pending = new Map(); // request id -> {resolve, reject}
  #nextId = 1;
  stopped = null;       // once the worker is gone: the Error every later call gets

  #config;
  #t0 = performance.now();
  #booted = null;

  constructor(config) {
    this.#config = config;
    this.#worker = spawn().then((worker) => this.#listen(worker));
  }

  /** Boots Pyodide in the worker, once: not at the worker's start, since plan files never need it. */
  boot() {
    // bootMs here counts the worker's own start-up too: it is what the page waits.
    this.#booted ??= this.request("init", { config: this.#config }).then((out) => ({ ...out, bootMs: performance.now() - this.#t0 }));
    // A failed boot ends this worker, so the next create() tries afresh (say, with a fixed env.distURL).
    this.#booted.catch((e) => this.stop(`its boot failed: ${e.message}`));
    return this.#booted;
  }

  #listen(worker) {
    this.#live = worker;
    const answer = (msg) => this.#answer(msg);
    if (IN_NODE) {
      worker.on("message", answer);
      worker.on("messageerror", (e) => this.stop(`a message could not be read: ${e.message}`));
      worker.on("error", (e) => this.stop(`it threw ${e.name}: ${e.message}`));
      worker.on("exit", (code) => this.stop(`it exited with code ${code}`));
    } else {
      worker.onmessage = (event) => answer(event.data);
      worker.onmessageerror = () => this.stop("a message could not be read");
      worker.onerror = (event) => {
        event.preventDefault(); // reported through the calls it fails, not as an uncaught error
        this.stop(event.message || `${WORKER_URL.href} did not load`);
      };
    }
    return worker;
  }

  /** Posts one request; resolves to its `out`, rejects with its `err` rebuilt as an Error. */
  async request(type, payload) {
    if (this.stopped) throw this.stopped;
    const worker = await this.#worker;
    if (this.stopped) throw this.stopped;
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      worker.ref?.(); // Node: a process waiting on an answer must not exit; see #settle
      try {
        worker.postMessage({ type, id, in: payload }, transferables(type, payload));
      } catch (e) {
        this.#settle(id);
        reject(e);
      }
    });
  }

  #settle(id) {
    const call = this.#pending.get(id);
    this.#pending.delete(id);
    // Node: an idle worker must not keep the process alive (browsers have no unref).
    if (this.#pending.size === 0) this.#live?.unref?.();
    return call;
  }

  #answer(msg) {
    const call = this.#settle(msg?.id);
    if (call === undefined) return;
    if (msg.err !== undefined) call.reject(errorFromWire(msg.err));
    else call.resolve(msg.out);
  }

  /** Ends the worker; calls in flight and later calls on its sessions reject. */
  stop(why) {
    if (this.stopped) return;
    this.stopped = new Error(`nnwasm: the proxy worker stopped (${why}); its sessions are gone, ` +
                             "and the next InferenceSession.create() starts a new worker");
    if (link === this) link = null;
    for (const { reject } of this.#pending.values()) reject(this.stopped);
    this.#pending.clear();
    this.#worker.then((w) => w.terminate(), () => {});
  }
}

let link = null; // the live worker; null before the first create() and after it stopped

function connect() {
  // the worker's Pyodide and plan sessions load the kernels.wasm flavour asked for here (flavours.mjs)
  link ??= new WorkerLink({ ...resolveEnv(), kernelsFlavour: requestedFlavour(env.wasm), numThreads: env.wasm?.numThreads });
  return link;
}

/** Stops the proxy worker, if one runs (its sessions are lost; pending calls reject with `why`
 * in their message). Not public API: for tests, and for a page that wants the memory back. */
export function stopProxyWorker(why = "stopProxyWorker() was called") {
  link?.stop(why);
}

export class ProxySession {
  #link;

  /** Starts the worker and boots Pyodide in it; resolves to {bootMs, versions}. */
  static boot() {
    return connect().boot();
  }

  /** modelBytes: a Uint8Array (copied: the caller keeps it); providers: names or null; settings:
   * session-options.mjs's. */
  static async create(modelBytes, providers, settings = {}) {
    const link = connect();
    const { bootMs } = await link.boot();
    const info = await link.request("create", { model: ownedBytes(modelBytes), providers, settings,
                                                loadNumpy: env.loadNumpy });
    return new ProxySession(link, info, bootMs);
  }

  /** A .nnwp plan file's session in the worker (plan-session.mjs there); Pyodide is not booted. */
  static async createPlan(fileBytes, options = {}) {
    const link = connect();
    // Resolved here: the worker's own location is not the page's.
    const info = await link.request("plan", { model: ownedBytes(fileBytes), kernelsURLs: resolveKernelsURL(),
                                              kernelsFlavour: requestedFlavour(env.wasm),
                                              numThreads: env.wasm?.numThreads,
                                              enableProfiling: Boolean(options.enableProfiling),
                                              memoryLimitBytes: options.memoryLimitBytes ?? null });
    return new ProxySession(link, info, info.bootMs);
  }

  constructor(link, info, bootMs) {
    this.#link = link;
    this.handle = info.handle;
    this.inputMetadata = info.inputMetadata;
    this.outputMetadata = info.outputMetadata;
    this.providers = info.providers;
    this.providerAssignment = info.providerAssignment;
    this.kernelsFlavour = info.kernelsFlavour;
    this.numThreads = info.numThreads ?? 1; // the worker's pool (threads.mjs), as of the last reply
    this.timings = { bootMs, createMs: info.createMs };
  }

  /** feeds: [name, tensor] pairs; outputNames: names or null for all. Resolves to {name: Tensor}. */
  async run(feeds, outputNames) {
    const link = this.#link;
    const wire = [];
    for (const [name, t] of feeds) {
      if (t.location === "none") throw new TypeError(`input '${name}': the tensor was disposed`);
      const kept = Tensor._keptOf(t); // a "wasm" tensor the worker keeps goes by its key
      if (kept?.owner === link) wire.push([name, t.type, [...t.dims], null, kept.key]);
      else wire.push([name, t.type, [...t.dims], kept ? new Uint8Array(await kept.download()) : ownedBytes(t.data), 0]);
    }
    const { outputs, numThreads } = await link.request("run", { handle: this.handle, feeds: wire, outputNames, loadNumpy: env.loadNumpy });
    this.numThreads = numThreads ?? 1;
    return Object.fromEntries(outputs.map(([name, type, dims, data, key]) =>
      [name, key ? Tensor._kept(type, dims, keptInWorker(link, key)) : new Tensor(type, data, dims)]));
  }

  async startProfiling() {
    await this.#link.request("profile", { handle: this.handle, action: "start" });
  }

  async endProfiling() {
    return (await this.#link.request("profile", { handle: this.handle, action: "end" })).events;
  }

  /** Frees the worker's session; nothing to free if its worker is gone. */
  async release() {
    try {
      await this.#link.request("release", { handle: this.handle });
    } catch (e) {
      if (e !== this.#link.stopped) throw e;
    }
  }
}
