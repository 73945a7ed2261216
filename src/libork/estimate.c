/* estimate.c -- ork_npu_weights_estimate_bytes: the device bytes of resident weights and of
 * the plans an executor makes on them (M = 1, and M = max_m when above 1), from the same
 * slicing libork chooses (plan.c: K-slices for max_m, N-slices, M-tiles) and the same buffer
 * layout (matmul_weights.c: one slice of K_j x N_padded per K-slice; matmul.c: A of m x K_j
 * per K-slice, one int32 C block per K-slice x N-slice, one program slot per task), so callers
 * that place weights into IOMMU domains need not restate the tiling rules. No device needed;
 * nothing is allocated on one. W4A8 weights (ork_npu_weights_estimate_bytes_w4a8) are sliced
 * by their codes, so theirs is an upper bound over the slicings the int16 rule may choose. */
#include "ork_priv.h"
#include "plan.h"
#include "program.h"

#include <ork/npu.h>

/* Device buffers are page-granular: the kernel drivers and the simulator round every BO up to
 * 4 KiB pages (sim_priv.h SIM_PAGE, spec §13). */
#define EST_PAGE 4096u
/* Bytes of one int32 output (spec §6.2: int8 and fp16 matmuls write 32-bit results). */
#define EST_OUT_BYTES 4u

static uint64_t pages(uint64_t bytes)
{
    return (bytes + EST_PAGE - 1) / EST_PAGE * EST_PAGE;
}

/* Bytes of one plan of m rows on weights sliced as kp / np: its A, C and program buffers. The
 * N-slices are counted for the most cores a plan takes (each core cuts its share of the
 * columns into slices of <= ORK_PLAN_N_MAX: at most one more slice per extra core). */
static uint64_t plan_bytes(enum ork_npu_dtype dt, const struct ork_kplan *kp,
                           const struct ork_nplan *np, uint32_t m)
{
    uint32_t esz = dt == ORK_NPU_I8 ? 1 : 2;
    uint32_t cores = ORK_MM_MAX_CORES, units = np->n_padded / np->tile;
    if (cores > units / 2)              /* >= 2 column tiles per core (matmul.c, spec §9) */
        cores = units / 2 ? units / 2 : 1;
    uint64_t n_ns = (uint64_t)np->n_slices + cores - 1;
    uint32_t tile = m;
    for (uint32_t j = 0; j < kp->n_slices; j++) {
        uint32_t t = ork__plan_m_tile(dt, m, kp->s[j].pad);
        if (t && t < tile)
            tile = t;
    }
    uint64_t mtiles = (m + tile - 1) / tile;
    uint64_t a = (uint64_t)m * kp->k_padded * esz;
    uint64_t c = (uint64_t)m * np->n_padded * EST_OUT_BYTES * kp->n_slices;
    uint64_t progs = mtiles * kp->n_slices * n_ns * ORK_PROG_SLOT;
    return pages(a) + pages(c) + pages(progs);
}

uint64_t ork_npu_weights_estimate_bytes(enum ork_npu_dtype dtype, uint32_t n, uint32_t k,
                                        uint32_t max_m)
{
    struct ork_kplan kp;
    struct ork_nplan np;
    if (max_m < 1)
        max_m = 1;
    if (ork__plan_kslices(dtype, k, max_m, &kp) < 0)
        return 0;
    if (ork__plan_nslices(dtype, n, &np) < 0)
        return 0;
    uint32_t esz = dtype == ORK_NPU_I8 ? 1 : 2;
    uint64_t total = pages((uint64_t)kp.k_padded * np.n_padded * esz);
    total += plan_bytes(dtype, &kp, &np, 1);
    if (max_m > 1)
        total += plan_bytes(dtype, &kp, &np, max_m);
    ork__plan_nslices_fini(&np);
    return total;
}

/* W4A8 plans of m tokens on weights of kp / np (plan.h ORK_PLAN_I4_*): A of 2 m int4 rows of
 * each slice's K (m x K_j bytes), int16 C of both rows per K-slice (4 bytes a token and column),
 * M-tiles of 64 tokens, N-slices of <= 4096 a core. */
static uint64_t plan_bytes_i4(const struct ork_kplan *kp, const struct ork_nplan *np, uint32_t m)
{
    uint32_t cores = ORK_MM_MAX_CORES, units = np->n_padded / np->tile;
    if (cores > units / 2)
        cores = units / 2 ? units / 2 : 1;
    const uint64_t n_ns = (uint64_t)np->n_slices + cores - 1;
    const uint64_t mtiles = (m + ORK_PLAN_I4_TOKENS_MAX - 1) / ORK_PLAN_I4_TOKENS_MAX;
    const uint64_t a = (uint64_t)m * kp->k_padded;
    const uint64_t c = (uint64_t)m * np->n_padded * EST_OUT_BYTES * kp->n_slices;
    return pages(a) + pages(c) + pages(mtiles * kp->n_slices * n_ns * ORK_PROG_SLOT);
}

uint64_t ork_npu_weights_estimate_bytes_w4a8(uint32_t n, uint32_t k, uint32_t max_m)
{
    struct ork_kplan kp;
    struct ork_nplan np;
    if (max_m < 1)
        max_m = 1;
    if (k < 1)
        return 0;
    /* the most slices the bound can ask for: ceil(K / 480), capped by the plan's table */
    uint32_t slices = (k + ORK_PLAN_I4_K_SAFE - 1) / ORK_PLAN_I4_K_SAFE;
    const uint32_t units = (k + ORK_PLAN_K_ALIGN - 1) / ORK_PLAN_K_ALIGN;
    if (slices > ORK_PLAN_MAX_KSLICES)
        slices = ORK_PLAN_MAX_KSLICES;
    if (slices > units)
        slices = units;
    if ((uint64_t)slices * ORK_PLAN_I4_K_MAX < (uint64_t)units * ORK_PLAN_K_ALIGN)
        return 0;                               /* K above 64 slices of 2048 */
    if (ork__plan_kslices_even(ORK_NPU_I8, k, max_m, slices, &kp) < 0 ||
        ork__plan_nslices_i4(n, &np) < 0)
        return 0;
    uint64_t total = pages((uint64_t)kp.k_padded * np.n_padded / 2u);  /* any slicing's */
    total += plan_bytes_i4(&kp, &np, 1);
    if (max_m > 1)
        total += plan_bytes_i4(&kp, &np, max_m);
    ork__plan_nslices_fini(&np);
    return total;
}

uint32_t ork_npu_weights_kslices(enum ork_npu_dtype dtype, uint32_t k, uint32_t max_m)
{
    struct ork_kplan kp;
    if (ork__plan_kslices(dtype, k, max_m < 1 ? 1 : max_m, &kp) < 0)
        return 0;
    return kp.n_slices;
}
