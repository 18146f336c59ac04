// InferenceSession with onnxruntime-web's interface: create(), run(), release(), startProfiling(),
// endProfiling(), inputNames, outputNames, inputMetadata, outputMetadata. Argument checking lives here; the Python side is
// in pyodide-session.mjs, reached directly or, with env.wasm.proxy, through proxy-session.mjs.
// A .nnwp plan file (magic "NNWF") instead gets a plan-session.mjs: kernels.wasm alone, no Python.
import { resolveEnv } from "./env.mjs";
import { resolveProviders } from "./execution-providers.mjs";
import { loadBytes, toURL } from "./load-bytes.mjs";
import { isPlanFile } from "./plan-file.mjs";
import { PlanReceiver } from "./plan-receiver.mjs";
import { loadKernels, PlanSession, warmUpKernels } from "./plan-session.mjs";
import { ProxySession } from "./proxy-session.mjs";
import { PyodideSession } from "./pyodide-session.mjs";
import { memoryLimit, sessionSettings } from "./session-options.mjs";

// Chosen once, at the first boot() or create(), as onnxruntime-web reads env.wasm.proxy when its
// backend starts: every session then lives on the same side (one Pyodide, never two).
let Impl = null;

function impl() {
  Impl ??= resolveEnv().proxy ? ProxySession : PyodideSession;
  return Impl;
}

/** Starts Pyodide and nnwasm ahead of the first create(): here, or in the proxy worker when
 * env.wasm.proxy is set. Shared, so call it as often as you like. Resolves to {bootMs,
 * versions}, plus {pyodide, bridge} when Pyodide runs in this thread. */
export async function boot() {
  return impl().boot();
}

// Plan sessions need no Python, so they follow env.wasm.proxy as it is at their create() until a
// Pyodide session (or boot()) fixes the side for good.
const planInWorker = () => (Impl ?? (resolveEnv().proxy ? ProxySession : PyodideSession)) === ProxySession;

// A plan file fetched by URL and run on this thread: once its first piece shows the magic,
// kernels.wasm loads (and, as more pieces arrive, is warmed up) while the rest downloads, and the
// pieces go to a PlanReceiver (plan-receiver.mjs), which writes the weights straight into
// kernels.wasm's memory and computes the checksum as they arrive. Anything else (an .onnx, a plan
// for the proxy worker, a file read in one piece) comes back as bytes, checked where it is used.
// -> [bytes, null] or [prefix, crc, received]
async function loadModel(url) {
  let receiver = null;
  const sinkFor = (first) => {
    let here = false;
    try {
      here = isPlanFile(first) && !planInWorker();
    } catch {} // eslint-disable-line no-empty -- a bad env is create()'s to report, not the download's
    if (here) receiver = new PlanReceiver(); // starts loading kernels.wasm
    return receiver;
  };
  const onChunk = (piece, offset) => {
    if (offset > 0 && receiver) warmUpKernels();
  };
  const got = await loadBytes(url, onChunk, sinkFor);
  if (!receiver) return [got, null];
  if (got.bytes) return [got.bytes, got.crc];
  return [got.prefix, got.crc, got];
}

// create(url | Uint8Array | ArrayBuffer, options) or create(ArrayBuffer, byteOffset, byteLength?, options)
// -> [model bytes, options, the plan file's checksum if computed while loading]
async function modelAndOptions(arg0, arg1, arg2, arg3) {
  if (typeof arg0 === "string" || arg0 instanceof URL) {
    const [bytes, crc, received] = await loadModel(arg0);
    return [bytes, arg1, crc, received];
  }
  // A plain Uint8Array view: Pyodide cannot convert subclasses such as Node's Buffer.
  if (arg0 instanceof Uint8Array) return [new Uint8Array(arg0.buffer, arg0.byteOffset, arg0.byteLength), arg1];
  if (arg0 instanceof ArrayBuffer || (typeof SharedArrayBuffer !== "undefined" && arg0 instanceof SharedArrayBuffer)) {
    if (typeof arg1 === "number") {
      const length = typeof arg2 === "number" ? arg2 : arg0.byteLength - arg1;
      return [new Uint8Array(arg0, arg1, length), typeof arg2 === "number" ? arg3 : arg2];
    }
    return [new Uint8Array(arg0), arg1];
  }
  throw new TypeError("InferenceSession.create needs a URL, a path, a Uint8Array or an ArrayBuffer");
}

function isOnnxURL(arg) {
  if (typeof arg !== "string" && !(arg instanceof URL)) return false;
  try {
    return new URL(String(arg), "file:///").pathname.toLowerCase().endsWith(".onnx");
  } catch {
    return false;
  }
}

function isTensorLike(value) {
  if (value === null || typeof value !== "object" || typeof value.type !== "string" || !Array.isArray(value.dims)) return false;
  // a tensor whose data is elsewhere ("wasm", or a GPU's) throws for .data: the session says why
  const onCpu = value.location === undefined || value.location === "cpu" || value.location === "cpu-pinned";
  return !onCpu || value.data !== undefined;
}

/** Feeds whose bytes together pass the session's memory limit are refused here, before any copy
 * (CPython's memory_limit.check_feeds says the same). */
function checkFeedBytes(entries, limit) {
  let total = 0, big = null;
  for (const [name, tensor] of entries) {
    const n = ArrayBuffer.isView(tensor.data) ? tensor.data.byteLength : 0;
    total += n;
    if (big === null || n > big[1]) big = [name, n];
  }
  if (total > limit) {
    const error = new Error(`the feeds hold ${total} bytes ('${big[0]}': ${big[1]}), more than the session's memory ` +
                            `limit of ${limit} bytes (session.memory_limit_bytes): refused before any copy`);
    error.name = "MemoryLimitExceeded";
    throw error;
  }
}

export class InferenceSession {
  #impl;
  #released = false;
  // Calls on one session take turns, in call order, as onnxruntime-web's proxy queues its
  // messages: a run starts when the one before it has settled, and release() waits for them all,
  // so it never frees memory a run uses (tests/node/concurrency.mjs).
  #queue = Promise.resolve();
  #memoryLimit = null; // options.memoryLimitBytes (session-options.mjs), checked against the feeds

  #enqueue(work) {
    const done = this.#queue.then(work);
    this.#queue = done.catch(() => {});
    return done;
  }

  constructor(impl) {
    this.#impl = impl;
    this.inputMetadata = impl.inputMetadata;
    this.outputMetadata = impl.outputMetadata;
    this.inputNames = impl.inputMetadata.map((m) => m.name);
    this.outputNames = impl.outputMetadata.map((m) => m.name);
    // nnwasm's own fields: the providers in use, which one runs each node, and how long the
    // boot (once per page) and this session's creation took.
    this.providers = impl.providers;
    this.providerAssignment = impl.providerAssignment;
    this.kernelsFlavour = impl.kernelsFlavour; // the kernels.wasm flavour: "simd", "relaxed", "simd+threads", "relaxed+threads" (flavours.mjs)
    this.timings = impl.timings;
  }

  /** nnwasm's own: the threads the next run uses (env.wasm.numThreads, threads.mjs): 1 until the
   * pool's helpers are ready (a proxied session: as of its last run), and without a pool. */
  get numThreads() {
    return this.#impl.numThreads ?? 1;
  }

  /**
   * options: onnxruntime-web's SessionOptions; nnwasm reads executionProviders ("wasm"/"cpu" ->
   * WasmExecutionProvider, "numpy" -> NumpyExecutionProvider; others skipped),
   * enableProfiling (startProfiling() at creation: for a plan file, before it is loaded),
   * freeDimensionOverrides, preferredOutputLocation and externalData (session-options.mjs), and
   * ignores the rest (threads, graph optimization level, ...).
   */
  static async create(arg0, arg1, arg2, arg3) {
    // An .onnx URL or path takes the Pyodide path: the boot starts while the model downloads.
    const early = isOnnxURL(arg0) ? impl().boot() : null;
    early?.catch(() => {}); // awaited below, unless the model can't be had
    const [model, options, planCrc = null, received = null] = await modelAndOptions(arg0, arg1, arg2, arg3);
    if (options !== undefined && (options === null || typeof options !== "object")) {
      received && (await loadKernels()).exports.nnw_free(received.block);
      throw new TypeError("InferenceSession.create: options must be an object");
    }
    // A .nnwp plan file runs on kernels.wasm alone, never booting Pyodide: here, or in the proxy
    // worker with env.wasm.proxy.
    let planOptions;
    try {
      planOptions = { enableProfiling: Boolean(options?.enableProfiling), memoryLimitBytes: memoryLimit(options) };
    } catch (e) {
      received && (await loadKernels()).exports.nnw_free(received.block);
      throw e;
    }
    const limited = (session) => ((session.#memoryLimit = planOptions.memoryLimitBytes), session);
    if (received) return limited(new InferenceSession(await PlanSession.create(model, undefined, { ...planOptions, received })));
    if (isPlanFile(model)) {
      return limited(new InferenceSession(await (planInWorker() ? ProxySession.createPlan(model, planOptions)
        : PlanSession.create(model, undefined, { ...planOptions, contentCrc: planCrc }))));
    }
    const providers = resolveProviders(options?.executionProviders);
    const settings = sessionSettings(options); // session-options.mjs: freeDimensionOverrides, ...
    // where the model came from, for its external data's sibling files (external-data.mjs)
    settings.modelURL = typeof arg0 === "string" || arg0 instanceof URL ? toURL(arg0).href : null;
    await early;
    const session = limited(new InferenceSession(await impl().create(model, providers, settings)));
    if (planOptions.enableProfiling) await session.startProfiling();
    return session;
  }

  /** run(feeds, options?) or run(feeds, fetches, options?); fetches: output names, or an object
   * whose keys are output names. Resolves to {outputName: Tensor}. */
  async run(feeds, fetches, _options) {
    if (this.#released) throw new Error("InferenceSession.run: the session was released");
    if (feeds === null || typeof feeds !== "object" || Array.isArray(feeds)) {
      throw new TypeError("InferenceSession.run: feeds must be an object {inputName: Tensor}");
    }
    const entries = Object.entries(feeds);
    for (const [name, tensor] of entries) {
      if (!isTensorLike(tensor)) throw new TypeError(`InferenceSession.run: feed '${name}' is not a Tensor`);
    }
    if (this.#memoryLimit !== null) checkFeedBytes(entries, this.#memoryLimit);
    let outputNames = null;
    if (Array.isArray(fetches)) outputNames = fetches.map(String);
    else if (fetches !== null && typeof fetches === "object" && this.outputNames.some((n) => n in fetches)) {
      outputNames = Object.keys(fetches);
    }
    return this.#enqueue(() => this.#impl.run(entries, outputNames));
  }

  /** Starts (or restarts) recording a profile of the runs that follow. onnxruntime-web's returns
   * nothing; this returns a promise (the session may live in a worker). */
  async startProfiling() {
    if (this.#released) throw new Error("InferenceSession.startProfiling: the session was released");
    await this.#enqueue(() => this.#impl.startProfiling());
  }

  /** Stops profiling and resolves to the events recorded (Chrome trace format, as CPython's
   * end_profiling() file holds; [] when not profiling): JSON.stringify them to get a file that
   * Perfetto or chrome://tracing opens. onnxruntime-web's writes a file in its own wasm file system
   * and returns nothing. */
  async endProfiling() {
    if (this.#released) throw new Error("InferenceSession.endProfiling: the session was released");
    return this.#enqueue(() => this.#impl.endProfiling());
  }

  /** Frees the session once the runs already asked for have settled; run() rejects from now on. */
  async release() {
    if (this.#released) return;
    this.#released = true;
    await this.#enqueue(() => this.#impl.release());
  }
}
