// Flavours of kernels.wasm, chosen at load time as XNNPACK and onnxruntime-web choose theirs (the
// same rules as py_runtime/nnwasm/host/flavours.py):
//   simd      kernels.wasm: WebAssembly SIMD128, bit-identical on every engine and CPU (the reference)
//   relaxed   kernels-relaxed.wasm: adds relaxed SIMD (f32x4.relaxed_madd in the float GEMM/conv
//             microkernels): Node 22+, Chromium 114+; faster where the CPU has FMA, bits may differ
//             by CPU and engine
// Default: `relaxed` where WebAssembly.validate(PROBE) says the engine has relaxed SIMD, else `simd`
// (Node 20 without --experimental-wasm-relaxed-simd: no flag needed). Forcing, with
// onnxruntime-web's names: env.wasm.relaxedSimd = true | false, env.wasm.simd = false (no relaxed
// either: nnwasm has no build without SIMD128); in Node, $NNWASM_KERNELS_FLAVOUR (simd | relaxed |
// auto) when neither is set. Asking for `relaxed` where the engine lacks it runs `simd` with one
// console warning. Plan files run on either.

// "simd+threads" / "relaxed+threads": those kernels with atomics on a shared memory, for
// env.wasm.numThreads > 1 (threads.mjs); the flavour with threads is resolveFlavour's plus
// "+threads" (threadsFlavour).
export const FLAVOUR_FILES = Object.freeze({ simd: "kernels.wasm", relaxed: "kernels-relaxed.wasm",
                                             "simd+threads": "kernels-threads.wasm",
                                             "relaxed+threads": "kernels-relaxed-threads.wasm" });

// (module (func (result v128)
//   (i32x4.relaxed_dot_i8x16_i7x16_add_s (i8x16.splat 1) (i8x16.splat 1) (i8x16.splat 1))
//   (f32x4.relaxed_madd (i8x16.splat 1) (i8x16.splat 1))))
export const PROBE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7b, 0x03,
  0x02, 0x01, 0x00, 0x0a, 0x1e, 0x01, 0x1c, 0x00, 0x41, 0x01, 0xfd, 0x0f, 0x41, 0x01, 0xfd, 0x0f,
  0x41, 0x01, 0xfd, 0x0f, 0xfd, 0x93, 0x02, 0x41, 0x01, 0xfd, 0x0f, 0x41, 0x01, 0xfd, 0x0f, 0xfd,
  0x85, 0x02, 0x0b,
]);

let supported = null;
let warned = false;

/** Whether this realm's WebAssembly has relaxed SIMD (asked once). */
export function relaxedSimdSupported() {
  if (supported === null) {
    try {
      supported = WebAssembly.validate(PROBE);
    } catch {
      supported = false;
    }
  }
  return supported;
}

/** The flavour asked for: "simd", "relaxed" or "auto", from env.wasm (then $NNWASM_KERNELS_FLAVOUR). */
export function requestedFlavour(wasm = {}) {
  if (wasm?.relaxedSimd === true) return "relaxed";
  if (wasm?.relaxedSimd === false || wasm?.simd === false) return "simd";
  if (wasm?.relaxedSimd !== undefined && wasm?.relaxedSimd !== null) {
    throw new TypeError(`env.wasm.relaxedSimd must be true, false or undefined, got ${String(wasm.relaxedSimd)}`);
  }
  const fromEnv = globalThis.process?.env?.NNWASM_KERNELS_FLAVOUR;
  if (fromEnv) {
    if (!["auto", "simd", "relaxed"].includes(fromEnv)) {
      throw new TypeError(`$NNWASM_KERNELS_FLAVOUR must be auto, simd or relaxed, got ${fromEnv}`);
    }
    return fromEnv;
  }
  return "auto";
}

/** The flavour that runs for env.wasm's request: relaxed where the engine has it (one warning when
 * it was asked for and is missing), else simd. */
export function resolveFlavour(wasm = {}) {
  const asked = requestedFlavour(wasm);
  if (asked === "simd") return "simd";
  if (relaxedSimdSupported()) return "relaxed";
  if (asked === "relaxed" && !warned) {
    warned = true;
    console.warn("nnwasm: this WebAssembly engine has no relaxed SIMD; running the 'simd' kernels instead of 'relaxed'");
  }
  return "simd";
}

/** The flavour that runs for env.wasm's request on `threads` threads: resolveFlavour's, with
 * "+threads" above one thread ("relaxed+threads" where relaxed SIMD validates, else "simd+threads"). */
export function threadsFlavour(wasm = {}, threads = 1) {
  const base = resolveFlavour(wasm);
  return threads > 1 ? `${base}+threads` : base;
}

/** A kernels.wasm URL made into the flavour's file (the same folder); URLs of other files are kept. */
export function flavourURL(url, flavour) {
  const u = new URL(url);
  if (!u.pathname.endsWith("/kernels.wasm")) return u.href;
  u.pathname = u.pathname.slice(0, -"kernels.wasm".length) + FLAVOUR_FILES[flavour];
  return u.href;
}
