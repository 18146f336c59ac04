// Reading a model, the manifest or a wheel by URL: fetch() in the browser and for http(s) in
// Node; the file system for file: URLs and plain paths in Node, where fetch() has no file:.
import { baseURL } from "./env.mjs";

const IN_NODE = typeof process !== "undefined" && Boolean(process.versions?.node);

export { IN_NODE };

/** Absolute URL for a URL string, a URL, or (in Node) a file path relative to the cwd. */
export function toURL(urlOrPath) {
  return new URL(String(urlOrPath), baseURL());
}

/** In Node, the file system path of a file: URL (Pyodide wants paths there). */
export async function nodePath(url) {
  const { fileURLToPath } = await import("node:url");
  return fileURLToPath(url);
}

/** The bytes at a URL or path, as a Uint8Array; rejects with an Error naming the URL. */
export async function loadBytes(urlOrPath) {
  const url = toURL(urlOrPath);
  if (IN_NODE && url.protocol === "file:") {
    const { readFile } = await import("node:fs/promises");
    try {
      const buf = await readFile(url);
      return new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
    } catch (e) {
      throw new Error(`cannot read ${await nodePath(url)}: ${e.message}`, { cause: e });
    }
  }
  let response;
  try {
    response = await fetch(url);
  } catch (e) {
    throw new Error(`cannot fetch ${url.href}: ${e.message}`, { cause: e });
  }
  if (!response.ok) {
    throw new Error(`cannot fetch ${url.href}: HTTP ${response.status} ${response.statusText}`);
  }
  return new Uint8Array(await response.arrayBuffer());
}
