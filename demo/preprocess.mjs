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
function weights(inSize, outSize, offset, count) {
  const scale = inSize / outSize;
  const support = Math.max(scale, 1);
  const taps = [];
  for (let i = offset; i < offset + count; i++) {
    const center = (i + 0.5) * scale;
    const lo = Math.max(0, Math.floor(center - support + 0.5));
    const hi = Math.min(inSize, Math.floor(center + support + 0.5));
    const w = [];
    let sum = 0;
    for (let j = lo; j < hi; j++) {
      const v = Math.max(0, 1 - Math.abs((j + 0.5 - center) / support));
      w.push(v);
      sum += v;
    }
    taps.push({ lo, w: w.map((v) => v / sum) });
  }
  return taps;
}

// Python's round(), which tests/imagenet_fixture.py uses for the longer side.
function roundHalfEven(v) {
  const r = Math.round(v);
  return Math.abs(v % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

// Each pass rounds to 8 bits, as resizing an 8-bit image does (PIL, canvas), so the input
// matches what Python-side preprocessing of the same file gives.
function to8bit(v) {
  return Math.min(255, Math.max(0, Math.round(v)));
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

  // Horizontal pass over every source row into rows of `size` RGB floats, then vertical.
  const rows = new Float32Array(height * size * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < size; x++) {
      const { lo, w } = xs[x];
      let r = 0, g = 0, b = 0;
      for (let k = 0, p = (y * width + lo) * 4; k < w.length; k++, p += 4) {
        r += w[k] * rgba[p];
        g += w[k] * rgba[p + 1];
        b += w[k] * rgba[p + 2];
      }
      const o = (y * size + x) * 3;
      rows[o] = to8bit(r);
      rows[o + 1] = to8bit(g);
      rows[o + 2] = to8bit(b);
    }
  }

  const unit = recipe.scale === "0..1" ? 1 / 255 : 1;
  const order = recipe.channels === "RGB" ? [0, 1, 2] : [2, 1, 0];
  const plane = size * size;
  const data = new Float32Array(3 * plane);
  for (let y = 0; y < size; y++) {
    const { lo, w } = ys[y];
    for (let x = 0; x < size; x++) {
      for (let c = 0; c < 3; c++) {
        const src = order[c];
        let v = 0;
        for (let k = 0; k < w.length; k++) v += w[k] * rows[((lo + k) * size + x) * 3 + src];
        const out = (to8bit(v) * unit - recipe.mean[c]) / recipe.std[c];
        data[recipe.layout === "NCHW" ? c * plane + y * size + x : (y * size + x) * 3 + c] = out;
      }
    }
  }
  const dims = recipe.layout === "NCHW" ? [1, 3, size, size] : [1, size, size, 3];
  return { data, dims };
}
