// Runs transformers.js pipelines (tfjs-cases.mjs) on local models in Node and prints their outputs
// as one JSON object, {case: {output} | {error}}. tests/test_transformers_js.py copies both files into a scratch npm
// project (where "@huggingface/transformers" resolves to the installed package, its
// onnxruntime-node replaced by nnwasm or not) and compares the two projects' outputs.
//
//   node tfjs-pipelines.mjs MODELS_DIR [case ...]        (cases: tfjs-cases.mjs's NAMES; default: all)
//
// Every fetch() of a non-file URL is refused and counted: nothing may leave the machine. (The
// package is imported after fetch is replaced: its modules may keep a reference to it.)
const [modelsDir, ...only] = process.argv.slice(2);
if (!modelsDir) throw new Error("usage: node tfjs-pipelines.mjs MODELS_DIR [case ...]");

const fetched = [];
const realFetch = globalThis.fetch;
globalThis.fetch = async (url, ...rest) => {
  const href = String(url?.url ?? url);
  if (href.startsWith("file:")) return realFetch(url, ...rest);
  fetched.push(href);
  throw new TypeError(`fetch refused in this test: ${href}`);
};
const transformers = await import("@huggingface/transformers");
const { runCases } = await import("./tfjs-cases.mjs");
const { env } = transformers;
env.allowRemoteModels = false;
env.allowLocalModels = true;
env.localModelPath = modelsDir.endsWith("/") ? modelsDir : modelsDir + "/";
env.useBrowserCache = false;
env.useFSCache = false;

const results = await runCases(transformers, only.length ? only : undefined);
results._fetched = fetched;
process.stdout.write(JSON.stringify(results) + "\n");
process.exit(0); // a pipeline's worker or timer must not keep the process alive
