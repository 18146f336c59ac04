// Weights embedded in an .onnx model (graph initializers' raw_data), served to Python as external
// data from the bytes JS already holds, so Python's heap never holds them: in Pyodide that heap
// is a wasm memory, which never shrinks, and a model's bytes copied into it stay as its size for
// the page's life (a 125M int8 decoder: its 125 MB file in Pyodide's heap beside kernels.wasm's
// copy of the weights, bench/results/shared-weights.md). onnxruntime-web's externalData path does
// the same for weights in their own files (external-data.mjs).
//
// splitEmbedded(bytes) rewrites the top-level graph's big initializers (raw_data of at least
// MIN_BYTES) as external data at location EMBEDDED (a name no file can have), whose offset and
// length are the raw_data's place in the original bytes, and returns the model without them (its
// graph: nodes, small constants) and a reader over the original bytes, as external-data.mjs's
// readers: Python (onnx_io/external.py) has kernels.wasm's memory filled straight from it, and
// reads a weight into its own heap only to pack it (one weight at a time). Bytes that are not a
// model this can rewrite (a plan file, a model with no big initializer, protobuf it does not
// follow) give null: they go to Python as they are.

/** The location of the embedded weights: "\0" can't be in a file name (external-data.mjs refuses it). */
export const EMBEDDED = "\u0000embedded";
/** Initializers at least this big are served from JS; smaller ones (norms, scales, shapes) stay in the model. */
export const MIN_BYTES = 1 << 16;

const LEN = 2;

// One protobuf field at `at`: {field, wire, start (of the tag), value (start of the payload),
// end}; null past `end` or for anything malformed.
function readVarint(b, at, end) {
  let v = 0, scale = 1;
  for (let i = 0; i < 10 && at < end; i++) {
    const x = b[at++];
    v += (x & 0x7f) * scale;
    if (x < 0x80) return [v, at];
    scale *= 128;
  }
  return null;
}

function fields(b, start, end) {
  const out = [];
  let at = start;
  while (at < end) {
    const tag = readVarint(b, at, end);
    if (!tag) return null;
    const [t, after] = tag;
    const field = Math.floor(t / 8), wire = t % 8;
    let value = after, stop;
    if (wire === 0) {
      const v = readVarint(b, after, end);
      if (!v) return null;
      stop = v[1];
    } else if (wire === 1) stop = after + 8;
    else if (wire === 5) stop = after + 4;
    else if (wire === LEN) {
      const n = readVarint(b, after, end);
      if (!n) return null;
      value = n[1];
      stop = value + n[0];
    } else return null; // groups: not in ONNX
    if (field === 0 || stop > end) return null;
    out.push({ field, wire, start: at, value, end: stop });
    at = stop;
  }
  return out;
}

function varint(n) {
  const out = [];
  do {
    let x = n % 128;
    n = Math.floor(n / 128);
    if (n > 0) x |= 0x80;
    out.push(x);
  } while (n > 0);
  return out;
}

const encoder = new TextEncoder();

function lenField(field, payload) {
  return [...varint(field * 8 + LEN), ...varint(payload.length), ...payload];
}

function entry(key, value) { // StringStringEntryProto {key = 1, value = 2}
  return lenField(13, [...lenField(1, encoder.encode(key)), ...lenField(2, encoder.encode(value))]);
}

/** {model: Uint8Array, reader, bytes (moved out)} or null; `bytes` is the model as given (not copied). */
export function splitEmbedded(bytes, minBytes = MIN_BYTES) {
  const top = fields(bytes, 0, bytes.byteLength);
  const graphs = top?.filter((f) => f.field === 7);
  if (!graphs || graphs.length !== 1 || graphs[0].wire !== LEN) return null;
  const graph = graphs[0];
  const inGraph = fields(bytes, graph.value, graph.end);
  if (!inGraph) return null;
  const parts = []; // the new graph payload: [start, end) of the original bytes, or Uint8Arrays
  let at = graph.value, moved = 0;
  for (const f of inGraph) {
    if (f.field !== 5 || f.wire !== LEN) continue; // GraphProto.initializer
    const t = fields(bytes, f.value, f.end);
    if (!t) return null;
    const raw = t.filter((x) => x.field === 9 && x.wire === LEN); // TensorProto.raw_data
    // data_location (14) or external_data (13) already there: leave the tensor as it is
    if (raw.length !== 1 || raw[0].end - raw[0].value < minBytes || t.some((x) => x.field === 13 || x.field === 14)) continue;
    const r = raw[0];
    const tail = [...entry("location", EMBEDDED), ...entry("offset", String(r.value)),
                  ...entry("length", String(r.end - r.value)), ...varint(14 * 8), 1]; // data_location = EXTERNAL
    const body = (r.start - f.value) + (f.end - r.end) + tail.length;
    parts.push([at, f.start], Uint8Array.from([...varint(5 * 8 + LEN), ...varint(body)]), [f.value, r.start],
               [r.end, f.end], Uint8Array.from(tail));
    at = f.end;
    moved += r.end - r.value;
  }
  if (!moved) return null;
  parts.push([at, graph.end]);
  const size = (p) => (p instanceof Uint8Array ? p.length : p[1] - p[0]);
  const graphBody = parts.reduce((s, p) => s + size(p), 0);
  const head = Uint8Array.from([...varint(7 * 8 + LEN), ...varint(graphBody)]);
  const model = new Uint8Array(graph.start + head.length + graphBody + (bytes.byteLength - graph.end));
  let w = 0;
  const put = (p) => {
    const piece = p instanceof Uint8Array ? p : bytes.subarray(p[0], p[1]);
    model.set(piece, w);
    w += piece.length;
  };
  put([0, graph.start]);
  put(head);
  parts.forEach(put);
  put([graph.end, bytes.byteLength]);
  return { model, reader: embeddedReader(bytes), moved };
}

function embeddedReader(bytes) {
  return {
    size: bytes.byteLength,
    inMemory: true, // what no plan holds is copied into Python once it is little (external.py's detach)
    readInto(offset, length, view) {
      if (bytes === null) throw new Error("the model's embedded weights were released");
      view.set(bytes.subarray(offset, offset + length));
    },
    close() {
      bytes = null;
    },
  };
}
