// The genzoo's greedy generation (build_scripts/build_genzoo.py's `generate`, feed for feed) on
// onnxruntime's JS API. Plain ES module (no Node API): tests/node/generative.test.mjs runs it in
// Node, tests/test_generative.py's page in Chromium, each through web/nnwasm.mjs on WASM alone.

export const ARRAYS = { float32: Float32Array, int64: BigInt64Array, int32: Int32Array, bool: Uint8Array,
  float16: Uint16Array }; // float16: raw half bits, as onnxruntime-web keeps them

/** A half's bits -> its value (the fp16 models' logits). */
function halfValue(h) {
  const e = (h >> 10) & 31, m = h & 1023, s = h & 0x8000 ? -1 : 1;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (e ? (1 + m / 1024) * 2 ** (e - 15) : m * 2 ** -24);
}

/** The greedy token of the last row of logits [1, S, V], and that row's first 8 values. */
export function argmaxLast(logits) {
  const [, s, v] = logits.dims, off = (s - 1) * v;
  const row = logits.type === "float16" ? Array.from(logits.data.subarray(off, off + v), halfValue)
    : logits.data.subarray(off, off + v);
  let k = 0;
  for (let j = 1; j < v; j++) if (row[j] > row[k]) k = j;
  return { k, head: Array.from(row.slice(0, 8)) };
}

/** A Tensor from raw little-endian bytes (an ArrayBuffer) and a sidecar entry {dtype, dims}. */
export function tensorFromBytes(Tensor, buffer, t) {
  return new Tensor(t.dtype, new ARRAYS[t.dtype](buffer), t.dims);
}

/**
 * Greedy generation with the past fed back; returns the new token ids.
 *   meta        the model's sidecar (NAME.json)
 *   sessions    {decoder, encoder?}: InferenceSessions
 *   Tensor      the runtime's Tensor class
 *   loadBytes   async (file relative to the genzoo) -> ArrayBuffer (the encoder's saved feeds)
 *   onEncoder   (feeds, outputs) after the encoder's run, if any
 *   onStep      (step, ms, feeds, outputs) after every decoder step (awaited)
 *   dispose     dispose() each step's outputs and past the next step does not take (tensors kept
 *               in the session's memory, preferredOutputLocation "wasm", as transformers.js does)
 */
export async function generate(meta, sessions, { Tensor, loadBytes, onEncoder = () => {}, onStep = () => {}, dispose = false }) {
  const dec = meta.roles.decoder, dims = { batch_size: 1, batch: 1, ...meta.dims };
  const ids = (v) => new Tensor("int64", BigInt64Array.from(v, BigInt), [1, v.length]);
  let tokens, encHidden, efeeds;
  if (meta.roles.encoder) {
    efeeds = {};
    for (const [n, t] of Object.entries(meta.encoder_inputs))
      efeeds[n] = tensorFromBytes(Tensor, await loadBytes(t.file), t);
    const eouts = await sessions.encoder.run(efeeds);
    onEncoder(efeeds, eouts);
    encHidden = eouts.last_hidden_state;
    tokens = [meta.decoder_start_token_id];
  } else tokens = [...meta.prompt];
  let past = null, seen = 0;
  const out = [];
  for (let step = 0; step < meta.steps; step++) {
    const cur = step === 0 ? tokens : tokens.slice(-1);
    const feeds = {};
    for (const i of dec.inputs) {
      const n = i.name;
      if (n === "input_ids") feeds[n] = ids(cur);
      else if (n === "attention_mask") feeds[n] = ids(new Array(seen + cur.length).fill(1));
      else if (n === "position_ids") feeds[n] = ids(cur.map((_, j) => seen + j));
      else if (n === "use_cache_branch") feeds[n] = new Tensor("bool", Uint8Array.of(step > 0 ? 1 : 0), [1]);
      else if (n === "encoder_hidden_states") feeds[n] = encHidden;
      else if (n === "encoder_attention_mask") feeds[n] = efeeds.attention_mask;
      else if (i.past) {
        if (past === null) { // step 0: an empty past (length 0), as transformers.js feeds
          const shape = i.shape.map((d) => (typeof d === "string" ? dims[d] ?? 0 : d));
          feeds[n] = new Tensor(i.dtype, new ARRAYS[i.dtype](0), shape);
        } else feeds[n] = past[n];
      } else throw new Error(`no feed for the decoder's input ${n}`);
    }
    const t0 = performance.now();
    const outs = await sessions.decoder.run(feeds);
    await onStep(step, performance.now() - t0, feeds, outs);
    // the cross-attention past (".encoder.") is computed at step 0 only (a merged decoder's
    // cache branch outputs a dummy there, which Optimum and transformers.js ignore)
    const next = {};
    for (const [o, p] of Object.entries(meta.past_map))
      next[p] = past !== null && p.includes(".encoder.") ? past[p] : outs[o];
    if (dispose) {
      const keep = new Set(Object.values(next));
      for (const t of [...Object.values(outs), ...Object.values(past ?? {})]) if (!keep.has(t)) t.dispose();
    }
    past = next;
    seen += cur.length;
    const { k } = argmaxLast(outs.logits);
    tokens.push(k);
    out.push(k);
  }
  return out;
}

/** Tensors as JSON for the test process to check with onnxruntime: {name: {type, dims, b64}},
 * b64 being the tensor's bytes (little-endian, as in memory) in base64 (tests/genzoo_check.py). */
export function packTensors(tensors) {
  const b64 = (t) => {
    const u8 = new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength);
    let s = "";
    for (let i = 0; i < u8.length; i += 0x8000) s += String.fromCharCode.apply(null, u8.subarray(i, i + 0x8000));
    return btoa(s);
  };
  return Object.fromEntries(Object.entries(tensors).map(([n, t]) => [n, { type: t.type, dims: [...t.dims], b64: b64(t) }]));
}

/** The median of the decode steps' times after the first (the prompt's). */
export function medianDecodeMs(times) {
  const later = times.slice(1).sort((a, b) => a - b);
  return later[later.length >> 1];
}
