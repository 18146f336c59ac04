// Checks of the traces endProfiling() returns, shared by profiling.test.mjs and proxy.test.mjs
// (plan-runner.test.mjs checks plan sessions' traces against CPython's).
import assert from "node:assert/strict";
import { Tensor } from "../../web/nnwasm.mjs";
import { fixtures } from "./fixtures.mjs";

/** Checks a trace's events as Perfetto needs them; returns [name, op type, kernel, provider] of
 * its Node events and the names of its Session events. */
export function readTrace(events) {
  assert.ok(Array.isArray(events) && events.length > 0);
  let end = -Infinity;
  for (const e of events) {
    assert.deepEqual(Object.keys(e).sort(), ["args", "cat", "dur", "name", "ph", "pid", "tid", "ts"]);
    assert.ok(e.ph === "X" && ["Session", "Node"].includes(e.cat) && typeof e.name === "string");
    assert.ok(Number.isFinite(e.ts) && Number.isFinite(e.dur) && e.ts >= 0 && e.dur >= 0, JSON.stringify(e));
    assert.ok(Number.isInteger(e.pid) && Number.isInteger(e.tid) && typeof e.args === "object");
    assert.ok(e.ts + e.dur >= end - 1e-3, "events are listed as they end");
    end = e.ts + e.dur;
  }
  assert.deepEqual(JSON.parse(JSON.stringify(events)), events, "the events are JSON as they are");
  return {
    nodes: events.filter((e) => e.cat === "Node").map((e) => [e.name, e.args.op_name, e.args.kernel, e.args.provider]),
    sessions: events.filter((e) => e.cat === "Session").map((e) => e.name),
  };
}

/** One profiled run of the fixtures' y = relu(x + b): each event names add0/relu0 on WASM. */
export async function profileAddModel(create) {
  const add = fixtures.add;
  const session = await create(add.model, { enableProfiling: true });
  assert.deepEqual(await session.endProfiling(), [], "nothing ran yet"); // and profiling stops
  await session.run({ [add.input]: new Tensor("float32", Float32Array.from(add.x), add.dims) });
  assert.deepEqual(await session.endProfiling(), []);
  await session.startProfiling();
  const out = await session.run({ [add.input]: new Tensor("float32", Float32Array.from(add.x), add.dims) });
  assert.deepEqual(Array.from(out[add.output].data), add.y);
  const { nodes, sessions } = readTrace(await session.endProfiling());
  assert.deepEqual(sessions, ["model_run"]);
  assert.ok(nodes.length > 0);
  for (const [name, opType, kernel, provider] of nodes) {
    assert.ok(["add0_kernel_time", "relu0_kernel_time"].includes(name) && typeof opType === "string", name);
    assert.ok(kernel.length > 0 && provider === "WasmExecutionProvider");
  }
  await session.release();
  await assert.rejects(session.startProfiling(), /released/);
}
