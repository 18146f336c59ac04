// transformers.js pipelines on local models, as cases: runCases(transformers, names) resolves to
// {case: {output} | {error}, ms}. Plain ES module (no Node API): tfjs-pipelines.mjs runs it in
// Node, tests/test_transformers_js.py's page in Chromium. The caller sets transformers.env.
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
  return new T.RawImage(data, w, h, 3);
}

function audio() {
  const samples = new Float32Array(16000); // 1 s at 16 kHz: two tones
  for (let i = 0; i < samples.length; i++) {
    samples[i] = 0.3 * Math.sin((2 * Math.PI * 440 * i) / 16000) + 0.2 * Math.sin((2 * Math.PI * 1200 * i) / 16000);
  }
  return samples;
}

// Records the token ids generate() streams (the prompt's, then each new one): random weights make
// text of invalid UTF-8 (U+FFFD), so the decoded text alone could hide a different token.
function tokenRecorder() {
  const tokens = [];
  return { tokens, put: (rows) => rows.forEach((row) => tokens.push(...row.map(Number))), end() {} };
}

const featureExtraction = (dtype) => async () => {
  const extractor = await T.pipeline("feature-extraction", "bert", { dtype });
  const out = await extractor(["the cat runs.", "a dog sleeps on the old hill."], { pooling: "mean", normalize: true });
  const result = { type: out.type, dims: out.dims, data: out.tolist() }; // float16: raw bits
  await extractor.dispose();
  return result;
};

const imageClassification = (dtype) => async () => {
  const classifier = await T.pipeline("image-classification", "vit", { dtype });
  const result = await classifier(image(), { top_k: 5 });
  await classifier.dispose();
  return result;
};

const textGeneration = (dtype) => async () => {
  const generator = await T.pipeline("text-generation", "gpt2", { dtype });
  const streamer = tokenRecorder();
  const result = await generator("the cat runs", { max_new_tokens: 8, do_sample: false, streamer });
  await generator.dispose();
  return { result, tokens: streamer.tokens };
};

const speechRecognition = (dtype) => async () => {
  const transcriber = await T.pipeline("automatic-speech-recognition", "whisper", { dtype });
  const streamer = tokenRecorder();
  const result = await transcriber(audio(), { max_new_tokens: 6, streamer });
  await transcriber.dispose();
  return { result, tokens: streamer.tokens };
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
  "text-generation/fp16": textGeneration("fp16"),
  "automatic-speech-recognition/q8": speechRecognition("q8"),
};

export const NAMES = Object.keys(CASES);

let T = null;

export async function runCases(transformers, names = NAMES) {
  T = transformers;
  const results = {};
  for (const name of names) {
    if (!CASES[name]) throw new Error(`unknown case '${name}' (known: ${NAMES.join(", ")})`);
    const t0 = performance.now();
    try {
      results[name] = { output: await CASES[name]() };
    } catch (e) {
      results[name] = { error: `${e?.name}: ${e?.message}` };
    }
    results[name].ms = Math.round(performance.now() - t0);
  }
  return results;
}
