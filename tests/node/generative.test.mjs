// The generative model zoo (build_scripts/build_genzoo.py) through the shim in Node (Pyodide, no
// numpy, so WASM alone): greedy generation with the past fed back, against onnxruntime's tokens
// and logits (the first 8 of each step's last row) saved in each model's sidecar. Driven by
// tests/test_generative.py (NNWASM_GENZOO_SPEC: {dir, models}); without it this file registers no
// test. Each model prints "gen-result NAME STATUS DETAIL" (ok, NotImplementedOp, or a failure)
// and "gen-time NAME MS" (the median decode step after the first).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { env, InferenceSession, Tensor } from "../../web/nnwasm.mjs";

const specPath = process.env.NNWASM_GENZOO_SPEC;
const spec = specPath ? JSON.parse(readFileSync(specPath, "utf8")) : null;
if (process.env.NNWASM_DIST_URL) env.distURL = process.env.NNWASM_DIST_URL;

const ARRAYS = { float32: Float32Array, int64: BigInt64Array, int32: Int32Array, bool: Uint8Array };

function readTensor(dir, t) {
  const buf = readFileSync(join(dir, t.file));
  const bytes = new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength).slice();
  return new Tensor(t.dtype, new ARRAYS[t.dtype](bytes.buffer), t.dims);
}

const ids = (v) => new Tensor("int64", BigInt64Array.from(v, BigInt), [1, v.length]);

function argmaxLast(logits) {
  const [, s, v] = logits.dims, off = (s - 1) * v;
  let k = 0;
  for (let j = 1; j < v; j++) if (logits.data[off + j] > logits.data[off + k]) k = j;
  return { k, head: Array.from(logits.data.subarray(off, off + 8)) };
}

/** build_genzoo.generate, feed for feed. */
async function generate(meta, sessions, onStep) {
  const dec = meta.roles.decoder, dims = { batch_size: 1, batch: 1, ...meta.dims };
  let tokens, encHidden, efeeds;
  if (meta.roles.encoder) {
    efeeds = Object.fromEntries(Object.entries(meta.encoder_inputs).map(([n, t]) => [n, readTensor(spec.dir, t)]));
    encHidden = (await sessions.encoder.run(efeeds)).last_hidden_state;
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
        if (past === null) {
          const shape = i.shape.map((d) => (typeof d === "string" ? dims[d] ?? 0 : d));
          feeds[n] = new Tensor(i.dtype, new ARRAYS[i.dtype](0), shape);
        } else feeds[n] = past[n];
      } else throw new Error(`no feed for the decoder's input ${n}`);
    }
    const t0 = performance.now();
    const outs = await sessions.decoder.run(feeds);
    onStep(step, performance.now() - t0, outs);
    const next = {};
    for (const [o, p] of Object.entries(meta.past_map))
      next[p] = past !== null && p.includes(".encoder.") ? past[p] : outs[o];
    past = next;
    seen += cur.length;
    const { k } = argmaxLast(outs.logits);
    tokens.push(k);
    out.push(k);
  }
  return out;
}

for (const name of spec?.models ?? []) {
  test(`genzoo ${name} on WASM matches onnxruntime`, async () => {
    const meta = JSON.parse(readFileSync(join(spec.dir, `${name}.json`), "utf8"));
    const sessions = {};
    try {
      for (const [role, r] of Object.entries(meta.roles))
        sessions[role] = await InferenceSession.create(join(spec.dir, r.file), { executionProviders: ["wasm"] });
      const times = [];
      const got = await generate(meta, sessions, (step, ms, outs) => {
        times.push(ms);
        const ref = meta.reference.steps[step].logits_head, { head } = argmaxLast(outs.logits);
        const scale = Math.max(1, ...ref.map(Math.abs));
        head.forEach((v, j) => {
          if (!(Math.abs(v - ref[j]) <= 1e-4 * scale + 1e-3 * Math.abs(ref[j])))
            throw Object.assign(new Error(`step ${step} logit ${j}: ${v} vs onnxruntime's ${ref[j]}`), { name: "Mismatch" });
        });
      });
      assert.deepEqual(got, meta.reference.tokens);
      const later = times.slice(1).sort((a, b) => a - b);
      console.log(`gen-time ${name} ${later[later.length >> 1].toFixed(2)}`);
      console.log(`gen-result ${name} ok`);
    } catch (e) {
      console.log(`gen-result ${name} ${e.name} ${String(e.message).split("\n").slice(0, 3).join(" | ")}`);
      if (e.name !== "NotImplementedOp") throw e;
    } finally {
      for (const s of Object.values(sessions)) await s.release();
    }
  });
}
assert.ok(!specPath || spec.models.length > 0, "NNWASM_GENZOO_SPEC lists no models");
