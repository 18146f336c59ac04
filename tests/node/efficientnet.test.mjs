// EfficientNet-Lite0 through the shim, as a Node user would run it: the photo of a coffee cup
// (preprocessed by tests/imagenet_fixture.py) must come out as "espresso".
import assert from "node:assert/strict";
import { test } from "node:test";
import { Tensor } from "../../web/nnwasm.mjs";
import { argmax, createEfficientNet, fixtures, maxAbsDiff, needsFixtures, readFloat32 } from "./fixtures.mjs";

test("EfficientNet-Lite0 classifies coffee.png as espresso", { skip: needsFixtures }, async () => {
  const { session, recipe, labels } = await createEfficientNet();

  const input = new Tensor("float32", readFloat32(fixtures.coffee), [1, 3, recipe.size, recipe.size]);
  const times = [];
  let logits;
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    const out = await session.run({ [recipe.input]: input });
    times.push(performance.now() - t0);
    logits = out[recipe.output];
  }
  assert.equal(logits.type, "float32");
  assert.deepEqual(logits.dims, [1, labels.length]);
  assert.ok(logits.data instanceof Float32Array);
  assert.equal(labels[argmax(logits.data)], "espresso");
  // CPython's nnwasm runs the same plan on the same kernels.wasm: proxy.test.mjs compares with it too.
  assert.ok(maxAbsDiff(logits.data, readFloat32(fixtures.efficientnet_logits)) <= 1e-6, "logits differ from CPython nnwasm's");

  // onnxruntime-web (a devDependency, only ever the oracle) on the same input.
  const ort = await import("onnxruntime-web");
  ort.env.wasm.numThreads = 1;
  const oracle = await ort.InferenceSession.create(fixtures.efficientnet, { executionProviders: ["wasm"] });
  const expected = (await oracle.run({ [recipe.input]: new ort.Tensor("float32", input.data, input.dims) }))[recipe.output].data;
  const scale = Math.max(...expected.map(Math.abs));
  const maxDiff = Math.max(...logits.data.map((v, i) => Math.abs(v - expected[i])));
  console.log(`nnwasm-vs-onnxruntime-web max_abs_diff=${maxDiff.toExponential(2)} max_abs_logit=${scale.toFixed(2)}`);
  assert.ok(maxDiff <= 1e-3 * scale, `logits differ from onnxruntime-web's by up to ${maxDiff}`);
  await oracle.release();
  const { bootMs, createMs } = session.timings;
  console.log(`nnwasm-timings boot_ms=${bootMs.toFixed(0)} create_ms=${createMs.toFixed(0)} ` +
              `first_run_ms=${times[0].toFixed(1)} best_run_ms=${Math.min(...times).toFixed(1)}`);
  await session.release();
});
