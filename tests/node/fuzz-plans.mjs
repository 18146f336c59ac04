// Issue 18: mutated .nnwp plan files (tests/test_fuzz_plans.py writes them) loaded in Node twice,
// as bytes (InferenceSession.create) and piece by piece through the page's PlanReceiver, then run
// with the plan's own feeds; and (mode "feeds") hostile feeds given to good sessions. One JSON line
// per case: {case, how, outcome, detail}; outcome "refused" (an nnwasm error at create), "ran",
// "run-refused" (an nnwasm error at run), "trap" (a WebAssembly.RuntimeError) or "crash" (any
// other exception).
//   node tests/node/fuzz-plans.mjs FOLDER     (FOLDER/cases.json: [{case, file, feeds}])
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { env, InferenceSession, Tensor } from "../../web/nnwasm.mjs";
import { PlanReceiver } from "../../web/plan-receiver.mjs";

if (process.env.NNWASM_DIST_URL) env.distURL = process.env.NNWASM_DIST_URL;
env.pyodideIndexURL = "/nonexistent-pyodide/";

const NNWASM_ERRORS = new Set(["InvalidModel", "InvalidArgument", "Unsupported", "NotImplementedOp", "KernelError",
  "Fail", "EPFail", "WasmOutOfMemory", "InvalidGraph", "InvalidProtobuf", "NoSuchFile", "RunTerminated"]);
const ARRAYS = { float32: Float32Array, int32: Int32Array, int64: BigInt64Array, int8: Int8Array, uint8: Uint8Array,
  float64: Float64Array, bool: Uint8Array, float16: Uint16Array };

function classify(e, clean) {
  if (e instanceof WebAssembly.RuntimeError) return ["trap", `${e.message}`];
  if (e && NNWASM_ERRORS.has(e.name)) return [clean, `${e.name}: ${String(e.message).slice(0, 200)}`];
  // argument checks throw TypeError, as onnxruntime-web's do ("InferenceSession.run: feed 'x' is not a Tensor")
  if (e instanceof TypeError && /^InferenceSession\.|^input '/.test(e.message)) return [clean, `TypeError: ${e.message}`];
  return ["crash", `${e?.name}: ${String(e?.message ?? e).slice(0, 300)}`];
}

function feedsOf(feeds) {
  return Object.fromEntries(Object.entries(feeds).map(([name, f]) => {
    const T = ARRAYS[f.type] ?? Float32Array;
    const n = f.dims.reduce((a, b) => a * b, 1);
    const data = new T(n);
    return [name, new Tensor(f.type, data, f.dims)];
  }));
}

// A file whose magic is no longer "NNWF" would go to the ONNX (Pyodide) path of InferenceSession.create,
// which this test does not boot: the plan reader is asked directly.
async function viaBytes(bytes) {
  if (new TextDecoder().decode(bytes.subarray(0, 4)) === "NNWF") return InferenceSession.create(bytes);
  const { PlanSession } = await import("../../web/plan-session.mjs");
  return new InferenceSession(await PlanSession.create(bytes));
}

async function viaReceiver(bytes) {
  const r = new PlanReceiver();
  for (let at = 0; at < bytes.length; at += 4093) r.write(bytes.subarray(at, at + 4093));
  const got = await r.finish();
  const { PlanSession } = await import("../../web/plan-session.mjs");
  // as InferenceSession.create does with a download's PlanReceiver (web/inference-session.mjs)
  return new InferenceSession(await (got.prefix ? PlanSession.create(got.prefix, undefined, { received: got })
    : PlanSession.create(got.bytes, undefined, { contentCrc: got.crc })));
}

async function planCase(dir, c) {
  const bytes = new Uint8Array(readFileSync(join(dir, c.file)));
  for (const how of ["bytes", "receiver"]) {
    let session;
    try {
      session = how === "bytes" ? await viaBytes(bytes) : await viaReceiver(bytes);
    } catch (e) {
      const [outcome, detail] = classify(e, "refused");
      console.log(JSON.stringify({ case: c.case, how, outcome, detail }));
      continue;
    }
    let outcome = "ran", detail = "";
    try {
      // the loaded plan's own inputs, so that a refusal at run is the plan's, not the feeds'
      const meta = session.inputMetadata ?? [];
      const own = Object.fromEntries(meta.map((m) => [m.name, { type: m.type, dims: m.shape }]));
      await session.run(feedsOf(own));
    } catch (e) {
      [outcome, detail] = classify(e, "run-refused");
    }
    try { await session.release(); } catch { /* released or never usable */ }
    console.log(JSON.stringify({ case: c.case, how, outcome, detail }));
  }
}

// Hostile feeds for a good plan session: each must be refused with an nnwasm error (or run, for
// NaN/Inf), and the session must still answer a good feed afterwards.
async function feedCases(dir, c) {
  const bytes = new Uint8Array(readFileSync(join(dir, c.file)));
  const session = await InferenceSession.create(bytes);
  const [name] = session.inputNames;
  const good = feedsOf(c.feeds)[name];
  const n = good.data.length, dims = [...good.dims];
  const detached = new Float32Array(n);
  structuredClone(detached.buffer, { transfer: [detached.buffer] });
  const shared = new Float32Array(new SharedArrayBuffer(4 * n));
  const bad = {
    "int32 for float32": () => new Tensor("int32", new Int32Array(n), dims),
    "float64 for float32": () => new Tensor("float64", new Float64Array(n), dims),
    "rank + 1": () => new Tensor("float32", new Float32Array(n), [1, ...dims]),
    "a dim off by one": () => new Tensor("float32", new Float32Array((n / dims[dims.length - 1]) * (dims[dims.length - 1] + 1)),
      [...dims.slice(0, -1), dims[dims.length - 1] + 1]),
    "huge dims": () => ({ type: "float32", dims: [2 ** 31, 2 ** 31], data: new Float32Array(4), size: 4 }),
    "negative dim": () => ({ type: "float32", dims: [-1, ...dims.slice(1)], data: new Float32Array(n), size: n }),
    "data shorter than dims": () => ({ type: "float32", dims, data: new Float32Array(1), size: n }),
    "NaN and Inf": () => new Tensor("float32", new Float32Array(n).fill(NaN).map((v, i) => (i % 2 ? Infinity : v)), dims),
    "a detached ArrayBuffer": () => ({ type: "float32", dims, data: detached, size: n }),
    "a SharedArrayBuffer": () => new Tensor("float32", shared, dims),
    "not a tensor": () => 42,
    "null": () => null,
  };
  for (const [what, make] of Object.entries(bad)) {
    let outcome = "ran", detail = "", feed;
    try {
      feed = make();
    } catch (e) { // the Tensor constructor refused it (as onnxruntime-web's does): the user's call, not run's
      console.log(JSON.stringify({ case: c.case, how: what, outcome: "run-refused", detail: `Tensor(): ${e.message}`,
        after: "usable" }));
      continue;
    }
    try {
      await session.run({ [name]: feed });
    } catch (e) {
      [outcome, detail] = classify(e, "run-refused");
    }
    let after = "usable";
    try { await session.run({ [name]: good }); } catch (e) { after = `unusable: ${e.message}`; }
    console.log(JSON.stringify({ case: c.case, how: what, outcome, detail, after }));
  }
  const extra = await session.run({ [name]: good, nope: good }).then(() => "ran", (e) => classify(e, "run-refused")[0]);
  const missing = await session.run({}).then(() => "ran", (e) => classify(e, "run-refused")[0]);
  console.log(JSON.stringify({ case: c.case, how: "an extra input", outcome: extra, after: "usable" }));
  console.log(JSON.stringify({ case: c.case, how: "no input", outcome: missing, after: "usable" }));
}

const dir = process.argv[2];
const cases = JSON.parse(readFileSync(join(dir, "cases.json"), "utf8"));
for (const c of cases) {
  if (c.mode === "feeds") await feedCases(dir, c);
  else await planCase(dir, c);
}
