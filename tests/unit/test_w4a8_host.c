/* test_w4a8_host.c -- the host halves of W4A8 weights without a device (src/libork/w4a8.h):
 * the code range, the K-slicing by the int16 accumulator bound (npu-weight-decompression.md §2:
 * the fewest even slices, <= 480 always, <= 2048 only within 7P + 8Q <= 32767 and
 * 8P + 7Q <= 32768), packing into the int4 B layout and splitting int8 rows into h/l rows of
 * the A layout (spec §4.6), and the widening of int16 partials with the correction -- checked
 * end to end against the int32 product A.W through a model of the int4 MAC written here from
 * the layouts of spec §4.6 (element offsets restated, not taken from i4_layout.h), with M-tiles,
 * odd K, N not a multiple of 64 and several N-slices; the blob's parser and the packed-data
 * checks; the doorbell sentinel. */
#include "ork_test.h"

#include <ork/alloc.h>
#include <ork/error.h>

#include "libork/i4_layout.h"
#include "libork/w4a8.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

/* spec §4.6 element offsets (two int4 a byte, element e at byte e/2, nibble e&1) */
static size_t a_elem(uint32_t M, uint32_t r, uint32_t k)
{
    return ((size_t)(k / 32) * M + r) * 32 + k % 32;
}

static size_t b_elem(uint32_t K, uint32_t n, uint32_t k)
{
    return (((size_t)(n / 64) * (K / 32) + k / 32) * 64 + n % 64) * 32 + k % 32;
}

static size_t c_elem(uint32_t M, uint32_t r, uint32_t n)
{
    return ((size_t)(n / 8) * M + r) * 8 + n % 8;
}

static int nib(const uint8_t *p, size_t e)
{
    int v = (e & 1) ? p[e / 2] >> 4 : p[e / 2] & 15;
    return v >= 8 ? v - 16 : v;
}

/* The int4 x int4 MAC of one program (M physical rows, K, N): C int16 from A and B; *sat set
 * when a sum leaves int16 (the bound was broken). */
static void mac_i4(const uint8_t *a, const uint8_t *b, int16_t *c, uint32_t M, uint32_t K,
                   uint32_t N, uint32_t b_k_total, uint32_t n_base, int *sat)
{
    for (uint32_t r = 0; r < M; r++)
        for (uint32_t n = 0; n < N; n++) {
            int32_t acc = 0;
            for (uint32_t k = 0; k < K; k++)
                acc += nib(a, a_elem(M, r, k)) * nib(b, b_elem(b_k_total, n_base + n, k));
            if (acc > 32767 || acc < -32768)
                (*sat)++;
            c[c_elem(M, r, n)] = (int16_t)acc;
        }
}

static void fill_codes(int8_t *w, size_t cnt, int lo, int hi)
{
    for (size_t i = 0; i < cnt; i++)
        w[i] = (int8_t)(lo + (int)(rnd() % (uint32_t)(hi - lo + 1)));
}

static void test_codes_range(void)
{
    int8_t w[3 * 5] = { 0 };
    CHECK_EQ_INT(ork__w4a8_check_codes(w, 3, 5), 0);
    w[2 * 5 + 4] = 8;
    CHECK_EQ_INT(ork__w4a8_check_codes(w, 3, 5), ORK_EINVAL);
    CHECK(strstr(ork_error_message(), "row 2 column 4") != NULL);
    w[2 * 5 + 4] = -9;
    CHECK_EQ_INT(ork__w4a8_check_codes(w, 3, 5), ORK_EINVAL);
    w[2 * 5 + 4] = -8;
    w[0] = 7;
    CHECK_EQ_INT(ork__w4a8_check_codes(w, 3, 5), 0);
}

/* Every slice of kp within the bound for W (slices <= 480 skip the check), by brute force. */
static int slicing_ok(const int8_t *w, uint32_t n, uint32_t k, const struct ork_kplan *kp)
{
    for (uint32_t j = 0; j < kp->n_slices; j++) {
        const struct ork_slice *s = &kp->s[j];
        if (s->pad > 2048 || s->pad % 32)
            return 0;
        if (s->pad <= 480)
            continue;
        for (uint32_t c = 0; c < n; c++) {
            uint32_t p = 0, q = 0;
            for (uint32_t i = s->off; i < s->off + s->len; i++) {
                int v = w[(size_t)c * k + i];
                p += v > 0 ? (uint32_t)v : 0;
                q += v < 0 ? (uint32_t)-v : 0;
            }
            if (7 * p + 8 * q > 32767 || 8 * p + 7 * q > 32768)
                return 0;
        }
    }
    return 1;
}

static void check_slicing(const int8_t *w, uint32_t n, uint32_t k, uint32_t want_slices)
{
    struct ork_kplan kp;
    REQUIRE(ork__w4a8_kslices(w, n, k, 1, &kp) == 0);
    CHECK_EQ_INT(kp.n_slices, want_slices);
    CHECK(slicing_ok(w, n, k, &kp));
    uint32_t covered = 0;
    for (uint32_t j = 0; j < kp.n_slices; j++) {
        CHECK_EQ_INT(kp.s[j].off, covered);
        covered += kp.s[j].len;
    }
    CHECK_EQ_INT(covered, k);
    /* the fewest: one slice less breaks the bound or the 2048 limit */
    struct ork_kplan fewer;
    if (kp.n_slices > 1 && ork__plan_kslices_even(ORK_NPU_I8, k, 1, kp.n_slices - 1, &fewer) == 0)
        CHECK(!slicing_ok(w, n, k, &fewer));
}

static void test_kslices_bound(void)
{
    const uint32_t n = 70;
    /* small codes: |b| <= 1 keeps 8 * 2048 = 16384 within the bound -> slices of 2048 */
    for (uint32_t k = 32; k <= 9000; k = k * 3 + 17) {
        int8_t *w = ork_malloc((size_t)n * k);
        REQUIRE(w);
        fill_codes(w, (size_t)n * k, -1, 1);
        check_slicing(w, n, k, (k + 2047) / 2048);
        ork_free(w);
    }
    /* one column of 7 everywhere: P = 7 K, 8P + 7Q = 56 K <= 32768 needs K <= 585, i.e. 18
     * units of 32 (576): K = 6000 (188 units) takes ceil(188 / 18) = 11 slices */
    const uint32_t k = 6000;
    int8_t *w = ork_malloc((size_t)n * k);
    REQUIRE(w);
    fill_codes(w, (size_t)n * k, -1, 1);
    for (uint32_t i = 0; i < k; i++)
        w[(size_t)33 * k + i] = 7;
    check_slicing(w, n, k, 11);
    /* a column of -8: 7P + 8Q = 64 K <= 32767 needs K <= 511, so only the 480 rule is left
     * (188 units / 15 = 13 slices) */
    for (uint32_t i = 0; i < k; i++)
        w[(size_t)69 * k + i] = -8;
    check_slicing(w, n, k, 13);
    ork_free(w);
    /* K above 64 slices of 480 with extreme codes: no slicing fits */
    const uint32_t kbig = 64 * 480 + 32;
    int8_t *wb = ork_malloc(kbig);
    REQUIRE(wb);
    for (uint32_t i = 0; i < kbig; i++)
        wb[i] = -8;
    struct ork_kplan kp;
    CHECK_EQ_INT(ork__w4a8_kslices(wb, 1, kbig, 1, &kp), ORK_ERANGE);
    CHECK(strstr(ork_error_message(), "int16 bound") != NULL);
    ork_free(wb);
}

/* Pack, split, run the MAC model per K-slice x N-slice x M-tile, gather: equals A.W. */
static void check_pipeline(uint32_t m, uint32_t k, uint32_t n, int wlo, int whi, uint32_t n_max)
{
    int8_t *w = ork_malloc((size_t)n * k), *a = ork_malloc((size_t)m * k);
    int32_t *c = ork_calloc((size_t)m * n, sizeof *c), *sums = ork_calloc(n, sizeof *sums);
    REQUIRE(w && a && c && sums);
    fill_codes(w, (size_t)n * k, wlo, whi);
    for (size_t i = 0; i < (size_t)m * k; i++)
        a[i] = (int8_t)(rnd() & 0xff);                  /* the whole int8 range, -128 too */
    a[0] = -128;
    struct ork_kplan kp;
    REQUIRE(ork__w4a8_kslices(w, n, k, m, &kp) == 0);
    const uint32_t np = (n + 63) / 64 * 64;
    uint64_t off[ORK_PLAN_MAX_KSLICES];
    const uint64_t bytes = ork__w4a8_layout(&kp, np, off);
    uint8_t *bw = ork_malloc(bytes);
    REQUIRE(bw);
    memset(bw, 0xa5, bytes);                            /* packing must write every byte */
    for (uint32_t j = 0; j < kp.n_slices; j++)
        ork__w4a8_pack_slice(bw + off[j], w, k, n, &kp.s[j], np);
    REQUIRE(ork__w4a8_check_packed(bw, &kp, n, np, off, sums) == 0);
    for (uint32_t x = 0; x < n; x++) {
        int32_t s = 0;
        for (uint32_t i = 0; i < k; i++)
            s += w[(size_t)x * k + i];
        CHECK_EQ_INT(sums[x], s);
    }
    const uint32_t tile = 64;
    int sat = 0;
    for (uint32_t j = 0; j < kp.n_slices; j++) {
        const struct ork_slice *s = &kp.s[j];
        for (uint32_t n0 = 0; n0 < np; n0 += n_max) {
            const uint32_t nn = np - n0 < n_max ? np - n0 : n_max;
            const struct ork_slice ns = { .off = n0, .pad = nn,
                                          .len = n0 >= n ? 0 : (n - n0 < nn ? n - n0 : nn) };
            for (uint32_t m0 = 0; m0 < m; m0 += tile) {
                const uint32_t mt = m - m0 < tile ? m - m0 : tile;
                uint8_t *ab = ork_calloc((size_t)mt * s->pad, 1);
                int16_t *cb = ork_calloc((size_t)2 * mt * nn, sizeof *cb);
                REQUIRE(ab && cb);
                memset(ab, 0x5a, (size_t)mt * s->pad);  /* the split writes every byte */
                ork__w4a8_split_rows(ab, mt, a + (size_t)m0 * k, k, s, mt);
                for (uint32_t r = 0; r < mt; r++)       /* q = 16 h + l + 8, padding q = 0 */
                    for (uint32_t i = 0; i < s->pad; i++) {
                        int q = i < s->len ? a[(size_t)(m0 + r) * k + s->off + i] : 0;
                        int h = nib(ab, a_elem(2 * mt, 2 * r, i));
                        int l = nib(ab, a_elem(2 * mt, 2 * r + 1, i));
                        if (16 * h + l + 8 != q)
                            sat += 1000;
                    }
                mac_i4(ab, bw + off[j], cb, 2 * mt, s->pad, nn, s->pad, n0, &sat);
                ork__w4a8_gather_block(c + (size_t)m0 * n, n, cb, mt, mt, &ns, sums, j == 0);
                ork_free(ab);
                ork_free(cb);
            }
        }
    }
    CHECK_EQ_INT(sat, 0);
    uint32_t bad = 0;
    for (uint32_t r = 0; r < m; r++)
        for (uint32_t x = 0; x < n; x++) {
            int32_t acc = 0;
            for (uint32_t i = 0; i < k; i++)
                acc += (int32_t)a[(size_t)r * k + i] * w[(size_t)x * k + i];
            bad += c[(size_t)r * n + x] != acc;
        }
    CHECK_EQ_INT(bad, 0);
    ork_free(bw);
    ork_free(w);
    ork_free(a);
    ork_free(c);
    ork_free(sums);
}

static void test_pipeline(void)
{
    check_pipeline(1, 32, 64, -8, 7, 4096);
    check_pipeline(3, 77, 100, -8, 7, 4096);        /* odd K, N padded to 128 */
    check_pipeline(70, 1000, 130, -8, 7, 64);       /* 2 M-tiles, 480 slices, 64-col N-slices */
    check_pipeline(2, 4133, 65, -1, 1, 4096);       /* 2048-wide slices, the last padded */
    check_pipeline(5, 2500, 200, -3, 3, 128);       /* the bound decides the width */
}

static void test_blob(void)
{
    const uint32_t k = 1500, n = 100, np = 128;
    int8_t *w = ork_malloc((size_t)n * k);
    REQUIRE(w);
    fill_codes(w, (size_t)n * k, -2, 2);
    struct ork_kplan kp;
    REQUIRE(ork__w4a8_kslices(w, n, k, 4, &kp) == 0);
    uint64_t off[ORK_PLAN_MAX_KSLICES];
    const uint64_t data = ork__w4a8_layout(&kp, np, off);
    const uint64_t table = ork__w4a8_blob_table_bytes(kp.n_slices), total = table + data;
    uint8_t *blob = ork_calloc(total, 1), *copy = ork_malloc(total);
    int32_t *sums = ork_calloc(n, sizeof *sums);
    REQUIRE(blob && copy && sums);
    ork__w4a8_blob_write_table(&kp, n, np, data, blob);
    for (uint32_t j = 0; j < kp.n_slices; j++)
        ork__w4a8_pack_slice(blob + table + off[j], w, k, n, &kp.s[j], np);
    struct ork_kplan got;
    const uint8_t *d = NULL;
    REQUIRE(ork__w4a8_blob_parse(blob, total, k, n, 4, &got, &d) == 0);
    CHECK(d == blob + table);
    CHECK_EQ_INT(got.n_slices, kp.n_slices);
    CHECK_EQ_INT(ork__w4a8_check_packed(d, &got, n, np, off, sums), 0);
    /* refusals name the field */
    static const struct { uint32_t at; uint8_t xor; const char *word; } bad[] = {
        { 0, 1, "magic" },        { 8, 1, "version" },     { 12, 1, "field k" },
        { 16, 1, "field n" },     { 20, 1, "field max_m" }, { 24, 9, "slices" },
        { 28, 64, "n_padded" },   { 32, 1, "data_bytes" }, { 45, 1, "reserved" },
        { 64, 32, "field off" },  { 68, 32, "field len" }, { 72, 32, "field pad" },
        { 76, 1, "reserved" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memcpy(copy, blob, total);
        copy[bad[i].at] ^= bad[i].xor;
        CHECK_EQ_INT(ork__w4a8_blob_parse(copy, total, k, n, 4, &got, &d), ORK_EFORMAT);
        if (!strstr(ork_error_message(), bad[i].word))
            fprintf(stderr, "byte %u: '%s' lacks '%s'\n", bad[i].at, ork_error_message(),
                    bad[i].word);
        CHECK(strstr(ork_error_message(), bad[i].word) != NULL);
    }
    CHECK_EQ_INT(ork__w4a8_blob_parse(blob, total - 1, k, n, 4, &got, &d), ORK_EFORMAT);
    CHECK_EQ_INT(ork__w4a8_blob_parse(blob, 10, k, n, 4, &got, &d), ORK_EFORMAT);
    CHECK_EQ_INT(ork__w4a8_blob_parse(blob, total, k, n, 8, &got, &d), ORK_EFORMAT);
    /* the data: a code in a padding column, at padding k, and a column past the bound */
    REQUIRE(ork__w4a8_blob_parse(blob, total, k, n, 4, &got, &d) == 0);
    memcpy(copy, blob, total);
    copy[table + off[0] + ork__i4_b_byte(got.s[0].pad, 100, 0)] = 0x10;  /* column 100 >= n */
    CHECK_EQ_INT(ork__w4a8_check_packed(copy + table, &got, n, np, off, sums), ORK_EFORMAT);
    CHECK(strstr(ork_error_message(), "padding column 100") != NULL);
    const uint32_t last = got.n_slices - 1;
    if (got.s[last].len < got.s[last].pad) {
        memcpy(copy, blob, total);
        uint8_t *ls = copy + table + off[last];
        ork__i4_set(ls + ork__i4_b_byte(got.s[last].pad, 3, got.s[last].len),
                    got.s[last].len & 1u, 5);
        CHECK_EQ_INT(ork__w4a8_check_packed(copy + table, &got, n, np, off, sums), ORK_EFORMAT);
        CHECK(strstr(ork_error_message(), "column 3") != NULL);
    }
    memcpy(copy, blob, total);
    for (uint32_t i = 0; i < got.s[0].len; i++)               /* column 7 of slice 0: all -8 */
        ork__i4_set(copy + table + off[0] + ork__i4_b_byte(got.s[0].pad, 7, i), i & 1u, -8);
    if (got.s[0].pad > 480) {
        CHECK_EQ_INT(ork__w4a8_check_packed(copy + table, &got, n, np, off, sums), ORK_EFORMAT);
        CHECK(strstr(ork_error_message(), "int16 bound") != NULL);
    }
    ork_free(blob);
    ork_free(copy);
    ork_free(sums);
    ork_free(w);
}

/* Column c of a packed slice of reduction K: codes making P and Q (sevens/eights, then one
 * remainder code each), the rest 0. */
static void set_column_pq(uint8_t *b, uint32_t K, uint32_t c, uint32_t p, uint32_t q)
{
    uint32_t i = 0;
    for (; i < K; i++)
        ork__i4_set(b + ork__i4_b_byte(K, c, i), i & 1u, 0);
    i = 0;
    for (; p; i++) {
        int v = p >= 7 ? 7 : (int)p;
        ork__i4_set(b + ork__i4_b_byte(K, c, i), i & 1u, v);
        p -= (uint32_t)v;
    }
    for (; q; i++) {
        int v = q >= 8 ? 8 : (int)q;
        ork__i4_set(b + ork__i4_b_byte(K, c, i), i & 1u, -v);
        q -= (uint32_t)v;
    }
}

static void test_sentinel(void)
{
    const uint32_t K = 2048;                        /* one slice, 64 columns */
    uint8_t *b = ork_calloc((size_t)K * 64 / 2, 1);
    REQUIRE(b);
    const struct ork_slice ns = { .off = 0, .len = 64, .pad = 64 };
    CHECK_EQ_INT(ork__w4a8_sentinel(b, K, &ns), 0x7fff7fffu);     /* zero: the range is {0} */
    /* column 63 (the high half) reaching 32767 but not -32768: P = 1, Q = 4095 -> 0x8000 */
    set_column_pq(b, K, 63, 1, 4095);
    uint32_t p, q;
    ork__w4a8_column_pq(b, K, 63, &p, &q);
    CHECK_EQ_INT(7 * p + 8 * q, 32767);
    CHECK_EQ_INT(ork__w4a8_sentinel(b, K, &ns), 0x80007fffu);
    /* P = 2185, Q = 2184: 7P + 8Q = 32767 and 8P + 7Q = 32768, both ends attainable: the
     * low half (column 62) decides, here 0x8000 */
    set_column_pq(b, K, 63, 2185, 2184);
    set_column_pq(b, K, 62, 1, 4095);
    ork__w4a8_column_pq(b, K, 63, &p, &q);
    CHECK_EQ_INT(8 * p + 7 * q, 32768);
    CHECK_EQ_INT(ork__w4a8_sentinel(b, K, &ns), 0x7fff8000u);
    ork_free(b);
}

int main(void)
{
    RUN(test_codes_range);
    RUN(test_kslices_bound);
    RUN(test_pipeline);
    RUN(test_blob);
    RUN(test_sentinel);
    return ork_test_done();
}
