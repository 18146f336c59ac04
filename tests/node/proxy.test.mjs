// env.wasm.proxy: Pyodide and the sessions in a worker_threads worker (a Web Worker in browsers,
// tests/test_browser_demo.py). The results, errors and guarantees of non-proxy mode, plus what only
// a worker can get wrong: detached inputs, a boot that fails, a worker that dies mid-call.
// node:test runs each file in a process of its own, so this file's mode is its own.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { describe, test } from "node:test";
import { env, InferenceSession, Tensor } from "../../web/nnwasm.mjs";
import { stopProxyWorker } from "../../web/proxy-session.mjs";
import { argmax, createEfficientNet, fixtures, maxAbsDiff, needsFixtures, readFloat32 } from "./fixtures.mjs";
import { profileAddModel } from "./trace.mjs";

env.wasm.proxy = true;

// A timeout, because what can go wrong with a worker is a call that never settles.
describe("proxy mode", { skip: needsFixtures, timeout: 120_000 }, () => {
  const add = fixtures?.add;
  const good = () => new Tensor("float32", Float32Array.from(add.x), add.dims);

  async function assertRunsCorrectly(session) {
    const out = await session.run({ [add.input]: good() });
    assert.deepEqual(out[add.output].dims, add.dims);
    assert.deepEqual(Array.from(out[add.output].data), add.y);
  }

  // First: once a worker has booted, env.distURL is no longer read.
  test("a boot that fails rejects create() with the boot's error; the next create() starts afresh", async () => {
    const distURL = env.distURL;
    env.distURL = pathToFileURL("/nonexistent/dist/").href;
    try {
      await assert.rejects(InferenceSession.create(add.model),
                           { name: "Error", message: /^nnwasm: Pyodide's files are missing from file:\/\/\/nonexistent\/dist\/pyodide\/: .*pyodide\.asm\.wasm/ });
    } finally {
      env.distURL = distURL;
    }
    await assertRunsCorrectly(await InferenceSession.create(add.model));
  });

  test("profiling reaches the worker's session", () =>
    profileAddModel((model, options) => InferenceSession.create(model, options)));

  test("EfficientNet-Lite0 classifies coffee.png as espresso, with non-proxy mode's logits", async () => {
    const { session, recipe, labels } = await createEfficientNet();
    assert.deepEqual(session.providers, ["WasmExecutionProvider"]);

    const pixels = readFloat32(fixtures.coffee);
    const input = new Tensor("float32", pixels, [1, 3, recipe.size, recipe.size]);
    const times = [];
    let logits;
    for (let i = 0; i < 8; i++) {
      const t0 = performance.now();
      logits = (await session.run({ [recipe.input]: input }))[recipe.output];
      times.push(performance.now() - t0);
    }
    assert.equal(logits.type, "float32");
    assert.deepEqual(logits.dims, [1, labels.length]);
    assert.ok(logits.data instanceof Float32Array);
    assert.equal(labels[argmax(logits.data)], "espresso");
    // efficientnet.test.mjs holds non-proxy mode to the same reference.
    const diff = maxAbsDiff(logits.data, readFloat32(fixtures.efficientnet_logits));
    assert.ok(diff <= 1e-6, `logits differ from non-proxy mode's by up to ${diff}`);
    // The input was copied, not transferred: the caller's array still holds the photo.
    assert.equal(input.data, pixels);
    assert.equal(pixels.byteLength, 4 * 3 * recipe.size * recipe.size);
    assert.equal(maxAbsDiff(pixels, readFloat32(fixtures.coffee)), 0);

    const { bootMs, createMs } = session.timings;
    times.sort((a, b) => a - b);
    console.log(`nnwasm-proxy-timings boot_ms=${bootMs.toFixed(0)} create_ms=${createMs.toFixed(0)} ` +
                `median_run_ms=${times[4].toFixed(1)} best_run_ms=${times[0].toFixed(1)}`);
    await session.release();
  });

  describe("errors are non-proxy mode's, and leave the session usable", () => {
    let session;

    test("create", async () => {
      session = await InferenceSession.create(readFileSync(add.model));
      await assertRunsCorrectly(session);
    });

    // add.errors: what CPython's nnwasm says; errors.test.mjs holds non-proxy mode to it too.
    for (const [what, key, feeds] of [
      ["a wrong input name", "name", () => ({ nope: good() })],
      ["a wrong dtype", "dtype", () => ({ [add.input]: new Tensor("int32", Int32Array.from(add.x, Math.round), add.dims) })],
      ["wrong dims", "dims", () => ({ [add.input]: new Tensor("float32", Float32Array.from(add.x), [add.x.length, 1]) })],
    ]) {
      test(what, async () => {
        await assert.rejects(session.run(feeds()), (e) => {
          assert.ok(e instanceof Error);
          assert.deepEqual([e.name, e.message], add.errors[key]);
          return true;
        });
        await assertRunsCorrectly(session);
      });
    }

    test("a string tensor is a TypeError, as in non-proxy mode", async () => {
      const bad = new Tensor("string", add.x.map(String), add.dims);
      await assert.rejects(session.run({ [add.input]: bad }), (e) => {
        assert.ok(e instanceof TypeError);
        assert.equal(e.message, `input '${add.input}': a 'string' tensor cannot be passed to nnwasm (needs a typed array)`);
        return true;
      });
      await assertRunsCorrectly(session);
    });

    test("corrupt model bytes", async () => {
      const bytes = new Uint8Array(readFileSync(add.model));
      await assert.rejects(InferenceSession.create(bytes.slice(0, bytes.length >> 1)), { name: "InvalidModel" });
      await assertRunsCorrectly(session);
    });

    test("a node only numpy runs: FallbackUnavailable, and env.loadNumpy is read at each call", async () => {
      const { model, numpy_nodes: nodes } = fixtures.fallback;
      const namesNodes = (e) => nodes.every((node) => e.message.includes(node));
      await assert.rejects(InferenceSession.create(readFileSync(model)), (e) =>
        e.name === "FallbackUnavailable" && namesNodes(e) && /loading Pyodide's numpy package failed/.test(e.message));
      env.loadNumpy = false;
      try {
        await assert.rejects(InferenceSession.create(readFileSync(model)), (e) =>
          e.name === "FallbackUnavailable" && namesNodes(e) && !/loading Pyodide's numpy package/.test(e.message));
      } finally {
        env.loadNumpy = true;
      }
      await assertRunsCorrectly(session);
    });

    test("run() after release() rejects", async () => {
      await session.release();
      await assert.rejects(session.run({ [add.input]: good() }), { message: /released/ });
    });
  });

  // Last: it costs a second boot.
  test("a worker that dies rejects the calls in flight, and the next create() starts a new one", async () => {
    const session = await InferenceSession.create(readFileSync(add.model));
    const first = session.run({ [add.input]: good() });
    const second = session.run({ [add.input]: good() });
    await first; // the worker answers in order, so here the second run is posted and not yet answered
    stopProxyWorker("the test stopped it");
    const gone = { name: "Error", message: /^nnwasm: the proxy worker stopped \(the test stopped it\); its sessions are gone/ };
    await assert.rejects(second, gone);
    await assert.rejects(session.run({ [add.input]: good() }), gone);
    await session.release(); // nothing left to free: no error
    await assertRunsCorrectly(await InferenceSession.create(readFileSync(add.model)));
  });
});
