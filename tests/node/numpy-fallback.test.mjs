// Pyodide has no numpy: a model with a node only the numpy provider can run must fail at
// creation with an Error that names that node, not crash or hang.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { InferenceSession } from "../../web/nnwasm.mjs";
import { fixtures, needsFixtures } from "./fixtures.mjs";

test("nodes that need numpy are named (default providers)", { skip: needsFixtures }, async () => {
  const { model, numpy_nodes: nodes } = fixtures.fallback;
  await assert.rejects(InferenceSession.create(readFileSync(model)), (e) => {
    assert.equal(e.name, "FallbackUnavailable");
    assert.match(e.message, /numpy/);
    for (const node of nodes) assert.ok(e.message.includes(node), `${JSON.stringify(e.message)} names ${node}`);
    return true;
  });
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
