// An image file -> its RGBA pixels at native size, through a canvas (the resize is
// preprocess.mjs's, not the canvas's). Shared by the demo page (app.mjs) and the start-up
// benchmark's pages (bench/startup/), so that every page prepares the photo the same way.

/** Decodes blob (a Blob or File); resolves to an ImageData; rejects naming a file that is no image. */
export async function decodeImage(blob) {
  let bitmap;
  try {
    bitmap = await createImageBitmap(blob);
  } catch {
    throw new Error(`cannot decode ${blob.name ?? "the image"}: not an image this browser can read`);
  }
  const canvas = document.createElement("canvas");
  canvas.width = bitmap.width;
  canvas.height = bitmap.height;
  const ctx = canvas.getContext("2d", { willReadFrequently: true });
  ctx.drawImage(bitmap, 0, 0);
  bitmap.close();
  return ctx.getImageData(0, 0, canvas.width, canvas.height);
}
