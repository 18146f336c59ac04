/* The test groups main.c runs. */
#ifndef NNW_TESTS_H
#define NNW_TESTS_H
#include <string.h>

void test_conv2d(void);
void test_conv2d_winograd(void);
void test_conv2d_winograd_s2(void);
void test_gemm(void);
void test_matmul(void);
void test_host_hints(void);
void test_gemm_packed(void);
void test_attention(void);
void test_q8_gemm_ep(void);
void test_q8_gemm_pk(void);
void test_q4(void);
void test_q8_gemm_pkq(void);
void test_binary(void);
void test_unary(void);
void test_pool2d(void);
void test_softmax(void);
void test_mean_rows(void);
void test_copy2d(void);
void test_transpose(void);
void test_gather_axes(void);
void test_gather(void);
void test_gather_elements(void);
void test_resize_linear(void);
void test_conv_transpose2d(void);
void test_recurrent(void);
void test_plan_header(void);
void test_plan_ops(void);
void test_plan_fuzz(void);
void test_plan_run_ops(void);
void test_alloc(void);
void test_unary_math(void);
void test_binary_math(void);
void test_binary_int(void);
void test_compare(void);
void test_unary_bool(void);
void test_cast(void);
void test_where(void);
void test_logic_refusals(void);
void test_reduce(void);
void test_argreduce(void);
void test_lp_normalize(void);
void test_norm(void);
void test_bmatmul(void);
void test_logic_fuzz(void);
void test_q8_gemm(void);
void test_q8_conv2d(void);
void test_q8_quantize(void);
void test_q8_add(void);
void test_q8_hostile(void);
void test_q8_conv2d_hinted(void);
void test_skip_norm(void), test_rotary(void), test_bias_act(void), test_embed_sum(void);   /* test_transformer.c */

#endif
