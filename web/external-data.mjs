// External data: an .onnx model whose initializers live in other files (model.onnx.data,
// model.onnx_data), given as onnxruntime-web's `externalData` session option, [{path, data}], or,
// for a model opened by its path in Node, found next to it as onnxruntime-node does.
//
// Python never holds these bytes. The bridge's external_needs() reads the model (without its
// data) and says which files it names and how far into each it reads; here each file gets a
// reader {size, readInto(offset, length, view), close()}; Python (onnx_io/external.py) asks a
// reader to write an initializer's bytes straight into kernels.wasm's memory, where the plan's
// arena keeps it. A file in Node is read with fs.readSync into that memory: no copy in JS; it stays
// open while a tensor of it is needed that no plan holds (a weight packed into another layout). A
// URL (fetched) or a Blob is read once into an ArrayBuffer, dropped at the end of create() (the
// few tensors no plan holds are copied into Python); bytes the caller gives are used as they are,
// never copied here, and not kept.
import { IN_NODE, loadBytes, nodePath, toURL } from "./load-bytes.mjs";

/** kernels.wasm is a wasm32 module: one linear memory of at most 4 GB. */
export const WASM32_BYTES = 2 ** 32;

function invalidModel(message) {
  const error = new Error(message);
  error.name = "InvalidModel";
  return error;
}

/** The key onnxruntime-web matches a location against: "./x" and "x" are one file. */
export function locationKey(path) {
  return String(path).replace(/\\/g, "/").replace(/^(\.\/)+/, "");
}

/** options.externalData checked and made cloneable for the proxy worker: [{path, data}] with URL
 * strings made absolute (relative ones resolve against the page, or Node's working directory). */
export function checkExternalData(external) {
  if (external === undefined || external === null) return null;
  if (!Array.isArray(external)) throw new TypeError("options.externalData must be an array of {path, data}");
  return external.map((entry, i) => {
    if (entry === null || typeof entry !== "object" || typeof entry.path !== "string" || entry.path === "") {
      throw new TypeError(`options.externalData[${i}] must be {path: string, data}: path names the file as the model's ` +
                          "initializers do (their external data 'location')");
    }
    let data = entry.data;
    if (typeof data === "string" || data instanceof URL) data = toURL(data).href;
    else if (!(data instanceof Uint8Array || data instanceof ArrayBuffer ||
               (typeof Blob !== "undefined" && data instanceof Blob))) {
      throw new TypeError(`options.externalData[${i}] ('${entry.path}'): data must be a URL or path string, a ` +
                          "Uint8Array, an ArrayBuffer or a Blob");
    }
    return { path: entry.path, data };
  });
}

function tensorsText(names) {
  const shown = names.slice(0, 3).map((n) => `'${n}'`).join(", ");
  const more = names.length > 3 ? ` and ${names.length - 3} more` : "";
  return `initializer${names.length > 1 ? "s" : ""} ${shown}${more}`;
}

/**
 * needs: the bridge's external_needs(model) ({files: [[location, extent, names]], total});
 * given: checkExternalData's list or null; modelURL: the model's URL string when it was opened by
 * URL or path (null for bytes). Resolves to {location: reader}, or null for a model without
 * external data. Every failure closes what was opened and names the file and its initializers.
 */
export async function openExternalData(needs, given, modelURL) {
  if (needs.files.length === 0) return null;
  if (needs.total > WASM32_BYTES) {
    throw invalidModel(`the model's external data holds ${needs.total} bytes of initializers, more than the 4 GB ` +
                       `(${WASM32_BYTES} bytes) a wasm32 memory can address: nnwasm can't load it`);
  }
  const byKey = new Map((given ?? []).map((e) => [locationKey(e.path), e.data]));
  const model = modelURL ? new URL(modelURL) : null;
  const readers = {};
  try {
    for (const [location, , names] of needs.files) {
      const key = locationKey(location);
      if (byKey.has(key)) {
        readers[location] = await readerFor(byKey.get(key), location);
      } else if (IN_NODE && model?.protocol === "file:") {
        readers[location] = await siblingReader(model, location, names);
      } else {
        const gives = given?.length ? `it gives ${given.map((e) => `'${e.path}'`).join(", ")}` : "none was given";
        throw invalidModel(`${tensorsText(names)} store${names.length > 1 ? "" : "s"} data in the external file ` +
                           `'${location}', which options.externalData does not give (${gives})`);
      }
    }
  } catch (e) {
    closeReaders(readers);
    throw e;
  }
  return readers;
}

/** Closes the readers (their files, their buffers), except those of `keep` (locations). */
export function closeReaders(readers, keep = []) {
  for (const [location, reader] of Object.entries(readers ?? {})) {
    if (!keep.includes(location)) reader.close();
  }
}

async function readerFor(data, location) {
  if (typeof data === "string") {
    const url = new URL(data);
    if (IN_NODE && url.protocol === "file:") return fileReader(await nodePath(url), location);
    return bufferReader(await loadBytes(url), location);
  }
  if (data instanceof Uint8Array) return bufferReader(data, location);
  if (data instanceof ArrayBuffer) return bufferReader(new Uint8Array(data), location);
  let bytes;
  try {
    bytes = new Uint8Array(await data.arrayBuffer()); // a Blob
  } catch (e) {
    throw new Error(`cannot read the Blob given for '${location}': ${e.message}`, { cause: e });
  }
  return bufferReader(bytes, location);
}

function bufferReader(bytes, location) {
  return {
    size: bytes.byteLength,
    inMemory: true, // what no plan holds is copied into Python (external.py's detach), so this goes
    readInto(offset, length, view) {
      if (bytes === null) throw new Error(`the bytes of '${location}' were released`);
      view.set(bytes.subarray(offset, offset + length));
    },
    close() {
      bytes = null;
    },
  };
}

// The model's sibling, as onnxruntime-node finds it: a relative location inside the model's
// folder, links resolved, never outside it.
async function siblingReader(modelURL, location, names) {
  const path = await import("node:path");
  const { realpathSync, statSync } = await import("node:fs");
  const modelPath = await nodePath(modelURL);
  const folder = path.dirname(modelPath);
  const parts = location.replace(/\\/g, "/").split("/");
  if (location.includes("\0") || path.isAbsolute(location) || location.startsWith("/") || parts[0].includes(":") ||
      parts.includes("..")) {
    throw invalidModel(`${tensorsText(names)}: external data location '${location}' must be a relative path inside ` +
                       `the model's folder (${folder})`);
  }
  let root, file;
  try {
    root = realpathSync(folder);
    file = realpathSync(path.join(folder, ...parts.filter(Boolean)));
  } catch {
    throw invalidModel(`${tensorsText(names)}: external data file '${location}' does not exist in the model's folder ` +
                       `(${folder}); or pass it as options.externalData`);
  }
  if (file !== root && !file.startsWith(root.endsWith(path.sep) ? root : root + path.sep)) {
    throw invalidModel(`${tensorsText(names)}: external data location '${location}' resolves outside the model's ` +
                       `folder (${folder})`);
  }
  if (!statSync(file).isFile()) {
    throw invalidModel(`${tensorsText(names)}: external data location '${location}' is not a file`);
  }
  return fileReader(file, location);
}

async function fileReader(file, location) {
  const fs = await import("node:fs");
  let fd;
  try {
    fd = fs.openSync(file, "r");
  } catch (e) {
    throw new Error(`cannot read ${file} (external data '${location}'): ${e.message}`, { cause: e });
  }
  const size = fs.fstatSync(fd).size;
  return {
    size,
    readInto(offset, length, view) {
      if (fd === null) throw new Error(`the external data file '${location}' was closed`);
      for (let done = 0; done < length;) {
        const n = fs.readSync(fd, view, done, Math.min(length - done, 1 << 30), offset + done);
        if (n === 0) throw new Error(`${file} (external data '${location}') ended at byte ${offset + done}`);
        done += n;
      }
    },
    close() {
      if (fd !== null) fs.closeSync(fd);
      fd = null;
    },
  };
}
