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
import { PyodideSession } from "../../web/pyodide-session.mjs";

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

// preferredOutputLocation "wasm" for the present key/values (spec.kept: model names): the cache
// stays in the Python session's memory and goes back as the next past by reference, in this
// thread and through the proxy worker; tokens and logits the same bits as with CPU outputs, the
// last present downloaded by getData() the same bytes, disposed tensors refused as feeds, and
// nothing left kept once the sessions are released.
async function generateWith(meta, where, onStep = () => {}) {
  const sessions = {};
  const present = Object.fromEntries(Object.keys(meta.past_map).map((o) => [o, where]));
  try {
    for (const [role, r] of Object.entries(meta.roles)) {
      sessions[role] = await InferenceSession.create(join(spec.dir, r.file), {
        executionProviders: ["wasm"], ...(role === "decoder" ? { preferredOutputLocation: present } : {}) });
    }
    const heads = [];
    let last = null;
    const tokens = await generate(meta, sessions, { Tensor, loadBytes, dispose: where === "wasm", onStep: async (step, ms, feeds, outs) => {
      heads.push(argmaxLast(outs.logits).head);
      await onStep(step, feeds, outs, sessions.decoder);
      if (step === meta.steps - 1) {
        const name = Object.keys(meta.past_map)[0];
        last = Array.from(outs[name].location === "wasm" ? await outs[name].getData() : outs[name].data);
      }
    } });
    return { tokens, heads, last };
  } finally {
    for (const s of Object.values(sessions)) await s.release();
  }
}

for (const name of spec?.kept ?? []) {
  for (const proxy of [false, true]) {
    test(`genzoo ${name}: present kept in the session's memory${proxy ? " (proxy worker)" : ""}`, async () => {
      const meta = JSON.parse(readFileSync(join(spec.dir, `${name}.json`), "utf8"));
      env.wasm.proxy = proxy;
      try {
        const cpu = await generateWith(meta, "cpu");
        let stale = null;
        const kept = await generateWith(meta, "wasm", async (step, feeds, outs, decoder) => {
          for (const [o, p] of Object.entries(meta.past_map)) {
            assert.equal(outs[o].location, "wasm", `${o} at step ${step}`);
            assert.throws(() => outs[o].data, /not on the CPU/);
            if (step > 0 && !p.includes(".encoder.")) assert.equal(feeds[p].location, "wasm", `${p} at step ${step}`);
          }
          if (step === 1) stale = { ...feeds }; // disposed by the generation after this step
          if (step >= 2 && !proxy) { // from the second decode step, each present is its past's own block
            // grown by the new rows (Optimum's Concat and onnxruntime-genai's GroupQueryAttention alike:
            // wasm/region.py, lower/gqa_inplace.py): no past copied
            const pairs = Object.entries(meta.past_map).filter(([, p]) => !p.includes(".encoder."))
              .map(([o, p]) => [Tensor._keptOf(outs[o]).key, Tensor._keptOf(feeds[p]).key]);
            const { pyodide } = await PyodideSession.boot();
            const moved = pyodide.runPython("from nnwasm import _js_bridge as j\n" +
              `[(a, b) for a, b in ${JSON.stringify(pairs)} if j._kept[a][1].ptr != j._kept[b][1].ptr ` +
              "or j._kept[a][1].shape[2] != j._kept[b][1].shape[2] + 1]").toJs();
            assert.deepEqual(moved, [], `presents not written in their past's block at step ${step}`);
          }
          if (step === 2) {
            await assert.rejects(decoder.run(stale), /disposed/);
            if (!proxy) { // in kernels.wasm's memory (wasm/device.py), not bytes held by Python (empty ones aside)
              const { pyodide } = await PyodideSession.boot();
              const onHost = pyodide.runPython("from nnwasm import _js_bridge; from nnwasm.wasm import device; " +
                "[n for n, (_, t) in _js_bridge._kept.items() if device.nbytes(t) and not isinstance(t, device.WasmTensor)]").toJs();
              assert.deepEqual(onHost, []);
              // grown in place, in blocks with room (wasm/region.py)
              const grown = pyodide.runPython("from nnwasm import _js_bridge; " +
                "sum(1 for _, t in _js_bridge._kept.values() if getattr(t, 'cap', None))");
              assert.ok(grown > 0, "no kept present is a view of a block with room to grow");
            }
          }
        });
        assert.deepEqual(kept.tokens, meta.reference.tokens);
        assert.deepEqual(kept.heads, cpu.heads); // the same bits
        assert.deepEqual(kept.last, cpu.last);
        if (!proxy) {
          const { pyodide } = await PyodideSession.boot();
          assert.equal(pyodide.runPython("from nnwasm import _js_bridge; _js_bridge.kept_count()"), 0);
        }
        console.log(`kept-result ${name}${proxy ? "-proxy" : ""} ok`);
      } finally {
        env.wasm.proxy = false;
      }
    });
  }
}
