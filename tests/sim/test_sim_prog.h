/* test_sim_prog.h -- hand-built int8 matmul programs for the simulator driver-model tests,
 * written directly from the register table of spec/rk3588-npu.md §3.1 (int8 rule column) and
 * the trailer rules of §2.3/§8.3, plus a plain CPU reference. Independent of libork's program
 * emission and register database on purpose: the tests check the driver model, not emission. */
#ifndef TEST_SIM_PROG_H
#define TEST_SIM_PROG_H

#include <stdint.h>
#include <string.h>

#include "libork/kmd/kmd.h"

#define TP_ENTRIES 112u            /* 108 counted + 4 trailer (§2.3) */
#define TP_AMOUNT 108u             /* regcfg_amount */
#define TP_BYTES (TP_ENTRIES * 8u) /* 896 */

/* §2.1: u64 = (target << 48) | (value << 16) | reg */
static inline uint64_t tp_entry(uint32_t target, uint32_t reg, uint32_t value)
{
    return ((uint64_t)target << 48) | ((uint64_t)value << 16) | reg;
}

struct tp_shape {
    uint32_t m, k, n, s;           /* s = C row stride in elements (0 = n) */
    uint32_t a, b, c;              /* IOVAs */
};

/* Writes the 112 entries of an int8 -> int32 matmul program (§3.1) into `out`. `next` /
 * `next_amount_n` chain to a following program of `next_amount_n` counted entries (0: terminal).
 * CBUF split 0xb1 (1 data bank: valid for M*K <= 32768, §5.5). */
static inline void tp_build(uint64_t *out, const struct tp_shape *sh, uint32_t next,
                            uint32_t next_amount_n)
{
    uint32_t M = sh->m, K = sh->k, N = sh->n, s = sh->s ? sh->s : sh->n;
    uint32_t cbuf = 0xb1, rows = M + 1;
    uint32_t i = 0;
#define E(t, r, v) (out[i++] = tp_entry((t), (r), (v)))
    E(0x0201, 0x1040, cbuf);
    E(0x0201, 0x1104, 0);
    E(0x0201, 0x1100, 0);
    E(0x0201, 0x100c, 0x20000000);
    E(0x1001, 0x4004, 0xe);
    E(0x0201, 0x100c, 0x20000000);
    E(0x0201, 0x1010, 16 * rows);
    E(0x0201, 0x1014, 0x9);
    E(0x0201, 0x1020, 0x00010000 | M);
    E(0x0201, 0x1024, ((K - 1) << 16) | K);
    E(0x0201, 0x1028, 1);
    E(0x0201, 0x102c, M);
    E(0x0201, 0x1030, K * N);
    E(0x0201, 0x1034, K);
    E(0x0201, 0x1038, 0x01010000 | N);
    E(0x0201, 0x1040, cbuf);
    E(0x0201, 0x1044, (K + 63) / 64);
    E(0x0201, 0x104c, 0xb);
    for (uint32_t r = 0x1050; r <= 0x105c; r += 4)
        E(0x0201, r, 0x00010000);
    E(0x0201, 0x1060, 0);
    E(0x0201, 0x1064, 0);
    E(0x0201, 0x1068, 0);
    E(0x0201, 0x1070, sh->a);
    E(0x0201, 0x1074, 0);
    E(0x0201, 0x1078, 0x000f000f);
    E(0x0201, 0x107c, K / 16);
    E(0x0201, 0x1080, 0);
    E(0x0201, 0x1084, 0x00010000 | M);
    E(0x0201, 0x1088, K);
    E(0x0201, 0x1100, 0);
    E(0x0201, 0x1104, 0);
    E(0x0201, 0x1110, sh->b);
    for (uint32_t r = 0x1140; r <= 0x117c; r += 4)
        E(0x0201, r, 0);
    E(0x0201, 0x1180, 0);
    E(0x0201, 0x1184, 0);
    E(0x0801, 0x3010, 0x00000001);
    E(0x0801, 0x3014, (M - 1) << 16);
    E(0x0801, 0x3018, N - 1);
    E(0x0801, 0x301c, 0);
    E(0x0801, 0x3030, 0);
    E(0x1001, 0x400c, 0x000001e4);
    E(0x1001, 0x4010, 0x80000000);
    E(0x1001, 0x4014, 0);
    E(0x1001, 0x4020, sh->c);
    E(0x1001, 0x4024, 0x10);
    E(0x1001, 0x4030, 0);
    E(0x1001, 0x4034, M - 1);
    E(0x1001, 0x4038, ((s / 4 - 1) << 16) | (N / 4 - 1));
    E(0x1001, 0x403c, ((s - 1) << 16) | (N - 1));
    E(0x1001, 0x4040, 0x53);
    E(0x1001, 0x4044, 0);
    E(0x1001, 0x4048, 0);
    E(0x1001, 0x404c, 0);
    E(0x1001, 0x4050, 0x7fc);
    E(0x1001, 0x4054, 0);
    E(0x1001, 0x4058, N - 1);
    E(0x1001, 0x405c, (M - 1) << 16);
    E(0x1001, 0x4060, 0x53);
    E(0x1001, 0x4064, 0);
    E(0x1001, 0x4068, 0);
    E(0x1001, 0x406c, 0);
    E(0x1001, 0x4070, 0x383);
    E(0x1001, 0x4074, 0);
    E(0x1001, 0x4078, 1);
    E(0x1001, 0x407c, 0);
    E(0x1001, 0x4080, 0);
    E(0x1001, 0x4084, 1);
    E(0x1001, 0x4088, 0);
    for (uint32_t r = 0x4090; r <= 0x40ac; r += 4)
        E(0x1001, r, 0);
    E(0x1001, 0x40c0, 0x80);
    E(0x1001, 0x40c4, 0);
    for (uint32_t r = 0x4100; r <= 0x412c; r += 4)
        E(0x1001, r, 0);
    /* trailer (§2.3, §8.3) */
    if (next) {
        E(0x0101, 0x0010, next);
        E(0x0101, 0x0014, (next_amount_n + 4 + 1) / 2 - 1);
    } else {
        out[i++] = 0;
        E(0x0101, 0x0014, 0);
    }
    E(0x0041, 0x0000, 0);
    E(0x0081, 0x0008, 0x0d);
#undef E
}

/* int8 weights B[K][N] in the §4.3 tiled layout. */
static inline uint32_t tp_b_off(uint32_t K, uint32_t k, uint32_t n)
{
    return (n / 32) * (K / 32) * 1024 + (k / 32) * 1024 + (n % 32) * 32 + (k % 32);
}

/* Deterministic test data in [-r, r]. */
static inline int8_t tp_val(uint32_t seed, uint32_t i, int r)
{
    uint32_t x = (seed + 1) * 2654435761u ^ (i * 40503u + 12345u);
    x ^= x >> 13;
    x *= 0x5bd1e995u;
    x ^= x >> 15;
    return (int8_t)((int)(x % (uint32_t)(2 * r + 1)) - r);
}

/* Fill A (row-major M x K) and tiled B from seeds; reference C = A * B as int32. */
static inline void tp_fill(int8_t *a, int8_t *b, uint32_t M, uint32_t K, uint32_t N, uint32_t seed)
{
    for (uint32_t i = 0; i < M * K; i++)
        a[i] = tp_val(seed, i, 100);
    for (uint32_t k = 0; k < K; k++)
        for (uint32_t n = 0; n < N; n++)
            b[tp_b_off(K, k, n)] = tp_val(seed + 7, k * N + n, 100);
}

static inline int32_t tp_ref(const int8_t *a, const int8_t *b, uint32_t K, uint32_t N,
                             uint32_t m, uint32_t n)
{
    (void)N;
    int32_t acc = 0;
    for (uint32_t k = 0; k < K; k++)
        acc += (int32_t)a[m * K + k] * (int32_t)b[tp_b_off(K, k, n)];
    return acc;
}

/* A sim device through the kmd vtable, with BO helpers. */
struct tp_dev {
    const struct ork_kmd_ops *ops;
    void *ctx;
};

static inline int tp_open(struct tp_dev *d, const struct ork_sim_opts *so)
{
    struct ork_kmd_opts o = { .struct_size = sizeof o, .node = NULL, .sim = so };
    d->ops = &ork__kmd_sim_ops;
    return d->ops->open(&o, &d->ctx);
}

static inline int tp_bo(struct tp_dev *d, uint64_t size, uint32_t domain, struct ork_kbo *bo)
{
    return d->ops->bo_create(d->ctx, size, ORK_KBO_CACHEABLE, domain, bo);
}

static inline void tp_sync_to(struct tp_dev *d, struct ork_kbo *bo)
{
    d->ops->bo_sync(d->ctx, bo, 0, bo->size, ORK_KBO_SYNC_TO_DEVICE);
}

static inline void tp_sync_from(struct tp_dev *d, struct ork_kbo *bo)
{
    d->ops->bo_sync(d->ctx, bo, 0, bo->size, ORK_KBO_SYNC_FROM_DEVICE);
}

/* One matmul task descriptor for the kmd (§8.1 values). */
static inline struct ork_ktask tp_task(uint32_t regcmd_iova, uint32_t op_idx)
{
    struct ork_ktask t = { regcmd_iova, TP_AMOUNT, 0x0d, 0x300, op_idx };
    return t;
}

#endif
