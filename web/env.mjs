// Every setting of the nnwasm shim, with its default, in one place. boot() reads them once
// (through resolveEnv) when the first session is created: set them before that. Like
// onnxruntime-web's env.wasm flags, changes after boot have no effect.

const VERSION = "0.1.0";
const PYODIDE_VERSION = "314.0.7";

export const env = {
  // Folder written by build_scripts/build_web.py: pyodide/, the nnwasm wheel, nnwasm-web.json
  // naming it, and kernels.wasm. Default: dist/web/ next to this file's folder, in the source
  // tree or in the npm package (node_modules/nnwasm/dist/web/), wherever that is served from.
  distURL: new URL("../dist/web/", import.meta.url).href,

  // Pyodide's indexURL (pyodide.mjs, pyodide.asm.*, python_stdlib.zip, pyodide-lock.json).
  // null = distURL + "pyodide/". It is also Pyodide's package base URL, so Pyodide never
  // falls back to its CDN: nnwasm works offline.
  pyodideIndexURL: null,

  // The nnwasm wheel Pyodide installs. null = the wheel named in distURL + "nnwasm-web.json".
  wheelURL: null,

  // true: boot from the memory snapshot build_web.py makes (pyodide-snapshot.bin.gz, named in
  // nnwasm-web.json; Python already started with nnwasm imported), which saves about 1.5 s of
  // boot for 6.5 MB more to download. Used only with the manifest's own wheel (not with
  // env.wheelURL); a snapshot that is missing or doesn't fit the Pyodide build is skipped.
  // false: always start Python from scratch.
  pyodideSnapshot: true,

  // Milliseconds boot() may take before it rejects (Pyodide's loader can wait forever on a
  // file that never arrives). Boot takes 3-7 s here; the default leaves room for slow devices.
  // 0: no limit.
  bootTimeoutMs: 120_000,

  // true: log boot steps with timings and Python's stdout to the console, and keep the Python
  // traceback on errors (error.pythonTraceback). false: Python's stdout is dropped.
  debug: false,

  // true: the first time a model needs the numpy fallback provider, ask Pyodide to load its
  // numpy package (from packageBaseUrl, i.e. our own copy of Pyodide's files) and retry. A page
  // whose models all run on WASM never loads it. false, or where no numpy package can be had
  // (offline, core-only Pyodide), the FallbackUnavailable error naming the nodes stands.
  // Unlike the settings above, this one is read whenever a session needs numpy, not at boot.
  loadNumpy: true,

  wasm: {
    // onnxruntime-web compatibility only: nnwasm runs single-threaded whatever is set here.
    numThreads: 1,
    // Which kernels.wasm flavour loads (flavours.mjs), onnxruntime-web's names: relaxedSimd
    // undefined = relaxed SIMD where the engine has it (kernels-relaxed.wasm), else the baseline
    // (kernels.wasm, bit-identical everywhere); true = relaxed (the baseline with one warning where
    // the engine lacks it); false = the baseline. simd: false = the baseline too (there is no
    // build without SIMD128). Read when kernels.wasm loads / Pyodide boots.
    simd: true,
    relaxedSimd: undefined,
    // true: Pyodide and every session live in a worker (a module Web Worker; worker_threads in
    // Node), so the calling thread keeps painting while Pyodide boots (seconds) and sessions run.
    // Tensors cross by transfer; the caller's own arrays are copied first and stay usable.
    // Read once, at the first boot() or .onnx create(): all Pyodide sessions live on one side.
    // Plan (.nnwp) sessions read it at their create() until then.
    proxy: false,
    // Where plan files (.nnwp) get kernels.wasm, as onnxruntime-web's wasmPaths: a folder URL
    // (ending in "/") holding kernels.wasm, or the URL of the file itself. null = distURL +
    // "kernels.wasm" (build_scripts/build_web.py copies it there), then, for a source checkout
    // without dist/web/, py_runtime/nnwasm/kernels.wasm next to this file's folder. The .onnx
    // path never reads it: there kernels.wasm comes inside the nnwasm wheel. onnxruntime-web's
    // other form, an object {wasm, mjs} naming its own files, names nothing nnwasm loads and is
    // ignored (the default applies): nothing is fetched from it.
    wasmPaths: null,
    // nnwasm's own: true runs a tiny plan a few times as soon as kernels.wasm is loaded, so that
    // V8 has optimized the kernels by a plan's first run (plan-session.mjs, "The warm-up"). It
    // runs while a plan downloads and stops at the first run. Read when kernels.wasm loads.
    warmUp: true,
  },

  // No "web" (nor "node") entry: nnwasm is not onnxruntime-web, and code that reads
  // env.versions.web to find onnxruntime-web's files (transformers.js points env.wasm.wasmPaths
  // at a CDN copy of onnxruntime-web@<versions.web> and fetches it) must not take it for one.
  versions: Object.freeze({ nnwasm: VERSION, pyodide: PYODIDE_VERSION }),
};

function checkURL(name, value) {
  if (value !== null && typeof value !== "string" && !(value instanceof URL)) {
    throw new TypeError(`env.${name} must be a URL string, a URL or null, got ${typeof value}`);
  }
  return value === null ? null : String(value);
}

function withSlash(url) {
  return url.endsWith("/") ? url : url + "/";
}

/** What relative URLs are relative to: the page, or in Node the working directory (so
 * Node users can give plain paths). */
export function baseURL() {
  if (typeof globalThis.location !== "undefined") return globalThis.location.href;
  return new URL(withSlash(process.cwd()), "file:///").href;
}

/** The settings boot() uses, checked, as absolute URLs, with every default filled in
 * (wheelURL may stay null: boot() then reads it from the manifest). */
export function resolveEnv() {
  const base = baseURL();
  const distURL = withSlash(new URL(checkURL("distURL", env.distURL), base).href);
  const indexURL = checkURL("pyodideIndexURL", env.pyodideIndexURL);
  const wheelURL = checkURL("wheelURL", env.wheelURL);
  for (const flag of ["debug", "loadNumpy", "pyodideSnapshot"]) {
    if (typeof env[flag] !== "boolean") {
      throw new TypeError(`env.${flag} must be true or false, got ${JSON.stringify(env[flag])}`);
    }
  }
  if (!Number.isFinite(env.bootTimeoutMs) || env.bootTimeoutMs < 0) {
    throw new TypeError(`env.bootTimeoutMs must be a number of milliseconds >= 0, got ${JSON.stringify(env.bootTimeoutMs)}`);
  }
  const proxy = env.wasm?.proxy ?? false; // a replaced env.wasm without the flag means the default
  if (typeof proxy !== "boolean") {
    throw new TypeError(`env.wasm.proxy must be true or false, got ${JSON.stringify(proxy)}`);
  }
  return {
    distURL,
    manifestURL: new URL("nnwasm-web.json", distURL).href,
    pyodideIndexURL: withSlash(indexURL === null ? new URL("pyodide/", distURL).href : new URL(indexURL, base).href),
    wheelURL: wheelURL === null ? null : new URL(wheelURL, base).href,
    debug: env.debug,
    pyodideSnapshot: env.pyodideSnapshot,
    bootTimeoutMs: env.bootTimeoutMs,
    proxy,
  };
}

/** The URLs plan sessions try for kernels.wasm, in order (see env.wasm.wasmPaths). */
export function resolveKernelsURL() {
  const base = baseURL();
  const given = env.wasm?.wasmPaths ?? null;
  const fileByFile = given !== null && typeof given === "object" && !(given instanceof URL); // onnxruntime-web's {wasm, mjs}
  const paths = fileByFile ? null : checkURL("wasm.wasmPaths", given);
  if (paths !== null) {
    const url = new URL(paths, base).href;
    return [url.endsWith("/") ? new URL("kernels.wasm", url).href : url];
  }
  const distURL = withSlash(new URL(checkURL("distURL", env.distURL), base).href);
  return [new URL("kernels.wasm", distURL).href, new URL("../py_runtime/nnwasm/kernels.wasm", import.meta.url).href];
}
