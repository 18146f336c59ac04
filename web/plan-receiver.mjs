// Receiving a plan file as it downloads: the weights go straight into kernels.wasm's memory,
// where the session's arena will hold them, piece by piece as they arrive, while the checksum is
// computed; only the small prefix (header, I/O table, the plan's ops) stays in JS. So when the
// last piece is in there is no 18 MB buffer to copy, checksum or collect: the session is ready
// after nnw_plan_load. The file is checked as one given as bytes is (PlanSession.create gets the
// prefix, the file's length and its checksum). A file whose header does not add up, or weights
// kernels.wasm has no memory for, are kept in JS whole, for the usual path to check and refuse.
import { crc32, weightsLayout } from "./plan-file.mjs";
import { loadKernels } from "./plan-session.mjs";

const HEADER_BYTES = 32; // the file's header, and the plan's
let placedCount = 0;

/** How many plan files this realm has received with their weights placed (for tests). */
export const receivedPlans = () => placedCount;

export class PlanReceiver {
  crc = 0; // of bytes [32, end), as they arrive
  #early = []; // pieces before the layout is known
  #received = 0;
  #prefix = []; // pieces of bytes [0, prefixEnd), or of the whole file once #layout is false
  #pending = []; // [piece, offset] of weights that came before the block was allocated
  #tail = []; // pieces past the weights (none in files nnwasm writes)
  #layout = null; // {planAt, weightsOffset, prefixEnd, weightsEnd, blockBytes}; false: the file stays in JS
  #k = null; // kernels.wasm's exports, once loaded
  #block = 0; // malloc'ed: the plan's header and ops, then the arena, whose start holds the weights
  #kernels;
  #reused = false; // write()'s piece will be overwritten: keep copies

  constructor() {
    this.#kernels = loadKernels().then(({ exports }) => {
      this.#k = exports;
      this.#allocate();
    });
    this.#kernels.catch(() => {}); // finish() reports it
  }

  /** The next piece of the file (pieces come in order, as a download delivers them). reused: the
   * caller reads the next piece into the same buffer, so what is kept here is copied. */
  write(piece, reused = false) {
    this.#reused = reused;
    const offset = this.#received;
    this.#received += piece.length;
    if (this.#received > HEADER_BYTES) this.crc = crc32(piece.subarray(Math.max(0, HEADER_BYTES - offset)), this.crc);
    if (this.#layout !== null) {
      this.#take(piece, offset);
      return;
    }
    this.#early.push(this.#keep(piece));
    const layout = this.#findLayout();
    if (layout === null) return;
    this.#layout = layout;
    const early = concat(this.#early, this.#received);
    this.#early = [];
    this.#take(early, 0);
    this.#allocate();
  }

  /** Once the download has ended: {prefix, totalLength, crc, block, blockBytes} with the weights
   * in place (block is the caller's to free), or {bytes, crc} for the usual path. */
  async finish() {
    await this.#kernels; // a kernels.wasm that can't load fails here, as PlanSession.create would
    if (this.#layout === null) this.#fallBack(); // shorter than the headers: the usual path refuses it
    if (this.#layout === false) return { bytes: concat(this.#prefix, this.#received), crc: this.crc };
    placedCount++;
    return { prefix: concat(this.#prefix, this.#layout.prefixEnd), totalLength: this.#received, crc: this.crc,
             block: this.#block, blockBytes: this.#layout.blockBytes };
  }

  /** Frees the block (after a failed finish() or create()). */
  release() {
    if (this.#block) this.#k.nnw_free(this.#block);
    this.#block = 0;
  }

  // The layout from the file's header and the plan's, once both are in; false if they do not add
  // up as PlanSession's #load requires to place the weights in the arena (weightsLayout).
  #findLayout() {
    if (this.#received < HEADER_BYTES) return null;
    const head = concat(this.#early, HEADER_BYTES);
    const file = new DataView(head.buffer, head.byteOffset, HEADER_BYTES);
    const planAt = HEADER_BYTES + Math.ceil(file.getUint32(16, true) / 16) * 16, planBytes = file.getUint32(20, true);
    if (this.#received < planAt + HEADER_BYTES) return null;
    const upToPlan = concat(this.#early, planAt + HEADER_BYTES);
    const plan = new DataView(upToPlan.buffer, upToPlan.byteOffset + planAt, HEADER_BYTES);
    const { arenaBytes, weightsBytes, weightsOffset, sane } = weightsLayout(plan, planBytes);
    if (!sane || weightsBytes === 0) return false; // (no weights: nothing to place)
    const prefixEnd = planAt + weightsOffset;
    return { planAt, weightsOffset, prefixEnd, weightsEnd: prefixEnd + weightsBytes, blockBytes: weightsOffset + arenaBytes };
  }

  #take(piece, offset) {
    const layout = this.#layout;
    if (layout === false) {
      this.#prefix.push(this.#keep(piece));
      return;
    }
    const end = offset + piece.length;
    if (offset < layout.prefixEnd) this.#prefix.push(this.#keep(piece.subarray(0, Math.min(end, layout.prefixEnd) - offset)));
    const from = Math.max(offset, layout.prefixEnd), to = Math.min(end, layout.weightsEnd);
    if (from < to) this.#place(piece.subarray(from - offset, to - offset), from);
    if (end > layout.weightsEnd) this.#tail.push(this.#keep(piece.subarray(Math.max(offset, layout.weightsEnd) - offset)));
  }

  #place(weights, offset) {
    if (!this.#block) {
      this.#pending.push([this.#keep(weights), offset]);
      return;
    }
    const { weightsOffset, prefixEnd } = this.#layout;
    const at = this.#block + weightsOffset + (offset - prefixEnd); // the arena starts at block + weightsOffset
    new Uint8Array(this.#k.memory.buffer, at, weights.length).set(weights); // memory may have grown: a fresh view
  }

  // What is kept of a piece: the piece itself, or a copy when its buffer will be read into again.
  #keep(part) {
    return this.#reused ? part.slice() : part;
  }

  #allocate() {
    if (!this.#k || !this.#layout || this.#block) return;
    const block = this.#k.nnw_malloc(this.#layout.blockBytes) >>> 0; // past 2 GB an i32 reads negative
    if (!block) {
      this.#fallBack();
      return;
    }
    this.#block = block;
    for (const [piece, offset] of this.#pending) this.#place(piece, offset);
    this.#pending = [];
  }

  // Keep the whole file in JS from here on (nothing was placed yet: no block).
  #fallBack() {
    this.#prefix = [...this.#early, ...this.#prefix, ...this.#pending.map(([p]) => p), ...this.#tail];
    this.#early = this.#pending = this.#tail = [];
    this.#layout = false;
  }
}

/** The first n bytes of the pieces, in one array (n <= their total). */
function concat(pieces, n) {
  if (pieces.length === 1 && pieces[0].length === n) return pieces[0];
  const out = new Uint8Array(n);
  let at = 0;
  for (const p of pieces) {
    if (at >= n) break;
    const part = p.subarray(0, Math.min(p.length, n - at));
    out.set(part, at);
    at += part.length;
  }
  return out;
}
