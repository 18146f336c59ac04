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
//   externalData            refused when non-empty: the .onnx path reads a model from bytes and
//                           cannot yet be given the files its initializers live in.
// Everything else (graphOptimizationLevel, logSeverityLevel, intra/interOpNumThreads,
// enableCpuMemArena, ...) is accepted and ignored, as onnxruntime-web ignores what its wasm
// backend has no use for.

const CPU_LOCATIONS = ["cpu", "cpu-pinned"];

function checkLocation(where, value) {
  if (CPU_LOCATIONS.includes(value)) return;
  if (typeof value === "string") {
    throw new Error(`${where}: '${value}' is not supported: nnwasm keeps every output on the CPU ` +
                    `(use "cpu", or leave preferredOutputLocation unset)`);
  }
  throw new TypeError(`${where} must be a location string such as "cpu", got ${JSON.stringify(value)}`);
}

/** The settings the Python session takes: {freeDimensionOverrides: {name: size} | null}. */
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
  const external = options?.externalData;
  if (external !== undefined && external !== null) {
    if (!Array.isArray(external)) throw new TypeError("options.externalData must be an array of {path, data}");
    if (external.length > 0) {
      throw new Error("options.externalData is not supported by nnwasm's .onnx sessions yet: " +
                      `${external.map((e) => JSON.stringify(e?.path ?? e)).join(", ")} ` +
                      "(save the model with its initializers inside the .onnx file)");
    }
  }
  return { freeDimensionOverrides: overrides === null || Object.keys(overrides).length === 0 ? null : { ...overrides } };
}
