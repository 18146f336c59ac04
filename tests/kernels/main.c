/* Native (and wasm, via node) test program for kernels_c: `test_kernels [group]`.
 * The last line is always `N passed, N failed`; the exit status is 1 on any failure. */
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "tests.h"

static const struct {
  const char *name;
  void (*fn)(void);
} groups[] = {
    {"conv2d", test_conv2d},         {"gemm", test_gemm},       {"matmul", test_matmul},
    {"gemm_packed", test_gemm_packed}, {"attention", test_attention},
    {"attention_kv", test_attention_kv},
    {"gemm_packed", test_gemm_packed}, {"gemm_packed_f16", test_gemm_packed_f16}, {"attention", test_attention},
    {"q8_gemm_ep", test_q8_gemm_ep}, {"q8_gemm_pk", test_q8_gemm_pk}, {"q8_gemm_pkq", test_q8_gemm_pkq},
    {"q8_gemm_pk8", test_q8_gemm_pk8},
    {"binary", test_binary},         {"unary", test_unary},     {"pool2d", test_pool2d},
    {"softmax", test_softmax},       {"mean_rows", test_mean_rows}, {"copy2d", test_copy2d},
    {"transpose", test_transpose},
    {"unary_math", test_unary_math}, {"binary_math", test_binary_math},
    {"binary_int", test_binary_int}, {"compare", test_compare}, {"unary_bool", test_unary_bool},
    {"cast", test_cast},             {"where", test_where},     {"logic_refusals", test_logic_refusals},
    {"transpose", test_transpose},   {"gather_axes", test_gather_axes}, {"gather", test_gather},
    {"gather_elements", test_gather_elements}, {"resize_linear", test_resize_linear},
    {"conv_transpose2d", test_conv_transpose2d}, {"recurrent", test_recurrent},
    {"logic_fuzz", test_logic_fuzz},
    {"plan_header", test_plan_header}, {"plan_ops", test_plan_ops}, {"plan_fuzz", test_plan_fuzz},
    {"plan_run_ops", test_plan_run_ops},
    {"alloc", test_alloc},
    {"reduce", test_reduce},         {"argreduce", test_argreduce}, {"norm", test_norm},
    {"bmatmul", test_bmatmul},       {"lp_normalize", test_lp_normalize},
    {"q8_gemm", test_q8_gemm},       {"q8_conv2d", test_q8_conv2d}, {"q8_quantize", test_q8_quantize},
    {"q8_add", test_q8_add},         {"q8_hostile", test_q8_hostile},
    {"host_hints", test_host_hints},
    {"conv2d_winograd", test_conv2d_winograd},
    {"conv2d_winograd_s2", test_conv2d_winograd_s2},
    {"q8_conv2d_hinted", test_q8_conv2d_hinted},
    {"q4", test_q4},
    {"skip_norm", test_skip_norm}, {"rotary", test_rotary}, {"bias_act", test_bias_act}, {"embed_sum", test_embed_sum},
    {"topk", test_topk}, {"symbolic_ops", test_symbolic_ops},
    {"dft", test_dft},
    /* new groups go last: a group's rng seed is its index (main), and some cases' layouts depend on it */
    {"plan_extents", test_plan_extents}, {"alloc_counts", test_alloc_counts},
    {"q8_conv2d_7bit", test_q8_conv2d_7bit},
    {"kv_append_rows", test_kv_append_rows},
};

int main(int argc, char **argv) {
  int ran = 0;
  for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++) {
    if (argc > 1 && strcmp(argv[1], groups[i].name) != 0) continue;
    int before = g_failed;
    rng_seed(0x5EED0000u + i);
    groups[i].fn();
    printf("%-12s %s\n", groups[i].name, g_failed == before ? "ok" : "FAILED");
    ran++;
  }
  if (ran == 0) printf("no test group named %s\n", argv[1]);
  printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed || ran == 0 ? 1 : 0;
}
