/* x86/tile_f16_avx512.c -- F16 / BF16 weight rows against X rounded to their type in
 * register tiles (the avx512vnni path; ORK_ACT_QUANT matmuls of 16-bit weights): up to 3 rows x
 * 4 X rows per call, the weights widened once per 32 elements. Each output has ork_vec_dot_act's
 * bits (the 32-lane accumulator of dot.c). */
#include <stdint.h>
#include <string.h>

#include "x86_priv.h"

#ifdef ORK_KERN_X86

/* F16 / BF16 weights x rounded X, several rows of each (struct ork__type_kern.dot16_tile):
 * Each output takes exactly ork_vec_dot_act's lanes, FMAs, tail and reduction (the 32-lane
 * accumulator above, two zmm per output); the weights are widened in registers once per 32
 * elements for TILE16_MX X rows, and TILE16_NW x TILE16_MX independent FMA chains are in flight
 * (3 x 4 x 2 = 24 accumulators + 6 weight registers of 32). */
#define TILE16_NW ORK_DOT16_NW
#define TILE16_MX ORK_DOT16_MX
#define TGT_512BW __attribute__((target("avx512f,avx512bw,avx2,fma,f16c")))

TGT_512BW static inline __m512 wide16_512(const uint8_t *row, uint32_t type, int64_t i)
{
    __m256i h = _mm256_loadu_si256((const __m256i *)(row + 2 * i));
    if (type == ORK_TYPE_F16)
        return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));   /* BF16 */
}

/* Rows r[0..TILE16_NW) (repeats allowed) x X rows x[0..MX): out[t][k]. */
#define TILE16(MX)                                                                             \
    TGT_512BW static void tile16_##MX(uint32_t type, const uint8_t *const *r,             \
                                          const float *const *x, int64_t n,                   \
                                          float out[][TILE16_NW])                             \
    {                                                                                          \
        __m512 s[TILE16_NW][MX][2];                                                            \
        for (int k = 0; k < TILE16_NW; k++)                                                    \
            for (int t = 0; t < MX; t++)                                                       \
                s[k][t][0] = s[k][t][1] = _mm512_setzero_ps();                                 \
        int64_t i = 0;                                                                         \
        for (; i + ORK_DOT_LANES <= n; i += ORK_DOT_LANES) {                                           \
            __m512 w[TILE16_NW][2];                                                            \
            for (int k = 0; k < TILE16_NW; k++) {                                              \
                w[k][0] = wide16_512(r[k], type, i);                                           \
                w[k][1] = wide16_512(r[k], type, i + 16);                                      \
            }                                                                                  \
            for (int t = 0; t < MX; t++) {                                                     \
                __m512 x0 = _mm512_loadu_ps(x[t] + i), x1 = _mm512_loadu_ps(x[t] + i + 16);    \
                for (int k = 0; k < TILE16_NW; k++) {                                          \
                    s[k][t][0] = _mm512_fmadd_ps(w[k][0], x0, s[k][t][0]);                     \
                    s[k][t][1] = _mm512_fmadd_ps(w[k][1], x1, s[k][t][1]);                     \
                }                                                                              \
            }                                                                                  \
        }                                                                                      \
        for (int t = 0; t < MX; t++)                                                           \
            for (int k = 0; k < TILE16_NW; k++) {                                              \
                struct ork__dot_acc acc;                                                            \
                _mm512_storeu_ps(acc.lane, s[k][t][0]);                                        \
                _mm512_storeu_ps(acc.lane + 16, s[k][t][1]);                                   \
                acc.tail = ork__dot_tail(r[k], type, x[t], i, n);                                   \
                out[t][k] = ork__acc_end32(&acc);                                         \
            }                                                                                  \
    }
TILE16(1)
TILE16(2)
TILE16(3)
TILE16(4)

/* nw <= TILE16_NW rows x mx <= TILE16_MX X rows (matmul.c keeps to both). */
static void dot16_tile_avx512(uint32_t type, const uint8_t *w, size_t row_bytes, int nw,
                              const float *xr, size_t x_stride, int mx, int64_t n, float *y,
                              size_t ldy)
{
    if (nw < 1 || nw > TILE16_NW || mx < 1 || mx > TILE16_MX)
        return;         /* ork__dot16_tile checked; the bounds said here for the compiler */
    const uint8_t *r[TILE16_NW];
    const float *x[TILE16_MX];
    for (int j = 0; j < TILE16_NW; j++)     /* past the last row: repeat it, drop the result */
        r[j] = w + (size_t)(j < nw ? j : nw - 1) * row_bytes;
    for (int t = 0; t < mx; t++)
        x[t] = xr + (size_t)t * x_stride;
    float o[TILE16_MX][TILE16_NW];
    switch (mx) {
    case 1: tile16_1(type, r, x, n, o); break;
    case 2: tile16_2(type, r, x, n, o); break;
    case 3: tile16_3(type, r, x, n, o); break;
    default: tile16_4(type, r, x, n, o); break;
    }
    for (int t = 0; t < mx; t++)
        for (int j = 0; j < nw; j++)
            y[(size_t)t * ldy + (size_t)j] = o[t][j];
}

void ork__fill_tile_f16_avx512(struct ork__kern *t)
{
    t->t[ORK__KT_F16].dot16_tile = dot16_tile_avx512;
    t->t[ORK__KT_BF16].dot16_tile = dot16_tile_avx512;
}
#endif
