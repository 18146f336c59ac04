// The generative model zoo (build_scripts/build_genzoo.py) through the shim in Node (Pyodide, no
// numpy, so WASM alone): greedy generation with the past fed back, against onnxruntime's tokens
// and logits (the first 8 of each step's last row) saved in each model's sidecar; the generation
// itself is genzoo-generate.mjs, which tests/test_generative.py's page runs too. Driven by
// tests/test_generative.py (NNWASM_GENZOO_SPEC: {dir, models, record?}); without it this file
// registers no test. With "record" (a folder), each model's run is written there as NAME.json:
// every step's feeds and outputs, for the test process to rerun on onnxruntime
// (tests/genzoo_check.py). Each model prints "gen-result NAME STATUS DETAIL" (ok, NotImplementedOp, or a failure)
// and "gen-time NAME MS" (the median decode step after the first).
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { env, InferenceSession, Tensor } from "../../web/nnwasm.mjs";
import { argmaxLast, generate, medianDecodeMs, packTensors } from "./genzoo-generate.mjs";

const specPath = process.env.NNWASM_GENZOO_SPEC;
const spec = specPath ? JSON.parse(readFileSync(specPath, "utf8")) : null;
if (process.env.NNWASM_DIST_URL) env.distURL = process.env.NNWASM_DIST_URL;

const loadBytes = async (file) => {
  const buf = readFileSync(join(spec.dir, file));
  return buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength);
};

for (const name of spec?.models ?? []) {
  test(`genzoo ${name} on WASM matches onnxruntime`, async () => {
    const meta = JSON.parse(readFileSync(join(spec.dir, `${name}.json`), "utf8"));
    const sessions = {};
    try {
      for (const [role, r] of Object.entries(meta.roles))
        sessions[role] = await InferenceSession.create(join(spec.dir, r.file), { executionProviders: ["wasm"] });
      const times = [], record = { steps: [] };
      const onStep = (step, ms, feeds, outs) => {
        times.push(ms);
        if (spec.record) record.steps.push({ feeds: packTensors(feeds), outputs: packTensors(outs) });
        const ref = meta.reference.steps[step].logits_head, { head } = argmaxLast(outs.logits);
        const scale = Math.max(1, ...ref.map(Math.abs));
        const [atol, rtol] = outs.logits.type === "float16" ? [5e-3, 1e-2] : [1e-4, 1e-3]; // float16: its rounding
        head.forEach((v, j) => {
          if (!(Math.abs(v - ref[j]) <= atol * scale + rtol * Math.abs(ref[j])))
            throw Object.assign(new Error(`step ${step} logit ${j}: ${v} vs onnxruntime's ${ref[j]}`), { name: "Mismatch" });
        });
      };
      const onEncoder = (feeds, outs) => {
        record.encoder = { feeds: packTensors(feeds), outputs: packTensors(outs) };
      };
      const got = await generate(meta, sessions, { Tensor, loadBytes, onEncoder, onStep });
      if (spec.record) writeFileSync(join(spec.record, `${name}.json`), JSON.stringify({ ...record, tokens: got }));
      assert.deepEqual(got, meta.reference.tokens);
      console.log(`gen-time ${name} ${medianDecodeMs(times).toFixed(2)}`);
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
