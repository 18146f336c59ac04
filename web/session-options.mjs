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
//   memoryLimitBytes        nnwasm's own: the bytes the session may hold in kernels.wasm's memory
//                           (its plans: weights, arena, op words), an integer >= 1; a plan past it
//                           is refused at create with the bytes it needs, a run whose dims need
//                           more (or whose feeds hold more) before any copy. The same as
//                           onnxruntime-web's config entries form, extra: {session:
//                           {memory_limit_bytes: "N"}}, and CPython's
//                           add_session_config_entry("session.memory_limit_bytes", "N")
//                           (py_runtime/nnwasm/memory_limit.py; docs/onnxruntime-api.md).
//   extra                   onnxruntime-web's session config entries, {a: {b: "v"}} -> "a.b" = "v":
//                           given to the Python session's add_session_config_entry (kept and
//                           ignored where nnwasm reads no such key, as onnxruntime does).
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

export const MEMORY_LIMIT_KEY = "session.memory_limit_bytes";

/** onnxruntime-web's `extra`, flattened as its backend does: {session: {x: "1"}} -> {"session.x": "1"}. */
function configEntries(extra, prefix = "", out = {}) {
  if (extra === undefined || extra === null) return out;
  if (typeof extra !== "object" || Array.isArray(extra)) {
    throw new TypeError(`options.extra${prefix ? `.${prefix.slice(0, -1)}` : ""} must be an object of config entries`);
  }
  for (const [key, value] of Object.entries(extra)) {
    if (value !== null && typeof value === "object") configEntries(value, `${prefix}${key}.`, out);
    else out[`${prefix}${key}`] = String(value);
  }
  return out;
}

/** The session's memory limit in bytes (options.memoryLimitBytes, else extra's
 * session.memory_limit_bytes), or null for none; a bad value throws here, before anything loads. */
export function memoryLimit(options) {
  const given = options?.memoryLimitBytes ?? configEntries(options?.extra)[MEMORY_LIMIT_KEY];
  if (given === undefined || given === null) return null;
  const n = typeof given === "string" && /^[0-9]+$/.test(given) ? Number(given) : given;
  if (!Number.isSafeInteger(n) || n < 1) {
    throw new TypeError(`options.memoryLimitBytes (${MEMORY_LIMIT_KEY}) must be a number of bytes, an integer >= 1, ` +
                        `got ${JSON.stringify(given)}`);
  }
  return n;
}

/** The settings the Python session takes: {freeDimensionOverrides: {name: size} | null,
 * externalData: [{path, data}] | null, preferredOutputLocation: "wasm" | {name: location} | null},
 * plus config ({key: value}: onnxruntime-web's extra and memoryLimitBytes as session config
 * entries) and memoryLimitBytes when given. */
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
  const config = configEntries(options?.extra);
  const limit = memoryLimit(options);
  if (limit !== null) config[MEMORY_LIMIT_KEY] = String(limit);
  const settings = { freeDimensionOverrides: overrides === null || Object.keys(overrides).length === 0 ? null : { ...overrides },
                     externalData,
                     preferredOutputLocation: location === "wasm" ? "wasm"
                       : location !== null && typeof location === "object" ? { ...location } : null };
  if (Object.keys(config).length) settings.config = config; // only when given
  if (limit !== null) settings.memoryLimitBytes = limit;
  return settings;
}
