/* test_exec.c -- the simulator's executor computes matmuls per spec §3.4, §4 and §6:
 * int8 bit-exact against a naive CPU reference on several shapes (int32 output, row stride
 * s > N), fp16 against a double-precision reference within a stated tolerance, the requant,
 * int16 and fp16 output conversions, the §15 layout/requant/decode/N-limit vectors, the
 * timing-only mode and the speed of a decode-sized matmul. Programs are hand-built from the
 * §3.1 table (test_exec_util.h). */
#include <math.h>
#include <stdio.h>
#include <time.h>

#include <ork/error.h>

#include "ork_test.h"
#include "test_exec_util.h"

#define A_IOVA 0x10000000u
#define B_IOVA 0x20000000u
#define C_IOVA 0x40000000u
#define PROG_IOVA 0x00100000u

struct run {
    struct tmem mem;
    uint8_t *a, *b, *c;
    uint64_t c_size;
    struct ork_sim_stats st;
    struct ork_sim_decoded dec;
    int ret;
};

static struct ork_sim_regfile rf; /* 66 KiB: static, not on the stack */

/* Allocate A/B/C for `p` (plus `c_pad` sentinel bytes of C) without running. */
static void run_alloc(struct run *r, const struct tprog *p)
{
    memset(r, 0, sizeof(*r));
    uint32_t s = p->s ? p->s : p->n;
    uint32_t pitch = p->line_stride ? p->line_stride * 16 : p->k * tp_esz(p->mode);
    r->a = tmem_add(&r->mem, p->a, (uint64_t)(p->m - 1) * pitch + (uint64_t)p->k * tp_esz(p->mode));
    r->b = tmem_add(&r->mem, p->b, (uint64_t)p->k * p->n * tp_esz(p->mode));
    r->c_size = (uint64_t)p->m * s * tp_osz(p->mode);
    r->c = tmem_add(&r->mem, p->c, r->c_size);
    memset(r->c, 0xa5, r->c_size); /* sentinel: columns not written stay 0xa5 */
}

static int run_exec(struct run *r, const struct tprog *p, bool timing_only)
{
    struct tbuilt b;
    tp_build(p, &b);
    struct ork_sim_task_in t = { .index = 0, .regcmd_addr = PROG_IOVA, .regcfg_amount = b.amount,
                                 .enable_mask = ORK_ENABLE_MATMUL };
    struct ork_sim_mem mem = tmem_iface(&r->mem);
    r->ret = ork__sim_task_run(b.e, b.n, &t, &mem, timing_only, &rf, &r->dec, &r->st);
    if (r->ret < 0)
        fprintf(stderr, "  exec error %d: %s\n", r->ret, ork_error_message());
    return r->ret;
}

static struct tprog base_prog(enum tmode md, uint32_t m, uint32_t k, uint32_t n)
{
    struct tprog p = { .mode = md, .m = m, .k = k, .n = n, .a = A_IOVA, .b = B_IOVA, .c = C_IOVA };
    return p;
}

/* ---- int8 ------------------------------------------------------------------------------------ */

/* Fill A [M][K] and logical B [K][N] with random int8, pack B per §4.3, run, and compare every
 * element of C with a naive int32 reference. Returns the number of mismatches. */
static int check_int8_shape(uint32_t m, uint32_t k, uint32_t n, uint32_t s, uint32_t cbuf,
                            uint64_t seed)
{
    struct tprog p = base_prog(TM_I8_I32, m, k, n);
    p.s = s;
    p.cbuf = cbuf;
    struct run r;
    run_alloc(&r, &p);
    int8_t *bl = malloc((size_t)k * n);
    for (size_t i = 0; i < (size_t)m * k; i++)
        r.a[i] = (uint8_t)trand(&seed);
    for (uint32_t kk = 0; kk < k; kk++)
        for (uint32_t nn = 0; nn < n; nn++) {
            int8_t v = (int8_t)trand(&seed);
            bl[(size_t)kk * n + nn] = v;
            r.b[tl_i8_offset(kk, nn, k)] = (uint8_t)v;
        }
    int bad = 0;
    if (run_exec(&r, &p, false) == 0) {
        uint32_t st = s ? s : n;
        for (uint32_t mm = 0; mm < m; mm++) {
            for (uint32_t nn = 0; nn < n; nn++) {
                int32_t want = 0;
                for (uint32_t kk = 0; kk < k; kk++)
                    want += (int32_t)(int8_t)r.a[(size_t)mm * k + kk] * bl[(size_t)kk * n + nn];
                int32_t got;
                memcpy(&got, r.c + ((size_t)mm * st + nn) * 4, 4);
                if (got != want && bad++ < 5)
                    fprintf(stderr, "  int8 %ux%ux%u: C[%u][%u] = %d, want %d\n", m, k, n, mm, nn,
                            got, want);
            }
            for (uint32_t nn = n; nn < st; nn++) /* stride padding untouched */
                for (int byte = 0; byte < 4; byte++)
                    if (r.c[((size_t)mm * st + nn) * 4 + byte] != 0xa5 && bad++ < 5)
                        fprintf(stderr, "  int8: C[%u][%u] beyond N was written\n", mm, nn);
        }
        CHECK_EQ_INT(r.st.macs, (uint64_t)m * k * n);
        CHECK_EQ_INT(r.st.b_bytes, (uint64_t)k * n);
        CHECK_EQ_INT(r.st.c_bytes, (uint64_t)m * n * 4);
    } else {
        bad = -1;
    }
    free(bl);
    tmem_free(&r.mem);
    return bad;
}

static void test_int8_bit_exact_shapes(void)
{
    CHECK_EQ_INT(check_int8_shape(4, 32, 32, 0, 0, 1), 0);      /* the §3.1 template shape */
    CHECK_EQ_INT(check_int8_shape(1, 32, 32, 0, 0, 2), 0);
    CHECK_EQ_INT(check_int8_shape(3, 64, 64, 0, 0, 3), 0);      /* doubly tiled */
    CHECK_EQ_INT(check_int8_shape(7, 96, 96, 0, 0, 4), 0);      /* K, N not powers of two */
    CHECK_EQ_INT(check_int8_shape(64, 512, 96, 0, 0, 5), 0);    /* schedule 0xb1 */
    CHECK_EQ_INT(check_int8_shape(100, 2048, 64, 0, 0, 6), 0);  /* schedule 0x48 (§15.3) */
    CHECK_EQ_INT(check_int8_shape(130, 512, 32, 0, 0, 7), 0);   /* three 64-row groups */
    CHECK_EQ_INT(check_int8_shape(1, 4096, 64, 0, 0, 8), 0);    /* decode */
    CHECK_EQ_INT(check_int8_shape(5, 64, 32, 96, 0, 9), 0);     /* row stride s > N (§4.2) */
}

/* Extreme operands: K = 8192 of (-128)*(-128) = 2^27 per row, no overflow (§3.4). */
static void test_int8_extremes(void)
{
    struct tprog p = base_prog(TM_I8_I32, 1, 8192, 32);
    struct run r;
    run_alloc(&r, &p);
    memset(r.a, 0x80, 8192);
    memset(r.b, 0x80, (size_t)8192 * 32);
    r.b[tl_i8_offset(5, 3, 8192)] = 0x7f; /* column 3: one product -128*127 */
    REQUIRE(run_exec(&r, &p, false) == 0);
    int32_t c0, c3;
    memcpy(&c0, r.c, 4);
    memcpy(&c3, r.c + 3 * 4, 4);
    CHECK_EQ_INT(c0, 8192 * 16384);
    CHECK_EQ_INT(c3, 8191 * 16384 - 128 * 127);
    tmem_free(&r.mem);
}

/* §15.7: int8 K=64, N=64: B[33][35] lives at byte 3169. One-hot A at k=33 selects row 33 of B. */
static void test_layout_vector_int8(void)
{
    CHECK_EQ_INT(tl_i8_offset(33, 35, 64), 3169);
    struct tprog p = base_prog(TM_I8_I32, 1, 64, 64);
    struct run r;
    run_alloc(&r, &p);
    r.a[33] = 1;
    r.b[3169] = 7;
    REQUIRE(run_exec(&r, &p, false) == 0);
    for (uint32_t n = 0; n < 64; n++) {
        int32_t v;
        memcpy(&v, r.c + n * 4, 4);
        CHECK_EQ_INT(v, n == 35 ? 7 : 0);
    }
    tmem_free(&r.mem);
}

/* A non-dense feature pitch (§4.1, [INF]) is honoured: rows are read 16*LINE_STRIDE apart. */
static void test_int8_feature_pitch(void)
{
    struct tprog p = base_prog(TM_I8_I32, 3, 32, 32);
    p.line_stride = 4; /* 64-byte rows for K = 32 */
    struct run r;
    run_alloc(&r, &p);
    for (int m = 0; m < 3; m++)
        r.a[m * 64 + 1] = (uint8_t)(m + 2);
    r.b[tl_i8_offset(1, 0, 32)] = 3;
    REQUIRE(run_exec(&r, &p, false) == 0);
    for (int m = 0; m < 3; m++) {
        int32_t v;
        memcpy(&v, r.c + (size_t)m * 32 * 4, 4);
        CHECK_EQ_INT(v, 3 * (m + 2));
    }
    CHECK(r.st.warnings & (1ull << ORK_SIM_HAZARD_NONDENSE_PITCH));
    tmem_free(&r.mem);
}

/* ---- fp16 ------------------------------------------------------------------------------------ */

static double h2d(uint16_t h)
{
    int sign = h >> 15, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    double v = exp ? ldexp(1024 + mant, exp - 25) : ldexp(mant, -24);
    return sign ? -v : v;
}

/* fp16 -> fp32: within 1e-5 relative of the sum magnitude (fp32 accumulation of exact
 * products; the device order is [UNK], §3.4). */
static int check_fp16_shape(uint32_t m, uint32_t k, uint32_t n, uint64_t seed)
{
    struct tprog p = base_prog(TM_F16_F32, m, k, n);
    struct run r;
    run_alloc(&r, &p);
    uint16_t *bl = malloc((size_t)k * n * 2);
    for (size_t i = 0; i < (size_t)m * k; i++) {
        uint16_t h = th_from_small((int)(trand(&seed) % 255) - 127);
        memcpy(r.a + 2 * i, &h, 2);
    }
    for (uint32_t kk = 0; kk < k; kk++)
        for (uint32_t nn = 0; nn < n; nn++) {
            uint16_t h = th_from_small((int)(trand(&seed) % 255) - 127);
            bl[(size_t)kk * n + nn] = h;
            memcpy(r.b + 2 * tl_f16_element(kk, nn, k), &h, 2);
        }
    int bad = 0;
    if (run_exec(&r, &p, false) == 0) {
        for (uint32_t mm = 0; mm < m; mm++)
            for (uint32_t nn = 0; nn < n; nn++) {
                double want = 0, mag = 0;
                for (uint32_t kk = 0; kk < k; kk++) {
                    uint16_t ah;
                    memcpy(&ah, r.a + 2 * ((size_t)mm * k + kk), 2);
                    double prod = h2d(ah) * h2d(bl[(size_t)kk * n + nn]);
                    want += prod;
                    mag += fabs(prod);
                }
                float got;
                memcpy(&got, r.c + ((size_t)mm * n + nn) * 4, 4);
                if (fabs(got - want) > 1e-5 * (mag + 1e-3) && bad++ < 5)
                    fprintf(stderr, "  fp16 %ux%ux%u: C[%u][%u] = %.9g, want %.9g\n", m, k, n, mm,
                            nn, got, want);
            }
    } else {
        bad = -1;
    }
    free(bl);
    tmem_free(&r.mem);
    return bad;
}

static void test_fp16_shapes(void)
{
    CHECK_EQ_INT(check_fp16_shape(4, 32, 16, 11), 0);   /* the §3.1 fp16 template shape */
    CHECK_EQ_INT(check_fp16_shape(3, 64, 32, 12), 0);   /* doubly tiled (§4.4 note) */
    CHECK_EQ_INT(check_fp16_shape(17, 256, 48, 13), 0);
    CHECK_EQ_INT(check_fp16_shape(1, 2048, 16, 14), 0); /* decode (§15.4) */
}

/* §15.7: fp16 K=64, N=32: B[33][17] is element 1569 (byte 3138). */
static void test_layout_vector_fp16(void)
{
    CHECK_EQ_INT(tl_f16_element(33, 17, 64), 1569);
    struct tprog p = base_prog(TM_F16_F32, 1, 64, 32);
    struct run r;
    run_alloc(&r, &p);
    uint16_t one = 0x3c00, three = 0x4200; /* 1.0, 3.0 */
    memcpy(r.a + 2 * 33, &one, 2);
    memcpy(r.b + 3138, &three, 2);
    REQUIRE(run_exec(&r, &p, false) == 0);
    for (uint32_t n = 0; n < 32; n++) {
        float v;
        memcpy(&v, r.c + n * 4, 4);
        CHECK(v == (n == 17 ? 3.0f : 0.0f));
    }
    tmem_free(&r.mem);
}

/* fp16 -> fp16 output (§6.4): round-to-nearest-even of the fp32 sum; overflow to inf. */
static void test_fp16_out(void)
{
    struct tprog p = base_prog(TM_F16_F16, 2, 32, 16);
    struct run r;
    run_alloc(&r, &p);
    uint16_t h;
    /* row 0: 1 + 2^-11 (a tie between 1 and 1+2^-10: rounds to even = 1.0) in column 0,
     *        1 + 3*2^-11 (tie: rounds to 1 + 2^-9... i.e. up to even mantissa 2) in column 1 */
    h = 0x3c00; memcpy(r.a + 0, &h, 2);                /* A[0][0] = 1 */
    h = 0x1000; memcpy(r.a + 2, &h, 2);                /* A[0][1] = 2^-11 */
    h = 0x3c00; memcpy(r.b + 2 * tl_f16_element(0, 0, 32), &h, 2);
    memcpy(r.b + 2 * tl_f16_element(1, 0, 32), &h, 2); /* col 0: 1 + 2^-11 */
    memcpy(r.b + 2 * tl_f16_element(0, 1, 32), &h, 2);
    h = 0x4200; memcpy(r.b + 2 * tl_f16_element(1, 1, 32), &h, 2); /* col 1: 1 + 3*2^-11 */
    /* row 1: 60000 * 2 = 120000 -> +inf in column 2 */
    h = 0x7b53; memcpy(r.a + 64 + 0, &h, 2);           /* A[1][0] = 60000 */
    h = 0x4000; memcpy(r.b + 2 * tl_f16_element(0, 2, 32), &h, 2); /* 2.0 */
    REQUIRE(run_exec(&r, &p, false) == 0);
    uint16_t c00, c01, c12, c13;
    memcpy(&c00, r.c + 0, 2);
    memcpy(&c01, r.c + 2, 2);
    memcpy(&c12, r.c + (16 + 2) * 2, 2);
    memcpy(&c13, r.c + (16 + 3) * 2, 2);
    CHECK_EQ_INT(c00, 0x3c00);
    CHECK_EQ_INT(c01, 0x3c02);
    CHECK_EQ_INT(c12, 0x7c00);
    CHECK_EQ_INT(c13, 0x0000);
    tmem_free(&r.mem);
}

/* ---- requant and int16 (§6.3, §15.6) ------------------------------------------------------------ */

/* Run an int8 -> int8/int16 program with K = 512 whose accumulators are acc[n] (one product
 * A[0][0] * B[0][n] with A[0][0] = 1, plus A[0][1]*B[1][n] for the larger magnitudes). */
static void requant_run(enum tmode md, uint32_t mult, uint32_t shift, int32_t off,
                        const int32_t *acc, int nacc, int32_t *out)
{
    struct tprog p = base_prog(md, 1, 512, 32);
    p.mult = mult;
    p.shift = shift;
    p.offset = off;
    struct run r;
    run_alloc(&r, &p);
    r.a[0] = 1;
    r.a[1] = 127;
    for (int n = 0; n < nacc; n++) {
        int32_t hi = acc[n] / 127, lo = acc[n] - hi * 127; /* acc = hi*127 + lo, |lo| < 127 */
        r.b[tl_i8_offset(0, (uint32_t)n, 512)] = (uint8_t)(int8_t)lo;
        r.b[tl_i8_offset(1, (uint32_t)n, 512)] = (uint8_t)(int8_t)hi;
    }
    if (run_exec(&r, &p, false) == 0) {
        for (int n = 0; n < nacc; n++) {
            if (md == TM_I8_I8)
                out[n] = (int8_t)r.c[n];
            else {
                int16_t v;
                memcpy(&v, r.c + 2 * n, 2);
                out[n] = v;
            }
        }
    }
    tmem_free(&r.mem);
}

static void test_requant_vectors(void)
{
    int32_t out[8] = { 0 };
    /* §15.6 rounding: 3/2 = 1.5 -> 2, 5/2 = 2.5 -> 2 (half to even); negatives mirror. */
    const int32_t acc1[] = { 3, 5, -3, -5, 7, 1, -1, 0 };
    const int32_t want1[] = { 2, 2, -2, -2, 4, 0, 0, 0 };
    requant_run(TM_I8_I8, 1, 1, 0, acc1, 8, out);
    for (int i = 0; i < 8; i++)
        CHECK_EQ_INT(out[i], want1[i]);
    /* §15.6 identity: mult 0x4000, shift 14, clamped to [-128, 127]. */
    const int32_t acc2[] = { 100, -100, 127, -128, 128, -129, 5000, -5000 };
    const int32_t want2[] = { 100, -100, 127, -128, 127, -128, 127, -128 };
    requant_run(TM_I8_I8, 0x4000, 14, 0, acc2, 8, out);
    for (int i = 0; i < 8; i++)
        CHECK_EQ_INT(out[i], want2[i]);
    /* Offset added after rounding, before clamping (§6.3 [INF]). */
    const int32_t acc3[] = { 10, 125 };
    requant_run(TM_I8_I8, 1, 0, 5, acc3, 2, out);
    CHECK_EQ_INT(out[0], 15);
    CHECK_EQ_INT(out[1], 127);
}

static void test_int16_output(void)
{
    int32_t out[4] = { 0 };
    const int32_t acc[] = { 16000, -16001, 9, 15 };
    /* mult 3, shift 1: 24000, -24001.5 -> -24002 (even), 13.5 -> 14, 22.5 -> 22 */
    requant_run(TM_I8_I16, 3, 1, 0, acc, 4, out);
    CHECK_EQ_INT(out[0], 24000);
    CHECK_EQ_INT(out[1], -24002);
    CHECK_EQ_INT(out[2], 14);
    CHECK_EQ_INT(out[3], 22);
    const int32_t big[] = { 16000, -16000 };
    requant_run(TM_I8_I16, 4, 0, 0, big, 2, out); /* 64000 -> clamp 32767 */
    CHECK_EQ_INT(out[0], 32767);
    CHECK_EQ_INT(out[1], -32768);
}

/* ---- §15.4 decode, §15.5 N limit, timing-only, speed ------------------------------------------- */

static void test_decode_vectors(void)
{
    static const uint32_t ks[] = { 2048, 4096, 8192 };
    for (int i = 0; i < 3; i++) {
        for (int f = 0; f < 2; f++) {
            struct tprog p = base_prog(f ? TM_F16_F32 : TM_I8_I32, 1, ks[i], 32);
            struct run r;
            run_alloc(&r, &p);
            CHECK_EQ_INT(run_exec(&r, &p, false), 0);
            CHECK_EQ_INT(r.st.cbuf_data_banks, 1); /* 0x1040 = 0xb1 */
            tmem_free(&r.mem);
        }
    }
}

static void test_n_limit_ok(void)
{
    struct tprog p = base_prog(TM_I8_I32, 1, 32, 8192);
    struct run r;
    run_alloc(&r, &p);
    CHECK_EQ_INT(run_exec(&r, &p, true), 0);
    tmem_free(&r.mem);
}

static void test_timing_only(void)
{
    struct tprog p = base_prog(TM_I8_I32, 4, 64, 64);
    struct run r;
    run_alloc(&r, &p);
    memset(r.a, 1, 4 * 64);
    memset(r.b, 1, 64 * 64);
    REQUIRE(run_exec(&r, &p, true) == 0);
    for (uint64_t i = 0; i < r.c_size; i++)
        if (r.c[i] != 0xa5) {
            CHECK(!"timing-only wrote C");
            break;
        }
    CHECK_EQ_INT(r.st.macs, 4 * 64 * 64);
    CHECK_EQ_INT(r.st.a_bytes, 4 * 64);
    CHECK_EQ_INT(r.st.c_bytes, 4 * 64 * 4);
    CHECK_EQ_INT(r.st.n_entries, 112);
    CHECK_EQ_INT(r.st.in_prec, ORK_SIM_PREC_INT8);
    CHECK_EQ_INT(r.st.out_prec, ORK_SIM_PREC_INT32);
    CHECK_EQ_INT(r.dec.enable, ORK_ENABLE_MATMUL);
    CHECK_EQ_INT(r.dec.next_addr, 0);
    tmem_free(&r.mem);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* M=1, K=4096, N=8192 int8 (a decode projection): well under a second in a release build;
 * the bound here is loose so that sanitizer builds pass too. */
static void test_decode_speed(void)
{
    struct tprog p = base_prog(TM_I8_I32, 1, 4096, 8192);
    struct run r;
    run_alloc(&r, &p);
    uint64_t seed = 99;
    for (size_t i = 0; i < 4096; i++)
        r.a[i] = (uint8_t)trand(&seed);
    for (size_t i = 0; i < (size_t)4096 * 8192; i += 4096)
        r.b[i] = (uint8_t)trand(&seed);
    double t0 = now_s();
    REQUIRE(run_exec(&r, &p, false) == 0);
    double dt = now_s() - t0;
    printf("     int8 1x4096x8192: %.3f s\n", dt);
    CHECK(dt < 10.0);
    /* spot check one column against the reference */
    int32_t want = 0, got;
    for (uint32_t k = 0; k < 4096; k++)
        want += (int32_t)(int8_t)r.a[k] * (int8_t)r.b[tl_i8_offset(k, 4095, 4096)];
    memcpy(&got, r.c + 4095 * 4, 4);
    CHECK_EQ_INT(got, want);
    tmem_free(&r.mem);
}

/* §15.1: the stored words 0x00201024, 0x0201001f decode to CNA_DATA_SIZE1 = 0x001f0020; the
 * op-enable 0x00810000000d0008 and the marker 0x0041000000000000 end a program. */
static void test_encoding_vector(void)
{
    static const uint32_t words[] = {
        0x00201024u, 0x0201001fu,             /* (0x0201, 0x1024, 0x001f0020) */
        0, 0, 0, 0,                           /* trailer: null next address, null amount */
        0x00000000u, 0x00410000u,             /* marker */
        0x000d0008u, 0x00810000u,             /* op-enable 0x0d */
    };
    uint8_t bytes[sizeof words];
    for (size_t i = 0; i < sizeof words / 4; i++)
        for (int j = 0; j < 4; j++)
            bytes[i * 4 + j] = (uint8_t)(words[i] >> (8 * j));
    struct ork_sim_task_in t = { .index = 0, .regcfg_amount = 1 };
    struct ork_sim_decoded d;
    REQUIRE(ork__sim_decode(bytes + 0, 5, &t, &rf, &d) == 0);
    CHECK_EQ_INT(ork__sim_reg(&rf, ORK_REG_CNA_DATA_SIZE1), 0x001f0020);
    CHECK_EQ_INT(d.enable, 0x0d);
    CHECK_EQ_INT(d.n_counted, 1);
    CHECK(d.warnings & (1ull << ORK_SIM_HAZARD_ODD_AMOUNT));
}

int main(void)
{
    RUN(test_encoding_vector);
    RUN(test_int8_bit_exact_shapes);
    RUN(test_int8_extremes);
    RUN(test_layout_vector_int8);
    RUN(test_int8_feature_pitch);
    RUN(test_fp16_shapes);
    RUN(test_layout_vector_fp16);
    RUN(test_fp16_out);
    RUN(test_requant_vectors);
    RUN(test_int16_output);
    RUN(test_decode_vectors);
    RUN(test_n_limit_ok);
    RUN(test_timing_only);
    RUN(test_decode_speed);
    return ork_test_done();
}
