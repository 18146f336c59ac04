// The thread pool of kernels-threads.wasm for the JS hosts (issue 16; docs/architecture.md, "The
// thread pool"): the realm's instance runs on a shared WebAssembly.Memory and n - 1 helpers, each a
// Worker (worker_threads in Node, a module Web Worker in pages: pool-worker.mjs) with its own
// instance of the same module on the same memory, parked in nnw_worker_loop (kernels_c/threads/
// pool.c) between jobs.
//
// How many threads: env.wasm.numThreads, onnxruntime-web's rule: a positive integer is taken as
// given; 0 / unset / anything else means 1 in a page that is not cross-origin isolated, else
// min(4, ceil(logical cores / 2)). onnxruntime-web ignores SessionOptions.intraOpNumThreads: so do
// we. Where threads can't run (no SharedArrayBuffer: a page without COOP/COEP; no wasm threads; a
// shared memory that can't be made) a numThreads > 1 runs one thread with one console warning.
//
// Helpers start off the critical path: create() never waits for them. The pool is enabled at the
// start of the first run after every helper reached nnw_worker_loop, so the first runs may go on
// one thread. A caller that may not block (a page's main thread, where memory.atomic.wait32 traps)
// spins while the helpers finish a job (nnw_pool_caller_spins), as Emscripten's pthreads do for
// onnxruntime-web on a main thread. The pool lives while a session of the realm does: the last
// release() stops the helpers (they return from the loop, their workers end) and frees their
// stacks; the next session starts them again.
//
// Faults: a helper whose instance traps writes why into `notes` (a small SharedArrayBuffer) and
// calls nnw_pool_fault, which releases the caller; after each run the caller checks
// nnw_pool_faulted(): the run throws (its outputs are incomplete), the pool stops, the realm goes
// on with one thread. A worker that fails to start leaves one thread, with one warning.

export const THREADS_FILE = "kernels-threads.wasm";
export const PAGES_MIN = 64, PAGES_MAX = 65536; // 4 MiB .. 4 GiB (build_kernels.THREADS_MAX_MEMORY)
const NOTE_BYTES = 512; // per helper: an Int32 length, then UTF-8
const START_TIMEOUT_MS = 30_000;

// (module (memory 1 1 shared) (func (drop (i32.atomic.load (i32.const 0))))): what onnxruntime-web
// validates too (wasm threads)
const PROBE = new Uint8Array([
  0, 97, 115, 109, 1, 0, 0, 0, 1, 4, 1, 96, 0, 0, 3, 2, 1, 0, 5, 4, 1, 3, 1, 1, 10, 11, 1, 9, 0, 65, 0, 254, 16,
  2, 0, 26, 11,
]);

const isNode = typeof globalThis.process?.versions?.node === "string";
const inPage = typeof globalThis.document !== "undefined"; // a page's main thread (not a worker)

/** Why threads can't run in this realm, or null when they can. */
export function threadsUnavailable() {
  if (typeof SharedArrayBuffer === "undefined") {
    return isNode ? "this Node has no SharedArrayBuffer" : "the page is not cross-origin isolated (no SharedArrayBuffer)";
  }
  if (!isNode && globalThis.crossOriginIsolated === false) return "the page is not cross-origin isolated";
  try {
    if (!WebAssembly.validate(PROBE)) return "this WebAssembly engine has no threads";
  } catch {
    return "this WebAssembly engine has no threads";
  }
  if (!isNode && typeof Worker === "undefined") return "no Worker here";
  return null;
}

function logicalCores() {
  if (typeof navigator !== "undefined" && navigator.hardwareConcurrency) return navigator.hardwareConcurrency;
  if (isNode) return osCores;
  return 1;
}
// No top-level await: transformers.js require()s this module graph (Node's require(esm) refuses
// one that awaits), so node:os comes from process.getBuiltinModule (Node >= 20.16), else 1.
let osCores = 1;
if (isNode) {
  const os = globalThis.process?.getBuiltinModule?.("node:os");
  if (os) osCores = os.availableParallelism?.() ?? os.cpus().length;
}

let warned = false;

/** The threads the realm runs on, from env.wasm.numThreads (onnxruntime-web's rule, above). */
export function resolveNumThreads(wasm = {}) {
  const asked = wasm?.numThreads;
  const given = typeof asked === "number" && Number.isInteger(asked) && asked > 0;
  let n;
  if (given) n = asked;
  else if (!isNode && !globalThis.crossOriginIsolated) n = 1;
  else n = Math.min(4, Math.ceil((logicalCores() || 1) / 2));
  n = Math.min(n, 64); // pool.c's POOL_MAX helpers
  if (n > 1) {
    const why = threadsUnavailable();
    if (why !== null) {
      warn(`env.wasm.numThreads is ${n}, but ${why}: running on 1 thread` +
           (isNode ? "" : " (serve the page with Cross-Origin-Opener-Policy: same-origin and " +
                          "Cross-Origin-Embedder-Policy: require-corp)"));
      return 1;
    }
  }
  return n;
}

function warn(message) {
  if (!warned) {
    warned = true;
    console.warn(`nnwasm: ${message}`);
  }
}

/** Whether this thread may block in Atomics.wait / memory.atomic.wait32. */
function callerMayBlock() {
  if (inPage) return false;
  try {
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 1, 0); // "not-equal" at once where allowed
    return true;
  } catch {
    return false;
  }
}

/** A shared memory for kernels-threads.wasm, or throws (the caller falls back with a warning). */
export function sharedMemory() {
  return new WebAssembly.Memory({ initial: PAGES_MIN, maximum: PAGES_MAX, shared: true });
}

let liveWorkers = 0; // helper workers not yet ended (tests count them)
export const poolStats = { get liveWorkers() { return liveWorkers; }, starts: 0 };

async function newWorker() {
  const url = new URL("../web/pool-worker.mjs", import.meta.url); // ../web/: the same from demo/app.bundle.mjs
  if (isNode) {
    const { Worker } = await import("node:worker_threads");
    const worker = new Worker(url);
    worker.unref(); // a parked helper never keeps Node's process alive
    return { worker, on: (type, fn) => worker.on(type, fn), post: (m) => worker.postMessage(m) };
  }
  const worker = new Worker(url, { type: "module", name: "nnwasm-pool" });
  return {
    worker,
    on(type, fn) {
      if (type === "message") worker.addEventListener("message", (e) => fn(e.data));
      else if (type === "error") worker.addEventListener("error", (e) => fn(new Error(e.message || "worker error")));
      else if (type === "exit") worker.addEventListener("nnwasm-exit", () => fn());
    },
    post: (m) => worker.postMessage(m),
  };
}

/** The pool of one kernels-threads.wasm instance: k = {exports, memory, module}; threads: the total. */
export class ThreadPool {
  constructor(k, threads) {
    this.k = k;
    this.threads = threads; // asked for
    this.helpers = [];
    this.state = "idle"; // idle | starting | running | stopping | failed
    this.users = 0;
    this.notes = new SharedArrayBuffer(NOTE_BYTES * (threads + 1));
    this.stopped = Promise.resolve();
    this.failure = null;
    k.exports.nnw_pool_caller_spins(callerMayBlock() ? 0 : 1);
  }

  /** Starts the helpers as soon as kernels.wasm is loaded, before any session (plan-session.mjs:
   * while the plan downloads, so that they are ready by its first run); the first session's
   * acquire() takes this over, and without one they stay parked. */
  startEarly() {
    this.acquire();
    this.early = true;
  }

  /** A session of the realm starts: the helpers start unless they run (never awaited by create()). */
  acquire() {
    if (this.early) {
      this.early = false; // the first session takes the early start's place
      return;
    }
    this.users++;
    if ((this.state === "idle" || this.state === "stopping") && this.threads > 1) this.#start(); // after the stop
  }

  /** A session of the realm is released: the last one stops the helpers. */
  release() {
    this.users = Math.max(0, this.users - 1);
    if (this.users === 0 && (this.state === "starting" || this.state === "running")) this.#stop();
  }

  /** The threads the next run uses. */
  get active() {
    return this.k.exports.nnw_pool_threads();
  }

  async #start() {
    this.state = "starting";
    const generation = ++poolStats.starts;
    await this.stopped;
    if (this.state !== "starting" || this.users === 0) return;
    const k = this.k.exports, n = this.threads - 1;
    if (k.nnw_pool_prepare(n) !== 0) return this.#fail(`could not prepare ${n} helper threads`);
    // helpers ready but no run since (a session created, then idle): not a failure; the next run
    // enables them (beforeRun)
    const timer = setTimeout(() => {
      if (this.state === "starting" && !this.#allReady()) this.#fail(`helpers not ready after ${ThreadPool.startTimeoutMs / 1000} s`);
    }, ThreadPool.startTimeoutMs);
    timer.unref?.();
    this.startTimer = timer;
    for (let w = 1; w <= n; w++) {
      let helper;
      try {
        helper = await newWorker();
      } catch (e) {
        return this.#fail(`a helper worker failed to start (${e.message})`);
      }
      if (this.state !== "starting") { // stopped meanwhile
        helper.worker.terminate();
        return;
      }
      liveWorkers++;
      const entry = { w, helper, done: false, exited: null, resolve: null };
      entry.exited = new Promise((resolve) => { entry.resolve = resolve; });
      helper.on("exit", () => this.#ended(entry)); // Node's; a page's worker ends when we terminate it
      helper.on("error", (e) => {
        this.#ended(entry);
        this.#fail(`a helper worker failed (${e.message})`);
      });
      helper.on("message", (m) => {
        if (m?.type === "error") {
          this.#ended(entry);
          this.#fail(`a helper failed to start (${m.message})`);
        } else if (m?.type === "returned") {
          this.#ended(entry);
        }
      });
      this.helpers.push(entry);
      helper.post({ module: this.k.module, memory: this.k.memory, w, top: k.nnw_pool_stack_top(w), notes: this.notes,
                    noteBytes: NOTE_BYTES, generation, testFailStart: ThreadPool.testFailStart.has(w) });
    }
  }

  /** Before a run: enables the helpers once all reached their loop (a first run may go on one). */
  #allReady() {
    return this.helpers.length === this.threads - 1 && this.k.exports.nnw_pool_ready() === this.threads - 1;
  }

  beforeRun() {
    if (this.state === "starting" && this.#allReady()) {
      this.k.exports.nnw_pool_enable(this.threads - 1);
      clearTimeout(this.startTimer);
      this.state = "running";
    }
  }

  /** After a run (or a trap in it): throws when a helper trapped during it, after stopping the pool. */
  afterRun(trapped) {
    const k = this.k.exports;
    if (trapped) k.nnw_pool_settle(); // the caller trapped mid-job: the helpers finish their tiles
    const w = k.nnw_pool_faulted();
    if (!w || this.faultReported) return; // the word stays until the stopped pool is released
    this.faultReported = true;
    const why = this.#note(w);
    this.#stop();
    this.state = "failed";
    this.failure = `helper ${w} trapped: ${why}`;
    const error = new Error(`nnwasm: kernels.wasm trapped in a thread-pool helper (helper ${w}: ${why}): ` +
                            "the run's outputs are incomplete; the realm goes on with 1 thread");
    error.name = "KernelError";
    throw error;
  }

  #note(w) {
    const length = new Int32Array(this.notes, w * NOTE_BYTES, 1)[0];
    if (length <= 0) return "a trap";
    return new TextDecoder().decode(new Uint8Array(this.notes, w * NOTE_BYTES + 4, length).slice());
  }

  #fail(why) {
    if (this.state === "failed" || this.state === "stopping" || this.state === "idle") return;
    this.failure = why;
    warn(`${why}; running on 1 thread`);
    this.#stop();
    this.state = "failed";
  }

  // a helper's worker left nnw_worker_loop (or never got there): it ends
  #ended(entry) {
    if (!entry.done) {
      entry.done = true;
      liveWorkers--;
      entry.helper.worker.terminate();
    }
    entry.resolve();
  }

  /** Stops the helpers: they return from nnw_worker_loop and end; then their stacks are freed. */
  #stop() {
    clearTimeout(this.startTimer);
    const k = this.k.exports, helpers = this.helpers;
    this.helpers = [];
    this.state = "stopping";
    k.nnw_pool_stop();
    // a helper that does not return within 5 s is terminated (its stack is then no longer in use)
    this.stopped = Promise.all(helpers.map((h) => Promise.race([
      h.exited, new Promise((resolve) => { const t = setTimeout(resolve, 5000); t.unref?.(); }),
    ]).then(() => this.#ended(h)))).then(() => {
      k.nnw_pool_release();
      if (this.state === "stopping") this.state = "idle";
    });
    return this.stopped;
  }

  /** Resolves once every helper of a stopped pool ended (tests). */
  settled() {
    return this.stopped;
  }
}

ThreadPool.testFailStart = new Set(); // tests: helper ids whose start fails
ThreadPool.startTimeoutMs = START_TIMEOUT_MS; // tests shorten it

let pyodidePool = null;

/** The pool under this realm's Python sessions (createThreadedKernels), or null. */
export function pyodideThreadPool() {
  return pyodidePool;
}

/** kernels-threads.wasm from its bytes, synchronously (the Pyodide host asks from Python: the
 * module is well under Chromium's 8 MB limit for a synchronous compile on a page's thread), on a
 * new shared memory, with its pool acquired (helpers starting): {exports, memory, pool}; null with
 * one warning when the memory can't be shared or the module refuses it. */
export function createThreadedKernels(bytes, threads) {
  try {
    const module = new WebAssembly.Module(bytes);
    const memory = sharedMemory();
    const instance = new WebAssembly.Instance(module, { env: { memory } });
    const exports = { ...instance.exports, memory };
    exports._initialize?.();
    const pool = new ThreadPool({ exports, memory, module }, threads);
    pool.acquire();
    pyodidePool = pool;
    return { exports, memory, pool };
  } catch (e) {
    warn(`no thread pool (${e.name}: ${e.message}); running on 1 thread`);
    return null;
  }
}
