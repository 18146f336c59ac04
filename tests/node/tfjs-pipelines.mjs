// Runs transformers.js pipelines on local models and prints their outputs as one JSON object,
// {case: {output} | {error}}. tests/test_transformers_js.py copies this file into a scratch npm
// project (where "@huggingface/transformers" resolves to the installed package, its
// onnxruntime-node replaced by nnwasm or not) and compares the two projects' outputs.
//
//   node tfjs-pipelines.mjs MODELS_DIR [case ...]        (cases: see CASES; default: all)
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
const { env, pipeline, RawImage } = await import("@huggingface/transformers");

env.allowRemoteModels = false;
env.allowLocalModels = true;
env.localModelPath = modelsDir.endsWith("/") ? modelsDir : modelsDir + "/";
env.useBrowserCache = false;
env.useFSCache = false;

function image() {
  // A 48x40 RGB gradient, resized by the processor to the model's 32x32.
  const [w, h] = [48, 40];
  const data = new Uint8ClampedArray(w * h * 3);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const i = (y * w + x) * 3;
      data.set([(x * 5) % 256, (y * 6) % 256, ((x + y) * 3) % 256], i);
    }
  }
  return new RawImage(data, w, h, 3);
}

function audio() {
  const samples = new Float32Array(16000); // 1 s at 16 kHz: two tones
  for (let i = 0; i < samples.length; i++) {
    samples[i] = 0.3 * Math.sin((2 * Math.PI * 440 * i) / 16000) + 0.2 * Math.sin((2 * Math.PI * 1200 * i) / 16000);
  }
  return samples;
}

const featureExtraction = (dtype) => async () => {
  const extractor = await pipeline("feature-extraction", "bert", { dtype });
  const out = await extractor(["the cat runs.", "a dog sleeps on the old hill."], { pooling: "mean", normalize: true });
  const result = { type: out.type, dims: out.dims, data: out.tolist() }; // float16: raw bits
  await extractor.dispose();
  return result;
};

const imageClassification = (dtype) => async () => {
  const classifier = await pipeline("image-classification", "vit", { dtype });
  const result = await classifier(image(), { top_k: 5 });
  await classifier.dispose();
  return result;
};

const textGeneration = (dtype) => async () => {
  const generator = await pipeline("text-generation", "gpt2", { dtype });
  const result = await generator("the cat runs", { max_new_tokens: 8, do_sample: false });
  await generator.dispose();
  return result;
};

const speechRecognition = (dtype) => async () => {
  const transcriber = await pipeline("automatic-speech-recognition", "whisper", { dtype });
  const result = await transcriber(audio(), { max_new_tokens: 6 });
  await transcriber.dispose();
  return result;
};

const CASES = {
  "feature-extraction/fp32": featureExtraction("fp32"),
  "feature-extraction/q8": featureExtraction("q8"),
  "feature-extraction/fp16": featureExtraction("fp16"),
  "image-classification/fp32": imageClassification("fp32"),
  "image-classification/q8": imageClassification("q8"),
  "text-generation/fp32": textGeneration("fp32"),
  "text-generation/q8": textGeneration("q8"),
  "automatic-speech-recognition/fp32": speechRecognition("fp32"),
};

const results = {};
for (const name of only.length ? only : Object.keys(CASES)) {
  if (!CASES[name]) throw new Error(`unknown case '${name}' (known: ${Object.keys(CASES).join(", ")})`);
  const t0 = performance.now();
  try {
    results[name] = { output: await CASES[name]() };
  } catch (e) {
    results[name] = { error: `${e?.name}: ${e?.message}` };
  }
  results[name].ms = Math.round(performance.now() - t0);
}
results._fetched = fetched;
process.stdout.write(JSON.stringify(results) + "\n");
process.exit(0); // a pipeline's worker or timer must not keep the process alive
