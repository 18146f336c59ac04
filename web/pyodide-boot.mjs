// Starting the Python side once per page or process: Pyodide from our own copy (never a CDN),
// then the nnwasm wheel, then the bridge module the sessions call. Start-up order:
//   resolveEnv -> fetch manifest, then wheel + snapshot (in parallel with the rest)
//   -> import pyodide.mjs -> loadPyodide (from the memory snapshot when there is one: Python
//   already started with nnwasm imported; else from scratch) -> the wheel's bytes written to
//   WHEEL_PATH (snapshot) or unpacked -> import nnwasm._js_bridge (already done in a snapshot)
// docs/startup.md has the time each step takes.
import { env, resolveEnv } from "./env.mjs";
import { requestedFlavour } from "./flavours.mjs";
import { createThreadedKernels, resolveNumThreads } from "./threads.mjs";
import { IN_NODE, loadBytes, nodePath } from "./load-bytes.mjs";

const BRIDGE_FUNCTIONS = ["create_session", "run", "release", "take_error"];
// Where the wheel sits in Pyodide's file system, on sys.path, after a snapshot boot
// (build_scripts/pyodide_snapshot.mjs puts it there).
export const WHEEL_PATH = "/lib/nnwasm.whl";
// What loadPyodide reads from indexURL. A missing one makes it fail outside any promise we can
// catch (Node: an unhandled rejection that ends the process) or wait forever (a browser's 404),
// so boot checks them (in Node first, in browsers alongside) and says which are missing.
const PYODIDE_FILES = ["pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json"];
const CHECK_DELAY_MS = 2000; // browsers: how long loadPyodide runs before its files are checked

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

/** The manifest build_web.py writes: {wheelURL, snapshotURL (null if it names none)}. */
async function readManifest(manifestURL) {
  let manifest;
  try {
    manifest = JSON.parse(new TextDecoder().decode(await loadBytes(manifestURL)));
  } catch (e) {
    throw new Error(`nnwasm: cannot read ${manifestURL} (run \`python build_scripts/build_web.py\`, ` +
                    `or set env.distURL / env.wheelURL): ${e.message}`, { cause: e });
  }
  if (typeof manifest.wheel !== "string") throw new Error(`nnwasm: ${manifestURL} names no wheel`);
  const snapshot = manifest.pyodideSnapshot;
  return {
    wheelURL: new URL(manifest.wheel, manifestURL).href,
    snapshotURL: typeof snapshot === "string" ? new URL(snapshot, manifestURL).href : null,
    snapshotWheelSha256: manifest.pyodideSnapshotWheelSha256,
  };
}

async function sha256Hex(bytes) {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The gunzipped memory snapshot at url (a Uint8Array); streamed through the decompressor
 * while it downloads, in the browser. */
async function loadSnapshot(url) {
  if (IN_NODE && url.startsWith("file:")) {
    const { gunzipSync } = await import("node:zlib");
    return new Uint8Array(gunzipSync(await loadBytes(url)));
  }
  const response = await fetch(url);
  if (!response.ok) throw new Error(`cannot fetch ${url}: HTTP ${response.status}`);
  const stream = response.body.pipeThrough(new DecompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

// Pyodide wants file system paths in Node and URLs in the browser.
async function forPyodide(url) {
  return IN_NODE && url.startsWith("file:") ? nodePath(url) : url;
}

/** Imports pyodide.mjs and starts Python: from the snapshot when there is one (falling back to
 * starting from scratch if it can't be used), else from scratch. Resolves to {pyodide, fromSnapshot}. */
async function startPython(cfg, snapshotURL, snapshot, log) {
  let loadPyodide;
  try {
    ({ loadPyodide } = await import(new URL("pyodide.mjs", cfg.pyodideIndexURL).href));
  } catch (e) {
    throw new Error(`nnwasm: cannot load Pyodide from ${cfg.pyodideIndexURL}: ${e.message}`, { cause: e });
  }
  log("pyodide.mjs imported");
  let indexURL = await forPyodide(cfg.pyodideIndexURL);
  if (IN_NODE && !indexURL.endsWith("/")) indexURL += "/";
  const options = {
    indexURL,
    packageBaseUrl: indexURL, // also where Pyodide's loader would go instead of its CDN
    stdout: cfg.debug ? (line) => console.log(line) : () => {},
    stderr: (line) => console.warn(line),
  };
  if (await snapshotURL) {
    // Pyodide awaits the snapshot only once its own files are in, so they all download together.
    try {
      const pyodide = await loadPyodide({ ...options, _loadSnapshot: snapshot });
      log("loadPyodide resolved (from the snapshot)");
      return { pyodide, fromSnapshot: true };
    } catch (e) {
      // A snapshot that can't be had or doesn't fit this Pyodide build: start Python from scratch.
      log(`snapshot not used (${e.message.split("\n")[0]})`);
    }
  }
  const pyodide = await loadPyodide(options);
  log("loadPyodide resolved");
  return { pyodide, fromSnapshot: false };
}

async function bootOnce() {
  const t0 = performance.now();
  const cfg = resolveEnv();
  const steps = {}; // step -> ms since this realm's time origin when it ended (for bench/startup/boot_breakdown.py)
  const log = (msg) => {
    steps[msg] = performance.now();
    if (cfg.debug) console.log(`nnwasm: ${msg} (${(performance.now() - t0).toFixed(0)} ms)`);
  };
  log("boot started");
  // Everything boot() downloads starts now, alongside Pyodide's own files: the manifest, then the
  // wheel (as bytes, installed once Python runs) and the memory snapshot. The snapshot comes only
  // with the manifest's own wheel (it holds that nnwasm, imported). No-op catches keep a failure
  // from being reported as unhandled before it is awaited below.
  const manifest = cfg.wheelURL ? Promise.resolve({ wheelURL: cfg.wheelURL, snapshotURL: null }) : readManifest(cfg.manifestURL);
  const wheel = manifest.then(async ({ wheelURL }) => {
    try {
      const bytes = await loadBytes(wheelURL);
      log("wheel downloaded");
      return bytes;
    } catch (e) {
      throw new Error(`nnwasm: cannot install ${wheelURL}: ${e.message}`, { cause: e });
    }
  });
  const snapshotURL = cfg.pyodideSnapshot ? manifest.then((m) => m.snapshotURL, () => null) : Promise.resolve(null);
  // The snapshot holds the modules of the wheel it was made with: any other wheel and it is refused.
  const snapshot = snapshotURL.then(async (url) => {
    if (!url) return null;
    const [bytes, wheelSha256] = await Promise.all([loadSnapshot(url), wheel.then(sha256Hex)]);
    const { snapshotWheelSha256 } = await manifest;
    if (wheelSha256 !== snapshotWheelSha256) throw new Error("the snapshot was made from another wheel");
    log("snapshot downloaded and gunzipped");
    return bytes;
  });
  for (const p of [manifest, wheel, snapshot]) p.catch(() => {});

  // Node: a missing file would end the process from inside loadPyodide, so the check (a few
  // fs.access calls) comes first. Browsers: a missing file makes loadPyodide wait forever, so the
  // check (HEAD requests) runs alongside it and rejects the boot naming the missing files; it
  // waits CHECK_DELAY_MS first, not to take the browser's few connections from the downloads.
  let booted = false;
  const checked = IN_NODE ? checkPyodideFiles(cfg.pyodideIndexURL)
    : new Promise((resolve) => setTimeout(resolve, CHECK_DELAY_MS)).then(() => booted || checkPyodideFiles(cfg.pyodideIndexURL));
  if (IN_NODE) {
    await checked;
    log("Pyodide's files checked");
  } else {
    checked.catch(() => {});
  }
  const python = startPython(cfg, snapshotURL, snapshot, log);
  python.catch(() => {});
  let pyodide, fromSnapshot;
  try {
    // A manifest or wheel that can't be had fails the boot at once, not after Python started.
    ({ pyodide, fromSnapshot } = await Promise.race([python, checked.then(() => python), wheel.then(() => python)]));
  } catch (e) {
    await checked; // missing files explain a failure best
    throw e;
  } finally {
    booted = true;
  }

  const wheelURL = (await manifest).wheelURL;
  // After a snapshot the wheel goes on sys.path as it is, at the path and with the bytes the
  // snapshot was made with, so its imported modules and zipimport's index of the file stay true:
  // one file written, where unpacking took 200-400 ms of Python not yet warmed up by the JIT.
  // From scratch, it is unpacked into site-packages: its modules then import ~150 ms faster
  // than through zipimport.
  try {
    if (fromSnapshot) {
      pyodide.FS.writeFile(WHEEL_PATH, await wheel);
      // The snapshot's Python was seeded when it was made: give this one its own random state.
      pyodide.runPython("import random\nrandom.seed()");
    } else {
      pyodide.unpackArchive(await wheel, "wheel");
    }
  } catch (e) {
    throw new Error(`nnwasm: cannot install ${wheelURL}: ${e.message}`, { cause: e });
  }
  log("wheel installed");
  // the kernels.wasm flavour env.wasm asks for, read by nnwasm.host.flavours (Python resolves it
  // with the same probe)
  pyodide.runPython(`import os\nos.environ["NNWASM_KERNELS_FLAVOUR"] = "${requestedFlavour(env.wasm)}"`);
  // env.wasm.numThreads > 1 (threads.mjs): the Python sessions' WASM nodes run on their flavour's
  // +threads build (kernels-relaxed-threads.wasm or kernels-threads.wasm)
  // with the realm's JS thread pool (host/pyodide_host.py asks for it at the first session)
  const threads = resolveNumThreads(env.wasm);
  if (threads > 1) {
    pyodide.registerJsModule("nnwasm_js_threads", { threads, create: (bytes) => createThreadedKernels(bytes, threads) });
  }
  const module = pyodide.pyimport("nnwasm._js_bridge");
  // Looked up once: every attribute access on a PyProxy makes a new proxy.
  const bridge = Object.fromEntries(BRIDGE_FUNCTIONS.map((name) => [name, module[name].copy()]));
  module.destroy();
  const nnwasmVersion = pyodide.runPython("import nnwasm; nnwasm.__version__");
  log("nnwasm imported");
  const bootMs = performance.now() - t0;
  return { pyodide, bridge, bootMs, steps, versions: { pyodide: pyodide.version, nnwasm: nnwasmVersion } };
}
