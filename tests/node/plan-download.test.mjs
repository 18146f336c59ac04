// Plan files fetched over http: their weights go straight into kernels.wasm's memory as they
// arrive (web/plan-receiver.mjs), in pieces of any size, with the same outputs (bit-identical to
// CPython's) and the same refusals as the file given as bytes; a failed download or a refused file
// leaves later sessions working. Fixtures: tests/test_plan_runner_js.py (NNWASM_PLAN_FIXTURES).
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { InferenceSession } from "../../web/nnwasm.mjs";
import { filePieces } from "../../web/load-bytes.mjs";
import { crc32 } from "../../web/plan-file.mjs";
import { receivedPlans } from "../../web/plan-receiver.mjs";
import { assertBitIdentical, bytesOf, feedsOf, fixtures, skip } from "./plan-fixtures.mjs";

// path -> {body, pieces (bytes a write), declared (Content-Length, default the body's)}
const files = new Map();
let server, base;

function serve(name, body, { pieces = [65536], declared = body.length } = {}) {
  files.set(`/${name}`, { body, pieces, declared });
  return `${base}/${name}`;
}

async function refusal(make) {
  try {
    await make();
  } catch (e) {
    return `${e.name}: ${e.message}`;
  }
  assert.fail("not refused");
}

describe("plan files downloaded piece by piece into kernels.wasm", { skip }, () => {
  before(async () => {
    server = createServer(async (req, res) => {
      const f = files.get(req.url);
      if (!f) return res.writeHead(404).end();
      res.writeHead(200, { "Content-Type": "application/octet-stream", "Content-Length": f.declared });
      let at = 0;
      for (let k = 0; at < f.body.length; k++) {
        const n = f.pieces[k % f.pieces.length];
        res.write(f.body.subarray(at, at + n));
        at += n;
        await new Promise((resolve) => setImmediate(resolve)); // separate pieces on the wire
      }
      if (f.declared > f.body.length) res.destroy(); // a download cut short
      else res.end();
    });
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${server.address().port}`;
  });
  after(() => server.close());

  test("every fixture, in pieces of 1 byte to 64 KB: outputs bit-identical to CPython's, weights placed as they came", async () => {
    const placed = receivedPlans();
    const names = Object.keys(fixtures).filter((n) => fixtures[n].plan);
    for (const [i, name] of names.entries()) {
      const entry = fixtures[name];
      const pieces = [[65536], [7, 1, 4096, 13], [1, 31, 2, 3000]][i % 3];
      const session = await InferenceSession.create(serve(`${name}.nnwp`, bytesOf(entry.plan), { pieces }));
      assertBitIdentical(await session.run(feedsOf(entry)), entry);
      await session.release();
    }
    assert.equal(receivedPlans() - placed, names.length);
  });

  test("a plan file's path in Node is read in pieces the same way, straight into kernels.wasm", async () => {
    const placed = receivedPlans();
    const names = Object.keys(fixtures).filter((n) => fixtures[n].plan);
    const dir = mkdtempSync(join(tmpdir(), "nnwasm-plans-"));
    const saved = filePieces.bytes;
    try {
      for (const [i, name] of names.entries()) {
        filePieces.bytes = [1000, 7, 65536][i % 3];
        const session = await InferenceSession.create(fixtures[name].plan);
        assertBitIdentical(await session.run(feedsOf(fixtures[name])), fixtures[name]);
        await session.release();
      }
      assert.equal(receivedPlans() - placed, names.length);
      const flipped = bytesOf(fixtures.cnn.plan).slice();
      flipped[flipped.length - 5] ^= 0x40;
      writeFileSync(join(dir, "flipped.nnwp"), flipped);
      assert.equal(await refusal(() => InferenceSession.create(join(dir, "flipped.nnwp"))),
                   await refusal(() => InferenceSession.create(flipped)));
    } finally {
      filePieces.bytes = saved;
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("a damaged, cut, or inconsistent file is refused as it is when given as bytes; sessions after it work", async () => {
    const entry = fixtures.cnn, good = bytesOf(entry.plan);
    const flipped = good.slice();
    flipped[flipped.length - 5] ^= 0x40; // in the weights
    assert.equal(await refusal(() => InferenceSession.create(serve("flipped.nnwp", flipped, { pieces: [100] }))),
                 await refusal(() => InferenceSession.create(flipped)));
    assert.match(await refusal(() => InferenceSession.create(serve("flipped.nnwp", flipped))), /InvalidModel: .*checksum mismatch/);

    const short = good.slice(0, good.length - 100); // the header's sizes no longer add up
    assert.equal(await refusal(() => InferenceSession.create(serve("short.nnwp", short))),
                 await refusal(() => InferenceSession.create(short)));

    // a plan header whose weights lie past the plan: kept in JS whole and refused by the usual path
    const bad = good.slice();
    const io = new DataView(bad.buffer).getUint32(16, true), planAt = 32 + Math.ceil(io / 16) * 16;
    new DataView(bad.buffer).setUint32(planAt + 12, 0x7fffff00, true);
    new DataView(bad.buffer).setUint32(24, crc32(bad.subarray(32)), true);
    assert.equal(await refusal(() => InferenceSession.create(serve("bad.nnwp", bad))),
                 await refusal(() => InferenceSession.create(bad)));

    assert.match(await refusal(() => InferenceSession.create(serve("cut.nnwp", good.subarray(0, good.length >> 1),
                                                                   { declared: good.length }))), /cannot fetch|terminated|socket/i);

    const session = await InferenceSession.create(serve("good.nnwp", good));
    assertBitIdentical(await session.run(feedsOf(entry)), entry);
    await session.release();
  });

  test("memory is given back: a hundred refused and released downloads do not grow kernels.wasm's memory", async () => {
    const entry = fixtures.cnn, good = bytesOf(entry.plan);
    const flipped = good.slice();
    flipped[flipped.length - 5] ^= 1;
    const { loadKernels } = await import("../../web/plan-session.mjs");
    const memory = (await loadKernels()).exports.memory;
    for (let i = 0; i < 5; i++) (await InferenceSession.create(serve("g.nnwp", good))).release();
    const before = memory.buffer.byteLength;
    for (let i = 0; i < 50; i++) {
      await refusal(() => InferenceSession.create(serve("f.nnwp", flipped)));
      await (await InferenceSession.create(serve("g.nnwp", good))).release();
    }
    assert.equal(memory.buffer.byteLength, before);
  });
});
