// The implementation behind InferenceSession: one Python session inside Pyodide, reached through
// nnwasm/_js_bridge.py. Tensors cross as (name, type, dims, bytes): typed arrays are viewed as
// bytes on the way in and wrapped around fresh ArrayBuffers on the way out, never per element.
import { env } from "./env.mjs";
import { closeReaders, openExternalData } from "./external-data.mjs";
import { boot } from "./pyodide-boot.mjs";
import { Tensor, typedArrayFor } from "./tensor.mjs";

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
    // The files the model's initializers live in, opened (not read) before Python sees the model.
    const needs = callPython(runtime.bridge, bridgeFunction(runtime, "external_needs"), modelBytes);
    const readers = await openExternalData(needs, settings.externalData ?? null, settings.modelURL ?? null);
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
    return new PyodideSession(runtime, info, performance.now() - t0, open);
  }

  constructor(runtime, info, createMs, readers = null) {
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
  }

  /** feeds: [name, tensor] pairs; outputNames: names or null for all. Resolves to {name: Tensor}.
   * (Models with symbolic input dims compile at their first run with each shape, so that is
   * where a need for numpy can show.) */
  async run(feeds, outputNames) {
    const names = [], types = [], dims = [], buffers = [];
    for (const [name, tensor] of feeds) {
      names.push(name);
      types.push(tensor.type);
      dims.push([...tensor.dims]);
      buffers.push(asBytes(tensor, name));
    }
    const results = await withNumpyFallback(this.runtime, () =>
      callPython(this.bridge, this.bridge.run, this.handle, names, types, dims, buffers, outputNames ?? undefined));
    if (this.readers && Object.keys(this.readers).length) this.#closeExternalData();
    const out = {};
    for (const [name, type, shape, buffer] of results) {
      const ctor = typedArrayFor(type);
      out[name] = new Tensor(type, new ctor(buffer), shape);
    }
    return out;
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

  release() {
    callPython(this.bridge, this.bridge.release, this.handle);
    closeReaders(this.readers);
    this.readers = null;
  }
}
