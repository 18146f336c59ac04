// Run by pyodide-boot.test.mjs in a fresh process (boot() happens once per realm):
//   node boot-child.mjs DIST_URL SNAPSHOT(true|false)
// boots, creates an EfficientNet-Lite0 session on WASM and runs it on zeros; prints one JSON line:
// {steps: [boot step names], imported: [modules the session imported], pinned: [...], logits: [first 5]}.
import { fileURLToPath } from "node:url";
import { env, InferenceSession, Tensor } from "../../web/nnwasm.mjs";
import { boot } from "../../web/pyodide-boot.mjs";

// Modules a session whose nodes all run on WASM must never import in Pyodide.
export const NEVER_IMPORTED = ["numpy", "nnwasm.onnx_io.save", "nnwasm.plan_compile", "nnwasm.plan_session",
                               "nnwasm.inspect_model", "nnwasm.__main__"];

const MODEL = fileURLToPath(new URL("../../demo/assets/efficientnet-lite0.onnx", import.meta.url));

export async function bootAndRun() {
  const { pyodide, steps } = await boot();
  const modules = () => pyodide.runPython("import sys; sorted(sys.modules)").toJs();
  const before = modules();
  const session = await InferenceSession.create(MODEL, { executionProviders: ["wasm"] });
  const out = await session.run({ input: new Tensor("float32", new Float32Array(3 * 224 * 224), [1, 3, 224, 224]) });
  await session.release();
  const after = modules();
  return {
    steps: Object.keys(steps),
    imported: after.filter((m) => !before.includes(m)),
    pinned: NEVER_IMPORTED.filter((m) => after.includes(m)),
    logits: Array.from(out[session.outputNames[0]].data.slice(0, 5)),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  env.distURL = process.argv[2];
  env.pyodideSnapshot = process.argv[3] === "true";
  console.log(JSON.stringify(await bootAndRun()));
}
