/* test_ref_gemv.h -- the fixed int8 operands and CPU reference of the one-row (M = 1) matmul
 * that the device-level fault and wait tests submit: A (k) and W (n, k) filled with two
 * co-prime patterns covering the int8 range, ref[j] = sum_k A[k] * W[j][k]. */
#ifndef TEST_REF_GEMV_H
#define TEST_REF_GEMV_H

#include <stdint.h>

static inline void ref_gemv_fill(int8_t *a, int8_t *w, int32_t *ref, int k, int n)
{
    for (int i = 0; i < k; i++)
        a[i] = (int8_t)((i * 37) % 255 - 127);
    for (int i = 0; i < n * k; i++)
        w[i] = (int8_t)((i * 11 + 3) % 251 - 125);
    for (int j = 0; j < n; j++) {
        int32_t acc = 0;
        for (int i = 0; i < k; i++)
            acc += a[i] * w[j * k + i];
        ref[j] = acc;
    }
}

#endif
