/* w4a8_weights.c -- W4A8 weights on the host (w4a8.h): the code range, the K-slicing by the
 * int16 accumulator bound, packing into the int4 B layout (spec §4.6, i4_layout.h), the
 * per-column sums and the checks of bytes packed elsewhere. No device here: matmul_weights.c
 * puts the bytes into a buffer, matmul.c and w4a8_run.c run plans on them. */
#include "w4a8.h"
#include "i4_layout.h"

#include <ork/alloc.h>
#include <ork/error.h>

#include <string.h>

/* K-slice widths in 32-wide units (plan.h ORK_PLAN_I4_*). */
#define UNIT ORK_PLAN_K_ALIGN
#define SAFE_UNITS (ORK_PLAN_I4_K_SAFE / UNIT)      /* 15: never above the bound */
#define MAX_UNITS (ORK_PLAN_I4_K_MAX / UNIT)        /* 64: the program's K limit */

static uint32_t div_up(uint32_t a, uint32_t b)
{
    return (a + b - 1) / b;
}

int ork__w4a8_check_codes(const int8_t *w, uint32_t n, uint32_t k)
{
    for (uint32_t r = 0; r < n; r++)
        for (uint32_t c = 0; c < k; c++) {
            int v = w[(size_t)r * k + c];
            if (v < ORK_I4_MIN || v > ORK_I4_MAX)
                return ork_errorf(ORK_EINVAL, "npu weights: code %d at row %u column %u is "
                                  "outside the int4 range [%d, %d] of W4A8 weights", v, r, c,
                                  ORK_I4_MIN, ORK_I4_MAX);
        }
    return 0;
}

/* The bound terms of one code (w4a8.h head): 7P + 8Q and 8P + 7Q, one code at a time. */
static inline void bound_terms(int b, uint32_t *pos, uint32_t *neg)
{
    *pos += b > 0 ? 7u * (uint32_t)b : 8u * (uint32_t)-b;
    *neg += b > 0 ? 8u * (uint32_t)b : 7u * (uint32_t)-b;
}

static bool within_bound(uint32_t pos, uint32_t neg)
{
    return pos <= ORK_W4A8_POS_MAX && neg <= ORK_W4A8_NEG_MAX;
}

/* Does the even split of `units` into n slices keep column `pre` (prefix sums of the bound
 * terms per unit, [units + 1] each) within the bound in every slice wider than 480? */
static bool split_passes(const uint32_t *pre_pos, const uint32_t *pre_neg, uint32_t units,
                         uint32_t n)
{
    const uint32_t base = units / n, extra = units % n;
    uint32_t u0 = 0;
    for (uint32_t i = 0; i < n; i++) {
        const uint32_t len = base + (i < extra), u1 = u0 + len;
        if (len > SAFE_UNITS &&
            !within_bound(pre_pos[u1] - pre_pos[u0], pre_neg[u1] - pre_neg[u0]))
            return false;
        u0 = u1;
    }
    return true;
}

int ork__w4a8_kslices(const int8_t *w, uint32_t n, uint32_t k, uint32_t max_m,
                      struct ork_kplan *out)
{
    if (k < 1 || n < 1)
        return ork_errorf(ORK_EINVAL, "npu weights: W4A8 K=%u and N=%u must be >= 1", k, n);
    const uint32_t units = div_up(k, UNIT);
    const uint32_t lo = div_up(units, MAX_UNITS);              /* slices of <= 2048 */
    const uint32_t safe = div_up(units, SAFE_UNITS);           /* slices of <= 480: always */
    uint32_t hi = safe < ORK_PLAN_MAX_KSLICES ? safe : ORK_PLAN_MAX_KSLICES;
    if (lo > hi)
        return ork_errorf(ORK_ERANGE, "npu weights: W4A8 K=%u needs %u K-slices of <= %u (at "
                          "most %u)", k, lo, ORK_PLAN_I4_K_MAX, ORK_PLAN_MAX_KSLICES);
    const uint32_t n_cand = hi - lo + 1;
    uint32_t *pre = ork_malloc(2 * ((size_t)units + 1) * sizeof *pre);
    bool *alive = ork_malloc(n_cand * sizeof *alive);
    if (!pre || !alive) {
        ork_free(pre);
        ork_free(alive);
        return ork_errorf(ORK_ENOMEM, "npu weights: W4A8 K-slicing of K=%u", k);
    }
    for (uint32_t i = 0; i < n_cand; i++)
        alive[i] = true;
    uint32_t *pre_pos = pre, *pre_neg = pre + units + 1;
    for (uint32_t col = 0; col < n; col++) {
        const int8_t *row = w + (size_t)col * k;
        pre_pos[0] = pre_neg[0] = 0;
        for (uint32_t u = 0; u < units; u++) {
            uint32_t pos = 0, neg = 0;
            const uint32_t k1 = (u + 1) * UNIT < k ? (u + 1) * UNIT : k;
            for (uint32_t i = u * UNIT; i < k1; i++)
                bound_terms(row[i], &pos, &neg);
            pre_pos[u + 1] = pre_pos[u] + pos;
            pre_neg[u + 1] = pre_neg[u] + neg;
        }
        for (uint32_t i = 0; i < n_cand; i++)
            if (alive[i] && lo + i < safe)      /* slices of <= 480 need no check */
                alive[i] = split_passes(pre_pos, pre_neg, units, lo + i);
    }
    uint32_t pick = 0;
    for (uint32_t i = 0; i < n_cand && !pick; i++)
        pick = alive[i] ? lo + i : 0;
    ork_free(pre);
    ork_free(alive);
    if (!pick)
        return ork_errorf(ORK_ERANGE, "npu weights: W4A8 K=%u: no slicing of <= %u K-slices "
                          "keeps every column within the int16 bound (7P + 8Q <= 32767, "
                          "8P + 7Q <= 32768; npu-weight-decompression.md §2)", k,
                          ORK_PLAN_MAX_KSLICES);
    return ork__plan_kslices_even(ORK_NPU_I8, k, max_m, pick, out);
}

uint64_t ork__w4a8_layout(const struct ork_kplan *kp, uint32_t np, uint64_t *slice_off)
{
    uint64_t total = 0;
    for (uint32_t j = 0; j < kp->n_slices; j++) {
        slice_off[j] = total;
        total += (uint64_t)kp->s[j].pad * np / 2u;     /* two codes a byte (spec §4.6) */
    }
    return total;
}

void ork__w4a8_pack_slice(uint8_t *dst, const int8_t *w, uint32_t k, uint32_t n,
                          const struct ork_slice *s, uint32_t np)
{
    memset(dst, 0, (size_t)s->pad * np / 2u);
    for (uint32_t c = 0; c < n; c++) {
        const int8_t *row = w + (size_t)c * k + s->off;
        for (uint32_t i = 0; i + 1 < s->len; i += 2)        /* pairs: even k low (i4_layout.h) */
            dst[ork__i4_b_byte(s->pad, c, i)] =
                (uint8_t)(((uint8_t)row[i] & 15u) | ((uint8_t)row[i + 1] << 4));
        if (s->len & 1u)
            ork__i4_set(dst + ork__i4_b_byte(s->pad, c, s->len - 1), 0, row[s->len - 1]);
    }
}

void ork__w4a8_column_pq(const uint8_t *slice, uint32_t pad, uint32_t c, uint32_t *p,
                         uint32_t *q)
{
    uint32_t pp = 0, qq = 0;
    for (uint32_t kt = 0; kt < pad / UNIT; kt++) {
        const uint8_t *g = slice + ork__i4_b_byte(pad, c, kt * UNIT);   /* 16 bytes of codes */
        for (uint32_t i = 0; i < UNIT; i++) {
            const int v = ork__i4_get(g + i / 2u, i & 1u);
            pp += v > 0 ? (uint32_t)v : 0u;
            qq += v < 0 ? (uint32_t)-v : 0u;
        }
    }
    *p = pp;
    *q = qq;
}

int32_t ork__w4a8_column_sum(const uint8_t *slice, uint32_t pad, uint32_t c)
{
    uint32_t p, q;
    ork__w4a8_column_pq(slice, pad, c, &p, &q);
    return (int32_t)p - (int32_t)q;
}

/* The first non-zero padding nibble of column c (k in [len, pad)), or -1. */
static int32_t padding_fault(const uint8_t *slice, uint32_t pad, uint32_t len, uint32_t c)
{
    for (uint32_t i = len; i < pad; i++)
        if (ork__i4_get(slice + ork__i4_b_byte(pad, c, i), i & 1u))
            return (int32_t)i;
    return -1;
}

int ork__w4a8_check_packed(const uint8_t *bytes, const struct ork_kplan *kp, uint32_t n,
                           uint32_t np, const uint64_t *slice_off, int32_t *colsum)
{
    memset(colsum, 0, (size_t)n * sizeof *colsum);
    for (uint32_t j = 0; j < kp->n_slices; j++) {
        const struct ork_slice *s = &kp->s[j];
        const uint8_t *slice = bytes + slice_off[j];
        for (uint32_t c = 0; c < np; c++) {
            if (c >= n) {                                   /* padded column: all zero */
                int32_t f = padding_fault(slice, s->pad, 0, c);
                if (f >= 0)
                    return ork_errorf(ORK_EFORMAT, "npu weights: W4A8 data: K-slice %u has a "
                                      "non-zero code in padding column %u (k %d); padding must "
                                      "be 0", j, c, f);
                continue;
            }
            int32_t f = padding_fault(slice, s->pad, s->len, c);
            if (f >= 0)
                return ork_errorf(ORK_EFORMAT, "npu weights: W4A8 data: K-slice %u column %u "
                                  "has a non-zero code at padding k %d (the slice's K is %u); "
                                  "padding must be 0", j, c, f, s->len);
            uint32_t p, q;
            ork__w4a8_column_pq(slice, s->pad, c, &p, &q);
            if (s->pad > ORK_PLAN_I4_K_SAFE && !within_bound(7 * p + 8 * q, 8 * p + 7 * q))
                return ork_errorf(ORK_EFORMAT, "npu weights: W4A8 data: K-slice %u (K %u) column "
                                  "%u breaks the int16 bound (P %u Q %u: 7P + 8Q = %u, 8P + 7Q "
                                  "= %u; at most 32767, 32768)", j, s->pad, c, p, q,
                                  7 * p + 8 * q, 8 * p + 7 * q);
            colsum[c] += (int32_t)p - (int32_t)q;
        }
    }
    return 0;
}

/* A 16-bit sentinel half the l-row partial of column c cannot take (ork__w4a8_sentinel), and
 * whether one exists. */
static bool sentinel_half(const uint8_t *slice, uint32_t pad, uint32_t c, uint16_t *half)
{
    uint32_t p, q;
    ork__w4a8_column_pq(slice, pad, c, &p, &q);
    if (7 * p + 8 * q < ORK_W4A8_POS_MAX) {
        *half = 0x7fffu;
        return true;
    }
    if (8 * p + 7 * q < ORK_W4A8_NEG_MAX) {
        *half = 0x8000u;
        return true;
    }
    *half = 0x7fffu;
    return false;
}

uint32_t ork__w4a8_sentinel(const uint8_t *slice, uint32_t pad, const struct ork_slice *ns)
{
    /* padded columns are zero in the packed bytes: their range is {0} */
    uint16_t hi, lo;
    const uint32_t last = ns->off + ns->pad - 1;
    if (sentinel_half(slice, pad, last, &hi))
        return (uint32_t)hi << 16 | 0x7fffu;
    (void)sentinel_half(slice, pad, last - 1, &lo);
    return (uint32_t)hi << 16 | lo;
}
