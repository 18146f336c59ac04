// The demo page: boot nnwasm, load EfficientNet-Lite0, classify the default photo, then any
// image the visitor picks or drops. Everything follows assets/efficientnet-lite0.json.
import { boot, env, InferenceSession, Tensor } from "../web/nnwasm.mjs";
import { checkRecipe, preprocess } from "./preprocess.mjs";

const RECIPE_URL = new URL("assets/efficientnet-lite0.json", import.meta.url);
const DEFAULT_PHOTO = new URL("assets/coffee.png", import.meta.url);
const TOP_K = 5;
const params = new URLSearchParams(location.search);
env.debug = params.has("debug"); // /demo/?debug logs boot steps
// Pyodide boots and sessions run in a worker, so the page keeps painting meanwhile; /demo/?noproxy
// runs them on this thread instead, for comparison (the page then freezes for seconds at boot).
env.wasm.proxy = !params.has("noproxy");

const $ = (id) => document.getElementById(id);
const state = { session: null, recipe: null, labels: null, input: null, busy: false, runs: 0 };
window.nnwasmDemo = state; // for tests and the curious: the session, the last input tensor

function status(text) {
  $("status").textContent = text;
}

function showError(err) {
  console.warn(err);
  $("error").textContent = `${err.name ?? "Error"}: ${err.message}`; // nnwasm errors carry the Python type
  $("error").hidden = false;
  status("Something went wrong (details below).");
}

function ms(value) {
  return value >= 1000 ? `${(value / 1000).toFixed(2)} s` : `${value.toFixed(1)} ms`;
}

async function fetchOk(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`cannot fetch ${url}: HTTP ${response.status}`);
  return response;
}

const fetchJSON = async (url) => (await fetchOk(url)).json();
const fetchBytes = async (url) => new Uint8Array(await (await fetchOk(url)).arrayBuffer());
const fetchBlob = async (url) => (await fetchOk(url)).blob();

function softmax(logits) {
  const max = logits.reduce((a, b) => Math.max(a, b), -Infinity);
  const exps = Array.from(logits, (v) => Math.exp(v - max));
  const sum = exps.reduce((a, b) => a + b, 0);
  return exps.map((v) => v / sum);
}

function showPredictions(probs) {
  const top = probs.map((p, i) => [p, i]).sort((a, b) => b[0] - a[0]).slice(0, TOP_K);
  const list = $("predictions");
  list.replaceChildren(...top.map(([p, i]) => {
    const item = document.createElement("li");
    const name = document.createElement("span");
    name.className = "label";
    name.textContent = state.labels[i];
    const bar = document.createElement("meter");
    bar.min = 0;
    bar.max = 1;
    bar.value = p;
    bar.setAttribute("aria-label", `${state.labels[i]} probability`);
    const pct = document.createElement("span");
    pct.className = "pct";
    pct.textContent = `${(p * 100).toFixed(1)}%`;
    item.append(name, bar, pct);
    return item;
  }));
  $("top1").textContent = state.labels[top[0][1]];
  $("photo").alt = `The photo being classified: ${state.labels[top[0][1]]}, ${(top[0][0] * 100).toFixed(0)}%`;
}

function showProviders(assignment) {
  const counts = {};
  for (const { provider } of assignment) counts[provider] = (counts[provider] ?? 0) + 1;
  $("providers").replaceChildren(...Object.entries(counts).map(([provider, n]) => {
    const item = document.createElement("li");
    item.textContent = `${provider}: ${n} node${n === 1 ? "" : "s"}`;
    return item;
  }));
}

async function decode(blob) {
  let bitmap;
  try {
    bitmap = await createImageBitmap(blob);
  } catch {
    throw new Error(`cannot decode ${blob.name ?? "the image"}: not an image this browser can read`);
  }
  const canvas = document.createElement("canvas");
  canvas.width = bitmap.width;
  canvas.height = bitmap.height;
  const ctx = canvas.getContext("2d", { willReadFrequently: true });
  ctx.drawImage(bitmap, 0, 0); // native size: the resize is preprocess()'s, not the canvas's
  bitmap.close();
  return ctx.getImageData(0, 0, canvas.width, canvas.height);
}

async function classify(blob, url) {
  if (state.busy) {
    URL.revokeObjectURL(url);
    status("Still working on the previous image: try again in a moment.");
    return;
  }
  state.busy = true;
  $("error").hidden = true;
  try {
    status("Classifying…");
    const t0 = performance.now();
    const image = await decode(blob); // before showing it: a file that is no image changes nothing
    if ($("photo").src.startsWith("blob:")) URL.revokeObjectURL($("photo").src);
    $("photo").src = url;
    const { data, dims } = preprocess(image.data, image.width, image.height, state.recipe);
    state.input = new Tensor("float32", data, dims);
    $("t-pre").textContent = ms(performance.now() - t0);
    const t1 = performance.now();
    const out = await state.session.run({ [state.recipe.input]: state.input });
    // The first run also waits for V8 to finish optimising kernels.wasm: "Time 10 runs" shows the steady state.
    $("t-run").textContent = ms(performance.now() - t1) + (state.runs++ === 0 ? " (first run)" : "");
    showPredictions(softmax(out[state.recipe.output].data));
    status("Done. Drop another image, or choose a file.");
  } catch (err) {
    if ($("photo").src !== url) URL.revokeObjectURL(url);
    showError(err);
  } finally {
    state.busy = false;
  }
}

async function benchmark() {
  if (state.busy || !state.input) return;
  state.busy = true;
  $("bench").disabled = true;
  status("Timing 10 runs…");
  const times = [];
  try {
    for (let i = 0; i < 10; i++) {
      const t = performance.now();
      await state.session.run({ [state.recipe.input]: state.input });
      times.push(performance.now() - t);
      await new Promise((resolve) => setTimeout(resolve)); // let the page repaint between runs
    }
    times.sort((a, b) => a - b);
    $("t-run").textContent = `${ms(times[5])} (median of 10; best ${ms(times[0])})`;
    status("Timed 10 runs.");
  } catch (err) {
    showError(err);
  } finally {
    state.busy = false;
    $("bench").disabled = false;
  }
}

function wireInputs() {
  const zone = $("dropzone");
  $("file").addEventListener("change", (e) => {
    const file = e.target.files[0];
    if (file) classify(file, URL.createObjectURL(file));
  });
  zone.addEventListener("dragover", (e) => {
    e.preventDefault();
    zone.classList.add("over");
  });
  zone.addEventListener("dragleave", () => zone.classList.remove("over"));
  zone.addEventListener("drop", (e) => {
    e.preventDefault();
    zone.classList.remove("over");
    const file = e.dataTransfer.files[0];
    if (file) classify(file, URL.createObjectURL(file));
  });
  $("bench").addEventListener("click", benchmark);
}

async function main() {
  wireInputs();
  status(`Starting Python (Pyodide) and nnwasm${env.wasm.proxy ? " in a worker" : ""}, downloading EfficientNet-Lite0…`);
  const recipe = checkRecipe(await fetchJSON(RECIPE_URL));
  state.recipe = recipe;
  // Downloads overlap Pyodide's start-up, the longest step.
  const [runtime, labels, model, photo] = await Promise.all([
    boot(),
    fetchJSON(new URL(recipe.labels, RECIPE_URL)),
    fetchBytes(new URL(recipe.model, RECIPE_URL)),
    fetchBlob(DEFAULT_PHOTO),
  ]);
  state.labels = labels;
  $("t-boot").textContent = ms(runtime.bootMs);

  status("Preparing EfficientNet-Lite0…");
  const t0 = performance.now();
  // No executionProviders: nnwasm's default order, so the counts below show what it chose.
  state.session = await InferenceSession.create(model);
  $("t-create").textContent = ms(performance.now() - t0);
  showProviders(state.session.providerAssignment);

  await classify(photo, URL.createObjectURL(photo));
  $("bench").disabled = false;
}

main().catch(showError);
