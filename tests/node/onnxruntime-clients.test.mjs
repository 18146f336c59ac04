// What clients written for onnxruntime-web / onnxruntime-node (transformers.js) use of its API:
// env.versions, env.wasm.wasmPaths in onnxruntime-web's object form, session options,
// onnxruntime-common tensors as feeds, output tensors' location and dispose(), the package's
// subpaths, and transformers.js's helper graphs (TopK, Slice, Resize, DFT, STFT with shape-setting inputs)
// on WASM in Pyodide, where there is no numpy.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { before, describe, test } from "node:test";
import { env, InferenceSession, Tensor } from "../../web/nnwasm.mjs";
import { resolveKernelsURL } from "../../web/env.mjs";
import { sessionSettings } from "../../web/session-options.mjs";
import { fixtures, needsFixtures } from "./fixtures.mjs";

const ARRAYS = { float32: Float32Array, int64: BigInt64Array };

describe("env, as onnxruntime clients read it", () => {
  test("env.versions names nnwasm, not onnxruntime-web", () => {
    assert.equal(env.versions.web, undefined); // transformers.js would fetch onnxruntime-web@<web> from a CDN
    assert.equal(env.versions.node, undefined);
    assert.match(env.versions.nnwasm, /^\d+\.\d+\.\d+/);
  });

  test("onnxruntime-web's {wasm, mjs} wasmPaths is ignored: the default kernels.wasm, nothing from it", () => {
    const saved = env.wasm.wasmPaths;
    try {
      env.wasm.wasmPaths = null;
      const defaults = resolveKernelsURL();
      env.wasm.wasmPaths = { wasm: "https://cdn.example/ort.wasm", mjs: "https://cdn.example/ort.mjs" };
      assert.deepEqual(resolveKernelsURL(), defaults);
    } finally {
      env.wasm.wasmPaths = saved;
    }
  });

  test("the package exports onnxruntime-web's subpaths", () => {
    const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8"));
    for (const sub of [".", "./webgpu", "./wasm", "./all"]) assert.equal(pkg.exports[sub], "./web/nnwasm.mjs", sub);
  });
});

describe("session options (session-options.mjs)", () => {
  test("freeDimensionOverrides are checked and passed on", () => {
    assert.deepEqual(sessionSettings({ freeDimensionOverrides: { batch_size: 1 } }).freeDimensionOverrides, { batch_size: 1 });
    assert.deepEqual(sessionSettings({}), { freeDimensionOverrides: null, externalData: null, preferredOutputLocation: null });
    assert.throws(() => sessionSettings({ freeDimensionOverrides: { n: -1 } }), /freeDimensionOverrides\['n'\] must be an integer >= 0/);
    assert.throws(() => sessionSettings({ freeDimensionOverrides: [1] }), /must be an object/);
  });

  test("preferredOutputLocation: the CPU or the session's memory, or a clear error", () => {
    assert.equal(sessionSettings({ preferredOutputLocation: "cpu" }).preferredOutputLocation, null);
    assert.equal(sessionSettings({ preferredOutputLocation: "wasm" }).preferredOutputLocation, "wasm");
    const where = { logits: "cpu", "present.0.key": "cpu-pinned", "present.0.value": "wasm" };
    assert.deepEqual(sessionSettings({ preferredOutputLocation: where }).preferredOutputLocation, where);
    assert.throws(() => sessionSettings({ preferredOutputLocation: { "present.0.key": "gpu-buffer" } }),
                  /'gpu-buffer' is not supported: nnwasm keeps outputs on the CPU \("cpu"\) or in the session's memory/);
    assert.throws(() => sessionSettings({ preferredOutputLocation: 3 }), TypeError);
  });

  test("externalData: [{path, data}] taken (tests/node/external-data.test.mjs runs it), malformed entries refused", () => {
    assert.deepEqual(sessionSettings({ externalData: [] }).externalData, []);
    const data = new Uint8Array(4);
    assert.deepEqual(sessionSettings({ externalData: [{ path: "model.onnx_data", data }] }).externalData,
                     [{ path: "model.onnx_data", data }]);
    assert.throws(() => sessionSettings({ externalData: [{ data }] }), /externalData\[0\] must be \{path: string, data\}/);
    assert.throws(() => sessionSettings({ externalData: [{ path: "x", data: 3 }] }), TypeError);
  });
});

describe("transformers.js's helper graphs in Pyodide (no numpy)", { skip: needsFixtures }, () => {
  const ortTensor = (f) => {
    // an onnxruntime-common Tensor's shape: fields and getters, not nnwasm's class
    const data = f.type === "int64" ? BigInt64Array.from(f.data, (v) => BigInt(v)) : ARRAYS[f.type].from(f.data);
    return { type: f.type, dims: f.dims, get data() { return data; }, location: "cpu", size: data.length };
  };

  for (const name of ["top_k", "slice", "nearest_interpolate_4d", "bilinear_interpolate_4d", "bicubic_interpolate_4d", "matmul", "rfft", "stft"]) {
    test(name, async () => {
      const h = fixtures.tfjs_helpers[name];
      const session = await InferenceSession.create(readFileSync(h.model)); // no providers, as transformers.js
      session.config = { dtype: "fp32", device: "cpu" }; // transformers.js sets it
      const feeds = Object.fromEntries(Object.entries(h.feeds).map(([k, f]) => [k, ortTensor(f)]));
      // Pyodide has no numpy here: a node left to the numpy provider would fail the run.
      const out = await session.run(feeds);
      session.outputNames.forEach((n, i) => {
        const want = h.outputs[i];
        assert.deepEqual([...out[n].dims], want.dims, n);
        assert.equal(out[n].location, "cpu");
        const got = Array.from(out[n].data, Number);
        got.forEach((v, j) => assert.ok(Math.abs(v - want.data[j]) <= 2e-3 + 1e-4 * Math.abs(want.data[j]), `${n}[${j}]: ${v} != ${want.data[j]}`));
        out[n].dispose();
      });
      await session.release();
    });
  }
});
