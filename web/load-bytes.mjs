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

/** The bytes at a URL or path, as a Uint8Array; rejects with an Error naming the URL. onChunk,
 * if given, sees each piece as it arrives, onChunk(piece, offset) (over fetch; the file system
 * gives one piece), so a caller can start work before the download ends. sinkFor, if given, is
 * shown the first piece of a download and may return a sink {write(piece), finish()} that takes
 * every piece instead of a buffer here: loadBytes then resolves to what finish() does. */
export async function loadBytes(urlOrPath, onChunk = null, sinkFor = null) {
  const url = toURL(urlOrPath);
  if (IN_NODE && url.protocol === "file:" && sinkFor !== null) return readFileInPieces(url, onChunk, sinkFor);
  if (IN_NODE && url.protocol === "file:") {
    const { readFile } = await import("node:fs/promises");
    let bytes;
    try {
      const buf = await readFile(url);
      bytes = new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
    } catch (e) {
      throw new Error(`cannot read ${await nodePath(url)}: ${e.message}`, { cause: e });
    }
    onChunk?.(bytes, 0);
    return bytes;
  }
  const response = await fetchOk(url);
  if ((onChunk === null && sinkFor === null) || response.body === null) {
    const bytes = new Uint8Array(await response.arrayBuffer());
    onChunk?.(bytes, 0);
    return bytes;
  }
  try {
    return await readStream(response, onChunk ?? (() => {}), sinkFor);
  } catch (e) {
    throw new Error(`cannot fetch ${url.href}: ${e.message}`, { cause: e });
  }
}

// A file in Node read as a download arrives, for a caller with a sink (a plan file's weights go
// straight into kernels.wasm's memory: no copy of the file in JS): its first piece decides; without
// a sink the rest is read into one buffer of the file's size, as readFile would.
export const filePieces = { bytes: 4 << 20 }; // the size of a piece (tests make it small)

async function readFileInPieces(url, onChunk, sinkFor) {
  const { open } = await import("node:fs/promises");
  const where = await nodePath(url);
  let file;
  try {
    file = await open(url, "r");
  } catch (e) {
    throw new Error(`cannot read ${where}: ${e.message}`, { cause: e });
  }
  let sink = null;
  try {
    const size = (await file.stat()).size;
    const first = await readPiece(file, 0, Math.min(filePieces.bytes, size), where);
    sink = size > 0 ? sinkFor(first) : null;
    if (!sink) {
      const bytes = new Uint8Array(size);
      bytes.set(first);
      for (let at = first.length; at < size;) at += await readInto(file, bytes, at, size - at, where);
      onChunk?.(bytes, 0);
      return bytes;
    }
    // One buffer serves every piece after the first: write(piece, true) tells the sink the piece
    // is reused, so it copies what it keeps. Fresh 4 MB pieces were garbage V8 collected late: they
    // put Node's peak at ~1.5x a plan's weights + arena (bench/memory/peak_memory.py).
    const reused = new Uint8Array(Math.min(filePieces.bytes, size));
    for (let at = 0, piece = first; ;) {
      sink.write(piece, piece !== first);
      onChunk?.(piece, at);
      at += piece.length;
      if (at >= size) break;
      piece = await readPiece(file, at, Math.min(filePieces.bytes, size - at), where, reused);
    }
    return await sink.finish();
  } catch (e) {
    sink?.release?.();
    throw e;
  } finally {
    await file.close();
  }
}

async function readPiece(file, at, n, where, into = null) {
  const piece = into ? into.subarray(0, n) : new Uint8Array(n); // fresh unless the sink copies what it keeps
  for (let done = 0; done < n;) done += await readInto(file, piece, done, n - done, where, at + done);
  return piece;
}

async function readInto(file, bytes, offset, n, where, position = offset) {
  const { bytesRead } = await file.read(bytes, offset, n, position);
  if (bytesRead === 0) throw new Error(`cannot read ${where}: the file ended at byte ${position}`);
  return bytesRead;
}

async function fetchOk(url) {
  let response;
  try {
    response = await fetch(url);
  } catch (e) {
    throw new Error(`cannot fetch ${url.href}: ${e.message}`, { cause: e });
  }
  if (!response.ok) {
    throw new Error(`cannot fetch ${url.href}: HTTP ${response.status} ${response.statusText}`);
  }
  return response;
}

// Into one buffer of Content-Length bytes when the server says it (and sends no encoding, under
// which Content-Length counts the compressed bytes); growing by doubling otherwise.
async function readStream(response, onChunk, sinkFor) {
  const header = response.headers.get("content-length");
  const length = header === null ? NaN : Number(header);
  const exact = !response.headers.get("content-encoding") && Number.isSafeInteger(length) && length >= 0;
  let buffer = null;
  let size = 0;
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (size === 0 && buffer === null) {
      const sink = sinkFor?.(value);
      if (sink) return sinkAll(reader, value, onChunk, sink, exact ? length : null);
      buffer = new Uint8Array(exact ? length : Math.max(1 << 20, value.length));
    }
    if (size + value.length > buffer.length) {
      if (exact) throw new Error(`more bytes than its Content-Length (${length})`);
      const grown = new Uint8Array(Math.max(2 * buffer.length, size + value.length));
      grown.set(buffer.subarray(0, size));
      buffer = grown;
    }
    buffer.set(value, size);
    onChunk(buffer.subarray(size, size + value.length), size);
    size += value.length;
  }
  if (exact && size !== length) throw new Error(`${size} bytes, not its Content-Length (${length})`);
  if (buffer === null) return new Uint8Array(0);
  return size === buffer.length ? buffer : buffer.subarray(0, size);
}

async function sinkAll(reader, first, onChunk, sink, length) {
  let size = 0;
  try {
    for (let value = first; value;) {
      sink.write(value);
      onChunk(value, size);
      size += value.length;
      if (length !== null && size > length) throw new Error(`more bytes than its Content-Length (${length})`);
      ({ value } = await reader.read());
    }
    if (length !== null && size !== length) throw new Error(`${size} bytes, not its Content-Length (${length})`);
    return await sink.finish();
  } catch (e) {
    sink.release?.();
    throw e;
  }
}
