// Sessions over a .nnwp plan file, without Python: kernels.wasm instantiated with the JS
// WebAssembly API alone, once per realm, and one plan + arena in its memory per session. Same
// calling conventions as py_runtime/nnwasm/host/ and wasm/runner.py (whose STATUS table this
// mirrors); feeds are checked with the Python session's wording, so errors read the same.
import { env, resolveKernelsURL } from "./env.mjs";
import { FLAVOUR_FILES, flavourURL, threadsFlavour } from "./flavours.mjs";
import { loadBytes, toURL } from "./load-bytes.mjs";
import { parsePlanFile, weightsLayout } from "./plan-file.mjs";
import { Trace } from "./profiling.mjs";
import { resolveNumThreads, sharedMemory, ThreadPool } from "./threads.mjs";
import { Tensor, typedArrayFor } from "./tensor.mjs";

const STATUS = {
  1: "bad magic", 2: "bad version", 3: "truncated plan", 4: "unknown opcode", 5: "bad op arguments",
  6: "tensor outside the arena", 7: "out of memory", 8: "index out of range",
};
const BAD_INDEX = 8; // a run-time status: the input data was at fault, the session stays usable
const WASM = "WasmExecutionProvider";

// onnxruntime's element names, for "tensor(float)" in messages (dtypes.py's ort_name).
const ORT_NAMES = {
  float32: "float", uint8: "uint8", int8: "int8", uint16: "uint16", int16: "int16", int32: "int32",
  int64: "int64", string: "string", bool: "bool", float16: "float16", float64: "double",
  uint32: "uint32", uint64: "uint64",
};

function nnwasmError(name, message) {
  const error = new Error(message);
  error.name = name;
  return error;
}

// Python's repr of a list of names or ints, as CPython's nnwasm prints them.
const pyList = (items) => `[${items.map((v) => (typeof v === "string" ? `'${v}'` : String(v))).join(", ")}]`;

let kernels = null; // promise of the realm's one kernels.wasm instance

/** The realm's kernels.wasm: {exports, url, compileMs, flavour, pool}. Compiled and instantiated once, in
 * the flavour env.wasm asks for (flavours.mjs: "relaxed" where the engine has relaxed SIMD, else
 * "simd"; "custom" for a wasmPaths file not named kernels.wasm); a failure is forgotten so a later
 * call (say, after fixing env.wasm.wasmPaths) tries again. */
export function loadKernels(urls = resolveKernelsURL()) {
  kernels ??= instantiateKernels(urls).catch((e) => {
    kernels = null;
    throw e;
  });
  return kernels;
}

// The warm-up. V8 runs wasm code first as its baseline tier (Liftoff) and compiles a function
// with its optimizing tier (TurboFan, in the background) only once it has run for a while; a call
// never changes tier midway. So a plan's first run is baseline code throughout, 3-5x slower than
// the next. While a plan file downloads, the warm-up runs a tiny plan with the kernels and shapes
// of EfficientNet-style models (kernels-warmup.nnwp next to kernels.wasm, build_scripts/
// warmup_plan.py) a few times on its own arena, yielding to the page between runs, so that the
// real plan's first run finds optimized code. It stops at the first real run (a warm-up run takes
// a few ms), touches no session's memory, and without its file there is just no warm-up.
export const WARMUP_FILE = "kernels-warmup.nnwp";
const WARMUP_RUNS = 4;
let warmUpDone = null; // promise of the realm's one warm-up: the number of runs it made
let warming = null; // {stop} while the warm-up goes on

/** Starts the realm's warm-up, once, unless env.wasm.warmUp is false (inference-session.mjs calls
 * it when a plan file arrives in pieces). Resolves to the number of warm-up runs made. */
export function warmUpKernels() {
  if (warmUpDone === null && (env.wasm?.warmUp ?? true)) {
    const state = { stop: false };
    warming = state;
    warmUpDone = loadKernels().then((k) => warmUp(k, state)).catch(() => 0).finally(() => {
      if (warming === state) warming = null;
    });
  }
  return warmUpDone ?? Promise.resolve(0);
}

async function warmUp(k, state) {
  const parsed = parsePlanFile(await loadBytes(new URL(WARMUP_FILE, toURL(k.url))));
  if (state.stop || !acceptsVersion(k.exports, parsed.abiVersion)) return 0;
  const session = new PlanSession(k.exports, parsed, {});
  let runs = 0;
  try {
    for (const v of session.inputs) new Uint8Array(k.exports.memory.buffer, session.arena + v.offset, v.nbytes).fill(0);
    for (; runs < WARMUP_RUNS && !state.stop; runs++) {
      k.exports.nnw_plan_run(session.plan, session.arena); // zeros in, nothing read out
      await new Promise((resolve) => setTimeout(resolve));
    }
  } finally {
    session.release();
  }
  return runs;
}

async function instantiateKernels(simdCandidates, forceThreads = undefined) {
  const t0 = performance.now();
  let source = null, url = null, flavour = null;
  const failures = [];
  // env.wasm.numThreads > 1 (threads.mjs) takes the flavour's build with atomics: kernels-relaxed-
  // threads.wasm where relaxed SIMD validates (and env.wasm.relaxedSimd is not false), else
  // kernels-threads.wasm; each falls back to the next file it finds: relaxed+threads, simd+threads, simd
  const threads = forceThreads ?? resolveNumThreads(env.wasm);
  const want = threadsFlavour(env.wasm, threads);
  const chain = want === "simd" ? ["simd"] : want === "relaxed+threads" ? [want, "simd+threads", "simd"] : [want, "simd"];
  const candidates = chain.flatMap((f) => simdCandidates.map((c) => ({ url: f === "simd" ? toURL(c).href : flavourURL(toURL(c).href, f), flavour: f })));
  for (const candidate of candidates) {
    try {
      source = await kernelsSource(candidate.url);
      url = candidate.url;
      const ours = /\/kernels(-relaxed|-threads|-relaxed-threads)?\.wasm$/.test(new URL(url).pathname); // else a wasmPaths file of the user's
      flavour = ours ? candidate.flavour : "custom";
      break;
    } catch (e) {
      failures.push(e.message);
    }
  }
  if (want.endsWith("+threads") && flavour !== want && source !== null) {
    console.warn(`nnwasm: no ${FLAVOUR_FILES[want]} next to kernels.wasm (${failures[0]}); ` +
                 (flavour === "simd+threads" ? "running 'simd+threads'" : "running on 1 thread"));
  }
  if (source === null) {
    throw new Error(`nnwasm: cannot load kernels.wasm (${failures.join("; ")}); run ` +
                    "`python build_scripts/build_web.py`, or set env.wasm.wasmPaths");
  }
  if (flavour.endsWith("+threads")) {
    const threaded = await instantiateThreaded(source, url, threads);
    if (threaded !== null) return { ...threaded, url, flavour, compileMs: performance.now() - t0 };
    return instantiateKernels(simdCandidates.map((c) => toURL(c).href), 1);
  }
  // kernels.wasm imports nothing; an Emscripten build of old imported this one (a no-op here).
  const imports = { env: { emscripten_notify_memory_growth: () => {} } };
  const { instance } = source instanceof Response
    ? await WebAssembly.instantiateStreaming(source, imports)
    : await WebAssembly.instantiate(source, imports);
  const exports = instance.exports;
  for (const name of ["memory", "nnw_malloc", "nnw_free", "nnw_plan_load", "nnw_plan_run", "nnw_plan_run_ops",
                      "nnw_plan_failed_op"]) {
    if (!(name in exports)) throw new Error(`nnwasm: ${url} is not kernels.wasm: it exports no ${name}`);
  }
  exports._initialize?.();
  return { exports, url, flavour, compileMs: performance.now() - t0, pool: null };
}

/** kernels-threads.wasm on a new shared memory, with its ThreadPool (helpers not started yet), or
 * null with one warning when the memory can't be shared or the module refuses it. */
async function instantiateThreaded(source, url, threads) {
  let module, memory, instance;
  try {
    module = source instanceof Response ? await WebAssembly.compileStreaming(source) : await WebAssembly.compile(source);
    memory = sharedMemory();
    instance = await WebAssembly.instantiate(module, { env: { memory } });
  } catch (e) {
    console.warn(`nnwasm: no thread pool (${e.name}: ${e.message}); running on 1 thread`);
    return null;
  }
  const exports = { ...instance.exports, memory };
  for (const name of ["nnw_malloc", "nnw_plan_load", "nnw_plan_run", "nnw_pool_prepare", "nnw_pool_fault"]) {
    if (!(name in exports)) throw new Error(`nnwasm: ${url} is not kernels-threads.wasm: it exports no ${name}`);
  }
  exports._initialize?.();
  const pool = new ThreadPool({ exports, memory, module }, threads);
  pool.startEarly(); // while the plan downloads: ready by its first run if it can be
  return { exports, pool };
}

/** A fetch Response to compile while it downloads (served as application/wasm, which
 * instantiateStreaming requires), else the file's bytes. */
async function kernelsSource(candidate) {
  const url = toURL(candidate);
  if (url.protocol === "file:" || typeof WebAssembly.instantiateStreaming !== "function") return loadBytes(url);
  let response;
  try {
    response = await fetch(url);
  } catch (e) {
    throw new Error(`cannot fetch ${url.href}: ${e.message}`, { cause: e });
  }
  if (!response.ok) throw new Error(`cannot fetch ${url.href}: HTTP ${response.status} ${response.statusText}`);
  if (response.headers.get("content-type")?.split(";")[0].trim() === "application/wasm") return response;
  return new Uint8Array(await response.arrayBuffer());
}

/** Whether the loaded kernels.wasm takes plans of this version: nnw_plan_load on an empty plan
 * (header only, no ops, no arena) says bad version (2) or not. */
function acceptsVersion(k, version) {
  const empty = new Uint32Array([0x50574e4e, version, 0, 0, 32, 0, 0, 0]);
  const p = k.nnw_malloc(empty.byteLength) >>> 0;
  if (!p) throw new Error("nnwasm: kernels.wasm is out of memory");
  try {
    new Uint8Array(k.memory.buffer, p, empty.byteLength).set(new Uint8Array(empty.buffer));
    return k.nnw_plan_load(p, empty.byteLength, 0, 0, 0) !== 2;
  } finally {
    k.nnw_free(p);
  }
}

function malloc(k, n) {
  const p = k.nnw_malloc(Math.max(n, 1)) >>> 0; // an i32 result: addresses past 2 GB read negative
  if (!p) {  // memory.grow failed: the engine's, the page's or the process's limit
    throw nnwasmError("WasmOutOfMemory", `kernels.wasm is out of memory allocating ${n} bytes (its linear memory could ` +
                      "not grow: the engine's, the page's or the process's limit)");
  }
  return p;
}

export class PlanSession {
  #trace = null; // the profile being recorded (profiling.mjs), or null

  /** Loads kernels.wasm if needed (from kernelsURLs, the first that loads), checks the file,
   * loads the plan. options.enableProfiling starts profiling before all that; options.contentCrc:
   * see parsePlanFile. options.received: a PlanReceiver's finish() with the weights in place
   * (fileBytes is then its prefix); the session takes its block (freed on failure too). */
  static async create(fileBytes, kernelsURLs = undefined, options = {}) {
    const trace = options.enableProfiling ? new Trace() : null;
    const t0 = performance.now();
    const received = options.received ?? null;
    // refuses a bad file before kernels.wasm is even fetched
    let parsed;
    try {
      parsed = parsePlanFile(fileBytes, received?.crc ?? options.contentCrc ?? null, received?.totalLength ?? null);
    } catch (e) {
      if (received) (await loadKernels(kernelsURLs)).exports.nnw_free(received.block);
      throw e;
    }
    trace?.session("model_loading_array", t0);
    const t1 = performance.now();
    const { exports, compileMs, flavour, pool } = await loadKernels(kernelsURLs);
    if (received) parsed.received = received;
    if (!acceptsVersion(exports, parsed.abiVersion)) {
      if (received) exports.nnw_free(received.block);
      throw nnwasmError("InvalidModel", `nnwasm: not a valid .nnwp plan file: abi_version ${parsed.abiVersion} ` +
                        "is not the loaded kernels.wasm's plan version (recompile the model with this nnwasm)");
    }
    const session = new PlanSession(exports, parsed, { bootMs: compileMs, createMs: performance.now() - t0 },
                                     options.memoryLimitBytes ?? null);
    session.kernelsFlavour = flavour; // which kernels.wasm runs it: "simd", "relaxed", "simd+threads", "relaxed+threads" (flavours.mjs)
    session.pool = pool; // the realm's ThreadPool (threads.mjs) or null
    pool?.acquire(); // starts the helpers, not awaited: the first runs may go on one thread
    trace?.session("session_initialization", t1);
    session.#trace = trace;
    return session;
  }

  constructor(k, { io, plan, planBytes, arenaBytes, received = null }, timings, memoryLimitBytes = null) {
    this.k = k;
    this.inputs = io.inputs;
    this.outputs = io.outputs;
    this.inputMetadata = io.inputs.map((v) => ({ name: v.name, isTensor: true, type: v.dtype, shape: v.shape.slice() }));
    this.outputMetadata = io.outputs.map((v) => ({ name: v.name, isTensor: true, type: v.dtype, shape: v.shape.slice() }));
    this.providers = [WASM];
    this.ops = io.ops; // {node, opType, kernel} of each run op
    // one row per ONNX node (a node may lower to several ops), as CPython's get_provider_assignment()
    const nodes = new Map(io.ops.map((op) => [`${op.node}\0${op.opType}`, op]));
    this.providerAssignment = [...nodes.values()].map(({ node, opType }) => ({ node, opType, provider: WASM }));
    this.timings = timings;
    this.model = io.model;
    this.producer = io.producer;
    this.#load(plan, planBytes ?? plan.length, arenaBytes, received, memoryLimitBytes);
  }

  // One block holds the plan's header and ops and, right after them, the arena, placed so that the
  // plan's weights land where nnw_plan_load moves them (its memmove then moves nothing): one copy
  // of 18 MB instead of two, and memory grows once, by the arena, instead of by arena + plan.
  // A header that does not add up gets the whole plan copied as it is, for nnw_plan_load to refuse.
  // `received` (a PlanReceiver's): the block is allocated and holds the weights already, and
  // `plan` is the plan up to its weights (planLength is the whole plan's).
  // memoryLimitBytes (session.memory_limit_bytes): a plan and arena past it are refused before
  // anything is allocated (a received block is freed).
  #load(plan, planLength, arenaBytes, received, memoryLimitBytes) {
    const k = this.k;
    const { weightsBytes, weightsOffset, opsEnd, sane } = weightsLayout(new DataView(plan.buffer, plan.byteOffset, 32), planLength);
    let statusAt = 0, planBytes;
    this.owned = received ? [received.block] : []; // what release() frees
    try {
      const need = sane ? weightsOffset + arenaBytes : arenaBytes + plan.length;
      if (memoryLimitBytes !== null && need > memoryLimitBytes) {
        throw nnwasmError("MemoryLimitExceeded", `the plan file's plan and arena need ${need} bytes of kernels.wasm ` +
                          `memory, more than the session's memory limit of ${memoryLimitBytes} bytes ` +
                          "(session.memory_limit_bytes)");
      }
      if (received && (!sane || received.blockBytes !== weightsOffset + arenaBytes)) {
        throw nnwasmError("KernelError", "nnwasm: the plan file's weights were placed for another layout"); // a bug, not a file's fault
      }
      if (sane) {
        const block = received ? received.block : malloc(k, weightsOffset + arenaBytes); // 16-aligned (malloc's), so the arena is too
        if (!received) this.owned.push(block);
        [this.plan, this.arena, planBytes] = [block, block + weightsOffset, weightsOffset + weightsBytes];
        new Uint8Array(k.memory.buffer, block, opsEnd).set(plan.subarray(0, opsEnd));
        if (!received) {
          new Uint8Array(k.memory.buffer, this.arena, weightsBytes).set(plan.subarray(weightsOffset, weightsOffset + weightsBytes));
        }
      } else {
        this.arena = malloc(k, arenaBytes);
        this.owned.push(this.arena);
        this.plan = malloc(k, plan.length);
        this.owned.push(this.plan);
        planBytes = plan.length;
        new Uint8Array(k.memory.buffer, this.plan, planBytes).set(plan);
      }
      statusAt = malloc(k, 4);
      const status = k.nnw_plan_load(this.plan, planBytes, this.arena, arenaBytes, statusAt);
      if (status) {
        const bad = new Int32Array(k.memory.buffer, statusAt, 1)[0];
        throw nnwasmError("KernelError", `kernels.wasm refused the plan: ${STATUS[status] ?? status} (op ${bad})`);
      }
    } catch (e) {
      this.release();
      throw e;
    } finally {
      if (statusAt) k.nnw_free(statusAt);
    }
  }

  /** feeds: [name, tensor] pairs; outputNames: names or null for all. Resolves to {name: Tensor}. */
  async run(feeds, outputNames) {
    if (!this.plan) throw nnwasmError("InvalidArgument", "this session was released");
    if (warming) warming.stop = true;
    const given = new Map(feeds);
    const expected = this.inputs.map((v) => v.name);
    const unknown = [...given.keys()].filter((n) => !expected.includes(n));
    if (unknown.length) {
      throw nnwasmError("InvalidArgument", `invalid input name(s) ${pyList(unknown)}; the model's inputs are ${pyList(expected)}`);
    }
    const missing = expected.filter((n) => !given.has(n));
    if (missing.length) {
      throw nnwasmError("InvalidArgument", `required input(s) ${pyList(missing)} are missing from the feed (got ${pyList([...given.keys()])})`);
    }
    const known = this.outputs.map((v) => v.name);
    const names = outputNames === null || outputNames.length === 0 ? known : outputNames;
    const bad = names.filter((n) => !known.includes(n));
    if (bad.length) {
      throw nnwasmError("InvalidArgument", `invalid output name(s) ${pyList(bad)}; the model's outputs are ${pyList(known)}`);
    }
    const data = this.inputs.map((v) => checkFeed(v, given.get(v.name)));

    const k = this.k, trace = this.#trace;
    const t0 = performance.now();
    let memory = new Uint8Array(k.memory.buffer);
    this.inputs.forEach((v, i) => memory.set(data[i], this.arena + v.offset));
    const pool = this.pool;
    pool?.beforeRun();
    let status;
    try {
      status = trace ? this.#runTimed(trace) : k.nnw_plan_run(this.plan, this.arena);
    } catch (e) {
      pool?.afterRun(true); // a trap on this thread: the helpers finish the job first
      throw e;
    }
    pool?.afterRun(false); // throws when a helper trapped during the run
    if (status === BAD_INDEX) {
      const op = this.ops[k.nnw_plan_failed_op()];
      throw nnwasmError("InvalidArgument", `index out of range in ${op ? `${op.opType} node '${op.node}'` : "a node"}: ` +
                        "an index input holds a value outside the indexed axis");
    }
    if (status) throw nnwasmError("KernelError", `kernels.wasm failed running a plan: ${STATUS[status] ?? status}`);
    memory = new Uint8Array(k.memory.buffer); // the run may have grown (and so detached) memory
    const out = {};
    for (const name of names) {
      const v = this.outputs.find((o) => o.name === name);
      const bytes = memory.slice(this.arena + v.offset, this.arena + v.offset + v.nbytes);
      const ctor = typedArrayFor(v.dtype);
      out[name] = new Tensor(v.dtype, new ctor(bytes.buffer), v.shape.slice());
    }
    trace?.session("model_run", t0);
    return out;
  }

  /** nnw_plan_run one op at a time, each call timed on the host's clock (kernels.wasm has none). */
  #runTimed(trace) {
    const k = this.k;
    for (let i = 0; i < this.ops.length; i++) {
      const op = this.ops[i], t0 = performance.now();
      const status = k.nnw_plan_run_ops(this.plan, this.arena, i, 1);
      trace.node(op.node, op.opType, op.kernel, WASM, t0, performance.now());
      if (status) return status;
    }
    return 0;
  }

  /** Starts (or restarts) recording a profile. */
  startProfiling() {
    this.#trace = new Trace();
  }

  /** The events recorded since startProfiling() ([] when not profiling); profiling stops. */
  endProfiling() {
    const events = this.#trace?.events ?? [];
    this.#trace = null;
    return events;
  }

  /** The threads the next run uses (1 until the helpers are ready, and without a pool). */
  get numThreads() {
    return this.pool ? this.pool.active : 1;
  }

  release() {
    if (this.pool) {
      this.pool.release();
      this.pool = null;
    }
    for (const p of this.owned) this.k.nnw_free(p);
    this.owned = [];
    this.plan = this.arena = 0;
  }
}

/** The feed's bytes, after the checks CPython's session makes (same messages). */
function checkFeed(v, tensor) {
  if (!Object.hasOwn(ORT_NAMES, tensor.type)) {
    throw nnwasmError("InvalidArgument", `input '${v.name}': tensor type '${tensor.type}' is not supported by nnwasm`);
  }
  if (tensor.type !== v.dtype) {
    throw nnwasmError("InvalidArgument", `input '${v.name}' has type tensor(${ORT_NAMES[tensor.type]}), expected tensor(${ORT_NAMES[v.dtype]})`);
  }
  const dims = [...tensor.dims].map(Number);
  if (dims.length !== v.shape.length) {
    throw nnwasmError("InvalidArgument", `input '${v.name}' has rank ${dims.length} (shape ${pyList(dims)}), ` +
                      `expected rank ${v.shape.length} (shape ${pyList(v.shape)})`);
  }
  const mismatch = dims.map((d, i) => (d !== v.shape[i] ? i : -1)).filter((i) => i >= 0);
  if (mismatch.length) {
    throw nnwasmError("InvalidArgument", `input '${v.name}' has shape ${pyList(dims)}, expected ${pyList(v.shape)} ` +
                      `(mismatch at dimension ${mismatch.join(", ")})`);
  }
  const data = tensor.data;
  if (!ArrayBuffer.isView(data)) {
    throw new TypeError(`input '${v.name}': a '${tensor.type}' tensor cannot be passed to nnwasm (needs a typed array)`);
  }
  if (data.byteLength === 0 && v.nbytes > 0) { // also a detached buffer, whose views read as empty
    throw nnwasmError("InvalidArgument", `input '${v.name}': tensor of shape ${pyList(dims)} and type ${v.dtype} needs ` +
                      `${v.nbytes} bytes, got 0 (is its ArrayBuffer detached, transferred to a worker?)`);
  }
  const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  if (bytes.length !== v.nbytes) {
    throw nnwasmError("InvalidArgument", `input '${v.name}': tensor of shape ${pyList(dims)} and type ${v.dtype} needs ` +
                      `${v.nbytes} bytes, got ${bytes.length}`);
  }
  return bytes;
}
