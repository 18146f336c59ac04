// The protocol between proxy-session.mjs (the calling thread) and proxy-worker.mjs (the worker
// holding Pyodide and plan sessions), for env.wasm.proxy. A typed union of seven requests; each has an id, and the
// worker answers each with the same type and id and either `out` or `err`, in any order.
//
//   type      in (calling thread -> worker)                 out (worker -> calling thread)
//   "init"    {config}: resolveEnv()'s absolute settings   {bootMs, versions} (sent before the first
//                                                            create, never for plan files)
//   "create"  {model: Uint8Array, providers, settings,     {handle, inputMetadata, outputMetadata,
//              loadNumpy}                                   providers, providerAssignment, createMs}
//   "plan"    {model: Uint8Array (a .nnwp file),         like create's, plus bootMs (kernels.wasm's
//              kernelsURLs: string[], enableProfiling,    load); handle is "plan:<n>". No Pyodide boot
//              memoryLimitBytes: number | null}
//   "run"     {handle, feeds: WireTensor[], outputNames,   {outputs: WireTensor[]}
//              loadNumpy}
//   "tensor"  {key, action: "download" | "dispose"}        {data: Uint8Array} for download (the
//                                                            worker's copy goes), {} for dispose
//   "profile" {handle, action: "start" | "end"}            {} for start; {events} for end
//   "release" {handle}                                     {}
//
// err (any type) is {name, message, pythonType?, pythonTraceback?}: the Error the call threw in
// the worker, rebuilt by errorFromWire with the same name and message as in non-proxy mode.
// WireTensor is [name, type, dims, data, key]; data is a typed array, or whatever a tensor of an
// unsupported type holds, so that the worker reports it exactly as PyodideSession would; key
// (else 0) names a tensor of location "wasm" the worker keeps (preferredOutputLocation), data null.
// loadNumpy travels with every create and run because env.loadNumpy is read at each call.

/**
 * @typedef {[string, string, number[], ArrayBufferView | unknown[] | null, number]} WireTensor
 * @typedef {{name: string, message: string, pythonType?: string, pythonTraceback?: string}} WireError
 * @typedef {{type: "init", id: number, in: {config: object}}
 *   | {type: "create", id: number, in: {model: Uint8Array, providers: string[] | null, settings: object, loadNumpy: boolean}}
 *   | {type: "plan", id: number, in: {model: Uint8Array, kernelsURLs: string[], enableProfiling: boolean, memoryLimitBytes: number | null}}
 *   | {type: "run", id: number, in: {handle: number, feeds: WireTensor[], outputNames: string[] | null, loadNumpy: boolean}}
 *   | {type: "tensor", id: number, in: {key: number, action: "download" | "dispose"}}
 *   | {type: "profile", id: number, in: {handle: number | string, action: "start" | "end"}}
 *   | {type: "release", id: number, in: {handle: number}}} Request
 * @typedef {{type: Request["type"], id: number, out: object} | {type: Request["type"], id: number, err: WireError}} Answer
 */

export const REQUEST_TYPES = Object.freeze(["init", "create", "plan", "run", "tensor", "profile", "release"]);

/** The ArrayBuffers a request's `in` or an answer's `out` hands over rather than copies: model
 * bytes and tensor data. Every one of them must be a fresh buffer only this message refers to. */
export function transferables(type, payload) {
  let views = [];
  if (type === "create" || type === "plan") views = [payload.model];
  else if (type === "run") views = (payload.feeds ?? payload.outputs).map(([, , , data]) => data);
  else if (type === "tensor" && payload.data) views = [payload.data];
  const buffers = new Set(); // a buffer listed twice is a DataCloneError
  for (const view of views) {
    if (!ArrayBuffer.isView(view) || !(view.buffer instanceof ArrayBuffer)) continue;
    // Node 20 silently drops a message that transfers a detached buffer (browsers throw): the
    // call would never settle, so refuse it here.
    try {
      view.buffer.slice(0, 0);
    } catch {
      throw new TypeError(`nnwasm proxy: a ${type} message would transfer a detached ArrayBuffer`);
    }
    buffers.add(view.buffer);
  }
  return [...buffers];
}

/** Copies an input's bytes into a buffer of their own, which can then be transferred: the caller's
 * typed array must not be detached. Data that is no typed array goes as it is. */
export function ownedBytes(data) {
  return ArrayBuffer.isView(data) ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength).slice() : data;
}

function describe(value) {
  try {
    return String(value);
  } catch {
    return Object.prototype.toString.call(value); // String() throws for, e.g., Object.create(null)
  }
}

/** What crosses for a thrown value: its name and message, as strings. Not only Errors: Pyodide
 * rejects a failed boot with Emscripten's ExitStatus, an object with a name and a message. */
export function errorToWire(e) {
  const text = (value) => (typeof value === "string" ? value : undefined);
  return {
    name: text(e?.name) ?? "Error",
    message: text(e?.message) ?? describe(e),
    pythonType: text(e?.pythonType),
    pythonTraceback: text(e?.pythonTraceback),
  };
}

const BUILTIN_ERRORS = { TypeError, RangeError, SyntaxError, ReferenceError };

/** The worker's Error, rebuilt on this side: JS's own error types keep their class (so
 * `instanceof TypeError` holds as in non-proxy mode); nnwasm's are Errors with their name. */
export function errorFromWire(wire) {
  const error = new (BUILTIN_ERRORS[wire.name] ?? Error)(wire.message);
  if (error.name !== wire.name) error.name = wire.name;
  if (wire.pythonType !== undefined) error.pythonType = wire.pythonType;
  if (wire.pythonTraceback !== undefined) error.pythonTraceback = wire.pythonTraceback;
  return error;
}
