/* plan.c -- matmul tiling rules (spec §5): the CBUF bank split per program, the M cap per K,
 * and the choice of K-slices, N-slices and M-tiles. Pure arithmetic on shapes; no buffers, no
 * registers written (program.c), no submission (matmul.c). Checked by tests/unit/test_plan.c. */
#include "plan.h"

#include <ork/alloc.h>
#include <ork/error.h>
#include <ork/regs.h>

#include <string.h>

/* CBUF: 12 banks of 32 KiB per core (spec §1.3); the schedule keeps data + weight banks = 12 and
 * moves one step of banks from weights to data per 64-row group of M (spec §5.2). */
#define CBUF_BANKS 12u
#define CBUF_BANK_BYTES 32768u
#define DATA_BANKS_MIN 1u
#define DATA_BANKS_MAX 11u          /* 0x1b floor: one weight bank left */
#define ROWS_PER_GROUP 64u
/* One schedule step per K/512 (int8, §5.3) or K/256 (fp16 rows take twice the bytes, §5.4). */
#define I8_SCHED_UNIT 512u
#define I8_SCHED_K_MAX 4096u        /* full-K envelope: K % 512 == 0 && K <= 4096 (§5.3) */
#define F16_SCHED_UNIT 256u
#define F16_SCHED_K_MIN 128u        /* power-of-two K in [128, 2048) (§5.4) */
#define F16_SCHED_K_END 2048u
/* fp16 K = 128 is outside the closed form (s = 0.5): the measured sequence for g = 1..4 and the
 * measured cap of 256 rows (spec §5.4 table; the envelope above 256 is non-monotonic). */
#define F16_K128 128u
#define F16_K128_M_CAP 256u
static const uint8_t f16_k128_cbuf[] = { 0xb8, 0xb1, 0xaa, 0xa3 };
/* FEATURE_GRAINS caps under the schedule: pow2_floor(65536/K) int8, pow2_floor(32768/K) fp16
 * (spec §5.6); decode writes 0x20 = 16 * 2 rows. */
#define GRAINS_I8_BUDGET 65536u
#define GRAINS_F16_BUDGET 32768u
#define GRAINS_FIELD_MAX 1023u      /* FEATURE_GRAINS[13:4] is 10 bits */
/* Slice width candidates for fp16 prefill (spec §5.4 practical consequence): powers of two
 * under the schedule, avoiding K = 128 whose envelope is non-monotonic. */
static const uint32_t f16_slice_widths[] = { 256, 512, 1024 };
/* The published M-tile rules for int8 K above the full-K envelope (npu-weight-decompression.md
 * §4.3 [SRC], not board-validated by this project): one program of K in (4096, 6144] takes up
 * to 32 rows and K in (6144, 8192] up to 16, with D = ceil(m*K / 32768) data banks and
 * FEATURE_GRAINS = 30 (CONV_CON2 = 0x1e0). Used only when ORK_NPU_FORM_WIDE_K is confirmed. */
#define WIDE_K_MIN 4096u            /* exclusive: the envelope of §5.3 ends here */
#define WIDE_K_MID 6144u
#define WIDE_K_MAX 8192u
#define WIDE_K_ROWS_MID 32u
#define WIDE_K_ROWS_MAX 16u
#define WIDE_K_GRAINS 30u
/* Bytes a K-slice costs per output row and column on the host: write the int32/fp32 partial,
 * read it back to sum (spec §1.4). Used only to compare tilings. */
#define PARTIAL_BYTES 8u

static uint32_t div_up(uint32_t a, uint32_t b)
{
    return (a + b - 1) / b;
}

static bool is_pow2(uint32_t x)
{
    return x && !(x & (x - 1));
}

static uint32_t pow2_floor(uint32_t x)
{
    uint32_t p = 1;
    while (p <= x / 2)
        p *= 2;
    return x ? p : 0;
}

uint32_t ork__plan_n_tile(enum ork_npu_dtype dt)
{
    return dt == ORK_NPU_I8 ? ORK_PLAN_N_TILE_I8 : ORK_PLAN_N_TILE_F16;
}

bool ork__plan_sched(enum ork_npu_dtype dt, uint32_t k)
{
    if (dt == ORK_NPU_I8)
        return k && k % I8_SCHED_UNIT == 0 && k <= I8_SCHED_K_MAX;
    return is_pow2(k) && k >= F16_SCHED_K_MIN && k < F16_SCHED_K_END;
}

static uint32_t cbuf_for_data_banks(uint32_t d)
{
    if (d > DATA_BANKS_MAX)
        d = DATA_BANKS_MAX;
    if (d < DATA_BANKS_MIN)
        d = DATA_BANKS_MIN;
    return ORK_CNA_CBUF_CON0_WEIGHT_BANK(CBUF_BANKS - d) | ORK_CNA_CBUF_CON0_DATA_BANK(d);
}

uint32_t ork__plan_cbuf_con0(enum ork_npu_dtype dt, uint32_t m, uint32_t k)
{
    const uint32_t decode = cbuf_for_data_banks(DATA_BANKS_MIN);        /* 0xb1 */
    if (m <= 1 || !ork__plan_sched(dt, k))
        return decode;
    uint32_t g = div_up(m, ROWS_PER_GROUP);                             /* ceil, not floor (§5.3) */
    if (dt == ORK_NPU_F16 && k == F16_K128) {
        uint32_t n = sizeof f16_k128_cbuf / sizeof f16_k128_cbuf[0];
        return f16_k128_cbuf[(g < n ? g : n) - 1];
    }
    uint32_t s = dt == ORK_NPU_I8 ? k / I8_SCHED_UNIT : k / F16_SCHED_UNIT;
    return cbuf_for_data_banks(s * g);                                  /* D = min(11, s*g) */
}

bool ork__plan_wide_k(enum ork_npu_dtype dt, uint32_t k, uint32_t forms)
{
    return (forms & ORK_NPU_FORM_WIDE_K) && dt == ORK_NPU_I8 && k % ORK_PLAN_K_ALIGN == 0 &&
           k > WIDE_K_MIN && k <= WIDE_K_MAX;
}

static uint32_t wide_k_cap(uint32_t k)
{
    return k <= WIDE_K_MID ? WIDE_K_ROWS_MID : WIDE_K_ROWS_MAX;
}

uint32_t ork__plan_cbuf_con0_forms(enum ork_npu_dtype dt, uint32_t m, uint32_t k, uint32_t forms)
{
    if (m > 1 && ork__plan_wide_k(dt, k, forms))
        return cbuf_for_data_banks(div_up(m * k, CBUF_BANK_BYTES));    /* D = ceil(m*K/32768) */
    return ork__plan_cbuf_con0(dt, m, k);
}

uint32_t ork__plan_grains_forms(enum ork_npu_dtype dt, uint32_t m, uint32_t k, uint32_t forms)
{
    if (m > 1 && ork__plan_wide_k(dt, k, forms))
        return WIDE_K_GRAINS;
    return ork__plan_grains(dt, m, k);
}

uint32_t ork__plan_grains(enum ork_npu_dtype dt, uint32_t m, uint32_t k)
{
    uint32_t rows = m + 1;
    if (m > 1 && ork__plan_sched(dt, k)) {
        uint32_t r = pow2_floor((dt == ORK_NPU_I8 ? GRAINS_I8_BUDGET : GRAINS_F16_BUDGET) / k);
        if (r && rows > r)
            rows = r;
    }
    /* A hint only (§5.6: affects neither correctness nor speed): clamp to the field. */
    return rows > GRAINS_FIELD_MAX ? GRAINS_FIELD_MAX : rows;
}

uint32_t ork__plan_m_cap(enum ork_npu_dtype dt, uint32_t k)
{
    if (!k)
        return 0;
    if (dt == ORK_NPU_I8) {
        if (!ork__plan_sched(dt, k))
            return 0;   /* M > 1 only inside the full-K envelope; zero-pad K to 512 (§5.3) */
        return ROWS_PER_GROUP * (DATA_BANKS_MAX / (k / I8_SCHED_UNIT));    /* 64*floor(11/s) */
    }
    if (ork__plan_sched(dt, k)) {
        if (k == F16_K128)
            return F16_K128_M_CAP;
        return DATA_BANKS_MAX * CBUF_BANK_BYTES / (2 * k);                /* 180224/K */
    }
    return CBUF_BANK_BYTES / (2 * k);                                     /* floor(16384/K) */
}

uint32_t ork__plan_m_cap_forms(enum ork_npu_dtype dt, uint32_t k, uint32_t forms)
{
    if (ork__plan_wide_k(dt, k, forms))
        return wide_k_cap(k);
    return ork__plan_m_cap(dt, k);
}

uint32_t ork__plan_m_tile(enum ork_npu_dtype dt, uint32_t m, uint32_t kpad)
{
    return ork__plan_m_tile_forms(dt, m, kpad, 0);
}

uint32_t ork__plan_m_tile_forms(enum ork_npu_dtype dt, uint32_t m, uint32_t kpad, uint32_t forms)
{
    if (m <= 1)
        return 1;
    uint32_t cap = ork__plan_m_cap_forms(dt, kpad, forms);
    return m < cap ? m : cap;
}

/* Split `units` units of `unit` elements over n slices as evenly as possible (larger first),
 * covering real length `len`. */
static void split_even(struct ork_slice *s, uint32_t n, uint32_t units, uint32_t unit,
                       uint32_t len)
{
    uint32_t base = units / n, extra = units % n, off = 0;
    for (uint32_t i = 0; i < n; i++) {
        s[i].off = off;
        s[i].pad = (base + (i < extra)) * unit;
        s[i].len = off >= len ? 0 : (len - off < s[i].pad ? len - off : s[i].pad);
        off += s[i].pad;
    }
}

/* Cost of a candidate slicing for max_m rows, in bytes per output column: weights re-streamed
 * once per M-tile (spec §4.5) plus host partial sums per extra slice (§1.4). */
static uint64_t kplan_cost(const struct ork_kplan *p, uint32_t esz)
{
    uint64_t c = 0;
    for (uint32_t j = 0; j < p->n_slices; j++) {
        uint32_t tile = ork__plan_m_tile(p->dtype, p->max_m, p->s[j].pad);
        if (!tile)
            return UINT64_MAX;
        c += (uint64_t)div_up(p->max_m, tile) * p->s[j].pad * esz;
    }
    return c + (uint64_t)p->n_slices * p->max_m * PARTIAL_BYTES;
}

static void kplan_fill(struct ork_kplan *p, uint32_t n, uint32_t units, uint32_t unit)
{
    p->n_slices = n;
    split_even(p->s, n, units, unit, p->k);
    p->k_padded = units * unit;
}

int ork__plan_kslices_even(enum ork_npu_dtype dt, uint32_t k, uint32_t max_m, uint32_t n_slices,
                           struct ork_kplan *out)
{
    memset(out, 0, sizeof *out);
    const uint32_t units = div_up(k, ORK_PLAN_K_ALIGN);
    if (k < 1 || n_slices < 1 || n_slices > ORK_PLAN_MAX_KSLICES || n_slices > units)
        return ork_errorf(ORK_ERANGE, "matmul plan: %u K-slices of K=%u (1..%u, at most one "
                          "per %u)", n_slices, k, ORK_PLAN_MAX_KSLICES, ORK_PLAN_K_ALIGN);
    out->dtype = dt;
    out->k = k;
    out->max_m = max_m;
    kplan_fill(out, n_slices, units, ORK_PLAN_K_ALIGN);
    return 0;
}

int ork__plan_kslices(enum ork_npu_dtype dt, uint32_t k, uint32_t max_m, struct ork_kplan *out)
{
    if (dt != ORK_NPU_I8 && dt != ORK_NPU_F16)
        return ork_errorf(ORK_EINVAL, "matmul plan: unknown dtype %d", (int)dt);
    if (k < 1 || max_m < 1)
        return ork_errorf(ORK_EINVAL, "matmul plan: K=%u and max M=%u must be >= 1", k, max_m);
    memset(out, 0, sizeof *out);
    out->dtype = dt;
    out->k = k;
    out->max_m = max_m;
    const uint32_t esz = dt == ORK_NPU_I8 ? 1 : 2;
    struct ork_kplan cand;
    uint64_t best = UINT64_MAX;

    if (max_m == 1) {
        /* Decode: any K up to 8192 per program with 0xb1 (spec §5.1); pad to 32 only. */
        uint32_t units = div_up(k, ORK_PLAN_K_ALIGN);
        uint32_t n = div_up(units * ORK_PLAN_K_ALIGN, ORK_PLAN_DECODE_K_MAX);
        if (n > ORK_PLAN_MAX_KSLICES)
            return ork_errorf(ORK_ERANGE, "matmul plan: K=%u needs %u slices (max %u)", k, n,
                              ORK_PLAN_MAX_KSLICES);
        kplan_fill(out, n, units, ORK_PLAN_K_ALIGN);
        return 0;
    }

    cand = *out;
    if (dt == ORK_NPU_I8) {
        /* Full-K envelope only: slices of s*512, s = 1..8, K zero-padded to 512 (spec §5.3). */
        uint32_t units = div_up(k, I8_SCHED_UNIT);
        for (uint32_t smax = 1; smax <= I8_SCHED_K_MAX / I8_SCHED_UNIT; smax++) {
            uint32_t n = div_up(units, smax);
            if (n > ORK_PLAN_MAX_KSLICES)
                continue;
            kplan_fill(&cand, n, units, I8_SCHED_UNIT);
            uint64_t c = kplan_cost(&cand, esz);
            if (c < best) {
                best = c;
                *out = cand;
            }
        }
    } else {
        /* One unpadded slice (0xb1, or the schedule when K is a power of two)... */
        uint32_t units = div_up(k, ORK_PLAN_K_ALIGN);
        if (units * ORK_PLAN_K_ALIGN <= ORK_PLAN_DECODE_K_MAX) {
            kplan_fill(&cand, 1, units, ORK_PLAN_K_ALIGN);
            best = kplan_cost(&cand, esz);
            if (best != UINT64_MAX)
                *out = cand;
        }
        /* ...or slices of a scheduled power-of-two width (spec §5.4), K zero-padded. */
        for (size_t i = 0; i < sizeof f16_slice_widths / sizeof f16_slice_widths[0]; i++) {
            uint32_t w = f16_slice_widths[i];
            uint32_t n = div_up(k, w);
            if (n > ORK_PLAN_MAX_KSLICES)
                continue;
            kplan_fill(&cand, n, n, w);
            uint64_t c = kplan_cost(&cand, esz);
            if (c < best) {
                best = c;
                *out = cand;
            }
        }
    }
    if (best == UINT64_MAX)
        return ork_errorf(ORK_ERANGE, "matmul plan: no K-slicing for K=%u with M up to %u", k,
                          max_m);
    return 0;
}

static int nslices_tile(uint32_t tile, uint32_t nmax, uint32_t n, struct ork_nplan *out)
{
    memset(out, 0, sizeof *out);
    if (n < 1)
        return ork_errorf(ORK_EINVAL, "matmul plan: N=%u must be >= 1", n);
    out->n = n;
    out->tile = tile;
    uint32_t units = div_up(n, out->tile);
    out->n_padded = units * out->tile;
    out->n_slices = div_up(out->n_padded, nmax);
    out->s = ork_calloc(out->n_slices, sizeof *out->s);
    if (!out->s)
        return ork_errorf(ORK_ENOMEM, "matmul plan: %u N-slices", out->n_slices);
    split_even(out->s, out->n_slices, units, out->tile, n);
    return 0;
}

int ork__plan_nslices(enum ork_npu_dtype dt, uint32_t n, struct ork_nplan *out)
{
    return nslices_tile(ork__plan_n_tile(dt), ORK_PLAN_N_MAX, n, out);
}

int ork__plan_nslices_i4(uint32_t n, struct ork_nplan *out)
{
    return nslices_tile(ORK_PLAN_I4_N_TILE, ORK_PLAN_I4_N_MAX, n, out);
}

static uint32_t split_cores_tile(uint32_t tile, uint32_t n, uint32_t want)
{
    const uint32_t nn = div_up(n, tile);
    uint32_t nc = want ? want : 1;
    if (nc > nn / 2)                     /* >= 2 column tiles per core (spec §9) */
        nc = nn / 2 ? nn / 2 : 1;
    return nc > ORK_PLAN_MAX_CORES ? ORK_PLAN_MAX_CORES : nc;
}

uint32_t ork__plan_split_cores(enum ork_npu_dtype dt, uint32_t n, uint32_t want)
{
    return split_cores_tile(ork__plan_n_tile(dt), n, want);
}

uint32_t ork__plan_split_cores_i4(uint32_t n, uint32_t want)
{
    return split_cores_tile(ORK_PLAN_I4_N_TILE, n, want);
}

static uint32_t nsplit_tile(uint32_t tile, uint32_t nmax, uint32_t n, uint32_t nc,
                            struct ork_slice *ns, uint32_t *core_ns0)
{
    const uint32_t nn = div_up(n, tile);
    uint32_t k = 0;
    for (uint32_t c = 0; c < nc; c++) {
        uint32_t t0 = (uint32_t)((uint64_t)c * nn / nc), t1 = (uint32_t)((uint64_t)(c + 1) * nn / nc);
        uint32_t units = t1 - t0, pieces = div_up(units * tile, nmax);
        if (core_ns0)
            core_ns0[c] = k;
        uint32_t off = t0 * tile;
        for (uint32_t p = 0; p < pieces; p++, k++) {
            uint32_t u = units / pieces + (p < units % pieces);
            if (ns) {
                ns[k].off = off;
                ns[k].pad = u * tile;
                ns[k].len = off >= n ? 0 : (n - off < ns[k].pad ? n - off : ns[k].pad);
            }
            off += u * tile;
        }
    }
    if (core_ns0)
        core_ns0[nc] = k;
    return k;
}

uint32_t ork__plan_nsplit(enum ork_npu_dtype dt, uint32_t n, uint32_t nc, struct ork_slice *ns,
                          uint32_t *core_ns0)
{
    return nsplit_tile(ork__plan_n_tile(dt), ORK_PLAN_N_MAX, n, nc, ns, core_ns0);
}

uint32_t ork__plan_nsplit_i4(uint32_t n, uint32_t nc, struct ork_slice *ns, uint32_t *core_ns0)
{
    return nsplit_tile(ORK_PLAN_I4_N_TILE, ORK_PLAN_I4_N_MAX, n, nc, ns, core_ns0);
}

uint32_t ork__plan_m_tile_i4(uint32_t m)
{
    return m < ORK_PLAN_I4_TOKENS_MAX ? m : ORK_PLAN_I4_TOKENS_MAX;
}

void ork__plan_nslices_fini(struct ork_nplan *p)
{
    ork_free(p->s);
    p->s = NULL;
    p->n_slices = 0;
}
