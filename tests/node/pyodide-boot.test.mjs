// The Pyodide boot: from the memory snapshot build_web.py makes (Python started, nnwasm imported),
// with a clean fallback to starting Python from scratch; and what a WASM-only session imports.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";
import { env } from "../../web/nnwasm.mjs";
import { bootAndRun } from "./boot-child.mjs";
import "./fixtures.mjs"; // applies NNWASM_DIST_URL, as the other tests do

const CHILD = fileURLToPath(new URL("./boot-child.mjs", import.meta.url));
const SNAPSHOT_STEP = "loadPyodide resolved (from the snapshot)";
const COLD_STEP = "loadPyodide resolved";
const distDir = () => fileURLToPath(new URL(env.distURL, pathToFileURL(process.cwd() + "/")));

/** bootAndRun() in a fresh process, over distURL. */
function child(distURL, snapshot = true) {
  return JSON.parse(execFileSync(process.execPath, [CHILD, distURL, String(snapshot)], { encoding: "utf8" }));
}

/** A copy of dist/web/ changed by edit(dir), for one child boot. */
function withDistCopy(edit, fn) {
  const dir = mkdtempSync(join(tmpdir(), "nnwasm-dist-"));
  try {
    cpSync(distDir(), dir, { recursive: true });
    edit(dir);
    return fn(pathToFileURL(dir + "/").href);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

let reference = null; // this process's run: booted from the snapshot

test("build_web.py names a snapshot made from its wheel", () => {
  const manifest = JSON.parse(readFileSync(join(distDir(), "nnwasm-web.json"), "utf8"));
  assert.equal(manifest.pyodideSnapshot, "pyodide-snapshot.bin.gz");
  assert.match(manifest.pyodideSnapshotWheelSha256, /^[0-9a-f]{64}$/);
});

test("boot() starts from the snapshot, and a WASM-only session then imports no module at all", async () => {
  reference = await bootAndRun();
  assert.ok(reference.steps.includes(SNAPSHOT_STEP), reference.steps.join(", "));
  assert.deepEqual(reference.imported, []);
  assert.deepEqual(reference.pinned, []);
});

test("without the snapshot: the same outputs, and the session never imports numpy, the ONNX writer or the plan modules", () => {
  const cold = child(env.distURL, false);
  assert.ok(cold.steps.includes(COLD_STEP) && !cold.steps.includes(SNAPSHOT_STEP), cold.steps.join(", "));
  assert.deepEqual(cold.pinned, []);
  assert.deepEqual(cold.logits, reference.logits);
});

test("a snapshot that is not gzip falls back to starting Python from scratch", () => {
  const out = withDistCopy((dir) => writeFileSync(join(dir, "pyodide-snapshot.bin.gz"), "not a snapshot"), (url) => child(url));
  assert.ok(out.steps.some((s) => s.startsWith("snapshot not used")), out.steps.join(", "));
  assert.ok(out.steps.includes(COLD_STEP));
  assert.deepEqual(out.logits, reference.logits);
});

test("a snapshot made from another wheel is not used", () => {
  const out = withDistCopy((dir) => {
    const path = join(dir, "nnwasm-web.json");
    const manifest = JSON.parse(readFileSync(path, "utf8"));
    manifest.pyodideSnapshotWheelSha256 = "0".repeat(64);
    writeFileSync(path, JSON.stringify(manifest));
  }, (url) => child(url));
  assert.ok(out.steps.includes("snapshot not used (the snapshot was made from another wheel)"), out.steps.join(", "));
  assert.deepEqual(out.logits, reference.logits);
});
