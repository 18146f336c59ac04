// `npm pack`'s prepack step: refuses to pack a dist/web/ that is missing or stale, naming what
// is wrong. build_scripts/build_web.py lists every file it writes there in nnwasm-web.json
// ("files", with SHA-256s) and a digest of the .py sources the wheel was built from; this checks
// that dist/web/ holds exactly those files, that the sources and kernels.wasm still hash the same,
// and that the versions in package.json, web/env.mjs, the wheel and the manifest agree.
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { env } from "../web/env.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const WEB = `${ROOT}dist/web/`;
const REBUILD = "run `make web` (or `python build_scripts/build_web.py`) and `npm pack` again";

const sha256 = (data) => createHash("sha256").update(data).digest("hex");
const hashFile = (path) => sha256(readFileSync(path));

function fail(problems) {
  console.error(`check_dist.mjs: not packing dist/web/:\n  ${problems.join("\n  ")}\n${REBUILD}`);
  process.exit(1);
}

// The same digest as build_web.py's sources_sha256().
function sourcesSha256() {
  const files = readdirSync(`${ROOT}py_runtime/nnwasm`, { recursive: true })
    .map((f) => `nnwasm/${f.split("\\").join("/")}`)
    .filter((f) => f.endsWith(".py") && !f.includes("/__pycache__/"))
    .sort();
  return sha256(files.map((f) => `${hashFile(`${ROOT}py_runtime/${f}`)}  ${f}\n`).join(""));
}

if (!existsSync(`${WEB}nnwasm-web.json`)) fail(["dist/web/nnwasm-web.json is missing: dist/web/ was never built"]);
const manifest = JSON.parse(readFileSync(`${WEB}nnwasm-web.json`, "utf8"));
if (typeof manifest.files !== "object" || manifest.files === null) {
  fail(["dist/web/nnwasm-web.json lists no files: it was written by an older build_web.py"]);
}
const problems = [];

const present = readdirSync(WEB, { recursive: true, withFileTypes: true })
  .filter((d) => d.isFile())
  .map((d) => `${d.parentPath ?? d.path}/${d.name}`.slice(WEB.length).replace(/^\/+/, "").split("\\").join("/"))
  .filter((f) => f !== "nnwasm-web.json");
for (const f of present) {
  if (!(f in manifest.files)) problems.push(`dist/web/${f} was not written by build_web.py (delete it)`);
}
for (const [f, hash] of Object.entries(manifest.files)) {
  if (!existsSync(WEB + f)) problems.push(`dist/web/${f} is missing`);
  else if (hashFile(WEB + f) !== hash) problems.push(`dist/web/${f} changed after build_web.py wrote it`);
}

const kernels = `${ROOT}py_runtime/nnwasm/kernels.wasm`;
if (existsSync(kernels) && hashFile(kernels) !== manifest.kernelsSha256) {
  problems.push("py_runtime/nnwasm/kernels.wasm changed since dist/web/ was built");
}
if (sourcesSha256() !== manifest.sourcesSha256) {
  problems.push("py_runtime/nnwasm/*.py changed since the wheel in dist/web/ was built");
}

const pkg = JSON.parse(readFileSync(`${ROOT}package.json`, "utf8"));
const wheelVersion = /^nnwasm-([^-]+)-/.exec(manifest.wheel ?? "")?.[1];
if (pkg.version !== env.versions.nnwasm || pkg.version !== wheelVersion) {
  problems.push(`versions differ: package.json ${pkg.version}, web/env.mjs ${env.versions.nnwasm}, wheel ${manifest.wheel}`);
}
const pyodide = pkg.devDependencies?.pyodide;
if (pyodide !== env.versions.pyodide || pyodide !== manifest.pyodideVersion) {
  problems.push(`Pyodide versions differ: package.json ${pyodide}, web/env.mjs ${env.versions.pyodide}, ` +
                `dist/web/ ${manifest.pyodideVersion}`);
}

if (problems.length > 0) fail(problems);
console.log(`check_dist.mjs: dist/web/ is up to date (${Object.keys(manifest.files).length} files, ` +
            `${manifest.wheel}, Pyodide ${manifest.pyodideVersion})`);
