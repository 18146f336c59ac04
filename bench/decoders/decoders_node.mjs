// The Node half of bench/decoders/bench_decoders.py: ONE runtime on ONE model in this process (so that its
// wasm memory is that model's alone, and numThreads, a per-process setting in onnxruntime-web, can
// differ between cells), driven one command a line so that the driver interleaves the cells.
//
//   node bench/decoders/decoders_node.mjs '{"dir": DIR, "model": NAME, "runtime": "ort-web" | "nnwasm",
//                                  "threads": 1 | 2, "dist": DIST_DIR (nnwasm's dist/web)}'
// First line out: {"ready": true, "create_ms", "wasm_bytes"} or {"error": "first line of the error"}.
// stdin:  {"cmd": "gen", "new_tokens": N (default the sidecar's)}   one greedy generation: the sidecar's prompt (PROMPT_LEN tokens, an empty
//                          past), then new_tokens - 1 single-token steps, each feeding back the
//                          previous step's present.* as past_key_values.*
//           -> {"prefill_ms", "decode_ms", "decode_steps", "tokens": [...], "wasm_bytes", "rss_max"}
//                          (a failing step -> {"error": "...", "step": k})
//         {"cmd": "quit"}
// Whisper (an "encoder" role): prefill = the encoder on the seeded 30 s of features + the decoder
// on the 4 prompt tokens with an empty past (decoder and encoder-attention past both length 0).
import { readFileSync, existsSync } from "node:fs";
import { join, dirname } from "node:path";
import { pathToFileURL } from "node:url";
import { createInterface } from "node:readline";
import { watchWasmMemories } from "../wasm_memories.mjs";

const cfg = JSON.parse(process.argv[2]);
const meta = JSON.parse(readFileSync(join(cfg.dir, `${cfg.model}.json`), "utf8"));
const now = () => performance.now();
// the error's first line (and the second when the first only announces it, "...:")
const firstLine = (e) => {
  const msg = String(e?.message ?? e).split("\n").map((l) => l.trim()).filter(Boolean);
  const text = msg.length > 1 && msg[0].endsWith(":") ? msg.slice(0, 2).join(" ") : (msg[0] ?? "");
  return `${e?.name ?? "Error"}: ${text.slice(0, 300)}`;
};

// Every wasm memory made or instantiated in this process (onnxruntime-web's module is internal;
// nnwasm's Pyodide has one and kernels.wasm another): peak wasm memory = their sizes at the end
// (a wasm memory never shrinks).
const memories = [];
// nnwasm's Pyodide instantiates kernels.wasm synchronously (WebAssembly.Instance), its memory its own
watchWasmMemories((m) => memories.push(m), { instances: true });
const wasmBytes = () => [...new Set(memories)].reduce((s, m) => s + m.buffer.byteLength, 0);

const ARRAYS = { float32: Float32Array, float16: Uint16Array, int64: BigInt64Array, int32: Int32Array, bool: Uint8Array, uint8: Uint8Array };

function f16ToF32(h) {
  const s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 0x1f, f = h & 0x3ff;
  if (e === 0) return s * f * 2 ** -24;
  if (e === 31) return f ? NaN : s * Infinity;
  return s * (1 + f / 1024) * 2 ** (e - 15);
}

function argmaxLast(t) {
  const dims = t.dims, v = dims[dims.length - 1], data = t.data;
  const off = data.length - v;
  const get = t.type === "float16" ? (i) => f16ToF32(data[i]) : (i) => data[i];
  let best = 0, bv = -Infinity;
  for (let i = 0; i < v; i++) { const x = get(off + i); if (x > bv) { bv = x; best = i; } }
  return best;
}

async function create() {
  let ort, open;
  const sessions = {};
  if (cfg.runtime === "ort-web") {
    ort = await import("onnxruntime-web");
    ort.env.wasm.numThreads = cfg.threads;
    ort.env.wasm.simd = true;
    open = (file, opts) => ort.InferenceSession.create(file, opts);
  } else if (cfg.runtime === "nnwasm") {
    ort = await import("../../web/nnwasm.mjs");
    if (cfg.dist) ort.env.distURL = pathToFileURL(cfg.dist.endsWith("/") ? cfg.dist : cfg.dist + "/").href;
    if (cfg.threads !== 1) ort.env.wasm.numThreads = cfg.threads;
    open = (file, opts) => ort.InferenceSession.create(file, opts);
  } else throw new Error(`unknown runtime ${cfg.runtime}`);
  for (const [role, r] of Object.entries(meta.roles)) {
    const path = join(cfg.dir, r.file);
    const opts = { executionProviders: ["wasm"], graphOptimizationLevel: "all" };
    // nnwasm keeps the present key/values in its session's memory (fed back by reference), unless
    // "keep": false (an A/B of that); onnxruntime-web's wasm backend has only CPU outputs
    if (cfg.runtime === "nnwasm" && role === "decoder" && cfg.keep !== false) {
      opts.preferredOutputLocation = Object.fromEntries(Object.keys(meta.past_map).map((o) => [o, "wasm"]));
    }
    if (r.external_data?.length) {
      opts.externalData = r.external_data.map((f) => ({ path: f, data: new Uint8Array(readFileSync(join(dirname(path), f))) }));
    }
    sessions[role] = await open(new Uint8Array(readFileSync(path)), opts);
  }
  return { ort, sessions };
}

function emptyOr(i, T) {
  const shape = i.empty ?? i.shape.map((d) => (typeof d === "string" ? (/batch/.test(d) ? 1 : 0) : d));
  const n = shape.reduce((a, b) => a * b, 1);
  return new T(i.dtype, new ARRAYS[i.dtype](n), shape);
}

async function generate({ ort, sessions }, newTokens) {
  const T = ort.Tensor;
  const dec = meta.roles.decoder;
  const i64 = (arr, dims) => new T("int64", BigInt64Array.from(arr, BigInt), dims);
  let encHidden = null;
  const t0 = now();
  if (sessions.encoder) {
    const buf = readFileSync(join(cfg.dir, meta.features.file));
    const feats = new Float32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength));
    const eo = await sessions.encoder.run({ [meta.roles.encoder.inputs[0].name]: new T("float32", feats, meta.features.dims) });
    encHidden = eo.last_hidden_state ?? Object.values(eo)[0];
  }
  const tokens = [...meta.prompt];
  let past = null, seen = 0, prefillMs = 0;
  const steps = newTokens ?? meta.new_tokens;
  let tDecode = 0;
  for (let step = 0; step < steps; step++) {
    if (step === 1) tDecode = now();
    const ids = step === 0 ? tokens.slice() : tokens.slice(-1);
    const feeds = {};
    for (const i of dec.inputs) {
      const n = i.name;
      if (n === "input_ids") feeds[n] = i64(ids, [1, ids.length]);
      else if (n === "attention_mask") feeds[n] = i64(new Array(seen + ids.length).fill(1), [1, seen + ids.length]);
      else if (n === "position_ids") feeds[n] = i64(ids.map((_, k) => seen + k), [1, ids.length]);
      else if (n === "cache_position") feeds[n] = i64(ids.map((_, k) => seen + k), [ids.length]);
      else if (n === "use_cache_branch") feeds[n] = new T("bool", new Uint8Array([step > 0 ? 1 : 0]), [1]);
      else if (n === "encoder_hidden_states") feeds[n] = encHidden;
      else if (i.past) feeds[n] = past ? past[n] : emptyOr(i, T);
      else throw new Error(`no feed for the decoder's input ${n}`);
    }
    let out;
    try {
      out = await sessions.decoder.run(feeds);
    } catch (e) {
      e.step = step;
      throw e;
    }
    // the cross-attention past (Whisper's *.encoder.*) is computed at the first step only: later
    // steps' outputs for it are not the cache (Optimum's merged decoder), so it is kept
    const next = {};
    for (const [o, p] of Object.entries(meta.past_map)) next[p] = past && p.includes(".encoder.") ? past[p] : out[o];
    if (past) for (const t of Object.values(past)) if (!Object.values(next).includes(t)) t.dispose?.();
    past = next;
    seen += ids.length;
    tokens.push(argmaxLast(out.logits));
    for (const [k, t] of Object.entries(out)) if (!Object.values(next).includes(t)) t.dispose?.();
    if (step === 0) prefillMs = now() - t0;
  }
  const decodeMs = now() - tDecode;
  return { prefill_ms: prefillMs, decode_ms: decodeMs, decode_steps: steps - 1, tokens: tokens.slice(meta.prompt.length) };
}

let rt;
try {
  const t = now();
  rt = await create();
  console.log(JSON.stringify({ ready: true, create_ms: now() - t, wasm_bytes: wasmBytes(), node: process.version }));
} catch (e) {
  console.log(JSON.stringify({ error: firstLine(e), node: process.version }));
  process.exit(0);
}

for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const c = JSON.parse(line);
  if (c.cmd === "quit") break;
  let reply;
  try {
    reply = await generate(rt, c.new_tokens);
  } catch (e) {
    reply = { error: firstLine(e), step: e.step };
  }
  reply.wasm_bytes = wasmBytes();
  reply.rss_max = process.resourceUsage().maxRSS * 1024;
  console.log(JSON.stringify(reply));
}
process.exit(0);
