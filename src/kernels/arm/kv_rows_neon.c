/* arm/kv_rows_neon.c -- the NEON attention loops over KV rows (both AArch64 paths): the
 * scores of four F32 / F16 key rows against two queries per pass (ork_vec_dot_rows2: the two
 * query heads of a GQA pair read each key once), and the weighted sum of value rows for two
 * weight vectors with y kept in registers across the rows (ork_vec_mad_rows2). Each score
 * takes exactly the lanes, operations and reduction of the NEON ork_vec_dot (arm/dot_neon.c:
 * 32 lanes, lane j's FMA chain over elements j, j + 32, ..., ork__acc_end32, the tail in
 * order), each y element the operations of nr ork_vec_mad calls (dot.c "several rows at
 * once"), so the bits are those of the one-row kernels (tests/unit/test_kernels_dot.c).
 *
 * The 32 lanes of the 4 x 2 dots would take 64 registers: a lane's chain does not depend on
 * the others, so the row is walked KVN_PASSES times, 8 lanes (2 registers) of every dot per
 * pass: 16 accumulators, the 4 query registers and the key rows fit the 32 vector registers.
 * The rows are a head's 64-256 elements, read again from L1. Per pass step 8 key and 4 query
 * loads feed 16 FMAs (the one-row dot: 16 loads per 8 FMAs, the two A76 load pipelines its
 * limit); F16 keys are widened once for both queries. */
#include <stdint.h>
#include <string.h>

#include <ork-kernels/kernels.h>

#include "kern_priv.h"

#ifdef ORK_KERN_ARM
#include <arm_neon.h>

/* Every loop over queries, rows and registers is unrolled whole: GCC 12 at -O2 keeps them as
 * loops otherwise, with the accumulators on the stack. */
#define KVN_UNROLL _Pragma("GCC unroll 16")
#define KVN_ROWS 4              /* key rows per pass (kv_rows) */
#define KVN_QUERIES 2           /* queries per pass (kv_queries) */
#define KVN_REGS 2              /* registers of each dot per lane pass */
#define KVN_PASSES (ORK_DOT_LANES / (4 * KVN_REGS))
/* Floats of each y kept in registers by the weighted sum: 2 x 8 registers (two adds a cycle at
 * the A76's 2-cycle FADD latency need 4 chains; 8 leave the loads room). */
#define KVN_MAD_REGS 8
_Static_assert(KVN_ROWS <= ORK_KV_ROWS_MAX && KVN_QUERIES <= ORK_KV_QUERIES_MAX,
               "kv_dot output shape");
_Static_assert(KVN_PASSES * 4 * KVN_REGS == ORK_DOT_LANES, "lane passes");

/* Four elements of an F32 / F16 row at element i, as f32 (F16 widened exactly). */
static inline float32x4_t kvn_load4(const uint8_t *row, uint32_t type, int64_t i)
{
    if (type == ORK_TYPE_F16)
        return vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(row + 2 * i)));
    return vld1q_f32((const float *)(const void *)row + i);
}

/* The in-order tail of one row's dot (elements [from, n)), as arm/dot_neon.c adds it. */
static float kvn_dot_tail(const uint8_t *row, uint32_t type, const float *x, int64_t from,
                          int64_t n)
{
    float t = 0.0f;
    for (int64_t i = from; i < n; i++) {
        float w;
        if (type == ORK_TYPE_F16)
            w = ork__f16le(row + 2 * i);
        else
            memcpy(&w, row + 4 * i, sizeof w);
        float pr = w * x[i];
        t += pr;
    }
    return t;
}

#define KVN_INLINE inline __attribute__((always_inline))

/* The kv_dot of nq (a constant after inlining: 1 or 2) queries. */
static KVN_INLINE void kvn_dot(uint32_t type, const uint8_t *const *r, const float *const *x,
                               const int nq, int64_t n, float (*out)[ORK_KV_ROWS_MAX])
{
    struct ork__dot_acc acc[KVN_QUERIES][KVN_ROWS];
    const int64_t nv = n / ORK_DOT_LANES * ORK_DOT_LANES;
    for (int p = 0; p < KVN_PASSES; p++) {
        const int64_t l0 = (int64_t)p * 4 * KVN_REGS;      /* first lane of the pass */
        float32x4_t s[KVN_QUERIES][KVN_ROWS][KVN_REGS];
        KVN_UNROLL for (int q = 0; q < nq; q++)
            KVN_UNROLL for (int k = 0; k < KVN_ROWS; k++)
                KVN_UNROLL for (int g = 0; g < KVN_REGS; g++)
                    s[q][k][g] = vdupq_n_f32(0.0f);
        for (int64_t i = l0; i < nv; i += ORK_DOT_LANES) {
            float32x4_t xv[KVN_QUERIES][KVN_REGS];
            KVN_UNROLL for (int q = 0; q < nq; q++)
                KVN_UNROLL for (int g = 0; g < KVN_REGS; g++)
                    xv[q][g] = vld1q_f32(x[q] + i + 4 * g);
            KVN_UNROLL for (int k = 0; k < KVN_ROWS; k++)
                KVN_UNROLL for (int g = 0; g < KVN_REGS; g++) {
                    const float32x4_t w = kvn_load4(r[k], type, i + 4 * g);
                    KVN_UNROLL for (int q = 0; q < nq; q++)
                        s[q][k][g] = vfmaq_f32(s[q][k][g], w, xv[q][g]);
                }
        }
        KVN_UNROLL for (int q = 0; q < nq; q++)
            KVN_UNROLL for (int k = 0; k < KVN_ROWS; k++)
                KVN_UNROLL for (int g = 0; g < KVN_REGS; g++)
                    vst1q_f32(acc[q][k].lane + l0 + 4 * g, s[q][k][g]);
    }
    KVN_UNROLL for (int q = 0; q < nq; q++)
        KVN_UNROLL for (int k = 0; k < KVN_ROWS; k++) {
            acc[q][k].tail = kvn_dot_tail(r[k], type, x[q], nv, n);
            out[q][k] = ork__acc_end32(&acc[q][k]);
        }
}

/* One function per (type, queries), each with its own loop (tools/a76_cost.sh reads them by
 * name): the element type and the query count are constants inside. */
#define KVN_NOINLINE __attribute__((noinline, noclone))
#define KVN_DOT(NAME, TYPE, NQ)                                                                \
    static KVN_NOINLINE void NAME(const uint8_t *const *r, const float *const *x, int64_t n,   \
                                  float (*out)[ORK_KV_ROWS_MAX])                               \
    {                                                                                          \
        kvn_dot(TYPE, r, x, NQ, n, out);                                                       \
    }
KVN_DOT(kvn_dot_f32_q1, ORK_TYPE_F32, 1)
KVN_DOT(kvn_dot_f32_q2, ORK_TYPE_F32, 2)
KVN_DOT(kvn_dot_f16_q1, ORK_TYPE_F16, 1)
KVN_DOT(kvn_dot_f16_q2, ORK_TYPE_F16, 2)

static void kv_dot_neon(uint32_t type, const uint8_t *const *r, const float *const *x, int nq,
                        int64_t n, float (*out)[ORK_KV_ROWS_MAX])
{
    if (type == ORK_TYPE_F16)
        (nq == KVN_QUERIES ? kvn_dot_f16_q2 : kvn_dot_f16_q1)(r, x, n, out);
    else
        (nq == KVN_QUERIES ? kvn_dot_f32_q2 : kvn_dot_f32_q1)(r, x, n, out);
}

/* y[q] += a[q][t] * v_t for t in order, element by element (the product rounded, then the
 * add), for nq <= 2 weight vectors; each value row is loaded (and widened) once for both. */
static KVN_INLINE void kvn_mad(float *const *y, const uint8_t *v, size_t sb, uint32_t type,
                               const float *const *a, const int nq, int64_t nr, int64_t n)
{
    const size_t elt = ork__elt_bytes(type);
    float *const y1 = nq > 1 ? y[1] : y[0];
    const float *const a1 = nq > 1 ? a[1] : a[0];
    int64_t i = 0;
    for (; i + KVN_MAD_REGS * 4 <= n; i += KVN_MAD_REGS * 4) {
        float32x4_t c0[KVN_MAD_REGS], c1[KVN_MAD_REGS];
        KVN_UNROLL for (int g = 0; g < KVN_MAD_REGS; g++) {
            c0[g] = vld1q_f32(y[0] + i + 4 * g);
            c1[g] = vld1q_f32(y1 + i + 4 * g);
        }
        for (int64_t t = 0; t < nr; t++) {
            const uint8_t *row = v + (size_t)t * sb;
            if (t + ORK_KV_PREFETCH_ROWS < nr)
                ork__prefetch_bytes(row + (size_t)ORK_KV_PREFETCH_ROWS * sb + (size_t)i * elt,
                                    (size_t)(KVN_MAD_REGS * 4) * elt);
            const float32x4_t va0 = vdupq_n_f32(a[0][t]), va1 = vdupq_n_f32(a1[t]);
            KVN_UNROLL for (int g = 0; g < KVN_MAD_REGS; g++) {
                const float32x4_t w = kvn_load4(row, type, i + 4 * g);
                c0[g] = vaddq_f32(c0[g], vmulq_f32(va0, w));
                if (nq > 1)
                    c1[g] = vaddq_f32(c1[g], vmulq_f32(va1, w));
            }
        }
        KVN_UNROLL for (int g = 0; g < KVN_MAD_REGS; g++) {
            vst1q_f32(y[0] + i + 4 * g, c0[g]);
            if (nq > 1)
                vst1q_f32(y1 + i + 4 * g, c1[g]);
        }
    }
    for (; i + 4 <= n; i += 4)
        KVN_UNROLL for (int q = 0; q < nq; q++) {
            float32x4_t c = vld1q_f32(y[q] + i);
            for (int64_t t = 0; t < nr; t++)
                c = vaddq_f32(c, vmulq_f32(vdupq_n_f32(a[q][t]),
                                           kvn_load4(v + (size_t)t * sb, type, i)));
            vst1q_f32(y[q] + i, c);
        }
    KVN_UNROLL for (int q = 0; q < nq; q++)
        for (int64_t j = i; j < n; j++) {
            float yj = y[q][j];
            for (int64_t t = 0; t < nr; t++)
                yj = ork__mad_elem(yj, v + (size_t)t * sb, type, a[q][t], j);
            y[q][j] = yj;
        }
}

#define KVN_MAD(NAME, TYPE, NQ)                                                                \
    static KVN_NOINLINE void NAME(float *const *y, const uint8_t *v, size_t sb,               \
                                  const float *const *a, int64_t nr, int64_t n)                \
    {                                                                                          \
        kvn_mad(y, v, sb, TYPE, a, NQ, nr, n);                                                 \
    }
KVN_MAD(kvn_mad_f32_q1, ORK_TYPE_F32, 1)
KVN_MAD(kvn_mad_f32_q2, ORK_TYPE_F32, 2)
KVN_MAD(kvn_mad_f16_q1, ORK_TYPE_F16, 1)
KVN_MAD(kvn_mad_f16_q2, ORK_TYPE_F16, 2)

static void kv_mad_neon(float *const *y, const uint8_t *v, size_t sb, uint32_t type,
                        const float *const *a, int nq, int64_t nr, int64_t n)
{
    if (type == ORK_TYPE_F16)
        (nq == KVN_QUERIES ? kvn_mad_f16_q2 : kvn_mad_f16_q1)(y, v, sb, a, nr, n);
    else
        (nq == KVN_QUERIES ? kvn_mad_f32_q2 : kvn_mad_f32_q1)(y, v, sb, a, nr, n);
}

void ork__fill_kv_rows_neon(struct ork__kern *t)
{
    t->kv_dot = kv_dot_neon;
    t->kv_rows = KVN_ROWS;
    t->kv_queries = KVN_QUERIES;
    t->kv_mad = kv_mad_neon;
}
#endif
