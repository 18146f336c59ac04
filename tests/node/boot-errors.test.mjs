// A broken or slow Pyodide install must reject create() with an Error that says what is wrong,
// never end the process (Pyodide's loader does, on a missing file) or hang; and once the setting
// is fixed, the next create() boots.
import assert from "node:assert/strict";
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { env, InferenceSession } from "../../web/nnwasm.mjs";
import "./fixtures.mjs";   // applies NNWASM_DIST_URL, as the other tests do

const MODEL = fileURLToPath(new URL("../../demo/assets/efficientnet-lite0.onnx", import.meta.url));

test("env.bootTimeoutMs must be a non-negative number (checked at boot, so before any boot succeeds)", async () => {
  env.bootTimeoutMs = "soon";
  try {
    await assert.rejects(InferenceSession.create(MODEL), TypeError);
  } finally {
    env.bootTimeoutMs = 120_000;
  }
});

test("a Pyodide folder missing pyodide.asm.wasm is named, and the process lives on", async () => {
  const good = env.pyodideIndexURL;
  const broken = mkdtempSync(join(tmpdir(), "nnwasm-pyodide-"));
  const from = new URL("pyodide/", new URL(env.distURL, `file://${process.cwd()}/`));
  cpSync(fileURLToPath(from), broken, { recursive: true });
  rmSync(join(broken, "pyodide.asm.wasm"));
  env.pyodideIndexURL = broken + "/";
  try {
    await assert.rejects(InferenceSession.create(MODEL), (e) => {
      assert.match(e.message, /Pyodide's files are missing/);
      assert.match(e.message, /pyodide\.asm\.wasm/);
      assert.doesNotMatch(e.message, /python_stdlib\.zip/);
      return true;
    });
  } finally {
    env.pyodideIndexURL = good;
    rmSync(broken, { recursive: true, force: true });
  }
});

test("a boot slower than env.bootTimeoutMs rejects, and a later create() boots", async () => {
  env.bootTimeoutMs = 1;
  try {
    await assert.rejects(InferenceSession.create(MODEL), /did not start within 0\.001 s/);
  } finally {
    env.bootTimeoutMs = 120_000;
  }
  const session = await InferenceSession.create(MODEL);
  assert.deepEqual(session.inputNames, ["input"]);
  await session.release();
});
