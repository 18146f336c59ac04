// Run from index.html's head as a classic script, before the stylesheet: an inline script would
// break a strict Content-Security-Policy (script-src 'self'; tests/test_browser_csp.py).
// Downloads start now, before the stylesheet and the modules load (a script after a stylesheet
// would wait for it): the recipe, the labels, the photo, kernels.wasm for a plan, and the
// model (the plan file, or with ?onnx the .onnx). app.mjs fetches the same URLs and gets
// these responses.
(() => {
  performance.mark("demo-head");
  const params = new URLSearchParams(location.search), onnx = params.has("onnx");
  // the kernels.wasm flavour web/flavours.mjs will pick: relaxed SIMD where WebAssembly.validate
  // takes its probe (a relaxed dot and madd), unless ?simd
  const probe = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 30, 1, 28, 0,
    65, 1, 253, 15, 65, 1, 253, 15, 65, 1, 253, 15, 253, 147, 2, 65, 1, 253, 15, 65, 1, 253, 15, 253, 133, 2, 11]);
  let relaxed = params.has("relaxed");
  try { relaxed = !params.has("simd") && (relaxed || WebAssembly.validate(probe)); } catch { relaxed = false; }
  // threads (app.mjs: ?threads=N, else onnxruntime-web's default min(4, ceil(cores / 2)) when
  // the page is cross-origin isolated) take the flavour's build with atomics
  const cores = Math.min(4, Math.ceil((navigator.hardwareConcurrency || 1) / 2));
  const threads = params.has("threads") ? Number(params.get("threads")) : (self.crossOriginIsolated ? cores : 1);
  const kernels = threads > 1 && self.crossOriginIsolated
    ? (relaxed ? "../dist/web/kernels-relaxed-threads.wasm" : "../dist/web/kernels-threads.wasm")
    : relaxed ? "../dist/web/kernels-relaxed.wasm" : "../dist/web/kernels.wasm";
  const files = ["assets/efficientnet-lite0.json", "assets/imagenet_labels.json", "assets/coffee.png",
                 ...(onnx ? ["assets/efficientnet-lite0.onnx"] : [kernels, "../dist/web/kernels-warmup.nnwp", "assets/efficientnet-lite0.nnwp"])];
  for (const href of files) {
    const link = Object.assign(document.createElement("link"), { rel: "preload", as: "fetch", href });
    link.crossOrigin = "anonymous"; // as fetch() asks: same-origin credentials
    document.head.append(link);
  }
})();
