// Starting the Python side once per page or process: Pyodide from our own copy (never a CDN),
// then the nnwasm wheel, then the bridge module the sessions call. Start-up order:
//   resolveEnv -> import pyodide.mjs -> loadPyodide -> loadPackage(wheel) -> import nnwasm._js_bridge
import { resolveEnv } from "./env.mjs";
import { IN_NODE, loadBytes, nodePath } from "./load-bytes.mjs";

const BRIDGE_FUNCTIONS = ["create_session", "run", "release", "take_error"];
// What loadPyodide reads from indexURL. A missing one makes it fail outside any promise we can
// catch (Node: an unhandled rejection that ends the process) or wait forever (a browser's 404),
// so boot checks them first and says which are missing.
const PYODIDE_FILES = ["pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json"];

let booting = null;
let boots = 0;

/** How many times a boot was started in this realm (plan files must never start one). */
export function bootCount() {
  return boots;
}

/**
 * Boots Pyodide and installs nnwasm; every call returns the same promise. Resolves to
 * { pyodide, bridge: {create_session, run, release, take_error}, bootMs, versions }.
 * A failed boot is forgotten, so a later call (say, after fixing env.distURL) tries again.
 */
export function boot() {
  if (booting === null) {
    boots++;
    booting = withTimeout(bootOnce(), resolveEnv().bootTimeoutMs).catch((e) => {
      booting = null;
      throw e;
    });
  }
  return booting;
}

function withTimeout(promise, ms) {
  if (!ms) return promise;
  let timer;
  const limit = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`nnwasm: Pyodide did not start within ${ms / 1000} s ` +
                                              "(env.bootTimeoutMs); run with env.debug = true to see how far it got")), ms);
  });
  return Promise.race([promise, limit]).finally(() => clearTimeout(timer));
}

async function checkPyodideFiles(indexURL) {
  const missing = [];
  await Promise.all(PYODIDE_FILES.map(async (name) => {
    const url = new URL(name, indexURL).href;
    try {
      if (IN_NODE && url.startsWith("file:")) {
        await (await import("node:fs/promises")).access(new URL(url));
      } else {
        const response = await fetch(url, { method: "HEAD" });
        if (!response.ok) missing.push(`${name} (HTTP ${response.status})`);
      }
    } catch (e) {
      missing.push(`${name} (${e.code ?? e.message})`);
    }
  }));
  if (missing.length > 0) {
    throw new Error(`nnwasm: Pyodide's files are missing from ${indexURL}: ${missing.sort().join(", ")} ` +
                    "(run `python build_scripts/build_web.py`, or set env.pyodideIndexURL)");
  }
}

async function wheelFromManifest(manifestURL) {
  let manifest;
  try {
    manifest = JSON.parse(new TextDecoder().decode(await loadBytes(manifestURL)));
  } catch (e) {
    throw new Error(`nnwasm: cannot read ${manifestURL} (run \`python build_scripts/build_web.py\`, ` +
                    `or set env.distURL / env.wheelURL): ${e.message}`, { cause: e });
  }
  if (typeof manifest.wheel !== "string") throw new Error(`nnwasm: ${manifestURL} names no wheel`);
  return new URL(manifest.wheel, manifestURL).href;
}

// Pyodide wants file system paths in Node and URLs in the browser.
async function forPyodide(url) {
  return IN_NODE && url.startsWith("file:") ? nodePath(url) : url;
}

async function bootOnce() {
  const t0 = performance.now();
  const cfg = resolveEnv();
  const steps = {}; // step -> ms since this realm's time origin when it ended (for bench/boot_breakdown.py)
  const log = (msg) => {
    steps[msg] = performance.now();
    if (cfg.debug) console.log(`nnwasm: ${msg} (${(performance.now() - t0).toFixed(0)} ms)`);
  };
  log("boot started");
  // The manifest is read while Pyodide starts; the no-op catch keeps a failure from being
  // reported as unhandled before it is awaited below.
  const wheelPromise = cfg.wheelURL ? Promise.resolve(cfg.wheelURL) : wheelFromManifest(cfg.manifestURL);
  wheelPromise.catch(() => {});

  await checkPyodideFiles(cfg.pyodideIndexURL);
  log("Pyodide's files checked");
  let loadPyodide;
  try {
    ({ loadPyodide } = await import(new URL("pyodide.mjs", cfg.pyodideIndexURL).href));
  } catch (e) {
    throw new Error(`nnwasm: cannot load Pyodide from ${cfg.pyodideIndexURL}: ${e.message}`, { cause: e });
  }
  log("pyodide.mjs imported");
  let indexURL = await forPyodide(cfg.pyodideIndexURL);
  if (IN_NODE && !indexURL.endsWith("/")) indexURL += "/";
  const pyodide = await loadPyodide({
    indexURL,
    packageBaseUrl: indexURL, // also where Pyodide's loader would go instead of its CDN
    stdout: cfg.debug ? (line) => console.log(line) : () => {},
    stderr: (line) => console.warn(line),
  });
  log("loadPyodide resolved");

  const wheelURL = await wheelPromise;
  const failures = [];
  await pyodide.loadPackage(await forPyodide(wheelURL), {
    messageCallback: cfg.debug ? (msg) => console.log(msg) : () => {},
    errorCallback: (msg) => failures.push(msg),
  });
  if (failures.length > 0) {
    throw new Error(`nnwasm: cannot install ${wheelURL}: ${failures.join("; ")}`);
  }
  log("wheel installed");
  const module = pyodide.pyimport("nnwasm._js_bridge");
  // Looked up once: every attribute access on a PyProxy makes a new proxy.
  const bridge = Object.fromEntries(BRIDGE_FUNCTIONS.map((name) => [name, module[name].copy()]));
  module.destroy();
  const nnwasmVersion = pyodide.runPython("import importlib.metadata as m; m.version('nnwasm')");
  log("nnwasm imported");
  const bootMs = performance.now() - t0;
  return { pyodide, bridge, bootMs, steps, versions: { pyodide: pyodide.version, nnwasm: nnwasmVersion } };
}
