/* dispatch.c -- which instruction-set path the CPU kernels take, and its dispatch table: the
 * path detected once per process from CPUID/XGETBV (x86-64) or the auxiliary vector (AArch64),
 * overridable for tests and benchmarks through ork_kernels_set_path() (ORK_DEBUG=scalar forces
 * the scalar references); the table of every path (struct ork__kern, kern_priv.h) built once
 * from the fill functions of its kernel files. Not here: the kernels themselves. */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <ork/debug.h>
#include <ork/error.h>
#include <ork-kernels/kernels.h>

#include "kern_priv.h"

#if defined(ORK_KERN_X86)
#include <cpuid.h>
#define CPU_X86 1
#elif defined(ORK_KERN_ARM)
#include <sys/auxv.h>
#define CPU_ARM64 1
#endif

static const char *const kisa_names[KISA_COUNT] = {
    [KISA_SCALAR] = "scalar", [KISA_AVX2] = "avx2", [KISA_AVXVNNI] = "avxvnni",
    [KISA_AVX512VNNI] = "avx512vnni", [KISA_NEON] = "neon", [KISA_NEON_DOT] = "neon-dotprod",
    [KISA_NEON_I8MM] = "neon-i8mm",
};

static bool g_avail[KISA_COUNT];
static struct ork__kern g_kern[KISA_COUNT];
static enum kisa g_best;
static enum kisa g_cur;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static char g_caps[64];         /* the detected capabilities' names (ork_kernels_cpu_caps) */

#ifdef CPU_X86
/* CPUID bits (Intel SDM vol. 2A, CPUID; AMD APM vol. 3 agrees for these). */
#define L1_ECX_FMA (1u << 12)
#define L1_ECX_OSXSAVE (1u << 27)
#define L1_ECX_F16C (1u << 29)
#define L7_EBX_AVX2 (1u << 5)
#define L7_EBX_AVX512F (1u << 16)
#define L7_EBX_AVX512BW (1u << 30)
#define L7_EBX_AVX512VL (1u << 31)
#define L7_ECX_AVX512VNNI (1u << 11)
#define L7S1_EAX_AVXVNNI (1u << 4)
/* XCR0 state the OS must enable (Intel SDM vol. 1, 13.3): SSE | AVX for 256-bit registers,
 * plus opmask | ZMM_Hi256 | Hi16_ZMM for AVX-512. */
#define XCR0_AVX 0x6u
#define XCR0_AVX512 0xe6u

static uint64_t xgetbv0(void)
{
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

static void detect(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return;
    unsigned l1c = c;
    if (!(l1c & L1_ECX_OSXSAVE))
        return;
    uint64_t xcr0 = xgetbv0();
    if ((xcr0 & XCR0_AVX) != XCR0_AVX)
        return;
    unsigned l7b = 0, l7c = 0, l7s1a = 0;
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
        l7b = b;
        l7c = c;
        unsigned max_sub = a;
        if (max_sub >= 1 && __get_cpuid_count(7, 1, &a, &b, &c, &d))
            l7s1a = a;
    }
    bool avx2 = (l7b & L7_EBX_AVX2) && (l1c & L1_ECX_FMA) && (l1c & L1_ECX_F16C);
    if (!avx2)
        return;
    g_avail[KISA_AVX2] = true;
    g_avail[KISA_AVXVNNI] = (l7s1a & L7S1_EAX_AVXVNNI) != 0;
    g_avail[KISA_AVX512VNNI] = (xcr0 & XCR0_AVX512) == XCR0_AVX512 && (l7b & L7_EBX_AVX512F) &&
                               (l7b & L7_EBX_AVX512BW) && (l7b & L7_EBX_AVX512VL) &&
                               (l7c & L7_ECX_AVX512VNNI);
    snprintf(g_caps, sizeof g_caps, "avx2%s%s", g_avail[KISA_AVXVNNI] ? " avxvnni" : "",
             g_avail[KISA_AVX512VNNI] ? " avx512vnni" : "");
}
#elif defined(CPU_ARM64)
/* The AT_HWCAP / AT_HWCAP2 words decoded and mapped to paths by arm/hwcap.c. */
static void detect(void)
{
    const unsigned caps = ork__arm_caps(getauxval(AT_HWCAP), getauxval(AT_HWCAP2));
    for (int k = KISA_NEON; k < KISA_COUNT; k++)
        g_avail[k] = ork__arm_path_ok((enum kisa)k, caps);
    ork__arm_caps_str(caps, g_caps, sizeof g_caps);
}
#else
static void detect(void)
{
}
#endif

/* The files whose fill functions make up each path's table, in order (later ones override). */
typedef void (*fill_fn)(struct ork__kern *t);
#define FILLS_MAX 24
#define FILL_SCALAR ork__fill_dot_scalar, ork__fill_qdot_scalar, ork__fill_quant_act_scalar, \
                    ork__fill_ops_scalar, ork__fill_read_sum_scalar
#ifdef ORK_KERN_X86
#define FILL_AVX2 ork__fill_dot_avx2, ork__fill_kv_rows_avx2, ork__fill_qdot_avx2,        \
                  ork__fill_quant_act_avx2, ork__fill_gemm_q8_avx2,                     \
                  ork__fill_rows16_q8_0_q4_0_avx2, ork__fill_rows16_q4_k_avx2,          \
                  ork__fill_ops_avx2, ork__fill_read_sum_avx2
#endif
static const fill_fn path_fills[KISA_COUNT][FILLS_MAX] = {
    [KISA_SCALAR] = { FILL_SCALAR },
#ifdef ORK_KERN_X86
    [KISA_AVX2] = { FILL_SCALAR, FILL_AVX2 },
    [KISA_AVXVNNI] = { FILL_SCALAR, FILL_AVX2, ork__fill_qdot_avxvnni, ork__fill_gemm_q8_avxvnni },
    [KISA_AVX512VNNI] = { FILL_SCALAR, FILL_AVX2, ork__fill_kv_rows_avx512,
                          ork__fill_tile_f16_avx512, ork__fill_qdot_avx512,
                          ork__fill_quant_act_avx512, ork__fill_gemm_q8_avx512,
                          ork__fill_rows16_q8_0_q4_0_avx512, ork__fill_rows16_q4_k_avx512,
                          ork__fill_read_sum_avx512 },
#endif
#ifdef ORK_KERN_ARM
    [KISA_NEON] = { FILL_SCALAR, ork__fill_dot_neon, ork__fill_kv_rows_neon, ork__fill_qdot_neon,
                    ork__fill_quant_act_neon, ork__fill_ops_neon, ork__fill_read_sum_neon },
    [KISA_NEON_DOT] = { FILL_SCALAR, ork__fill_dot_neon, ork__fill_kv_rows_neon,
                        ork__fill_qdot_neon,
                        ork__fill_qdot_neon_dot, ork__fill_quant_act_neon,
                        ork__fill_rows16_q8_0_q4_0_neon_dot, ork__fill_rows16_q4_k_neon_dot,
                        ork__fill_rows16_q6_k_neon_dot,
                        ork__fill_ops_neon, ork__fill_read_sum_neon },
    /* the neon-dotprod table (path_base) with the smmla tiles over it */
    [KISA_NEON_I8MM] = { ork__fill_rows16_q8_0_q4_0_neon_i8mm },
#endif
};
/* A path whose table starts as a copy of another's (built before it: a lower enum value),
 * path_fills then overriding; 0 (KISA_SCALAR): from empty. */
static const enum kisa path_base[KISA_COUNT] = {
    [KISA_SCALAR] = KISA_SCALAR,
#ifdef ORK_KERN_ARM
    [KISA_NEON_I8MM] = KISA_NEON_DOT,
#endif
};

/* ORK_KFEAT_* of each path (the instruction sets its kernels use). */
static const unsigned path_features[KISA_COUNT] = {
    [KISA_AVX2] = ORK_KFEAT_AVX2,
    [KISA_AVXVNNI] = ORK_KFEAT_AVX2 | ORK_KFEAT_AVXVNNI,
    [KISA_AVX512VNNI] = ORK_KFEAT_AVX2 | ORK_KFEAT_AVX512VNNI,
    [KISA_NEON] = ORK_KFEAT_NEON,
    [KISA_NEON_DOT] = ORK_KFEAT_NEON | ORK_KFEAT_DOTPROD,
    [KISA_NEON_I8MM] = ORK_KFEAT_NEON | ORK_KFEAT_DOTPROD | ORK_KFEAT_I8MM,
};

static void build(enum kisa k, struct ork__kern *t)
{
    if (path_base[k] != KISA_SCALAR)
        *t = g_kern[path_base[k]];
    else
        memset(t, 0, sizeof *t);
    t->isa = k;
    t->features = path_features[k];
    for (int i = 0; i < FILLS_MAX && path_fills[k][i]; i++)
        path_fills[k][i](t);
}

static void init(void)
{
    g_avail[KISA_SCALAR] = true;
    detect();
    for (int k = 0; k < KISA_COUNT; k++)
        build((enum kisa)k, &g_kern[k]);
    /* the best: the highest available level (the enum runs from the most portable up) */
    g_best = KISA_SCALAR;
    for (int k = 0; k < KISA_COUNT; k++)
        if (g_avail[k])
            g_best = (enum kisa)k;
    g_cur = ork_debug(ORK_DBG_SCALAR) ? KISA_SCALAR : g_best;
}

enum kisa ork__kisa(void)
{
    pthread_once(&g_once, init);
    return g_cur;
}

const struct ork__kern *ork__kern(enum kisa k)
{
    pthread_once(&g_once, init);
    return &g_kern[k >= 0 && k < KISA_COUNT ? k : KISA_SCALAR];
}

bool ork__kisa_available(enum kisa k)
{
    pthread_once(&g_once, init);
    return k >= 0 && k < KISA_COUNT && g_avail[k];
}

const char *ork__kisa_name(enum kisa k)
{
    return k >= 0 && k < KISA_COUNT ? kisa_names[k] : "unknown";
}

const char *ork_kernels_path(void)
{
    return ork__kisa_name(ork__kisa());
}

unsigned ork_kernels_path_features(void)
{
    return ork__kcur()->features;
}

uint64_t ork_kernels_read_sum(const void *ptr, size_t bytes)
{
    return ork__read_sum(ork__kcur(), ptr, bytes);
}

const char *ork_kernels_read_insn(void)
{
    return ork__kcur()->read_insn;
}

int ork_kernels_set_path(const char *name)
{
    pthread_once(&g_once, init);
    if (!name) {
        g_cur = g_best;
        return 0;
    }
    for (int k = 0; k < KISA_COUNT; k++)
        if (!strcmp(name, kisa_names[k])) {
            if (!g_avail[k])
                return ork_errorf(ORK_EUNSUPPORTED, "kernel path '%s' is not available on this CPU",
                                  name);
            g_cur = (enum kisa)k;
            return 0;
        }
    return ork_errorf(ORK_EINVAL, "unknown kernel path '%s'", name);
}

const char *ork_kernels_cpu_caps(void)
{
    pthread_once(&g_once, init);
    return g_caps;
}

const char *ork_kernels_path_name(int i)
{
    return i >= 0 && i < KISA_COUNT ? kisa_names[i] : NULL;
}
