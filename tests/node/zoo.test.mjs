// The model zoo through the shim in Node (Pyodide, no numpy): each model on WASM alone against
// onnxruntime's outputs that build_scripts/build_zoo.py saved as raw bytes next to it. Driven by
// tests/test_zoo.py (NNWASM_ZOO_SPEC: {dir, models}); without it this file registers no test.
// Each model prints "zoo-result NAME STATUS DETAIL": ok, NotImplementedOp (nodes WASM can't run
// yet: expected for the models in test_zoo.py's ZOO_EXPECTED_FALLBACK), or a failure.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { env, InferenceSession, Tensor } from "../../web/nnwasm.mjs";

const specPath = process.env.NNWASM_ZOO_SPEC;
const spec = specPath ? JSON.parse(readFileSync(specPath, "utf8")) : null;
if (process.env.NNWASM_DIST_URL) env.distURL = process.env.NNWASM_DIST_URL;

const ARRAYS = { float32: Float32Array, float16: Uint16Array, int64: BigInt64Array, int32: Int32Array,
                 uint8: Uint8Array, int8: Int8Array, bool: Uint8Array, float64: Float64Array };

function readTensor(dir, t) {
  const buf = readFileSync(join(dir, t.file));
  const ctor = ARRAYS[t.dtype];
  const bytes = new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength).slice();
  return new Tensor(t.dtype === "float16" ? "float16" : t.dtype, new ctor(bytes.buffer), t.dims);
}

function halfToFloat(h) {
  const s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 0x1f, f = h & 0x3ff;
  if (e === 0) return s * f * 2 ** -24;
  if (e === 31) return f ? NaN : s * Infinity;
  return s * (1 + f / 1024) * 2 ** (e - 15);
}

// reduce, not Math.max(...a): spreading a large output overflows the call stack
const maxOf = (a, f = (x) => x) => a.reduce((m, x) => Math.max(m, f(x)), -Infinity);
const minOf = (a) => a.reduce((m, x) => Math.min(m, x), Infinity);

const asNumbers = (t) => (t.type === "float16" ? Array.from(t.data, halfToFloat) : Array.from(t.data, Number));

/** test_zoo.py's assert_agrees, for the same kinds and tolerances. */
function agreement(kind, out, ref) {
  if (out.type !== ref.type || out.dims.join() !== ref.dims.join())
    return `got ${out.type}[${out.dims}] expected ${ref.type}[${ref.dims}]`;
  const o = asNumbers(out), r = asNumbers(ref);
  const scale = Math.max(1, maxOf(r, Math.abs));
  const [rtol, atol] = kind === "fp16" ? [1e-2, 1e-2 * scale] : [1e-3, 1e-4 * scale];
  let worst = 0, bad = 0;
  for (let i = 0; i < o.length; i++) {
    const d = Math.abs(o[i] - r[i]);
    worst = Math.max(worst, d);
    if (!(d <= atol + rtol * Math.abs(r[i]))) bad++;
  }
  if (kind !== "int8") return bad ? `${bad}/${o.length} values off, max diff ${worst.toExponential(2)}` : null;
  const step = (maxOf(r) - minOf(r)) / 255;
  if (worst <= step * (1 + 1e-6)) return null;
  let dot = 0, no = 0, nr = 0;
  for (let i = 0; i < o.length; i++) { dot += o[i] * r[i]; no += o[i] * o[i]; nr += r[i] * r[i]; }
  const cos = dot / (Math.sqrt(no * nr) + 1e-30);
  if (cos < 0.999) return `cosine ${cos.toFixed(5)} < 0.999 (max diff ${worst.toExponential(2)})`;
  if (ref.dims.length === 2) {
    const n = ref.dims[1];
    for (let b = 0; b < ref.dims[0]; b++) {
      const top = (v) => { let k = 0; for (let j = 1; j < n; j++) if (v[b * n + j] > v[b * n + k]) k = j; return k; };
      if (top(o) !== top(r)) return `top-1 differs in row ${b}`;
    }
  }
  return null;
}

for (const name of spec?.models ?? []) {
  test(`zoo ${name} on WASM matches onnxruntime`, async () => {
    const meta = JSON.parse(readFileSync(join(spec.dir, `${name}.json`), "utf8"));
    let session;
    try {
      session = await InferenceSession.create(join(spec.dir, meta.file), { executionProviders: ["wasm"] });
      for (const c of meta.cases) {
        const feeds = Object.fromEntries(Object.entries(c.inputs).map(([n, t]) => [n, readTensor(spec.dir, t)]));
        const outs = await session.run(feeds);
        for (const [n, t] of Object.entries(c.outputs)) {
          const why = agreement(meta.kind, outs[n], readTensor(spec.dir, t));
          if (why) throw Object.assign(new Error(`${c.name} output ${n}: ${why}`), { name: "Mismatch" });
        }
      }
      console.log(`zoo-result ${name} ok`);
    } catch (e) {
      console.log(`zoo-result ${name} ${e.name} ${String(e.message).split("\n").slice(0, 3).join(" | ")}`);
      if (e.name !== "NotImplementedOp") throw e;
    } finally {
      await session?.release();
    }
  });
}
assert.ok(!specPath || spec.models.length > 0, "NNWASM_ZOO_SPEC lists no models");
