// Image -> model input, as demo/assets/efficientnet-lite0.json says: resize the shorter side
// to `resize` with a bilinear (triangle) filter, center-crop `size` x `size`, scale, subtract
// `mean`, divide by `std`, lay out as `layout`. Pure functions on RGBA bytes: no DOM needed.

const SUPPORTED = {
  interpolation: ["bilinear"],
  crop: ["center"],
  scale: ["0..255", "0..1"],
  layout: ["NCHW", "NHWC"],
  channels: ["RGB", "BGR"],
};

/** Throws an Error naming the first field of the recipe this code cannot follow. */
export function checkRecipe(recipe) {
  for (const key of ["size", "resize"]) {
    if (!Number.isInteger(recipe[key]) || recipe[key] <= 0) throw new Error(`recipe.${key} must be a positive integer`);
  }
  if (recipe.resize < recipe.size) throw new Error("recipe.resize must be at least recipe.size");
  for (const key of ["mean", "std"]) {
    if (!Array.isArray(recipe[key]) || recipe[key].length !== 3) throw new Error(`recipe.${key} must list 3 numbers`);
  }
  for (const [key, values] of Object.entries(SUPPORTED)) {
    if (!values.includes(recipe[key])) throw new Error(`recipe.${key} = ${JSON.stringify(recipe[key])}; supported: ${values.join(", ")}`);
  }
  return recipe;
}

// Resampling weights for output pixels [offset, offset + count) of a resize inSize -> outSize:
// a triangle filter widened by the downscale factor, so shrinking averages every source pixel
// (as PIL's BILINEAR does) and enlarging is plain bilinear interpolation. Pixel centers at +0.5.
// Flat typed arrays: pixel i reads taps[i] source pixels from lo[i], weights at w[i * width].
// (This runs once per image, cold, on the page's thread while the model downloads: objects and
// nested arrays in the loops below made it three times slower.)
function weights(inSize, outSize, offset, count) {
  const scale = inSize / outSize;
  const support = Math.max(scale, 1);
  const width = Math.ceil(2 * support) + 1;
  const lo = new Int32Array(count), taps = new Int32Array(count), w = new Float64Array(count * width);
  for (let i = 0; i < count; i++) {
    const center = (i + offset + 0.5) * scale;
    lo[i] = Math.max(0, Math.floor(center - support + 0.5));
    taps[i] = Math.min(inSize, Math.floor(center + support + 0.5)) - lo[i];
    let sum = 0;
    for (let k = 0; k < taps[i]; k++) {
      const v = Math.max(0, 1 - Math.abs((lo[i] + k + 0.5 - center) / support));
      w[i * width + k] = v;
      sum += v;
    }
    for (let k = 0; k < taps[i]; k++) w[i * width + k] /= sum;
  }
  return { lo, taps, w, width };
}

// Python's round(), which tests/imagenet_fixture.py uses for the longer side.
function roundHalfEven(v) {
  const r = Math.round(v);
  return Math.abs(v % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

// Each pass rounds to 8 bits, as resizing an 8-bit image does (PIL, canvas), so the input
// matches what Python-side preprocessing of the same file gives.
function to8bit(v) {
  return v <= 0 ? 0 : v >= 255 ? 255 : Math.round(v);
}

/**
 * rgba: Uint8ClampedArray / Uint8Array of width * height * 4 bytes (canvas ImageData order).
 * Returns { data: Float32Array, dims } ready for new Tensor("float32", data, dims).
 */
export function preprocess(rgba, width, height, recipe) {
  checkRecipe(recipe);
  if (rgba.length !== width * height * 4) throw new Error(`expected ${width * height * 4} RGBA bytes, got ${rgba.length}`);
  const { size, resize } = recipe;
  const shortSide = Math.min(width, height);
  const rw = width === shortSide ? resize : Math.max(resize, roundHalfEven((width * resize) / shortSide));
  const rh = width === shortSide ? Math.max(resize, roundHalfEven((height * resize) / shortSide)) : resize;
  const left = Math.floor((rw - size) / 2);
  const top = Math.floor((rh - size) / 2);
  const xs = weights(width, rw, left, size);
  const ys = weights(height, rh, top, size);

  // Horizontal pass over the source rows the crop reads into rows of `size` RGB values, then vertical.
  const rows = new Float32Array(height * size * 3);
  const firstRow = ys.lo[0], endRow = ys.lo[size - 1] + ys.taps[size - 1];
  for (let y = firstRow; y < endRow; y++) {
    for (let x = 0; x < size; x++) {
      const n = xs.taps[x], at = x * xs.width;
      let r = 0, g = 0, b = 0;
      for (let k = 0, p = (y * width + xs.lo[x]) * 4; k < n; k++, p += 4) {
        const wk = xs.w[at + k];
        r += wk * rgba[p];
        g += wk * rgba[p + 1];
        b += wk * rgba[p + 2];
      }
      const o = (y * size + x) * 3;
      rows[o] = to8bit(r);
      rows[o + 1] = to8bit(g);
      rows[o + 2] = to8bit(b);
    }
  }

  const unit = recipe.scale === "0..1" ? 1 / 255 : 1;
  const order = recipe.channels === "RGB" ? [0, 1, 2] : [2, 1, 0];
  const nchw = recipe.layout === "NCHW";
  const plane = size * size;
  const data = new Float32Array(3 * plane);
  for (let y = 0; y < size; y++) {
    const lo = ys.lo[y], n = ys.taps[y], at = y * ys.width;
    for (let x = 0; x < size; x++) {
      for (let c = 0; c < 3; c++) {
        const src = order[c];
        let v = 0;
        for (let k = 0; k < n; k++) v += ys.w[at + k] * rows[((lo + k) * size + x) * 3 + src];
        const out = (to8bit(v) * unit - recipe.mean[c]) / recipe.std[c];
        data[nchw ? c * plane + y * size + x : (y * size + x) * 3 + c] = out;
      }
    }
  }
  const dims = nchw ? [1, 3, size, size] : [1, size, size, 3];
  return { data, dims };
}
