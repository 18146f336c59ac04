// onnxruntime-web's execution provider names -> nnwasm's providers. Names nnwasm does not have
// (webgpu, webnn, ...) are skipped, as onnxruntime-web skips backends it cannot start; a list
// with none that nnwasm has is an error.

const PROVIDERS = {
  wasm: "WasmExecutionProvider",
  cpu: "WasmExecutionProvider", // onnxruntime-web runs "cpu" on its wasm backend too
  numpy: "NumpyExecutionProvider", // nnwasm's reference provider (needs numpy: not in Pyodide)
  WasmExecutionProvider: "WasmExecutionProvider",
  NumpyExecutionProvider: "NumpyExecutionProvider",
};

/** Provider names for the Python session, or null to let nnwasm pick its default order. */
export function resolveProviders(executionProviders) {
  if (executionProviders === undefined || executionProviders === null) return null;
  if (!Array.isArray(executionProviders)) {
    throw new TypeError("options.executionProviders must be an array of names or {name} objects");
  }
  if (executionProviders.length === 0) return null;
  const names = executionProviders.map((ep) => (typeof ep === "string" ? ep : ep?.name));
  const resolved = [];
  for (const name of names) {
    const provider = PROVIDERS[name];
    if (provider !== undefined && !resolved.includes(provider)) resolved.push(provider);
  }
  if (resolved.length === 0) {
    throw new Error(`no available execution provider among [${names.join(", ")}]; ` +
                    `nnwasm offers ${Object.keys(PROVIDERS).join(", ")}`);
  }
  return resolved;
}
