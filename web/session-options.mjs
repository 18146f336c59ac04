// onnxruntime-web's SessionOptions beyond the execution providers, checked in one place:
// what nnwasm does with each, or the Error saying it can't.
//
//   freeDimensionOverrides  {dimName: size}: the symbolic dims of the model's inputs fixed at
//                           create (onnxruntime's add_free_dimension_override_by_name), so
//                           inputMetadata shows the sizes and feeds of other sizes are refused.
//   preferredOutputLocation "cpu" or {outputName: "cpu"}: outputs live on the CPU, always ("cpu-
//                           pinned" too, which is the CPU here). "gpu-buffer" and "ml-tensor" are
//                           refused: nnwasm has no GPU (onnxruntime-web refuses them without
//                           its webgpu / webnn providers as well).
//   externalData            [{path, data}]: the files the model's initializers live in, path as
//                           the model names it, data a URL (a file path in Node), a Uint8Array,
//                           an ArrayBuffer or a Blob (external-data.mjs). In Node a model opened
//                           by its path also finds them in its own folder.
// Everything else (graphOptimizationLevel, logSeverityLevel, intra/interOpNumThreads,
// enableCpuMemArena, ...) is accepted and ignored, as onnxruntime-web ignores what its wasm
// backend has no use for.

import { checkExternalData } from "./external-data.mjs";

const CPU_LOCATIONS = ["cpu", "cpu-pinned"];

function checkLocation(where, value) {
  if (CPU_LOCATIONS.includes(value)) return;
  if (typeof value === "string") {
    throw new Error(`${where}: '${value}' is not supported: nnwasm keeps every output on the CPU ` +
                    `(use "cpu", or leave preferredOutputLocation unset)`);
  }
  throw new TypeError(`${where} must be a location string such as "cpu", got ${JSON.stringify(value)}`);
}

/** The settings the Python session takes: {freeDimensionOverrides: {name: size} | null,
 * externalData: [{path, data}] | null}. */
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
           externalData };
}
