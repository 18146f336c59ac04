// Pyodide has no numpy here (core only, offline): a model with a node only the numpy provider can
// run makes the shim try Pyodide's numpy package once; that fails, and creation fails with an
// Error that names the node and why numpy could not be loaded, not a crash or a hang.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { env, InferenceSession } from "../../web/nnwasm.mjs";
import { fixtures, needsFixtures } from "./fixtures.mjs";

test("nodes that need numpy are named (default providers)", { skip: needsFixtures }, async () => {
  const { model, numpy_nodes: nodes } = fixtures.fallback;
  await assert.rejects(InferenceSession.create(readFileSync(model)), (e) => {
    assert.equal(e.name, "FallbackUnavailable");
    assert.match(e.message, /numpy/);
    assert.match(e.message, /loading Pyodide's numpy package failed/);
    for (const node of nodes) assert.ok(e.message.includes(node), `${JSON.stringify(e.message)} names ${node}`);
    return true;
  });
});

test("with env.loadNumpy = false the shim does not try to load numpy", { skip: needsFixtures }, async () => {
  const { model, numpy_nodes: nodes } = fixtures.fallback;
  env.loadNumpy = false;
  try {
    await assert.rejects(InferenceSession.create(readFileSync(model)), (e) => {
      assert.equal(e.name, "FallbackUnavailable");
      assert.doesNotMatch(e.message, /loading Pyodide's numpy package/);
      for (const node of nodes) assert.ok(e.message.includes(node), `${JSON.stringify(e.message)} names ${node}`);
      return true;
    });
  } finally {
    env.loadNumpy = true;
  }
});

test("nodes WASM cannot run are named (wasm only)", { skip: needsFixtures }, async () => {
  const { model, numpy_nodes: nodes, wasm_nodes: wasmNodes } = fixtures.fallback;
  await assert.rejects(InferenceSession.create(model, { executionProviders: ["wasm"] }), (e) => {
    assert.equal(e.name, "NotImplementedOp");
    for (const node of nodes) assert.ok(e.message.includes(node), `${JSON.stringify(e.message)} names ${node}`);
    for (const node of wasmNodes) assert.ok(!e.message.includes(node), `${JSON.stringify(e.message)} blames ${node}`);
    return true;
  });
});
