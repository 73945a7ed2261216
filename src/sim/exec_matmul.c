/* exec_matmul.c -- functional execution of one checked task for the simulator (spec §3.4 steps
 * 4-5): reads A (§4.1) and B (§4.3 int8, §4.4 fp16; int4 tasks go to exec_i4.c once mapped)
 * through the walker's memory callback,
 * multiplies (int8: exact int32 accumulation; fp16: fp32 accumulation in blocks of 32 along K),
 * applies the output stage (§6.2-§6.4) and writes C (§4.2), the last element last (§8.6).
 * Also ork__sim_task_run(), which chains decode, check and execute.
 *
 * Not here: hazard rules (hazard_check.c), entry decoding (exec_decode.c), the task/PC-chain
 * walk, memory ownership and timing (sim_*.c). The only global is a read-only fp16 -> fp32
 * table built once (pthread_once): safe to run one task per core concurrently. Temporary
 * buffers (A widened once, one B column, one tile of results) are allocated per call, never per
 * element. */
#include "sim_exec.h"

#include <pthread.h>
#include <string.h>

#include <ork/alloc.h>
#include <ork/error.h>
#include <ork/regs.h>

/* Weight tiling (spec §4.3, §4.4): K-tiles of 32; N-tiles of 32 (int8) or 16 (fp16); within a
 * tile, 32 consecutive elements run along K for one output column. */
#define KTILE 32u
#define NTILE_INT8 32u
#define NTILE_FP16 16u
#define INT8_TILE_BYTES (KTILE * NTILE_INT8)    /* 1024 */
#define FP16_TILE_ELEMS (KTILE * NTILE_FP16)    /* 512 */
#define FP16_LANES 8u                            /* partial sums per 32-block (any order is
                                                  * within the device's [UNK] order, §3.4) */
#define IOVA_SPACE (1ull << 32)                  /* 32-bit IOVAs (§1.2) */

/* Requant clamps (§6.3). */
#define INT8_MIN_ (-128)
#define INT8_MAX_ 127
#define INT16_MIN_ (-32768)
#define INT16_MAX_ 32767
/* Shifts at or beyond this leave only the sign of |acc*mult| < 2^48 (rounds to 0 or -0). */
#define SHIFT_SATURATE 62u

/* ---- fp16 <-> fp32 (IEEE 754 binary16; round-to-nearest-even, overflow to inf, §6.4 [INF]) --- */

#define F32_EXP_BIAS 127
#define F16_EXP_BIAS 15
#define F16_EXP_MASK 0x1fu
#define F16_MANT_BITS 10
#define F32_MANT_BITS 23
#define F16_SIGN 0x8000u
#define F16_INF 0x7c00u
#define F16_QNAN 0x7e00u
#define F32_INF_BITS 0x7f800000u
#define F32_HALF_OVERFLOW 0x477ff000u  /* 65520.0f: rounds to +inf in binary16 */
#define F32_HALF_MIN_NORMAL 0x38800000u /* 2^-14 */
#define F32_HALF_TINY_EXP 101u         /* below 2^-25 (exponent field < 102): rounds to zero */

static float bits_to_f32(uint32_t b)
{
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

static uint32_t f32_to_bits(float f)
{
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

static float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & F16_SIGN) << 16;
    uint32_t exp = (h >> F16_MANT_BITS) & F16_EXP_MASK;
    uint32_t mant = h & ((1u << F16_MANT_BITS) - 1);
    if (exp == 0) {
        /* zero or subnormal: mant * 2^-24, exact in fp32 */
        float v = (float)mant * bits_to_f32((uint32_t)(F32_EXP_BIAS - 24) << F32_MANT_BITS);
        return sign ? -v : v;
    }
    if (exp == F16_EXP_MASK)
        return bits_to_f32(sign | F32_INF_BITS | (mant << (F32_MANT_BITS - F16_MANT_BITS)));
    return bits_to_f32(sign | ((exp - F16_EXP_BIAS + F32_EXP_BIAS) << F32_MANT_BITS) |
                       (mant << (F32_MANT_BITS - F16_MANT_BITS)));
}

static uint16_t f32_to_f16(float f)
{
    uint32_t b = f32_to_bits(f);
    uint16_t sign = (uint16_t)((b >> 16) & F16_SIGN);
    uint32_t a = b & 0x7fffffffu;
    if (a > F32_INF_BITS)
        return sign | F16_QNAN;
    if (a >= F32_HALF_OVERFLOW)
        return sign | F16_INF;
    const uint32_t drop = F32_MANT_BITS - F16_MANT_BITS;  /* 13 */
    if (a >= F32_HALF_MIN_NORMAL) {
        uint32_t h = (a - ((uint32_t)(F32_EXP_BIAS - F16_EXP_BIAS) << F32_MANT_BITS)) >> drop;
        uint32_t rem = a & ((1u << drop) - 1), half = 1u << (drop - 1);
        if (rem > half || (rem == half && (h & 1u)))
            h++;
        return (uint16_t)(sign | h);
    }
    uint32_t e = a >> F32_MANT_BITS;
    if (e <= F32_HALF_TINY_EXP)
        return sign;
    /* subnormal: round(m * 2^(e-150) * 2^24) = m >> (126 - e), RNE */
    uint32_t m = (a & ((1u << F32_MANT_BITS) - 1)) | (1u << F32_MANT_BITS);
    uint32_t sh = (uint32_t)(F32_EXP_BIAS - 1) - e;
    uint32_t h = m >> sh, rem = m & ((1u << sh) - 1), half = 1u << (sh - 1);
    if (rem > half || (rem == half && (h & 1u)))
        h++;
    return (uint16_t)(sign | h);
}

/* All 65536 fp16 values as fp32, built once: B columns are converted per task. */
#define F16_VALUES (1u << 16)
static float f16_table[F16_VALUES];
static pthread_once_t f16_table_once = PTHREAD_ONCE_INIT;

static void f16_table_init(void)
{
    for (uint32_t h = 0; h < F16_VALUES; h++)
        f16_table[h] = f16_to_f32((uint16_t)h);
}

/* ---- output stage (§6) -------------------------------------------------------------------- */

/* round_half_even(x / 2^shift) (§6.3: banker's rounding). */
static int64_t shift_round_even(int64_t x, uint32_t shift)
{
    if (shift == 0)
        return x;
    if (shift >= SHIFT_SATURATE)
        return 0;
    int64_t q = x >> shift;                         /* floor (arithmetic shift) */
    int64_t rem = x - q * ((int64_t)1 << shift);     /* 0 <= rem < 2^shift */
    int64_t half = (int64_t)1 << (shift - 1);
    if (rem > half || (rem == half && (q & 1)))
        q++;
    return q;
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* Requantised int8/int16 value of an int32 accumulator (§6.3): the offset is added after
 * rounding and before clamping ([INF], the spec's assumption). */
static int64_t requant(const struct ork_sim_matmul *mm, int32_t acc)
{
    int64_t v = shift_round_even((int64_t)acc * mm->cvt_mult, mm->cvt_shift) + mm->cvt_offset;
    if (mm->out_prec == ORK_SIM_PREC_INT8)
        return clamp64(v, INT8_MIN_, INT8_MAX_);
    return clamp64(v, INT16_MIN_, INT16_MAX_);
}

/* Encoded output element (little-endian host: the bytes as stored, §0). */
static uint32_t out_from_int(const struct ork_sim_matmul *mm, int32_t acc)
{
    if (mm->out_prec == ORK_SIM_PREC_INT32)
        return (uint32_t)acc;
    return (uint32_t)requant(mm, acc);
}

static uint32_t out_from_float(const struct ork_sim_matmul *mm, float acc)
{
    if (mm->out_prec == ORK_SIM_PREC_FP16)
        return f32_to_f16(acc);
    return f32_to_bits(acc);
}

static void store_elem(uint8_t *p, uint32_t v, uint32_t osz)
{
    switch (osz) {
    case 1: { uint8_t x = (uint8_t)v; memcpy(p, &x, 1); break; }
    case 2: { uint16_t x = (uint16_t)v; memcpy(p, &x, 2); break; }
    default: memcpy(p, &v, 4); break;
    }
}

/* The final element is published last, behind a release fence (§3.4 step 5, §8.6): a poller
 * that sees it sees every other element. */
static void store_last(uint8_t *p, uint32_t v, uint32_t osz)
{
    __atomic_thread_fence(__ATOMIC_RELEASE);
    if (((uintptr_t)p % osz) == 0) {
        switch (osz) {
        case 1: __atomic_store_n(p, (uint8_t)v, __ATOMIC_RELEASE); return;
        case 2: __atomic_store_n((uint16_t *)(void *)p, (uint16_t)v, __ATOMIC_RELEASE); return;
        default: __atomic_store_n((uint32_t *)(void *)p, v, __ATOMIC_RELEASE); return;
        }
    }
    store_elem(p, v, osz);
}

/* ---- kernels ------------------------------------------------------------------------------- */

/* Row of A that feeds output row m. In strict mode rows at or beyond the CBUF cap are computed
 * from the wrong feature data (M_ABOVE_CAP "strict: corrupt rows beyond the cap", §14.2): the
 * simulator uses row m % cap, a deterministic stand-in for the hardware's garbage. */
static uint32_t src_row(const struct ork_sim_matmul *mm, uint32_t m)
{
    return (mm->m_cap && m >= mm->m_cap) ? m % mm->m_cap : m;
}

/* int8 dot products on operands widened to int16 (16x16 -> 32-bit multiply-adds vectorise on
 * every target); 4 rows of A share one pass over the column. Exact: |sum| <= K * 2^14. */
static int32_t dot_i16(const int16_t *a, const int16_t *b, uint32_t k)
{
    int32_t s = 0;
    for (uint32_t i = 0; i < k; i++)
        s += (int32_t)a[i] * (int32_t)b[i];
    return s;
}

static void dot_i16_x4(const int16_t *a0, const int16_t *a1, const int16_t *a2, const int16_t *a3,
                       const int16_t *b, uint32_t k, int32_t out[4])
{
    int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (uint32_t i = 0; i < k; i++) {
        int32_t bv = b[i];
        s0 += a0[i] * bv;
        s1 += a1[i] * bv;
        s2 += a2[i] * bv;
        s3 += a3[i] * bv;
    }
    out[0] = s0;
    out[1] = s1;
    out[2] = s2;
    out[3] = s3;
}

static void write_tile(const struct ork_sim_matmul *mm, uint8_t *c, uint32_t n0, uint32_t nw,
                       const uint32_t *enc, uint32_t *last)
{
    for (uint32_t m = 0; m < mm->m; m++) {
        uint8_t *row = c + ((uint64_t)m * mm->s + n0) * mm->osz;
        for (uint32_t j = 0; j < nw; j++) {
            if (m == mm->m - 1 && n0 + j == mm->n - 1) {
                *last = enc[(size_t)m * nw + j];
                continue;
            }
            store_elem(row + (size_t)j * mm->osz, enc[(size_t)m * nw + j], mm->osz);
        }
    }
}

static int exec_int8(const struct ork_sim_matmul *mm, const uint8_t *a, const uint8_t *b,
                     uint8_t *c)
{
    uint32_t m_rows = mm->m, k = mm->k, kt_n = k / KTILE, nt_n = mm->n / NTILE_INT8;
    int16_t *a16 = ork_malloc((size_t)m_rows * k * sizeof(int16_t));
    int16_t *col = ork_malloc((size_t)k * sizeof(int16_t));
    uint32_t *enc = ork_malloc((size_t)m_rows * NTILE_INT8 * sizeof(uint32_t));
    if (!a16 || !col || !enc) {
        ork_free(a16);
        ork_free(col);
        ork_free(enc);
        return ork_errorf(ORK_ENOMEM, "sim: no memory for a %ux%u int8 feature", m_rows, k);
    }
    /* A row-major with pitch (§4.1); rows past a strict-mode cap read the wrong row. */
    for (uint32_t m = 0; m < m_rows; m++) {
        const int8_t *src = (const int8_t *)(a + (size_t)src_row(mm, m) * mm->a_pitch);
        for (uint32_t i = 0; i < k; i++)
            a16[(size_t)m * k + i] = src[i];
    }
    uint32_t last = 0;
    for (uint32_t nt = 0; nt < nt_n; nt++) {
        const uint8_t *tile = b + (size_t)nt * kt_n * INT8_TILE_BYTES;
        for (uint32_t j = 0; j < NTILE_INT8; j++) {
            /* offset(k, n) = (n/32)*(K/32)*1024 + (k/32)*1024 + (n%32)*32 + k%32 (§4.3) */
            for (uint32_t kt = 0; kt < kt_n; kt++) {
                const int8_t *src = (const int8_t *)(tile + (size_t)kt * INT8_TILE_BYTES +
                                                     j * KTILE);
                for (uint32_t i = 0; i < KTILE; i++)
                    col[(size_t)kt * KTILE + i] = src[i];
            }
            uint32_t m = 0;
            for (; m + 4 <= m_rows; m += 4) {
                int32_t acc[4];
                const int16_t *r0 = a16 + (size_t)m * k;
                dot_i16_x4(r0, r0 + k, r0 + 2 * (size_t)k, r0 + 3 * (size_t)k, col, k, acc);
                for (uint32_t q = 0; q < 4; q++)
                    enc[(size_t)(m + q) * NTILE_INT8 + j] = out_from_int(mm, acc[q]);
            }
            for (; m < m_rows; m++)
                enc[(size_t)m * NTILE_INT8 + j] =
                    out_from_int(mm, dot_i16(a16 + (size_t)m * k, col, k));
        }
        write_tile(mm, c, nt * NTILE_INT8, NTILE_INT8, enc, &last);
    }
    store_last(c + ((uint64_t)(m_rows - 1) * mm->s + mm->n - 1) * mm->osz, last, mm->osz);
    ork_free(a16);
    ork_free(col);
    ork_free(enc);
    return 0;
}

/* fp32 dot products of fp16-valued operands: products are exact in fp32; each 32-element
 * block is summed in FP16_LANES partial sums, then added to the running sum in K order (§3.4).
 * FP16_ROWS rows of A share one pass over the column. */
#define FP16_ROWS 4u
static void dot_f32_blocks(const float *const *a, const float *b, uint32_t k, float *out)
{
    float acc[FP16_ROWS] = { 0 };
    for (uint32_t k0 = 0; k0 < k; k0 += KTILE) {
        float p[FP16_ROWS][FP16_LANES] = { { 0 } };
        for (uint32_t i = 0; i < KTILE; i += FP16_LANES)
            for (uint32_t r = 0; r < FP16_ROWS; r++)
                for (uint32_t l = 0; l < FP16_LANES; l++)
                    p[r][l] += a[r][k0 + i + l] * b[k0 + i + l];
        for (uint32_t r = 0; r < FP16_ROWS; r++) {
            float blk = ((p[r][0] + p[r][1]) + (p[r][2] + p[r][3])) +
                        ((p[r][4] + p[r][5]) + (p[r][6] + p[r][7]));
            acc[r] += blk;
        }
    }
    for (uint32_t r = 0; r < FP16_ROWS; r++)
        out[r] = acc[r];
}

/* The same sum for one row (identical arithmetic, so results do not depend on grouping). */
static float dot_f32_one(const float *a, const float *b, uint32_t k)
{
    float acc = 0.0f;
    for (uint32_t k0 = 0; k0 < k; k0 += KTILE) {
        float p[FP16_LANES] = { 0 };
        for (uint32_t i = 0; i < KTILE; i += FP16_LANES)
            for (uint32_t l = 0; l < FP16_LANES; l++)
                p[l] += a[k0 + i + l] * b[k0 + i + l];
        acc += ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]));
    }
    return acc;
}

static uint16_t load_u16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static int exec_fp16(const struct ork_sim_matmul *mm, const uint8_t *a, const uint8_t *b,
                     uint8_t *c)
{
    uint32_t m_rows = mm->m, k = mm->k, kt_n = k / KTILE, nt_n = mm->n / NTILE_FP16;
    float *af = ork_malloc((size_t)m_rows * k * sizeof(float));
    float *col = ork_malloc((size_t)k * sizeof(float));
    uint32_t *enc = ork_malloc((size_t)m_rows * NTILE_FP16 * sizeof(uint32_t));
    if (!af || !col || !enc) {
        ork_free(af);
        ork_free(col);
        ork_free(enc);
        return ork_errorf(ORK_ENOMEM, "sim: no memory for a %ux%u fp16 feature", m_rows, k);
    }
    pthread_once(&f16_table_once, f16_table_init);
    for (uint32_t m = 0; m < m_rows; m++)
        for (uint32_t i = 0; i < k; i++)
            af[(size_t)m * k + i] = f16_table[load_u16(a + (size_t)m * mm->a_pitch + 2u * i)];
    uint32_t last = 0;
    for (uint32_t nt = 0; nt < nt_n; nt++) {
        const uint8_t *tile = b + (size_t)nt * kt_n * FP16_TILE_ELEMS * 2u;
        for (uint32_t j = 0; j < NTILE_FP16; j++) {
            /* element(k, n) = (n/16)*(K/32)*512 + (k/32)*512 + (n%16)*32 + k%32 (§4.4) */
            for (uint32_t kt = 0; kt < kt_n; kt++) {
                const uint8_t *src = tile + ((size_t)kt * FP16_TILE_ELEMS + j * KTILE) * 2u;
                for (uint32_t i = 0; i < KTILE; i++)
                    col[(size_t)kt * KTILE + i] = f16_table[load_u16(src + 2u * i)];
            }
            uint32_t m = 0;
            for (; m + FP16_ROWS <= m_rows; m += FP16_ROWS) {
                const float *ar[FP16_ROWS];
                for (uint32_t r = 0; r < FP16_ROWS; r++)
                    ar[r] = af + (size_t)src_row(mm, m + r) * k;
                float acc[FP16_ROWS];
                dot_f32_blocks(ar, col, k, acc);
                for (uint32_t r = 0; r < FP16_ROWS; r++)
                    enc[(size_t)(m + r) * NTILE_FP16 + j] = out_from_float(mm, acc[r]);
            }
            for (; m < m_rows; m++)
                enc[(size_t)m * NTILE_FP16 + j] =
                    out_from_float(mm, dot_f32_one(af + (size_t)src_row(mm, m) * k, col, k));
        }
        write_tile(mm, c, nt * NTILE_FP16, NTILE_FP16, enc, &last);
    }
    store_last(c + ((uint64_t)(m_rows - 1) * mm->s + mm->n - 1) * mm->osz, last, mm->osz);
    ork_free(af);
    ork_free(col);
    ork_free(enc);
    return 0;
}

/* ---- entry points --------------------------------------------------------------------------- */

static void *map_range(const struct ork_sim_mem *mem, const struct ork_sim_task_in *t,
                       uint32_t addr, uint64_t len, bool write, uint16_t reg, const char *what,
                       const char *extent_rule, int *err)
{
    void *p = NULL;
    if (len && (uint64_t)addr + len <= IOVA_SPACE && mem && mem->map)
        p = mem->map(mem->ctx, addr, len, write);
    if (!p)
        *err = ork_errorf(ORK_EFAULT,
                          "task %u: ADDR_OOB: %s (%s) [0x%08x, +%llu) (%s) is not inside one "
                          "mapped buffer: IOMMU fault, DMA_%s_ERROR (§14.3)",
                          t->index, ork__sim_reg_name(reg), what, addr, (unsigned long long)len,
                          extent_rule, write ? "WRITE" : "READ");
    return p;
}

/* A DCOMP task's weights: the stream read through the task's mapping of DCOMP_ADDR0 (the
 * b_extent bytes its AMOUNTs span), decoded with its registers, strictly, into the native int8
 * block the MAC consumes (npu-weight-decompression.md §1.3-§1.5). A malformed stream is the
 * task's DCOMP_STREAM hazard, naming the decoder's fault. */
static int decompress(const struct ork_sim_matmul *mm, const struct ork_sim_task_in *t,
                      const uint8_t *stream, uint8_t **out)
{
    uint8_t *w = ork_malloc((size_t)mm->k * mm->n);
    if (!w)
        return ork_errorf(ORK_ENOMEM, "sim: no memory for a %ux%u decompressed block", mm->k,
                          mm->n);
    const struct ork_dcomp_check chk = { .addr = mm->b };
    int ret = ork_dcomp_block_decode(stream, mm->b_extent, mm->k, mm->n, &mm->dregs, &chk, w);
    if (ret < 0) {
        ork_free(w);
        return ork_errorf(ORK_EHAZARD, "task %u: DCOMP_STREAM: %s = 0x%08x: %s "
                          "(npu-weight-decompression.md §1.4)", t->index,
                          ork__sim_reg_name(ORK_REG_CNA_DCOMP_ADDR0), mm->b, ork_error_message());
    }
    *out = w;
    return 0;
}

int ork__sim_exec(const struct ork_sim_matmul *mm, const struct ork_sim_mem *mem,
                  const struct ork_sim_task_in *t, bool timing_only, struct ork_sim_stats *st)
{
    memset(st, 0, sizeof(*st));
    st->op = mm->op;
    st->warnings = mm->warnings;
    if (mm->op == ORK_SIM_OP_LUT_LOAD)
        return 0; /* LUT contents are not modelled (§7); no memory traffic */

    st->in_prec = mm->in_prec;
    st->out_prec = mm->out_prec;
    st->m = mm->m;
    st->k = mm->k;
    st->n = mm->n;
    st->macs = (uint64_t)mm->m * mm->k * mm->n;
    st->a_bytes = (uint64_t)mm->m * mm->k * mm->esz;
    if (mm->in_prec == ORK_SIM_PREC_INT4)
        st->a_bytes = mm->a_extent;              /* M*K/2: two int4 a byte (exec_i4.c) */
    st->b_bytes = mm->b_extent;
    st->c_bytes = (uint64_t)mm->m * mm->n * mm->osz;
    st->cbuf_data_banks = ORK_CNA_CBUF_CON0_DATA_BANK_GET(mm->cbuf);

    int err = 0;
    const bool i4 = mm->in_prec == ORK_SIM_PREC_INT4;
    const uint8_t *a = map_range(mem, t, mm->a, mm->a_extent, false, ORK_REG_CNA_FEATURE_DATA_ADDR,
                                 "A", i4 ? "M*K/2 of int4" : "(M-1)*pitch + K*esz", &err);
    if (!a)
        return err;
    const uint8_t *b = map_range(mem, t, mm->b, mm->b_extent, false, ORK_REG_CNA_DCOMP_ADDR0, "B",
                                 mm->dcomp ? "the DCOMP lanes of AMOUNT0..15" : "CNA_WEIGHT_SIZE0",
                                 &err);
    if (!b)
        return err;
    uint8_t *c = map_range(mem, t, mm->c, mm->c_extent, true, ORK_REG_DPU_DST_BASE_ADDR, "C",
                           i4 ? "N*M*2 of int16" : "((M-1)*s + N)*osz", &err);
    if (!c)
        return err;
    if (mm->dcomp)
        st->dcomp_bytes = (uint64_t)mm->k * mm->n;
    if (timing_only)
        return 0;
    if (i4)
        return ork__sim_exec_i4(mm, t, a, b, c, &st->warnings);
    if (mm->in_prec != ORK_SIM_PREC_INT8)
        return exec_fp16(mm, a, b, c);
    if (!mm->dcomp)
        return exec_int8(mm, a, b, c);
    uint8_t *w = NULL;
    if ((err = decompress(mm, t, b, &w)) < 0)
        return err;
    err = exec_int8(mm, a, w, c);
    ork_free(w);
    return err;
}

int ork__sim_task_run(const void *entries, size_t n_fetched, const struct ork_sim_task_in *t,
                      const struct ork_sim_mem *mem, bool timing_only,
                      struct ork_sim_regfile *rf, struct ork_sim_decoded *dec,
                      struct ork_sim_stats *st)
{
    struct ork_sim_decoded local;
    struct ork_sim_matmul mm;
    if (!dec)
        dec = &local;
    memset(st, 0, sizeof(*st));
    int ret = ork__sim_decode(entries, n_fetched, t, rf, dec);
    if (ret < 0)
        return ret;
    if ((ret = ork__sim_check(rf, dec, t, &mm)) < 0)
        return ret;
    if ((ret = ork__sim_exec(&mm, mem, t, timing_only, st)) < 0)
        return ret;
    st->n_entries = dec->n_used;
    return 0;
}
