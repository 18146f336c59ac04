// The demo page: classify the default photo with EfficientNet-Lite0, then any image the visitor
// picks or drops. By default the model is its committed plan file (.nnwp), run by kernels.wasm
// alone: no Python is downloaded. Opening an .onnx model (a picked or dropped file, or /demo/?onnx
// for the committed one) boots Python in Pyodide, only then. Everything follows
// assets/efficientnet-lite0.json.
import { boot, env, InferenceSession, Tensor } from "../web/nnwasm.mjs";
import { loadKernels, warmUpKernels } from "../web/plan-session.mjs";
import { decodeImage } from "./image.mjs";
import { checkRecipe, preprocess } from "./preprocess.mjs";

const RECIPE_URL = new URL("assets/efficientnet-lite0.json", import.meta.url);
const DEFAULT_PHOTO = new URL("assets/coffee.png", import.meta.url);
const TOP_K = 5;
// Marks on the page's timeline (bench/startup/bench_startup.py reads them; "first-result" is when the
// first top-1 is on screen): the modules have loaded, the session exists, the photo is an input.
const mark = (name) => performance.mark(`demo-${name}`);
mark("modules");
const params = new URLSearchParams(location.search);
env.debug = params.has("debug"); // /demo/?debug logs boot steps
// A plan run is one call into kernels.wasm (tens of ms), so the plan runs on this thread; ?proxy
// runs it in the worker instead. Pyodide takes seconds to boot, so it boots in the worker unless
// ?noproxy (the page then freezes meanwhile). Plan sessions follow env.wasm.proxy as it is when
// they are created; the first .onnx session fixes it for good.
const PYODIDE_IN_WORKER = !params.has("noproxy");
env.wasm.proxy = params.has("onnx") ? PYODIDE_IN_WORKER : params.has("proxy");
// A plan is coming: kernels.wasm (preloaded by index.html) is instantiated at once and warmed up
// while the plan downloads (web/plan-session.mjs, "The warm-up"), so the first run is optimized
// code (~45 ms instead of ~110 ms). ?nowarmup only loads it, for comparison (bench_startup.py's
// plan-nowarmup page). With ?proxy the plan runs in the worker, which loads its own.
env.wasm.warmUp = !params.has("nowarmup");
// kernels.wasm's flavour (web/flavours.mjs): relaxed SIMD where the browser has it; ?simd forces the
// baseline (bit-identical everywhere), ?relaxed the relaxed one. index.html preloads the same file.
if (params.has("simd")) env.wasm.relaxedSimd = false;
else if (params.has("relaxed")) env.wasm.relaxedSimd = true;
// Threads (web/threads.mjs): ?threads=N, else onnxruntime-web's default, min(4, ceil(cores / 2))
// when the page is cross-origin isolated (demo/serve.py sends COOP/COEP): 2 threads on 4 cores, 1
// on 2 (there a second thread shares the cores with the page's own work: docs/threads.md measured a
// slower first result). More than one runs the flavour's build with atomics (kernels-relaxed-threads.wasm
// where relaxed SIMD validates, else kernels-threads.wasm); the
// helpers start while the plan downloads and runs use them once they are ready.
if (params.has("threads")) env.wasm.numThreads = Number(params.get("threads"));
if (!params.has("onnx") && !params.has("proxy")) (env.wasm.warmUp ? warmUpKernels() : loadKernels()).catch(() => {});

const $ = (id) => document.getElementById(id);
const state = { session: null, recipe: null, labels: null, input: null, busy: false, runs: 0, firstResultMs: null,
                timings: {} }; // ms: bootMs, createMs, preMs, firstRunMs (as shown)
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
// Through arrayBuffer(): in headless Chromium under load, blob() of the preloaded photo failed now
// and then with "TypeError: Failed to fetch" though its download had ended well (2 page loads in 50).
const fetchBlob = async (url) => {
  const response = await fetchOk(url);
  return new Blob([await response.arrayBuffer()], { type: response.headers.get("content-type") ?? "" });
};

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
  $("photo").setAttribute("aria-label", `The photo being classified: ${state.labels[top[0][1]]}, ${(top[0][0] * 100).toFixed(0)}%`);
  if (state.firstResultMs === null) {
    mark("first-result");
    state.firstResultMs = performance.now(); // since the navigation started
    $("t-first").textContent = ms(state.firstResultMs);
  }
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

/** Which model runs, and how: shown above the timings. */
function showPath(session, { plan, name }) {
  $("path").textContent = plan
    ? `${name}: a plan file, run by kernels.wasm alone (no Python)`
    : `${name}: an ONNX model, run by nnwasm in Python (Pyodide) driving kernels.wasm`;
  $("boot-label").textContent = plan ? "Load kernels.wasm" : "Start Python + nnwasm";
  $("t-boot").textContent = ms(session.timings.bootMs);
  state.timings.bootMs ??= session.timings.bootMs;
  if (plan) {
    const item = document.createElement("li");
    item.textContent = "WasmExecutionProvider: every node (compiled into the plan)";
    $("providers").replaceChildren(item);
  } else {
    showProviders(session.providerAssignment);
  }
  const flavour = document.createElement("li");
  flavour.id = "kernels-flavour";
  flavour.textContent = `kernels.wasm flavour: ${session.kernelsFlavour ?? "?"}` +
    ({ relaxed: " (relaxed SIMD: fused multiply-add)", simd: " (SIMD128, bit-identical everywhere)",
       "simd+threads": " (SIMD128 with atomics on a shared memory, bit-identical everywhere)",
       "relaxed+threads": " (relaxed SIMD with atomics on a shared memory)" }[session.kernelsFlavour] ?? "");
  const threads = document.createElement("li");
  threads.id = "threads";
  $("providers").append(flavour, threads);
  showThreads(session);
}

/** The threads env.wasm.numThreads asks for (?threads=N, else onnxruntime-web's default). */
function defaultThreads() {
  const n = env.wasm.numThreads;
  return Number.isInteger(n) && n > 0 ? n : Math.min(4, Math.ceil((navigator.hardwareConcurrency || 1) / 2));
}

/** How many threads the last run used (web/threads.mjs: the helpers join once started). */
function showThreads(session) {
  const item = $("threads");
  if (!item) return;
  const n = session.numThreads ?? 1, asked = session.kernelsFlavour?.endsWith("+threads") ? defaultThreads() : 1;
  item.textContent = n > 1 ? `threads: ${n} (Web Workers on a shared memory; the page is cross-origin isolated)`
    : asked > 1 && self.crossOriginIsolated ? `threads: 1 so far (${asked - 1} helper${asked > 2 ? "s" : ""} starting)`
    : `threads: 1${self.crossOriginIsolated ? "" : " (the page is not cross-origin isolated)"}`;
}

/** The model input for an image; throws on a file that is no image. */
async function prepare(blob) {
  const t0 = performance.now();
  const image = await decodeImage(blob);
  const { data, dims } = preprocess(image.data, image.width, image.height, state.recipe);
  return { tensor: new Tensor("float32", data, dims), ms: performance.now() - t0 };
}

/** Runs the session on a prepared input and shows the result. */
async function run(input) {
  state.input = input.tensor;
  $("t-pre").textContent = ms(input.ms);
  const session = state.session;
  const inputName = session.inputNames.includes(state.recipe.input) ? state.recipe.input : session.inputNames[0];
  const outputName = session.outputNames.includes(state.recipe.output) ? state.recipe.output : session.outputNames[0];
  const t1 = performance.now();
  const out = await session.run({ [inputName]: state.input });
  const runMs = performance.now() - t1;
  showThreads(session);
  state.timings.firstRunMs ??= runMs;
  state.timings.firstRunThreads ??= session.numThreads ?? 1; // the helpers may still be starting
  state.timings.preMs ??= input.ms;
  // The first run also waits for V8 to finish optimising kernels.wasm: "Time 10 runs" shows the steady state.
  $("t-run").textContent = ms(runMs) + (state.runs++ === 0 ? " (first run)" : "");
  const logits = out[outputName].data;
  if (logits.length !== state.labels.length) {
    throw new Error(`the model's output '${outputName}' has ${logits.length} values; this demo shows ` +
                    `${state.labels.length} ImageNet classes`);
  }
  showPredictions(softmax(logits));
}

/** Guards the page's one job at a time; `work` gets no argument and its errors are shown. */
async function exclusive(work) {
  if (state.busy) {
    status("Still working on the previous request: try again in a moment.");
    return false;
  }
  state.busy = true;
  $("error").hidden = true;
  try {
    await work();
    return true;
  } catch (err) {
    showError(err);
    return false;
  } finally {
    state.busy = false;
  }
}

function classify(blob) {
  return exclusive(async () => {
    status("Classifying…");
    const input = await prepare(blob); // before showing it: a file that is no image changes nothing
    await showPhoto(blob);
    await run(input);
    status("Done. Drop another image, or choose a file.");
  });
}

/** Draws the photo on the page's canvas: an <img> would need a blob: URL, which a strict
 * Content-Security-Policy (img-src 'self') refuses. */
async function showPhoto(blob) {
  const bitmap = await createImageBitmap(blob);
  const canvas = $("photo");
  [canvas.width, canvas.height] = [bitmap.width, bitmap.height];
  canvas.getContext("2d").drawImage(bitmap, 0, 0);
  bitmap.close();
  canvas.classList.add("shown");
}

/** Replaces the session by one for an .onnx model (bytes, or a promise of them): boots Pyodide. */
async function openOnnx(bytes, name) {
  env.wasm.proxy = PYODIDE_IN_WORKER; // read by this first .onnx create (and only by it)
  status(`Starting Python (Pyodide) and nnwasm${PYODIDE_IN_WORKER ? " in a worker" : ""}, loading ${name}…`);
  const [runtime, model] = await Promise.all([boot(), bytes]); // the download overlaps Pyodide's start-up
  $("t-boot").textContent = ms(runtime.bootMs);
  status(`Preparing ${name}…`);
  const t0 = performance.now();
  // No executionProviders: nnwasm's default order, so the counts below show what it chose.
  const session = await InferenceSession.create(model);
  state.timings.createMs ??= performance.now() - t0;
  $("t-create").textContent = ms(performance.now() - t0);
  await state.session?.release();
  state.session = session;
  showPath(session, { plan: false, name });
}

function openModelFile(file) {
  return exclusive(async () => {
    await openOnnx(file.arrayBuffer().then((b) => new Uint8Array(b)), file.name);
    if (state.input) {
      status(`Classifying with ${file.name}…`);
      await run({ tensor: state.input, ms: 0 });
    }
    status(`Done: ${file.name} is loaded. Drop an image, or choose a file.`);
  });
}

async function benchmark() {
  if (state.busy || !state.input) return;
  state.busy = true;
  $("bench").disabled = true;
  status("Timing 10 runs…");
  const times = [];
  try {
    const name = state.session.inputNames.includes(state.recipe.input) ? state.recipe.input : state.session.inputNames[0];
    for (let i = 0; i < 10; i++) {
      const t = performance.now();
      await state.session.run({ [name]: state.input });
      times.push(performance.now() - t);
      await new Promise((resolve) => setTimeout(resolve)); // let the page repaint between runs
    }
    times.sort((a, b) => a - b);
    $("t-run").textContent = `${ms(times[5])} (median of 10; best ${ms(times[0])})`;
    showThreads(state.session);
    status("Timed 10 runs.");
  } catch (err) {
    showError(err);
  } finally {
    state.busy = false;
    $("bench").disabled = false;
  }
}

// A dropped or picked .onnx file is a model; anything else, an image to classify.
function take(file) {
  if (!file) return;
  if (file.name.toLowerCase().endsWith(".onnx")) openModelFile(file);
  else classify(file);
}

function wireInputs() {
  const zone = $("dropzone");
  $("file").addEventListener("change", (e) => take(e.target.files[0]));
  $("model-file").addEventListener("change", (e) => take(e.target.files[0]));
  zone.addEventListener("dragover", (e) => {
    e.preventDefault();
    zone.classList.add("over");
  });
  zone.addEventListener("dragleave", () => zone.classList.remove("over"));
  zone.addEventListener("drop", (e) => {
    e.preventDefault();
    zone.classList.remove("over");
    take(e.dataTransfer.files[0]);
  });
  $("bench").addEventListener("click", benchmark);
}

async function main() {
  wireInputs();
  const onnx = params.has("onnx");
  state.busy = true; // until the first result: later picks and drops wait their turn
  status(onnx ? "Starting Python (Pyodide) and nnwasm, downloading EfficientNet-Lite0…"
              : "Downloading EfficientNet-Lite0 (a plan file) and kernels.wasm…");
  state.recipe = checkRecipe(await fetchJSON(RECIPE_URL));
  const model = onnx ? state.recipe.model : state.recipe.plan;
  const modelURL = new URL(model, RECIPE_URL);
  // The downloads all started in index.html. The photo comes first: reading a downloaded model
  // is a chain of promise callbacks that would hold back the decoder's until its end, and
  // preparing the photo (~50-80 ms) then waits for the whole model instead of overlapping it.
  const photo = fetchBlob(DEFAULT_PHOTO);
  const labels = fetchJSON(new URL(state.recipe.labels, RECIPE_URL)).then((l) => (state.labels = l));
  const input = photo.then(prepare).then((x) => (mark("input"), x));
  if (!onnx) await input.catch(() => {}); // its error is shown by the run below
  const t0 = performance.now();
  if (onnx) {
    await openOnnx(fetchBytes(modelURL), model);
  } else {
    state.session = await InferenceSession.create(modelURL.href);
    state.timings.createMs = performance.now() - t0;
    $("t-create").textContent = ms(state.timings.createMs) + " (with its download)";
    showPath(state.session, { plan: true, name: model });
  }
  mark("session");
  await labels;
  const shown = showPhoto(await photo).catch(() => {}); // drawn while the run goes on; its errors are the input's
  status("Classifying…");
  await run(await input);
  await shown;
  state.busy = false;
  $("bench").disabled = false;
  status(onnx ? "Done. Drop another image, or choose a file."
              : "Done. Drop another image or an .onnx model, or choose a file.");
}

main().catch((err) => {
  state.busy = false;
  showError(err);
});
