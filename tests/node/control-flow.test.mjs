// Control flow in Pyodide (no numpy): a Silero-like VAD whose If on the sample rate (an int64
// scalar input) picks one of two Conv/Gemm branches, every node on WASM, against onnxruntime.
import assert from "node:assert/strict";
import { test } from "node:test";
import { InferenceSession, Tensor } from "../../web/nnwasm.mjs";
import { fixtures, maxAbsDiff, needsFixtures } from "./fixtures.mjs";

test("If on an int64 scalar input runs both branches on WASM", { skip: needsFixtures }, async () => {
  const vad = fixtures.vad;
  const session = await InferenceSession.create(vad.model, { executionProviders: ["wasm"] });
  assert.ok(session.providerAssignment.every((a) => a.provider === "WasmExecutionProvider"));
  assert.ok(session.providerAssignment.some((a) => a.opType === "If"), JSON.stringify(session.providerAssignment));
  for (const run of vad.runs) {
    const out = await session.run({
      x: new Tensor("float32", Float32Array.from(vad.x), [1, 1, 64]),
      h: new Tensor("float32", Float32Array.from(vad.h), [1, 8]),
      sr: new Tensor("int64", BigInt64Array.from([BigInt(run.sr)]), []),
    });
    assert.ok(maxAbsDiff(out.prob.data, run.prob) < 1e-5, `sr ${run.sr}: prob ${out.prob.data} vs ${run.prob}`);
    assert.ok(maxAbsDiff(out.hn.data, run.hn) < 1e-5, `sr ${run.sr}: hn ${out.hn.data} vs ${run.hn}`);
  }
  await session.release();
});
