/* rotate.c -- the rotation of K of the NPU weights (ORK_NPU_WENC_ROTATE, CLI
 * --npu-weights-rotate; docs/w4a8.md "Engine"): an orthonormal transform of the reduction axis
 * applied to every NPU matrix's weight rows at quantisation (weights_grid.c) and to its input
 * rows on the CPU before their int8 quantisation (run.c), so that
 *   W' (R^T x) = (W R)(R^T x) = W x
 * in real arithmetic while both sides' outliers are spread over K before the per-row grids
 * see them (per output channel for the weights, per token for the activations). Rows stay
 * output channels, so the per-channel scales still apply.
 *
 * The transform, for K = P Q with P the largest power of two dividing K and Q odd:
 *   R^T = D_Q (x) H_P
 * H_P the Walsh-Hadamard matrix of order P (Sylvester order) over sqrt(P), D_Q the orthonormal
 * DCT-II of order Q (D[b][i] = c_b cos(pi (i + 1/2) b / Q), c_0 = sqrt(1/Q), else sqrt(2/Q);
 * the identity when Q = 1). Element j = b P + a (b < Q, a < P): a row is Q contiguous blocks of
 * P; the DCT mixes whole blocks (one axpy of P elements per coefficient) and the Hadamard runs
 * in place inside each block. Both factors are orthonormal, hence so is their Kronecker product
 * (R R^T = I; tests/e2e/test_npu_rotate.c checks it in float for K = 64, 172, 6144, 18944). The
 * same y = R^T x is applied to a weight row w (w' = R^T w, i.e. W' = W R) and to an
 * activation row. K = 172 (the fixture's FFN) is 43 x 4, 6144 is 3 x 2048, 18944 (Qwen2.5-7B's
 * FFN) is 37 x 512.
 *
 * Cost per row: K Q multiply-adds for the DCT (none when Q = 1, which takes K multiplies for
 * the 1/sqrt(P) instead; with Q > 1 it is folded into the DCT's coefficients) and K log2(P)
 * additions or subtractions for the Hadamard: K (Q + log2 P), e.g. 18944 x (37 + 9). The odd
 * factors of real models are small (3..43 in the shapes above), so this is O(K log K)-ish.
 *
 * Not here: where it is applied (weights_grid.c, run.c) or which matrices get it (all of an
 * executor's, per their K). */
#include "rotate.h"

#include <ork/alloc.h>
#include <ork/error.h>

#include <math.h>
#include <string.h>

/* fp32 lanes of a 128-bit NEON vector (the twin's A76, docs/twin.md "CPU phase formulas"). */
#define ROT_LANES 4.0

int ork__npu_rot_init(struct ork__npu_rot *r, uint32_t k)
{
    memset(r, 0, sizeof(*r));
    if (k == 0)
        return ork_errorf(ORK_EINVAL, "NPU rotation: K = 0");
    uint32_t p = k & -k;                /* the largest power of two dividing k */
    r->k = k;
    r->p = p;
    r->q = k / p;
    r->h_scale = (float)(1.0 / sqrt((double)p));
    if (r->q == 1)
        return 0;
    r->d = ork_malloc((size_t)r->q * r->q * sizeof(float));
    if (!r->d)
        return ORK_ENOMEM;
    const double pi = 3.14159265358979323846;
    for (uint32_t b = 0; b < r->q; b++) {
        double c = sqrt((b ? 2.0 : 1.0) / (double)r->q) / sqrt((double)p);
        for (uint32_t i = 0; i < r->q; i++)
            r->d[(size_t)b * r->q + i] = (float)(c * cos(pi * ((double)i + 0.5) * (double)b /
                                                          (double)r->q));
    }
    return 0;
}

void ork__npu_rot_fini(struct ork__npu_rot *r)
{
    ork_free(r->d);
    memset(r, 0, sizeof(*r));
}

/* The unnormalised Walsh-Hadamard transform of v (n a power of two), in place. */
static void fwht(float *v, uint32_t n)
{
    for (uint32_t h = 1; h < n; h <<= 1)
        for (uint32_t i = 0; i < n; i += h << 1)
            for (uint32_t j = i; j < i + h; j++) {
                float a = v[j], b = v[j + h];
                v[j] = a + b;
                v[j + h] = a - b;
            }
}

void ork__npu_rot_apply(const struct ork__npu_rot *r, const float *x, float *y)
{
    const uint32_t p = r->p, q = r->q;
    if (q == 1) {
        for (uint32_t i = 0; i < p; i++)
            y[i] = x[i] * r->h_scale;
    } else {
        for (uint32_t b = 0; b < q; b++) {
            float *yb = y + (size_t)b * p;
            const float *db = r->d + (size_t)b * q;
            for (uint32_t a = 0; a < p; a++)
                yb[a] = db[0] * x[a];
            for (uint32_t i = 1; i < q; i++) {
                const float c = db[i], *xi = x + (size_t)i * p;
                for (uint32_t a = 0; a < p; a++)
                    yb[a] += c * xi[a];
            }
        }
    }
    if (p > 1)
        for (uint32_t b = 0; b < q; b++)
            fwht(y + (size_t)b * p, p);
}

void ork__npu_rot_rows(const struct ork__npu_rot *r, const float *x, uint32_t ldx, uint32_t c0,
                       uint32_t rows, float *y)
{
    for (uint32_t i = 0; i < rows; i++)
        ork__npu_rot_apply(r, x + (size_t)i * ldx + c0, y + (size_t)i * r->k);
}

/* The twin's A76 work of rotating `rows` rows of k, from the operation count above as NEON
 * instructions on 4-lane fp32 vectors (the twin's issue model, src/twin/twin_cpu.c: V pipes,
 * load/store pipes and dispatch, the slowest bound):
 *   DCT (Q > 1):  K Q / 4 FMLA (by element), K Q / 4 loads of x (the P-element accumulators of
 *                 a tile stay in registers), K / 4 stores;
 *   1/sqrt(P) (Q = 1): K / 4 FMUL, K / 4 loads, K / 4 stores;
 *   Hadamard:     per stage (log2 P of them) K / 4 FADD or FSUB, K / 4 loads, K / 4 stores
 *                 (a stage at a time, in place; fusing stages in registers would do fewer).
 * DRAM bytes only when the rows (read and written, fp32) exceed the L3, as for the twin's other
 * elementwise phases. */
struct ork_twin_work ork__npu_rot_work(const struct ork_twin_consts *c, uint32_t rows,
                                       uint32_t k)
{
    uint32_t p = k ? k & -k : 1, q = k ? k / p : 0, lg = 0;
    while ((1u << lg) < p)
        lg++;
    double vk = (double)rows * ceil((double)k / ROT_LANES);       /* vectors of all rows */
    double fma = q > 1 ? vk * q : 0.0, vec = vk * lg + (q > 1 ? 0.0 : vk);
    double ld = (q > 1 ? vk * q : vk) + vk * lg, st = vk + vk * lg;
    double v = fma / c->cpu_fma_per_cycle + vec / c->cpu_vec_per_cycle;
    double mem = ld / c->cpu_load_per_cycle + st / c->cpu_store_per_cycle;
    double instr = (fma + vec + ld + st) / c->cpu_issue_width;
    double cyc = v > mem ? v : mem;
    cyc = cyc > instr ? cyc : instr;
    double fp = 8.0 * (double)rows * (double)k;
    return (struct ork_twin_work){ .issue_ns = cyc / c->cpu_freq_hz * 1e9,
                                   .bytes = fp > c->cpu_l3_bytes ? fp : 0.0 };
}
