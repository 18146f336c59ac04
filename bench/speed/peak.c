// The wasm f32x4 peak: 12 independent acc = acc * m + c chains in registers (no loads, no FMA:
// the project's kernels are built with -msimd128 alone), 8 flops per chain step. Built like
// kernels.wasm (clang-19 -O3 -msimd128, standalone) by bench/speed/bench_speed.py; peak(iters, k) runs
// iters steps of all 12 chains (96 * iters flops) and returns an int so that nothing is dead.
#include <wasm_simd128.h>

#define STEP(a) a = wasm_f32x4_add(wasm_f32x4_mul(a, m), c)

__attribute__((export_name("peak"))) int peak(int iters, int k) {
  const v128_t m = wasm_f32x4_splat(1.0f - 1.0f / (float)k), c = wasm_f32x4_splat(1.0f / (float)k);
  v128_t a0 = wasm_f32x4_splat(0.0f), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0;
  v128_t a6 = a0, a7 = a0, a8 = a0, a9 = a0, a10 = a0, a11 = a0;
  for (int i = 0; i < iters; i++) {
    STEP(a0); STEP(a1); STEP(a2); STEP(a3); STEP(a4); STEP(a5);
    STEP(a6); STEP(a7); STEP(a8); STEP(a9); STEP(a10); STEP(a11);
  }
  v128_t s = wasm_f32x4_add(wasm_f32x4_add(wasm_f32x4_add(a0, a1), wasm_f32x4_add(a2, a3)),
                            wasm_f32x4_add(wasm_f32x4_add(a4, a5), wasm_f32x4_add(a6, a7)));
  s = wasm_f32x4_add(s, wasm_f32x4_add(wasm_f32x4_add(a8, a9), wasm_f32x4_add(a10, a11)));
  return (int)(wasm_f32x4_extract_lane(s, 0) * 1000.0f);
}
