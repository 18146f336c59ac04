// Reading a .nnwp plan file (format version 1, as py_runtime/nnwasm/planfile.py writes it; layout in docs/architecture.md, "Plan files"): every check the format asks
// for happens here, before any byte reaches kernels.wasm; nnw_plan_load then validates each op.
import { typedArrayFor } from "./tensor.mjs";

export const PLAN_FILE_MAGIC = "NNWF";
export const PLAN_FILE_VERSION = 1;
const HEADER_BYTES = 32;
const PLAN_MAGIC = 0x50574e4e; // "NNWP", word 0 of the plan (kernels_c/nnw.h)
const PLAN_HEADER_BYTES = 32;

// Bytes per element of the dtypes a plan's inputs and outputs may have (py_runtime/nnwasm/dtypes.py
// without strings); onnxruntime-web's type names are numpy's, so these are also Tensor types.
const ELEMENT_BYTES = {
  float32: 4, uint8: 1, int8: 1, uint16: 2, int16: 2, int32: 4, int64: 8, bool: 1,
  float16: 2, float64: 8, uint32: 4, uint64: 8,
};

// Slice-by-8 tables (table t, entry n at 256 * t + n): eight bytes a step, three times faster than
// a byte a step in V8 (13 ms against 42 ms for EfficientNet-Lite0's 18.5 MB), which matters
// because a page checks the whole file before its first result.
let crcTables = null;
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

function makeCrcTables() {
  const t = new Uint32Array(8 * 256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  for (let i = 256; i < 8 * 256; i++) t[i] = (t[i - 256] >>> 8) ^ t[t[i - 256] & 0xff];
  return t;
}

/** CRC-32 (IEEE 802.3, zlib.crc32's) of bytes; pass the CRC of the bytes before them as `crc` to
 * continue it (crc32(b, crc32(a)) is the CRC of a followed by b, as zlib.crc32(b, crc32(a))). */
export function crc32(bytes, crc = 0) {
  const t = (crcTables ??= makeCrcTables());
  let c = ~crc, i = 0;
  const n = bytes.length;
  while (i < n && (!LITTLE_ENDIAN || (bytes.byteOffset + i) % 4 !== 0)) c = t[(c ^ bytes[i++]) & 0xff] ^ (c >>> 8);
  if (LITTLE_ENDIAN && n - i >= 8) {
    const words = new Uint32Array(bytes.buffer, bytes.byteOffset + i, ((n - i) >>> 3) * 2);
    for (let w = 0; w < words.length; w += 2) {
      const a = words[w] ^ c, b = words[w + 1];
      c = t[1792 + (a & 0xff)] ^ t[1536 + ((a >>> 8) & 0xff)] ^ t[1280 + ((a >>> 16) & 0xff)] ^ t[1024 + (a >>> 24)] ^
          t[768 + (b & 0xff)] ^ t[512 + ((b >>> 8) & 0xff)] ^ t[256 + ((b >>> 16) & 0xff)] ^ t[b >>> 24];
    }
    i += 4 * words.length;
  }
  while (i < n) c = t[(c ^ bytes[i++]) & 0xff] ^ (c >>> 8);
  return ~c >>> 0;
}

/** True when bytes start with the plan file magic "NNWF". */
export function isPlanFile(bytes) {
  return bytes.length >= 4 && bytes[0] === 0x4e && bytes[1] === 0x4e && bytes[2] === 0x57 && bytes[3] === 0x46;
}

/** The weights' place in a plan (its 32-byte header in `head`, a DataView; planLength: the whole
 * plan's bytes): {arenaBytes, weightsBytes, weightsOffset, opsEnd, sane}. sane: the header adds up
 * so that the weights can sit at the arena's start, right after the ops (PlanSession's block). */
export function weightsLayout(head, planLength) {
  const arenaBytes = head.getUint32(8, true), weightsBytes = head.getUint32(12, true);
  const weightsOffset = head.getUint32(16, true), opsEnd = 4 * (8 + head.getUint32(20, true) + head.getUint32(24, true));
  const sane = opsEnd <= weightsOffset && weightsOffset % 16 === 0 && weightsOffset + weightsBytes <= planLength &&
               weightsBytes <= arenaBytes;
  return { arenaBytes, weightsBytes, weightsOffset, opsEnd, sane };
}

function refuse(why) {
  const error = new Error(`nnwasm: not a valid .nnwp plan file: ${why}`);
  error.name = "InvalidModel"; // as CPython's nnwasm names a bad model
  return error;
}

/** The opcodes of the plan's run ops, walking their [opcode, n_args, ...] records (nnw_plan_load
 * validates them later; this stops at anything out of bounds). */
function runOpcodes(planView) {
  const words = planView.byteLength >>> 2, start = 8 + planView.getUint32(20, true), n = planView.getUint32(24, true);
  const codes = [];
  if (start > words || n > words - start) return codes;
  for (let k = 0; k + 1 < n;) {
    const nArgs = planView.getInt32(4 * (start + k + 1), true);
    if (nArgs < 0) break;
    codes.push(planView.getInt32(4 * (start + k), true));
    k += 2 + nArgs;
  }
  return codes;
}

/** The I/O table's "ops": one [node, op type, kernel] per run op, as {node, opType, kernel}; for a
 * file written before the table, "#k" nodes and "op<code>" kernels. */
function checkOps(rows, planView) {
  const codes = runOpcodes(planView);
  if (rows === undefined) return codes.map((code, k) => ({ node: `#${k}`, opType: `op${code}`, kernel: `op${code}` }));
  if (!Array.isArray(rows) || rows.length !== codes.length) {
    throw refuse(`the ops table lists ${Array.isArray(rows) ? rows.length : "no"} ops; the plan has ${codes.length} run ops`);
  }
  return rows.map((row, k) => {
    if (!Array.isArray(row) || row.length !== 3 || !row.every((x) => typeof x === "string")) {
      throw refuse(`ops table row ${k} is not [node, op type, kernel] strings`);
    }
    return { node: row[0], opType: row[1], kernel: row[2] };
  });
}

function checkValue(v, where) {
  if (v === null || typeof v !== "object" || Array.isArray(v)) throw refuse(`${where} is not an object`);
  if (typeof v.name !== "string") throw refuse(`${where} has no name`);
  if (typeof v.dtype !== "string") throw refuse(`${where} ('${v.name}') has no dtype`);
  const size = Object.hasOwn(ELEMENT_BYTES, v.dtype) ? ELEMENT_BYTES[v.dtype] : undefined;
  if (size === undefined) throw refuse(`${where} ('${v.name}') has an unknown dtype '${v.dtype}'`);
  if (!Array.isArray(v.shape) || !v.shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
    throw refuse(`${where} ('${v.name}') has no shape of non-negative integers`);
  }
  if (!Number.isSafeInteger(v.offset) || v.offset < 0) throw refuse(`${where} ('${v.name}') has no offset`);
  const nbytes = v.shape.reduce((a, d) => a * d, 1) * size;
  return { name: v.name, dtype: v.dtype, shape: v.shape.slice(), offset: v.offset, nbytes };
}

/**
 * Parses and checks a plan file (a Uint8Array). Returns {abiVersion, io: {inputs, outputs,
 * producer, model, ops}, plan: Uint8Array (a view of the plan part), arenaBytes}; each input and
 * output is {name, dtype, shape, offset, nbytes}, each op {node, opType, kernel}. Throws an Error
 * named InvalidModel on any refusal of the format. contentCrc: the CRC-32 of bytes [32, end) if
 * the caller computed it as the bytes arrived (PlanReceiver); null computes it here.
 * totalLength: the file's length when `bytes` is only its start (PlanReceiver's prefix, which
 * then must come with contentCrc): everything up to the plan's weights; `plan` is then as long.
 */
export function parsePlanFile(bytes, contentCrc = null, totalLength = null) {
  if (!(bytes instanceof Uint8Array)) throw new TypeError("parsePlanFile needs a Uint8Array");
  if (totalLength !== null && contentCrc === null) throw new TypeError("parsePlanFile: a prefix needs its file's checksum");
  const length = totalLength ?? bytes.length;
  if (length < HEADER_BYTES) throw refuse(`${length} bytes, shorter than the ${HEADER_BYTES}-byte header`);
  if (!isPlanFile(bytes)) throw refuse("wrong magic (expected \"NNWF\")");
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const word = (i) => view.getUint32(4 * i, true);
  const [formatVersion, abiVersion, flags, ioBytes, planBytes, crc, reserved] = [1, 2, 3, 4, 5, 6, 7].map(word);
  if (formatVersion !== PLAN_FILE_VERSION) {
    throw refuse(`format_version ${formatVersion}; this reader knows version ${PLAN_FILE_VERSION}`);
  }
  if (flags !== 0) throw refuse(`flags 0x${flags.toString(16)}: no flag is defined in version ${PLAN_FILE_VERSION}`);
  if (reserved !== 0) throw refuse(`reserved header word is ${reserved}, not 0`);
  const ioPad = Math.ceil(ioBytes / 16) * 16;
  const expected = HEADER_BYTES + ioPad + planBytes;
  if (expected !== length) {
    throw refuse(`the header's sizes (I/O table ${ioBytes} bytes, plan ${planBytes} bytes) make ${expected} bytes, ` +
                 `the file has ${length}`);
  }
  const actual = contentCrc ?? crc32(bytes.subarray(HEADER_BYTES));
  if (actual !== crc) {
    throw refuse(`checksum mismatch (header 0x${crc.toString(16).padStart(8, "0")}, ` +
                 `content 0x${actual.toString(16).padStart(8, "0")}): the file is damaged`);
  }
  for (let i = HEADER_BYTES + ioBytes; i < HEADER_BYTES + ioPad; i++) {
    if (bytes[i] !== 0) throw refuse("non-zero padding after the I/O table");
  }

  const plan = bytes.subarray(HEADER_BYTES + ioPad);
  if (planBytes < PLAN_HEADER_BYTES) throw refuse(`the plan has ${planBytes} bytes, less than its header`);
  const planView = new DataView(plan.buffer, plan.byteOffset, plan.byteLength);
  if (planView.getUint32(0, true) !== PLAN_MAGIC) throw refuse("the plan does not start with \"NNWP\"");
  const planVersion = planView.getUint32(4, true);
  if (planVersion !== abiVersion) throw refuse(`abi_version ${abiVersion} but the plan has version ${planVersion}`);
  const arenaBytes = planView.getUint32(8, true);

  let table;
  try {
    table = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes.subarray(HEADER_BYTES, HEADER_BYTES + ioBytes)));
  } catch (e) {
    throw refuse(`the I/O table is not UTF-8 JSON (${e.message})`);
  }
  if (table === null || typeof table !== "object" || Array.isArray(table)) throw refuse("the I/O table is not a JSON object");
  for (const key of ["inputs", "outputs", "producer", "model"]) {
    if (!Object.hasOwn(table, key)) throw refuse(`the I/O table lacks "${key}"`);
  }
  if (!Array.isArray(table.inputs) || !Array.isArray(table.outputs)) throw refuse("the I/O table's inputs/outputs are not lists");
  if (typeof table.producer !== "string" || typeof table.model !== "string") throw refuse("the I/O table's producer/model are not strings");
  const io = { producer: table.producer, model: table.model, ops: checkOps(table.ops, planView) };
  for (const side of ["inputs", "outputs"]) {
    io[side] = table[side].map((v, i) => checkValue(v, `${side}[${i}]`));
    const names = new Set();
    for (const v of io[side]) {
      if (names.has(v.name)) throw refuse(`${side} name '${v.name}' twice`);
      names.add(v.name);
      if (v.offset + v.nbytes > arenaBytes) {
        throw refuse(`${side.slice(0, -1)} '${v.name}' (${v.nbytes} bytes at offset ${v.offset}) lies beyond the plan's ` +
                     `${arenaBytes}-byte arena`);
      }
      if (v.offset % ELEMENT_BYTES[v.dtype] !== 0) throw refuse(`${side.slice(0, -1)} '${v.name}' is misaligned`);
      typedArrayFor(v.dtype); // every dtype above is a Tensor type; fails loudly if that changes
    }
  }
  return { abiVersion, io, plan, planBytes, arenaBytes };
}
