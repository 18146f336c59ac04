// onnxruntime-web's SessionOptions beyond the execution providers, checked in one place:
// what nnwasm does with each, or the Error saying it can't.
//
//   freeDimensionOverrides  {dimName: size}: the symbolic dims of the model's inputs fixed at
//                           create (onnxruntime's add_free_dimension_override_by_name), so
//                           inputMetadata shows the sizes and feeds of other sizes are refused.
//   preferredOutputLocation "cpu", "wasm" or {outputName: location}: "cpu" ("cpu-pinned" too, the
//                           same here) gives tensors with their data; "wasm" keeps the output in
//                           the session's memory, as onnxruntime-web's "gpu-buffer" keeps it on
//                           the GPU: a Tensor of location "wasm" (getData() downloads, dispose()
//                           frees) that, fed back to the session, crosses no copy (a decoder's
//                           present key/values as the next step's past). For .onnx sessions; a
//                           plan file's session gives CPU tensors. "gpu-buffer" and "ml-tensor"
//                           are refused: nnwasm has no GPU (onnxruntime-web refuses them without
//                           its webgpu / webnn providers as well).
//   externalData            [{path, data}]: the files the model's initializers live in, path as
//                           the model names it, data a URL (a file path in Node), a Uint8Array,
//                           an ArrayBuffer or a Blob (external-data.mjs). In Node a model opened
//                           by its path also finds them in its own folder.
// Everything else (graphOptimizationLevel, logSeverityLevel, intra/interOpNumThreads,
// enableCpuMemArena, ...) is accepted and ignored, as onnxruntime-web ignores what its wasm
// backend has no use for.

import { checkExternalData } from "./external-data.mjs";

const LOCATIONS = ["cpu", "cpu-pinned", "wasm"];

function checkLocation(where, value) {
  if (LOCATIONS.includes(value)) return;
  if (typeof value === "string") {
    throw new Error(`${where}: '${value}' is not supported: nnwasm keeps outputs on the CPU ("cpu") or in ` +
                    `the session's memory ("wasm"); it has no GPU`);
  }
  throw new TypeError(`${where} must be a location string such as "cpu", got ${JSON.stringify(value)}`);
}

/** The settings the Python session takes: {freeDimensionOverrides: {name: size} | null,
 * externalData: [{path, data}] | null, preferredOutputLocation: "wasm" | {name: location} | null}. */
export function sessionSettings(options) {
  const overrides = options?.freeDimensionOverrides ?? null;
  if (overrides !== null) {
    if (typeof overrides !== "object" || Array.isArray(overrides)) {
      throw new TypeError("options.freeDimensionOverrides must be an object {dimName: size}");
    }
    for (const [name, size] of Object.entries(overrides)) {
      if (!Number.isSafeInteger(size) || size < 0) {
        throw new TypeError(`options.freeDimensionOverrides['${name}'] must be an integer >= 0, got ${JSON.stringify(size)}`);
      }
    }
  }
  const location = options?.preferredOutputLocation;
  if (location !== undefined && location !== null) {
    if (typeof location === "object") {
      for (const [name, value] of Object.entries(location)) checkLocation(`options.preferredOutputLocation['${name}']`, value);
    } else {
      checkLocation("options.preferredOutputLocation", location);
    }
  }
  const externalData = checkExternalData(options?.externalData);
  return { freeDimensionOverrides: overrides === null || Object.keys(overrides).length === 0 ? null : { ...overrides },
           externalData,
           preferredOutputLocation: location === "wasm" ? "wasm"
             : location !== null && typeof location === "object" ? { ...location } : null };
}
