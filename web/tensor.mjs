// Tensor with onnxruntime-web's constructor and fields: new Tensor(type, data, dims) or
// new Tensor(data, dims), then .type .data .dims .size. Data always lives on the CPU.

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

  /** Same data, other dims (same element count). */
  reshape(dims) {
    return new Tensor(this.type, this.data, dims);
  }

  async getData() {
    return this.data;
  }

  dispose() {}
}
