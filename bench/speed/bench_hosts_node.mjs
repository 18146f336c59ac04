// The Node half of bench_hosts.py: nnwasm plan sessions (web/nnwasm.mjs, kernels.wasm in V8),
// driven over stdin/stdout by the Python side so that both hosts run interleaved in one run.
// One JSON request a line, one JSON answer a line:
//   {"op": "load", "model", "plan", "feeds": [{name, dtype, dims, file}]} -> {"create_ms"}
//   {"op": "run", "model", "n"}          -> {"times": [ms, ...]}  (n runs, each timed)
//   {"op": "profile", "model", "n"}      -> {"events": [...]}     (n profiled runs' node events)
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { InferenceSession, Tensor } from "../../web/nnwasm.mjs";

const ARRAYS = { float32: Float32Array, int64: BigInt64Array, int32: Int32Array, uint8: Uint8Array, int8: Int8Array };
const sessions = new Map();

async function handle(req) {
  if (req.op === "load") {
    const feeds = Object.fromEntries(req.feeds.map((f) => {
      const buf = readFileSync(f.file);
      const bytes = new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength).slice();
      return [f.name, new Tensor(f.dtype, new ARRAYS[f.dtype](bytes.buffer), f.dims)];
    }));
    const t0 = performance.now();
    const session = await InferenceSession.create(req.plan);
    sessions.set(req.model, { session, feeds });
    return { create_ms: performance.now() - t0 };
  }
  const { session, feeds } = sessions.get(req.model);
  if (req.op === "run") {
    const times = [];
    for (let i = 0; i < req.n; i++) {
      const t = performance.now();
      await session.run(feeds);
      times.push(performance.now() - t);
    }
    return { times };
  }
  if (req.op === "profile") {
    session.startProfiling();
    for (let i = 0; i < req.n; i++) await session.run(feeds);
    return { events: (await session.endProfiling()).filter((e) => e.cat === "Node") };
  }
  throw new Error(`unknown op ${req.op}`);
}

for await (const line of createInterface({ input: process.stdin })) {
  let answer;
  try {
    answer = await handle(JSON.parse(line));
  } catch (e) {
    answer = { error: `${e.name}: ${e.message}` };
  }
  process.stdout.write(JSON.stringify(answer) + "\n");
}
