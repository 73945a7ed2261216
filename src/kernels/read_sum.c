/* read_sum.c -- the read-sum loop (ork_kernels_read_sum): 64-bit integer adds of every word of
 * a buffer, on the vector path the kernels run (the table's read_sum: AVX-512, AVX2, NEON) or
 * portable C, as the matmul's read-ahead pulls the next weights into the caches and the
 * tooling's bandwidth probe (src/tooling/readbw.c) times it.
 *
 * Each vector loop reads several parts of the buffer side by side into independent
 * accumulators, so an iteration's loads do not wait on each other's adds and the core and its
 * prefetchers keep many cache-line misses in flight; one add per load is far below the core's
 * throughput, so the loop is bound by memory. Integer adds modulo 2^64 are associative and
 * commutative and every vector lane holds whole words, so every path returns the same sum.
 * Not here: timing (src/tooling/membw.c). */
#include <stdint.h>
#include <string.h>

#include "kern_priv.h"
#include "read_sum.h"

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

uint64_t ork__read_sum(const struct ork__kern *t, const void *ptr, size_t bytes)
{
    const uint8_t *p = ptr;
    size_t done = 0;
    uint64_t s = 0;
    if (t->read_sum)
        s = t->read_sum(p, bytes, &done);
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

void ork__fill_read_sum_scalar(struct ork__kern *t)
{
    t->read_insn = "scalar";
}
