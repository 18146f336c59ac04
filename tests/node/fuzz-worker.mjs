// Issue 18: the model fuzz through the JS shim (web/nnwasm.mjs, Pyodide) in Node, driven by
// tests/fuzz_oracle.py --host node, which writes each case's model (CASE.onnx) and feeds (CASE.json:
// {feeds: {name: {type, dims, b64}}}) and judges what this prints against onnxruntime. One JSON line
// per case before it starts ({case, phase: "start"}) and one when it ends ({case, phase: "done",
// outcome: "ran" | "refused" | "crash", detail, outputs: [{type, dims, b64}]}): the driver kills
// this process when a case hangs and starts another at the next case.
//   node tests/node/fuzz-worker.mjs FOLDER START END
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { env, InferenceSession, Tensor } from "../../web/nnwasm.mjs";

if (process.env.NNWASM_DIST_URL) env.distURL = process.env.NNWASM_DIST_URL;

const NNWASM_ERRORS = new Set(["InvalidModel", "InvalidArgument", "Unsupported", "NotImplementedOp", "KernelError",
  "Fail", "EPFail", "WasmOutOfMemory", "InvalidGraph", "InvalidProtobuf", "NoSuchFile", "RunTerminated",
  "FallbackUnavailable", "NotImplemented"]);
const ARRAYS = { float32: Float32Array, float64: Float64Array, int64: BigInt64Array, int32: Int32Array,
  int8: Int8Array, uint8: Uint8Array, bool: Uint8Array, int16: Int16Array, uint16: Uint16Array, float16: Uint16Array,
  uint32: Uint32Array, uint64: BigUint64Array };

function tensorOf(f) {
  const b = Buffer.from(f.b64, "base64");
  const T = ARRAYS[f.type];
  const copy = new Uint8Array(b.length);
  copy.set(b);
  return new Tensor(f.type, new T(copy.buffer, 0, b.length / T.BYTES_PER_ELEMENT), f.dims);
}

function encode(t) {
  if (t.type === "string") return { type: "string", dims: [...t.dims], strings: [...t.data] };
  const d = t.data;
  return { type: t.type, dims: [...t.dims].map(Number), b64: Buffer.from(d.buffer, d.byteOffset, d.byteLength).toString("base64") };
}

const [dir, start, end] = [process.argv[2], Number(process.argv[3]), Number(process.argv[4])];
for (let c = start; c < end; c++) {
  console.log(JSON.stringify({ case: c, phase: "start" }));
  const spec = JSON.parse(readFileSync(join(dir, `${c}.json`), "utf8"));
  const model = new Uint8Array(readFileSync(join(dir, `${c}.onnx`)));
  let outcome = "ran", detail = "", outputs = [];
  try {
    const session = await InferenceSession.create(model);
    try {
      const feeds = Object.fromEntries(Object.entries(spec.feeds).map(([k, f]) => [k, tensorOf(f)]));
      const out = await session.run(feeds);
      outputs = session.outputNames.map((n) => encode(out[n]));
    } finally {
      await session.release();
    }
  } catch (e) {
    if (e instanceof WebAssembly.RuntimeError) [outcome, detail] = ["crash", `wasm trap: ${e.message}`];
    else if (e && NNWASM_ERRORS.has(e.name)) [outcome, detail] = ["refused", `${e.name}: ${String(e.message).slice(0, 300)}`];
    else [outcome, detail] = ["crash", `${e?.name}: ${String(e?.message ?? e).slice(0, 300)}`];
  }
  console.log(JSON.stringify({ case: c, phase: "done", outcome, detail, outputs }));
}
process.exit(0);
