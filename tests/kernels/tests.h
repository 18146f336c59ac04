/* The test groups main.c runs. */
#ifndef NNW_TESTS_H
#define NNW_TESTS_H
#include <string.h>

void test_conv2d(void);
void test_gemm(void);
void test_matmul(void);
void test_binary(void);
void test_unary(void);
void test_pool2d(void);
void test_softmax(void);
void test_mean_rows(void);
void test_copy2d(void);
void test_transpose(void);
void test_plan_header(void);
void test_plan_ops(void);
void test_plan_fuzz(void);
void test_alloc(void);
void test_q8_gemm(void);
void test_q8_conv2d(void);
void test_q8_quantize(void);
void test_q8_add(void);
void test_q8_hostile(void);

#endif
