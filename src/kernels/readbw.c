/* readbw.c -- the read-sum kernel (ork-kernels/readbw.h): 64-bit integer adds of every word of
 * a buffer, on the vector path the kernels run (ork__kisa): AVX-512, AVX2, NEON or portable C.
 *
 * Each vector loop reads several parts of the buffer side by side into independent
 * accumulators, so an iteration's loads do not wait on each other's adds and the core and its
 * prefetchers keep many cache-line misses in flight; one add per load is far below the core's
 * throughput, so the loop is bound by memory. Integer adds modulo 2^64 are associative and
 * commutative and every vector lane holds whole words, so every path returns the same sum.
 * Not here: timing (engine/membw.c). */
#include <stdint.h>
#include <string.h>

#include <ork-kernels/readbw.h>

#include "kern_priv.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define RB_X86 1
#include <immintrin.h>
#elif defined(__aarch64__) && defined(__ARM_NEON)
#define RB_NEON 1
#include <arm_neon.h>
#endif

/* The vector loops read RB_STREAMS equal parts of the buffer side by side, RB_PER
 * accumulators per part, each fed the sum of two loads. Measured on a Zen 5 VM (2 cores,
 * 512 MiB - 1 GiB, one thread, 15-30 alternating passes per variant, a shared host): 4 parts
 * read side by side streamed 23-28 GB/s median, 31-37 max, against 19-20 / 26-33 for one
 * sequential stream, as the decode matmul reads 4 weight rows at once; and within one stream,
 * 8 loads folded straight into 8 accumulators ran at 14-15 GB/s where adding load pairs first
 * reached 25-31. 8 accumulators leave room in the 16 ymm / 32 zmm / 32 v-registers, and with
 * 1-cycle adds they are never the limit. */
#define RB_STREAMS 4
#define RB_PER 2
#define RB_WORD 8               /* bytes per summed word */

/* The words [0, n / 8) of p summed with the scalar loop (memcpy: any alignment). */
static uint64_t sum_words_c(const uint8_t *p, size_t n_words)
{
    uint64_t s[4] = { 0 };
    size_t i = 0;
    for (; i + 4 <= n_words; i += 4)
        for (int l = 0; l < 4; l++) {
            uint64_t w;
            memcpy(&w, p + (i + (size_t)l) * RB_WORD, RB_WORD);
            s[l] += w;
        }
    for (; i < n_words; i++) {
        uint64_t w;
        memcpy(&w, p + i * RB_WORD, RB_WORD);
        s[0] += w;
    }
    return s[0] + s[1] + s[2] + s[3];
}

/* Bytes of each of the RB_STREAMS parts: whole chunks (the bytes one part gives per iteration). */
static size_t part_bytes(size_t bytes, size_t chunk)
{
    return bytes / (RB_STREAMS * chunk) * chunk;
}

/* The read-sum loop for one vector type: the parts side by side, then single vectors of the
 * rest; the bytes consumed (a multiple of the vector size) go to *done. VEC: the vector type,
 * V: its bytes; ZERO(), LOAD(p), ADD(a, b) and REDUCE(a) (the lanes' sum, as unsigned) its
 * operations. */
#define READ_SUM(NAME, TGT, VEC, V, ZERO, LOAD, ADD, REDUCE)                                    \
    TGT static uint64_t NAME(const uint8_t *p, size_t bytes, size_t *done)                     \
    {                                                                                          \
        const size_t chunk = 2 * RB_PER * (V);                                                 \
        VEC a[RB_STREAMS * RB_PER];                                                            \
        for (int i = 0; i < RB_STREAMS * RB_PER; i++)                                          \
            a[i] = ZERO();                                                                     \
        size_t part = part_bytes(bytes, chunk);                                                \
        for (size_t o = 0; o < part; o += chunk)                                               \
            for (int s = 0; s < RB_STREAMS; s++) {                                             \
                const uint8_t *q = p + (size_t)s * part + o;                                   \
                for (int k = 0; k < RB_PER; k++) {                                             \
                    VEC x = LOAD(q + (size_t)k * (V)), y = LOAD(q + (size_t)(k + RB_PER) * (V)); \
                    a[s * RB_PER + k] = ADD(a[s * RB_PER + k], ADD(x, y));                     \
                }                                                                              \
            }                                                                                  \
        size_t off = RB_STREAMS * part;                                                        \
        for (; off + (V) <= bytes; off += (V))                                                 \
            a[0] = ADD(a[0], LOAD(p + off));                                                   \
        for (int i = 1; i < RB_STREAMS * RB_PER; i++)                                          \
            a[0] = ADD(a[0], a[i]);                                                            \
        *done = off;                                                                           \
        return REDUCE(a[0]);                                                                   \
    }

#ifdef RB_X86
#define TGT_512 __attribute__((target("avx512f")))
#define TGT_256 __attribute__((target("avx2")))

TGT_512 static inline __m512i ld_zmm(const uint8_t *p) { return _mm512_loadu_si512(p); }

/* lanes summed as unsigned (the compiler's reduce intrinsic adds signed: overflow) */
TGT_512 static inline uint64_t sum_lanes_zmm(__m512i v)
{
    uint64_t w[8];
    _mm512_storeu_si512(w, v);
    return w[0] + w[1] + w[2] + w[3] + w[4] + w[5] + w[6] + w[7];
}

TGT_256 static inline __m256i ld_ymm(const uint8_t *p)
{
    return _mm256_loadu_si256((const __m256i *)(const void *)p);
}

TGT_256 static inline uint64_t sum_lanes_ymm(__m256i v)
{
    __m128i h = _mm_add_epi64(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    return (uint64_t)_mm_cvtsi128_si64(h) + (uint64_t)_mm_extract_epi64(h, 1);
}

READ_SUM(sum_zmm, TGT_512, __m512i, 64, _mm512_setzero_si512, ld_zmm, _mm512_add_epi64,
         sum_lanes_zmm)
READ_SUM(sum_ymm, TGT_256, __m256i, 32, _mm256_setzero_si256, ld_ymm, _mm256_add_epi64,
         sum_lanes_ymm)
#endif

#ifdef RB_NEON
/* vld1q_u8: byte-element loads, so p needs no alignment */
static inline uint64x2_t ld_neon(const uint8_t *p)
{
    return vreinterpretq_u64_u8(vld1q_u8(p));
}

static inline uint64x2_t zero_neon(void)
{
    return vdupq_n_u64(0);
}

READ_SUM(sum_neon, , uint64x2_t, 16, zero_neon, ld_neon, vaddq_u64, vaddvq_u64)
#endif

uint64_t ork_cpu_read_sum(const void *ptr, size_t bytes)
{
    const uint8_t *p = ptr;
    size_t done = 0;
    uint64_t s = 0;
    switch (ork__kisa()) {
#ifdef RB_X86
    case KISA_AVX512VNNI:
        s = sum_zmm(p, bytes, &done);
        break;
    case KISA_AVX2:
    case KISA_AVXVNNI:
        s = sum_ymm(p, bytes, &done);
        break;
#endif
#ifdef RB_NEON
    case KISA_NEON:
    case KISA_NEON_DOT:
        s = sum_neon(p, bytes, &done);
        break;
#endif
    default:
        break;
    }
    /* done is a multiple of the word size, so the rest starts on a word of the reference */
    size_t rest = bytes - done;
    s += sum_words_c(p + done, rest / RB_WORD);
    size_t tail = rest % RB_WORD;
    if (tail) {
        uint64_t w = 0;
        memcpy(&w, p + bytes - tail, tail);
        s += w;
    }
    return s;
}

const char *ork_cpu_read_insn(void)
{
    switch (ork__kisa()) {
    case KISA_AVX512VNNI: return "vmovdqu64 zmm";
    case KISA_AVX2:
    case KISA_AVXVNNI: return "vmovdqu ymm";
    case KISA_NEON:
    case KISA_NEON_DOT: return "ld1 v.16b";
    default: return "scalar";
    }
}
