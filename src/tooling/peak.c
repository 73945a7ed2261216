/* peak.c -- measured arithmetic peak of the CPU (ork-tooling/peak.h): independent chains of one
 * vector instruction on register operands only, timed on every pool thread at once, so the
 * result is what the execution units sustain with no memory traffic. The instruction set is the
 * one the kernels run (ork_kernels_path_features), so "% of peak" compares a kernel with its own
 * hardware.
 *
 * Not here: what the numbers are compared with (cmd_bench.c computes the prefill share). */
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <ork/error.h>
#include <ork-kernels/kernels.h>
#include <ork-kernels/pool.h>
#include <ork-tooling/peak.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define PK_X86 1
#include <immintrin.h>
#elif defined(__aarch64__) && defined(__ARM_NEON)
#define PK_NEON 1
#include <arm_neon.h>
#endif

/* Independent accumulators per loop: more than latency x issue width of every core we target
 * (FMA: 4 cycles x 2 pipes on Zen 4/5 and Skylake-SP, 4 x 2 on Cortex-A76), and few enough to
 * stay in registers (16 ymm / 32 zmm / 32 v-registers). */
#define PK_CHAINS 10
#define PK_CALIB_ITERS 4096     /* first timing run, scaled up to the requested duration */
#define PK_DEFAULT_MS 100
#define PK_TRIES 3              /* best of */

enum pk_kind { PK_F32, PK_INT8 };

/* One loop: runs `iters` x PK_CHAINS instructions, returns the operations it did. */
typedef double (*pk_loop)(int64_t iters);

static volatile int64_t g_sink;  /* keeps the loops' results live */

#ifdef PK_X86
__attribute__((target("avx2,fma"))) static double f32_ymm(int64_t iters)
{
    __m256 a[PK_CHAINS];
    for (int i = 0; i < PK_CHAINS; i++)
        a[i] = _mm256_set1_ps((float)i);
    const __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
    for (int64_t it = 0; it < iters; it++)
        for (int i = 0; i < PK_CHAINS; i++)
            a[i] = _mm256_fmadd_ps(a[i], m, c);
    float s = 0;
    for (int i = 0; i < PK_CHAINS; i++)
        s += _mm256_cvtss_f32(a[i]);
    g_sink += (int64_t)s;
    return (double)iters * PK_CHAINS * 8 * 2;
}

__attribute__((target("avx512f"))) static double f32_zmm(int64_t iters)
{
    __m512 a[PK_CHAINS];
    for (int i = 0; i < PK_CHAINS; i++)
        a[i] = _mm512_set1_ps((float)i);
    const __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
    for (int64_t it = 0; it < iters; it++)
        for (int i = 0; i < PK_CHAINS; i++)
            a[i] = _mm512_fmadd_ps(a[i], m, c);
    float s = 0;
    for (int i = 0; i < PK_CHAINS; i++)
        s += _mm512_reduce_add_ps(a[i]);
    g_sink += (int64_t)s;
    return (double)iters * PK_CHAINS * 16 * 2;
}

/* vpmaddubsw + vpmaddwd + vpaddd: 32 byte products per step. */
__attribute__((target("avx2"))) static double i8_ymm(int64_t iters)
{
    __m256i a[PK_CHAINS];
    for (int i = 0; i < PK_CHAINS; i++)
        a[i] = _mm256_set1_epi32(i);
    const __m256i x = _mm256_set1_epi8(3), y = _mm256_set1_epi8(-2), one = _mm256_set1_epi16(1);
    for (int64_t it = 0; it < iters; it++)
        for (int i = 0; i < PK_CHAINS; i++)
            a[i] = _mm256_add_epi32(a[i], _mm256_madd_epi16(_mm256_maddubs_epi16(x, y), one));
    int64_t s = 0;
    for (int i = 0; i < PK_CHAINS; i++)
        s += _mm256_extract_epi32(a[i], 0);
    g_sink += s;
    return (double)iters * PK_CHAINS * 32 * 2;
}

__attribute__((target("avx2,avxvnni"))) static double i8_vnni_ymm(int64_t iters)
{
    __m256i a[PK_CHAINS];
    for (int i = 0; i < PK_CHAINS; i++)
        a[i] = _mm256_set1_epi32(i);
    const __m256i x = _mm256_set1_epi8(3), y = _mm256_set1_epi8(-2);
    for (int64_t it = 0; it < iters; it++)
        for (int i = 0; i < PK_CHAINS; i++)
            a[i] = _mm256_dpbusd_avx_epi32(a[i], x, y);
    int64_t s = 0;
    for (int i = 0; i < PK_CHAINS; i++)
        s += _mm256_extract_epi32(a[i], 0);
    g_sink += s;
    return (double)iters * PK_CHAINS * 32 * 2;
}

__attribute__((target("avx512f,avx512vnni"))) static double i8_vnni_zmm(int64_t iters)
{
    __m512i a[PK_CHAINS];
    for (int i = 0; i < PK_CHAINS; i++)
        a[i] = _mm512_set1_epi32(i);
    const __m512i x = _mm512_set1_epi8(3), y = _mm512_set1_epi8(-2);
    for (int64_t it = 0; it < iters; it++)
        for (int i = 0; i < PK_CHAINS; i++)
            a[i] = _mm512_dpbusd_epi32(a[i], x, y);
    int64_t s = 0;
    for (int i = 0; i < PK_CHAINS; i++)
        s += _mm512_reduce_add_epi32(a[i]);
    g_sink += s;
    return (double)iters * PK_CHAINS * 64 * 2;
}
#endif

#ifdef PK_NEON
static double f32_neon(int64_t iters)
{
    float32x4_t a[PK_CHAINS];
    for (int i = 0; i < PK_CHAINS; i++)
        a[i] = vdupq_n_f32((float)i);
    const float32x4_t m = vdupq_n_f32(0.999999f), c = vdupq_n_f32(1e-7f);
    for (int64_t it = 0; it < iters; it++)
        for (int i = 0; i < PK_CHAINS; i++)
            a[i] = vfmaq_f32(c, a[i], m);
    float s = 0;
    for (int i = 0; i < PK_CHAINS; i++)
        s += vgetq_lane_f32(a[i], 0);
    g_sink += (int64_t)s;
    return (double)iters * PK_CHAINS * 4 * 2;
}

__attribute__((target("arch=armv8.2-a+dotprod"))) static double i8_sdot(int64_t iters)
{
    int32x4_t a[PK_CHAINS];
    for (int i = 0; i < PK_CHAINS; i++)
        a[i] = vdupq_n_s32(i);
    const int8x16_t x = vdupq_n_s8(3), y = vdupq_n_s8(-2);
    for (int64_t it = 0; it < iters; it++)
        for (int i = 0; i < PK_CHAINS; i++)
            a[i] = vdotq_s32(a[i], x, y);
    int64_t s = 0;
    for (int i = 0; i < PK_CHAINS; i++)
        s += vgetq_lane_s32(a[i], 0);
    g_sink += s;
    return (double)iters * PK_CHAINS * 16 * 2;
}
#endif

/* The loops for the kernels' path; NULL where the path has no such instruction. */
/* The loops of the kernels' path: its widest f32 FMA and int8 dot instructions. */
static void pick(unsigned feat, pk_loop *f32, const char **f32_insn, pk_loop *i8,
                 const char **i8_insn)
{
    *f32 = *i8 = NULL;
    *f32_insn = *i8_insn = "none";
#ifdef PK_X86
    if (feat & ORK_KFEAT_AVX512VNNI) {
        *f32 = f32_zmm, *f32_insn = "vfmadd231ps zmm";
        *i8 = i8_vnni_zmm, *i8_insn = "vpdpbusd zmm";
    } else if (feat & ORK_KFEAT_AVXVNNI) {
        *f32 = f32_ymm, *f32_insn = "vfmadd231ps ymm";
        *i8 = i8_vnni_ymm, *i8_insn = "vpdpbusd ymm";
    } else if (feat & ORK_KFEAT_AVX2) {
        *f32 = f32_ymm, *f32_insn = "vfmadd231ps ymm";
        *i8 = i8_ymm, *i8_insn = "vpmaddubsw+vpmaddwd ymm";
    }
#elif defined(PK_NEON)
    if (feat & ORK_KFEAT_NEON) {
        *f32 = f32_neon, *f32_insn = "fmla v.4s";
        if (feat & ORK_KFEAT_DOTPROD)
            *i8 = i8_sdot, *i8_insn = "sdot v.4s";
    }
#else
    (void)feat;
#endif
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct pk_job {
    pk_loop fn;
    int64_t iters;
};

static void pk_thread(void *ctx, int ith, int nth)
{
    (void)ith;
    (void)nth;
    const struct pk_job *j = ctx;
    j->fn(j->iters);
}

/* Operations per second of fn on all threads of pool, best of PK_TRIES. */
static double rate(struct ork_pool *pool, pk_loop fn, int ms)
{
    double t0 = now_s();
    double ops1 = fn(PK_CALIB_ITERS);
    double dt = now_s() - t0;
    double per_iter = dt > 0 ? dt / PK_CALIB_ITERS : 1e-9;
    struct pk_job j = { .fn = fn, .iters = (int64_t)((double)ms * 1e-3 / per_iter) };
    if (j.iters < PK_CALIB_ITERS)
        j.iters = PK_CALIB_ITERS;
    double ops_thread = ops1 / PK_CALIB_ITERS * (double)j.iters;
    int nth = ork_pool_threads(pool);
    double best = 0;
    for (int t = 0; t < PK_TRIES; t++) {
        double s = now_s();
        ork_pool_run(pool, pk_thread, &j);
        double e = now_s() - s;
        double r = e > 0 ? ops_thread * nth / e : 0;
        if (r > best)
            best = r;
    }
    return best;
}

int ork_cpu_peak_measure(struct ork_pool *pool, int ms_each, struct ork_cpu_peak *out)
{
    if (!out)
        return ork_errorf(ORK_EINVAL, "cpu peak: no result struct");
    memset(out, 0, sizeof(*out));
    int ms = ms_each > 0 ? ms_each : PK_DEFAULT_MS;
    pk_loop f32, i8;
    pick(ork_kernels_path_features(), &f32, &out->f32_insn, &i8, &out->int8_insn);
    out->threads = ork_pool_threads(pool);
    if (f32)
        out->f32_flops = rate(pool, f32, ms);
    if (i8)
        out->int8_ops = rate(pool, i8, ms);
    return 0;
}
