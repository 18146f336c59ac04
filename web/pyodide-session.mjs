// The implementation behind InferenceSession: one Python session inside Pyodide, reached through
// nnwasm/_js_bridge.py. Tensors cross as (name, type, dims, bytes): typed arrays are viewed as
// bytes on the way in and wrapped around fresh ArrayBuffers on the way out, never per element.
import { env } from "./env.mjs";
import { EMBEDDED, splitEmbedded } from "./embedded-data.mjs";
import { closeReaders, openExternalData } from "./external-data.mjs";
import { boot } from "./pyodide-boot.mjs";
import { Tensor, typedArrayFor } from "./tensor.mjs";
import { pyodideThreadPool } from "./threads.mjs";

/** Calls a bridge function; a Python exception becomes a JS Error with the Python message
 * (not the traceback) and the exception's type name as error.name. */
function callPython(bridge, fn, ...args) {
  try {
    return fn(...args);
  } catch (e) {
    if (e?.constructor?.name !== "PythonError") throw e;
    const info = bridge.take_error(); // [type name, qualified name, str(exception)] or undefined
    const lines = e.message.trimEnd().split("\n");
    const error = new Error(info ? info[2] : lines[lines.length - 1]);
    error.name = info ? info[0] : (e.type ?? "PythonError");
    error.pythonType = info ? info[1] : e.type;
    if (env.debug) error.pythonTraceback = e.message;
    throw error;
  }
}

// Pyodide ships numpy as a package of its own. Loaded at most once per process, and only when a
// session needs the numpy fallback. Resolves to null once `import numpy` works, else to why not
// (loadPackage reports failures through errorCallback and returns, so the import is the test).
let numpyLoading = null;
function loadNumpy(pyodide) {
  numpyLoading ??= (async () => {
    const failures = [];
    await pyodide.loadPackage("numpy", { messageCallback: () => {}, errorCallback: (m) => failures.push(m) });
    try {
      pyodide.runPython("import numpy");
      return null;
    } catch {
      return failures.join("; ") || "numpy does not import after loadPackage";
    }
  })();
  return numpyLoading;
}

/** Runs call(); if it fails for want of numpy and env.loadNumpy allows, loads numpy and calls
 * again. When numpy can't be had, the original error stands, with the loader's reason added. */
async function withNumpyFallback(runtime, call) {
  try {
    return call();
  } catch (e) {
    if (e.name !== "FallbackUnavailable" || !env.loadNumpy) throw e;
    const why = await loadNumpy(runtime.pyodide);
    if (why !== null) {
      e.message += ` (loading Pyodide's numpy package failed: ${why})`;
      throw e;
    }
    return call();
  }
}

function metadata(values) {
  return values.map((v) => ({
    name: v.name,
    isTensor: true,
    type: v.type,
    shape: v.shape ? v.shape.map((d) => d ?? null) : null, // null: rank unknown
  }));
}

/** Whether preferredOutputLocation (session-options.mjs: null, "wasm", or {name: location}) keeps
 * output `name` in the session's memory. */
export function keptOutput(location, name) {
  return location === "wasm" || (location !== null && typeof location === "object" && location[name] === "wasm");
}

/** A feed as the bridge takes it: the id of a tensor this runtime keeps, or its bytes (a tensor
 * kept elsewhere, say by a proxy worker, is downloaded). */
export async function feedData(tensor, name, owner) {
  const kept = Tensor._keptOf(tensor);
  if (kept !== undefined) return kept.owner === owner ? kept.key : new Uint8Array(await kept.download());
  if (tensor.location === "none") throw new TypeError(`input '${name}': the tensor was disposed`);
  if (tensor.location !== undefined && tensor.location !== "cpu" && tensor.location !== "cpu-pinned") {
    throw new TypeError(`input '${name}': a tensor on '${tensor.location}' cannot be fed to nnwasm (it takes CPU ` +
                        `tensors and its own "wasm" ones)`);
  }
  return asBytes(tensor, name);
}

function asBytes(tensor, name) {
  const data = tensor.data;
  if (!ArrayBuffer.isView(data)) {
    throw new TypeError(`input '${name}': a '${tensor.type}' tensor cannot be passed to nnwasm (needs a typed array)`);
  }
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

/** A bridge function boot() does not fetch (profiling's, external_needs), fetched once on first use. */
function bridgeFunction(runtime, name) {
  if (!runtime.bridge[name]) {
    const module = runtime.pyodide.pyimport("nnwasm._js_bridge");
    runtime.bridge[name] = module[name].copy();
    module.destroy();
  }
  return runtime.bridge[name];
}

export class PyodideSession {
  static boot() {
    return boot();
  }

  /** Boots Pyodide if needed, then builds the Python session from ONNX bytes (a Uint8Array). */
  static async create(modelBytes, providers, settings = {}) {
    const runtime = await boot();
    const t0 = performance.now();
    // Its big embedded weights stay here, served to Python as external data (embedded-data.mjs).
    const split = splitEmbedded(modelBytes);
    if (split) modelBytes = split.model;
    // The files the model's initializers live in, opened (not read) before Python sees the model.
    const needs = callPython(runtime.bridge, bridgeFunction(runtime, "external_needs"), modelBytes);
    if (split) needs.files = needs.files.filter(([location]) => location !== EMBEDDED);
    let readers = await openExternalData(needs, settings.externalData ?? null, settings.modelURL ?? null);
    if (split) readers = { ...readers, [EMBEDDED]: split.reader };
    let info;
    try {
      // undefined, not null, reaches Python as None (null becomes pyodide.ffi.jsnull).
      info = await withNumpyFallback(runtime, () =>
        callPython(runtime.bridge, runtime.bridge.create_session, modelBytes, providers ?? undefined,
                   settings.freeDimensionOverrides ?? undefined, readers ?? undefined, settings.config ?? undefined));
    } catch (e) {
      closeReaders(readers);
      throw e;
    }
    // files whose every initializer a plan now holds are closed (their buffers dropped) now
    closeReaders(readers, info.externalPending);
    const open = readers && Object.fromEntries(Object.entries(readers).filter(([l]) => info.externalPending.includes(l)));
    return new PyodideSession(runtime, info, performance.now() - t0, open, settings);
  }

  constructor(runtime, info, createMs, readers = null, settings = {}) {
    this.readers = readers; // the external data files still open, closed by release()
    this.runtime = runtime;
    this.bridge = runtime.bridge;
    this.handle = info.handle;
    this.inputMetadata = metadata(info.inputs);
    this.outputMetadata = metadata(info.outputs);
    this.providers = info.providers;
    this.providerAssignment = info.assignment.map(([node, opType, provider]) => ({ node, opType, provider }));
    this.kernelsFlavour = info.kernelsFlavour;
    this.timings = { bootMs: runtime.bootMs, createMs };
    this.preferredOutputLocation = settings.preferredOutputLocation ?? null;
  }

  /** feeds: [name, tensor] pairs; outputNames: names or null for all. Resolves to {name: Tensor}:
   * outputs preferredOutputLocation puts on "wasm" stay in the Python session's memory (a
   * decoder's present key/values: fed back as the next past, they never cross to JS).
   * (Models with symbolic input dims compile at their first run with each shape, so that is
   * where a need for numpy can show.) */
  async run(feeds, outputNames) {
    const names = [], types = [], dims = [], buffers = [];
    for (const [name, tensor] of feeds) {
      names.push(name);
      types.push(tensor.type);
      dims.push([...tensor.dims]);
      buffers.push(await feedData(tensor, name, this.runtime));
    }
    const wanted = outputNames ?? this.outputMetadata.map((m) => m.name);
    const keep = wanted.filter((name) => keptOutput(this.preferredOutputLocation, name));
    const results = await withNumpyFallback(this.runtime, () =>
      callPython(this.bridge, this.bridge.run, this.handle, names, types, dims, buffers, outputNames ?? undefined,
                 keep.length ? keep : undefined));
    if (this.readers && Object.keys(this.readers).length) this.#closeExternalData();
    const out = {};
    for (const [name, type, shape, buffer, key] of results) {
      if (key) {
        out[name] = Tensor._kept(type, shape, this.#keptData(key));
        continue;
      }
      const ctor = typedArrayFor(type);
      out[name] = new Tensor(type, new ctor(buffer), shape);
    }
    return out;
  }

  #keptData(key) {
    const runtime = this.runtime;
    return {
      key,
      owner: runtime,
      download: async () => callPython(runtime.bridge, bridgeFunction(runtime, "kept_read"), key),
      dispose: () => callPython(runtime.bridge, bridgeFunction(runtime, "kept_dispose"), key),
    };
  }

  // A run may have built plans that now hold the external data's tensors: close what no longer
  // needs its reader (kept open while some tensor of a file is held by no plan).
  #closeExternalData() {
    const pending = callPython(this.bridge, bridgeFunction(this.runtime, "external_pending"), this.handle);
    closeReaders(this.readers, pending);
    this.readers = Object.fromEntries(Object.entries(this.readers).filter(([location]) => pending.includes(location)));
  }

  startProfiling() {
    callPython(this.bridge, bridgeFunction(this.runtime, "start_profiling"), this.handle);
  }

  /** The Python session's trace events (profiling.py), [] when it was not profiling. */
  endProfiling() {
    return JSON.parse(callPython(this.bridge, bridgeFunction(this.runtime, "end_profiling"), this.handle));
  }

  /** The threads the next run uses: the realm's pool (threads.mjs) on "simd+threads" or
   * "relaxed+threads", else 1. */
  get numThreads() {
    return this.kernelsFlavour?.endsWith("+threads") ? pyodideThreadPool()?.active ?? 1 : 1;
  }

  release() {
    callPython(this.bridge, this.bridge.release, this.handle);
    closeReaders(this.readers);
    this.readers = null;
  }
}
