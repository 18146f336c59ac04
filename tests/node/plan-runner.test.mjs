// .nnwp plan files run by web/plan-session.mjs on kernels.wasm alone: outputs bit-identical to
// CPython's nnwasm (wasmtime) on the same plan, every refusal of the format before anything runs,
// and never a Pyodide boot. Fixtures come from tests/test_plan_runner_js.py (NNWASM_PLAN_FIXTURES).
import assert from "node:assert/strict";
import zlib from "node:zlib";
import { describe, test } from "node:test";
import { env, InferenceSession, Tensor } from "../../web/nnwasm.mjs";
import { resolveKernelsURL } from "../../web/env.mjs";
import { crc32, parsePlanFile } from "../../web/plan-file.mjs";
import { warmUpKernels } from "../../web/plan-session.mjs";
import { bootCount } from "../../web/pyodide-boot.mjs";
import { stopProxyWorker } from "../../web/proxy-session.mjs";
import { readTrace } from "./trace.mjs";
import { assertBitIdentical, bytesOf, feedsOf, fixtures, skip } from "./plan-fixtures.mjs";

/** The file's parts, to put together again with changes (and a correct or given checksum). */
function parts(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const ioBytes = view.getUint32(16, true), planBytes = view.getUint32(20, true);
  const ioPad = Math.ceil(ioBytes / 16) * 16;
  return {
    io: new TextDecoder().decode(bytes.subarray(32, 32 + ioBytes)),
    plan: bytes.slice(32 + ioPad, 32 + ioPad + planBytes),
  };
}

function assemble({ io, plan, words = {} }) {
  const table = new TextEncoder().encode(io);
  const ioPad = Math.ceil(table.length / 16) * 16;
  const out = new Uint8Array(32 + ioPad + plan.length);
  out.set([0x4e, 0x4e, 0x57, 0x46]);
  out.set(table, 32);
  out.set(plan, 32 + ioPad);
  const view = new DataView(out.buffer);
  const w = { 1: 1, 2: 1, 3: 0, 4: table.length, 5: plan.length, 6: crc32(out.subarray(32)), 7: 0, ...words };
  for (const [i, v] of Object.entries(w)) view.setUint32(4 * i, v, true);
  return out;
}

async function refused(bytes, pattern) {
  await assert.rejects(InferenceSession.create(bytes), (e) => {
    assert.match(e.message, pattern);
    return true;
  });
}

describe("plan files (.nnwp) without Pyodide", { skip }, () => {
  test("crc32 is zlib's", () => {
    assert.equal(crc32(new TextEncoder().encode("123456789")), 0xcbf43926);
    assert.equal(crc32(new Uint8Array(0)), 0);
    // The 8-bytes-a-step loop: every alignment and length around it, and continued CRCs.
    const bytes = Uint8Array.from({ length: 300 }, (_, i) => (i * 151 + 7) & 0xff);
    for (let start = 0; start < 6; start++) {
      for (const length of [1, 3, 7, 8, 9, 15, 16, 17, 64, 255]) {
        const piece = bytes.subarray(start, start + length);
        assert.equal(crc32(piece), zlib.crc32(piece), `offset ${start}, ${length} bytes`);
        const half = length >> 1;
        assert.equal(crc32(piece.subarray(half), crc32(piece.subarray(0, half))), zlib.crc32(piece));
      }
    }
  });

  test("the warm-up plan (dist/web/kernels-warmup.nnwp) loads and runs on its own; sessions after it stay bit-identical", async () => {
    // The first thing in this process to touch kernels.wasm: all WARMUP_RUNS runs happen, and
    // the sessions of the tests below run on a kernels.wasm the warm-up has used.
    assert.equal(await warmUpKernels(), 4);
    assert.equal(await warmUpKernels(), 4); // once a realm
  });

  test("a small CNN: names, metadata and outputs bit-identical to CPython's", async () => {
    const entry = fixtures.cnn;
    const session = await InferenceSession.create(entry.plan);
    assert.deepEqual(session.inputNames, ["x"]);
    assert.deepEqual(session.outputNames, ["logits"]);
    assert.deepEqual(session.inputMetadata[0], { name: "x", isTensor: true, type: "float32", shape: [1, 3, 12, 12] });
    assertBitIdentical(await session.run(feedsOf(entry)), entry);
    assertBitIdentical(await session.run(feedsOf(entry)), entry); // a second run on the same arena
    await session.release();
    await assert.rejects(session.run(feedsOf(entry)), /released/);
  });

  test("created from a Uint8Array and an ArrayBuffer too", async () => {
    const entry = fixtures.cnn;
    const bytes = bytesOf(entry.plan);
    for (const source of [bytes, bytes.slice().buffer]) {
      const session = await InferenceSession.create(source);
      assertBitIdentical(await session.run(feedsOf(entry)), entry);
      await session.release();
    }
  });

  test("attention (int64 ids, Gather, MatMul, Transpose, Softmax): bit-identical, fetches honoured", async () => {
    const entry = fixtures.attention;
    const session = await InferenceSession.create(entry.plan);
    assert.deepEqual(session.inputMetadata[0].type, "int64");
    assertBitIdentical(await session.run(feedsOf(entry)), entry);
    assertBitIdentical(await session.run(feedsOf(entry), ["probs"]), entry, ["probs"]);
    await session.release();
  });

  test("a BERT encoder layer (gemm_packed epilogues, fused attention): bit-identical to CPython's", async () => {
    const entry = fixtures.encoder_layer;
    const session = await InferenceSession.create(entry.plan);
    assertBitIdentical(await session.run(feedsOf(entry)), entry);
    await session.release();
  });

  test("GroupQueryAttention (rope, kv_append, attention_kv over a past): bit-identical to CPython's", async () => {
    const entry = fixtures.gqa;
    const session = await InferenceSession.create(entry.plan);
    assertBitIdentical(await session.run(feedsOf(entry)), entry);
    await session.release();
  });

  test("MatMulNBits at accuracy_level 4 (int8 A, decode and prefill): bit-identical to CPython's", async () => {
    const entry = fixtures.nbits_int8;
    const session = await InferenceSession.create(entry.plan);
    assertBitIdentical(await session.run(feedsOf(entry)), entry);
    await session.release();
  });

  test("EfficientNet-Lite0 from a plan file: logits bit-identical to CPython's, espresso", async () => {
    const entry = fixtures.efficientnet;
    const session = await InferenceSession.create(entry.plan);
    const out = await session.run(feedsOf(entry));
    assertBitIdentical(out, entry);
    const logits = Object.values(out)[0].data;
    assert.equal(logits.indexOf(Math.max(...logits)), 967); // espresso
    await session.release();
  });

  test("two sessions share one kernels.wasm and keep their own arenas", async () => {
    const a = await InferenceSession.create(fixtures.cnn.plan);
    const b = await InferenceSession.create(fixtures.attention.plan);
    assertBitIdentical(await a.run(feedsOf(fixtures.cnn)), fixtures.cnn);
    assertBitIdentical(await b.run(feedsOf(fixtures.attention)), fixtures.attention);
    assertBitIdentical(await a.run(feedsOf(fixtures.cnn)), fixtures.cnn);
    await a.release();
    await b.release();
  });

  test("bad feeds: CPython's errors, and the session still runs afterwards", async () => {
    const entry = fixtures.cnn;
    const session = await InferenceSession.create(entry.plan);
    const x = feedsOf(entry).x;
    const cases = [
      [{ nope: x }, /invalid input name\(s\) \['nope'\]; the model's inputs are \['x'\]/],
      [{}, /required input\(s\) \['x'\] are missing from the feed \(got \[\]\)/],
      [{ x: new Tensor("int32", new Int32Array(x.size), x.dims) }, /input 'x' has type tensor\(int32\), expected tensor\(float\)/],
      [{ x: new Tensor("float32", x.data, [x.size, 1]) }, /input 'x' has rank 2 \(shape \[432, 1\]\), expected rank 4 \(shape \[1, 3, 12, 12\]\)/],
      [{ x: new Tensor("float32", x.data, [1, 12, 3, 12]) }, /has shape \[1, 12, 3, 12\], expected \[1, 3, 12, 12\] \(mismatch at dimension 1, 2\)/],
    ];
    for (const [feeds, pattern] of cases) {
      await assert.rejects(session.run(feeds), (e) => {
        assert.equal(e.name, "InvalidArgument");
        assert.match(e.message, pattern);
        return true;
      });
    }
    await assert.rejects(session.run({ x }, ["nope"]), /invalid output name\(s\) \['nope'\]; the model's outputs are \['logits'\]/);
    assertBitIdentical(await session.run(feedsOf(entry)), entry);
    await session.release();
  });

  test("a Gather index out of range is an error, not a wrong answer; the session stays usable", async () => {
    const entry = fixtures.attention;
    const session = await InferenceSession.create(entry.plan);
    const ids = feedsOf(entry).ids;
    const bad = new Tensor("int64", BigInt64Array.from(ids.data, (v, i) => (i === 2 ? 99n : v)), ids.dims);
    await assert.rejects(session.run({ ids: bad }), /index out of range/);
    assertBitIdentical(await session.run(feedsOf(entry)), entry);
    await session.release();
  });

  test("profiling: one event per plan op, naming the nodes and kernels CPython's trace names", async () => {
    const entry = fixtures.attention;
    const session = await InferenceSession.create(entry.plan, { enableProfiling: true });
    assertBitIdentical(await session.run(feedsOf(entry)), entry);
    const ids = feedsOf(entry).ids;
    const bad = new Tensor("int64", BigInt64Array.from(ids.data, (v, i) => (i === 2 ? 99n : v)), ids.dims);
    await assert.rejects(session.run({ ids: bad }), /index out of range in Gather node 'h'/);
    const { nodes: named, sessions } = readTrace(await session.endProfiling());
    assert.deepEqual(sessions, ["model_loading_array", "session_initialization", "model_run"]);
    assert.ok(entry.profile.length > 5);
    // the failed run stopped at the Gather: its events are the first op's
    assert.deepEqual(named, [...entry.profile, entry.profile[0]]);
    assert.deepEqual(session.providerAssignment.map((a) => a.node), [...new Set(entry.profile.map(([n]) => n.replace(/_kernel_time$/, "")))]);
    assert.deepEqual(await session.endProfiling(), []); // profiling stopped
    await session.run(feedsOf(entry));
    await session.startProfiling();
    assertBitIdentical(await session.run(feedsOf(entry)), entry);
    const again = readTrace(await session.endProfiling());
    assert.deepEqual(again.sessions, ["model_run"]);
    assert.deepEqual(again.nodes, entry.profile);
    await session.release();
    await assert.rejects(session.endProfiling(), /released/);

    // a file from before the ops table runs, its ops named by index; a table that does not match is refused
    const p = parts(bytesOf(entry.plan));
    const io = JSON.parse(p.io);
    const old = await InferenceSession.create(assemble({ io: JSON.stringify({ ...io, ops: undefined }), plan: p.plan }));
    await old.startProfiling();
    assertBitIdentical(await old.run(feedsOf(entry)), entry);
    assert.deepEqual(readTrace(await old.endProfiling()).nodes.map(([name]) => name),
                     entry.profile.map((_, k) => `#${k}_kernel_time`));
    await old.release();
    for (const ops of [io.ops.slice(1), "ops", [["a", "b"], ...io.ops.slice(1)], [[1, 2, 3], ...io.ops.slice(1)]]) {
      await assert.rejects(InferenceSession.create(assemble({ io: JSON.stringify({ ...io, ops }), plan: p.plan })),
                           (e) => e.name === "InvalidModel" && /ops table/.test(e.message));
    }
  });

  test("every refusal of the format, before anything runs", async () => {
    const good = bytesOf(fixtures.cnn.plan);
    const p = parts(good);
    const io = JSON.parse(p.io);
    const withIo = (change) => {
      const copy = structuredClone(io);
      change(copy);
      return assemble({ io: JSON.stringify(copy), plan: p.plan });
    };
    assert.deepEqual(assemble(p), good, "assemble() rebuilds the file byte for byte");

    const badMagic = good.slice();
    badMagic[3] = 0x58;
    assert.throws(() => parsePlanFile(badMagic), /wrong magic/);
    await refused(assemble({ ...p, words: { 1: 2 } }), /format_version 2/);
    await refused(assemble({ ...p, words: { 2: 2 } }), /abi_version 2 but the plan has version 1/);
    const v2 = p.plan.slice();
    new DataView(v2.buffer).setUint32(4, 2, true);
    await refused(assemble({ io: p.io, plan: v2, words: { 2: 2 } }), /abi_version 2 is not the loaded kernels.wasm's/);
    await refused(assemble({ ...p, words: { 3: 1 } }), /flags 0x1/);
    await refused(assemble({ ...p, words: { 4: p.io.length + 16 } }), /sizes/);
    await refused(assemble({ ...p, words: { 5: p.plan.length - 4 } }), /sizes/);
    await refused(assemble({ ...p, words: { 6: 12345 } }), /checksum mismatch/);
    await refused(assemble({ ...p, words: { 7: 1 } }), /reserved/);
    await refused(good.slice(0, good.length - 1), /sizes/);
    await refused(good.slice(0, 20), /shorter than the 32-byte header/);
    const flipped = good.slice();
    flipped[flipped.length - 5] ^= 1;
    await refused(flipped, /checksum mismatch/);
    const grown = new Uint8Array(good.length + 1);
    grown.set(good);
    await refused(grown, /sizes/);
    await refused(assemble({ io: p.io.slice(0, -1), plan: p.plan }), /not UTF-8 JSON/);
    await refused(assemble({ io: "[]", plan: p.plan }), /not a JSON object/);
    for (const key of ["inputs", "outputs", "producer", "model"]) {
      await refused(withIo((o) => delete o[key]), new RegExp(`lacks "${key}"`));
    }
    await refused(withIo((o) => { delete o.inputs[0].offset; }), /has no offset/);
    await refused(withIo((o) => { o.inputs[0].dtype = "complex64"; }), /unknown dtype 'complex64'/);
    await refused(withIo((o) => { o.inputs[0].shape = [1, -3]; }), /shape/);
    const arena = new DataView(p.plan.buffer).getUint32(8, true);
    await refused(withIo((o) => { o.outputs[0].offset = arena - 4; }), /beyond the plan's \d+-byte arena/);
    await refused(withIo((o) => { o.inputs[0].shape = [1, 3, 12, 1200]; }), /beyond/);
    // The file is well formed but an op is not: nnw_plan_load's own refusal, named by status.
    const badOp = p.plan.slice();
    new DataView(badOp.buffer).setInt32(32, 100000, true);
    await refused(assemble({ io: p.io, plan: badOp }), /kernels.wasm refused the plan: unknown opcode \(op 0\)/);
    // Still fine afterwards.
    const session = await InferenceSession.create(good);
    assertBitIdentical(await session.run(feedsOf(fixtures.cnn)), fixtures.cnn);
    await session.release();
  });

  test("env.wasm.wasmPaths: a folder or a file; default dist/web then the checkout", () => {
    const saved = env.wasm.wasmPaths;
    try {
      env.wasm.wasmPaths = "https://cdn.example/nnwasm/";
      assert.deepEqual(resolveKernelsURL(), ["https://cdn.example/nnwasm/kernels.wasm"]);
      env.wasm.wasmPaths = "https://cdn.example/k.wasm";
      assert.deepEqual(resolveKernelsURL(), ["https://cdn.example/k.wasm"]);
      env.wasm.wasmPaths = null;
      const [dist, checkout] = resolveKernelsURL();
      assert.ok(dist.endsWith("/dist/web/kernels.wasm"), dist);
      assert.ok(checkout.endsWith("/py_runtime/nnwasm/kernels.wasm"), checkout);
      env.wasm.wasmPaths = 3;
      assert.throws(() => resolveKernelsURL(), /env.wasm.wasmPaths must be a URL string/);
    } finally {
      env.wasm.wasmPaths = saved;
    }
  });

  test("Pyodide was never booted", () => {
    assert.equal(bootCount(), 0);
  });

  // Last: env.wasm.proxy is read once per process. Pyodide could not boot in the worker either
  // (env.pyodideIndexURL leads nowhere, and a failed boot would end the worker).
  test("env.wasm.proxy: plan sessions run in the worker, bit-identical, same errors", async () => {
    env.wasm.proxy = true;
    try {
      const a = await InferenceSession.create(fixtures.cnn.plan);
      const b = await InferenceSession.create(bytesOf(fixtures.attention.plan));
      assert.deepEqual(a.inputNames, ["x"]);
      assert.ok(a.timings.bootMs > 0 && a.timings.createMs >= 0);
      const feeds = feedsOf(fixtures.cnn);
      assertBitIdentical(await a.run(feeds), fixtures.cnn);
      assert.equal(feeds.x.data.byteLength, 432 * 4, "the caller's input stays usable");
      assertBitIdentical(await b.run(feedsOf(fixtures.attention), ["probs"]), fixtures.attention, ["probs"]);
      await assert.rejects(a.run({ x: new Tensor("float32", feeds.x.data, [1, 12, 3, 12]) }), (e) =>
        e.name === "InvalidArgument" && /mismatch at dimension 1, 2/.test(e.message));
      await assert.rejects(InferenceSession.create(assemble({ ...parts(bytesOf(fixtures.cnn.plan)), words: { 6: 1 } })), (e) =>
        e.name === "InvalidModel" && /checksum mismatch/.test(e.message));
      assertBitIdentical(await a.run(feedsOf(fixtures.cnn)), fixtures.cnn);
      await a.startProfiling();
      assertBitIdentical(await a.run(feedsOf(fixtures.cnn)), fixtures.cnn);
      assert.deepEqual(readTrace(await a.endProfiling()).nodes, fixtures.cnn.profile);
      const c = await InferenceSession.create(fixtures.cnn.plan, { enableProfiling: true });
      await c.run(feedsOf(fixtures.cnn));
      assert.deepEqual(readTrace(await c.endProfiling()).sessions, ["model_loading_array", "session_initialization", "model_run"]);
      await c.release();
      await a.release();
      await assert.rejects(a.run(feedsOf(fixtures.cnn)), /released/);
      await b.release();
      assert.equal(bootCount(), 0);
    } finally {
      stopProxyWorker();
    }
  });
});
