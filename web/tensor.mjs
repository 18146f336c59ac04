// Tensor with onnxruntime-web's constructor and fields: new Tensor(type, data, dims) or
// new Tensor(data, dims), then .type .data .dims .size .location. Data lives on the CPU
// (location "cpu"), or, for outputs a session was asked to keep (preferredOutputLocation "wasm"),
// in the session's memory (location "wasm", as onnxruntime-web's GPU tensors are "gpu-buffer"):
// .data throws, getData() downloads, dispose() frees, and feeding it back to a run costs no copy.

// The one table of element types: onnxruntime-web's type name -> typed array holding it.
// Order matters where two types share an array: inferring a type from data takes the first.
const TYPED_ARRAYS = {
  float32: Float32Array,
  float64: Float64Array,
  int8: Int8Array,
  uint8: Uint8Array,
  int16: Int16Array,
  uint16: Uint16Array,
  float16: Uint16Array, // raw IEEE half bits, as onnxruntime-web keeps them without Float16Array
  int32: Int32Array,
  uint32: Uint32Array,
  int64: BigInt64Array,
  uint64: BigUint64Array,
  bool: Uint8Array,
  string: Array,
};

export function typedArrayFor(type) {
  const ctor = TYPED_ARRAYS[type];
  if (ctor === undefined) {
    throw new TypeError(`unsupported tensor type '${type}' (known: ${Object.keys(TYPED_ARRAYS).join(", ")})`);
  }
  return ctor;
}

function typeOfData(data) {
  if (Array.isArray(data) && data.every((v) => typeof v === "string")) return "string";
  if (Array.isArray(data) && data.every((v) => typeof v === "boolean")) return "bool";
  if (Array.isArray(data)) return "float32";
  if (data instanceof Uint8ClampedArray) return "uint8";
  for (const [type, ctor] of Object.entries(TYPED_ARRAYS)) {
    if (ctor !== Array && data instanceof ctor) return type; // Uint8Array -> uint8, Uint16Array -> float16 first
  }
  throw new TypeError("tensor data must be a typed array or an array");
}

function toData(type, data) {
  const ctor = typedArrayFor(type);
  if (ctor === Array) {
    if (!Array.isArray(data) || !data.every((v) => typeof v === "string")) {
      throw new TypeError("a 'string' tensor needs an array of strings");
    }
    return data;
  }
  if (data instanceof ctor) return data;
  if (type === "uint8" && data instanceof Uint8ClampedArray) return new Uint8Array(data.buffer, data.byteOffset, data.length);
  if (!Array.isArray(data)) {
    throw new TypeError(`a '${type}' tensor needs a ${ctor.name} or an array, got ${data?.constructor?.name ?? typeof data}`);
  }
  if (type === "int64" || type === "uint64") return ctor.from(data, (v) => BigInt(v));
  if (type === "bool") return ctor.from(data, (v) => (v ? 1 : 0));
  return ctor.from(data);
}

function checkDims(dims) {
  if (!Array.isArray(dims) || !dims.every((d) => Number.isSafeInteger(d) && d >= 0)) {
    throw new TypeError(`tensor dims must be an array of non-negative integers, got ${JSON.stringify(dims)}`);
  }
  return Object.freeze([...dims]);
}

export class Tensor {
  constructor(typeOrData, dataOrDims, maybeDims) {
    let type, data, dims;
    if (typeof typeOrData === "string") {
      [type, data, dims] = [typeOrData, toData(typeOrData, dataOrDims), maybeDims];
    } else {
      type = typeOfData(typeOrData);
      [data, dims] = [toData(type, typeOrData), dataOrDims];
    }
    this.dims = checkDims(dims ?? [data.length]);
    this.size = this.dims.reduce((a, b) => a * b, 1);
    if (data.length !== this.size) {
      throw new RangeError(`tensor data has ${data.length} elements but dims [${this.dims}] need ${this.size}`);
    }
    this.type = type;
    this.data = data;
    this.location = "cpu";
  }

  /** Internal (sessions make these): a tensor of location "wasm" whose data stays where `kept`
   * says: {download(): Promise<ArrayBuffer>, dispose(), key, owner}; owner is what a feed must
   * come back to (the session's runtime), key names the data there. */
  static _kept(type, dims, kept) {
    const t = Object.create(Tensor.prototype);
    t.dims = checkDims(dims);
    t.size = t.dims.reduce((a, b) => a * b, 1);
    t.type = type;
    t.location = "wasm";
    Object.defineProperty(t, "data", {
      configurable: true,
      enumerable: true,
      get() {
        throw new Error(`the data of this ${type} tensor is not on the CPU (location "${this.location}"): ` +
                        "await tensor.getData() to download it");
      },
    });
    KEPT.set(t, kept);
    DISPOSER.register(t, kept, t);
    return t;
  }

  /** Where a "wasm" tensor's data is kept ({key, owner}), or undefined. */
  static _keptOf(tensor) {
    return KEPT.get(tensor);
  }

  /** Same data, other dims (same element count). */
  reshape(dims) {
    if (this.location !== "cpu") throw new Error(`reshape(): the tensor's data is not on the CPU (location "${this.location}")`);
    return new Tensor(this.type, this.data, dims);
  }

  /** The data as a typed array. A "wasm" tensor downloads it and becomes a CPU tensor; with
   * releaseData its session's copy is freed at once (else at dispose() or garbage collection). */
  async getData(releaseData) {
    const kept = KEPT.get(this);
    if (kept === undefined) {
      if (this.location === "none") throw new Error("getData(): the tensor was disposed");
      return this.data;
    }
    const data = new (typedArrayFor(this.type))(await kept.download());
    KEPT.delete(this);
    Object.defineProperty(this, "data", { value: data, writable: true, configurable: true, enumerable: true });
    this.location = "cpu";
    if (releaseData) {
      DISPOSER.unregister(this);
      kept.dispose();
    } else {
      KEPT_CPU.set(this, kept); // still freed by dispose() or the collector
    }
    return data;
  }

  /** Frees a "wasm" tensor's data in its session (a CPU tensor: nothing to free). */
  dispose() {
    const kept = KEPT.get(this) ?? KEPT_CPU.get(this);
    if (kept === undefined) return;
    KEPT.delete(this);
    KEPT_CPU.delete(this);
    DISPOSER.unregister(this);
    if (this.location === "wasm") {
      Object.defineProperty(this, "data", { value: undefined, writable: true, configurable: true, enumerable: true });
      this.location = "none";
    }
    kept.dispose();
  }
}

// "wasm" tensors -> where their data is kept; those downloaded but not released -> the same.
const KEPT = new WeakMap();
const KEPT_CPU = new WeakMap();
// A "wasm" tensor nobody disposed frees its session's copy when it is collected.
const DISPOSER = new FinalizationRegistry((kept) => {
  try {
    kept.dispose();
  } catch {
    // its session or worker is gone, and the data with it
  }
});
