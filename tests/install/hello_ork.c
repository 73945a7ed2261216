/* hello_ork.c -- a program built against the installed libork with pkg-config only
 * (scripts/test-install): open the simulator, run one int8 matmul on it, compare with the
 * plain C product, and probe the backends. Uses the public headers and nothing else. */
#include <ork/error.h>
#include <ork/npu.h>

#include <stdint.h>
#include <stdio.h>

#define M 2     /* rows of A */
#define K 64    /* inner dimension (a multiple of 32, the NPU's K unit) */
#define N 32    /* columns of C */

int main(void)
{
    struct ork_npu_opts o = { .struct_size = sizeof o, .device = "sim" };
    struct ork_npu *npu;
    int ret = ork_npu_open(&o, &npu);
    if (ret < 0) {
        fprintf(stderr, "hello_ork: open sim: %s\n", ork_error_describe(ret));
        return 1;
    }
    int8_t a[M * K], w[N * K];
    int32_t c[M * N];
    for (int i = 0; i < M * K; i++)
        a[i] = (int8_t)(i % 7 - 3);
    for (int i = 0; i < N * K; i++)
        w[i] = (int8_t)(i % 5 - 2);
    struct ork_npu_weights_desc wd = { .struct_size = sizeof wd, .dtype = ORK_NPU_I8, .k = K,
                                       .n = N, .w = w, .max_m = M };
    struct ork_npu_matmul_desc md = { .struct_size = sizeof md, .m = M, .cores = 1 };
    struct ork_npu_weights *wt = NULL;
    struct ork_npu_matmul *mm = NULL;
    ret = ork_npu_weights_create(npu, &wd, &wt);
    if (ret == 0)
        ret = ork_npu_matmul_create(wt, &md, &mm);
    if (ret == 0)
        ret = ork_npu_matmul_run_i8(mm, a, M, c);
    ork_npu_matmul_destroy(mm);
    ork_npu_weights_destroy(wt);
    int bad = 0;
    for (int i = 0; ret == 0 && i < M; i++)
        for (int j = 0; j < N; j++) {
            int32_t ref = 0;
            for (int k = 0; k < K; k++)
                ref += a[i * K + k] * w[j * K + k];
            bad += c[i * N + j] != ref;
        }
    struct ork_npu_probe_info info;
    int pr = ork_npu_probe("sim", NULL, &info);
    printf("hello_ork: backend %s, matmul %s, probe sim: %s, %u cores\n", ork_npu_backend(npu),
           ret < 0 ? ork_error_describe(ret) : bad ? "WRONG" : "exact",
           pr < 0 ? "error" : info.status == 0 ? "ok" : info.message, info.n_cores);
    ork_npu_close(npu);
    return ret < 0 || bad || pr < 0 || info.status != 0;
}
