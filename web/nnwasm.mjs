// nnwasm for JavaScript: onnxruntime-web's API (InferenceSession, Tensor, env) running the
// nnwasm Python runtime inside Pyodide. Works in browsers and in Node 20, offline.
//
//   import { InferenceSession, Tensor } from "./web/nnwasm.mjs";
//   const session = await InferenceSession.create("model.onnx", { executionProviders: ["wasm"] });
//   const out = await session.run({ input: new Tensor("float32", data, [1, 3, 224, 224]) });
//
// boot() starts Pyodide ahead of the first create() (it is shared: call it as often as you like).
// env.wasm.proxy = true (before the first boot() or create()) runs it all in a worker.
export { env } from "./env.mjs";
export { boot, InferenceSession } from "./inference-session.mjs";
export { Tensor } from "./tensor.mjs";
