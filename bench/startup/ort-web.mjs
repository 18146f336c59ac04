// The demo's start-up path on onnxruntime-web 1.30 (wasm backend, one thread, no proxy), for
// bench/startup/bench_startup.py: the same model (.onnx), photo and preprocessing (demo/image.mjs, preprocess.mjs),
// the same overlap of downloads, and the same marks on the page's timeline.
import * as ort from "/node_modules/onnxruntime-web/dist/ort.wasm.min.mjs";
import { decodeImage } from "/demo/image.mjs";
import { checkRecipe, preprocess } from "/demo/preprocess.mjs";

performance.mark("demo-modules");
ort.env.wasm.numThreads = 1;
ort.env.wasm.proxy = false;
ort.env.wasm.wasmPaths = "/node_modules/onnxruntime-web/dist/";

const RECIPE_URL = new URL("/demo/assets/efficientnet-lite0.json", location.href);
const state = { timings: {}, firstResultMs: null };
window.nnwasmDemo = state;

async function fetchOk(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`cannot fetch ${url}: HTTP ${response.status}`);
  return response;
}

async function prepare(blob, recipe) {
  const t0 = performance.now();
  const image = await decodeImage(blob);
  const { data, dims } = preprocess(image.data, image.width, image.height, recipe);
  state.timings.preMs = performance.now() - t0;
  performance.mark("demo-input");
  return new ort.Tensor("float32", data, dims);
}

async function main() {
  const recipe = checkRecipe(await (await fetchOk(RECIPE_URL)).json());
  const labels = fetchOk(new URL(recipe.labels, RECIPE_URL)).then((r) => r.json());
  // as demo/app.mjs's fetchBlob: through arrayBuffer(), as blob() of the preload failed now and then
  const input = fetchOk("/demo/assets/coffee.png").then(async (r) => new Blob([await r.arrayBuffer()], { type: "image/png" }))
    .then((b) => prepare(b, recipe));
  const t0 = performance.now();
  const session = await ort.InferenceSession.create(new URL(recipe.model, RECIPE_URL).href, { executionProviders: ["wasm"] });
  state.timings.createMs = performance.now() - t0;
  performance.mark("demo-session");
  const feeds = { [recipe.input]: await input };
  const t1 = performance.now();
  const out = await session.run(feeds);
  state.timings.firstRunMs = performance.now() - t1;
  const logits = out[recipe.output].data;
  let best = 0;
  for (let i = 1; i < logits.length; i++) if (logits[i] > logits[best]) best = i;
  document.getElementById("top1").textContent = (await labels)[best];
  performance.mark("demo-first-result");
  state.firstResultMs = performance.now();
}

main().catch((err) => {
  console.error(err);
  const box = document.getElementById("error");
  box.textContent = `${err.name}: ${err.message}`;
  box.hidden = false;
});
